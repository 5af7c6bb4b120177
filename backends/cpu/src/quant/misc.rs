//! The smaller quantized ops: QUANTIZE (float → int, and requantize int → int), DEQUANTIZE (per
//! tensor and per channel), average and max pooling, MEAN, concatenation with rescaling,
//! RESIZE_BILINEAR and ARG_MAX — each as TFLite's reference computes it.

use super::fixedpoint::{mbqm, quantize_multiplier};
use crate::kernels::binary::{map_chunks, par_chunk};
use crate::simd::quantize::QuantizeF32;
use crate::simd::lut::lut8;
use super::{QInt, QParams};

/// TFLite's `AffineQuantize`: `round(x / scale) + zero_point` in float, clamped.
/// Split across the kernel pool; int8 / uint8 / int16 outputs take the vector path of
/// `simd::quantize` (a multiply by the reciprocal, proven exact per vector, the reference where
/// it cannot be), other types the reference loop compiled for AVX-512 (`map_chunks`).
pub fn quantize<TO: QInt>(input: &[f32], out_q: QParams, out: &mut [TO]) {
    let Some(v) = QuantizeF32::new::<TO>(out_q) else {
        return map_chunks(input, out, 2, |x, o| quantize_seq(x, out_q, o));
    };
    let n = input.len().min(out.len());
    let (input, out) = (&input[..n], &mut out[..n]);
    match par_chunk(n, 1) {
        None => v.run(input, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c, |i, o| v.run(&input[i * c..i * c + o.len()], o)),
    }
}

/// [`quantize`] in one loop: the reference.
#[inline(always)]
pub fn quantize_seq<TO: QInt>(input: &[f32], out_q: QParams, out: &mut [TO]) {
    let scale = out_q.scale; // `static_cast<float>(double(scale))`: the same float
    for (o, &x) in out.iter_mut().zip(input) {
        let v = round_to_i32((x / scale).round()).wrapping_add(out_q.zero_point);
        *o = TO::sat(v);
    }
}

/// `r as i32` (saturating, NaN to 0) for a whole number `r`, written so that it vectorizes
/// (the compiler turns a float-to-int `as` into one scalar conversion per lane): `r + 1.5·2^52`
/// in double keeps `r`'s two's complement in the low 32 bits of the mantissa for |r| < 2^31.
#[inline(always)]
pub(crate) fn round_to_i32(r: f32) -> i32 {
    let i = ((r as f64 + 6_755_399_441_055_744.0).to_bits() as i64) as i32;
    if r >= 2_147_483_648.0 {
        i32::MAX
    } else if r < -2_147_483_648.0 {
        i32::MIN
    } else if r.is_nan() {
        0
    } else {
        i
    }
}

/// ExecuTorch's `quantize_per_tensor` and XNNPACK's f32 → qs8/qu8 convert: `zero_point +
/// rint(x * (1 / scale))`, the reciprocal in float, rounding half to even, clamped.
pub fn quantize_reciprocal<TO: QInt>(input: &[f32], out_q: QParams, out: &mut [TO]) {
    let inv = 1.0f32 / out_q.scale;
    let zp = out_q.zero_point as f32;
    for (o, &x) in out.iter_mut().zip(input) {
        let v = (zp + (x * inv).round_ties_even()).clamp(-2_147_483_520.0, 2_147_483_520.0);
        *o = TO::sat(v as i32);
    }
}

/// TFLite's `PerChannelQuantize`: `round(x / scale[c]) + zero_point[c]` along `axis`.
pub fn quantize_per_channel<TO: QInt>(input: &[f32], dims: &[usize], axis: usize, scales: &[f32], zps: &[i64], out: &mut [TO]) {
    let inner: usize = dims[axis + 1..].iter().product();
    let n = dims[axis].max(1);
    for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
        let c = (i / inner.max(1)) % n;
        *o = TO::sat(((x / scales[c]).round() as i32).wrapping_add(zps[c] as i32));
    }
}

/// TFLite's `Requantize` between integer types.
#[derive(Clone, Copy, Debug)]
pub struct Requantize {
    multiplier: i32,
    shift: i32,
    in_zp: i32,
    out_zp: i32,
    /// The result (before saturation) of every 8-bit input `x` at `x + 128`, int8 and uint8
    /// alike: 8-bit inputs look it up instead of multiplying.
    table: [i32; 384],
}

impl Requantize {
    /// `input.scale / output.scale` as a Q31 multiplier.
    pub fn new(input: QParams, output: QParams) -> Requantize {
        let (multiplier, shift) = quantize_multiplier(input.scale as f64 / output.scale as f64);
        let (in_zp, out_zp) = (input.zero_point, output.zero_point);
        let table = std::array::from_fn(|i| mbqm(i as i32 - 128 - in_zp, multiplier, shift).wrapping_add(out_zp));
        Requantize { multiplier, shift, in_zp, out_zp, table }
    }

    /// Converts every value (vectorized, split across the kernel pool).
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        if std::mem::size_of::<TI>() == 1 && std::mem::size_of::<TO>() == 1 && out.len() >= 1024 {
            // 8-bit to 8-bit: every output byte is one of 256, looked up 64 at a time.
            let x: &[u8] = bytemuck::cast_slice(input);
            let table: [u8; 256] = std::array::from_fn(|b| {
                let mut o = [TO::default()];
                self.run_seq(&[bytemuck::cast::<u8, TI>(b as u8)], &mut o);
                bytemuck::cast::<TO, u8>(o[0])
            });
            map_chunks(x, bytemuck::cast_slice_mut::<TO, u8>(out), 1, |x, o| lut8(&table, x, o));
            return;
        }
        map_chunks(input, out, 1, |x, o| self.run_seq(x, o));
    }

    /// [`Requantize::run`] in one loop: the reference.
    #[inline(always)]
    pub fn run_seq<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        // Equal scales (multiplier 2^30, shift 1: `mbqm` is then exactly the identity) only move
        // the zero point — the int8 <-> uint8 conversions at the ends of a model, which TFLite
        // special-cases as a xor. The same integers, in a loop that vectorizes.
        if self.multiplier == 1 << 30 && self.shift == 1 {
            let d = self.out_zp.wrapping_sub(self.in_zp);
            for (o, &x) in out.iter_mut().zip(input) {
                *o = TO::sat(x.get().wrapping_add(d));
            }
            return;
        }
        if std::mem::size_of::<TI>() == 1 {
            for (o, &x) in out.iter_mut().zip(input) {
                *o = TO::sat(self.table[(x.get() + 128) as usize]);
            }
            return;
        }
        for (o, &x) in out.iter_mut().zip(input) {
            let v = mbqm(x.get() - self.in_zp, self.multiplier, self.shift).wrapping_add(self.out_zp);
            *o = TO::sat(v);
        }
    }
}

/// TFLite's `Dequantize`: `float(double(scale) * (q - zero_point))`.
/// Vectorized and split across the kernel pool.
pub fn dequantize<TI: QInt>(input: &[TI], q: QParams, out: &mut [f32]) {
    if TI::MAX - TI::MIN <= 65535 && q.zero_point.unsigned_abs() <= 1 << 16 {
        // `q - zero_point` is below 2^24 in magnitude, exact in float, so the float product is the
        // correctly rounded one, as the double product (exact: 24 + 18 bits) rounded to float is.
        map_chunks(input, out, 1, |x, o| {
            for (o, &v) in o.iter_mut().zip(x) {
                *o = q.scale * (v.get() - q.zero_point) as f32;
            }
        });
        return;
    }
    map_chunks(input, out, 1, |x, o| dequantize_seq(x, q, o));
}

/// [`dequantize`] in one loop: the reference.
#[inline(always)]
pub fn dequantize_seq<TI: QInt>(input: &[TI], q: QParams, out: &mut [f32]) {
    let scale = q.scale as f64;
    for (o, &x) in out.iter_mut().zip(input) {
        *o = (scale * (x.get() - q.zero_point) as f64) as f32;
    }
}

/// TFLite's `PerChannelDequantize`: `scale[c] * (q - zero_point[c])` in float along `axis`.
pub fn dequantize_per_channel<TI: QInt>(input: &[TI], dims: &[usize], axis: usize, scales: &[f32], zps: &[i64], out: &mut [f32]) {
    let inner: usize = dims[axis + 1..].iter().product();
    let n = dims[axis];
    for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
        let c = (i / inner.max(1)) % n.max(1);
        *o = scales[c] * (x.get() - zps[c] as i32) as f32;
    }
}

/// Geometry of a 2-D pooling over NHWC.
#[derive(Clone, Copy, Debug)]
pub struct PoolGeom {
    /// Batch, input height, width, channels.
    pub n: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Channels.
    pub c: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Window height, width.
    pub k: [usize; 2],
    /// Strides.
    pub stride: [usize; 2],
    /// Padding before (top, left).
    pub pad: [usize; 2],
}

/// Quantized AVERAGE_POOL_2D (`acc` over in-bounds cells, rounded division by their count:
/// half up for uint8, half away from zero for int8/int16) or MAX_POOL_2D, then the clamp.
pub fn pool<T: QInt>(g: &PoolGeom, average: bool, act: (i32, i32), input: &[T], out: &mut [T]) {
    for b in 0..g.n {
        for oy in 0..g.out_h {
            let y0 = (oy * g.stride[0]) as isize - g.pad[0] as isize;
            let ys = y0.max(0) as usize..((y0 + g.k[0] as isize).min(g.in_h as isize)).max(0) as usize;
            for ox in 0..g.out_w {
                let x0 = (ox * g.stride[1]) as isize - g.pad[1] as isize;
                let xs = x0.max(0) as usize..((x0 + g.k[1] as isize).min(g.in_w as isize)).max(0) as usize;
                for c in 0..g.c {
                    let mut acc: i32 = if average { 0 } else { T::MIN };
                    let mut count = 0i32;
                    for y in ys.clone() {
                        for x in xs.clone() {
                            let v = input[((b * g.in_h + y) * g.in_w + x) * g.c + c].get();
                            if average {
                                acc += v;
                            } else {
                                acc = acc.max(v);
                            }
                            count += 1;
                        }
                    }
                    if average {
                        if count == 0 {
                            continue;
                        }
                        acc = if T::MIN == 0 || acc > 0 {
                            (acc + count / 2) / count
                        } else {
                            (acc - count / 2) / count
                        };
                    }
                    out[((b * g.out_h + oy) * g.out_w + ox) * g.c + c] = T::put(acc.clamp(act.0, act.1));
                }
            }
        }
    }
}

/// Quantized MEAN (TFLite's `QuantizedMeanOrSum` with `compute_sum = false`): the int32 sum
/// over the reduced axes, the zero point removed, requantized by `in_scale / out_scale / count`
/// folded into one Q31 multiplier.
///
/// With `xnnpack`, XNNPACK's mean instead: the same sum in float times `(in_scale / out_scale) *
/// (1 / count)` (float), rounded half to even.
pub fn mean<T: QInt>(input: &[T], dims: &[usize], axes: &[usize], input_q: QParams, output_q: QParams, xnnpack: bool, out: &mut [T]) {
    let reduced: Vec<bool> = (0..dims.len()).map(|d| axes.contains(&d)).collect();
    let count: i64 = dims.iter().zip(&reduced).filter(|(_, &r)| r).map(|(&d, _)| d as i64).product();
    let mut sums = vec![0i32; out.len()];
    let contiguous = !axes.is_empty() && axes.windows(2).all(|w| w[1] == w[0] + 1);
    if contiguous {
        // Reduce the middle of [outer, reduced, inner] row by row.
        let (a, z) = (axes[0], axes[axes.len() - 1]);
        let outer: usize = dims[..a].iter().product();
        let red: usize = dims[a..=z].iter().product();
        let inner: usize = dims[z + 1..].iter().product();
        for o in 0..outer {
            if inner == 1 {
                // The last axis (a layer norm's mean): one run per output, summed as a
                // vector loop (wrapping i32 sums do not depend on the order).
                sums[o] = input[o * red..(o + 1) * red].iter().fold(0i32, |acc, v| acc.wrapping_add(v.get()));
                continue;
            }
            let dst = &mut sums[o * inner..(o + 1) * inner];
            for r in 0..red {
                let src = &input[(o * red + r) * inner..(o * red + r + 1) * inner];
                for (d, v) in dst.iter_mut().zip(src) {
                    *d = d.wrapping_add(v.get());
                }
            }
        }
    }
    // Output strides over the kept dims.
    let mut ostride = vec![0usize; dims.len()];
    let mut s = 1;
    for d in (0..dims.len()).rev() {
        if !reduced[d] {
            ostride[d] = s;
            s *= dims[d];
        }
    }
    if !contiguous {
        super::binary::for_each_index(dims, |i, idx| {
            let o: usize = idx.iter().zip(&ostride).map(|(a, b)| a * b).sum();
            sums[o] = sums[o].wrapping_add(input[i].get());
        });
    }
    if xnnpack {
        let scale = (input_q.scale / output_q.scale) * (1.0 / count.max(1) as f32);
        for (o, &sum) in out.iter_mut().zip(&sums) {
            let shifted = sum.wrapping_sub(input_q.zero_point.wrapping_mul(count as i32));
            *o = T::sat(super::rint_to_i32(shifted as f32 * scale).wrapping_add(output_q.zero_point));
        }
        return;
    }
    let (mut multiplier, mut shift) = quantize_multiplier(input_q.scale as f64 / output_q.scale as f64);
    if count > 0 {
        let mut sh = 63 - (count as u64).leading_zeros() as i32;
        sh = sh.min(32).min(31 + shift);
        multiplier = (((multiplier as i64) << sh) / count) as i32;
        shift -= sh;
    }
    for (o, &sum) in out.iter_mut().zip(&sums) {
        let shifted = sum.wrapping_sub(input_q.zero_point.wrapping_mul(count as i32));
        let v = mbqm(shifted, multiplier, shift).wrapping_add(output_q.zero_point);
        *o = T::sat(v);
    }
}

/// uint8 CONCATENATION of inputs whose scale or zero point differ from the output's
/// (`ConcatenationWithScaling`: `round(q * s + b) + zero_point` in float).
pub fn concat_with_scaling(parts: &[(&[u8], usize, QParams)], outer: usize, inner: usize, out_q: QParams, out: &mut [u8]) {
    let inverse_output_scale = 1.0f32 / out_q.scale;
    let mut o = 0;
    for k in 0..outer {
        for &(data, axis_len, q) in parts {
            let n = axis_len * inner;
            let src = &data[k * n..(k + 1) * n];
            if q.zero_point == out_q.zero_point && q.scale == out_q.scale {
                out[o..o + n].copy_from_slice(src);
            } else {
                let scale = q.scale * inverse_output_scale;
                let bias = -(q.zero_point as f32) * scale;
                for (d, &x) in out[o..o + n].iter_mut().zip(src) {
                    let v = ((x as f32 * scale + bias).round() as i32).wrapping_add(out_q.zero_point);
                    *d = v.clamp(0, 255) as u8;
                }
            }
            o += n;
        }
    }
}

/// Options of RESIZE_BILINEAR.
#[derive(Clone, Copy, Debug)]
pub struct ResizeOpts {
    /// Align corner pixels.
    pub align_corners: bool,
    /// Sample at pixel centers.
    pub half_pixel_centers: bool,
}

fn interp_float(value: usize, scale: f32, half: bool, size: usize) -> (f32, usize, usize) {
    let scaled = if half { (value as f32 + 0.5) * scale - 0.5 } else { value as f32 * scale };
    let lo = (scaled.floor() as i32).max(0) as usize;
    let hi = (scaled.ceil() as i32).min(size as i32 - 1).max(0) as usize;
    (scaled, lo, hi)
}

/// uint8 RESIZE_BILINEAR as TFLite's reference runs it: the float interpolation of
/// `ResizeBilinear<uint8_t>` with a `+0.5` before truncation. The same float operations in the
/// same order as [`resize_bilinear_u8_reference`], with the per-column work hoisted out and the
/// channel loop over contiguous slices (so it vectorizes); output rows run in parallel.
pub fn resize_bilinear_u8(input: &[u8], in_dims: [usize; 4], out_h: usize, out_w: usize, o: ResizeOpts, out: &mut [u8]) {
    let [n, ih, iw, c] = in_dims;
    let mut hs = ih as f32 / out_h as f32;
    let mut ws = iw as f32 / out_w as f32;
    if o.align_corners && out_h > 1 {
        hs = (ih - 1) as f32 / (out_h - 1) as f32;
    }
    if o.align_corners && out_w > 1 {
        ws = (iw - 1) as f32 / (out_w - 1) as f32;
    }
    let cols: Vec<(usize, usize, f32)> = (0..out_w)
        .map(|x| {
            let (ix, x0, x1) = interp_float(x, ws, o.half_pixel_centers, iw);
            (x0, x1, ix - x0 as f32)
        })
        .collect();
    let row_len = out_w * c;
    let rows = ResizeRows { input, ih, iw, c, out_h, hs, opts: o, cols: &cols };
    let simd = crate::simd::qmisc::BwToken::new();
    let row = |(r, orow): (usize, &mut [u8])| rows.row(simd, r, orow);
    let out = &mut out[..n * out_h * row_len];
    match crate::kernels::binary::par_chunk(n * out_h, row_len * 4) {
        Some(chunk) => nnrt_threads::par_chunks_mut(out, chunk * row_len, |t, block| {
            for (i, orow) in block.chunks_mut(row_len).enumerate() {
                row((t * chunk + i, orow));
            }
        }),
        None => out.chunks_mut(row_len).enumerate().for_each(row),
    }
}

/// What one output row of [`resize_bilinear_u8`] reads.
struct ResizeRows<'a> {
    input: &'a [u8],
    ih: usize,
    iw: usize,
    c: usize,
    out_h: usize,
    hs: f32,
    opts: ResizeOpts,
    /// `(x0, x1, dx)` of each output column.
    cols: &'a [(usize, usize, f32)],
}

impl ResizeRows<'_> {
    /// Output row `r` (`batch · out_h + y`), with AVX-512 when `simd` is given.
    fn row(&self, simd: Option<crate::simd::qmisc::BwToken>, r: usize, orow: &mut [u8]) {
        let (input, ih, iw, c) = (self.input, self.ih, self.iw, self.c);
        let (b, y) = (r / self.out_h, r % self.out_h);
        let (iy, y0, y1) = interp_float(y, self.hs, self.opts.half_pixel_centers, ih);
        let dy = iy - y0 as f32;
        let ny = 1.0 - dy;
        let r0 = &input[(b * ih + y0) * iw * c..(b * ih + y0 + 1) * iw * c];
        let r1 = &input[(b * ih + y1) * iw * c..(b * ih + y1 + 1) * iw * c];
        if let Some(t) = simd {
            crate::simd::qmisc::resize_u8_row(t, r0, r1, self.cols, c, dy, orow);
            return;
        }
        for (&(x0, x1, dx), opix) in self.cols.iter().zip(orow.chunks_exact_mut(c)) {
            let nx = 1.0 - dx;
            let (p00, p10) = (&r0[x0 * c..x0 * c + c], &r1[x0 * c..x0 * c + c]);
            let (p01, p11) = (&r0[x1 * c..x1 * c + c], &r1[x1 * c..x1 * c + c]);
            for i in 0..c {
                let (a00, a10, a01, a11) = (p00[i] as f32, p10[i] as f32, p01[i] as f32, p11[i] as f32);
                // The reference's expression, term for term (no reassociation).
                let v = a00 * ny * nx + a10 * dy * nx + a01 * ny * dx + a11 * dy * dx + 0.5;
                opix[i] = v as u8;
            }
        }
    }
}

/// Reference twin of [`resize_bilinear_u8`]: TFLite's loops as written.
pub fn resize_bilinear_u8_reference(input: &[u8], in_dims: [usize; 4], out_h: usize, out_w: usize, o: ResizeOpts, out: &mut [u8]) {
    let [n, ih, iw, c] = in_dims;
    let mut hs = ih as f32 / out_h as f32;
    let mut ws = iw as f32 / out_w as f32;
    if o.align_corners && out_h > 1 {
        hs = (ih - 1) as f32 / (out_h - 1) as f32;
    }
    if o.align_corners && out_w > 1 {
        ws = (iw - 1) as f32 / (out_w - 1) as f32;
    }
    for b in 0..n {
        for y in 0..out_h {
            let (iy, y0, y1) = interp_float(y, hs, o.half_pixel_centers, ih);
            for x in 0..out_w {
                let (ix, x0, x1) = interp_float(x, ws, o.half_pixel_centers, iw);
                let dy = iy - y0 as f32;
                let dx = ix - x0 as f32;
                for ch in 0..c {
                    let at = |yy: usize, xx: usize| input[((b * ih + yy) * iw + xx) * c + ch] as f32;
                    let v = at(y0, x0) * (1.0 - dy) * (1.0 - dx) + at(y1, x0) * dy * (1.0 - dx) + at(y0, x1) * (1.0 - dy) * dx + at(y1, x1) * dy * dx + 0.5;
                    out[((b * out_h + y) * out_w + x) * c + ch] = v as u8;
                }
            }
        }
    }
}

fn interp_int(value: i32, scale_10: i32, half: bool, size: i32) -> (i32, i32, i32) {
    let scaled = if half { value * scale_10 + scale_10 / 2 - (1 << 9) } else { value * scale_10 };
    let lo = (scaled / (1 << 10)).max(0);
    let hi = ((scaled + (1 << 10) - 1) / (1 << 10)).min(size - 1);
    (scaled, lo, hi)
}

/// int8/int16 RESIZE_BILINEAR (`ResizeBilinearInteger`: 10-bit fixed-point weights).
pub fn resize_bilinear_int<T: QInt>(input: &[T], in_dims: [usize; 4], out_h: usize, out_w: usize, o: ResizeOpts, out: &mut [T]) {
    let [n, ih, iw, c] = in_dims;
    let (ihi, iwi, ohi, owi) = (ih as i32, iw as i32, out_h as i32, out_w as i32);
    let mut hs = ((1 << 10) * ihi + ohi / 2) / ohi;
    let mut ws = ((1 << 10) * iwi + owi / 2) / owi;
    if o.align_corners && out_h > 1 {
        hs = ((1 << 10) * (ihi - 1) + (ohi - 1) / 2) / (ohi - 1);
    }
    if o.align_corners && out_w > 1 {
        ws = ((1 << 10) * (iwi - 1) + (owi - 1) / 2) / (owi - 1);
    }
    for b in 0..n {
        for y in 0..out_h {
            let (iy, y0, y1) = interp_int(y as i32, hs, o.half_pixel_centers, ihi);
            for x in 0..out_w {
                let (ix, x0, x1) = interp_int(x as i32, ws, o.half_pixel_centers, iwi);
                let (wy1, wx1) = ((iy - (1 << 10) * y0) as i64, (ix - (1 << 10) * x0) as i64);
                let (wy0, wx0) = ((1 << 10) - wy1, (1 << 10) - wx1);
                for ch in 0..c {
                    let at = |yy: i32, xx: i32| input[((b * ih + yy as usize) * iw + xx as usize) * c + ch].get() as i64;
                    let v = at(y0, x0) * wy0 * wx0 + at(y1, x0) * wy1 * wx0 + at(y0, x1) * wy0 * wx1 + at(y1, x1) * wy1 * wx1;
                    let round = if v > 0 { 1 << 19 } else { -(1 << 19) };
                    out[((b * out_h + y) * out_w + x) * c + ch] = T::put(((v + round) / (1 << 20)) as i32);
                }
            }
        }
    }
}

/// ARG_MAX / ARG_MIN along `axis`: the first index of the extreme value, written through
/// `put` (the output index type). The innermost axis (the usual case: class scores per pixel)
/// takes the extreme of each row, then its first position; rows run in parallel.
pub fn arg_extreme<T: QInt, O: Copy + Send>(input: &[T], dims: &[usize], axis: usize, max: bool, out: &mut [O], put: impl Fn(usize) -> O + Sync) {
    let outer: usize = dims[..axis].iter().product();
    let n = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    if inner == 1 && n > 0 {
        let one = |(o, row): (&mut O, &[T])| {
            let best = if max { row.iter().map(|v| v.get()).max() } else { row.iter().map(|v| v.get()).min() };
            let best = best.unwrap_or(0);
            *o = put(row.iter().position(|v| v.get() == best).unwrap_or(0));
        };
        let (out, input) = (&mut out[..outer], &input[..outer * n]);
        let simd = crate::simd::qmisc::BwToken::new().filter(|_| std::mem::size_of::<T>() == 1 && n <= 64);
        let rows = |(o, i): (&mut [O], &[T])| match simd {
            Some(t) => crate::simd::qmisc::arg_extreme_rows(t, bytemuck::cast_slice(i), n, T::MIN < 0, !max, o, &put),
            None => o.iter_mut().zip(i.chunks_exact(n)).for_each(one),
        };
        match crate::kernels::binary::par_chunk(outer, n) {
            Some(chunk) => nnrt_threads::par_chunks_mut(out, chunk, |t, o| {
                let i = &input[t * chunk * n..t * chunk * n + o.len() * n];
                rows((o, i))
            }),
            None => rows((out, input)),
        }
        return;
    }
    for o in 0..outer {
        for i in 0..inner {
            let mut best = input[o * n * inner + i].get();
            let mut at = 0;
            for k in 1..n {
                let v = input[(o * n + k) * inner + i].get();
                if (max && v > best) || (!max && v < best) {
                    best = v;
                    at = k;
                }
            }
            out[o * inner + i] = put(at);
        }
    }
}

/// Reference twin of [`arg_extreme`].
pub fn arg_extreme_reference<T: QInt>(input: &[T], dims: &[usize], axis: usize, max: bool, out: &mut [i64]) {
    let outer: usize = dims[..axis].iter().product();
    let n = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    for o in 0..outer {
        for i in 0..inner {
            let mut best = input[o * n * inner + i].get();
            let mut at = 0;
            for k in 1..n {
                let v = input[(o * n + k) * inner + i].get();
                if (max && v > best) || (!max && v < best) {
                    best = v;
                    at = k;
                }
            }
            out[o * inner + i] = at as i64;
        }
    }
}

#[cfg(test)]
mod fast_twin_tests {
    use super::*;
    use proptest::prelude::*;

    /// `round_to_i32` is `as i32` on every whole float: the edges, then a sweep of bit patterns.
    #[test]
    fn round_to_i32_is_saturating_as() {
        let edges = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 2_147_483_520.0, 2_147_483_648.0, -2_147_483_648.0, -2_147_483_904.0, 8_388_608.0, -8_388_609.0, 1e30, -1e30];
        for r in edges.into_iter().chain((0..u32::MAX).step_by(4099).map(f32::from_bits)) {
            let r = r.round();
            assert_eq!(round_to_i32(r), r as i32, "{r:e}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn resize_u8_matches_reference(n in 1usize..3, ih in 1usize..9, iw in 1usize..9, c in 1usize..40, oh in 1usize..30, ow in 1usize..30, ac in any::<bool>(), hp in any::<bool>(), seed in any::<u64>()) {
            let len = n * ih * iw * c;
            let x: Vec<u8> = (0..len).map(|i| ((i as u64).wrapping_mul(seed | 1) >> 7) as u8).collect();
            let o = ResizeOpts { align_corners: ac && !hp, half_pixel_centers: hp };
            let (mut got, mut want) = (vec![0u8; n * oh * ow * c], vec![0u8; n * oh * ow * c]);
            resize_bilinear_u8(&x, [n, ih, iw, c], oh, ow, o, &mut got);
            resize_bilinear_u8_reference(&x, [n, ih, iw, c], oh, ow, o, &mut want);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn arg_extreme_matches_reference(dims in proptest::collection::vec(1usize..70, 1..4), ax in 0usize..3, max in any::<bool>(), seed in any::<u64>()) {
            let axis = ax % dims.len();
            let len: usize = dims.iter().product();
            // Few distinct values, so ties (first index wins) are common.
            let x: Vec<i8> = (0..len).map(|i| (((i as u64).wrapping_mul(seed | 1) >> 13) % 5) as i8 - 2).collect();
            let n_out = len / dims[axis];
            let (mut got, mut want) = (vec![0i64; n_out], vec![0i64; n_out]);
            arg_extreme(&x, &dims, axis, max, &mut got, |i| i as i64);
            arg_extreme_reference(&x, &dims, axis, max, &mut want);
            prop_assert_eq!(&got, &want);
            // The same bytes read as uint8 (254, 255, 0, 1, 2: the order changes).
            let xu: Vec<u8> = x.iter().map(|&v| v as u8).collect();
            arg_extreme(&xu, &dims, axis, max, &mut got, |i| i as i64);
            arg_extreme_reference(&xu, &dims, axis, max, &mut want);
            prop_assert_eq!(got, want);
        }
    }
}
