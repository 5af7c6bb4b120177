//! Optimized quantized DEPTHWISE_CONV_2D: for each output pixel, the in-bounds taps add
//! `(x − zx) · (w − zw)` over a whole row of channels at once (channels are contiguous in NHWC),
//! then one vectorizable requantization of the row. Taps outside the input are skipped, as in
//! TFLite's reference. Rows of output pixels run in parallel.

use rayon::prelude::*;

use super::reference::{self, ConvQuant};
use super::requant::ChannelRequant;
use super::{QInt, Requant};
use crate::kernels::depthwise::DepthwiseGeom;
use crate::simd::quant as sq;

/// A prepared quantized depthwise convolution.
pub struct QDepthwise {
    g: DepthwiseGeom,
    q: ConvQuant,
    /// `w − zw` per tap and output channel (`k_h · k_w × out_c`), for the fast path.
    wz: Vec<i16>,
    bias: Vec<i32>,
    rq: ChannelRequant,
    fast: bool,
    weights: Vec<i16>,
}

impl QDepthwise {
    /// Prepares `filter` (`[1, k_h, k_w, out_c]`, type `TW`).
    pub fn new<TI: QInt, TW: QInt>(g: DepthwiseGeom, q: ConvQuant, filter: &[TW]) -> QDepthwise {
        let oc = g.out_c();
        let fixed: Option<Vec<(i32, i32)>> = q
            .requant
            .iter()
            .map(|r| {
                if let Requant::Fixed { multiplier, shift } = r {
                    Some((*multiplier, *shift))
                } else {
                    None
                }
            })
            .collect();
        let fast = std::mem::size_of::<TI>() == 1 && !q.wide && fixed.is_some();
        let wz = filter.iter().enumerate().map(|(i, w)| (w.get() - q.w_zp[i % oc]) as i16).collect();
        let bias = (0..oc).map(|c| q.bias.as_ref().map_or(0, |b| b[c] as i32)).collect();
        let rq = ChannelRequant::new(fixed.unwrap_or_default());
        let weights = filter.iter().map(|w| w.get() as i16).collect();
        QDepthwise {
            g,
            q,
            wz,
            bias,
            rq,
            fast,
            weights,
        }
    }

    /// Raw int32 accumulators `Σ (x − in_zp) · w` for an int8 input whose zero point is only
    /// known at run time (dynamic-range depthwise convolutions). Needs 8-bit weights.
    pub fn run_raw(&self, input: &[i8], in_zp: i32, out: &mut [i32]) {
        let g = self.g;
        let row_len = g.out_w * g.out_c();
        let rows = g.batch * g.out_h;
        let task = |(r, orow): (usize, &mut [i32])| sq::dw_row::<i8, i32, true>(self, input, in_zp, r, orow);
        if rows > 1 && rayon::current_num_threads() > 1 {
            out[..rows * row_len].par_chunks_mut(row_len).enumerate().for_each(task);
        } else {
            out[..rows * row_len].chunks_mut(row_len).enumerate().for_each(task);
        }
    }

    /// Runs on `input` into `out` (NHWC) on the current rayon pool.
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        if !self.fast {
            reference::depthwise::<TI, i16, TO>(&self.g, &self.q, input, &self.weights, out);
            return;
        }
        let g = self.g;
        let oc = g.out_c();
        let row_len = g.out_w * oc;
        let zx = self.q.in_zp;
        let task = |(r, orow): (usize, &mut [TO])| sq::dw_row::<TI, TO, false>(self, input, zx, r, orow);
        let rows = g.batch * g.out_h;
        if rows > 1 && rayon::current_num_threads() > 1 {
            out[..rows * row_len].par_chunks_mut(row_len).enumerate().for_each(task);
        } else {
            out[..rows * row_len].chunks_mut(row_len).enumerate().for_each(task);
        }
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
                sq::requant_row(&mut acc, &self.bias, &self.rq, 0, self.q.out_zp, self.q.act.0, self.q.act.1);
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
