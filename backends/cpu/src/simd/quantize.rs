//! QUANTIZE float32 → int8 / uint8 / int16 per tensor, bit for bit TFLite's `AffineQuantize`
//! (`quant::misc::quantize_seq`: `round(x / scale)` half away from zero, `+ zero_point` in int32
//! (wrapping), saturated), without a division per element.
//!
//! Each value is multiplied by two reciprocals of the scale, `inv_lo < (1/scale)(1 − 2⁻²³)` and
//! `inv_hi > (1/scale)(1 + 2⁻²³)`, and each exact product rounded to an integer in one fused
//! multiply-add with `M = 1.5·2²³ + zero_point`: where the sum lies in `(2²³, 2²⁴ − 1)`, floats
//! are the integers there, so `fma(x, inv, M) − M` is an integer `k` within ½ of the product
//! (ties go to the even sum). `x / scale` is within half an ulp (relative 2⁻²⁴) of the real
//! quotient `t`, so for normal values `x·inv_lo < x / scale < x·inv_hi` strictly (reversed for
//! negative `x`); where both products give the same `k`, both lie in `[k − ½, k + ½]`, so
//! `x / scale` lies strictly inside it and rounds (half away from zero) to `k` as well (below the
//! normal range everything rounds to 0). The sum's bits less those of `1.5·2²³` are then
//! `k + zero_point`, which the packs saturate. A vector with a lane where the two differ (the
//! quotient is within about `|t|·2⁻²¹` of a half), or a sum outside `(2²³, 2²⁴ − 1)` (NaN,
//! infinities, `|x / scale|` near 2²² or beyond, where the reference's int32 saturates and wraps),
//! runs the reference loop instead, so every input gets the reference's result.
//!
//! ## Four vectors at a time (AVX-512)
//!
//! The main loop drops the range check: per 64 values it takes the difference `y_hi − y_lo` of
//! the two sums of each lane (an `FADD`-pipe op beside the `FMA`s) and ORs the differences' bits
//! over the block; the block is stored from `y_lo` where that OR is zero, else it runs the
//! reference. A difference's bits are zero only for `+0`, that is where both sums are finite and
//! equal (NaN and infinities, the inputs' or an overflowing product's, give NaN or ±∞). Such a
//! lane gets the reference's result even where its sum lies outside `(2²³, 2²⁴ − 1)`, because
//! there the packs saturate the decoded `r = bits(y) − bits(1.5·2²³)` (wrapping int32) to the
//! value the reference saturates to:
//! - the exact products differ by `|x|·(inv_hi − inv_lo) ≥ |x/scale|·1.5·2⁻²²` (from the bounds
//!   on `inv_lo`, `inv_hi` below), which exceeds the spacing of floats of magnitude up to
//!   `|x/scale|·(1 + 2⁻⁷)` (`≤ 2⁻²³` relative); two reals further apart than the spacing at the
//!   larger one round to different floats. With `|zero_point| ≤ 2²⁰`, this holds wherever a sum
//!   can be `≤ 0` (`|x/scale| > 1.5·2²³ − 2²⁰`) and wherever the reference's int32 saturates or
//!   wraps (`|x/scale| ≥ 2³¹ − 2²¹`), so no equal pair lies there;
//! - an equal pair with `y ≥ 2²⁴ − 1` has `x/scale + zero_point ≥ 2²² − 2` without wrapping, so
//!   the reference gives the type's maximum, and `r` lies in `[2²² − 1, 2³¹)`: the maximum too;
//! - an equal pair with `0 < y ≤ 2²³` has `x/scale + zero_point ≤ −2²² + 1` without wrapping:
//!   the type's minimum, and `r` lies in `(−2³¹, −2²²]`: the minimum too;
//! - in between, the proof above.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{Avx2Token, WideToken};
use crate::quant::misc::quantize_seq;
use crate::quant::{QInt, QParams};

/// The relative distance `S` of the two reciprocals from `1 / scale` before they are rounded to
/// float: 2⁻²². `inv_lo = (1/scale)(1 − S)(1 + ε)` with `|ε| ≤ 2⁻²⁴` (the rounding; `1/scale`
/// and the product in f64 add under 2⁻⁵⁰), and `(1 − 2⁻²²)(1 + 2⁻²⁴) < 1 − 2⁻²³`; likewise
/// `(1 + 2⁻²²)(1 − 2⁻²⁴) > 1 + 2⁻²³` for `inv_hi`. The bound the proof needs is 2⁻²⁴ (the
/// quotient's half ulp); the smaller `S`, the fewer quotients fall between the two products
/// (about `|t|·2⁻²¹` wide) and take the reference loop.
const SPREAD: f64 = 1.0 / 4_194_304.0;
/// `1.5·2²³`: added to a product of magnitude below 2²², it leaves the product rounded to an
/// integer in the low mantissa bits.
const MAGIC: f32 = 12_582_912.0;
/// The bits of [`MAGIC`].
const MAGIC_BITS: i32 = 0x4B40_0000;
/// A sum's bits less [`MAGIC_BITS`] for the sums `2²³` and `2²⁴ − 1`: the ones taken lie
/// strictly between.
const BELOW: i32 = 0x4B00_0000 - MAGIC_BITS;
const ABOVE: i32 = 0x4B7F_FFFF - MAGIC_BITS;

/// The output types with a vector store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    I8,
    U8,
    I16,
}

/// The constants of the vector QUANTIZE for one output type and quantization.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QuantizeF32 {
    q: QParams,
    inv_lo: f32,
    inv_hi: f32,
    out: Out,
    path: Path,
}

/// The instruction set of the vector path, proven present by its token.
#[derive(Clone, Copy, Debug)]
enum Path {
    Avx512(WideToken),
    Avx2(Avx2Token),
}

impl QuantizeF32 {
    /// The vector path for output type `TO` and `q`, or `None` where this CPU has no vector
    /// path, `TO` is not int8 / uint8 / int16, the scale or a reciprocal is not a positive
    /// normal float, or the zero point is beyond ±2²⁰.
    pub(crate) fn new<TO: QInt>(q: QParams) -> Option<QuantizeF32> {
        let out = match (TO::MIN, TO::MAX, std::mem::size_of::<TO>()) {
            (-128, 127, 1) => Out::I8,
            (0, 255, 1) => Out::U8,
            (-32768, 32767, 2) => Out::I16,
            _ => return None,
        };
        let path = WideToken::new().map(Path::Avx512).or_else(|| Avx2Token::allowed().map(Path::Avx2))?;
        let inv = 1.0 / f64::from(q.scale);
        let (inv_lo, inv_hi) = ((inv * (1.0 - SPREAD)) as f32, (inv * (1.0 + SPREAD)) as f32);
        let normal = |v: f32| v.is_normal() && v > 0.0;
        if !(normal(q.scale) && normal(inv_lo) && normal(inv_hi)) || q.zero_point.unsigned_abs() > 1 << 20 {
            return None;
        }
        Some(QuantizeF32 { q, inv_lo, inv_hi, out, path })
    }

    /// `out[i]` = TFLite's QUANTIZE of `x[i]` for `i < min(len)`.
    ///
    /// # Panics
    /// When `TO` is not the type this was made for.
    pub(crate) fn run<TO: QInt>(&self, x: &[f32], out: &mut [TO]) {
        assert!(QuantizeF32::new::<TO>(self.q).is_some_and(|p| p.out == self.out), "QuantizeF32: output type differs");
        let n = x.len().min(out.len());
        let (x, out) = (&x[..n], &mut out[..n]);
        #[cfg(target_arch = "x86_64")]
        {
            let done = match self.path {
                // SAFETY: the token proves AVX-512 F/BW/DQ/VL (with AVX2 and FMA); `TO` has the
                // layout of `self.out` (asserted above); both slices hold `n` values.
                Path::Avx512(_) => unsafe { avx512(self, x, out) },
                // SAFETY: as above, for AVX2 and FMA.
                Path::Avx2(_) => unsafe { avx2(self, x, out) },
            };
            quantize_seq(&x[done..], self.q, &mut out[done..]);
        }
        #[cfg(not(target_arch = "x86_64"))]
        quantize_seq(x, self.q, out);
    }
}

/// The whole vectors of `x` into `out` (equal lengths); returns how many values it did.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512BW; `TO` is the type of `p.out`.
#[cfg(target_arch = "x86_64")]
unsafe fn avx512<TO: QInt>(p: &QuantizeF32, x: &[f32], out: &mut [TO]) -> usize {
    // SAFETY: passed on from the caller.
    unsafe {
        match p.out {
            Out::I8 => avx512_of::<TO, 0>(p, x, out),
            Out::U8 => avx512_of::<TO, 1>(p, x, out),
            Out::I16 => avx512_of::<TO, 2>(p, x, out),
        }
    }
}

/// [`avx512`] for one output type (`OUT`: 0 int8, 1 uint8, 2 int16): four vectors a step,
/// packed with saturation (the `vpmov*` stores are slow on some cores), then one at a time.
///
/// # Safety
/// As [`avx512`]; `OUT` matches `p.out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
unsafe fn avx512_of<TO: QInt, const OUT: u8>(p: &QuantizeF32, x: &[f32], out: &mut [TO]) -> usize {
    const W: usize = 16;
    let (lo, hi, magic) = (_mm512_set1_ps(p.inv_lo), _mm512_set1_ps(p.inv_hi), _mm512_set1_ps(MAGIC + p.q.zero_point as f32));
    let (magic_bits, below, above, zero) = (_mm512_set1_epi32(MAGIC_BITS), _mm512_set1_epi32(BELOW), _mm512_set1_epi32(ABOVE), _mm512_setzero_si512());
    // Lane orders undoing the packs' interleaving of 128-bit lanes: dword (bytes) or qword
    // (int16) `j` comes from `4·(j % 4) + j / 4` or `2·(j % 4) + j / 4`.
    let order8 = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let order16 = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    // One vector at `i`: `k + zero_point` and the lanes where it is proven.
    let convert = |i: usize| {
        // SAFETY: callers pass `i + W <= x.len()`.
        let v = unsafe { _mm512_loadu_ps(x.as_ptr().add(i)) };
        let y = _mm512_fmadd_ps(v, lo, magic);
        let same = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(y, _mm512_fmadd_ps(v, hi, magic));
        let r = _mm512_sub_epi32(_mm512_castps_si512(y), magic_bits);
        (r, _mm512_mask_cmplt_epi32_mask(_mm512_mask_cmpgt_epi32_mask(same, r, below), r, above))
    };
    let n = x.len();
    let mut i = 0;
    while i + 4 * W <= n {
        // Four vectors checked together (see "Four vectors at a time" in the module notes): the
        // two sums' difference, whose bits are all zero only where the sums are equal and finite,
        // ORed over the block.
        // SAFETY: `i + 4·W <= n`.
        let v: [__m512; 4] = std::array::from_fn(|q| unsafe { _mm512_loadu_ps(x.as_ptr().add(i + q * W)) });
        let y = v.map(|v| _mm512_fmadd_ps(v, lo, magic));
        let d: [__m512i; 4] = std::array::from_fn(|q| _mm512_castps_si512(_mm512_sub_ps(_mm512_fmadd_ps(v[q], hi, magic), y[q])));
        // d0 | d1 | d2, then | d3
        let diff = _mm512_or_si512(_mm512_ternarylogic_epi32::<0xFE>(d[0], d[1], d[2]), d[3]);
        let [r0, r1, r2, r3] = y.map(|y| _mm512_sub_epi32(_mm512_castps_si512(y), magic_bits));
        let ok = _mm512_testn_epi32_mask(diff, diff);
        if ok == 0xFFFF {
            // SAFETY: `4·W` outputs at `i` are in bounds; `TO` is one or two bytes as `OUT` says.
            unsafe {
                let o = out.as_mut_ptr().add(i);
                if OUT == 2 {
                    _mm512_storeu_si512(o as *mut _, _mm512_permutexvar_epi64(order16, _mm512_packs_epi32(r0, r1)));
                    _mm512_storeu_si512((o as *mut i16).add(2 * W) as *mut _, _mm512_permutexvar_epi64(order16, _mm512_packs_epi32(r2, r3)));
                } else {
                    let (w01, w23) = (_mm512_packs_epi32(r0, r1), _mm512_packs_epi32(r2, r3));
                    let b = if OUT == 0 { _mm512_packs_epi16(w01, w23) } else { _mm512_packus_epi16(w01, w23) };
                    _mm512_storeu_si512(o as *mut _, _mm512_permutexvar_epi32(order8, b));
                }
            }
        } else {
            quantize_seq(&x[i..i + 4 * W], p.q, &mut out[i..i + 4 * W]);
        }
        i += 4 * W;
    }
    while i + W <= n {
        let (r, m) = convert(i);
        if m == 0xFFFF {
            // SAFETY: `W` outputs at `i` are in bounds; `TO` is one or two bytes as `OUT` says.
            unsafe {
                let o = out.as_mut_ptr().add(i);
                match OUT {
                    0 => _mm_storeu_si128(o as *mut __m128i, _mm512_cvtsepi32_epi8(r)),
                    1 => _mm_storeu_si128(o as *mut __m128i, _mm512_cvtusepi32_epi8(_mm512_max_epi32(r, zero))),
                    _ => _mm256_storeu_si256(o as *mut __m256i, _mm512_cvtsepi32_epi16(r)),
                }
            }
        } else {
            quantize_seq(&x[i..i + W], p.q, &mut out[i..i + W]);
        }
        i += W;
    }
    i
}

/// [`avx512`] eight lanes at a time, for AVX2.
///
/// # Safety
/// The CPU has AVX2 and FMA; `TO` is the type of `p.out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2<TO: QInt>(p: &QuantizeF32, x: &[f32], out: &mut [TO]) -> usize {
    // SAFETY: the caller's guarantees; `OUT` as `p.out` says.
    unsafe {
        match p.out {
            Out::I8 => avx2_of::<TO, 0>(p, x, out),
            Out::U8 => avx2_of::<TO, 1>(p, x, out),
            Out::I16 => avx2_of::<TO, 2>(p, x, out),
        }
    }
}

/// [`avx2`] for one output type (`OUT`: 0 int8, 1 uint8, 2 int16): four vectors a step checked
/// together as [`avx512_of`] does (the two sums' difference ORed over the block), packed with
/// saturation, then one vector at a time (a one-vector step per 8 values was twice the time).
///
/// # Safety
/// As [`avx2`]; `OUT` matches `p.out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_of<TO: QInt, const OUT: u8>(p: &QuantizeF32, x: &[f32], out: &mut [TO]) -> usize {
    const W: usize = 8;
    let (lo, hi, magic) = (_mm256_set1_ps(p.inv_lo), _mm256_set1_ps(p.inv_hi), _mm256_set1_ps(MAGIC + p.q.zero_point as f32));
    let (magic_bits, below, above) = (_mm256_set1_epi32(MAGIC_BITS), _mm256_set1_epi32(BELOW), _mm256_set1_epi32(ABOVE));
    // Dword `j` of the result is dword `4·(j % 2) + j / 2` of the byte packs.
    let order8 = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let whole = x.len() / W * W;
    let mut i = 0;
    while i + 4 * W <= whole {
        // SAFETY: `i + 4·W <= x.len()`.
        let v: [__m256; 4] = std::array::from_fn(|q| unsafe { _mm256_loadu_ps(x.as_ptr().add(i + q * W)) });
        let y = v.map(|v| _mm256_fmadd_ps(v, lo, magic));
        let d: [__m256i; 4] = std::array::from_fn(|q| _mm256_castps_si256(_mm256_sub_ps(_mm256_fmadd_ps(v[q], hi, magic), y[q])));
        let diff = _mm256_or_si256(_mm256_or_si256(d[0], d[1]), _mm256_or_si256(d[2], d[3]));
        if _mm256_testz_si256(diff, diff) == 1 {
            let [r0, r1, r2, r3] = y.map(|y| _mm256_sub_epi32(_mm256_castps_si256(y), magic_bits));
            // SAFETY: `4·W` outputs at `i` are in bounds; `TO` is one or two bytes as `OUT` says.
            unsafe {
                let o = out.as_mut_ptr().add(i);
                if OUT == 2 {
                    // The packs interleave 64-bit halves: qwords 0, 2, 1, 3 put them in order.
                    _mm256_storeu_si256(o as *mut __m256i, _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(r0, r1)));
                    _mm256_storeu_si256((o as *mut i16).add(2 * W) as *mut __m256i, _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(r2, r3)));
                } else {
                    let (w01, w23) = (_mm256_packs_epi32(r0, r1), _mm256_packs_epi32(r2, r3));
                    let b = if OUT == 0 { _mm256_packs_epi16(w01, w23) } else { _mm256_packus_epi16(w01, w23) };
                    _mm256_storeu_si256(o as *mut __m256i, _mm256_permutevar8x32_epi32(b, order8));
                }
            }
        } else {
            quantize_seq(&x[i..i + 4 * W], p.q, &mut out[i..i + 4 * W]);
        }
        i += 4 * W;
    }
    while i < whole {
        // SAFETY: `i + W <= x.len() == out.len()`.
        let v = unsafe { _mm256_loadu_ps(x.as_ptr().add(i)) };
        let y = _mm256_fmadd_ps(v, lo, magic);
        let same = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_EQ_OQ>(y, _mm256_fmadd_ps(v, hi, magic)));
        let r = _mm256_sub_epi32(_mm256_castps_si256(y), magic_bits);
        let inside = _mm256_and_si256(_mm256_cmpgt_epi32(r, below), _mm256_cmpgt_epi32(above, r));
        let ok = _mm256_and_si256(same, inside);
        if _mm256_movemask_ps(_mm256_castsi256_ps(ok)) == 0xFF {
            // Eight int16 in order, saturated (then to bytes, saturated again: the same clamp).
            let w = _mm256_castsi256_si128(_mm256_permute4x64_epi64::<0b1000>(_mm256_packs_epi32(r, r)));
            // SAFETY: `W` outputs at `i` are in bounds; `TO` is one or two bytes as `p.out` says.
            unsafe {
                let o = out.as_mut_ptr().add(i);
                match p.out {
                    Out::I8 => _mm_storel_epi64(o as *mut __m128i, _mm_packs_epi16(w, w)),
                    Out::U8 => _mm_storel_epi64(o as *mut __m128i, _mm_packus_epi16(w, w)),
                    Out::I16 => _mm_storeu_si128(o as *mut __m128i, w),
                }
            }
        } else {
            quantize_seq(&x[i..i + W], p.q, &mut out[i..i + W]);
        }
        i += W;
    }
    whole
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The paths this CPU has: AVX-512 (where present) and AVX2.
    fn paths<TO: QInt>(q: QParams) -> Vec<QuantizeF32> {
        let Some(best) = QuantizeF32::new::<TO>(q) else { return Vec::new() };
        let mut all = vec![best];
        if let (Path::Avx512(_), Some(t)) = (best.path, Avx2Token::new()) {
            all.push(QuantizeF32 { path: Path::Avx2(t), ..best });
        }
        all
    }

    fn check<TO: QInt + PartialEq + std::fmt::Debug>(x: &[f32], q: QParams) -> Result<(), TestCaseError> {
        let mut want = vec![TO::default(); x.len()];
        quantize_seq(x, q, &mut want);
        for p in paths::<TO>(q) {
            let mut got = vec![TO::default(); x.len()];
            p.run(x, &mut got);
            for i in 0..x.len() {
                prop_assert_eq!(got[i], want[i], "{:?} x {} scale {} zp {} at {}", p.path, x[i], q.scale, q.zero_point, i);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

        /// Values at, next to and between the halves `(k + ½)·scale` (where a reciprocal
        /// rounds differently from the division), plain values, large ones and non-finite ones,
        /// for every output type, against the reference.
        #[test]
        fn matches_reference(scale_bits in 0x3000_0000u32..0x4300_0000, zp in -300i32..300, seed in any::<u64>(), n in 0usize..300) {
            let scale = f32::from_bits(scale_bits);
            let mut s = seed | 1;
            let mut next = move || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
            // Blocks of 16 of one kind, so that most vectors take the fast path and others
            // (with a NaN or a huge value) the reference.
            let mut kind = 0;
            let x: Vec<f32> = (0..n).map(|i| {
                let r = next();
                if i % 16 == 0 {
                    kind = (r >> 56) % 4;
                }
                let k = (r % 700) as f32 - 350.0;
                let near = ((k + 0.5) * scale).to_bits().wrapping_add((r >> 20) as u32 % 7).wrapping_sub(3);
                match (kind, (r >> 40) % 8) {
                    (0, _) => f32::from_bits(near),
                    (1, _) => k * scale * 1.37,
                    (2, 0) => [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e-40][(r >> 50) as usize % 5],
                    (2, 1) => (k * 1e4 + 0.5) * scale,
                    (2, 2) => f32::from_bits(r as u32),
                    (_, 3) => (k + 0.5) * scale,
                    _ => f32::from_bits(near),
                }
            }).collect();
            check::<i8>(&x, QParams { scale, zero_point: zp.clamp(-128, 127) })?;
            check::<u8>(&x, QParams { scale, zero_point: zp.clamp(0, 255) })?;
            check::<i16>(&x, QParams { scale, zero_point: zp / 10 })?;
            // A zero point outside the type (the int32 sum still decides).
            check::<i8>(&x, QParams { scale, zero_point: zp * 1000 })?;
        }
    }

    /// Every `step`-th float bit pattern from `start` (finite, infinite and NaN alike), in the
    /// order of their bits, for a few scales and zero points (the int32 wrap with a positive
    /// one, the largest zero point taken), every output type.
    fn sweep(start: u32, step: u32) {
        // 2^22 values at a time (the whole sweep does not fit in memory at step 1).
        let count = u64::from((u32::MAX - start) / step) + 1;
        for first in (0..count).step_by(1 << 22) {
            let x: Vec<f32> = (first..count.min(first + (1 << 22))).map(|i| f32::from_bits(start + i as u32 * step)).collect();
            sweep_part(&x);
        }
    }

    fn sweep_part(x: &[f32]) {
        for (scale, zp) in [(0.023_529_412f32, -3), (1.0, 5), (0.5, 0), (3e-6, 1 << 20), (1e-30, -7), (7.5e3, 127)] {
            let check = |q: QParams| {
                let (mut want8, mut want16) = (vec![0i8; x.len()], vec![0i16; x.len()]);
                quantize_seq(x, q, &mut want8);
                quantize_seq(x, q, &mut want16);
                for p in paths::<i8>(q) {
                    let mut got = vec![0i8; x.len()];
                    p.run(x, &mut got);
                    let bad = got.iter().zip(&want8).position(|(a, b)| a != b);
                    assert!(bad.is_none(), "{:?} scale {scale} zp {} at {:?}", p.path, q.zero_point, bad.map(|i| x[i]));
                }
                for p in paths::<i16>(q) {
                    let mut got = vec![0i16; x.len()];
                    p.run(x, &mut got);
                    let bad = got.iter().zip(&want16).position(|(a, b)| a != b);
                    assert!(bad.is_none(), "{:?} scale {scale} zp {} at {:?}", p.path, q.zero_point, bad.map(|i| x[i]));
                }
            };
            check(QParams { scale, zero_point: zp });
            let mut want = vec![0u8; x.len()];
            let q = QParams { scale, zero_point: zp.clamp(0, 255) };
            quantize_seq(x, q, &mut want);
            for p in paths::<u8>(q) {
                let mut got = vec![0u8; x.len()];
                p.run(x, &mut got);
                assert!(got == want, "{:?} scale {scale} zp {}", p.path, q.zero_point);
            }
        }
    }

    /// A strided sweep over all float bit patterns (about 4 million values).
    #[test]
    fn strided_sweep_matches_reference() {
        sweep(0, 1021);
        sweep(17, 4093);
    }

    /// Every float bit pattern (`cargo test --release -p nnrt-backend-cpu -- --ignored
    /// every_float`).
    #[test]
    #[ignore = "2^32 values per scale: minutes"]
    fn every_float_matches_reference() {
        sweep(0, 1);
    }

    #[test]
    fn refuses_what_the_proof_does_not_cover() {
        let q = |scale: f32, zero_point: i32| QParams { scale, zero_point };
        assert!(QuantizeF32::new::<i32>(q(1.0, 0)).is_none());
        assert!(QuantizeF32::new::<i8>(q(0.0, 0)).is_none());
        assert!(QuantizeF32::new::<i8>(q(-1.0, 0)).is_none());
        assert!(QuantizeF32::new::<i8>(q(f32::NAN, 0)).is_none());
        assert!(QuantizeF32::new::<i8>(q(1e-40, 0)).is_none());
        assert!(QuantizeF32::new::<i8>(q(3e38, 0)).is_none());
        assert!(QuantizeF32::new::<u8>(q(1.0, 1 << 25)).is_none());
    }
}
