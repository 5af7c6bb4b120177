//! The AVX-512 VNNI kernel of the 8-bit depthwise convolution (`quant::depthwise`, depth
//! multiplier 1): `vpdpbusd` adds the products of 4 taps per channel at once.
//!
//! For one output pixel and a block of 64 channels, the kernel loads the 64 input bytes of 4
//! taps, interleaves them so each 32-bit lane holds the 4 taps of one channel (two rounds of
//! byte/word unpacks, which leave the channels of the 4 result vectors in the order described
//! at [`DwVnni`]), and accumulates against weights packed in that order. A last group of fewer
//! than 4 taps interleaves zero vectors in place of the missing ones (no load; a lone tap
//! takes 6 unpacks instead of 8). Taps outside the image read a row that holds the input zero
//! point, so they add `(zx − zx)·w = 0`, as TFLite's skipped taps do. The requantization runs
//! on the registers in the same permuted order; one lane permutation puts the output bytes
//! back in channel order.
//!
//! A block of 32 channels or fewer (a narrow layer, or the last channels of a wide one) holds
//! 2 (17..=32 channels) or 4 (1..=16) neighbouring output pixels per vector, one per 256- or
//! 128-bit part, loaded and stored with byte masks, so it does not run mostly empty lanes.
//!
//! The row is cut into chunks of pixels whose tap addresses are listed once; each channel
//! block then runs over the whole chunk, so its weights and requantization constants stay in
//! the first-level cache while the pixels go by.
//!
//! Exactness: with `x' = x + ax`, `w' = w + aw` (bytes for `vpdpbusd`), `zx' = zx + ax`,
//! `zw' = zw + aw` and `T` taps, `Σ (x − zx)(w − zw) = Σ x'w' − zw'·Σx' − zx'·Σw' + T·zx'·zw'`
//! in wrapping `i32` arithmetic; the last two terms fold into the bias at prepare and `Σx'`
//! comes from a second `vpdpbusd` against ones in the blocks where some `zw'` is not 0 (the
//! packing makes `zw' = 0` wherever the channel's `w − zw` are signed bytes). Missing taps of
//! the last group add `0·0` and count in neither `T` nor `Σx'`.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::depthwise::DepthwiseGeom;
use super::quant::{Narrow, VnniToken};

/// Channels per block (four vectors of 16 lanes).
pub(crate) const BLOCK: usize = 64;
/// Largest filter (in taps) the kernel takes.
pub(crate) const MAX_TAPS: usize = 64;
/// Tap addresses listed per chunk of output pixels.
const TABLE: usize = 512;

/// Output pixels per vector for a block of `n` channels: 4 (≤ 16), 2 (≤ 32) or 1.
pub(crate) fn pixels(n: usize) -> usize {
    match n {
        0..=16 => 4,
        17..=32 => 2,
        _ => 1,
    }
}

/// A depthwise convolution prepared for [`row`].
///
/// Parameter arrays hold `BLOCK` entries ("slots") per channel block in the kernel's register
/// order: slot `j * 16 + 4 * l + k` of a block (vector `j`, lane `4l + k`, 128-bit part `l`) is
/// channel `16 * (l % lp) + 4 * j + k` of the block, of pixel `l / lp` of the vector, where
/// `lp` = 128-bit parts per pixel = `4 / pixels(n)` for a block of `n` channels ([`pixels`]).
#[derive(Clone, Debug)]
pub(crate) struct DwVnni {
    /// Channels.
    pub c: usize,
    /// Filter taps (`k_h · k_w`).
    pub taps: usize,
    /// `w'` bytes: per block, per group of 4 taps, per vector `j`, per lane, the 4 taps (0 past
    /// the last tap).
    pub w: crate::lines::Lines<i8>,
    /// Bias with `−zx'·Σw' + T·zx'·zw'` folded in.
    pub bias: Vec<i32>,
    /// `Σw'` per slot (what a zero point known only at run time multiplies).
    pub sum_w: Vec<i32>,
    /// `zw'` per slot, or empty when every `zw'` is 0.
    pub zw: Vec<i32>,
    /// Per channel block, whether some `zw'` of the block is not 0 (then the block sums its
    /// inputs).
    pub zw_blocks: Vec<bool>,
    /// Q31 multipliers.
    pub mult: Vec<i32>,
    /// The multiplier of slot `s + 1` at each even slot `s` (what `vpmuldq` reads for the odd
    /// lanes shifted down).
    pub mult_odd: Vec<i32>,
    /// Left shift of the requantization.
    pub left: Vec<i32>,
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
/// bytes (NHWC), `out` the `out_w · c` output bytes of the row, int8 when `signed` (else uint8).
pub(crate) fn row(t: VnniToken, p: &DwVnni, g: &DepthwiseGeom, input: &[u8], r: usize, out: &mut [u8], signed: bool) {
    let _ = t;
    assert!(g.multiplier == 1 && g.in_c == p.c && p.taps == g.k_h * g.k_w && (1..=MAX_TAPS).contains(&p.taps));
    let blocks = p.c.div_ceil(BLOCK);
    let slots = blocks * BLOCK;
    assert!(out.len() >= g.out_w * p.c && r < g.batch * g.out_h && p.pad.len() >= slots);
    assert!(p.w.len() >= blocks * p.taps.div_ceil(4) * 4 * BLOCK);
    for v in [&p.bias, &p.mult, &p.mult_odd, &p.left] {
        assert!(v.len() >= slots);
    }
    for v in [&p.k, &p.corr, &p.sh] {
        assert!(v.len() >= slots);
    }
    assert!(p.zw.is_empty() || (p.zw.len() >= slots && p.zw_blocks.len() >= blocks));
    // SAFETY: the token proves AVX-512 F/BW/VL/VNNI; the asserts above bound the parameter
    // reads and the output row; `row_vnni` checks each input tap against `input.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        let n = Narrow::of(p.out, signed);
        let (o, pad) = (out.as_mut_ptr(), &p.pad[..]);
        match (n.neg, signed) {
            (true, true) => row_vnni(p, g, input, pad, r, &Requantize::<true, false>, o),
            (true, false) => row_vnni(p, g, input, pad, r, &Requantize::<true, true>, o),
            (false, true) => row_vnni(p, g, input, pad, r, &Requantize::<false, false>, o),
            (false, false) => row_vnni(p, g, input, pad, r, &Requantize::<false, true>, o),
        }
    }
}

/// Output row `r` of a dynamic-range depthwise convolution: `input` holds the unsigned input
/// bytes of one image (NHWC, zero point `f.zx`; `p` packed for unsigned input), `pad` the
/// zero point byte in at least every slot (what taps outside the image read), `out` the
/// `out_w · c` floats of the row.
pub(crate) fn row_f32(t: VnniToken, p: &DwVnni, f: &DwFloat, g: &DepthwiseGeom, input: &[u8], pad: &[u8], r: usize, out: &mut [f32]) {
    let _ = t;
    assert!(g.multiplier == 1 && g.in_c == p.c && p.taps == g.k_h * g.k_w && (1..=MAX_TAPS).contains(&p.taps) && !p.signed && p.zw.is_empty());
    let blocks = p.c.div_ceil(BLOCK);
    let slots = blocks * BLOCK;
    assert!(out.len() >= g.out_w * p.c && r < g.batch * g.out_h && pad.len() >= slots);
    assert!(p.w.len() >= blocks * p.taps.div_ceil(4) * 4 * BLOCK);
    assert!(p.sum_w.len() >= slots && f.scale.len() >= slots && f.bias.is_none_or(|b| b.len() >= slots));
    // SAFETY: the token proves AVX-512 F/BW/VL/VNNI; the asserts above bound the parameter
    // reads and the output row; `row_vnni` checks each input tap against `input.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        row_vnni(p, g, input, pad, r, f, out.as_mut_ptr())
    }
}

/// Lists the tap addresses of output pixels `x0 .. x0 + xn` of row `r` in `tab` (`taps` per
/// pixel, `xn` rounded up to 4 pixels: those past the row, and taps outside the image, point at
/// the zero-point row `pad`). Every address has `c` readable bytes. (Compiled for AVX-512 so the
/// interior pixels' addresses are a few vector adds: on narrow layers this listing costs as
/// much as the kernel otherwise.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
fn list_taps(g: &DepthwiseGeom, c: usize, input: &[u8], pad: *const u8, r: usize, x0: usize, xn: usize, tab: &mut [*const u8]) {
    let taps = g.k_h * g.k_w;
    let (b, oy) = (r / g.out_h, r % g.out_h);
    let mut rel = [0usize; MAX_TAPS];
    for ky in 0..g.k_h {
        for kx in 0..g.k_w {
            rel[ky * g.k_w + kx] = (ky * g.dil_h * g.in_w + kx * g.dil_w) * c;
        }
    }
    let rel = &rel[..taps];
    // The interior pixels `lo .. hi`: every tap inside the image (and inside `input`, which
    // holds the whole image when its length says so).
    let iy0 = (oy * g.stride_h) as isize - g.pad_top as isize;
    let span_w = (g.k_w - 1) * g.dil_w;
    let whole = [g.in_h, g.in_w, c].iter().try_fold(g.batch, |n, &d| n.checked_mul(d)).is_some_and(|n| n <= input.len());
    let rows_inside = whole && iy0 >= 0 && iy0 as usize + (g.k_h - 1) * g.dil_h < g.in_h;
    let (lo, hi) = if rows_inside && g.in_w > span_w {
        (g.pad_left.div_ceil(g.stride_w), (g.in_w - span_w + g.pad_left).div_ceil(g.stride_w).min(g.out_w))
    } else {
        (0, 0)
    };
    let row0 = if rows_inside { (b * g.in_h + iy0 as usize) * g.in_w * c } else { 0 };
    for (i, slot) in tab.chunks_exact_mut(taps).take(xn.div_ceil(4) * 4).enumerate() {
        let ox = x0 + i;
        if ox >= g.out_w {
            slot.fill(pad);
            continue;
        }
        if (lo..hi).contains(&ox) {
            // `ox · stride_w − pad_left + span_w < in_w`: the window lies in the image row.
            let p0 = input.as_ptr().wrapping_add(row0 + (ox * g.stride_w - g.pad_left) * c);
            for (t, &o) in slot.iter_mut().zip(rel) {
                *t = p0.wrapping_add(o);
            }
            continue;
        }
        for ky in 0..g.k_h {
            let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
            for kx in 0..g.k_w {
                let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                let inside = iy >= 0 && (iy as usize) < g.in_h && ix >= 0 && (ix as usize) < g.in_w;
                let off = ((b * g.in_h + iy.max(0) as usize) * g.in_w + ix.max(0) as usize) * c;
                slot[ky * g.k_w + kx] = if inside && off + c <= input.len() { input[off..].as_ptr() } else { pad };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn row_vnni<E: Epilogue>(p: &DwVnni, g: &DepthwiseGeom, input: &[u8], pad: &[u8], r: usize, e: &E, out: *mut E::Out) {
    let (c, taps) = (p.c, p.taps);
    let chunk = TABLE / taps / 4 * 4;
    let mut tab = [pad.as_ptr(); TABLE];
    // Raw pointers taken once: nothing in the loops below calls out (a call would spill the
    // vector registers).
    let w = p.w.as_ptr();
    let group = taps.div_ceil(4) * 4 * BLOCK;
    for x0 in (0..g.out_w).step_by(chunk) {
        let xn = (g.out_w - x0).min(chunk);
        list_taps(g, c, input, pad.as_ptr(), r, x0, xn, &mut tab);
        for blk in 0..c.div_ceil(BLOCK) {
            let c0 = blk * BLOCK;
            let n = (c - c0).min(BLOCK);
            // SAFETY: every listed tap has `c` readable bytes and the chunk lists `xn` pixels
            // rounded up to 4; block `blk`'s weights lie within `blocks · group` (asserted by
            // the caller), its slots within the parameter arrays; pixels `x0 .. x0 + xn` of the
            // output row are inside `out` (asserted by the caller).
            unsafe {
                let has_zw = !p.zw.is_empty() && p.zw_blocks[blk];
                let b = Block { c, taps, c0, n, w: w.add(blk * group), s0: c0, has_zw, xn, out: out.add(x0 * c) };
                match pixels(n) {
                    1 => block::<1, E>(p, &tab, &b, e),
                    2 => block::<2, E>(p, &tab, &b, e),
                    _ => block::<4, E>(p, &tab, &b, e),
                }
            }
        }
    }
}

/// One channel block over a chunk of pixels.
struct Block<T> {
    /// Channels of the layer (the stride of pixels in the input and the output).
    c: usize,
    taps: usize,
    /// First channel and channels of the block.
    c0: usize,
    n: usize,
    /// The block's packed weights.
    w: *const i8,
    /// The block's first parameter slot.
    s0: usize,
    /// Whether the block sums its inputs (some `zw'` is not 0).
    has_zw: bool,
    /// Pixels of the chunk.
    xn: usize,
    /// The chunk's first output pixel.
    out: *mut T,
}

/// What a block does with its accumulators: where they start (the folded bias) and how the
/// results of `PX` pixels are stored.
#[cfg(target_arch = "x86_64")]
trait Epilogue {
    /// The output's element type.
    type Out;
    /// The accumulators' start for the block's 4 vectors (slots `s0 ..`).
    ///
    /// # Safety
    /// Slots `s0 .. s0 + BLOCK` exist in the parameter arrays.
    unsafe fn init(&self, p: &DwVnni, s0: usize) -> [__m512i; 4];
    /// Stores pixels `i .. i + PX` (those below `b.xn`) of the block from the accumulators
    /// `acc` (and the input sums `sum` where `b.has_zw`). `lane` is the lanes per pixel,
    /// `masks` the block's channels of each pixel's lanes.
    ///
    /// # Safety
    /// As [`block`]'s.
    unsafe fn store<const PX: usize>(&self, p: &DwVnni, b: &Block<Self::Out>, i: usize, acc: [__m512i; 4], sum: [__m512i; 4], masks: &[u64; PX], lane: usize);
}

/// The requantizing epilogue of the 8-bit kernel: bytes, int8 unless `UNS`, without the
/// correction of negative products unless `NEG` (see `quant::requant64`).
struct Requantize<const NEG: bool, const UNS: bool>;

#[cfg(target_arch = "x86_64")]
impl<const NEG: bool, const UNS: bool> Epilogue for Requantize<NEG, UNS> {
    type Out = u8;

    #[inline(always)]
    unsafe fn init(&self, p: &DwVnni, s0: usize) -> [__m512i; 4] {
        // SAFETY: slots `s0 + 16j .. + 16 <= s0 + BLOCK` exist (caller); `row_vnni` runs only
        // on CPUs with AVX-512 F.
        std::array::from_fn(|j| unsafe { _mm512_loadu_si512(p.bias.as_ptr().add(s0 + 16 * j) as *const _) })
    }

    #[inline(always)]
    unsafe fn store<const PX: usize>(&self, p: &DwVnni, b: &Block<u8>, i: usize, acc: [__m512i; 4], sum: [__m512i; 4], masks: &[u64; PX], lane: usize) {
        // SAFETY: the trait method's contract.
        unsafe { requant_store::<PX, NEG, UNS>(p, b, i, acc, sum, masks, lane) }
    }
}

/// [`Requantize`]'s `store`.
///
/// # Safety
/// As [`Epilogue::store`]'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn requant_store<const PX: usize, const NEG: bool, const UNS: bool>(p: &DwVnni, b: &Block<u8>, i: usize, acc: [__m512i; 4], sum: [__m512i; 4], masks: &[u64; PX], lane: usize) {
    let s0 = b.s0;
    // SAFETY (all parameter loads): slots `s0 + 16j .. + 16 <= s0 + BLOCK` exist (caller).
    let ld32 = |v: &Vec<i32>, j: usize| unsafe { _mm512_loadu_si512(v.as_ptr().add(s0 + 16 * j) as *const _) };
    let ld64 = |v: &Vec<i64>, j: usize, parity: usize| unsafe { _mm512_loadu_si512(v.as_ptr().add(s0 + 16 * j + 8 * parity) as *const _) };
    let perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let (zp, lo, hi) = p.out;
    let (vzp, vlo) = (_mm512_set1_epi32(zp), _mm512_set1_epi32(lo));
    let (lo8, hi8) = (_mm512_set1_epi8(lo.clamp(-128, 255) as u8 as i8), _mm512_set1_epi8(hi.clamp(-128, 255) as u8 as i8));
    let mut bytes = [_mm_setzero_si128(); 4];
    for (j, out) in bytes.iter_mut().enumerate() {
        let mut x = acc[j];
        if b.has_zw {
            x = _mm512_sub_epi32(x, _mm512_mullo_epi32(ld32(&p.zw, j), sum[j]));
        }
        if p.any_left {
            x = _mm512_sllv_epi32(x, ld32(&p.left, j));
        }
        let q = super::quant::requant64_split::<NEG>(
            x,
            ld32(&p.mult, j),
            ld32(&p.mult_odd, j),
            [ld64(&p.k, j, 0), ld64(&p.k, j, 1)],
            [ld64(&p.corr, j, 0), ld64(&p.corr, j, 1)],
            [ld64(&p.sh, j, 0), ld64(&p.sh, j, 1)],
        );
        let v = _mm512_add_epi32(q, vzp);
        // Narrowed with saturation, then clamped as bytes: the same as clamping the
        // 32-bit values, since the clamp lies inside the byte type's range.
        *out = if UNS { _mm512_cvtusepi32_epi8(_mm512_max_epi32(v, vlo)) } else { _mm512_cvtsepi32_epi8(v) };
    }
    let z = _mm512_inserti32x4::<3>(
        _mm512_inserti32x4::<2>(_mm512_inserti32x4::<1>(_mm512_castsi128_si512(bytes[0]), bytes[1]), bytes[2]),
        bytes[3],
    );
    let z = _mm512_permutexvar_epi32(perm, z);
    let z = if UNS { _mm512_min_epu8(z, hi8) } else { _mm512_min_epi8(_mm512_max_epi8(z, lo8), hi8) };
    for (px, &m) in masks.iter().enumerate() {
        if i + px < b.xn {
            // SAFETY: pixel `i + px < xn` has bytes `c0 .. c0 + n` in `out` (caller); the
            // mask writes exactly those (lanes `px · lane ..`, see `block`).
            unsafe { _mm512_mask_storeu_epi8(b.out.add((i + px) * b.c + b.c0).wrapping_sub(px * lane) as *mut i8, m, z) };
        }
    }
}

/// The 4 vectors whose 32-bit lanes hold the bytes of `x0`, `x1`, `x2`, `x3` at the same lane
/// (in the permuted lane order of [`DwVnni`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn interleave(x0: __m512i, x1: __m512i, x2: __m512i, x3: __m512i) -> [__m512i; 4] {
    let (lo01, hi01) = (_mm512_unpacklo_epi8(x0, x1), _mm512_unpackhi_epi8(x0, x1));
    let (lo23, hi23) = (_mm512_unpacklo_epi8(x2, x3), _mm512_unpackhi_epi8(x2, x3));
    [
        _mm512_unpacklo_epi16(lo01, lo23),
        _mm512_unpackhi_epi16(lo01, lo23),
        _mm512_unpacklo_epi16(hi01, hi23),
        _mm512_unpackhi_epi16(hi01, hi23),
    ]
}

/// Channels `b.c0 .. b.c0 + b.n` of the chunk's `b.xn` pixels, `PX` pixels per vector.
///
/// # Safety
/// `tab` lists `b.taps` addresses for each of `b.xn` pixels rounded up to 4, each with the
/// block's bytes `c0 .. c0 + n` readable; `b.w` holds the block's `taps.div_ceil(4) · 4 · BLOCK`
/// weight bytes; slots `s0 .. s0 + BLOCK` exist in every parameter array; `b.out` has `b.xn`
/// pixels of `b.c` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
unsafe fn block<const PX: usize, E: Epilogue>(p: &DwVnni, tab: &[*const u8], b: &Block<E::Out>, e: &E) {
    let lane = BLOCK / PX;
    let m1: u64 = if b.n >= 64 { !0 } else { (1u64 << b.n) - 1 };
    let masks: [u64; PX] = std::array::from_fn(|i| m1 << (lane * i));
    let flip = _mm512_set1_epi8(if p.signed { -128 } else { 0 });
    let zero = _mm512_setzero_si512();
    let ones = _mm512_set1_epi8(1);
    let has_zw = b.has_zw;
    let (full, rest) = (b.taps / 4, b.taps % 4);
    // SAFETY: slots `s0 .. s0 + BLOCK` exist (caller).
    let init = unsafe { e.init(p, b.s0) };
    for i in (0..b.xn).step_by(PX) {
        // SAFETY: pixel `i + PX - 1 < xn` rounded up to 4 is listed (caller).
        let tp = unsafe { tab.as_ptr().add(i * b.taps) };
        // Tap `t` of the `PX` pixels, flipped to unsigned: pixel `px`'s bytes go to lanes
        // `px · lane ..` (a masked load from `lane · px` bytes before them: the masked-off
        // lanes are neither read nor faulted).
        let ld = |t: usize| -> __m512i {
            // SAFETY: `tp[px · taps + t]` is listed with bytes `c0 .. c0 + n` readable
            // (caller); the mask reads exactly those.
            unsafe {
                let mut v = _mm512_maskz_loadu_epi8(masks[0], (*tp.add(t)).add(b.c0) as *const i8);
                for (px, &m) in masks.iter().enumerate().skip(1) {
                    v = _mm512_mask_loadu_epi8(v, m, (*tp.add(px * b.taps + t)).add(b.c0).wrapping_sub(px * lane) as *const i8);
                }
                _mm512_xor_si512(v, flip)
            }
        };
        let mut acc = init;
        let mut sum = [zero; 4];
        let mut wq = b.w;
        let mut dot = |v: [__m512i; 4], wq: *const i8| {
            for j in 0..4 {
                // SAFETY: the group's 4 vectors of weights lie in the block's (caller).
                let w = unsafe { _mm512_loadu_si512(wq.add(j * BLOCK) as *const _) };
                acc[j] = _mm512_dpbusd_epi32(acc[j], v[j], w);
                if has_zw {
                    sum[j] = _mm512_dpbusd_epi32(sum[j], v[j], ones);
                }
            }
        };
        for q in 0..full {
            dot(interleave(ld(4 * q), ld(4 * q + 1), ld(4 * q + 2), ld(4 * q + 3)), wq);
            // SAFETY: within the block's weights (at most one more group follows).
            wq = unsafe { wq.add(4 * BLOCK) };
        }
        let t = 4 * full;
        match rest {
            1 => dot(interleave(ld(t), zero, zero, zero), wq),
            2 => dot(interleave(ld(t), ld(t + 1), zero, zero), wq),
            3 => dot(interleave(ld(t), ld(t + 1), ld(t + 2), zero), wq),
            _ => {}
        }
        // SAFETY: as this function's.
        unsafe { e.store::<PX>(p, b, i, acc, sum, &masks, lane) };
    }
}

/// The float epilogue of a dynamic-range ("hybrid") depthwise convolution, per channel `c`:
/// `clamp((acc − zx'·Σw'[c]) · (scale[c] · input_scale) + bias[c])`, the float operations in
/// TFLite's order (`DepthwiseConvHybridPerChannel`, `quant::hybrid::finish` with
/// `scales_first`). Slot-ordered arrays as [`DwVnni`]'s.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DwFloat<'a> {
    /// Weight scale per slot.
    pub scale: &'a [f32],
    /// Bias per slot (none: nothing is added).
    pub bias: Option<&'a [f32]>,
    /// The input zero point in the unsigned-byte domain.
    pub zx: i32,
    /// The input's scale.
    pub input_scale: f32,
    /// Clamp of the fused activation.
    pub clamp: (f32, f32),
}

#[cfg(target_arch = "x86_64")]
impl Epilogue for DwFloat<'_> {
    type Out = f32;

    #[inline(always)]
    unsafe fn init(&self, p: &DwVnni, s0: usize) -> [__m512i; 4] {
        // SAFETY: the trait method's contract.
        unsafe { float_init(self, p, s0) }
    }

    #[inline(always)]
    unsafe fn store<const PX: usize>(&self, _p: &DwVnni, b: &Block<f32>, i: usize, acc: [__m512i; 4], _sum: [__m512i; 4], _masks: &[u64; PX], _lane: usize) {
        // SAFETY: the trait method's contract.
        unsafe { float_store::<PX>(self, b, i, acc) }
    }
}

/// [`DwFloat`]'s `init`: `−zx'·Σw'` per slot.
///
/// # Safety
/// As [`Epilogue::init`]'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn float_init(f: &DwFloat, p: &DwVnni, s0: usize) -> [__m512i; 4] {
    let nzx = _mm512_set1_epi32(f.zx.wrapping_neg());
    // SAFETY: slots `s0 + 16j .. + 16 <= s0 + BLOCK` exist (caller).
    std::array::from_fn(|j| unsafe { _mm512_mullo_epi32(_mm512_loadu_si512(p.sum_w.as_ptr().add(s0 + 16 * j) as *const _), nzx) })
}

/// [`DwFloat`]'s `store`.
///
/// # Safety
/// As [`Epilogue::store`]'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn float_store<const PX: usize>(f: &DwFloat, b: &Block<f32>, i: usize, acc: [__m512i; 4]) {
    let s0 = b.s0;
    let ins = _mm512_set1_ps(f.input_scale);
    let (lo, hi) = (_mm512_set1_ps(f.clamp.0), _mm512_set1_ps(f.clamp.1));
    let v: [__m512; 4] = std::array::from_fn(|j| {
        // SAFETY: slots `s0 + 16j .. + 16 <= s0 + BLOCK` exist (caller).
        let (scale, bias) = unsafe { (_mm512_loadu_ps(f.scale.as_ptr().add(s0 + 16 * j)), f.bias.map(|v| _mm512_loadu_ps(v.as_ptr().add(s0 + 16 * j)))) };
        let mut x = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[j]), _mm512_mul_ps(scale, ins));
        if let Some(bias) = bias {
            x = _mm512_add_ps(x, bias);
        }
        // `vmaxps(x, lo)` gives `lo` for a NaN `x`, as `f32::max` does.
        _mm512_min_ps(_mm512_max_ps(x, lo), hi)
    });
    // Slot `16j + 4l + k` is channel `16·(l % lp) + 4j + k` of pixel `l / lp` (`lp = 4 /
    // PX`): the 128-bit part `l` of the four vectors, side by side, is 16 consecutive
    // channels of one pixel. A 4×4 transpose of 128-bit parts puts them together.
    let t0 = _mm512_shuffle_f32x4::<0x44>(v[0], v[1]);
    let t1 = _mm512_shuffle_f32x4::<0xEE>(v[0], v[1]);
    let t2 = _mm512_shuffle_f32x4::<0x44>(v[2], v[3]);
    let t3 = _mm512_shuffle_f32x4::<0xEE>(v[2], v[3]);
    let o = [_mm512_shuffle_f32x4::<0x88>(t0, t2), _mm512_shuffle_f32x4::<0xDD>(t0, t2), _mm512_shuffle_f32x4::<0x88>(t1, t3), _mm512_shuffle_f32x4::<0xDD>(t1, t3)];
    let lp = 4 / PX;
    for (l, &ol) in o.iter().enumerate() {
        let (px, part) = (l / lp, l % lp);
        let cols = b.n.saturating_sub(16 * part).min(16);
        if i + px < b.xn && cols > 0 {
            // SAFETY: pixel `i + px < xn` has floats `c0 .. c0 + n` in `out` (caller);
            // the mask writes `cols` of them from `c0 + 16·part`.
            unsafe { _mm512_mask_storeu_ps(b.out.add((i + px) * b.c + b.c0 + 16 * part), ((1u32 << cols) - 1) as u16, ol) };
        }
    }
}
