//! Data movement for every element type: CONCATENATION, TRANSPOSE, PAD / PADV2, MIRROR_PAD, and
//! the f16 → f32 conversion of fp16 DEQUANTIZE.
//!
//! Every kernel first coalesces the shape (drops size-1 dims, merges dims that move together),
//! so that the inner loops are long contiguous copies wherever the op allows.
#![forbid(unsafe_code)]

use half::f16;

use super::binary::par_chunk;
use crate::simd::elementwise as ew;

/// CONCATENATION: each input `i` is viewed as `[outer, axis_sizes[i], inner]`; `out` is
/// `[outer, Σ axis_sizes, inner]`. Splits the outer dim across the pool when large.
///
/// # Panics
/// When `inputs` and `axis_sizes` differ in length or a slice length does not match its view.
pub fn concat<T: Copy + Send + Sync>(
    inputs: &[&[T]],
    axis_sizes: &[usize],
    outer: usize,
    inner: usize,
    out: &mut [T],
) {
    assert_eq!(
        inputs.len(),
        axis_sizes.len(),
        "concat: one axis size per input"
    );
    for (x, &a) in inputs.iter().zip(axis_sizes) {
        assert_eq!(
            x.len(),
            outer * a * inner,
            "concat: input length vs [outer, axis, inner]"
        );
    }
    let row: usize = axis_sizes.iter().sum::<usize>() * inner;
    assert_eq!(out.len(), outer * row, "concat: output length");
    if row == 0 {
        return;
    }
    let run = |o0: usize, out: &mut [T]| {
        for (k, dst) in out.chunks_exact_mut(row).enumerate() {
            let o = o0 + k;
            let mut at = 0;
            for (x, &a) in inputs.iter().zip(axis_sizes) {
                let len = a * inner;
                dst[at..at + len].copy_from_slice(&x[o * len..(o + 1) * len]);
                at += len;
            }
        }
    };
    match par_chunk(outer, row) {
        None => run(0, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c * row, |i, o| run(i * c, o)),
    }
}

/// Drops size-1 dims and merges input dims that stay adjacent and in order in the output.
/// Returns the coalesced input dims and permutation.
fn coalesce_transpose(in_shape: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let rank = in_shape.len();
    let mut seen = vec![false; rank];
    for &p in perm {
        assert!(
            p < rank && !seen[p],
            "transpose: {perm:?} is not a permutation of 0..{rank}"
        );
        seen[p] = true;
    }
    assert_eq!(perm.len(), rank, "transpose: perm length vs rank");
    // Rank of each non-1 input dim among the non-1 dims (so size-1 dims in between don't
    // prevent a merge).
    let mut order = vec![usize::MAX; rank];
    for (r, d) in (0..rank).filter(|&d| in_shape[d] != 1).enumerate() {
        order[d] = r;
    }
    // Output order of the non-1 input dims, as groups of input-consecutive dims.
    let mut groups: Vec<(usize, usize)> = vec![]; // (first input dim, size)
    let mut last: Option<usize> = None;
    for &q in perm.iter().filter(|&&q| in_shape[q] != 1) {
        match (groups.last_mut(), last) {
            (Some(g), Some(l)) if order[q] == order[l] + 1 => g.1 *= in_shape[q],
            _ => groups.push((q, in_shape[q])),
        }
        last = Some(q);
    }
    // Number the groups in input order.
    let mut by_input: Vec<usize> = (0..groups.len()).collect();
    by_input.sort_by_key(|&g| groups[g].0);
    let dims: Vec<usize> = by_input.iter().map(|&g| groups[g].1).collect();
    let mut new_index = vec![0; groups.len()];
    for (i, &g) in by_input.iter().enumerate() {
        new_index[g] = i;
    }
    (dims, new_index)
}

/// Tile edge of the blocked transposes (16×16 elements).
const TILE: usize = 16;

/// `out[o_off + a·o_as + b] = input[i_off + a + b·i_bs]` for `a < na`, `b < nb`: a 2-D
/// transpose between strided views, in tiles so that both sides stay in cache.
#[allow(clippy::too_many_arguments)]
fn tile_2d<T: Copy>(
    input: &[T],
    i_off: usize,
    i_bs: usize,
    out: &mut [T],
    o_off: usize,
    o_as: usize,
    na: usize,
    nb: usize,
) {
    // A few planes interleaved into dense rows (NCHW → NHWC of an RGB image): one pass.
    if o_as == nb && (2..=4).contains(&nb) {
        let out = &mut out[o_off..o_off + na * nb];
        match nb {
            2 => interleave::<T, 2>(input, i_off, i_bs, out),
            3 => interleave::<T, 3>(input, i_off, i_bs, out),
            _ => interleave::<T, 4>(input, i_off, i_bs, out),
        }
        return;
    }
    for a0 in (0..na).step_by(TILE) {
        let a1 = (a0 + TILE).min(na);
        for b0 in (0..nb).step_by(TILE) {
            let b1 = (b0 + TILE).min(nb);
            for a in a0..a1 {
                let dst = &mut out[o_off + a * o_as + b0..o_off + a * o_as + b1];
                for (d, b) in dst.iter_mut().zip(b0..b1) {
                    *d = input[i_off + a + b * i_bs];
                }
            }
        }
    }
}

/// `out[a·N + b] = input[i_off + a + b·i_bs]`: `N` planes of `out.len() / N` values
/// interleaved (the element-by-element tile loop took 1.3 ns per value of a 224×224 RGB image).
fn interleave<T: Copy, const N: usize>(input: &[T], i_off: usize, i_bs: usize, out: &mut [T]) {
    let na = out.len() / N;
    let planes: [&[T]; N] = std::array::from_fn(|b| &input[i_off + b * i_bs..][..na]);
    for (a, o) in out.chunks_exact_mut(N).enumerate() {
        for (d, p) in o.iter_mut().zip(&planes) {
            *d = p[a];
        }
    }
}

/// The transposes whose output rows are strided in the input: for every index of the other
/// output dims, a tiled 2-D transpose between output dim `j` (the input's contiguous dim) and
/// the output's last dim. Split along output dim 0 across the pool when large.
fn transpose_tiled<T: Copy + Send + Sync>(
    input: &[T],
    od: &[usize],
    is: &[usize],
    j: usize,
    out: &mut [T],
) {
    let k = od.len();
    let l = k - 1;
    let mut ostr = vec![1; k];
    for d in (0..l).rev() {
        ostr[d] = ostr[d + 1] * od[d + 1];
    }
    let free: Vec<usize> = (1..l).filter(|&d| d != j).collect();
    let run = |lo: usize, hi: usize, out: &mut [T]| {
        let mut idx = vec![0; free.len()];
        loop {
            let io: usize = free.iter().zip(&idx).map(|(&d, &i)| i * is[d]).sum();
            let oo: usize = free.iter().zip(&idx).map(|(&d, &i)| i * ostr[d]).sum();
            if j == 0 {
                tile_2d(input, io + lo, is[l], out, oo, ostr[0], hi - lo, od[l]);
            } else {
                for d0 in lo..hi {
                    tile_2d(
                        input,
                        io + d0 * is[0],
                        is[l],
                        out,
                        oo + (d0 - lo) * ostr[0],
                        ostr[j],
                        od[j],
                        od[l],
                    );
                }
            }
            let mut f = free.len();
            loop {
                if f == 0 {
                    return;
                }
                f -= 1;
                idx[f] += 1;
                if idx[f] < od[free[f]] {
                    break;
                }
                idx[f] = 0;
            }
        }
    };
    match par_chunk(od[0], ostr[0]) {
        None => run(0, od[0], out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c * ostr[0], |i, o| {
            let lo = i * c;
            run(lo, lo + o.len() / ostr[0], o)
        }),
    }
}

/// TRANSPOSE: `out` has dims `in_shape[perm[j]]`, and `out[i_perm[0], …] = input[i_0, …]`.
/// Dims are coalesced first. When the input's innermost dim stays last, output rows are
/// contiguous copies; otherwise (NHWC ↔ NCHW, 2-D) a tiled transpose runs between the two dims
/// involved, for every index of the others.
///
/// # Panics
/// When `perm` is not a permutation of the dims or a slice length does not match its shape.
pub fn transpose<T: Copy + Send + Sync>(
    input: &[T],
    in_shape: &[usize],
    perm: &[usize],
    out: &mut [T],
) {
    let (dims, p) = coalesce_transpose(in_shape, perm);
    let total: usize = in_shape.iter().product();
    assert_eq!(input.len(), total, "transpose: input length vs shape");
    assert_eq!(out.len(), total, "transpose: output length vs shape");
    if total == 0 {
        return;
    }
    let k = dims.len();
    if k <= 1 || p.iter().enumerate().all(|(i, &q)| i == q) {
        out.copy_from_slice(input);
        return;
    }
    let mut in_stride = vec![1; k];
    for d in (0..k - 1).rev() {
        in_stride[d] = in_stride[d + 1] * dims[d + 1];
    }
    // Output dims and their input strides.
    let od: Vec<usize> = p.iter().map(|&q| dims[q]).collect();
    let os: Vec<usize> = p.iter().map(|&q| in_stride[q]).collect();
    if os[k - 1] != 1 {
        let j = p
            .iter()
            .position(|&q| q == k - 1)
            .expect("perm holds every dim");
        return transpose_tiled(input, &od, &os, j, out);
    }
    // The last dim stays last: copy output rows.
    let n = od[k - 1];
    let run = |r0: usize, out: &mut [T]| {
        let mut idx = vec![0; k - 1];
        let (mut off, mut rem) = (0, r0);
        for d in (0..k - 1).rev() {
            idx[d] = rem % od[d];
            rem /= od[d];
            off += idx[d] * os[d];
        }
        for row in out.chunks_exact_mut(n) {
            row.copy_from_slice(&input[off..off + n]);
            for d in (0..k - 1).rev() {
                idx[d] += 1;
                off += os[d];
                if idx[d] < od[d] {
                    break;
                }
                off -= os[d] * od[d];
                idx[d] = 0;
            }
        }
    };
    let rows = total / n;
    match par_chunk(rows, n) {
        None => run(0, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c * n, |i, o| run(i * c, o)),
    }
}

/// Reference twin of [`transpose`]: one output element at a time.
///
/// # Panics
/// As [`transpose`].
pub fn transpose_ref<T: Copy>(input: &[T], in_shape: &[usize], perm: &[usize], out: &mut [T]) {
    let rank = in_shape.len();
    let out_shape: Vec<usize> = perm.iter().map(|&p| in_shape[p]).collect();
    let mut idx = vec![0; rank];
    for o in out.iter_mut() {
        // Input index: dim perm[j] takes the output index j.
        let mut in_idx = vec![0; rank];
        for j in 0..rank {
            in_idx[perm[j]] = idx[j];
        }
        *o = input[in_idx
            .iter()
            .zip(in_shape)
            .fold(0, |acc, (&i, &d)| acc * d + i)];
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn check_pad(input: usize, in_shape: &[usize], pads: &[(usize, usize)], out: usize) {
    assert_eq!(
        pads.len(),
        in_shape.len(),
        "pad: one (before, after) per dim"
    );
    assert_eq!(
        input,
        in_shape.iter().product::<usize>(),
        "pad: input length vs shape"
    );
    let want: usize = in_shape
        .iter()
        .zip(pads)
        .map(|(d, (b, a))| b + d + a)
        .product();
    assert_eq!(out, want, "pad: output length vs padded shape");
}

/// Interior slab `i` of the output of one dim level, filled by `fill_slab` (in parallel at the
/// top level when large).
#[allow(clippy::too_many_arguments)]
fn for_each_interior<T: Copy + Send + Sync>(
    input: &[T],
    out: &mut [T],
    in_step: usize,
    out_step: usize,
    before: usize,
    n: usize,
    par: bool,
    fill_slab: &(impl Fn(&[T], &mut [T]) + Sync),
) {
    let interior = &mut out[before * out_step..(before + n) * out_step];
    match par.then(|| par_chunk(n, out_step)).flatten() {
        Some(c) => nnrt_threads::par_chunks_mut(interior, c * out_step, |t, o| {
            for (o, i) in o.chunks_exact_mut(out_step).zip(input[t * c * in_step..].chunks_exact(in_step)) {
                fill_slab(i, o)
            }
        }),
        None => {
            for (o, i) in interior
                .chunks_exact_mut(out_step)
                .zip(input.chunks_exact(in_step))
            {
                fill_slab(i, o)
            }
        }
    }
}

fn pad_rec<T: Copy + Send + Sync>(
    input: &[T],
    dims: &[usize],
    pads: &[(usize, usize)],
    value: T,
    out: &mut [T],
    top: bool,
) {
    let (n, (before, _)) = (dims[0], pads[0]);
    let in_step: usize = dims[1..].iter().product();
    let out_step: usize = dims[1..]
        .iter()
        .zip(&pads[1..])
        .map(|(d, (b, a))| b + d + a)
        .product();
    out[..before * out_step].fill(value);
    out[(before + n) * out_step..].fill(value);
    if dims.len() == 1 {
        out[before..before + n].copy_from_slice(input);
        return;
    }
    if dims.len() == 2 {
        // Rows of the innermost dim (channel padding of NHWC is `[H·W, C]`): copy and fill
        // each row in place, with no recursion per row.
        let (row_before, row_after) = pads[1];
        let row = |i: &[T], o: &mut [T]| {
            o[..row_before].fill(value);
            o[row_before..row_before + i.len()].copy_from_slice(i);
            o[row_before + i.len()..].fill(value);
            debug_assert_eq!(o.len(), row_before + i.len() + row_after);
        };
        for_each_interior(input, out, in_step, out_step, before, n, top, &row);
        return;
    }
    let slab = |i: &[T], o: &mut [T]| pad_rec(i, &dims[1..], &pads[1..], value, o, false);
    for_each_interior(input, out, in_step, out_step, before, n, top, &slab);
}

/// PAD / PADV2: `out` is `input` with `pads[d] = (before, after)` cells of `value` around each
/// dim `d`. Unpadded dims are merged into their outer neighbour, so the inner loops copy whole
/// rows (`[1,H,W,C]` padded on H and W copies runs of W·C).
///
/// # Panics
/// When `pads` does not have one entry per dim or a slice length does not match its shape.
pub fn pad<T: Copy + Send + Sync>(
    input: &[T],
    in_shape: &[usize],
    pads: &[(usize, usize)],
    value: T,
    out: &mut [T],
) {
    check_pad(input.len(), in_shape, pads, out.len());
    if input.is_empty() {
        out.fill(value);
        return;
    }
    // Merge each unpadded dim into the previous one: its pads scale by the merged size.
    let (mut dims, mut ps): (Vec<usize>, Vec<(usize, usize)>) = (vec![], vec![]);
    for (&d, &p) in in_shape.iter().zip(pads) {
        match (dims.last_mut(), ps.last_mut()) {
            (Some(ld), Some(lp)) if p == (0, 0) => {
                *ld *= d;
                *lp = (lp.0 * d, lp.1 * d);
            }
            _ if p == (0, 0) && d == 1 => {}
            _ => {
                dims.push(d);
                ps.push(p);
            }
        }
    }
    if dims.is_empty() {
        out.copy_from_slice(input);
        return;
    }
    pad_rec(input, &dims, &ps, value, out, true);
}

/// Reference twin of [`pad`]: one output element at a time.
///
/// # Panics
/// As [`pad`].
pub fn pad_ref<T: Copy>(
    input: &[T],
    in_shape: &[usize],
    pads: &[(usize, usize)],
    value: T,
    out: &mut [T],
) {
    check_pad(input.len(), in_shape, pads, out.len());
    map_padded(in_shape, pads, out, |idx| {
        let mut off = 0;
        for ((&i, &d), &(b, _)) in idx.iter().zip(in_shape).zip(pads) {
            if i < b || i >= b + d {
                return value;
            }
            off = off * d + (i - b);
        }
        input[off]
    });
}

/// Sets each output element from its multi-index.
fn map_padded<T>(
    in_shape: &[usize],
    pads: &[(usize, usize)],
    out: &mut [T],
    f: impl Fn(&[usize]) -> T,
) {
    let out_shape: Vec<usize> = in_shape
        .iter()
        .zip(pads)
        .map(|(d, (b, a))| b + d + a)
        .collect();
    let mut idx = vec![0; out_shape.len()];
    for o in out.iter_mut() {
        *o = f(&idx);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// How MIRROR_PAD reflects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MirrorMode {
    /// Mirror without repeating the edge: `[a b c]` padded by 2 → `c b [a b c] b a`.
    /// Pads may be up to `dim - 1`.
    Reflect,
    /// Mirror including the edge: `[a b c]` padded by 2 → `b a [a b c] c b`. Pads may be up to
    /// `dim`.
    Symmetric,
}

/// The interior index (in `0..n`) that output position `i - before` mirrors.
fn mirror(i: isize, n: usize, mode: MirrorMode) -> usize {
    let n = n as isize;
    let m = match mode {
        MirrorMode::Reflect if i < 0 => -i,
        MirrorMode::Symmetric if i < 0 => -i - 1,
        MirrorMode::Reflect if i >= n => 2 * n - 2 - i,
        MirrorMode::Symmetric if i >= n => 2 * n - 1 - i,
        _ => i,
    };
    m as usize
}

fn mirror_rec<T: Copy + Send + Sync>(
    input: &[T],
    dims: &[usize],
    pads: &[(usize, usize)],
    block: usize,
    mode: MirrorMode,
    out: &mut [T],
    top: bool,
) {
    let (n, (before, after)) = (dims[0], pads[0]);
    let in_step: usize = dims[1..].iter().product::<usize>() * block;
    let out_step: usize = dims[1..]
        .iter()
        .zip(&pads[1..])
        .map(|(d, (b, a))| b + d + a)
        .product::<usize>()
        * block;
    if dims.len() == 1 {
        out[before * block..(before + n) * block].copy_from_slice(input);
    } else {
        let slab =
            |i: &[T], o: &mut [T]| mirror_rec(i, &dims[1..], &pads[1..], block, mode, o, false);
        for_each_interior(input, out, in_step, out_step, before, n, top, &slab);
    }
    // Padding slabs copy already-built interior slabs of the output.
    for j in (0..before).chain(before + n..before + n + after) {
        let src = before + mirror(j as isize - before as isize, n, mode);
        out.copy_within(src * out_step..(src + 1) * out_step, j * out_step);
    }
}

fn check_mirror(in_shape: &[usize], pads: &[(usize, usize)], mode: MirrorMode) {
    for (&d, &(b, a)) in in_shape.iter().zip(pads) {
        let limit = if mode == MirrorMode::Reflect {
            d.saturating_sub(1)
        } else {
            d
        };
        assert!(
            b <= limit && a <= limit,
            "mirror_pad: pads ({b}, {a}) exceed {limit} for a dim of {d} in {mode:?} mode"
        );
    }
}

/// MIRROR_PAD: pads each dim with a mirror image of the input (see [`MirrorMode`]).
/// Trailing unpadded dims are copied as whole blocks.
///
/// # Panics
/// When a pad exceeds the mode's limit, `pads` does not have one entry per dim, or a slice
/// length does not match its shape.
pub fn mirror_pad<T: Copy + Send + Sync>(
    input: &[T],
    in_shape: &[usize],
    pads: &[(usize, usize)],
    mode: MirrorMode,
    out: &mut [T],
) {
    check_pad(input.len(), in_shape, pads, out.len());
    check_mirror(in_shape, pads, mode);
    if out.is_empty() {
        return;
    }
    // Trailing unpadded dims form the copied block; unpadded size-1 dims vanish.
    let last_padded = pads.iter().rposition(|&p| p != (0, 0));
    let Some(last) = last_padded else {
        out.copy_from_slice(input);
        return;
    };
    let block: usize = in_shape[last + 1..].iter().product();
    let keep: Vec<usize> = (0..=last)
        .filter(|&d| !(in_shape[d] == 1 && pads[d] == (0, 0)))
        .collect();
    let dims: Vec<usize> = keep.iter().map(|&d| in_shape[d]).collect();
    let ps: Vec<(usize, usize)> = keep.iter().map(|&d| pads[d]).collect();
    mirror_rec(input, &dims, &ps, block, mode, out, true);
}

/// Reference twin of [`mirror_pad`]: one output element at a time.
///
/// # Panics
/// As [`mirror_pad`].
pub fn mirror_pad_ref<T: Copy>(
    input: &[T],
    in_shape: &[usize],
    pads: &[(usize, usize)],
    mode: MirrorMode,
    out: &mut [T],
) {
    check_pad(input.len(), in_shape, pads, out.len());
    check_mirror(in_shape, pads, mode);
    map_padded(in_shape, pads, out, |idx| {
        let off = idx
            .iter()
            .zip(in_shape)
            .zip(pads)
            .fold(0, |acc, ((&i, &d), &(b, _))| {
                acc * d + mirror(i as isize - b as isize, d, mode)
            });
        input[off]
    });
}

fn f16_chunk(src: &[f16], dst: &mut [f32]) {
    let done = ew::f16_to_f32(src, dst);
    for (d, s) in dst[done..].iter_mut().zip(&src[done..]) {
        *d = s.to_f32();
    }
}

/// Converts IEEE half floats to f32 (fp16 DEQUANTIZE); exact, with F16C / AVX-512 when present.
///
/// # Panics
/// When the lengths differ.
pub fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "f16_to_f32: lengths differ");
    match par_chunk(src.len(), 1) {
        None => f16_chunk(src, dst),
        Some(c) => nnrt_threads::par_chunks_mut(dst, c, |i, d| f16_chunk(&src[i * c..i * c + d.len()], d)),
    }
}

/// Reference twin of [`f16_to_f32`]: `half`'s portable conversion.
///
/// # Panics
/// When the lengths differ.
pub fn f16_to_f32_ref(src: &[f16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "f16_to_f32_ref: lengths differ");
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.to_f32();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shape() -> impl Strategy<Value = Vec<usize>> {
        prop::collection::vec(1usize..6, 1..=6)
    }

    /// NCHW → NHWC of images with 2, 3 and 4 channels (the interleaving path), large enough to be
    /// split across threads.
    #[test]
    fn image_planes_interleave() {
        for c in 2..=4usize {
            let s = [2, c, 67, 129];
            let n: usize = s.iter().product();
            let x: Vec<u32> = (0..n as u32).collect();
            let (mut a, mut b) = (vec![0; n], vec![0; n]);
            nnrt_threads::KernelPool::new(2).unwrap().install(|| transpose(&x, &s, &[0, 2, 3, 1], &mut a));
            transpose_ref(&x, &s, &[0, 2, 3, 1], &mut b);
            assert_eq!(a, b, "{c} channels");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        // Data movement is exact: every output must equal the reference bit for bit.
        #[test]
        fn transpose_matches_ref(s in shape(), keys in prop::collection::vec(any::<u32>(), 6)) {
            let mut perm: Vec<usize> = (0..s.len()).collect();
            perm.sort_by_key(|&i| keys[i]);
            let n: usize = s.iter().product();
            let x: Vec<u32> = (0..n as u32).collect();
            let (mut a, mut b) = (vec![0; n], vec![0; n]);
            transpose(&x, &s, &perm, &mut a);
            transpose_ref(&x, &s, &perm, &mut b);
            prop_assert_eq!(a, b, "{:?} {:?}", s, perm);
        }

        #[test]
        fn pads_match_ref(s in shape(), raw in prop::collection::vec((0usize..6, 0usize..6), 6), sym in any::<bool>()) {
            let n: usize = s.iter().product();
            let x: Vec<u16> = (0..n as u16).collect();
            let pads: Vec<(usize, usize)> = s.iter().zip(&raw).map(|(_, &p)| p).collect();
            let m: usize = s.iter().zip(&pads).map(|(d, (b, a))| b + d + a).product();
            let (mut a, mut b) = (vec![0; m], vec![0; m]);
            pad(&x, &s, &pads, 9999, &mut a);
            pad_ref(&x, &s, &pads, 9999, &mut b);
            prop_assert_eq!(&a, &b);
            let mode = if sym { MirrorMode::Symmetric } else { MirrorMode::Reflect };
            let cap = |d: usize| if sym { d } else { d - 1 };
            let mp: Vec<(usize, usize)> = s.iter().zip(&raw).map(|(&d, &(p, q))| (p.min(cap(d)), q.min(cap(d)))).collect();
            let m: usize = s.iter().zip(&mp).map(|(d, (b, a))| b + d + a).product();
            let (mut a, mut b) = (vec![0; m], vec![0; m]);
            mirror_pad(&x, &s, &mp, mode, &mut a);
            mirror_pad_ref(&x, &s, &mp, mode, &mut b);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn concat_places_inputs(outer in 0usize..4, inner in 1usize..4, sizes in prop::collection::vec(0usize..4, 1..4)) {
            let inputs: Vec<Vec<i64>> = sizes.iter().enumerate()
                .map(|(k, &a)| (0..outer * a * inner).map(|v| (k * 1000 + v) as i64).collect()).collect();
            let views: Vec<&[i64]> = inputs.iter().map(|v| v.as_slice()).collect();
            let total: usize = sizes.iter().sum();
            let mut out = vec![-1; outer * total * inner];
            concat(&views, &sizes, outer, inner, &mut out);
            let mut want = vec![];
            for o in 0..outer {
                for (x, &a) in inputs.iter().zip(&sizes) {
                    want.extend_from_slice(&x[o * a * inner..(o + 1) * a * inner]);
                }
            }
            prop_assert_eq!(out, want);
        }
    }

    #[test]
    fn tflite_examples_and_large() {
        let mut o = [0; 7];
        mirror_pad(&[1, 2, 3], &[3], &[(2, 2)], MirrorMode::Reflect, &mut o);
        assert_eq!(o, [3, 2, 1, 2, 3, 2, 1]);
        mirror_pad(&[1, 2, 3], &[3], &[(2, 2)], MirrorMode::Symmetric, &mut o);
        assert_eq!(o, [2, 1, 1, 2, 3, 3, 2]);
        // NHWC -> NCHW and a large 2-D transpose: blocked and split across the pool.
        for (s, perm) in [
            (vec![2, 40, 40, 64], vec![0, 3, 1, 2]),
            (vec![700, 300], vec![1, 0]),
            (vec![64, 3, 500], vec![2, 0, 1]),
        ] {
            let n: usize = s.iter().product();
            let x: Vec<f32> = (0..n).map(|v| v as f32).collect();
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            transpose(&x, &s, &perm, &mut a);
            transpose_ref(&x, &s, &perm, &mut b);
            assert_eq!(a, b, "{s:?} {perm:?}");
        }
        let x: Vec<f32> = (0..200 * 200 * 8).map(|v| v as f32).collect();
        let p = [(0, 0), (3, 1), (1, 4), (0, 0)];
        let m = 204 * 205 * 8;
        let (mut a, mut b) = (vec![0.0; m], vec![0.0; m]);
        pad(&x, &[1, 200, 200, 8], &p, -1.0, &mut a);
        pad_ref(&x, &[1, 200, 200, 8], &p, -1.0, &mut b);
        assert_eq!(a, b);
        mirror_pad(&x, &[1, 200, 200, 8], &p, MirrorMode::Reflect, &mut a);
        mirror_pad_ref(&x, &[1, 200, 200, 8], &p, MirrorMode::Reflect, &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn f16_conversion_is_exact() {
        // Every half bit pattern, NaNs compared as NaN (F16C quiets signalling NaNs).
        let src: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let (mut a, mut b) = (vec![0.0; src.len()], vec![0.0; src.len()]);
        f16_to_f32(&src, &mut a);
        f16_to_f32_ref(&src, &mut b);
        for (x, y) in a.iter().zip(&b) {
            assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
        }
    }
}
