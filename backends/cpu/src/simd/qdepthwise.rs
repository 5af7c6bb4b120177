//! The AVX-512 VNNI kernel of the 8-bit depthwise convolution (`quant::depthwise`, depth
//! multiplier 1): `vpdpbusd` adds the products of 4 taps per channel at once.
//!
//! For one output pixel and a block of 64 channels, the kernel loads the 64 input bytes of 4
//! taps, interleaves them so each 32-bit lane holds the 4 taps of one channel (two rounds of
//! byte/word unpacks, which leave the channels of the 4 result vectors in the order described
//! at [`DwVnni`]), and accumulates against weights packed in that order. Taps outside the image
//! (and the filler taps that round the tap count up to a multiple of 4) read a row that holds
//! the input zero point, so they add `(zx − zx)·w = 0`, as TFLite's skipped taps do. The
//! requantization runs on the registers in the same permuted order; one lane permutation puts
//! the output bytes back in channel order.
//!
//! With 32 channels or fewer, one vector holds 2 (17..=32 channels) or 4 (1..=16) neighbouring
//! output pixels, one per 256- or 128-bit part, so narrow layers do not run mostly empty lanes.
//!
//! Exactness: with `x' = x + ax`, `w' = w + aw` (bytes for `vpdpbusd`), `zx' = zx + ax`,
//! `zw' = zw + aw` and `T` taps, `Σ (x − zx)(w − zw) = Σ x'w' − zw'·Σx' − zx'·Σw' + T·zx'·zw'`
//! in wrapping `i32` arithmetic; the last two terms fold into the bias at prepare and `Σx'`
//! comes from a second `vpdpbusd` against ones when some `zw'` is not 0.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::quant::{Narrow, VnniToken};
use super::depthwise::DepthwiseGeom;

/// Channels per block (four vectors of 16 lanes).
pub(crate) const BLOCK: usize = 64;
/// Largest filter (in taps, rounded up to a multiple of 4) the kernel takes.
pub(crate) const MAX_TAPS: usize = 64;

/// A depthwise convolution prepared for [`row`].
///
/// Parameter arrays hold `BLOCK` entries per channel block in the kernel's register order:
/// entry `j * 16 + 4 * l + k` of a block (vector `j`, lane `4l + k`, 128-bit part `l`) is
/// channel `16 * (l % lp) + 4 * j + k` of the block, of pixel `l / lp` of the vector, where
/// `lp` = 128-bit parts per pixel = `4 / pixels` ([`DwVnni::pixels`]).
#[derive(Clone, Debug)]
pub(crate) struct DwVnni {
    /// Channels.
    pub c: usize,
    /// Groups of 4 taps.
    pub quads: usize,
    /// Output pixels per vector: 4 (≤ 16 channels), 2 (≤ 32) or 1 (then channel blocks of 64).
    pub pixels: usize,
    /// `w'` bytes: per block, per quad, per vector `j`, per lane, the 4 taps.
    pub w: crate::lines::Lines<i8>,
    /// Bias with `−zx'·Σw' + T·zx'·zw'` folded in.
    pub bias: Vec<i32>,
    /// `zw'` per channel, or empty when every `zw'` is 0.
    pub zw: Vec<i32>,
    /// Q31 multipliers.
    pub mult: Vec<i32>,
    /// Left shift of the requantization.
    pub left: Vec<i32>,
    /// Right shift of the requantization.
    pub right: Vec<i32>,
    /// Output zero point and clamp.
    pub out: (i32, i32, i32),
    /// Whether some channel shifts left.
    pub any_left: bool,
    /// `simd::quant::requant64`'s constants per slot, each 16-slot group split into its even
    /// and odd slots (see `LaneRequant::k`).
    pub k: Vec<i64>,
    pub corr: Vec<i64>,
    pub sh: Vec<i64>,
    /// Whether input bytes are signed (flipped to unsigned by xor 0x80).
    pub signed: bool,
    /// `BLOCK` rounded-up channels of the raw input zero point byte (what outside taps read).
    pub pad: Vec<u8>,
}

/// Output row `r` (`batch · out_h + oy`) of a depthwise convolution: `input` holds the raw input
/// bytes (NHWC), `out` the `out_w · c` output bytes of the row, int8 when `signed` (else uint8:
/// the epilogue's shortcuts depend on it, see `Narrow`).
pub(crate) fn row(t: VnniToken, p: &DwVnni, g: &DepthwiseGeom, input: &[u8], r: usize, out: &mut [u8], signed: bool) {
    let _ = t;
    assert!(g.multiplier == 1 && g.in_c == p.c && p.quads * 4 <= MAX_TAPS && g.k_h * g.k_w <= p.quads * 4);
    assert!(matches!((p.pixels, p.c), (1, _) | (2, 1..=32) | (4, 1..=16)));
    let blocks = p.c.div_ceil(BLOCK);
    assert!(out.len() >= g.out_w * p.c && r < g.batch * g.out_h && p.pad.len() >= blocks * BLOCK);
    assert!(p.w.len() >= blocks * p.quads * 4 * BLOCK);
    for v in [&p.bias, &p.mult, &p.left, &p.right] {
        assert!(v.len() >= blocks * BLOCK);
    }
    for v in [&p.k, &p.corr, &p.sh] {
        assert!(v.len() >= blocks * BLOCK);
    }
    assert!(p.zw.is_empty() || p.zw.len() >= blocks * BLOCK);
    // SAFETY: the token proves AVX-512 F/BW/VNNI; the asserts above bound the parameter reads
    // and the output row; `row_vnni` checks each input tap against `input.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        let n = Narrow::of(p.out, signed);
        macro_rules! go {
            ($px:literal) => {
                match (n.neg, n.sat) {
                    (true, true) => row_vnni::<$px, true, true>(p, g, input, r, out),
                    (true, false) => row_vnni::<$px, true, false>(p, g, input, r, out),
                    (false, true) => row_vnni::<$px, false, true>(p, g, input, r, out),
                    (false, false) => row_vnni::<$px, false, false>(p, g, input, r, out),
                }
            };
        }
        match p.pixels {
            4 => go!(4),
            2 => go!(2),
            _ => go!(1),
        }
    }
}

/// Loads the 4 taps' bytes of quad `q`, channels `c0 ..` under `mask`, for the `PX` pixels of
/// a vector, flipped to unsigned, into one vector each.
///
/// # Safety
/// Each `tp[px][4q + t]` must have the masked bytes from `c0` readable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn load_taps<const PX: usize>(tp: &[[*const u8; MAX_TAPS]; 4], q: usize, c0: usize, mask: __mmask64, flip: __m512i) -> [__m512i; 4] {
    let mut x = [_mm512_setzero_si512(); 4];
    for (t, xt) in x.iter_mut().enumerate() {
        let at = |px: usize| tp[px][4 * q + t] as *const i8;
        // SAFETY: the caller guarantees the masked bytes from each tap pointer.
        let v = unsafe {
            match PX {
                1 => _mm512_maskz_loadu_epi8(mask, at(0).add(c0)),
                2 => _mm512_inserti64x4::<1>(
                    _mm512_castsi256_si512(_mm256_maskz_loadu_epi8(mask as u32, at(0))),
                    _mm256_maskz_loadu_epi8(mask as u32, at(1)),
                ),
                _ => {
                    let m = mask as u16;
                    let lo = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(_mm_maskz_loadu_epi8(m, at(0))), _mm_maskz_loadu_epi8(m, at(1)));
                    let hi = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(_mm_maskz_loadu_epi8(m, at(2))), _mm_maskz_loadu_epi8(m, at(3)));
                    _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
                }
            }
        };
        *xt = _mm512_xor_si512(v, flip);
    }
    x
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn row_vnni<const PX: usize, const NEG: bool, const SAT: bool>(p: &DwVnni, g: &DepthwiseGeom, input: &[u8], r: usize, out: &mut [u8]) {
    let c = p.c;
    let (b, oy) = (r / g.out_h, r % g.out_h);
    let blocks = c.div_ceil(BLOCK);
    let mut tp = [[p.pad.as_ptr(); MAX_TAPS]; 4];
    let flip = _mm512_set1_epi8(if p.signed { -128 } else { 0 });
    let ones = _mm512_set1_epi8(1);
    let perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let has_zw = !p.zw.is_empty();
    // Offsets of the taps from the window's top-left input pixel, and whether every filter
    // row of this output row falls inside the image (then interior pixels skip the checks).
    let mut rel = [0usize; MAX_TAPS];
    for ky in 0..g.k_h {
        for kx in 0..g.k_w {
            rel[ky * g.k_w + kx] = (ky * g.dil_h * g.in_w + kx * g.dil_w) * c;
        }
    }
    let iy0 = (oy * g.stride_h) as isize - g.pad_top as isize;
    let rows_inside = iy0 >= 0 && iy0 as usize + (g.k_h - 1) * g.dil_h < g.in_h;
    let span_w = (g.k_w - 1) * g.dil_w;
    for ox0 in (0..g.out_w).step_by(PX) {
        for (px, tpx) in tp.iter_mut().enumerate().take(PX) {
            let ox = ox0 + px;
            let ix0 = (ox * g.stride_w) as isize - g.pad_left as isize;
            if rows_inside && ox < g.out_w && ix0 >= 0 && ix0 as usize + span_w < g.in_w {
                let base = ((b * g.in_h + iy0 as usize) * g.in_w + ix0 as usize) * c;
                // The last tap is the window's bottom-right pixel: `base + rel[last] + c` bounds
                // every tap of the window.
                if base + rel[g.k_h * g.k_w - 1] + c <= input.len() {
                    for (t, &r) in tpx.iter_mut().zip(&rel).take(g.k_h * g.k_w) {
                        // SAFETY: `base + r + c <= base + rel[last] + c <= input.len()`.
                        *t = unsafe { input.as_ptr().add(base + r) };
                    }
                    continue;
                }
            }
            for ky in 0..g.k_h {
                let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
                for kx in 0..g.k_w {
                    let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                    let inside = ox < g.out_w && iy >= 0 && (iy as usize) < g.in_h && ix >= 0 && (ix as usize) < g.in_w;
                    let off = ((b * g.in_h + iy.max(0) as usize) * g.in_w + ix.max(0) as usize) * c;
                    tpx[ky * g.k_w + kx] = if inside && off + c <= input.len() {
                        // SAFETY: `off + c <= input.len()`: the tap's channels lie inside `input`.
                        unsafe { input.as_ptr().add(off) }
                    } else {
                        p.pad.as_ptr()
                    };
                }
            }
        }
        for blk in 0..blocks {
            let c0 = blk * BLOCK;
            let n = (c - c0).min(BLOCK);
            let mask: __mmask64 = if n == BLOCK { !0 } else { (1u64 << n) - 1 };
            let mut acc = [_mm512_setzero_si512(); 4];
            let mut sum = [_mm512_setzero_si512(); 4];
            for q in 0..p.quads {
                // SAFETY: each tap pointer has `c` readable bytes from it (input taps checked
                // above, the pad row holds `blocks * BLOCK`); the mask keeps lanes `< n`, so
                // bytes `c0 .. c0 + n <= c` are read (for PX > 1, c0 = 0 and n = c). Weights:
                // block `blk`, quad `q` lie within `blocks * quads * 4 * BLOCK` (asserted by `row`).
                unsafe {
                    let [x0, x1, x2, x3] = load_taps::<PX>(&tp, q, c0, mask, flip);
                    let (lo01, hi01) = (_mm512_unpacklo_epi8(x0, x1), _mm512_unpackhi_epi8(x0, x1));
                    let (lo23, hi23) = (_mm512_unpacklo_epi8(x2, x3), _mm512_unpackhi_epi8(x2, x3));
                    let v = [
                        _mm512_unpacklo_epi16(lo01, lo23),
                        _mm512_unpackhi_epi16(lo01, lo23),
                        _mm512_unpacklo_epi16(hi01, hi23),
                        _mm512_unpackhi_epi16(hi01, hi23),
                    ];
                    let wp = p.w.as_ptr().add((blk * p.quads + q) * 4 * BLOCK);
                    for j in 0..4 {
                        let w = _mm512_loadu_si512(wp.add(j * BLOCK) as *const _);
                        acc[j] = _mm512_dpbusd_epi32(acc[j], v[j], w);
                        if has_zw {
                            sum[j] = _mm512_dpbusd_epi32(sum[j], v[j], ones);
                        }
                    }
                }
            }
            let mut bytes = [_mm_setzero_si128(); 4];
            for j in 0..4 {
                let o = c0 + j * 16;
                // SAFETY: `o + 16 <= blocks * BLOCK`, within every parameter array (asserted).
                unsafe {
                    let ld = |v: &Vec<i32>| v.as_ptr().add(o) as *const __m512i;
                    let mut x = _mm512_add_epi32(acc[j], _mm512_loadu_si512(ld(&p.bias) as *const _));
                    if has_zw {
                        x = _mm512_sub_epi32(x, _mm512_mullo_epi32(_mm512_loadu_si512(ld(&p.zw) as *const _), sum[j]));
                    }
                    if p.any_left {
                        x = _mm512_sllv_epi32(x, _mm512_loadu_si512(ld(&p.left) as *const _));
                    }
                    let mult = _mm512_loadu_si512(ld(&p.mult) as *const _);
                    let ld64 = |v: &Vec<i64>, parity: usize| _mm512_loadu_si512(v.as_ptr().add(o + 8 * parity) as *const _);
                    let sh = _mm512_or_si512(ld64(&p.sh, 0), _mm512_slli_epi64::<32>(ld64(&p.sh, 1)));
                    let q = super::quant::requant64::<NEG>(x, mult, _mm512_srli_epi64::<32>(mult), [ld64(&p.k, 0), ld64(&p.k, 1)], [ld64(&p.corr, 0), ld64(&p.corr, 1)], sh);
                    bytes[j] = super::quant::narrow_q::<SAT>(q, p.out);
                }
            }
            let z = _mm512_inserti32x4::<3>(
                _mm512_inserti32x4::<2>(_mm512_inserti32x4::<1>(_mm512_castsi128_si512(bytes[0]), bytes[1]), bytes[2]),
                bytes[3],
            );
            let z = _mm512_permutexvar_epi32(perm, z);
            let base = out.as_mut_ptr();
            let dst = |px: usize| base.wrapping_add((ox0 + px) * c + c0) as *mut i8;
            // SAFETY: pixel `ox0 + px < out_w` (checked) writes its `n` bytes at
            // `(ox0 + px) * c + c0 .. + n <= out_w * c <= out.len()` (asserted by `row`).
            unsafe {
                match PX {
                    1 => _mm512_mask_storeu_epi8(dst(0), mask, z),
                    2 => {
                        _mm256_mask_storeu_epi8(dst(0), mask as u32, _mm512_castsi512_si256(z));
                        if ox0 + 1 < g.out_w {
                            _mm256_mask_storeu_epi8(dst(1), mask as u32, _mm512_extracti64x4_epi64::<1>(z));
                        }
                    }
                    _ => {
                        let parts = [_mm512_castsi512_si128(z), _mm512_extracti32x4_epi32::<1>(z), _mm512_extracti32x4_epi32::<2>(z), _mm512_extracti32x4_epi32::<3>(z)];
                        for (px, part) in parts.into_iter().enumerate() {
                            if ox0 + px < g.out_w {
                                _mm_mask_storeu_epi8(dst(px), mask as u16, part);
                            }
                        }
                    }
                }
            }
        }
    }
}

