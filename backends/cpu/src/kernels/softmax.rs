//! SOFTMAX, LOG_SOFTMAX and L2_NORMALIZATION over the last axis of f32 tensors viewed as
//! `[outer, depth]`, with TFLite's float formulas.
#![forbid(unsafe_code)]


use super::binary::par_chunk;
use crate::simd::elementwise::{self as ew, VBin};

const INF: f32 = f32::INFINITY;

/// TFLite's L2_NORMALIZATION floor on the norm.
const L2_EPSILON: f32 = 1e-6;

/// Runs `row(x_row, out_row)` over the `outer` rows of `depth`, split across the pool when large.
fn rows(
    input: &[f32],
    outer: usize,
    depth: usize,
    out: &mut [f32],
    row: impl Fn(&[f32], &mut [f32]) + Sync,
) {
    assert_eq!(
        input.len(),
        outer * depth,
        "softmax family: input length vs outer * depth"
    );
    assert_eq!(
        out.len(),
        outer * depth,
        "softmax family: output length vs outer * depth"
    );
    if depth == 0 {
        return;
    }
    let run = |x: &[f32], o: &mut [f32]| {
        for (x, o) in x.chunks_exact(depth).zip(o.chunks_exact_mut(depth)) {
            row(x, o);
        }
    };
    match par_chunk(outer, depth) {
        None => run(input, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c * depth, |i, o| run(&input[i * c * depth..i * c * depth + o.len()], o)),
    }
}

/// TFLite's row maximum: from the lowest float, `max < x ? x : max` (NaN skipped).
fn row_max(x: &[f32]) -> f32 {
    ew::reduce_row(VBin::Max, x)
        .unwrap_or_else(|| x.iter().fold(f32::MIN, |m, &v| if v > m { v } else { m }))
}

/// `out = exp((x - shift) * scale)`, returning the sum.
fn exp_sum(x: &[f32], out: &mut [f32], shift: f32, scale: f32) -> f32 {
    ew::exp_sum(x, out, shift, scale).unwrap_or_else(|| {
        let mut sum = 0.0;
        for (o, &v) in out.iter_mut().zip(x) {
            *o = ((v - shift) * scale).exp();
            sum += *o;
        }
        sum
    })
}

/// `x ∘ s` for Sub, Mul or Div.
fn scalar_op(op: VBin, x: f32, s: f32) -> f32 {
    match op {
        VBin::Div => x / s,
        VBin::Mul => x * s,
        _ => x - s,
    }
}

/// `out = x ∘ s` for Sub, Mul or Div (`out` may hold anything before).
fn with_scalar(op: VBin, x: &[f32], s: f32, out: &mut [f32]) {
    if !ew::bin_vs(op, x, s, false, out, -INF, INF) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = scalar_op(op, v, s);
        }
    }
}

/// `x ∘= s` in place for Sub, Mul or Div.
fn with_scalar_inplace(op: VBin, x: &mut [f32], s: f32) {
    if !ew::bin_vs_inplace(op, x, s, -INF, INF) {
        for v in x.iter_mut() {
            *v = scalar_op(op, *v, s);
        }
    }
}

/// SOFTMAX over the last axis: `out = exp((x - max) * beta) / Σ exp((x - max) * beta)` per row
/// of `depth` (TFLite's order: subtract the max, then scale), the quotient as a product with the
/// sum's reciprocal, as XNNPACK (LiteRT's default path) computes it: one more rounding than
/// TFLite's division, and a multiply pass instead of a divide pass (vdivps costs ~8× vmulps).
/// Vectorized exp (within 2 ulp); rows split across the pool when large.
///
/// # Panics
/// When a slice length is not `outer * depth`.
pub fn softmax(input: &[f32], outer: usize, depth: usize, beta: f32, out: &mut [f32]) {
    rows(input, outer, depth, out, |x, o| {
        let max = row_max(x);
        let sum = exp_sum(x, o, max, beta);
        with_scalar_inplace(VBin::Mul, o, 1.0 / sum);
    });
}

/// Reference twin of [`softmax`].
///
/// # Panics
/// As [`softmax`].
pub fn softmax_ref(input: &[f32], outer: usize, depth: usize, beta: f32, out: &mut [f32]) {
    assert_eq!(input.len(), outer * depth);
    assert_eq!(out.len(), outer * depth);
    for (x, o) in input.chunks(depth.max(1)).zip(out.chunks_mut(depth.max(1))) {
        let max = x.iter().fold(f32::MIN, |m, &v| if m < v { v } else { m });
        let mut sum = 0.0;
        for (o, &v) in o.iter_mut().zip(x) {
            *o = ((v - max) * beta).exp();
            sum += *o;
        }
        o.iter_mut().for_each(|v| *v /= sum);
    }
}

/// LOG_SOFTMAX over the last axis: `out = (x - max) - ln Σ exp(x - max)` per row of `depth`.
///
/// # Panics
/// When a slice length is not `outer * depth`.
pub fn log_softmax(input: &[f32], outer: usize, depth: usize, out: &mut [f32]) {
    rows(input, outer, depth, out, |x, o| {
        let max = row_max(x);
        // `o` holds the exponentials only until the sum is known.
        let log_sum = exp_sum(x, o, max, 1.0).ln();
        with_scalar(VBin::Sub, x, max, o);
        with_scalar_inplace(VBin::Sub, o, log_sum);
    });
}

/// Reference twin of [`log_softmax`].
///
/// # Panics
/// As [`log_softmax`].
pub fn log_softmax_ref(input: &[f32], outer: usize, depth: usize, out: &mut [f32]) {
    assert_eq!(input.len(), outer * depth);
    assert_eq!(out.len(), outer * depth);
    for (x, o) in input.chunks(depth.max(1)).zip(out.chunks_mut(depth.max(1))) {
        let max = x.iter().fold(f32::MIN, |m, &v| if m < v { v } else { m });
        let sum: f32 = x.iter().map(|&v| (v - max).exp()).sum();
        let log_sum = sum.ln();
        for (o, &v) in o.iter_mut().zip(x) {
            *o = (v - max) - log_sum;
        }
    }
}

/// L2_NORMALIZATION over the last axis: `out = x / max(√Σx², 1e-6)` per row of `depth`
/// (TFLite floors the norm, not the squared sum, and divides rather than multiplying by the
/// reciprocal).
///
/// # Panics
/// When a slice length is not `outer * depth`.
pub fn l2_normalize(input: &[f32], outer: usize, depth: usize, out: &mut [f32]) {
    rows(input, outer, depth, out, |x, o| {
        let ss = ew::sum_sq(x).unwrap_or_else(|| x.iter().map(|&v| v * v).sum());
        with_scalar(VBin::Div, x, l2_norm(ss), o);
    });
}

/// `std::max(sqrt(ss), epsilon)`: a NaN norm stays NaN.
fn l2_norm(ss: f32) -> f32 {
    let n = ss.sqrt();
    if n < L2_EPSILON {
        L2_EPSILON
    } else {
        n
    }
}

/// Reference twin of [`l2_normalize`].
///
/// # Panics
/// As [`l2_normalize`].
pub fn l2_normalize_ref(input: &[f32], outer: usize, depth: usize, out: &mut [f32]) {
    assert_eq!(input.len(), outer * depth);
    assert_eq!(out.len(), outer * depth);
    for (x, o) in input.chunks(depth.max(1)).zip(out.chunks_mut(depth.max(1))) {
        let norm = l2_norm(x.iter().map(|&v| v * v).sum());
        for (o, &v) in o.iter_mut().zip(x) {
            *o = v / norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const U: f32 = f32::EPSILON / 2.0;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        // Tolerances: each exp within ~2 ulp of the other path's, the sums of `depth` positive
        // terms within depth·u of each other (different order), then a reciprocal and a
        // product (the reference divides).
        #[test]
        fn matches_ref(outer in 1usize..4, depth in 1usize..300, beta_i in 0usize..3, seed in any::<u32>()) {
            let n = outer * depth;
            let x: Vec<f32> = (0..n).map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 4001) as f32 / 100.0 - 20.0).collect();
            let beta = [1.0, 0.5, 2.0][beta_i];
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            softmax(&x, outer, depth, beta, &mut a);
            softmax_ref(&x, outer, depth, beta, &mut b);
            let tol = (6.0 + 2.0 * depth as f32) * U;
            for (a, b) in a.iter().zip(&b) {
                prop_assert!((a - b).abs() <= tol * b.abs() + 1e-37, "softmax {a} vs {b}");
            }
            log_softmax(&x, outer, depth, &mut a);
            log_softmax_ref(&x, outer, depth, &mut b);
            // ln(sum) carries the sum's relative error as an absolute one.
            for (a, b) in a.iter().zip(&b) {
                prop_assert!((a - b).abs() <= tol + 4.0 * U * b.abs(), "log_softmax {a} vs {b}");
            }
            l2_normalize(&x, outer, depth, &mut a);
            l2_normalize_ref(&x, outer, depth, &mut b);
            for (a, b) in a.iter().zip(&b) {
                prop_assert!((a - b).abs() <= (2.0 + depth as f32) * U * b.abs(), "l2 {a} vs {b}");
            }
        }
    }

    #[test]
    fn special_rows_and_threads() {
        let mut o = [0.0; 4];
        softmax(&[1.0, 1.0, f32::NEG_INFINITY, 1.0], 1, 4, 1.0, &mut o);
        assert_eq!(o, [1.0 / 3.0, 1.0 / 3.0, 0.0, 1.0 / 3.0]);
        softmax(&[1000.0, 0.0, -1000.0, 1000.0], 1, 4, 1.0, &mut o);
        assert_eq!(o, [0.5, 0.0, 0.0, 0.5]);
        l2_normalize(&[0.0, 0.0, 1e-9, 0.0], 1, 4, &mut o);
        assert_eq!(o, [0.0, 0.0, 1e-9 / 1e-6, 0.0]);
        // 512 rows of 1000: split across the pool.
        let x: Vec<f32> = (0..512_000)
            .map(|i| ((i * 7919) % 1000) as f32 / 50.0)
            .collect();
        let (mut a, mut b) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        softmax(&x, 512, 1000, 1.0, &mut a);
        softmax_ref(&x, 512, 1000, 1.0, &mut b);
        for (a, b) in a.iter().zip(&b) {
            assert!((a - b).abs() <= 2006.0 * U * b.abs(), "{a} vs {b}");
        }
    }
}
