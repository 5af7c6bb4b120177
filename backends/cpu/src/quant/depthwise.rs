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
        let wz = filter.iter().enumerate().map(|(i, w)| (w.get() - q.w_zp[i % oc]) as i16).collect();
        let bias = (0..oc).map(|c| q.bias.as_ref().map_or(0, |b| b[c] as i32)).collect();
        let vnni = match (&fixed, VnniToken::new()) {
            (Some(f), Some(t)) if fast && std::mem::size_of::<TW>() == 1 && g.multiplier == 1 && (g.k_h * g.k_w).div_ceil(4) * 4 <= sdw::MAX_TAPS && (TI::MIN..=TI::MAX).contains(&q.in_zp) => {
                Some((t, pack_vnni::<TI, TW>(&g, &q, f, filter)))
            }
            _ => None,
        };
        let rq = channel.unwrap_or_default();
        let weights = filter.iter().map(|w| w.get() as i16).collect();
        QDepthwise {
            g,
            q,
            wz,
            bias,
            rq,
            fast,
            vnni,
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
        if let Some((t, p)) = self.vnni.as_ref().filter(|_| std::mem::size_of::<TI>() == 1 && std::mem::size_of::<TO>() == 1) {
            let input: &[u8] = bytemuck::cast_slice(input);
            let out: &mut [u8] = bytemuck::cast_slice_mut(out);
            let signed = TO::MIN < 0;
            for_rows(out, rows, row_len, row_macs, |(r, orow)| sdw::row(*t, p, &g, input, r, orow, signed));
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

/// Packs weights and per-channel parameters for the VNNI kernel (layout at [`DwVnni`]).
fn pack_vnni<TI: QInt, TW: QInt>(g: &DepthwiseGeom, q: &ConvQuant, fixed: &[sq::LaneConst], filter: &[TW]) -> DwVnni {
    let c = g.in_c;
    let taps = g.k_h * g.k_w;
    let quads = taps.div_ceil(4);
    let blocks = c.div_ceil(BLOCK);
    let pixels = match c {
        1..=16 => 4,
        17..=32 => 2,
        _ => 1,
    };
    let lp = 4 / pixels;
    let aw = if TW::MIN == 0 { -128 } else { 0 };
    let zx = q.in_zp + input_shift::<TI>();
    // Channel held by register slot `s` (vector `s / 16`, lane `s % 16`, 128-bit part
    // `s % 16 / 4`) of block `blk`.
    let chan = |blk: usize, s: usize| blk * BLOCK + 16 * ((s % 16) / 4 % lp) + 4 * (s / 16) + s % 4;
    let wp = |ch: usize, t: usize| if ch < c && t < taps { filter[t * c + ch].get() + aw } else { 0 };
    let mut w = Vec::with_capacity(blocks * quads * 4 * BLOCK);
    for blk in 0..blocks {
        for qd in 0..quads {
            for s in 0..BLOCK {
                for t in 0..4 {
                    w.push(wp(chan(blk, s), 4 * qd + t) as i8);
                }
            }
        }
    }
    let slots = blocks * BLOCK;
    let (mut bias, mut zw, mut mult, mut left, right) = (vec![0; slots], vec![0; slots], vec![0; slots], vec![0; slots], vec![0; slots]);
    let mut consts = vec![sq::LaneConst::fixed(0, 0); slots];
    for i in 0..slots {
        let ch = chan(i / BLOCK, i % BLOCK);
        if ch >= c {
            continue;
        }
        let zwp = q.w_zp[ch] + aw;
        let sum_w = (0..taps).fold(0i32, |a, t| a.wrapping_add(wp(ch, t)));
        let b = q.bias.as_ref().map_or(0, |b| b[ch] as i32);
        bias[i] = b.wrapping_sub(zx.wrapping_mul(sum_w)).wrapping_add(((quads * 4) as i32).wrapping_mul(zx).wrapping_mul(zwp));
        zw[i] = zwp;
        let lc = fixed[ch];
        mult[i] = lc.mult;
        left[i] = lc.left;
        consts[i] = lc;
    }
    if zw.iter().all(|&z| z == 0) {
        zw.clear();
    }
    let (k, corr, sh) = sq::LaneConst::split(&consts);
    let any_left = left.iter().any(|&l| l > 0);
    let pad_byte = bytemuck::bytes_of(&TI::put(q.in_zp))[0];
    DwVnni {
        c,
        quads,
        pixels,
        w: w.into(),
        bias,
        zw,
        mult,
        left,
        right,
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

    /// Both 8-bit flavours against the reference, bit for bit, for `c` channels (whole VNNI
    /// blocks and tails), filters up to 5×5 with strides, dilations and padding.
    fn case<T: QInt>(c: usize, hw: (usize, usize), k: (usize, usize), s: usize, d: usize, pad: (usize, usize), seed: u64) -> Result<(), TestCaseError> {
        let (ek_h, ek_w) = ((k.0 - 1) * d + 1, (k.1 - 1) * d + 1);
        let (in_h, in_w) = (hw.0.max(ek_h), hw.1.max(ek_w));
        let g = DepthwiseGeom {
            batch: 1 + (seed % 2) as usize,
            in_h,
            in_w,
            in_c: c,
            multiplier: 1,
            out_h: (in_h + 2 * pad.0 - ek_h) / s + 1,
            out_w: (in_w + 2 * pad.1 - ek_w) / s + 1,
            k_h: k.0,
            k_w: k.1,
            stride_h: s,
            stride_w: s,
            dil_h: d,
            dil_w: d,
            pad_top: pad.0,
            pad_left: pad.1,
        };
        let x: Vec<T> = ints(seed, g.input_len(), T::MIN, T::MAX).into_iter().map(T::put).collect();
        let w: Vec<T> = ints(seed ^ 1, g.filter_len(), T::MIN, T::MAX).into_iter().map(T::put).collect();
        let zp = ints(seed ^ 2, 3, T::MIN, T::MAX);
        let w_zp = if T::MIN == 0 { vec![zp[2]; c] } else { vec![0; c] };
        let mults = ints(seed ^ 3, c, 1 << 30, i32::MAX - 1);
        let shifts = ints(seed ^ 4, c, -12, 2);
        let q = ConvQuant {
            in_zp: zp[0],
            w_zp,
            out_zp: zp[1],
            requant: (0..c).map(|i| Requant::Fixed { multiplier: mults[i], shift: shifts[i] }).collect(),
            act: (T::MIN + (seed % 7) as i32, T::MAX),
            bias: Some(ints(seed ^ 5, c, -30000, 30000).into_iter().map(|b| b as i64).collect()),
            wide: false,
        };
        let mut want = vec![T::default(); g.output_len()];
        reference::depthwise::<T, T, T>(&g, &q, &x, &w, &mut want);
        let mut got = vec![T::default(); g.output_len()];
        QDepthwise::new::<T, T>(g, q, &w).run::<T, T>(&x, &mut got);
        let (got, want): (Vec<i32>, Vec<i32>) = (got.iter().map(|v| v.get()).collect(), want.iter().map(|v| v.get()).collect());
        prop_assert_eq!(got, want);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn wide_channel_depthwise_matches_reference(c in 1usize..200, h in 1usize..7, w in 1usize..7, kh in 1usize..6, kw in 1usize..6, s in 1usize..3, d in 1usize..3, pt in 0usize..3, pl in 0usize..3, seed in any::<u64>(), unsigned in any::<bool>()) {
            if unsigned {
                case::<u8>(c, (h, w), (kh, kw), s, d, (pt, pl), seed)?;
            } else {
                case::<i8>(c, (h, w), (kh, kw), s, d, (pt, pl), seed)?;
            }
        }
    }
}
