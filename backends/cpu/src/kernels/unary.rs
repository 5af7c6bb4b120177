//! Element-wise unary ops on f32 (activations and math: RELU…, TANH, LOGISTIC, HARD_SWISH,
//! LEAKY_RELU, ELU, GELU, ABS, EXP, LOG, SQRT, RSQRT, SIN, COS, FLOOR, CEIL, ROUND, SIGN, …)
//! and PRELU, with TFLite's float semantics.
#![forbid(unsafe_code)]


use super::binary::{broadcast_ref, broadcast_rows, broadcast_shape, map_row, par_chunk, row_f32, BinaryOp as B, Row};
use super::Act;
use crate::simd::elementwise::{self as ew, VBin, VUnary, GELU_CUBIC, GELU_ERF_P, GELU_ERF_Q, GELU_ERF_Z, SQRT_2_OVER_PI};

/// An element-wise unary operator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// `max(x, 0)` (NaN passes through, as in TFLite).
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
    /// `min(max(x, -1), 1)`.
    ReluN1To1,
    /// `min(max(x, 0), 1)`.
    Relu0To1,
    /// `tanh(x)`.
    Tanh,
    /// `1 / (1 + exp(-x))`; 0 (not NaN) for very negative `x`.
    Logistic,
    /// `x * min(max(x + 3, 0), 6) / 6`.
    HardSwish,
    /// `x > 0 ? x : alpha * x` (TFLite's comparison; alpha may be negative or above 1).
    LeakyRelu(f32),
    /// `x < 0 ? expm1(x) : x`.
    Elu,
    /// GELU. Exact: `0.5 x (1 + erf(x/√2))`, erf from a rational approximation (2 ulp +
    /// 1.9e-7·|x|, as XNNPACK's; [`unary_ref`] computes TFLite's `0.5 x erfc(-x/√2)` in f64);
    /// approximate: `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    Gelu {
        /// Use the tanh approximation.
        approximate: bool,
    },
    /// `|x|`.
    Abs,
    /// `-x`.
    Neg,
    /// `exp(x)`.
    Exp,
    /// Natural logarithm.
    Log,
    /// `√x`.
    Sqrt,
    /// `1 / √x`.
    Rsqrt,
    /// `x²`.
    Square,
    /// `sin(x)`.
    Sin,
    /// `cos(x)`.
    Cos,
    /// Round toward -∞.
    Floor,
    /// Round toward +∞.
    Ceil,
    /// Round half to even (TFLite ROUND). The sign of a zero result may differ from TFLite's,
    /// which returns +0 for inputs in (-0.5, 0).
    Round,
    /// -1, 0 or 1 (0 for NaN).
    Sign,
    /// The error function (computed in f64 from [`erfc_ref`]'s series; no SIMD form).
    Erf,
}

/// The SIMD form of `op`, when there is one.
fn vector_op(op: UnaryOp) -> Option<VUnary> {
    Some(match op {
        UnaryOp::Relu => VUnary::Clamp(0.0, f32::INFINITY),
        UnaryOp::Relu6 => VUnary::Clamp(0.0, 6.0),
        UnaryOp::ReluN1To1 => VUnary::Clamp(-1.0, 1.0),
        UnaryOp::Relu0To1 => VUnary::Clamp(0.0, 1.0),
        UnaryOp::Tanh => VUnary::Tanh,
        UnaryOp::Logistic => VUnary::Logistic,
        UnaryOp::HardSwish => VUnary::HardSwish,
        UnaryOp::LeakyRelu(a) => VUnary::LeakyRelu(a),
        UnaryOp::Elu => VUnary::Elu,
        UnaryOp::Gelu { approximate: true } => VUnary::GeluTanh,
        UnaryOp::Gelu { approximate: false } => VUnary::GeluErf,
        UnaryOp::Abs => VUnary::Abs,
        UnaryOp::Neg => VUnary::Neg,
        UnaryOp::Exp => VUnary::Exp,
        UnaryOp::Sqrt => VUnary::Sqrt,
        UnaryOp::Rsqrt => VUnary::Rsqrt,
        UnaryOp::Square => VUnary::Square,
        UnaryOp::Floor => VUnary::Floor,
        UnaryOp::Ceil => VUnary::Ceil,
        UnaryOp::Round => VUnary::Round,
        UnaryOp::Sign => VUnary::Sign,
        UnaryOp::Log | UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Erf => return None,
    })
}

#[inline(always)]
fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let y = if x < lo { lo } else { x };
    if hi < y {
        hi
    } else {
        y
    }
}

/// One element of `op`; `gelu` is the exact GELU to use (the reference's or the fast one).
#[inline(always)]
fn apply(op: UnaryOp, x: f32, gelu: impl Fn(f32) -> f32) -> f32 {
    match op {
        UnaryOp::Relu => clamp(x, 0.0, f32::INFINITY),
        UnaryOp::Relu6 => clamp(x, 0.0, 6.0),
        UnaryOp::ReluN1To1 => clamp(x, -1.0, 1.0),
        UnaryOp::Relu0To1 => clamp(x, 0.0, 1.0),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Logistic => 1.0 / (1.0 + (-x).exp()),
        // XNNPACK's form (LiteRT's default float path): x * min(max(x/6 + 1/2, 0), 1), the
        // inner term one fused multiply-add; TFLite's reference kernel computes
        // x * min(max(x + 3, 0), 6) / 6, which differs in the last bit.
        UnaryOp::HardSwish => x * clamp(x.mul_add(1.0 / 6.0, 0.5), 0.0, 1.0),
        UnaryOp::LeakyRelu(alpha) => {
            if x > 0.0 {
                x
            } else {
                x * alpha
            }
        }
        UnaryOp::Elu => {
            if x < 0.0 {
                x.exp_m1()
            } else {
                x
            }
        }
        UnaryOp::Gelu { approximate: true } => {
            let inner = SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x);
            0.5 * x * (1.0 + inner.tanh())
        }
        UnaryOp::Gelu { approximate: false } => gelu(x),
        UnaryOp::Abs => x.abs(),
        UnaryOp::Neg => -x,
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Square => x * x,
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Erf => (1.0 - erfc_f64(x as f64)) as f32,
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Round => x.round_ties_even(),
        UnaryOp::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }
    }
}

/// One element of `op` as [`unary_ref`] computes it (quantized ops build their tables from it).
pub(crate) fn reference_value(op: UnaryOp, x: f32) -> f32 {
    apply(op, x, gelu_ref)
}

/// Exact GELU as TFLite's reference kernel writes it, `0.5 x erfc(-x/√2)` (cancellation-free),
/// with erfc from [`erfc_ref`].
fn gelu_ref(x: f32) -> f32 {
    0.5 * x * erfc_ref(x * -std::f32::consts::FRAC_1_SQRT_2)
}

/// Exact GELU as the SIMD routine computes it: 0.5·x·(1 + erf(x/√2)) with erf from the rational
/// `GELU_ERF_P / GELU_ERF_Q` (the vector form takes 1/Q from a reciprocal estimate, so the
/// two may differ in the last bit).
pub(crate) fn gelu_erf(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let z = (x * std::f32::consts::FRAC_1_SQRT_2).clamp(-GELU_ERF_Z, GELU_ERF_Z);
    let s = z * z;
    let p = GELU_ERF_P[1..].iter().fold(GELU_ERF_P[0], |p, &c| p.mul_add(s, c));
    let q = GELU_ERF_Q[1..].iter().fold(GELU_ERF_Q[0], |q, &c| q.mul_add(s, c));
    let erf = (z * p / q).clamp(-1.0, 1.0);
    let hx = 0.5 * x;
    hx.mul_add(erf, hx)
}

/// erfc(z) computed in f64 to ~1e-13 relative and rounded: the reference for exact GELU.
/// The Taylor series of erf below 2.5, the continued fraction of erfc above.
pub(crate) fn erfc_ref(z: f32) -> f32 {
    erfc_f64(z as f64) as f32
}

fn erfc_f64(z: f64) -> f64 {
    const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    if z.is_nan() {
        return z;
    }
    if z < 0.0 {
        return 2.0 - erfc_f64(-z);
    }
    if z < 2.5 {
        // erf z = 2/√π Σ (-1)^k z^(2k+1) / (k! (2k+1)); terms peak near 200 at z = 2.5, so the
        // cancellation costs ~3 of f64's 16 digits.
        let z2 = z * z;
        let (mut term, mut sum, mut k) = (z, z, 0.0f64);
        loop {
            k += 1.0;
            term *= -z2 / k;
            let t = term / (2.0 * k + 1.0);
            sum += t;
            if t.abs() <= 1e-17 * sum.abs() || k > 200.0 {
                break;
            }
        }
        1.0 - FRAC_2_SQRT_PI * sum
    } else {
        // erfc z = e^(-z²)/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + …)))), evaluated backward.
        let mut f = z;
        for k in (1..=300).rev() {
            f = z + (k as f64 * 0.5) / f;
        }
        (-z * z).exp() * (FRAC_2_SQRT_PI * 0.5) / f
    }
}

/// The portable loop: the scalar path of [`unary`] where no SIMD applies.
fn unary_portable(op: UnaryOp, x: &[f32], out: &mut [f32]) {
    macro_rules! go {
        ($($pat:pat),*) => {
            match op {
                $($pat => for (o, &v) in out.iter_mut().zip(x) { *o = apply(op, v, gelu_erf) },)*
            }
        };
    }
    // One loop per variant so that the per-element `match` is decided outside the loop.
    go!(
        UnaryOp::Relu,
        UnaryOp::Relu6,
        UnaryOp::ReluN1To1,
        UnaryOp::Relu0To1,
        UnaryOp::Tanh,
        UnaryOp::Logistic,
        UnaryOp::HardSwish,
        UnaryOp::LeakyRelu(_),
        UnaryOp::Elu,
        UnaryOp::Gelu { .. },
        UnaryOp::Abs,
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Square,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Erf
    );
}

fn unary_chunk(op: UnaryOp, x: &[f32], out: &mut [f32]) {
    let done = vector_op(op).is_some_and(|v| ew::unary(v, x, out));
    if !done {
        unary_portable(op, x, out);
    }
}

/// `out[i] = op(x[i])`. SIMD (AVX-512 / AVX2) for every op but LOG, SIN and COS; exp, tanh and
/// logistic stay within a few ulp of the correctly rounded result, exact GELU within ~3e-7
/// relative. Large inputs are split across the current run's kernel pool.
///
/// # Panics
/// When `x` and `out` differ in length.
pub fn unary(op: UnaryOp, x: &[f32], out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "unary: input and output lengths differ");
    match par_chunk(x.len(), 1) {
        None => unary_chunk(op, x, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c, |i, o| unary_chunk(op, &x[i * c..i * c + o.len()], o)),
    }
}

/// [`unary`] in place (a fused activation applied to a kernel's output): each block goes
/// through a stack copy, so the values are exactly [`unary`]'s and nothing is allocated.
pub fn unary_in_place(op: UnaryOp, data: &mut [f32]) {
    let blocks = |d: &mut [f32]| {
        let mut tmp = [0f32; 256];
        for block in d.chunks_mut(tmp.len()) {
            let x = &mut tmp[..block.len()];
            x.copy_from_slice(block);
            unary_chunk(op, x, block);
        }
    };
    match par_chunk(data.len(), 1) {
        None => blocks(data),
        Some(c) => nnrt_threads::par_chunks_mut(data, c, |_, d| blocks(d)),
    }
}

/// SiLU (swish) as TFLite graphs write it, LOGISTIC then MUL of the input by that:
/// `out[i] = clamp(x[i] * logistic(x[i]), act)` in one pass, with [`unary`]'s logistic and
/// [`binary`](super::binary::binary)'s multiply (the product taken as `x * s` when `x_first`,
/// else `s * x`, as the MUL's operands are), so the values are exactly those of the two ops.
/// Each block's logistic goes through a stack buffer; nothing is allocated.
///
/// # Panics
/// When `x` and `out` differ in length.
pub fn silu(x: &[f32], x_first: bool, act: Act, out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "silu: input and output lengths differ");
    let blocks = |x: &[f32], out: &mut [f32]| {
        let mut tmp = [0f32; 256];
        for (xb, ob) in x.chunks(tmp.len()).zip(out.chunks_mut(tmp.len())) {
            let s = &mut tmp[..xb.len()];
            unary_chunk(UnaryOp::Logistic, xb, s);
            match x_first {
                true => row_f32(B::Mul, Row::Slice(xb), Row::Slice(s), ob, act),
                false => row_f32(B::Mul, Row::Slice(s), Row::Slice(xb), ob, act),
            }
        }
    };
    match par_chunk(x.len(), 1) {
        None => blocks(x, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c, |i, o| blocks(&x[i * c..i * c + o.len()], o)),
    }
}

/// An element-wise activation a convolution applies to its output in its epilogue, band by
/// band while the band is in cache (`ops::fuse_act`): exactly the values of the ops it replaces,
/// computed by the same kernels ([`unary`]'s per-element code, [`silu`]'s logistic and
/// multiply), so fused and unfused runs agree bit for bit on every instruction set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PostAct {
    /// LOGISTIC of the output, then MUL of the output by it (`x * s` when `x_first`, else
    /// `s * x`, as the MUL's operands are), clamped to the MUL's fused `act`.
    Silu { x_first: bool, act: Act },
    /// HARD_SWISH of the output.
    HardSwish,
}

impl PostAct {
    /// Applies the activation to `data` in place. Each block of 256 values goes through stack
    /// copies; nothing is allocated, and the values do not depend on how `data` was cut.
    pub fn apply(self, data: &mut [f32]) {
        const BLOCK: usize = 256;
        let (mut xb, mut sb) = ([0f32; BLOCK], [0f32; BLOCK]);
        for block in data.chunks_mut(BLOCK) {
            let x = &mut xb[..block.len()];
            match self {
                PostAct::HardSwish => {
                    x.copy_from_slice(block);
                    unary_chunk(UnaryOp::HardSwish, x, block);
                }
                PostAct::Silu { x_first, act } => {
                    let s = &mut sb[..block.len()];
                    unary_chunk(UnaryOp::Logistic, block, s);
                    // The vector multiply in place (the routine and operand order `row_f32`
                    // uses), else `row_f32` from a copy.
                    let done = match x_first {
                        true => ew::accumulate_first_clamped(VBin::Mul, block, s, act.min, act.max),
                        false => ew::accumulate_clamped(VBin::Mul, block, s, act.min, act.max),
                    };
                    if !done {
                        x.copy_from_slice(block);
                        match x_first {
                            true => row_f32(B::Mul, Row::Slice(x), Row::Slice(s), block, act),
                            false => row_f32(B::Mul, Row::Slice(s), Row::Slice(x), block, act),
                        }
                    }
                }
            }
        }
    }
}

/// Reference twin of [`unary`]: the scalar formula per element, with std's math functions and
/// an f64 erfc.
///
/// # Panics
/// When `x` and `out` differ in length.
pub fn unary_ref(op: UnaryOp, x: &[f32], out: &mut [f32]) {
    assert_eq!(
        x.len(),
        out.len(),
        "unary_ref: input and output lengths differ"
    );
    for (o, &v) in out.iter_mut().zip(x) {
        *o = apply(op, v, gelu_ref);
    }
}

/// PRELU: `out = x >= 0 ? x : x * alpha`, with `alpha` (`alpha_shape`) broadcast against `x`
/// (`x_shape`) NumPy-style; `out` has the broadcast shape.
///
/// # Panics
/// When the shapes do not broadcast or a slice length does not match its shape.
pub fn prelu(x: &[f32], x_shape: &[usize], alpha: &[f32], alpha_shape: &[usize], out: &mut [f32]) {
    let out_shape = broadcast_shape(x_shape, alpha_shape).expect("prelu: shapes do not broadcast");
    broadcast_rows(
        x,
        x_shape,
        alpha,
        alpha_shape,
        out,
        &out_shape,
        |rx, ra, o| map_row(rx, ra, o, prelu_one),
    );
}

/// Reference twin of [`prelu`].
///
/// # Panics
/// As [`prelu`].
pub fn prelu_ref(
    x: &[f32],
    x_shape: &[usize],
    alpha: &[f32],
    alpha_shape: &[usize],
    out: &mut [f32],
) {
    let out_shape =
        broadcast_shape(x_shape, alpha_shape).expect("prelu_ref: shapes do not broadcast");
    broadcast_ref(x, x_shape, alpha, alpha_shape, out, &out_shape, prelu_one);
}

#[inline(always)]
fn prelu_one(x: f32, alpha: f32) -> f32 {
    if x >= 0.0 {
        x
    } else {
        x * alpha
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OPS: [UnaryOp; 26] = [
        UnaryOp::Relu,
        UnaryOp::Relu6,
        UnaryOp::ReluN1To1,
        UnaryOp::Relu0To1,
        UnaryOp::Tanh,
        UnaryOp::Logistic,
        UnaryOp::HardSwish,
        UnaryOp::LeakyRelu(0.2),
        UnaryOp::LeakyRelu(-1.5),
        UnaryOp::Elu,
        UnaryOp::Gelu { approximate: true },
        UnaryOp::Gelu { approximate: false },
        UnaryOp::Abs,
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Square,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Erf,
    ];

    fn ulp(x: f32) -> f32 {
        let a = x.abs().max(f32::MIN_POSITIVE);
        f32::from_bits(a.to_bits() + 1) - a
    }

    /// Whether `got` may stand for `want` under `op`'s tolerance for input `x`.
    fn close(op: UnaryOp, x: f32, got: f32, want: f32) -> bool {
        if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
            return true;
        }
        let d = (got - want).abs();
        match op {
            // Vector exp/tanh/logistic/expm1 against std's: each within ~2 ulp of the true value.
            UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Logistic | UnaryOp::Elu => d <= 4.0 * ulp(want),
            // 1 + tanh(y) loses relative precision when tanh(y) ≈ -1; the error is a few ulp of
            // 1 scaled by 0.5|x|.
            UnaryOp::Gelu { approximate: true } => d <= 4.0 * ulp(want) + 2.5e-7 * x.abs(),
            // erf's rational: 2e-8 from the fit, the rest f32 rounding (measured 2 ulp +
            // 1.9e-7·|x| over [-12, 12]); the sum 1 + erf cancels where erf ≈ -1, so the bound is
            // in units of x there, as for the tanh form.
            UnaryOp::Gelu { approximate: false } => d <= 4.0 * ulp(want) + 2.5e-7 * x.abs(),
            // Everything else computes the same IEEE operations: bit-exact, apart from the sign
            // of a zero.
            _ => got == want,
        }
    }

    fn check(op: UnaryOp, x: &[f32]) -> Result<(), TestCaseError> {
        let mut got = vec![0.0; x.len()];
        let mut want = vec![0.0; x.len()];
        let mut portable = vec![0.0; x.len()];
        unary(op, x, &mut got);
        unary_ref(op, x, &mut want);
        unary_portable(op, x, &mut portable);
        for i in 0..x.len() {
            prop_assert!(
                close(op, x[i], got[i], want[i]),
                "{op:?}({}) = {} want {}",
                x[i],
                got[i],
                want[i]
            );
            prop_assert!(
                close(op, x[i], portable[i], want[i]),
                "portable {op:?}({}) = {} want {}",
                x[i],
                portable[i],
                want[i]
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn matches_ref(op_i in 0usize..OPS.len(), x in prop::collection::vec(-20.0f32..20.0, 0..200)) {
            check(OPS[op_i], &x)?;
        }

        #[test]
        fn silu_is_logistic_then_mul(x in prop::collection::vec(prop_oneof![-100.0f32..100.0, Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(-0.0f32)], 0..700), x_first in any::<bool>(), relu6 in any::<bool>()) {
            let act = if relu6 { Act::RELU6 } else { Act::NONE };
            let n = x.len();
            let (mut s, mut want, mut got) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
            unary(UnaryOp::Logistic, &x, &mut s);
            let (a, b) = if x_first { (&x, &s) } else { (&s, &x) };
            super::super::binary::binary(B::Mul, a, &[n], b, &[n], &mut want, &[n], act);
            silu(&x, x_first, act, &mut got);
            // Bit for bit, except that a NaN's sign and payload are not kept: the compiler may
            // commute a multiply, and x86 returns the first operand's NaN when both are NaN.
            let bits = |v: &[f32]| v.iter().map(|f| if f.is_nan() { f32::NAN.to_bits() } else { f.to_bits() }).collect::<Vec<u32>>();
            prop_assert_eq!(bits(&got), bits(&want));
        }

        #[test]
        fn post_act_is_the_ops(x in prop::collection::vec(prop_oneof![-100.0f32..100.0, Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(-0.0f32)], 0..700), x_first in any::<bool>(), relu6 in any::<bool>(), hard_swish in any::<bool>()) {
            let act = if relu6 { Act::RELU6 } else { Act::NONE };
            let n = x.len();
            let (mut s, mut want, mut got) = (vec![0.0; n], vec![0.0; n], x.clone());
            if hard_swish {
                unary(UnaryOp::HardSwish, &x, &mut want);
                super::PostAct::HardSwish.apply(&mut got);
            } else {
                unary(UnaryOp::Logistic, &x, &mut s);
                let (a, b) = if x_first { (&x, &s) } else { (&s, &x) };
                super::super::binary::binary(B::Mul, a, &[n], b, &[n], &mut want, &[n], act);
                super::PostAct::Silu { x_first, act }.apply(&mut got);
            }
            // Bit for bit, NaNs compared as NaN (as in silu_is_logistic_then_mul).
            let bits = |v: &[f32]| v.iter().map(|f| if f.is_nan() { f32::NAN.to_bits() } else { f.to_bits() }).collect::<Vec<u32>>();
            prop_assert_eq!(bits(&got), bits(&want));
        }

        #[test]
        fn prelu_matches_ref(dims in prop::collection::vec(1usize..5, 1..=4), mask in prop::collection::vec(any::<bool>(), 4), seed in any::<u32>()) {
            let a_shape: Vec<usize> = dims.iter().zip(&mask).map(|(&d, &m)| if m { d } else { 1 }).skip(1).collect();
            let n: usize = dims.iter().product();
            let x: Vec<f32> = (0..n).map(|i| ((i as u32).wrapping_mul(2654435761) ^ seed) as f32 / u32::MAX as f32 - 0.5).collect();
            let alpha: Vec<f32> = (0..a_shape.iter().product::<usize>()).map(|i| 0.1 * i as f32 - 0.3).collect();
            let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
            prelu(&x, &dims, &alpha, &a_shape, &mut o1);
            prelu_ref(&x, &dims, &alpha, &a_shape, &mut o2);
            prop_assert_eq!(o1, o2);
        }
    }

    #[test]
    fn special_values() {
        let specials = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            100.0,
            -100.0,
            1e30,
            -1e30,
            88.7,
            88.8,
            -87.5,
            -103.0,
            -104.5,
            1e-30,
            -1e-30,
            0.625,
            -0.625,
            3.0,
            -3.0,
            0.5,
            -0.5,
        ];
        for op in OPS {
            check(op, &specials).unwrap();
        }
        let mut o = [0.0; 4];
        unary(
            UnaryOp::Logistic,
            &[-100.0, 100.0, f32::NEG_INFINITY, f32::INFINITY],
            &mut o,
        );
        assert_eq!(o, [0.0, 1.0, 0.0, 1.0]);
        unary(
            UnaryOp::Tanh,
            &[f32::NEG_INFINITY, f32::INFINITY, -50.0, 50.0],
            &mut o,
        );
        assert_eq!(o, [-1.0, 1.0, -1.0, 1.0]);
        unary(UnaryOp::Round, &[0.5, 1.5, 2.5, -2.5], &mut o);
        assert_eq!(o, [0.0, 2.0, 2.0, -2.0]);
    }

    /// Max error in ulp of `op` against an f64 truth over a dense sweep of [-20, 20].
    fn sweep(op: UnaryOp, truth: impl Fn(f64) -> f64) -> f32 {
        let xs: Vec<f32> = (0..400_001).map(|i| -20.0 + i as f32 * 1e-4).collect();
        let mut got = vec![0.0; xs.len()];
        unary(op, &xs, &mut got);
        let mut worst = 0.0f32;
        for (&x, &g) in xs.iter().zip(&got) {
            let t = truth(x as f64);
            let err = ((g as f64 - t).abs() / ulp(t as f32) as f64) as f32;
            worst = worst.max(err);
        }
        worst
    }

    // Limits: ~1 ulp from the polynomial and rounding of exp; tanh's 1 - 2/(e+1) and
    // logistic's division add one or two more.
    #[test]
    fn exp_tanh_logistic_accuracy() {
        let e = sweep(UnaryOp::Exp, f64::exp);
        let t = sweep(UnaryOp::Tanh, f64::tanh);
        let l = sweep(UnaryOp::Logistic, |x| 1.0 / (1.0 + (-x).exp()));
        let m = sweep(UnaryOp::Elu, |x| if x < 0.0 { x.exp_m1() } else { x });
        eprintln!("worst ulp: exp {e} tanh {t} logistic {l} elu {m}");
        assert!(
            e <= 2.0 && t <= 3.0 && l <= 3.0 && m <= 3.0,
            "ulp: exp {e} tanh {t} logistic {l} elu {m}"
        );
    }

    #[test]
    fn erfc_and_gelu_accuracy() {
        // Known values (to 16 digits) check the f64 reference, on both sides of its switch.
        for (z, v) in [
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.4, 6.885_138_966_450_786e-4),
            (2.6, 2.360_344_165_293_492e-4),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
        ] {
            assert!(
                (erfc_f64(z) - v).abs() <= 1e-12 * v,
                "erfc({z}) = {}",
                erfc_f64(z)
            );
        }
        // Exact GELU's fast form against the reference over [-12, 12]: within the bound of
        // `close`, and (for x ≥ 0, where nothing cancels) within 3e-7 relative.
        let mut worst = 0.0f64;
        for i in 0..=240_000 {
            let x = -12.0 + i as f32 * 1e-4;
            let (g, w) = (gelu_erf(x), gelu_ref(x));
            assert!(close(UnaryOp::Gelu { approximate: false }, x, g, w), "gelu({x}) = {g}, want {w}");
            if x >= 0.0 && w != 0.0 {
                worst = worst.max((g as f64 - w as f64).abs() / w as f64);
            }
        }
        eprintln!("gelu worst relative error for x >= 0: {worst:e}");
        assert!(worst < 3e-7, "gelu relative error {worst}");
    }

    #[test]
    fn large_input_splits_across_threads() {
        let x: Vec<f32> = (0..100_003)
            .map(|i| (i as f32 * 0.37).sin() * 10.0)
            .collect();
        check(UnaryOp::Gelu { approximate: false }, &x).unwrap();
        check(UnaryOp::Relu6, &x).unwrap();
    }

    #[test]
    fn in_place_equals_out_of_place_bit_for_bit() {
        // Longer than one stack block, with a ragged tail; tanh as a fused activation uses it.
        let x: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 97.0).collect();
        for op in [UnaryOp::Tanh, UnaryOp::Logistic] {
            let mut want = vec![0.0; x.len()];
            unary(op, &x, &mut want);
            let mut got = x.clone();
            unary_in_place(op, &mut got);
            assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{op:?}");
        }
    }
}
