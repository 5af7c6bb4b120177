//! Optimized quantized DEPTHWISE_CONV_2D: for each output pixel, the in-bounds taps add
//! `(x − zx) · (w − zw)` over a whole row of channels at once (channels are contiguous in NHWC),
//! then one vectorizable requantization of the row. Taps outside the input are skipped, as in
//! TFLite's reference. Rows of output pixels run in parallel when the work is large enough.
//!
//! On CPUs with AVX-512 VNNI, 8-bit depthwise convolutions with depth multiplier 1 run the
//! `vpdpbusd` kernel of `simd::qdepthwise` instead (4 taps per instruction), with weights and
//! per-channel parameters packed here in its register order.


use super::gemm::input_shift;
use super::reference::{self, ConvQuant};
use super::requant::{requant_row_simd, ChannelRequant};
use super::QInt;
use crate::kernels::depthwise::DepthwiseGeom;
use crate::simd::qdepthwise::{self as sdw, DwVnni, BLOCK};
use crate::prepack;
use crate::simd::quant::{self as sq, VnniToken};

/// Multiply-adds below which a depthwise convolution runs on the calling thread.
const PAR_MIN_MACS: usize = 1 << 16;
/// Multiply-adds of work per task at least.
const TASK_MACS: usize = 1 << 14;

/// Runs `task` on each of the `rows` rows (`row_len` values, `row_macs` multiply-adds each) of
/// `out`, split across the current run's kernel pool when the whole is worth it.
fn for_rows<T: Send>(out: &mut [T], rows: usize, row_len: usize, row_macs: usize, task: impl Fn((usize, &mut [T])) + Sync + Send) {
    let out = &mut out[..rows * row_len];
    if rows > 1 && nnrt_threads::kernel_threads() > 1 && rows * row_macs >= PAR_MIN_MACS {
        nnrt_threads::par_rows_mut(out, row_len, TASK_MACS.div_ceil(row_macs.max(1)), |r, o| task((r, o)));
    } else {
        out.chunks_mut(row_len).enumerate().for_each(task);
    }
}

/// A prepared quantized depthwise convolution.
pub struct QDepthwise {
    g: DepthwiseGeom,
    q: ConvQuant,
    /// `w − zw` per tap and output channel (`k_h · k_w × out_c`), for the fast path.
    wz: Vec<i16>,
    bias: Vec<i32>,
    rq: ChannelRequant,
    fast: bool,
    /// The VNNI kernel's packing, when it applies (8-bit, multiplier 1, fixed-point requant).
    vnni: Option<(VnniToken, DwVnni)>,
    /// The AVX2 kernel's packing, where VNNI is absent (the same conditions).
    avx2: Option<(sq::Avx2Token, crate::simd::qdw_avx2::DwPair)>,
    weights: Vec<i16>,
}

/// One output row (`r`) of [`QDepthwise`]'s fast path, run through `simd::quant::with_avx512`.
struct Row<'a, TI, const RAW: bool> {
    d: &'a QDepthwise,
    input: &'a [TI],
    zx: i32,
    r: usize,
}

impl<TI: QInt, TO: QInt, const RAW: bool> sq::Avx512Body<TO> for Row<'_, TI, RAW> {
    #[inline(always)]
    fn run(&self, orow: &mut [TO]) {
        self.d.row::<TI, TO, RAW>(self.input, self.zx, self.r, orow)
    }
}

impl QDepthwise {
    /// Prepares `filter` (`[1, k_h, k_w, out_c]`, type `TW`).
    pub fn new<TI: QInt, TW: QInt>(g: DepthwiseGeom, q: ConvQuant, filter: &[TW]) -> QDepthwise {
        let oc = g.out_c();
        // |(x − zx)(w − zw)| ≤ 255² per tap (8-bit operands), plus the bias.
        let bound = |c: usize| ((g.k_h * g.k_w) as i64).saturating_mul(255 * 255).saturating_add(q.bias.as_ref().map_or(0, |v| v[c].saturating_abs()));
        let fixed: Option<Vec<sq::LaneConst>> = q.requant.iter().enumerate().map(|(c, &r)| sq::LaneConst::of(r, bound(c))).collect();
        let channel = ChannelRequant::of(&q.requant);
        let fast = std::mem::size_of::<TI>() == 1 && !q.wide && channel.is_some();
        let wz: Vec<i16> = filter.iter().enumerate().map(|(i, w)| (w.get() - q.w_zp[i % oc]) as i16).collect();
        let bias: Vec<i32> = (0..oc).map(|c| q.bias.as_ref().map_or(0, |b| b[c] as i32)).collect();
        let vnni = match (&fixed, VnniToken::new()) {
            (Some(f), Some(t)) if fast && std::mem::size_of::<TW>() == 1 && g.multiplier == 1 && (1..=sdw::MAX_TAPS).contains(&(g.k_h * g.k_w)) && (TI::MIN..=TI::MAX).contains(&q.in_zp) => {
                Some((t, pack_vnni::<TI, TW>(&g, &q, f, filter)))
            }
            _ => None,
        };
        let fixed_pairs = super::Requant::fixed_pairs(&q.requant);
        let zx_byte = if TI::MIN < 0 { q.in_zp as i8 as u8 } else { q.in_zp as u8 };
        let avx2 = match (&vnni, sq::Avx2Token::new(), fixed_pairs) {
            (None, Some(t), Some(pairs)) if fast && std::mem::size_of::<TW>() == 1 && g.multiplier == 1 && (TI::MIN..=TI::MAX).contains(&q.in_zp) => {
                crate::simd::qdw_avx2::DwPair::new(oc, g.k_h * g.k_w, &wz, &bias, &pairs, q.in_zp, zx_byte, (q.out_zp, q.act.0, q.act.1)).map(|p| (t, p))
            }
            _ => None,
        };
        let rq = channel.unwrap_or_default();
        // The reference kernel's weights, only where it runs.
        let weights = if fast { Vec::new() } else { filter.iter().map(|w| w.get() as i16).collect() };
        let q = if fast { q.fast_path_only() } else { q };
        QDepthwise {
            g,
            q,
            wz,
            bias,
            rq,
            fast,
            vnni,
            avx2,
            weights,
        }
    }

    /// Raw int32 accumulators `Σ (x − in_zp) · w` for an int8 input whose zero point is only
    /// known at run time (dynamic-range depthwise convolutions). Needs 8-bit weights.
    pub fn run_raw(&self, input: &[i8], in_zp: i32, out: &mut [i32]) {
        let g = self.g;
        let row_len = g.out_w * g.out_c();
        let task = |(r, orow): (usize, &mut [i32])| sq::with_avx512(&Row::<i8, true> { d: self, input, zx: in_zp, r }, orow);
        for_rows(out, g.batch * g.out_h, row_len, row_len * g.k_h * g.k_w, task);
    }

    /// Runs on `input` into `out` (NHWC) on the current run's kernel pool.
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        if !self.fast {
            reference::depthwise::<TI, i16, TO>(&self.g, &self.q, input, &self.weights, out);
            return;
        }
        let g = self.g;
        let row_len = g.out_w * g.out_c();
        let (rows, row_macs) = (g.batch * g.out_h, row_len * g.k_h * g.k_w);
        // The VNNI kernel narrows with saturation and then clamps: the same as clamping first when
        // the clamp lies within the output type (every activation range does).
        let within = TO::MIN <= self.q.act.0 && self.q.act.1 <= TO::MAX;
        if let Some((t, p)) = self.vnni.as_ref().filter(|_| std::mem::size_of::<TI>() == 1 && std::mem::size_of::<TO>() == 1 && within) {
            let input: &[u8] = bytemuck::cast_slice(input);
            let out: &mut [u8] = bytemuck::cast_slice_mut(out);
            let signed = TO::MIN < 0;
            for_rows(out, rows, row_len, row_macs, |(r, orow)| sdw::row(*t, p, &g, input, r, orow, signed));
            return;
        }
        if let Some((t, p)) = self.avx2.as_ref().filter(|_| std::mem::size_of::<TI>() == 1 && std::mem::size_of::<TO>() == 1 && within) {
            let input: &[u8] = bytemuck::cast_slice(input);
            let out: &mut [u8] = bytemuck::cast_slice_mut(out);
            let (si, so) = (TI::MIN < 0, TO::MIN < 0);
            for_rows(out, rows, row_len, row_macs, |(r, orow)| crate::simd::qdw_avx2::row(*t, p, &g, input, si, r, orow, so));
            return;
        }
        let zx = self.q.in_zp;
        for_rows(out, rows, row_len, row_macs, |(r, orow): (usize, &mut [TO])| sq::with_avx512(&Row::<TI, false> { d: self, input, zx, r }, orow));
    }

    /// Output row `r` (batch · out_h + oy) of the fast path: for each output pixel, the
    /// in-bounds taps are listed once, then blocks of 16 channels accumulate over them in
    /// registers.
    #[inline(always)]
    pub(crate) fn row<TI: QInt, TO: QInt, const RAW: bool>(&self, input: &[TI], zx: i32, r: usize, orow: &mut [TO]) {
        const B: usize = 16;
        let g = self.g;
        let oc = g.out_c();
        let (b, oy) = (r / g.out_h, r % g.out_h);
        let mut taps: Vec<(usize, usize)> = Vec::with_capacity(g.k_h * g.k_w);
        let mut acc = vec![0i32; oc];
        let mut xs = vec![0i32; if g.multiplier == 1 { 0 } else { oc }];
        for ox in 0..g.out_w {
            taps.clear();
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
                    taps.push((((b * g.in_h + iy as usize) * g.in_w + ix as usize) * g.in_c, ky * g.k_w + kx));
                }
            }
            if g.multiplier == 1 {
                let mut c0 = 0;
                while c0 + 4 * B <= oc {
                    self.block::<TI, { 4 * B }>(input, zx, &taps, c0, &mut acc);
                    c0 += 4 * B;
                }
                while c0 + B <= oc {
                    self.block::<TI, B>(input, zx, &taps, c0, &mut acc);
                    c0 += B;
                }
                for c in c0..oc {
                    let mut a = 0i32;
                    for &(s, t) in &taps {
                        a = a.wrapping_add((input[s + c].get() - zx).wrapping_mul(self.wz[t * oc + c] as i32));
                    }
                    acc[c] = a;
                }
            } else {
                acc.fill(0);
                for &(s, t) in &taps {
                    for (c, x) in xs.iter_mut().enumerate() {
                        *x = input[s + c / g.multiplier].get() - zx;
                    }
                    for ((a, &x), &w) in acc.iter_mut().zip(&xs).zip(&self.wz[t * oc..(t + 1) * oc]) {
                        *a = a.wrapping_add(x.wrapping_mul(w as i32));
                    }
                }
            }
            if !RAW {
                requant_row_simd(&mut acc, &self.bias, &self.rq, 0, self.q.out_zp, self.q.act.0, self.q.act.1);
            }
            for (o, &v) in orow[ox * oc..(ox + 1) * oc].iter_mut().zip(&acc) {
                *o = TO::put(v);
            }
        }
    }

    /// Channels `c0 .. c0 + N` of one output pixel over its in-bounds `taps`, accumulated in
    /// registers (N is a multiple of the vector width).
    #[inline(always)]
    fn block<TI: QInt, const N: usize>(&self, input: &[TI], zx: i32, taps: &[(usize, usize)], c0: usize, acc: &mut [i32]) {
        let oc = self.g.out_c();
        let mut a = [0i32; N];
        for &(s, t) in taps {
            let x: &[TI; N] = input[s + c0..s + c0 + N].try_into().expect("block");
            let w: &[i16; N] = self.wz[t * oc + c0..t * oc + c0 + N].try_into().expect("block");
            for i in 0..N {
                a[i] = a[i].wrapping_add((x[i].get() - zx).wrapping_mul(w[i] as i32));
            }
        }
        acc[c0..c0 + N].copy_from_slice(&a);
    }
}

/// The channel held by register slot `s` (vector `s / 16`, lane `s % 16`, 128-bit part
/// `s % 16 / 4`) of block `blk` of a `c`-channel layer (at or past `c`: a padding slot).
fn slot_channel(c: usize, blk: usize, s: usize) -> usize {
    let lp = 4 / sdw::pixels((c - blk * BLOCK).min(BLOCK));
    blk * BLOCK + 16 * ((s % 16) / 4 % lp) + 4 * (s / 16) + s % 4
}

/// A prepared dynamic-range ("hybrid") DEPTHWISE_CONV_2D of one image on the VNNI kernel:
/// the float input quantized at run time (by the caller) to unsigned bytes (`x + 128`), int8
/// symmetric weights, and the float epilogue on the accumulators in registers
/// (`simd::qdepthwise::DwFloat`), as TFLite's `DepthwiseConvHybridPerChannel` computes it.
pub struct HybridDepthwise {
    g: DepthwiseGeom,
    t: VnniToken,
    p: DwVnni,
    /// Weight scale and bias per register slot.
    scale: Vec<f32>,
    bias: Option<Vec<f32>>,
    clamp: (f32, f32),
}

impl HybridDepthwise {
    /// Packs `filter` (`[1, k_h, k_w, c]` int8, scale `scale[c]` per channel) of a depthwise
    /// convolution of one image; `None` where the VNNI kernel does not apply (no AVX-512
    /// VNNI, a depth multiplier, more than 64 taps).
    pub fn new(g: DepthwiseGeom, filter: &[i8], scale: &[f32], bias: Option<&[f32]>, clamp: (f32, f32)) -> Option<HybridDepthwise> {
        let c = g.in_c;
        let t = VnniToken::new()?;
        if g.batch != 1 || g.multiplier != 1 || !(1..=sdw::MAX_TAPS).contains(&(g.k_h * g.k_w)) || scale.len() < c || bias.is_some_and(|b| b.len() < c) || filter.len() < g.k_h * g.k_w * c {
            return None;
        }
        let q = ConvQuant::raw(c);
        let fixed: Vec<sq::LaneConst> = q.requant.iter().map(|&r| sq::LaneConst::of(r, 0)).collect::<Option<_>>()?;
        let p = pack_vnni::<u8, i8>(&g, &q, &fixed, filter);
        let slots = c.div_ceil(BLOCK) * BLOCK;
        let by_slot = |v: &[f32]| -> Vec<f32> {
            (0..slots).map(|i| slot_channel(c, i / BLOCK, i % BLOCK)).map(|ch| if ch < c { v[ch] } else { 0.0 }).collect()
        };
        Some(HybridDepthwise { g, t, scale: by_slot(scale), bias: bias.map(by_slot), clamp, p })
    }

    /// Runs on one image `xq` (NHWC unsigned bytes with zero point `zx`, scale `input_scale`)
    /// into `out` (NHWC floats) on the current run's kernel pool.
    pub fn run(&self, xq: &[u8], zx: i32, input_scale: f32, out: &mut [f32]) {
        let g = self.g;
        let f = sdw::DwFloat { scale: &self.scale, bias: self.bias.as_deref(), zx, input_scale, clamp: self.clamp };
        // Taps outside the image read the zero point.
        let pad = vec![zx as u8; self.scale.len()];
        let row_len = g.out_w * g.out_c();
        let (rows, row_macs) = (g.out_h, row_len * g.k_h * g.k_w);
        for_rows(out, rows, row_len, row_macs, |(r, orow)| sdw::row_f32(self.t, &self.p, &f, &g, xq, &pad, r, orow));
    }
}

/// Packs weights and per-channel parameters for the VNNI kernel (layout at [`DwVnni`]).
///
/// Each channel's weights shift by `aw = −zw` when every `w − zw` of the channel is a signed
/// byte (then `zw' = 0`: uint8 per-tensor weights usually are), otherwise by the weight type's
/// shift (−128 for uint8); when every `zw'` is 0 the kernel needs no input sums.
fn pack_vnni<TI: QInt, TW: QInt>(g: &DepthwiseGeom, q: &ConvQuant, fixed: &[sq::LaneConst], filter: &[TW]) -> DwVnni {
    let c = g.in_c;
    let taps = g.k_h * g.k_w;
    let quads = taps.div_ceil(4);
    let blocks = c.div_ceil(BLOCK);
    let type_shift = if TW::MIN == 0 { -128 } else { 0 };
    let aw: Vec<i32> = (0..c)
        .map(|ch| {
            let z = q.w_zp[ch];
            let fits = (0..taps).all(|t| (-128..=127).contains(&(filter[t * c + ch].get() - z)));
            if fits { -z } else { type_shift }
        })
        .collect();
    let zx = q.in_zp + input_shift::<TI>();
    let chan = |blk: usize, s: usize| slot_channel(c, blk, s);
    let wp = |ch: usize, t: usize| if ch < c && t < taps { filter[t * c + ch].get() + aw[ch] } else { 0 };
    // The layout depends on the channels, the taps and the weights' type (beside the weights).
    let facts = [1, c as u64, taps as u64, type_shift as u64 & 0xff];
    let w = prepack::lines(prepack::tag::Q_DW_QUADS, facts, blocks * quads * 4 * BLOCK, |dst: &mut [i8]| {
        let mut at = 0;
        for blk in 0..blocks {
            for qd in 0..quads {
                for s in 0..BLOCK {
                    for t in 0..4 {
                        dst[at] = wp(chan(blk, s), 4 * qd + t) as i8;
                        at += 1;
                    }
                }
            }
        }
    });
    let slots = blocks * BLOCK;
    let (mut bias, mut zw, mut mult, mut left) = (vec![0; slots], vec![0; slots], vec![0; slots], vec![0; slots]);
    let mut sums = vec![0; slots];
    let mut consts = vec![sq::LaneConst::fixed(0, 0); slots];
    for i in 0..slots {
        let ch = chan(i / BLOCK, i % BLOCK);
        if ch >= c {
            continue;
        }
        let zwp = q.w_zp[ch] + aw[ch];
        let sum_w = (0..taps).fold(0i32, |a, t| a.wrapping_add(wp(ch, t)));
        let b = q.bias.as_ref().map_or(0, |b| b[ch] as i32);
        sums[i] = sum_w;
        bias[i] = b.wrapping_sub(zx.wrapping_mul(sum_w)).wrapping_add((taps as i32).wrapping_mul(zx).wrapping_mul(zwp));
        zw[i] = zwp;
        let lc = fixed[ch];
        mult[i] = lc.mult;
        left[i] = lc.left;
        consts[i] = lc;
    }
    let zw_blocks = zw.chunks(BLOCK).map(|b| b.iter().any(|&z| z != 0)).collect();
    if zw.iter().all(|&z| z == 0) {
        zw.clear();
    }
    let mult_odd = (0..slots).map(|s| if s % 2 == 0 { mult[s + 1] } else { 0 }).collect();
    let (k, corr, sh) = sq::LaneConst::split(&consts);
    let any_left = left.iter().any(|&l| l > 0);
    let pad_byte = bytemuck::bytes_of(&TI::put(q.in_zp))[0];
    DwVnni {
        c,
        taps,
        w,
        bias,
        sum_w: sums,
        zw,
        zw_blocks,
        mult,
        mult_odd,
        left,
        out: (q.out_zp, q.act.0, q.act.1),
        any_left,
        k,
        corr,
        sh,
        signed: TI::MIN < 0,
        pad: vec![pad_byte; slots],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::Requant;
    use proptest::prelude::*;

    fn ints(seed: u64, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        let mut s = seed | 1;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                lo + ((s >> 33) % (hi - lo + 1) as u64) as i32
            })
            .collect()
    }

    /// The shape of one case: channels, input size, filter, strides, dilations, padding
    /// (top, left, bottom, right).
    #[derive(Clone, Copy, Debug)]
    struct Shape {
        c: usize,
        hw: (usize, usize),
        k: (usize, usize),
        s: (usize, usize),
        d: (usize, usize),
        pad: [usize; 4],
    }

    impl Shape {
        /// The geometry of `batch` images of this shape (inputs at least as large as the
        /// dilated filter).
        fn geom(self, batch: usize) -> DepthwiseGeom {
            let Shape { c, hw, k, s, d, pad } = self;
            let (ek_h, ek_w) = ((k.0 - 1) * d.0 + 1, (k.1 - 1) * d.1 + 1);
            let (in_h, in_w) = (hw.0.max(ek_h), hw.1.max(ek_w));
            DepthwiseGeom {
                batch,
                in_h,
                in_w,
                in_c: c,
                multiplier: 1,
                out_h: (in_h + pad[0] + pad[2] - ek_h) / s.0 + 1,
                out_w: (in_w + pad[1] + pad[3] - ek_w) / s.1 + 1,
                k_h: k.0,
                k_w: k.1,
                stride_h: s.0,
                stride_w: s.1,
                dil_h: d.0,
                dil_w: d.1,
                pad_top: pad[0],
                pad_left: pad[1],
            }
        }
    }

    /// How a case is quantized.
    #[derive(Clone, Copy, Debug)]
    struct Scheme {
        /// One weight zero point and one multiplier for all channels (uint8 models), else
        /// per-channel multipliers and zero weight zero points (int8 models).
        per_tensor: bool,
        /// Weights within ±`near` of their zero point (every `w − zw` a signed byte) except in
        /// channel 0, which takes the whole range; 0: every weight anywhere in its type.
        near: i32,
        /// Clamp: the output zero point as its lower bound (ReLU) or a random one.
        relu: bool,
    }

    /// The optimized kernel (the VNNI one where the CPU has it) against the reference, bit for
    /// bit, with input, weight and output types `TI`, `TW`, `TO`.
    fn case<TI: QInt, TW: QInt, TO: QInt>(sh: Shape, sc: Scheme, seed: u64) -> Result<(), TestCaseError> {
        let c = sh.c;
        let g = sh.geom(1 + (seed % 2) as usize);
        let x: Vec<TI> = ints(seed, g.input_len(), TI::MIN, TI::MAX).into_iter().map(TI::put).collect();
        let zp = ints(seed ^ 2, 3, TI::MIN, TI::MAX);
        let wz = ints(seed ^ 6, c, TW::MIN, TW::MAX);
        let w_zp: Vec<i32> = (0..c).map(|ch| if sc.per_tensor { wz[0] } else if TW::MIN == 0 { wz[ch] } else { 0 }).collect();
        let raw = ints(seed ^ 1, g.filter_len(), TW::MIN, TW::MAX);
        let w: Vec<TW> = raw
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let ch = i % c;
                TW::put(if sc.near > 0 && ch > 0 { (w_zp[ch] + v % (sc.near + 1)).clamp(TW::MIN, TW::MAX) } else { v })
            })
            .collect();
        let mults = ints(seed ^ 3, c, 1 << 30, i32::MAX - 1);
        let shifts = ints(seed ^ 4, c, -12, 2);
        let at = |v: &[i32], ch: usize| if sc.per_tensor { v[0] } else { v[ch] };
        let out_zp = zp[1].clamp(TO::MIN, TO::MAX);
        let bounds = ints(seed ^ 7, 2, TO::MIN, TO::MAX);
        let act = if sc.relu { (out_zp, TO::MAX) } else { (bounds[0].min(bounds[1]), bounds[0].max(bounds[1])) };
        let q = ConvQuant {
            in_zp: zp[0],
            w_zp,
            out_zp,
            requant: (0..c).map(|ch| Requant::Fixed { multiplier: at(&mults, ch), shift: at(&shifts, ch) }).collect(),
            act,
            bias: Some(ints(seed ^ 5, c, -30000, 30000).into_iter().map(|b| b as i64).collect()),
            wide: false,
        };
        let mut want = vec![TO::default(); g.output_len()];
        reference::depthwise::<TI, TW, TO>(&g, &q, &x, &w, &mut want);
        let mut got = vec![TO::default(); g.output_len()];
        QDepthwise::new::<TI, TW>(g, q, &w).run::<TI, TO>(&x, &mut got);
        let (got, want): (Vec<i32>, Vec<i32>) = (got.iter().map(|v| v.get()).collect(), want.iter().map(|v| v.get()).collect());
        prop_assert_eq!(got, want, "{:?} {:?}", sh, sc);
        Ok(())
    }

    /// The dynamic-range kernel against TFLite's `DepthwiseConvHybridPerChannel` loops, bit for
    /// bit, on one and (`threads`) two threads, with and without bias.
    fn hybrid_case(sh: Shape, seed: u64, with_bias: bool, threads: usize) -> Result<(), TestCaseError> {
        use crate::quant::hybrid::{depthwise_per_channel, FloatClamp};
        let c = sh.c;
        let g = sh.geom(1);
        let x: Vec<i8> = ints(seed, g.input_len(), -128, 127).into_iter().map(|v| v as i8).collect();
        let xu: Vec<u8> = x.iter().map(|&v| v as u8 ^ 0x80).collect();
        let offset = ints(seed ^ 1, 1, -128, 127)[0];
        let w: Vec<i8> = ints(seed ^ 2, g.filter_len(), -127, 127).into_iter().map(|v| v as i8).collect();
        let scale: Vec<f32> = ints(seed ^ 3, c, 1, 1000).into_iter().map(|v| v as f32 * 1e-5).collect();
        let bias: Vec<f32> = ints(seed ^ 4, c, -100, 100).into_iter().map(|v| v as f32 * 0.01).collect();
        let bias = with_bias.then_some(&bias[..]);
        let clamp = if seed % 2 == 0 { FloatClamp(0.0, 6.0) } else { FloatClamp(f32::NEG_INFINITY, f32::INFINITY) };
        let mut want = vec![0f32; g.output_len()];
        depthwise_per_channel(&g, &x, &[offset], &[0.021], &w, &scale, bias, clamp, &mut want);
        let Some(dw) = HybridDepthwise::new(g, &w, &scale, bias, (clamp.0, clamp.1)) else {
            return Ok(()); // no VNNI, or more than 64 taps: the integer loops run instead
        };
        let mut got = vec![f32::NAN; g.output_len()];
        nnrt_threads::KernelPool::new(threads).expect("pool").install(|| dw.run(&xu, offset + 128, 0.021, &mut got));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&got), bits(&want), "{:?}", sh);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Every channel count (whole 64-channel blocks, tails of 1..=16, 17..=32 and more),
        /// filters up to 8×8, strides, dilations, asymmetric padding.
        #[test]
        fn hybrid_depthwise_matches_reference(sh in shapes(), seed in any::<u64>(), with_bias in any::<bool>()) {
            hybrid_case(sh, seed, with_bias, 1)?;
        }
    }

    /// MobileNet layers large enough to split across two threads.
    #[test]
    fn hybrid_depthwise_layers_match_reference() {
        for (i, &(hw, c, s)) in [(56, 144, 2), (28, 192, 1), (14, 576, 1), (7, 960, 1), (30, 24, 1), (20, 40, 2), (9, 200, 1)].iter().enumerate() {
            let sh = Shape { c, hw: (hw, hw), k: (3, 3), s: (s, s), d: (1, 1), pad: [1, 1, if s == 1 { 1 } else { 0 }, if s == 1 { 1 } else { 0 }] };
            for threads in [1, 2] {
                hybrid_case(sh, 500 + i as u64, i % 2 == 0, threads).unwrap();
            }
        }
    }

    fn shapes() -> impl Strategy<Value = Shape> {
        (1usize..200, (1usize..9, 1usize..9), (1usize..9, 1usize..9), (1usize..4, 1usize..4), (1usize..3, 1usize..3), [0usize..3, 0usize..3, 0usize..3, 0usize..3])
            .prop_map(|(c, hw, k, s, d, pad)| Shape { c, hw, k, s, d, pad })
    }

    fn schemes() -> impl Strategy<Value = Scheme> {
        (any::<bool>(), prop_oneof![Just(0), Just(60), 1i32..128], any::<bool>()).prop_map(|(per_tensor, near, relu)| Scheme { per_tensor, near, relu })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        /// int8 with per-channel multipliers and uint8 with per-tensor ones (and each with
        /// the other's form), every channel count (whole 64-channel blocks, tails of 1..=16,
        /// 17..=32 and more), filters up to 8×8, strides, dilations, asymmetric padding.
        #[test]
        fn depthwise_matches_reference(sh in shapes(), sc in schemes(), seed in any::<u64>(), kind in 0..4) {
            match kind {
                0 => case::<i8, i8, i8>(sh, sc, seed)?,
                1 => case::<u8, u8, u8>(sh, sc, seed)?,
                // Mixed signedness, as the fused TOSA chains run it.
                2 => case::<u8, i8, i8>(sh, sc, seed)?,
                _ => case::<i8, i8, u8>(sh, sc, seed)?,
            }
        }
    }

    /// MobileNet layers (3×3, SAME, stride 1 and 2) with the channel counts the kernel splits
    /// differently, both quantization schemes.
    #[test]
    fn mobilenet_layers_match_reference() {
        for (i, &(hw, c, s)) in [(9, 16, 1), (9, 32, 2), (8, 96, 2), (7, 144, 1), (6, 144, 2), (5, 384, 1), (4, 960, 1), (5, 24, 1), (5, 40, 2), (3, 200, 1)].iter().enumerate() {
            let sh = Shape { c, hw: (hw, hw), k: (3, 3), s: (s, s), d: (1, 1), pad: [1, 1, if s == 1 { 1 } else { 0 }, if s == 1 { 1 } else { 0 }] };
            let seed = 1000 + i as u64;
            case::<i8, i8, i8>(sh, Scheme { per_tensor: false, near: 0, relu: true }, seed).unwrap();
            case::<u8, u8, u8>(sh, Scheme { per_tensor: true, near: 110, relu: true }, seed).unwrap();
            case::<u8, u8, u8>(sh, Scheme { per_tensor: true, near: 0, relu: false }, seed).unwrap();
        }
    }
}
