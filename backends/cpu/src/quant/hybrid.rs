//! Dynamic-range ("hybrid") kernels: float activations quantized to int8 on the fly, int8
//! weights, float results — TFLite's `AsymmetricQuantizeFloats` / `SymmetricQuantizeFloats`
//! (as LiteRT's x86 packages compute them: the NEON code through NEON_2_SSE) per batch, an exact integer accumulation, then `acc · channel_scale · input_scale + bias`.

use crate::kernels::conv::ConvGeom;
use crate::kernels::depthwise::DepthwiseGeom;
use crate::simd::{Wide, WideBody};

/// TFLite's NEON `RoundToNearest` as x86 builds run it (through NEON_2_SSE, which is what the
/// reference LiteRT packages ship): add ±0.5 in float, then truncate.
#[inline(always)]
fn round_neon(t: f32) -> i32 {
    // ±0.5 by `t`'s sign: -0.0 takes -0.5 where `t < 0.0` took +0.5, both truncating to 0.
    // `as i32` (saturating, NaN to 0) is a truncation and then `round_to_i32` of a whole
    // number, which vectorizes: the compiler made the `as` of a vector one scalar conversion,
    // NaN test and insert per lane, 42 % of a dynamic-range MobileNetV2's run.
    super::misc::round_to_i32((t + 0.5f32.copysign(t)).trunc())
}

/// Elements handled by TFLite's 8-wide vector loop; the rest use `std::round`.
fn vector_part(n: usize) -> usize {
    n / 8 * 8
}

/// TFLite's `AsymmetricQuantizeFloats` (the NEON version LiteRT's x86 packages run): int8
/// values, their scale and zero point ("offset"). The offset is added after rounding the scaled
/// value, and `rmax - rmin` is taken in float.
pub fn asymmetric_quantize(values: &[f32], out: &mut [i8]) -> (f32, i32) {
    asymmetric_quantize_flip(values, out, 0)
}

/// [`asymmetric_quantize`] with each int8 value `q` stored as the unsigned byte `q + 128` (what
/// the integer GEMM reads; the offset stays in the int8 domain).
pub fn asymmetric_quantize_unsigned(values: &[f32], out: &mut [u8]) -> (f32, i32) {
    asymmetric_quantize_flip(values, bytemuck::cast_slice_mut(out), 0x80)
}

/// [`asymmetric_quantize`] with every stored byte xor `flip`.
fn asymmetric_quantize_flip(values: &[f32], out: &mut [i8], flip: u8) -> (f32, i32) {
    let (qmin, qmax) = (-128.0f64, 127.0f64);
    let (lo, hi, nan) = min_max(values, (0.0, 0.0));
    if lo == hi {
        out.fill(flip as i8);
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
    quantize_with(values, out, inv, offset, -128, flip, small(lo, hi, nan, inv));
    (sf, offset)
}

/// TFLite's `SymmetricQuantizeFloats` (NEON version): int8 values in `[-127, 127]` and their
/// scale.
pub fn symmetric_quantize(values: &[f32], out: &mut [i8]) -> f32 {
    symmetric_quantize_flip(values, out, 0)
}

/// [`symmetric_quantize`] with each int8 value `q` stored as the unsigned byte `q + 128`.
pub fn symmetric_quantize_unsigned(values: &[f32], out: &mut [u8]) -> f32 {
    symmetric_quantize_flip(values, bytemuck::cast_slice_mut(out), 0x80)
}

/// [`symmetric_quantize`] with every stored byte xor `flip`.
fn symmetric_quantize_flip(values: &[f32], out: &mut [i8], flip: u8) -> f32 {
    let (lo, hi, nan) = min_max(values, (f32::INFINITY, f32::NEG_INFINITY));
    let range = lo.abs().max(hi.abs());
    if range == 0.0 || values.is_empty() {
        out.fill(flip as i8);
        return 1.0;
    }
    let inv = 127.0f32 / range;
    quantize_with(values, out, inv, 0, -127, flip, small(lo, hi, nan, inv));
    range / 127.0
}

/// Whether every `|v · inv|` of values in `[lo, hi]` (no NaN among them) lies below 2²⁴, so the
/// quantization's conversion cannot saturate nor its sum with the offset wrap.
fn small(lo: f32, hi: f32, nan: bool, inv: f32) -> bool {
    !nan && (lo.abs().max(hi.abs()) as f64) * (inv.abs() as f64) < 8_388_608.0
}

/// The smallest and largest of `start` and `values` (NaNs skipped, as `f32::min` / `max` skip
/// them), and whether some value is NaN (always "maybe" without AVX-512 or AVX2): AVX-512 or
/// AVX2 intrinsics where the CPU has them (`simd::qmisc::min_max_f32` / `min_max_f32_avx2`),
/// else 16 lanes compiled for this CPU's vectors. Min and max are exact, so the order of the
/// comparisons does not change the result (a scalar fold had been ~20 % of a dynamic-range
/// MobileNetV2's run).
fn min_max(values: &[f32], start: (f32, f32)) -> (f32, f32, bool) {
    if let Some(t) = crate::simd::WideToken::new() {
        return crate::simd::qmisc::min_max_f32(t, values, start);
    }
    if let Some(t) = crate::simd::Avx2Token::allowed() {
        return crate::simd::qmisc::min_max_f32_avx2(t, values, start);
    }
    struct Body<'a>(&'a [f32], (f32, f32));
    impl WideBody for Body<'_> {
        #[inline(always)]
        fn body(&mut self) {
            let (mut lo, mut hi) = ([self.1 .0; 16], [self.1 .1; 16]);
            let chunks = self.0.chunks_exact(16);
            let rest = chunks.remainder();
            for c in chunks {
                // A compare and select (one vminps / vmaxps): `f32::min` / `max` compile to
                // three instructions a lane to treat a NaN in either operand, where only `c` can
                // be one here, and a NaN `c` fails both comparisons as `min` / `max` skip it.
                for j in 0..16 {
                    lo[j] = if c[j] < lo[j] { c[j] } else { lo[j] };
                    hi[j] = if c[j] > hi[j] { c[j] } else { hi[j] };
                }
            }
            for (&l, &h) in lo.iter().zip(&hi) {
                self.1 = (self.1 .0.min(l), self.1 .1.max(h));
            }
            for &v in rest {
                self.1 = (self.1 .0.min(v), self.1 .1.max(v));
            }
        }
    }
    let mut b = Body(values, start);
    Wide::detect().run(&mut b);
    (b.1 .0, b.1 .1, true)
}

/// `out = clamp(offset + round(v · inv), low, 127)` as TFLite's NEON loop computes it: the
/// 8-wide part rounds with [`round_neon`], the rest with `std::round` (half away from zero) of
/// `inv · v`; compiled for this CPU's vectors (the baseline build called `roundf` per value).
/// Split across the current run's kernel pool in chunks of whole 8-value groups, so that every
/// chunk but the last is all vector part and the last holds the tail where the whole slice does
/// (one thread had quantized for both: the dynamic-range MobileNetV2 ran 1.74x LiteRT at 2 threads).
/// `small`: see [`small`].
#[allow(clippy::too_many_arguments)]
fn quantize_with(values: &[f32], out: &mut [i8], inv: f32, offset: i32, low: i32, flip: u8, small: bool) {
    let n = values.len().min(out.len());
    match crate::kernels::binary::par_chunk(n.div_ceil(8), 8) {
        None => quantize_block(values, out, inv, offset, low, flip, small),
        Some(groups) => {
            let c = groups * 8;
            nnrt_threads::par_chunks_mut(&mut out[..n], c, |i, o| quantize_block(&values[i * c..i * c + o.len()], o, inv, offset, low, flip, small));
        }
    }
}

/// [`quantize_with`] on one thread (each stored byte xor `flip`): the vector part's whole
/// 16-value groups with AVX-512 intrinsics where the CPU has them, its 8-value groups with AVX2
/// ones (`simd::qmisc::quantize_neon_f32` / `quantize_neon_f32_avx2`; compiled from the loop
/// below, the saturating conversion went through doubles at half the width), the rest by the
/// loops below.
#[allow(clippy::too_many_arguments)]
fn quantize_block(values: &[f32], out: &mut [i8], inv: f32, offset: i32, low: i32, flip: u8, small: bool) {
    let head = vector_part(values.len()).min(out.len());
    let (v, o) = (&values[..head], &mut out[..head]);
    let done = match (crate::simd::WideToken::new(), crate::simd::Avx2Token::allowed()) {
        (Some(t), _) => crate::simd::qmisc::quantize_neon_f32(t, v, o, inv, offset, low, flip as i8, small),
        (None, Some(t)) => crate::simd::qmisc::quantize_neon_f32_avx2(t, v, o, inv, offset, low, flip as i8, small),
        (None, None) => 0,
    };
    if done == 0 {
        // The element loops, compiled for this CPU's vectors.
        struct Body<'a>(&'a [f32], &'a mut [i8], usize, f32, i32, i32, u8);
        impl WideBody for Body<'_> {
            #[inline(always)]
            fn body(&mut self) {
                let (v, head) = (self.0, self.2);
                quantize_scalar(&v[..head], self.1, &v[head..], self.3, self.4, self.5, self.6);
            }
        }
        Wide::detect().run(&mut Body(values, out, head, inv, offset, low, flip));
        return;
    }
    // What the vector loop left of the 8-wide part (8 values at most), then the tail.
    let (v, o) = (&values[done..], &mut out[done..]);
    quantize_scalar(&v[..head - done], o, &v[head - done..], inv, offset, low, flip);
}

/// The element loops of [`quantize_block`] on `head` (the 8-wide part: [`round_neon`]) and then
/// `tail` (`std::round`), written to `out` in that order. The sum wraps as the release build's
/// `+` did (a value scaled past int32 saturates).
#[inline(always)]
fn quantize_scalar(head: &[f32], out: &mut [i8], tail: &[f32], inv: f32, offset: i32, low: i32, flip: u8) {
    let (oh, ot) = out.split_at_mut(head.len().min(out.len()));
    for (o, &v) in oh.iter_mut().zip(head) {
        *o = offset.wrapping_add(round_neon(v * inv)).clamp(low, 127) as i8 ^ flip as i8;
    }
    for (o, &v) in ot.iter_mut().zip(tail) {
        *o = offset.wrapping_add((inv * v).round() as i32).clamp(low, 127) as i8 ^ flip as i8;
    }
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
/// (`DepthwiseConvHybridPerChannel`, `scales_first`). Compiled for this CPU's vectors.
pub fn finish(acc: &[i32], channel_scale: &[f32], input_scale: f32, bias: Option<&[f32]>, clamp: FloatClamp, scales_first: bool, out: &mut [f32]) {
    let n = channel_scale.len();
    if n == 0 {
        return;
    }
    let rows = (acc.len() / n).min(out.len() / n);
    // Whole rows per chunk, across the current run's kernel pool.
    match crate::kernels::binary::par_chunk(rows, n) {
        None => finish_block(acc, channel_scale, input_scale, bias, clamp, scales_first, out),
        Some(c) => nnrt_threads::par_chunks_mut(&mut out[..rows * n], c * n, |i, o| {
            finish_block(&acc[i * c * n..i * c * n + o.len()], channel_scale, input_scale, bias, clamp, scales_first, o)
        }),
    }
}

/// [`finish`] on one thread.
fn finish_block(acc: &[i32], channel_scale: &[f32], input_scale: f32, bias: Option<&[f32]>, clamp: FloatClamp, scales_first: bool, out: &mut [f32]) {
    struct Body<'a> {
        acc: &'a [i32],
        channel_scale: &'a [f32],
        input_scale: f32,
        bias: Option<&'a [f32]>,
        clamp: FloatClamp,
        scales_first: bool,
        out: &'a mut [f32],
    }
    impl WideBody for Body<'_> {
        #[inline(always)]
        fn body(&mut self) {
            let (n, s, clamp) = (self.channel_scale.len(), self.input_scale, self.clamp);
            if n == 0 {
                return;
            }
            for (row, orow) in self.acc.chunks_exact(n).zip(self.out.chunks_exact_mut(n)) {
                let scaled = orow.iter_mut().zip(row).zip(self.channel_scale);
                match (self.scales_first, self.bias) {
                    (true, Some(b)) => scaled.zip(b).for_each(|(((o, &a), &c), &b)| *o = (a as f32 * (c * s) + b).max(clamp.0).min(clamp.1)),
                    (true, None) => scaled.for_each(|((o, &a), &c)| *o = (a as f32 * (c * s)).max(clamp.0).min(clamp.1)),
                    (false, Some(b)) => scaled.zip(b).for_each(|(((o, &a), &c), &b)| *o = (a as f32 * c * s + b).max(clamp.0).min(clamp.1)),
                    (false, None) => scaled.for_each(|((o, &a), &c)| *o = (a as f32 * c * s).max(clamp.0).min(clamp.1)),
                }
            }
        }
    }
    Wide::detect().run(&mut Body { acc, channel_scale, input_scale, bias, clamp, scales_first, out });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::xorshift;

    /// The element-at-a-time forms the vector loops replaced (a fold of `f32::min` / `max`, one
    /// rounding per element by position, the epilogue with its `Option` per element).
    fn scalar_quantize(values: &[f32], asym: bool) -> (Vec<i8>, f32, i32) {
        let (mut lo, mut hi) = if asym { (0.0f32, 0.0f32) } else { (f32::INFINITY, f32::NEG_INFINITY) };
        for &v in values {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        let mut out = vec![0i8; values.len()];
        let (inv, offset, low, scale) = if asym {
            if lo == hi {
                return (out, 1.0, 0);
            }
            let scale = (hi - lo) as f64 / 255.0;
            let (zmin, zmax) = (-128.0 - lo as f64 / scale, 127.0 - hi as f64 / scale);
            let zp = if 128.0 + (lo as f64 / scale).abs() < 127.0 + (hi as f64 / scale).abs() { zmin } else { zmax };
            let offset = if zp <= -128.0 { -128 } else if zp >= 127.0 { 127 } else { zp.round() as i32 };
            let sf = scale as f32;
            (if sf == 0.0 { 0.0 } else { (1.0 / sf as f64) as f32 }, offset, -128, sf)
        } else {
            let range = lo.abs().max(hi.abs());
            if range == 0.0 || values.is_empty() {
                return (out, 1.0, 0);
            }
            (127.0 / range, 0, -127, range / 127.0)
        };
        let split = values.len() / 8 * 8;
        for (i, (o, &v)) in out.iter_mut().zip(values).enumerate() {
            let r = if i < split { branchy_round(v * inv) } else { (inv * v).round() as i32 };
            *o = offset.wrapping_add(r).clamp(low, 127) as i8;
        }
        (out, scale, offset)
    }

    /// NEON_2_SSE's rounding as first written: ±0.5 chosen by a comparison.
    fn branchy_round(t: f32) -> i32 {
        let half = if t < 0.0 { -0.5f32 } else { 0.5f32 };
        (t + half) as i32
    }

    #[test]
    fn round_neon_is_the_comparison_form() {
        for bits in (0..=u32::MAX).step_by(4099).chain([0x8000_0000, 0x7fc0_0000, 0xffc0_0000, 0x7f80_0000, 0xff80_0000, 0x3f00_0000, 0xbf00_0000]) {
            let t = f32::from_bits(bits);
            assert_eq!(round_neon(t), branchy_round(t), "{t:e} ({bits:#x})");
        }
    }

    #[test]
    fn vector_loops_match_the_scalar_ones() {
        let mut rng = xorshift(91);
        let mut next = move || rng.next().unwrap_or(1);
        for case in 0..400u64 {
            let n = (next() % 300) as usize;
            let spread = [1e-3f32, 1.0, 37.5, 1e6][(case % 4) as usize];
            let shift = if case % 3 == 0 { spread * 0.7 } else { 0.0 };
            let mut v: Vec<f32> = (0..n).map(|_| ((next() % 20001) as f32 / 10000.0 - 1.0) * spread + shift).collect();
            // Halves after scaling, exact zeros of both signs, and a lone extreme.
            for (k, x) in v.iter_mut().enumerate().filter(|(k, _)| k % 17 == 3) {
                *x = [0.0, -0.0, 0.5, -0.5, 2.5][k % 5];
            }
            for asym in [false, true] {
                let mut got = vec![0i8; n];
                let (scale, offset) = match asym {
                    true => asymmetric_quantize(&v, &mut got),
                    false => (symmetric_quantize(&v, &mut got), 0),
                };
                let (want, ws, wo) = scalar_quantize(&v, asym);
                assert_eq!((got, scale.to_bits(), offset), (want, ws.to_bits(), wo), "case {case}, {n} values, asym {asym}");
            }
            let ch = 1 + (next() % 19) as usize;
            let rows = n / ch;
            let acc: Vec<i32> = (0..rows * ch).map(|_| (next() % 2_000_001) as i32 - 1_000_000).collect();
            let cs: Vec<f32> = (0..ch).map(|_| (next() % 1000) as f32 * 1e-5 + 1e-7).collect();
            let bias: Vec<f32> = (0..ch).map(|_| (next() % 2001) as f32 - 1000.0).collect();
            let clamp = FloatClamp(-((next() % 50) as f32) - 0.5, (next() % 50) as f32 + 0.25);
            for (first, b) in [(false, None), (true, None), (false, Some(&bias[..])), (true, Some(&bias[..]))] {
                let mut got = vec![0f32; rows * ch];
                finish(&acc, &cs, 0.0173, b, clamp, first, &mut got);
                let want: Vec<f32> = acc.iter().enumerate().map(|(i, &a)| {
                    let c = i % ch;
                    let v = if first { a as f32 * (cs[c] * 0.0173) } else { a as f32 * cs[c] * 0.0173 };
                    b.map_or(v, |b| v + b[c]).max(clamp.0).min(clamp.1)
                }).collect();
                assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), "case {case}");
            }
        }
    }

    #[test]
    fn quantize_block_matches_the_element_loops_at_the_extremes() {
        // Saturation of the conversion (at and past ±2³¹), NaN, infinities, halves, and the
        // wrapping sum with the offset, at every length's split between the parts.
        let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 2_147_483_648.0, -2_147_483_648.0, 2_147_483_520.0, 3e9, -3e9, 0.5, -0.5, 1.5, -2.5, 126.5, -127.5, 0.0, -0.0, 1e-30];
        let mut rng = xorshift(5);
        for n in [0usize, 7, 8, 15, 16, 17, 24, 31, 33, 64, 71, 200] {
            let v: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { special[i / 3 % special.len()] } else { (rng.next().unwrap_or(1) % 4001) as f32 / 8.0 - 250.0 }).collect();
            for (inv, offset, low, flip) in [(1.0f32, 0, -128, 0u8), (1.0, 5, -128, 0x80), (0.37, -7, -127, 0), (3.0, 127, -128, 0x80)] {
                let mut got = vec![0i8; n];
                quantize_block(&v, &mut got, inv, offset, low, flip, false);
                let mut want = vec![0i8; n];
                let head = vector_part(n);
                quantize_scalar(&v[..head], &mut want, &v[head..], inv, offset, low, flip);
                assert_eq!(got, want, "{n} values, inv {inv}, offset {offset}");
            }
        }
    }

    #[test]
    fn min_max_skips_nans_as_the_fold_does() {
        let mut rng = xorshift(7);
        for n in [0usize, 1, 15, 16, 17, 63, 64, 65, 200, 1000] {
            let mut v: Vec<f32> = (0..n).map(|_| (rng.next().unwrap_or(1) % 2001) as f32 - 1000.0).collect();
            for (k, x) in v.iter_mut().enumerate().filter(|(k, _)| k % 13 == 5) {
                *x = [f32::NAN, -0.0, f32::INFINITY, f32::NEG_INFINITY, 1e30][k % 5];
            }
            for start in [(0.0f32, 0.0f32), (f32::INFINITY, f32::NEG_INFINITY)] {
                let want = v.iter().fold(start, |(lo, hi), &x| (lo.min(x), hi.max(x)));
                let got = min_max(&v, start);
                assert_eq!((got.0.to_bits(), got.1.to_bits()), (want.0.to_bits(), want.1.to_bits()), "{n} values from {start:?}");
                assert!(got.2 || !v.iter().any(|x| x.is_nan()), "{n} values: a NaN not reported");
            }
        }
    }

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
