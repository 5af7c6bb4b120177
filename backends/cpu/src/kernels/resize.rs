//! RESIZE_BILINEAR (f32) and RESIZE_NEAREST_NEIGHBOR (any element type) over NHWC, with
//! TFLite's coordinate transforms: scale `in / out`, or `(in - 1) / (out - 1)` with
//! `align_corners`; half-pixel centres sample at `(x + 0.5) · scale - 0.5` (bilinear) or
//! `(x + 0.5) · scale` (nearest).
#![forbid(unsafe_code)]

/// Image geometry of a resize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResizeGeom {
    /// Batch.
    pub batch: usize,
    /// Input height, width.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Channels.
    pub depth: usize,
}

/// TFLite's scale for one axis, computed in f32 as it does.
fn scale(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// The source coordinate and the two neighbours of output index `v` (TFLite's
/// `ComputeInterpolationValues`): the lower is clamped at 0 and the upper at `size - 1`, but
/// the coordinate itself is not, so weights may leave [0, 1] at a half-pixel border.
fn bilinear_coord(v: usize, scale: f32, half_pixel: bool, size: usize) -> (f32, usize, usize) {
    let s = if half_pixel { (v as f32 + 0.5) * scale - 0.5 } else { v as f32 * scale };
    let lo = (s.floor() as i64).max(0) as usize;
    let hi = (s.ceil() as i64).min(size as i64 - 1).max(0) as usize;
    (s, lo, hi)
}

/// RESIZE_BILINEAR with TFLite's sample positions, interpolating as XNNPACK does (LiteRT's
/// default float path): along x first, `top = tl + (tr - tl)·dx` and `bottom` alike, then
/// `top + (bottom - top)·dy`, each a separate multiply and add. TFLite's reference kernel
/// sums the four corners times their weights instead, which differs in the last bits.
///
/// # Panics
/// When the slice lengths do not match `g`.
pub fn resize_bilinear(g: &ResizeGeom, align_corners: bool, half_pixel: bool, input: &[f32], out: &mut [f32]) {
    assert_eq!(input.len(), g.batch * g.in_h * g.in_w * g.depth, "resize_bilinear: input length");
    assert_eq!(out.len(), g.batch * g.out_h * g.out_w * g.depth, "resize_bilinear: output length");
    if out.is_empty() || input.is_empty() {
        return;
    }
    let (sh, sw) = (scale(g.in_h, g.out_h, align_corners), scale(g.in_w, g.out_w, align_corners));
    let xs: Vec<(f32, usize, usize)> = (0..g.out_w).map(|x| bilinear_coord(x, sw, half_pixel, g.in_w)).collect();
    let d = g.depth;
    let px = |b: usize, y: usize, x: usize| &input[((b * g.in_h + y) * g.in_w + x) * d..][..d];
    let wide = crate::simd::avx512();
    // One output row; the channel loop runs over slices so it vectorizes (same arithmetic).
    let one_row = |r: usize, orow: &mut [f32]| {
        let (b, y) = (r / g.out_h, r % g.out_h);
        let (iy, y0, y1) = bilinear_coord(y, sh, half_pixel, g.in_h);
        let dy = iy - y0 as f32;
        if let Some(t) = wide {
            let row = |y: usize| &input[(b * g.in_h + y) * g.in_w * d..][..g.in_w * d];
            return crate::simd::resize::bilinear_row(t, row(y0), row(y1), &xs, dy, d, orow);
        }
        for (&(ix, x0, x1), o) in xs.iter().zip(orow.chunks_exact_mut(d)) {
            let dx = ix - x0 as f32;
            let (tl, tr, bl, br) = (px(b, y0, x0), px(b, y0, x1), px(b, y1, x0), px(b, y1, x1));
            for ((((o, &tl), &tr), &bl), &br) in o.iter_mut().zip(tl).zip(tr).zip(bl).zip(br) {
                let top = tl + (tr - tl) * dx;
                let bottom = bl + (br - bl) * dx;
                *o = top + (bottom - top) * dy;
            }
        }
    };
    let row_len = g.out_w * d;
    let rows = g.batch * g.out_h;
    match super::binary::par_chunk(rows, row_len * 4) {
        Some(c) => nnrt_threads::par_rows_mut(out, row_len, c, one_row),
        None => out.chunks_exact_mut(row_len).enumerate().for_each(|(r, o)| one_row(r, o)),
    }
}

/// TFLite's `GetNearestNeighbor`: floor (or round half away from zero with `align_corners`) of
/// `(v + offset) · scale`, clamped to the input.
fn nearest(v: usize, input: usize, output: usize, align_corners: bool, half_pixel: bool) -> usize {
    let s = scale(input, output, align_corners);
    let offset = if half_pixel { 0.5 } else { 0.0 };
    let p = (v as f32 + offset) * s;
    let i = if align_corners { p.round() as i64 } else { p.floor() as i64 };
    i.min(input as i64 - 1).max(0) as usize
}

/// RESIZE_NEAREST_NEIGHBOR: copies whole pixels (`depth` elements).
///
/// # Panics
/// When the slice lengths do not match `g`.
pub fn resize_nearest<T: Copy>(g: &ResizeGeom, align_corners: bool, half_pixel: bool, input: &[T], out: &mut [T]) {
    assert_eq!(input.len(), g.batch * g.in_h * g.in_w * g.depth, "resize_nearest: input length");
    assert_eq!(out.len(), g.batch * g.out_h * g.out_w * g.depth, "resize_nearest: output length");
    if out.is_empty() || input.is_empty() {
        return;
    }
    let d = g.depth;
    let xs: Vec<usize> = (0..g.out_w).map(|x| nearest(x, g.in_w, g.out_w, align_corners, half_pixel)).collect();
    let mut o = 0;
    for b in 0..g.batch {
        for y in 0..g.out_h {
            let iy = nearest(y, g.in_h, g.out_h, align_corners, half_pixel);
            for &ix in &xs {
                let src = ((b * g.in_h + iy) * g.in_w + ix) * d;
                out[o..o + d].copy_from_slice(&input[src..src + d]);
                o += d;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(in_h: usize, in_w: usize, out_h: usize, out_w: usize) -> ResizeGeom {
        ResizeGeom { batch: 1, in_h, in_w, out_h, out_w, depth: 1 }
    }

    #[test]
    fn bilinear_matches_tflite_examples() {
        // TFLite's resize_bilinear_test: 1x2 [3, 6] -> 1x3 gives [3, 5, 6].
        let mut o = [0.0; 3];
        resize_bilinear(&g(1, 2, 1, 3), false, false, &[3.0, 6.0], &mut o);
        assert_eq!(o, [3.0, 5.0, 6.0]);
        // 2x2 -> 3x3 with align_corners: corners kept, centre is the mean.
        let mut o = [0.0; 9];
        resize_bilinear(&g(2, 2, 3, 3), true, false, &[3.0, 6.0, 9.0, 12.0], &mut o);
        assert_eq!(o, [3.0, 4.5, 6.0, 6.0, 7.5, 9.0, 9.0, 10.5, 12.0]);
        // half-pixel 2x2 -> 4x4: first row samples at -0.25 -> [3, 3.75, 5.25, 6].
        let mut o = [0.0; 16];
        resize_bilinear(&g(2, 2, 4, 4), false, true, &[3.0, 6.0, 9.0, 12.0], &mut o);
        assert_eq!(&o[..4], &[3.0, 3.75, 5.25, 6.0]);
    }

    #[test]
    fn nearest_follows_the_rounding_modes() {
        let x = [1, 2, 3, 4];
        let mut o = [0; 6];
        resize_nearest(&g(1, 4, 1, 6), false, false, &x, &mut o);
        assert_eq!(o, [1, 1, 2, 3, 3, 4]);
        resize_nearest(&g(1, 4, 1, 6), true, false, &x, &mut o);
        assert_eq!(o, [1, 2, 2, 3, 3, 4]);
        resize_nearest(&g(1, 4, 1, 6), false, true, &x, &mut o);
        assert_eq!(o, [1, 2, 2, 3, 4, 4]);
    }
}

/// TOSA RESIZE's sampling along one axis for output index `o`: the two input indices (clamped
/// to the image) and the fraction `r` (in units of 1/`n`) toward the second.
#[inline]
fn tosa_axis(o: usize, n: i32, d: i32, offset: i32, size: usize) -> (usize, usize, i64) {
    let pos = o as i64 * i64::from(d) + i64::from(offset);
    let i = pos.div_euclid(i64::from(n));
    let r = pos - i * i64::from(n);
    let last = size as i64 - 1;
    (i.clamp(0, last) as usize, (i + 1).clamp(0, last) as usize, r)
}

/// A value TOSA RESIZE reads and writes: float32 (interpolated in float32) or an integer
/// (interpolated in 64 bits, unnormalized: the sum is scaled by `scale_y_n * scale_x_n`).
pub trait ResizeValue: Copy {
    /// The bilinear result type.
    type Out: Copy;
    fn bilinear(v: [Self; 4], dy: i64, dx: i64, n: [i32; 2]) -> Self::Out;
}

impl ResizeValue for f32 {
    type Out = f32;
    fn bilinear([v00, v01, v10, v11]: [f32; 4], dy: i64, dx: i64, [ny, nx]: [i32; 2]) -> f32 {
        let (dy, dx) = (dy as f32 / ny as f32, dx as f32 / nx as f32);
        let mut acc = v00 * (1.0 - dy) * (1.0 - dx);
        acc += v01 * (1.0 - dy) * dx;
        acc += v10 * dy * (1.0 - dx);
        acc += v11 * dy * dx;
        acc
    }
}

macro_rules! int_resize_value {
    ($t:ty, $out:ty) => {
        impl ResizeValue for $t {
            type Out = $out;
            fn bilinear([v00, v01, v10, v11]: [$t; 4], dy: i64, dx: i64, [ny, nx]: [i32; 2]) -> $out {
                let (uy, ux) = (i64::from(ny), i64::from(nx));
                let acc = i64::from(v00) * (uy - dy) * (ux - dx) + i64::from(v01) * (uy - dy) * dx + i64::from(v10) * dy * (ux - dx) + i64::from(v11) * dy * dx;
                acc as $out
            }
        }
    };
}
int_resize_value!(i8, i32);
int_resize_value!(i16, i64);

/// TOSA RESIZE over NHWC `x` (`dims` `[n, ih, iw, c]`) into `out` (`[n, oh, ow, c]`):
/// `scale` is `[y_n, y_d, x_n, x_d]`. Nearest picks the second index when the fraction is at
/// least one half; bilinear writes [`ResizeValue::bilinear`] into `bil`.
#[allow(clippy::too_many_arguments)]
pub fn resize_scaled<T: ResizeValue>(x: &[T], dims: [usize; 4], out_hw: [usize; 2], scale: [i32; 4], offset: [i32; 2], nearest: Option<&mut [T]>, bilinear: Option<&mut [T::Out]>) {
    let [n, ih, iw, c] = dims;
    let [oh, ow] = out_hw;
    let [yn, yd, xn, xd] = scale;
    let at = |b: usize, y: usize, xx: usize, ch: usize| x[((b * ih + y) * iw + xx) * c + ch];
    let mut k = 0;
    let (mut nearest, mut bilinear) = (nearest, bilinear);
    for b in 0..n {
        for oy in 0..oh {
            let (y0, y1, dy) = tosa_axis(oy, yn, yd, offset[0], ih);
            for ox in 0..ow {
                let (x0, x1, dx) = tosa_axis(ox, xn, xd, offset[1], iw);
                for ch in 0..c {
                    if let Some(o) = nearest.as_deref_mut() {
                        let y = if 2 * dy >= i64::from(yn) { y1 } else { y0 };
                        let xx = if 2 * dx >= i64::from(xn) { x1 } else { x0 };
                        o[k] = at(b, y, xx, ch);
                    } else if let Some(o) = bilinear.as_deref_mut() {
                        o[k] = T::bilinear([at(b, y0, x0, ch), at(b, y0, x1, ch), at(b, y1, x0, ch), at(b, y1, x1, ch)], dy, dx, [yn, xn]);
                    }
                    k += 1;
                }
            }
        }
    }
}
