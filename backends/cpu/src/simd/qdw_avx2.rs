//! The AVX2 kernel of the 8-bit depthwise convolution (`quant::depthwise`, depth multiplier 1,
//! TFLite's fixed-point requantization) for CPUs without AVX-512 VNNI.
//!
//! For one output pixel and a block of 16 channels, two taps at a time: each tap's 16 input
//! bytes are widened to 16 bits and the input zero point taken off (`x − zx` fits 16 bits),
//! the two taps interleaved per channel (`vpunpcklwd` / `vpunpckhwd`) and multiplied against
//! `w − zw` packed in that order with `vpmaddwd`, which adds each channel's two products
//! exactly. An odd last tap pairs with a zero weight. Taps outside the image read a row that
//! holds the input zero point, so they add `(zx − zx)·w = 0`, as TFLite's skipped taps do.
//! The accumulators hold channels 0–3 and 8–11, and 4–7 and 12–15 (the unpacks' lane order);
//! the per-channel requantization parameters are packed in that order, and the saturating
//! packs that narrow the results put the channels back in order. The requantization is
//! `qpair`'s `MultiplyByQuantizedMultiplier` on 8 lanes.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::depthwise::DepthwiseGeom;
use super::quant::Avx2Token;

/// Channels per block.
const B: usize = 16;
/// Largest filter (in taps) the kernel takes.
pub(crate) const MAX_TAPS: usize = 64;

/// The channel of slot `s` (0..16) of a block: slots 0–7 are the first accumulator's lanes
/// (channels 0–3, 8–11), slots 8–15 the second's (4–7, 12–15).
fn slot_channel(s: usize) -> usize {
    let (v, l) = (s / 8, s % 8);
    4 * v + (l % 4) + 8 * (l / 4)
}

/// A depthwise convolution packed for [`row`].
#[derive(Clone, Debug)]
pub(crate) struct DwPair {
    c: usize,
    taps: usize,
    /// Per block and tap pair, 32 weights `w − zw` in the unpacks' order.
    w: Vec<i16>,
    /// Per block, 16 slots each (see [`slot_channel`]).
    bias: Vec<i32>,
    mult: Vec<i32>,
    left: Vec<i32>,
    right: Vec<i32>,
    mask: Vec<i32>,
    half: Vec<i32>,
    any_left: bool,
    /// The input zero point, the row taps outside the image read (its type's bytes), and the
    /// output zero point and clamp.
    zx: i32,
    pad: Vec<u8>,
    out: (i32, i32, i32),
}

impl DwPair {
    /// Packs a depthwise convolution of `c` channels and `taps` taps: `wz[t * c + ch]` is
    /// `w − zw`, `bias` and `(multiplier, shift)` per channel, `zx` the input zero point
    /// (`zx_byte` its byte), `out` the output zero point and clamp.
    pub(crate) fn new(c: usize, taps: usize, wz: &[i16], bias: &[i32], requant: &[(i32, i32)], zx: i32, zx_byte: u8, out: (i32, i32, i32)) -> Option<DwPair> {
        if !(1..=MAX_TAPS).contains(&taps) || wz.len() < taps * c || bias.len() < c || requant.len() < c {
            return None;
        }
        let blocks = c.div_ceil(B);
        let pairs = taps.div_ceil(2);
        let mut w = vec![0i16; blocks * pairs * 2 * B];
        for blk in 0..blocks {
            for p in 0..pairs {
                let at = (blk * pairs + p) * 2 * B;
                // Lanes of vpunpcklwd(x0, x1) then vpunpckhwd(x0, x1): per 128-bit half, four
                // channels with their two taps interleaved.
                for (i, d) in w[at..at + 2 * B].iter_mut().enumerate() {
                    let (v, l) = (i / B, i % B);
                    let (half, j, t) = (l / 8, (l % 8) / 2, l % 2);
                    let ch = blk * B + 8 * half + 4 * v + j;
                    let tap = 2 * p + t;
                    if ch < c && tap < taps {
                        *d = wz[tap * c + ch];
                    }
                }
            }
        }
        let slots = blocks * B;
        let per_slot = |f: &dyn Fn(usize) -> i32| -> Vec<i32> { (0..slots).map(|s| s / B * B + slot_channel(s % B)).map(|ch| if ch < c { f(ch) } else { 0 }).collect() };
        let sh = |ch: usize| super::qpair::shifts(requant[ch].1);
        Some(DwPair {
            c,
            taps,
            w,
            bias: per_slot(&|ch| bias[ch]),
            mult: per_slot(&|ch| requant[ch].0),
            left: per_slot(&|ch| sh(ch).0),
            right: per_slot(&|ch| sh(ch).1),
            mask: per_slot(&|ch| sh(ch).2),
            half: per_slot(&|ch| sh(ch).3),
            any_left: requant.iter().take(c).any(|r| r.1 > 0),
            zx,
            pad: vec![zx_byte; slots],
            out,
        })
    }
}

/// Output row `r` (batch · out_h + oy) of a depthwise convolution with multiplier 1: `input`
/// holds the NHWC input bytes (int8 when `signed_in`, else uint8), `out` the `out_w · c`
/// output bytes of the row (int8 when `signed_out`).
pub(crate) fn row(t: Avx2Token, p: &DwPair, g: &DepthwiseGeom, input: &[u8], signed_in: bool, r: usize, out: &mut [u8], signed_out: bool) {
    let _ = t;
    let blocks = p.c.div_ceil(B);
    let slots = blocks * B;
    assert!(g.multiplier == 1 && g.in_c == p.c && p.taps == g.k_h * g.k_w && (1..=MAX_TAPS).contains(&p.taps));
    assert!(out.len() >= g.out_w * p.c && r < g.batch * g.out_h && input.len() >= g.input_len() && p.pad.len() >= slots);
    assert!(p.w.len() >= blocks * p.taps.div_ceil(2) * 2 * B);
    for v in [&p.bias, &p.mult, &p.left, &p.right, &p.mask, &p.half] {
        assert!(v.len() >= slots);
    }
    let (b, oy) = (r / g.out_h, r % g.out_h);
    let mut tab = [std::ptr::null::<u8>(); MAX_TAPS];
    for ox in 0..g.out_w {
        // The taps' rows: in the image, or the zero-point row. Every one holds `c` bytes, and
        // the zero-point row whole blocks.
        for ky in 0..g.k_h {
            let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
            for kx in 0..g.k_w {
                let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                let inside = iy >= 0 && (iy as usize) < g.in_h && ix >= 0 && (ix as usize) < g.in_w;
                tab[ky * g.k_w + kx] = match inside {
                    true => input[((b * g.in_h + iy as usize) * g.in_w + ix as usize) * g.in_c..][..g.in_c].as_ptr(),
                    false => p.pad.as_ptr(),
                };
            }
        }
        let o = &mut out[ox * p.c..(ox + 1) * p.c];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the token proves AVX2; every tap address holds `c` readable bytes (a pixel of
        // the input, sliced above, or the zero-point row of whole blocks), the parameters hold
        // every block's slots and the weights every block's pairs (asserted), `o` the pixel's
        // `c` outputs.
        unsafe {
            match (signed_in, signed_out) {
                (true, true) => pixel::<true, true>(p, &tab[..p.taps], o.as_mut_ptr()),
                (true, false) => pixel::<true, false>(p, &tab[..p.taps], o.as_mut_ptr()),
                (false, true) => pixel::<false, true>(p, &tab[..p.taps], o.as_mut_ptr()),
                (false, false) => pixel::<false, false>(p, &tab[..p.taps], o.as_mut_ptr()),
            }
        }
    }
}

/// One output pixel: every block of 16 channels over the taps at `tab`.
///
/// # Safety
/// AVX2; `tab`'s addresses hold `p.c` readable bytes each; `out` has `p.c` writable bytes; the
/// parameters and weights hold every block (see [`row`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pixel<const SIGNED_IN: bool, const SIGNED_OUT: bool>(p: &DwPair, tab: &[*const u8], out: *mut u8) {
    let c = p.c;
    let pairs = p.taps.div_ceil(2);
    let zx = _mm256_set1_epi16(p.zx as i16);
    let q = (_mm256_set1_epi32(p.out.0), _mm256_set1_epi32(p.out.1), _mm256_set1_epi32(p.out.2));
    for blk in 0..c.div_ceil(B) {
        let ch = blk * B;
        let mut acc = [_mm256_setzero_si256(); 2];
        // SAFETY: block blk's weights: `pairs` groups of 32 (contract).
        let wb = unsafe { p.w.as_ptr().add(blk * pairs * 2 * B) };
        for k in 0..pairs {
            // SAFETY: every tap address holds `c` bytes (contract).
            let (x0, x1) = unsafe {
                let x0 = load::<SIGNED_IN>(tab[2 * k], ch, c, zx);
                (x0, if 2 * k + 1 < tab.len() { load::<SIGNED_IN>(tab[2 * k + 1], ch, c, zx) } else { _mm256_setzero_si256() })
            };
            // SAFETY: pair k < pairs of the block.
            let (w0, w1) = unsafe { (_mm256_loadu_si256(wb.add(k * 2 * B) as *const __m256i), _mm256_loadu_si256(wb.add(k * 2 * B + B) as *const __m256i)) };
            acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), w0));
            acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), w1));
        }
        let mut v = [_mm256_setzero_si256(); 2];
        for (h, vh) in v.iter_mut().enumerate() {
            let s = blk * B + 8 * h;
            macro_rules! ld {
                ($v:expr) => {
                    // SAFETY: slots s .. s + 8 of the block exist (contract).
                    unsafe { _mm256_loadu_si256($v.as_ptr().add(s) as *const __m256i) }
                };
            }
            let mult = ld!(p.mult);
            let params = super::qpair::Lanes8 {
                mult,
                mult_odd: _mm256_srli_epi64::<32>(mult),
                left: ld!(p.left),
                right: ld!(p.right),
                mask: ld!(p.mask),
                half: ld!(p.half),
            };
            *vh = super::qpair::requant_lanes(_mm256_add_epi32(acc[h], ld!(p.bias)), &params, p.any_left, q);
        }
        // [0–3, 8–11] and [4–7, 12–15] pack to channels 0–7 | 8–15 as 16-bit values.
        let w = _mm256_packs_epi32(v[0], v[1]);
        let (lo, hi) = (_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w));
        let bytes = if SIGNED_OUT { _mm_packs_epi16(lo, hi) } else { _mm_packus_epi16(lo, hi) };
        // SAFETY: the pixel's outputs ch .. min(ch + 16, c) (contract).
        unsafe {
            if ch + B <= c {
                _mm_storeu_si128(out.add(ch) as *mut __m128i, bytes);
            } else {
                let mut tmp = [0u8; B];
                _mm_storeu_si128(tmp.as_mut_ptr() as *mut __m128i, bytes);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), out.add(ch), c - ch);
            }
        }
    }
}

/// 16 input bytes of a tap at channel `ch`, widened, less the zero point `zx`; a partial block
/// goes through a zeroed copy (its lanes past `c` meet zero weights).
///
/// # Safety
/// AVX2; `at` holds `c > ch` readable bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load<const SIGNED: bool>(at: *const u8, ch: usize, c: usize, zx: __m256i) -> __m256i {
    // SAFETY: the contract; whole blocks read 16 bytes from `ch`, partial ones `c − ch`.
    let v = unsafe {
        if ch + B <= c {
            _mm_loadu_si128(at.add(ch) as *const __m128i)
        } else {
            let mut tmp = [0u8; B];
            std::ptr::copy_nonoverlapping(at.add(ch), tmp.as_mut_ptr(), c - ch);
            _mm_loadu_si128(tmp.as_ptr() as *const __m128i)
        }
    };
    let w = if SIGNED { _mm256_cvtepi8_epi16(v) } else { _mm256_cvtepu8_epi16(v) };
    _mm256_sub_epi16(w, zx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_cover_each_channel_once() {
        let mut seen = [false; B];
        for s in 0..B {
            let ch = slot_channel(s);
            assert!(!seen[ch]);
            seen[ch] = true;
        }
        // The first accumulator's lanes after vpunpcklwd: channels 0–3 then 8–11.
        assert_eq!((0..8).map(slot_channel).collect::<Vec<_>>(), [0, 1, 2, 3, 8, 9, 10, 11]);
    }
}
