//! The AVX2 kernel of the 8-bit depthwise convolution (`quant::depthwise`, depth multiplier 1,
//! TFLite's fixed-point requantization) for CPUs without AVX-512 VNNI.
//!
//! For two output pixels and a block of 16 channels, two taps at a time: each tap's 16 input
//! bytes are widened to 16 bits, the two taps interleaved per channel (`vpunpcklwd` /
//! `vpunpckhwd`) and multiplied against `w − zw` packed in that order with `vpmaddwd`, which
//! adds each channel's two products exactly; the two pixels share each load of the weights and
//! of the requantization parameters. An odd last tap pairs with a zero weight. The input zero
//! point is folded into the bias: `Σ (x − zx)·w = Σ x·w − zx·Σ w`, exact in 32 bits. Taps
//! outside the image read a row that holds the input zero point, so they add `zx·w`, which the
//! fold takes off again: `(zx − zx)·w = 0`, as TFLite's skipped taps do.
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
    /// The row taps outside the image read (the input zero point's bytes), and the output zero
    /// point and clamp.
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
            // bias − zx·Σ_t (w − zw): the input zero point folded in (see the module doc).
            bias: per_slot(&|ch| bias[ch].wrapping_sub(zx.wrapping_mul((0..taps).map(|t| i32::from(wz[t * c + ch])).sum::<i32>()))),
            mult: per_slot(&|ch| requant[ch].0),
            left: per_slot(&|ch| sh(ch).0),
            right: per_slot(&|ch| sh(ch).1),
            mask: per_slot(&|ch| sh(ch).2),
            half: per_slot(&|ch| sh(ch).3),
            any_left: requant.iter().take(c).any(|r| r.1 > 0),
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
    // The input offset of each filter row's image row, or `None` for a padding row.
    let mut row_at = [None; MAX_TAPS];
    for (ky, at) in row_at.iter_mut().enumerate().take(g.k_h) {
        let iy = (oy * g.stride_h + ky * g.dil_h).wrapping_sub(g.pad_top);
        *at = (iy < g.in_h).then(|| (b * g.in_h + iy) * g.in_w * g.in_c);
    }
    // The taps of output pixel `ox`: in the image, or the zero-point row. Every one holds `c`
    // bytes, and the zero-point row whole blocks.
    // An odd last tap pairs with the zero-point row (against zero weights).
    let taps_of = |ox: usize, tab: &mut [*const u8; MAX_TAPS]| {
        for (ky, at) in row_at.iter().enumerate().take(g.k_h) {
            for kx in 0..g.k_w {
                let ix = (ox * g.stride_w + kx * g.dil_w).wrapping_sub(g.pad_left);
                tab[ky * g.k_w + kx] = match at {
                    Some(at) if ix < g.in_w => input[at + ix * g.in_c..][..g.in_c].as_ptr(),
                    _ => p.pad.as_ptr(),
                };
            }
        }
        if p.taps % 2 == 1 {
            tab[p.taps] = p.pad.as_ptr();
        }
    };
    let even_taps = p.taps.div_ceil(2) * 2;
    // Pixels whose taps all lie inside the image row: from one pair of them to the next, every
    // tap in an image row moves 2·stride pixels and those in padding rows stay (building the
    // table tap by tap took as long as the arithmetic at 32 channels).
    let inside = |ox: usize| {
        let ix0 = (ox * g.stride_w).wrapping_sub(g.pad_left);
        ix0 < g.in_w && ix0 + (g.k_w - 1) * g.dil_w < g.in_w
    };
    let mut step = [0usize; MAX_TAPS];
    for (ky, at) in row_at.iter().enumerate().take(g.k_h) {
        if at.is_some() {
            step[ky * g.k_w..(ky + 1) * g.k_w].fill(2 * g.stride_w * g.in_c);
        }
    }
    let mut tabs = [[std::ptr::null::<u8>(); MAX_TAPS]; 2];
    let mut ox = 0;
    let mut prev_inside = false;
    while ox < g.out_w {
        let np = if ox + 2 <= g.out_w { 2 } else { 1 };
        let now_inside = np == 2 && inside(ox) && inside(ox + 1);
        if prev_inside && now_inside {
            for tab in &mut tabs {
                for (t, s) in tab[..p.taps].iter_mut().zip(&step) {
                    *t = t.wrapping_add(*s);
                }
            }
            debug_assert!({
                let mut want = [std::ptr::null::<u8>(); MAX_TAPS];
                taps_of(ox + 1, &mut want);
                want[..p.taps] == tabs[1][..p.taps]
            });
        } else {
            for (i, tab) in tabs.iter_mut().enumerate().take(np) {
                taps_of(ox + i, tab);
            }
        }
        prev_inside = now_inside;
        let o = &mut out[ox * p.c..(ox + np) * p.c];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the token proves AVX2; every tap address holds `c` readable bytes (a pixel of
        // the input, sliced by `taps_of` or moved from one by whole pixels to a pixel that
        // `inside` proved in the image row, or the zero-point row of whole blocks), the parameters hold
        // every block's slots and the weights every block's pairs (asserted), `o` the pixels'
        // `np · c` outputs.
        unsafe {
            let (t0, t1) = (&tabs[0][..even_taps], &tabs[1][..even_taps]);
            let (o0, o1) = (o.as_mut_ptr(), o.as_mut_ptr().add(p.c));
            macro_rules! go {
                ($si:literal, $so:literal) => {
                    if np == 2 {
                        pixels::<$si, $so, 2>(p, [t0, t1], [o0, o1])
                    } else {
                        pixels::<$si, $so, 1>(p, [t0], [o0])
                    }
                };
            }
            match (signed_in, signed_out) {
                (true, true) => go!(true, true),
                (true, false) => go!(true, false),
                (false, true) => go!(false, true),
                (false, false) => go!(false, false),
            }
        }
        ox += np;
    }
}

/// `NP` output pixels: every block of 16 channels over the taps at `tabs[i]` (an even number:
/// an odd filter's last tap is the zero-point row), into `outs[i]`.
///
/// # Safety
/// AVX2; every address of `tabs` holds `p.c` readable bytes (the zero-point row whole blocks);
/// every `outs[i]` has `p.c` writable bytes; the parameters and weights hold every block (see
/// [`row`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pixels<const SIGNED_IN: bool, const SIGNED_OUT: bool, const NP: usize>(p: &DwPair, tabs: [&[*const u8]; NP], outs: [*mut u8; NP]) {
    for tab in tabs {
        assert!(tab.len() >= 2 * p.taps.div_ceil(2), "depthwise tap table too short");
    }
    let full = p.c / B;
    for blk in 0..full {
        // SAFETY: the contract; block blk is whole.
        unsafe { block::<SIGNED_IN, SIGNED_OUT, NP, true>(p, blk, &tabs, &outs) };
    }
    if full * B < p.c {
        // SAFETY: the contract; the last block is partial.
        unsafe { block::<SIGNED_IN, SIGNED_OUT, NP, false>(p, full, &tabs, &outs) };
    }
}

/// Block `blk` of [`pixels`]: channels `16·blk ..` (all 16 when `FULL`, else the rest).
///
/// # Safety
/// As [`pixels`] (which checked that every table holds the taps' pairs), with `FULL` telling
/// whether `16·blk + 16 ≤ p.c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block<const SIGNED_IN: bool, const SIGNED_OUT: bool, const NP: usize, const FULL: bool>(
    p: &DwPair,
    blk: usize,
    tabs: &[&[*const u8]; NP],
    outs: &[*mut u8; NP],
) {
    let c = p.c;
    let pairs = p.taps.div_ceil(2);
    let ch = blk * B;
    let mut acc = [[_mm256_setzero_si256(); 2]; NP];
    // SAFETY: block blk's weights: `pairs` groups of 32 (contract).
    let wb = unsafe { p.w.as_ptr().add(blk * pairs * 2 * B) };
    for k in 0..pairs {
        // SAFETY: pair k < pairs of the block.
        let (w0, w1) = unsafe { (_mm256_loadu_si256(wb.add(k * 2 * B) as *const __m256i), _mm256_loadu_si256(wb.add(k * 2 * B + B) as *const __m256i)) };
        for (acc, tab) in acc.iter_mut().zip(tabs) {
            // SAFETY: every tap address holds `c` bytes (contract); 2k + 1 < 2·pairs ≤ tab.len()
            // (checked by `pixels`).
            let (x0, x1) = unsafe { (load::<SIGNED_IN, FULL>(*tab.get_unchecked(2 * k), ch, c), load::<SIGNED_IN, FULL>(*tab.get_unchecked(2 * k + 1), ch, c)) };
            acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), w0));
            acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), w1));
        }
    }
    let q = (_mm256_set1_epi32(p.out.0), _mm256_set1_epi32(p.out.1), _mm256_set1_epi32(p.out.2));
    let mut v = [[_mm256_setzero_si256(); 2]; NP];
    for h in 0..2 {
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
        let bias = ld!(p.bias);
        for (v, acc) in v.iter_mut().zip(&acc) {
            v[h] = super::qpair::requant_lanes(_mm256_add_epi32(acc[h], bias), &params, p.any_left, q);
        }
    }
    for (v, &out) in v.iter().zip(outs) {
        // [0–3, 8–11] and [4–7, 12–15] pack to channels 0–7 | 8–15 as 16-bit values.
        let w = _mm256_packs_epi32(v[0], v[1]);
        let (lo, hi) = (_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w));
        let bytes = if SIGNED_OUT { _mm_packs_epi16(lo, hi) } else { _mm_packus_epi16(lo, hi) };
        // SAFETY: the pixel's outputs ch .. min(ch + 16, c) (contract).
        unsafe {
            if FULL {
                _mm_storeu_si128(out.add(ch) as *mut __m128i, bytes);
            } else {
                let mut tmp = [0u8; B];
                _mm_storeu_si128(tmp.as_mut_ptr() as *mut __m128i, bytes);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), out.add(ch), c - ch);
            }
        }
    }
}

/// 16 input bytes of a tap at channel `ch`, widened; a partial block (`!FULL`) goes through a
/// zeroed copy (its lanes past `c` meet zero weights).
///
/// # Safety
/// AVX2; `at` holds `c > ch` readable bytes, `ch + 16 ≤ c` when `FULL`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load<const SIGNED: bool, const FULL: bool>(at: *const u8, ch: usize, c: usize) -> __m256i {
    // SAFETY: the contract; whole blocks read 16 bytes from `ch`, partial ones `c − ch`.
    let v = unsafe {
        if FULL {
            _mm_loadu_si128(at.add(ch) as *const __m128i)
        } else {
            let mut tmp = [0u8; B];
            std::ptr::copy_nonoverlapping(at.add(ch), tmp.as_mut_ptr(), c - ch);
            _mm_loadu_si128(tmp.as_ptr() as *const __m128i)
        }
    };
    if SIGNED {
        _mm256_cvtepi8_epi16(v)
    } else {
        _mm256_cvtepu8_epi16(v)
    }
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
