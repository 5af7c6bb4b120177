//! Dynamic-range ("hybrid") kernels: float activations quantized to int8 on the fly, int8
//! weights, float results — TFLite's `AsymmetricQuantizeFloats` / `SymmetricQuantizeFloats`
//! (as LiteRT's x86 packages compute them: the NEON code through NEON_2_SSE) per batch, an exact integer accumulation, then `acc · channel_scale · input_scale + bias`.

use crate::kernels::conv::ConvGeom;
use crate::kernels::depthwise::DepthwiseGeom;

/// TFLite's NEON `RoundToNearest` as x86 builds run it (through NEON_2_SSE, which is what the
/// reference LiteRT packages ship): add ±0.5 in float, then truncate.
#[inline(always)]
fn round_neon(t: f32) -> i32 {
    let half = if t < 0.0 { -0.5f32 } else { 0.5f32 };
    (t + half) as i32
}

/// Elements handled by TFLite's 8-wide vector loop; the rest use `std::round`.
fn vector_part(n: usize) -> usize {
    n / 8 * 8
}

/// TFLite's `AsymmetricQuantizeFloats` (the NEON version LiteRT's x86 packages run): int8
/// values, their scale and zero point ("offset"). The offset is added after rounding the scaled
/// value, and `rmax - rmin` is taken in float.
pub fn asymmetric_quantize(values: &[f32], out: &mut [i8]) -> (f32, i32) {
    let (qmin, qmax) = (-128.0f64, 127.0f64);
    let (mut lo, mut hi) = (0.0f32, 0.0f32);
    for &v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo == hi {
        out.fill(0);
        return (1.0, 0);
    }
    let (rmin, rmax) = (lo as f64, hi as f64);
    let scale = (hi - lo) as f64 / (qmax - qmin);
    let zp_from_min = qmin - rmin / scale;
    let zp_from_max = qmax - rmax / scale;
    let err_min = qmin.abs() + (rmin / scale).abs();
    let err_max = qmax.abs() + (rmax / scale).abs();
    let zp = if err_min < err_max { zp_from_min } else { zp_from_max };
    let offset = if zp <= qmin {
        -128
    } else if zp >= qmax {
        127
    } else {
        zp.round() as i32
    };
    let sf = scale as f32;
    let inv = if sf == 0.0 { 0.0 } else { (1.0 / sf as f64) as f32 };
    let split = vector_part(values.len());
    for (i, (o, &v)) in out.iter_mut().zip(values).enumerate() {
        let r = if i < split { round_neon(v * inv) } else { (inv * v).round() as i32 };
        *o = (offset + r).clamp(-128, 127) as i8;
    }
    (sf, offset)
}

/// TFLite's `SymmetricQuantizeFloats` (NEON version): int8 values in `[-127, 127]` and their
/// scale.
pub fn symmetric_quantize(values: &[f32], out: &mut [i8]) -> f32 {
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for &v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let range = lo.abs().max(hi.abs());
    if range == 0.0 || values.is_empty() {
        out.fill(0);
        return 1.0;
    }
    let inv = 127.0f32 / range;
    let split = vector_part(values.len());
    for (i, (o, &v)) in out.iter_mut().zip(values).enumerate() {
        let r = if i < split { round_neon(v * inv) } else { (inv * v).round() as i32 };
        *o = r.clamp(-127, 127) as i8;
    }
    range / 127.0
}

/// Float clamp of a fused activation.
#[derive(Clone, Copy, Debug)]
pub struct FloatClamp(pub f32, pub f32);

/// Hybrid CONV_2D per channel (`HybridConvPerChannel`) on one quantized batch layout.
#[allow(clippy::too_many_arguments)]
pub fn conv_per_channel(
    g: &ConvGeom,
    xq: &[i8],
    offsets: &[i32],
    scales: &[f32],
    w: &[i8],
    w_scale: &[f32],
    bias: Option<&[f32]>,
    clamp: FloatClamp,
    out: &mut [f32],
) {
    let (cin_g, cout_g) = (g.group_in_c(), g.group_out_c());
    for b in 0..g.batch {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                for oc in 0..g.out_c {
                    let group = oc / cout_g;
                    let mut acc: i32 = 0;
                    for ky in 0..g.k_h {
                        let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
                        if iy < 0 || iy >= g.in_h as isize {
                            continue;
                        }
                        for kx in 0..g.k_w {
                            let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                            if ix < 0 || ix >= g.in_w as isize {
                                continue;
                            }
                            let ib = ((b * g.in_h + iy as usize) * g.in_w + ix as usize) * g.in_c + group * cin_g;
                            let wb = ((oc * g.k_h + ky) * g.k_w + kx) * cin_g;
                            for ic in 0..cin_g {
                                acc = acc.wrapping_add(w[wb + ic] as i32 * (xq[ib + ic] as i32 - offsets[b]));
                            }
                        }
                    }
                    let mut v = acc as f32 * w_scale[oc] * scales[b];
                    if let Some(bias) = bias {
                        v += bias[oc];
                    }
                    out[((b * g.out_h + oy) * g.out_w + ox) * g.out_c + oc] = v.max(clamp.0).min(clamp.1);
                }
            }
        }
    }
}

/// Hybrid DEPTHWISE_CONV_2D per channel (`DepthwiseConvHybridPerChannel`).
#[allow(clippy::too_many_arguments)]
pub fn depthwise_per_channel(
    g: &DepthwiseGeom,
    xq: &[i8],
    offsets: &[i32],
    scales: &[f32],
    w: &[i8],
    w_scale: &[f32],
    bias: Option<&[f32]>,
    clamp: FloatClamp,
    out: &mut [f32],
) {
    let oc_n = g.out_c();
    let mut acc = vec![0i32; oc_n];
    for b in 0..g.batch {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                acc.fill(0);
                for ky in 0..g.k_h {
                    let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
                    if iy < 0 || iy >= g.in_h as isize {
                        continue;
                    }
                    for kx in 0..g.k_w {
                        let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                        if ix < 0 || ix >= g.in_w as isize {
                            continue;
                        }
                        let ib = ((b * g.in_h + iy as usize) * g.in_w + ix as usize) * g.in_c;
                        let wb = (ky * g.k_w + kx) * oc_n;
                        for (oc, a) in acc.iter_mut().enumerate() {
                            let x = xq[ib + oc / g.multiplier] as i32 - offsets[b];
                            *a = a.wrapping_add(w[wb + oc] as i32 * x);
                        }
                    }
                }
                let ob = ((b * g.out_h + oy) * g.out_w + ox) * oc_n;
                for (oc, &a) in acc.iter().enumerate() {
                    let mut v = a as f32;
                    v *= w_scale[oc] * scales[b];
                    if let Some(bias) = bias {
                        v += bias[oc];
                    }
                    out[ob + oc] = v.max(clamp.0).min(clamp.1);
                }
            }
        }
    }
}

/// Hybrid FULLY_CONNECTED (`MatrixBatchVectorMultiplyAccumulate` with per-row offsets):
/// `out[b][r] = bias[r] + (Σ w·x − row_sum·offset) · (scale_b · channel_scale_r)`.
#[allow(clippy::too_many_arguments)]
pub fn fully_connected(
    m: usize,
    k: usize,
    n: usize,
    xq: &[i8],
    offsets: &[i32],
    scales: &[f32],
    w: &[i8],
    w_scale: &[f32],
    per_channel: bool,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    let row_sums: Vec<i32> = (0..n).map(|r| w[r * k..(r + 1) * k].iter().map(|&v| v as i32).sum()).collect();
    for b in 0..m {
        for r in 0..n {
            let mut dot: i32 = 0;
            for c in 0..k {
                dot = dot.wrapping_add(w[r * k + c] as i32 * xq[b * k + c] as i32);
            }
            dot = dot.wrapping_sub(row_sums[r].wrapping_mul(offsets[b]));
            let mut scale = scales[b];
            if per_channel {
                scale *= w_scale[r];
            }
            let base = bias.map_or(0.0, |v| v[r]);
            out[b * n + r] = base + dot as f32 * scale;
        }
    }
}

/// `out[i] = clamp(acc[i] · channel_scale[c] · input_scale + bias[c])` with `c = i % channels`,
/// in TFLite's order of float operations: `(acc · channel) · input` for convolutions
/// (`HybridConvPerChannel`), `acc · (channel · input)` for depthwise
/// (`DepthwiseConvHybridPerChannel`, `scales_first`).
pub fn finish(acc: &[i32], channel_scale: &[f32], input_scale: f32, bias: Option<&[f32]>, clamp: FloatClamp, scales_first: bool, out: &mut [f32]) {
    let n = channel_scale.len();
    for (row, orow) in acc.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        for (c, (o, &a)) in orow.iter_mut().zip(row).enumerate() {
            let mut v = if scales_first { a as f32 * (channel_scale[c] * input_scale) } else { a as f32 * channel_scale[c] * input_scale };
            if let Some(b) = bias {
                v += b[c];
            }
            *o = v.max(clamp.0).min(clamp.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asymmetric_quantization_rounds_before_adding_the_offset() {
        // LiteRT (x86 packages) quantizes 64.5 with scale 1 and offset -128 to -63: the scaled
        // value is rounded (half away from zero) before the offset is added.
        for n in [6usize, 8, 11] {
            let mut v = vec![255.0f32, 64.5, 63.5, 0.5, 1.5, 2.5, 0.0, 10.0, 3.5, 4.5, 5.5];
            v.truncate(n);
            let mut q = vec![0i8; n];
            let (scale, offset) = asymmetric_quantize(&v, &mut q);
            assert_eq!((scale, offset), (1.0, -128));
            let back: Vec<i32> = q.iter().map(|&x| x as i32 - offset).collect();
            let want = [255, 65, 64, 1, 2, 3, 0, 10, 4, 5, 6];
            assert_eq!(back, want[..n].to_vec(), "n = {n}");
        }
    }
}
