//! AVX-512 rows of two smaller quantized ops: uint8 RESIZE_BILINEAR (16 channels of a pixel per
//! step, the reference's float expression lane by lane) and ARG_MAX/ARG_MIN of 8-bit rows of at
//! most 64 values (one masked load, a horizontal maximum, the first lane equal to it). The
//! portable code in `quant::misc` is their twin.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

cpu_token!(
    /// Proof that this CPU runs AVX-512 F/BW/VL (and `NNRT_ISA` allows AVX-512).
    BwToken: "avx512f", "avx512bw", "avx512vl"; isa >= super::Isa::Avx512
);

/// One output row of uint8 RESIZE_BILINEAR: for each `(x0, x1, dx)` of `cols`, the `c`
/// channels `r0[x0]·(1−dy)·(1−dx) + r1[x0]·dy·(1−dx) + r0[x1]·(1−dy)·dx + r1[x1]·dy·dx + 0.5`
/// (in that order), saturated to bytes like Rust's `as u8`.
pub(crate) fn resize_u8_row(t: BwToken, r0: &[u8], r1: &[u8], cols: &[(usize, usize, f32)], c: usize, dy: f32, out: &mut [u8]) {
    let _ = t;
    assert!(out.len() >= cols.len() * c);
    assert!(cols.iter().all(|&(x0, x1, _)| x0.max(x1) * c + c <= r0.len().min(r1.len())));
    // SAFETY: the token proves the features; the asserts bound every pixel read and write.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        resize_row_avx512(r0.as_ptr(), r1.as_ptr(), cols, c, dy, out.as_mut_ptr());
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn resize_row_avx512(r0: *const u8, r1: *const u8, cols: &[(usize, usize, f32)], c: usize, dy: f32, out: *mut u8) {
    let (vdy, vny) = (_mm512_set1_ps(dy), _mm512_set1_ps(1.0 - dy));
    let (zero, top, half) = (_mm512_setzero_ps(), _mm512_set1_ps(255.0), _mm512_set1_ps(0.5));
    for (px, &(x0, x1, dx)) in cols.iter().enumerate() {
        let (vdx, vnx) = (_mm512_set1_ps(dx), _mm512_set1_ps(1.0 - dx));
        let mut ch = 0;
        while ch < c {
            let mask = (((1u32 << (c - ch).min(16)) - 1) & 0xFFFF) as u16;
            let m = if c - ch >= 16 { 0xFFFF } else { mask };
            // SAFETY: channels `ch .. ch + popcount(m) <= c` of pixels x0, x1 in rows r0, r1 and
            // of output pixel `px` are in bounds (checked by the caller).
            unsafe {
                let ld = |p: *const u8| _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p.add(ch) as *const i8)));
                let (a00, a10, a01, a11) = (ld(r0.add(x0 * c)), ld(r1.add(x0 * c)), ld(r0.add(x1 * c)), ld(r1.add(x1 * c)));
                let t0 = _mm512_mul_ps(_mm512_mul_ps(a00, vny), vnx);
                let t1 = _mm512_mul_ps(_mm512_mul_ps(a10, vdy), vnx);
                let t2 = _mm512_mul_ps(_mm512_mul_ps(a01, vny), vdx);
                let t3 = _mm512_mul_ps(_mm512_mul_ps(a11, vdy), vdx);
                let v = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(t0, t1), t2), t3), half);
                // max(v, 0) yields 0 for NaN, as `as u8` does.
                let v = _mm512_min_ps(_mm512_max_ps(v, zero), top);
                _mm512_mask_cvtepi32_storeu_epi8(out.add(px * c + ch) as *mut _, m, _mm512_cvttps_epi32(v));
            }
            ch += 16;
        }
    }
}

/// ARG_MAX (or ARG_MIN when `min`) of each `n`-byte row of `input` (`1 ≤ n ≤ 64`): the first
/// index of the extreme, through `put`. `signed` reads the bytes as `i8`.
pub(crate) fn arg_extreme_rows<O>(t: BwToken, input: &[u8], n: usize, signed: bool, min: bool, out: &mut [O], put: &(impl Fn(usize) -> O + Sync)) {
    let _ = t;
    assert!((1..=64).contains(&n) && input.len() >= out.len() * n);
    // Order-preserving map to unsigned bytes; the complement turns the minimum into a maximum.
    let flip = (if signed { 0x80u8 } else { 0 }) ^ (if min { 0xFF } else { 0 });
    // SAFETY: the token proves the features; row `i < out.len()` reads `n` bytes at `i * n`,
    // inside `input` (asserted).
    #[cfg(target_arch = "x86_64")]
    unsafe {
        arg_rows_avx512(input.as_ptr(), n, flip, out, put)
    };
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn arg_rows_avx512<O>(input: *const u8, n: usize, flip: u8, out: &mut [O], put: &impl Fn(usize) -> O) {
    let mask: __mmask64 = if n == 64 { !0 } else { (1u64 << n) - 1 };
    let vflip = _mm512_set1_epi8(flip as i8);
    for (i, o) in out.iter_mut().enumerate() {
        // SAFETY: bytes `i * n .. i * n + n` are inside the input (checked by the caller).
        let raw = unsafe { _mm512_maskz_loadu_epi8(mask, input.add(i * n) as *const i8) };
        // Lanes past `n` hold 0, the smallest unsigned byte: they never beat a real lane, and
        // the equality below only looks at real lanes.
        let x = _mm512_maskz_mov_epi8(mask, _mm512_xor_si512(raw, vflip));
        let m256 = _mm256_max_epu8(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64::<1>(x));
        let mut m = _mm_max_epu8(_mm256_castsi256_si128(m256), _mm256_extracti128_si256::<1>(m256));
        m = _mm_max_epu8(m, _mm_srli_si128::<8>(m));
        m = _mm_max_epu8(m, _mm_srli_si128::<4>(m));
        m = _mm_max_epu8(m, _mm_srli_si128::<2>(m));
        m = _mm_max_epu8(m, _mm_srli_si128::<1>(m));
        let best = _mm512_broadcastb_epi8(m);
        let hit = _mm512_mask_cmpeq_epi8_mask(mask, x, best);
        *o = put(hit.trailing_zeros() as usize);
    }
}

/// The smallest and largest of `start` and `values`, NaNs skipped (as `f32::min` / `max` skip
/// them): `vminps(c, lo)` is `c < lo ? c : lo`, which keeps `lo` for a NaN `c`. Four pairs of
/// accumulators hide the instructions' latency. Min and max are exact, so the order does not
/// change the result. (The compare-and-select loop of `quant::hybrid`, compiled for AVX-512,
/// came out as one 32-lane vector of both accumulators, permuted and masked every 16 values:
/// 14 % of a dynamic-range MobileNetV2's run.) Also says whether some value is NaN.
pub(crate) fn min_max_f32(t: super::WideToken, values: &[f32], start: (f32, f32)) -> (f32, f32, bool) {
    let _ = t;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves AVX-512 F; the function reads `values` only.
    unsafe {
        min_max_avx512(values, start)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let (lo, hi) = values.iter().fold(start, |(lo, hi), &v| (lo.min(v), hi.max(v)));
        (lo, hi, values.iter().any(|v| v.is_nan()))
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn min_max_avx512(values: &[f32], start: (f32, f32)) -> (f32, f32, bool) {
    let mut lo = [_mm512_set1_ps(start.0); 4];
    let mut hi = [_mm512_set1_ps(start.1); 4];
    let mut nan: __mmask16 = 0;
    let blocks = values.chunks_exact(64);
    let rest = blocks.remainder();
    for b in blocks {
        for j in 0..4 {
            // SAFETY: `b` holds 64 values; lanes 16j .. 16j + 16 are inside it.
            let c = unsafe { _mm512_loadu_ps(b.as_ptr().add(16 * j)) };
            lo[j] = _mm512_min_ps(c, lo[j]);
            hi[j] = _mm512_max_ps(c, hi[j]);
            nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(c, c);
        }
    }
    let vecs = rest.chunks_exact(16);
    let tail = vecs.remainder();
    for c in vecs {
        // SAFETY: `c` holds 16 values.
        let c = unsafe { _mm512_loadu_ps(c.as_ptr()) };
        lo[0] = _mm512_min_ps(c, lo[0]);
        hi[0] = _mm512_max_ps(c, hi[0]);
        nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(c, c);
    }
    let l = _mm512_min_ps(_mm512_min_ps(lo[0], lo[1]), _mm512_min_ps(lo[2], lo[3]));
    let h = _mm512_max_ps(_mm512_max_ps(hi[0], hi[1]), _mm512_max_ps(hi[2], hi[3]));
    let (mut ls, mut hs) = ([0f32; 16], [0f32; 16]);
    // SAFETY: 16 floats each.
    unsafe {
        _mm512_storeu_ps(ls.as_mut_ptr(), l);
        _mm512_storeu_ps(hs.as_mut_ptr(), h);
    }
    let mut out = start;
    for (&a, &b) in ls.iter().zip(&hs) {
        out = (out.0.min(a), out.1.max(b));
    }
    for &v in tail {
        out = (out.0.min(v), out.1.max(v));
    }
    (out.0, out.1, nan != 0 || tail.iter().any(|v| v.is_nan()))
}

/// [`min_max_f32`] on AVX2: four pairs of 8-lane accumulators, the same rule per lane.
pub(crate) fn min_max_f32_avx2(t: super::Avx2Token, values: &[f32], start: (f32, f32)) -> (f32, f32, bool) {
    let _ = t;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves AVX2; the function reads `values` only.
    unsafe {
        min_max_avx2(values, start)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let (lo, hi) = values.iter().fold(start, |(lo, hi), &v| (lo.min(v), hi.max(v)));
        (lo, hi, values.iter().any(|v| v.is_nan()))
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn min_max_avx2(values: &[f32], start: (f32, f32)) -> (f32, f32, bool) {
    let mut lo = [_mm256_set1_ps(start.0); 4];
    let mut hi = [_mm256_set1_ps(start.1); 4];
    let mut nan = _mm256_setzero_ps();
    let blocks = values.chunks_exact(32);
    let rest = blocks.remainder();
    for b in blocks {
        for j in 0..4 {
            // SAFETY: `b` holds 32 values; lanes 8j .. 8j + 8 are inside it.
            let c = unsafe { _mm256_loadu_ps(b.as_ptr().add(8 * j)) };
            lo[j] = _mm256_min_ps(c, lo[j]);
            hi[j] = _mm256_max_ps(c, hi[j]);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(c, c));
        }
    }
    let vecs = rest.chunks_exact(8);
    let tail = vecs.remainder();
    for c in vecs {
        // SAFETY: `c` holds 8 values.
        let c = unsafe { _mm256_loadu_ps(c.as_ptr()) };
        lo[0] = _mm256_min_ps(c, lo[0]);
        hi[0] = _mm256_max_ps(c, hi[0]);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(c, c));
    }
    let l = _mm256_min_ps(_mm256_min_ps(lo[0], lo[1]), _mm256_min_ps(lo[2], lo[3]));
    let h = _mm256_max_ps(_mm256_max_ps(hi[0], hi[1]), _mm256_max_ps(hi[2], hi[3]));
    let (mut ls, mut hs) = ([0f32; 8], [0f32; 8]);
    // SAFETY: 8 floats each.
    unsafe {
        _mm256_storeu_ps(ls.as_mut_ptr(), l);
        _mm256_storeu_ps(hs.as_mut_ptr(), h);
    }
    let mut out = start;
    for (&a, &b) in ls.iter().zip(&hs) {
        out = (out.0.min(a), out.1.max(b));
    }
    for &v in tail {
        out = (out.0.min(v), out.1.max(v));
    }
    (out.0, out.1, _mm256_movemask_ps(nan) != 0 || tail.iter().any(|v| v.is_nan()))
}

/// The vector part of a dynamic-range activation quantization (`quant::hybrid`'s NEON loop
/// as LiteRT's x86 packages run it), 16 values at a time: `out[i] = clamp(offset +
/// trunc(t + copysign(½, t)), low, 127) ^ flip` with `t = values[i] · inv`, where the
/// truncation saturates as Rust's `as i32` does (`vcvttps2dq` gives `i32::MIN` for every
/// value out of range: fixed to `i32::MAX` at or above 2³¹ and to 0 for NaN) and the sum with
/// the offset wraps. `small` promises every `|t|` below 2²⁴ (no NaN; the caller knows the
/// range): then no lane needs the fixes and the sum cannot wrap. Returns how many values it did
/// (a multiple of 16); the caller does the rest.
#[allow(clippy::too_many_arguments)]
pub(crate) fn quantize_neon_f32(t: super::WideToken, values: &[f32], out: &mut [i8], inv: f32, offset: i32, low: i32, flip: i8, small: bool) -> usize {
    let _ = t;
    let n = values.len().min(out.len()) / 16 * 16;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL; `n` values are read and `n` bytes written.
    unsafe {
        match small {
            true => quantize_neon_avx512::<true>(values.as_ptr(), out.as_mut_ptr(), n, inv, offset, low, flip),
            false => quantize_neon_avx512::<false>(values.as_ptr(), out.as_mut_ptr(), n, inv, offset, low, flip),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    return 0;
    n
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn quantize_neon_avx512<const SMALL: bool>(x: *const f32, out: *mut i8, n: usize, inv: f32, offset: i32, low: i32, flip: i8) {
    let (vinv, sign, half) = (_mm512_set1_ps(inv), _mm512_set1_ps(-0.0), _mm512_set1_ps(0.5));
    let (big, max) = (_mm512_set1_ps(2_147_483_648.0), _mm512_set1_epi32(i32::MAX));
    let (voff, vlow) = (_mm512_set1_epi32(offset), _mm512_set1_epi32(low));
    let vflip = _mm_set1_epi8(flip);
    for i in (0..n).step_by(16) {
        // SAFETY: i + 16 <= n values and bytes (caller).
        let t = _mm512_mul_ps(unsafe { _mm512_loadu_ps(x.add(i)) }, vinv);
        let u = _mm512_add_ps(t, _mm512_or_ps(_mm512_and_ps(t, sign), half));
        let mut q = _mm512_cvttps_epi32(u);
        if !SMALL {
            q = _mm512_mask_mov_epi32(q, _mm512_cmp_ps_mask::<_CMP_GE_OQ>(u, big), max);
            q = _mm512_mask_mov_epi32(q, _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(u, u), _mm512_setzero_si512());
        }
        // The clamp's upper bound (127) is the saturating narrow's.
        let q = _mm512_max_epi32(_mm512_add_epi32(q, voff), vlow);
        // SAFETY: as above.
        unsafe { _mm_storeu_si128(out.add(i) as *mut __m128i, _mm_xor_si128(_mm512_cvtsepi32_epi8(q), vflip)) };
    }
}

/// [`quantize_neon_f32`] on AVX2, 32 values a step (four vectors, saturating packs and one
/// permute), then 8 at a time; returns how many values it did (a multiple of 8).
#[allow(clippy::too_many_arguments)]
pub(crate) fn quantize_neon_f32_avx2(t: super::Avx2Token, values: &[f32], out: &mut [i8], inv: f32, offset: i32, low: i32, flip: i8, small: bool) -> usize {
    let _ = t;
    let n = values.len().min(out.len()) / 8 * 8;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves AVX2; `n` values are read and `n` bytes written.
    unsafe {
        match small {
            true => quantize_neon_avx2::<true>(values.as_ptr(), out.as_mut_ptr(), n, inv, offset, low, flip),
            false => quantize_neon_avx2::<false>(values.as_ptr(), out.as_mut_ptr(), n, inv, offset, low, flip),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    return 0;
    n
}

/// Eight lanes of [`quantize_neon_avx512`]'s arithmetic: `max(offset + trunc(t + copysign(½,
/// t)), low)` as int32, with the out-of-range fixes unless `SMALL`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn quantize_lanes_avx2<const SMALL: bool>(x: __m256, vinv: __m256, voff: __m256i, vlow: __m256i) -> __m256i {
    let (sign, half) = (_mm256_set1_ps(-0.0), _mm256_set1_ps(0.5));
    let t = _mm256_mul_ps(x, vinv);
    let u = _mm256_add_ps(t, _mm256_or_ps(_mm256_and_ps(t, sign), half));
    let mut q = _mm256_cvttps_epi32(u);
    if !SMALL {
        let big = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(u, _mm256_set1_ps(2_147_483_648.0)));
        q = _mm256_blendv_epi8(q, _mm256_set1_epi32(i32::MAX), big);
        q = _mm256_andnot_si256(_mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(u, u)), q);
    }
    _mm256_max_epi32(_mm256_add_epi32(q, voff), vlow)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_neon_avx2<const SMALL: bool>(x: *const f32, out: *mut i8, n: usize, inv: f32, offset: i32, low: i32, flip: i8) {
    let vinv = _mm256_set1_ps(inv);
    let (voff, vlow) = (_mm256_set1_epi32(offset), _mm256_set1_epi32(low));
    let vflip = _mm256_set1_epi8(flip);
    // The packs interleave 128-bit lanes: dwords of four values come out as q0a q1a q2a q3a |
    // q0b q1b q2b q3b (a, b: each vector's low and high four); this puts them back in order.
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: i + 32 <= n values (caller).
        let q: [__m256i; 4] = std::array::from_fn(|v| quantize_lanes_avx2::<SMALL>(unsafe { _mm256_loadu_ps(x.add(i + 8 * v)) }, vinv, voff, vlow));
        // The clamp's upper bound (127) is the saturating narrow's.
        let b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        let b = _mm256_xor_si256(_mm256_permutevar8x32_epi32(b, order), vflip);
        // SAFETY: i + 32 <= n bytes (caller).
        unsafe { _mm256_storeu_si256(out.add(i) as *mut __m256i, b) };
        i += 32;
    }
    while i + 8 <= n {
        // SAFETY: i + 8 <= n values (caller).
        let q = quantize_lanes_avx2::<SMALL>(unsafe { _mm256_loadu_ps(x.add(i)) }, vinv, voff, vlow);
        let w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256::<1>(q));
        let b = _mm_xor_si128(_mm_packs_epi16(w, w), _mm256_castsi256_si128(vflip));
        // SAFETY: i + 8 <= n bytes (caller).
        unsafe { _mm_storel_epi64(out.add(i) as *mut __m128i, b) };
        i += 8;
    }
}
