//! MAX_POOL_2D and AVERAGE_POOL_2D over NHWC f32, with TFLite's semantics: each window is
//! clipped to the input (padding cells neither take part in the max nor count towards the
//! average's divisor), and the fused activation clamps the result.
//!
//! The average adds in XNNPACK's order (LiteRT's default float path), so results match it
//! bit for bit: the window's cells column by column (column outer, row inner, padding cells
//! as zeros), nine at a time summed as a fixed tree and added to the running sum, which is
//! finally multiplied by the f32 reciprocal of the cell count.
#![forbid(unsafe_code)]


use super::binary::{clamp, par_chunk};
use crate::simd::pool::max_window;
use crate::simd::VecIsa;
use super::Act;
use crate::simd::elementwise::{self as ew, VBin};

/// Geometry of a 2-D pooling over NHWC tensors (`[batch, in_h, in_w, channels]` in,
/// `[batch, out_h, out_w, channels]` out). The window of output `(oy, ox)` starts at input
/// `(oy * stride_h - pad_top, ox * stride_w - pad_left)`, which may lie in the padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeom {
    /// Batch size N.
    pub batch: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Channels C (the same in and out).
    pub channels: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Window height.
    pub k_h: usize,
    /// Window width.
    pub k_w: usize,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Padding rows above the input.
    pub pad_top: usize,
    /// Padding columns left of the input.
    pub pad_left: usize,
}

impl PoolGeom {
    /// The geometry from the input's and the output's NHWC dims, the window, the strides and
    /// the padding before (top, left).
    pub fn nhwc(input: &[usize], output: &[usize], k: [usize; 2], stride: [usize; 2], pad: [usize; 2]) -> PoolGeom {
        PoolGeom {
            batch: input[0],
            in_h: input[1],
            in_w: input[2],
            channels: input[3],
            out_h: output[1],
            out_w: output[2],
            k_h: k[0],
            k_w: k[1],
            stride_h: stride[0],
            stride_w: stride[1],
            pad_top: pad[0],
            pad_left: pad[1],
        }
    }
}

impl PoolGeom {
    /// The in-bounds input range `[start, end)` of output position `o` along one axis.
    fn clip(o: usize, stride: usize, pad: usize, k: usize, len: usize) -> (usize, usize) {
        let origin = (o * stride) as isize - pad as isize;
        let start = origin.max(0) as usize;
        let end = (origin + k as isize).clamp(0, len as isize) as usize;
        (start.min(end), end)
    }

    fn rows(&self, oy: usize) -> (usize, usize) {
        Self::clip(oy, self.stride_h, self.pad_top, self.k_h, self.in_h)
    }

    fn cols(&self, ox: usize) -> (usize, usize) {
        Self::clip(ox, self.stride_w, self.pad_left, self.k_w, self.in_w)
    }

    fn check(&self, input: &[f32], output: &[f32]) {
        let c = self.channels;
        assert_eq!(
            input.len(),
            self.batch * self.in_h * self.in_w * c,
            "pool: input length vs geometry"
        );
        assert_eq!(
            output.len(),
            self.batch * self.out_h * self.out_w * c,
            "pool: output length vs geometry"
        );
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Max,
    Avg,
}

/// One output row `(b, oy)`: `out` holds its `out_w * channels` values; maxima and sums with
/// AVX-512 or AVX2 where `wide` is given.
#[allow(clippy::too_many_arguments)]
fn pool_row(
    kind: Kind,
    g: &PoolGeom,
    input: &[f32],
    b: usize,
    oy: usize,
    out: &mut [f32],
    act: Act,
    wide: Option<VecIsa>,
) {
    let c = g.channels;
    let (y0, y1) = g.rows(oy);
    let image = &input[b * g.in_h * g.in_w * c..(b + 1) * g.in_h * g.in_w * c];
    for (ox, px) in out.chunks_mut(c).enumerate() {
        if kind == Kind::Avg {
            avg_pixel(g, image, oy, ox, px, act, wide);
            continue;
        }
        let (x0, x1) = g.cols(ox);
        match wide {
            Some(t) => max_window(t, image, g.in_w, (y0, y1), (x0, x1), px),
            None => {
                // TFLite starts the max from the lowest float, so an all -inf window gives
                // f32::MIN.
                px.fill(f32::MIN);
                for y in y0..y1 {
                    for x in x0..x1 {
                        let src = &image[(y * g.in_w + x) * c..(y * g.in_w + x + 1) * c];
                        // Few channels: an inline loop (it vectorizes) costs less than the
                        // dispatch of the SIMD row helper per window cell.
                        if c < 64 || !ew::accumulate(VBin::Max, px, src) {
                            for (a, &v) in px.iter_mut().zip(src) {
                                *a = if v > *a { v } else { *a };
                            }
                        }
                    }
                }
            }
        }
        if act != Act::NONE && !ew::bin_vs_inplace(VBin::Mul, px, 1.0, act.min, act.max) {
            for a in px.iter_mut() {
                *a = clamp(*a, act);
            }
        }
    }
}

/// Channels summed at a time by [`avg_pixel`] (stack buffers).
const AVG_BLOCK: usize = 64;

/// How far ahead (in window cells) [`avg_pixel`] prefetches a window inside the image.
const PREFETCH_CELLS: usize = 36;

/// What a padding cell contributes to an average.
static AVG_ZEROS: [f32; AVG_BLOCK] = [0.0; AVG_BLOCK];

/// Cell `t` of output `(oy, ox)`'s window in XNNPACK's order (column outer, row inner) as
/// the offset of its pixel in the image, or `None` in the padding.
fn avg_cell(g: &PoolGeom, oy: usize, ox: usize, t: usize) -> Option<usize> {
    avg_cell_at(g, oy, ox, t / g.k_h, t % g.k_h)
}

/// The window cell after `(kx, ky)` in XNNPACK's order (column outer, row inner), without
/// dividing.
#[inline]
fn next_cell((kx, ky): &mut (usize, usize), k_h: usize) {
    *ky += 1;
    if *ky == k_h {
        *ky = 0;
        *kx += 1;
    }
}

/// [`avg_cell`] of the cell at window column `kx`, row `ky`.
#[inline]
fn avg_cell_at(g: &PoolGeom, oy: usize, ox: usize, kx: usize, ky: usize) -> Option<usize> {
    let y = (oy * g.stride_h + ky).checked_sub(g.pad_top).filter(|&y| y < g.in_h)?;
    let x = (ox * g.stride_w + kx).checked_sub(g.pad_left).filter(|&x| x < g.in_w)?;
    Some((y * g.in_w + x) * g.channels)
}

/// XNNPACK's sum of nine cells: `((v2 + v3) + (v4 + v5)) + (((v0 + v1) + v8) + (v6 + v7))`.
#[inline(always)]
fn tree9(v: [f32; 9]) -> f32 {
    ((v[2] + v[3]) + (v[4] + v[5])) + (((v[0] + v[1]) + v[8]) + (v[6] + v[7]))
}

/// The average of output `(oy, ox)` of `image` (one batch) into `px` (its channels), in the
/// order of the module doc, then the activation clamp; each nine-cell step with AVX-512 or
/// AVX2 where `wide` is given.
fn avg_pixel(g: &PoolGeom, image: &[f32], oy: usize, ox: usize, px: &mut [f32], act: Act, wide: Option<VecIsa>) {
    let ((y0, y1), (x0, x1)) = (g.rows(oy), g.cols(ox));
    // An empty window (padding only) yields clamp(0) (TFLite fails instead).
    let scale = 1.0 / ((y1 - y0) * (x1 - x0)).max(1) as f32;
    let taps = g.k_h * g.k_w;
    // Steps of nine cells that are all padding add exactly +0.0 to each sum, which leaves it
    // unchanged: a window much larger than the image visits only the steps that reach it (the
    // order of the cells summed stays XNNPACK's), so its cost follows the image, not the window.
    let valid = (y1 - y0) * (x1 - x0);
    let steps = if taps > 2 * valid + 18 { Some(reaching_steps(g, oy, ox, (y0, y1), (x0, x1))) } else { None };
    for c0 in (0..px.len()).step_by(AVG_BLOCK) {
        let n = AVG_BLOCK.min(px.len() - c0);
        let mut acc = [0.0f32; AVG_BLOCK];
        let add = |v: [&[f32]; 9], acc: &mut [f32; AVG_BLOCK]| {
            let acc = &mut acc[..n];
            if let Some(t) = wide {
                return crate::simd::pool::avg_step(t, v, acc);
            }
            for ch in 0..n {
                acc[ch] += tree9(std::array::from_fn(|i| v[i][ch]));
            }
        };
        let cell = |c: Option<usize>| match c {
            Some(o) => &image[o + c0..o + c0 + n],
            None => &AVG_ZEROS[..n],
        };
        if let Some(steps) = &steps {
            for &s in steps {
                let v = std::array::from_fn(|i| {
                    let t = 9 * s + i;
                    cell((t < taps).then(|| avg_cell_at(g, oy, ox, t / g.k_h, t % g.k_h)).flatten())
                });
                add(v, &mut acc);
            }
        } else {
            let mut t = 0;
            // Cell t's window position (column, row).
            let mut cell_t = (0, 0);
            // A window wholly inside the image (a global pool's) needs no bounds per cell.
            let inside = g.k_h > 0 && y1 - y0 == g.k_h && x1 - x0 == g.k_w;
            let origin = (y0 * g.in_w + x0) * g.channels;
            let at = |kx: usize, ky: usize| if inside { Some(origin + (ky * g.in_w + kx) * g.channels) } else { avg_cell_at(g, oy, ox, kx, ky) };
            // Cells are read down the window's columns, a row of the image apart: too far apart
            // for the hardware to fetch ahead (a global pool over 128×128×16 waited on every
            // line), so the window's cells PREFETCH_CELLS ahead are asked for in advance.
            let mut ahead = (PREFETCH_CELLS / g.k_h.max(1), PREFETCH_CELLS % g.k_h.max(1));
            loop {
                if inside {
                    for _ in 0..9 {
                        if ahead.0 < g.k_w {
                            let o = origin + (ahead.1 * g.in_w + ahead.0) * g.channels + c0;
                            (0..n).step_by(16).for_each(|k| crate::simd::prefetch(&image[o + k..]));
                        }
                        next_cell(&mut ahead, g.k_h);
                    }
                }
                // The step's nine cells read in place (padding and cells past the window read
                // zeros), so the channel loop vectorizes without copying or clearing.
                let v = std::array::from_fn(|i| {
                    let c = (t + i < taps).then(|| at(cell_t.0, cell_t.1)).flatten();
                    next_cell(&mut cell_t, g.k_h);
                    cell(c)
                });
                add(v, &mut acc);
                t += 9;
                if t >= taps {
                    break;
                }
            }
        }
        for (dst, &a) in px[c0..c0 + n].iter_mut().zip(&acc[..n]) {
            *dst = clamp(a * scale, act);
        }
    }
}

/// The indices, in order, of the nine-cell steps of output `(oy, ox)`'s window (cells numbered
/// column outer, row inner) that hold at least one cell of the image, whose rows and columns
/// are `ys` and `xs`.
fn reaching_steps(g: &PoolGeom, oy: usize, ox: usize, ys: (usize, usize), xs: (usize, usize)) -> Vec<usize> {
    // Window rows and columns of the image's cells.
    let (ky0, ky1) = (ys.0 + g.pad_top - oy * g.stride_h, ys.1 + g.pad_top - oy * g.stride_h);
    let (kx0, kx1) = (xs.0 + g.pad_left - ox * g.stride_w, xs.1 + g.pad_left - ox * g.stride_w);
    let mut steps = Vec::new();
    if ky0 >= ky1 {
        return steps;
    }
    for kx in kx0..kx1 {
        let (first, last) = ((kx * g.k_h + ky0) / 9, (kx * g.k_h + ky1 - 1) / 9);
        let from = steps.last().map_or(first, |&s: &usize| first.max(s + 1));
        steps.extend(from..=last);
    }
    steps
}

fn pool(kind: Kind, g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    g.check(input, output);
    let row_len = g.out_w * g.channels;
    if row_len == 0 {
        return;
    }
    let rows = g.batch * g.out_h;
    let wide = VecIsa::best();
    let run = |r0: usize, out: &mut [f32]| {
        for (i, row) in out.chunks_mut(row_len).enumerate() {
            let r = r0 + i;
            pool_row(kind, g, input, r / g.out_h, r % g.out_h, row, act, wide);
        }
    };
    match par_chunk(rows, row_len.saturating_mul(g.k_h).saturating_mul(g.k_w)) {
        None => run(0, output),
        Some(c) => nnrt_threads::par_chunks_mut(output, c * row_len, |i, o| run(i * c, o)),
    }
}

/// MAX_POOL_2D: the maximum over the in-bounds cells of each window (NaN inputs are skipped, as
/// `std::max(acc, x)` skips them), then the activation clamp. Vectorized over channels; rows
/// are split across the current run's kernel pool when large.
///
/// # Panics
/// When a slice length does not match the geometry.
pub fn max_pool(g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    pool(Kind::Max, g, input, output, act)
}

/// AVERAGE_POOL_2D: the sum over the in-bounds cells of each window times the reciprocal of
/// their count (in XNNPACK's order, see the module doc), then the activation clamp. Blocks of
/// channels at a time; bit-identical to [`avg_pool_ref`].
///
/// # Panics
/// When a slice length does not match the geometry.
pub fn avg_pool(g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    pool(Kind::Avg, g, input, output, act)
}

fn pool_ref(kind: Kind, g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    g.check(input, output);
    let c = g.channels;
    if kind == Kind::Avg {
        return avg_pool_ref_xnn(g, input, output, act);
    }
    for b in 0..g.batch {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                let (y0, y1) = g.rows(oy);
                let (x0, x1) = g.cols(ox);
                for ch in 0..c {
                    let mut acc = if kind == Kind::Max { f32::MIN } else { 0.0 };
                    for y in y0..y1 {
                        for x in x0..x1 {
                            let v = input[((b * g.in_h + y) * g.in_w + x) * c + ch];
                            acc = match kind {
                                Kind::Max if v > acc => v,
                                Kind::Max => acc,
                                Kind::Avg => acc + v,
                            };
                        }
                    }
                    if kind == Kind::Avg {
                        acc /= ((y1 - y0) * (x1 - x0)).max(1) as f32;
                    }
                    output[((b * g.out_h + oy) * g.out_w + ox) * c + ch] = clamp(acc, act);
                }
            }
        }
    }
}

/// One output value at a time: the window's cells in XNNPACK's order (module doc), nine per
/// step summed by [`tree9`].
fn avg_pool_ref_xnn(g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    let c = g.channels;
    let image_len = g.in_h * g.in_w * c;
    for b in 0..g.batch {
        let image = &input[b * image_len..(b + 1) * image_len];
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                let ((y0, y1), (x0, x1)) = (g.rows(oy), g.cols(ox));
                let count = ((y1 - y0) * (x1 - x0)).max(1) as f32;
                for ch in 0..c {
                    let cell = |t: usize| if t < g.k_h * g.k_w { avg_cell(g, oy, ox, t).map_or(0.0, |o| image[o + ch]) } else { 0.0 };
                    let mut acc = 0.0f32;
                    let mut t = 0;
                    loop {
                        acc += tree9(std::array::from_fn(|i| cell(t + i)));
                        t += 9;
                        if t >= g.k_h * g.k_w {
                            break;
                        }
                    }
                    output[((b * g.out_h + oy) * g.out_w + ox) * c + ch] = clamp(acc * (1.0 / count), act);
                }
            }
        }
    }
}

/// Reference twin of [`max_pool`]: one output value at a time.
///
/// # Panics
/// As [`max_pool`].
pub fn max_pool_ref(g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    pool_ref(Kind::Max, g, input, output, act)
}

/// Reference twin of [`avg_pool`]: one output value at a time.
///
/// # Panics
/// As [`avg_pool`].
pub fn avg_pool_ref(g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    pool_ref(Kind::Avg, g, input, output, act)
}

/// L2 pooling (TFLite L2_POOL_2D): `sqrt(sum of squares / cells)` over the in-bounds cells of
/// each window, then the activation clamp. One plain loop per output: the op is rare, and its
/// result is the reference order itself.
///
/// # Panics
/// If the slice lengths do not match the geometry (callers check shapes first).
pub fn l2_pool(g: &PoolGeom, input: &[f32], output: &mut [f32], act: Act) {
    g.check(input, output);
    let c = g.channels;
    let mut o = 0;
    for n in 0..g.batch {
        for oy in 0..g.out_h {
            let (y0, y1) = g.rows(oy);
            for ox in 0..g.out_w {
                let (x0, x1) = g.cols(ox);
                let cells = ((y1 - y0) * (x1 - x0)) as f32;
                for ch in 0..c {
                    let mut sum = 0.0f32;
                    for y in y0..y1 {
                        for x in x0..x1 {
                            let v = input[((n * g.in_h + y) * g.in_w + x) * c + ch];
                            sum += v * v;
                        }
                    }
                    output[o] = act.apply((sum / cells).sqrt());
                    o += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn geom() -> impl Strategy<Value = PoolGeom> {
        (
            1usize..3,
            1usize..10,
            1usize..10,
            1usize..40,
            1usize..4,
            1usize..4,
            1usize..4,
            1usize..4,
        )
            .prop_flat_map(
                |(batch, in_h, in_w, channels, k_h, k_w, stride_h, stride_w)| {
                    (
                        Just((batch, in_h, in_w, channels, k_h, k_w, stride_h, stride_w)),
                        0..k_h,
                        0..k_h,
                        0..k_w,
                        0..k_w,
                    )
                },
            )
            .prop_map(
                |((batch, in_h, in_w, channels, k_h, k_w, stride_h, stride_w), pt, pb, pl, pr)| {
                    // Padding below the kernel size keeps every window partly inside the input.
                    let out = |len: usize, k: usize, s: usize, p: usize| {
                        (len + p).saturating_sub(k) / s + 1
                    };
                    PoolGeom {
                        batch,
                        in_h,
                        in_w,
                        channels,
                        out_h: out(in_h, k_h, stride_h, pt + pb),
                        out_w: out(in_w, k_w, stride_w, pl + pr),
                        k_h,
                        k_w,
                        stride_h,
                        stride_w,
                        pad_top: pt,
                        pad_left: pl,
                    }
                },
            )
    }

    fn data(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 100.0 - 10.0)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

        // Max is exact; the average adds the same values in the same order and scales once,
        // so both must be bit-identical to the reference.
        #[test]
        fn matches_ref(g in geom(), seed in any::<u32>(), act_i in 0usize..3) {
            let act = [Act::NONE, Act::RELU, Act::RELU6][act_i];
            let input = data(g.batch * g.in_h * g.in_w * g.channels, seed);
            let n = g.batch * g.out_h * g.out_w * g.channels;
            let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
            max_pool(&g, &input, &mut o1, act);
            max_pool_ref(&g, &input, &mut o2, act);
            prop_assert_eq!(&o1, &o2);
            avg_pool(&g, &input, &mut o1, act);
            avg_pool_ref(&g, &input, &mut o2, act);
            prop_assert_eq!(&o1, &o2);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 100, failure_persistence: None, ..ProptestConfig::default() })]

        // Windows far larger than the image (mostly padding) visit only the steps that reach
        // it: still bit-identical to the reference, which walks every cell.
        #[test]
        fn huge_windows_match_ref(in_h in 1usize..6, in_w in 1usize..6, channels in 1usize..70, k_h in 6usize..40, k_w in 6usize..40, pt in 0usize..40, pl in 0usize..40, seed in any::<u32>()) {
            let (pt, pl) = (pt % k_h, pl % k_w);
            let g = PoolGeom { batch: 1, in_h, in_w, channels, out_h: 2, out_w: 3, k_h, k_w, stride_h: 1, stride_w: 2, pad_top: pt, pad_left: pl };
            let input = data(in_h * in_w * channels, seed);
            let n = g.out_h * g.out_w * channels;
            let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
            avg_pool(&g, &input, &mut o1, Act::NONE);
            avg_pool_ref(&g, &input, &mut o2, Act::NONE);
            prop_assert_eq!(&o1, &o2);
        }
    }

    #[test]
    fn clipped_windows_and_threads() {
        // 3x3 SAME pooling on a ramp: the corner window holds 4 cells, not 9.
        let g = PoolGeom {
            batch: 2,
            in_h: 64,
            in_w: 64,
            channels: 24,
            out_h: 64,
            out_w: 64,
            k_h: 3,
            k_w: 3,
            stride_h: 1,
            stride_w: 1,
            pad_top: 1,
            pad_left: 1,
        };
        let input = data(2 * 64 * 64 * 24, 5);
        let n = input.len();
        let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
        avg_pool(&g, &input, &mut o1, Act::NONE);
        avg_pool_ref(&g, &input, &mut o2, Act::NONE);
        assert_eq!(o1, o2);
        // Column by column with the padding cells as zeros, summed as XNNPACK's nine-cell tree.
        let corner = ((input[0] + input[64 * 24]) + (input[65 * 24] + input[24])) * 0.25;
        assert_eq!(o1[0], corner);
        max_pool(&g, &input, &mut o1, Act::RELU);
        max_pool_ref(&g, &input, &mut o2, Act::RELU);
        assert_eq!(o1, o2);
    }

    /// A window of zero rows (the graph refuses it; the kernel is public) averages nothing:
    /// clamp(0), not a division by zero or a read past the image.
    #[test]
    fn an_empty_window_averages_to_zero() {
        let g = PoolGeom { batch: 1, in_h: 3, in_w: 50, channels: 2, out_h: 3, out_w: 1, k_h: 0, k_w: 50, stride_h: 1, stride_w: 1, pad_top: 0, pad_left: 0 };
        let input = data(3 * 50 * 2, 9);
        let mut out = [f32::NAN; 6];
        avg_pool(&g, &input, &mut out, Act::NONE);
        assert_eq!(out, [0.0; 6]);
    }

    #[test]
    fn l2_pool_counts_only_cells_inside() {
        // 1x2x2x1 input, 2x2 window, stride 1, SAME: the last row/column see fewer cells.
        let g = PoolGeom { batch: 1, in_h: 2, in_w: 2, channels: 1, out_h: 2, out_w: 2, k_h: 2, k_w: 2, stride_h: 1, stride_w: 1, pad_top: 0, pad_left: 0 };
        let input = [3.0f32, 4.0, 0.0, 0.0];
        let mut out = [0.0f32; 4];
        l2_pool(&g, &input, &mut out, Act::NONE);
        assert_eq!(out, [2.5, 8.0f32.sqrt(), 0.0, 0.0]);
    }
}
