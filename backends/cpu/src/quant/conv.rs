//! Optimized quantized CONV_2D and FULLY_CONNECTED: weights packed once ([`QPackedB`]), `A`
//! built one block of output pixels at a time (im2col in the unsigned-byte domain, padding taps
//! reading the input zero point so they contribute nothing), the integer GEMM, and the
//! requantizing epilogue. Grouped convolutions and 16-bit activations run the reference loops.

use super::gemm::{best_layout, input_shift, qgemm, QASource, QEpilogue, QLayout, QPackedB, RowsSource};
use super::reference::{self, ConvQuant};
use super::QInt;
use crate::kernels::conv::ConvGeom;

/// im2col rows of one convolution (group 0 of an ungrouped convolution).
struct Im2col<'a, TI> {
    g: ConvGeom,
    input: &'a [TI],
    /// Input zero point in the unsigned-byte domain: what out-of-image taps read.
    pad: u8,
}

impl<TI: QInt> QASource for Im2col<'_, TI> {
    fn fill(&self, row0: usize, rows: usize, kp: usize, dst: &mut [u8]) {
        let g = &self.g;
        let cin = g.in_c;
        // A pixel whose taps are all inside copies k_h runs of k_w * cin values (dil_w = 1).
        let seg = g.k_w * cin;
        let eff_h = (g.k_h - 1) * g.dil_h + 1;
        let row_step = g.dil_h * g.in_w * cin;
        let (mut ox, mut oy, mut b) = (row0 % g.out_w, (row0 / g.out_w) % g.out_h, row0 / (g.out_w * g.out_h));
        let o = g.k_h * g.k_w * cin;
        if o < kp {
            // The K padding of every row at once (one call, not one per row).
            dst[..rows * kp].fill(0);
        }
        // Short runs (a 3-channel stem copies 9 bytes at a time) are shifted in a plain loop:
        // the flip is opaque to the compiler so the copy of a uint8 input does not become a
        // `memcpy` call per run, which costs more than the run.
        let flip: u8 = std::hint::black_box(if TI::MIN < 0 && std::mem::size_of::<TI>() == 1 { 0x80 } else { 0 });
        let short = std::mem::size_of::<TI>() == 1 && seg < 64;
        for d in dst.chunks_exact_mut(kp).take(rows) {
            let iy0 = (oy * g.stride_h) as isize - g.pad_top as isize;
            let ix0 = (ox * g.stride_w) as isize - g.pad_left as isize;
            if g.dil_w == 1 && iy0 >= 0 && ix0 >= 0 && iy0 as usize + eff_h <= g.in_h && ix0 as usize + g.k_w <= g.in_w {
                let s0 = ((b * g.in_h + iy0 as usize) * g.in_w + ix0 as usize) * cin;
                for (ky, dseg) in d[..o].chunks_exact_mut(seg).enumerate() {
                    let s = s0 + ky * row_step;
                    if short {
                        let src: &[u8] = bytemuck::cast_slice(&self.input[s..s + seg]);
                        for (t, &x) in dseg.iter_mut().zip(src) {
                            *t = x ^ flip;
                        }
                    } else {
                        super::gemm::to_unsigned(&self.input[s..s + seg], dseg);
                    }
                }
            } else {
                self.border_pixel(d, b, oy, ox);
            }
            (b, oy, ox) = g.next_pixel((b, oy, ox));
        }
    }
}

impl<TI: QInt> Im2col<'_, TI> {
    /// The im2col row of output pixel `(b, oy, ox)` tap by tap, padding taps reading the zero
    /// point (the first `k_h * k_w * in_c` values of `d`).
    fn border_pixel(&self, d: &mut [u8], b: usize, oy: usize, ox: usize) {
        let g = &self.g;
        let ax = input_shift::<TI>();
        let cin = g.in_c;
        let mut o = 0;
        for ky in 0..g.k_h {
            let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
            for kx in 0..g.k_w {
                let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                let seg = &mut d[o..o + cin];
                if iy < 0 || iy >= g.in_h as isize || ix < 0 || ix >= g.in_w as isize {
                    seg.fill(self.pad);
                } else {
                    let s = ((b * g.in_h + iy as usize) * g.in_w + ix as usize) * cin;
                    for (t, &x) in seg.iter_mut().zip(&self.input[s..s + cin]) {
                        *t = (x.get() + ax) as u8;
                    }
                }
                o += cin;
            }
        }
    }
}

/// A prepared quantized convolution.
pub struct QConv {
    g: ConvGeom,
    q: ConvQuant,
    /// Packed weights and epilogue for the fast path (ungrouped, 8-bit activations).
    fast: Option<(QPackedB, QEpilogue)>,
    /// Unpacked weights for the reference path (8-bit values widened).
    weights: Vec<i16>,
}

impl QConv {
    /// Packs `filter` (OHWI, type `TW`) for activations of type `TI`.
    pub fn new<TI: QInt, TW: QInt>(g: ConvGeom, q: ConvQuant, filter: &[TW]) -> QConv {
        Self::with_layout::<TI, TW>(g, q, filter, best_layout())
    }

    /// Like [`QConv::new`] with an explicit packing (tests and benches compare layouts).
    pub fn with_layout<TI: QInt, TW: QInt>(g: ConvGeom, q: ConvQuant, filter: &[TW], layout: QLayout) -> QConv {
        let eight_bit = std::mem::size_of::<TI>() == 1 && std::mem::size_of::<TW>() == 1;
        let fast = (eight_bit && g.groups == 1 && !q.wide).then(|| {
            let b = QPackedB::pack(layout, g.out_c, g.taps(), filter, &q.w_zp);
            let ep = QEpilogue::new(&b, &q, q.in_zp + input_shift::<TI>());
            (b, ep)
        });
        let weights = if fast.is_some() {
            Vec::new()
        } else {
            filter.iter().map(|w| w.get() as i16).collect()
        };
        QConv { g, q, fast, weights }
    }

    /// Runs on `input` (NHWC) into `out` (NHWC) on the current run's kernel pool.
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        let g = self.g;
        match &self.fast {
            Some((b, ep)) => {
                let m = g.batch * g.out_h * g.out_w;
                let direct = g.k_h == 1
                    && g.k_w == 1
                    && g.stride_h == 1
                    && g.stride_w == 1
                    && g.pad_top == 0
                    && g.pad_left == 0
                    && g.in_h == g.out_h
                    && g.in_w == g.out_w;
                if direct {
                    qgemm(m, &RowsSource { data: input, k: g.in_c }, b, ep, out, g.out_c, 0);
                } else {
                    let pad = (self.q.in_zp + input_shift::<TI>()) as u8;
                    qgemm(m, &Im2col { g, input, pad }, b, ep, out, g.out_c, 0);
                }
            }
            None => reference::conv::<TI, i16, TO>(&g, &self.q, input, &self.weights, out),
        }
    }
}

impl QConv {
    /// Raw int32 accumulators `Σ w · (x − in_zp)` (no bias, no requantization) for an int8
    /// input whose zero point is only known at run time (dynamic-range convolutions).
    pub fn run_raw(&self, input: &[i8], in_zp: i32, out: &mut [i32]) {
        let g = self.g;
        let q = ConvQuant {
            in_zp,
            w_zp: self.q.w_zp.clone(),
            out_zp: 0,
            requant: vec![super::Requant::Fixed { multiplier: 1 << 30, shift: 1 }; g.out_c],
            act: (i32::MIN, i32::MAX),
            bias: None,
            wide: false,
        };
        match &self.fast {
            Some((b, _)) => {
                let ep = QEpilogue::new(b, &q, in_zp + 128);
                let m = g.batch * g.out_h * g.out_w;
                qgemm(m, &Im2col { g, input, pad: (in_zp + 128) as u8 }, b, &ep, out, g.out_c, 0);
            }
            None => reference::conv::<i8, i16, i32>(&g, &q, input, &self.weights, out),
        }
    }
}

/// A prepared quantized FULLY_CONNECTED.
pub struct QFullyConnected {
    n: usize,
    k: usize,
    q: ConvQuant,
    fast: Option<(QPackedB, QEpilogue)>,
    weights: Vec<i16>,
}

impl QFullyConnected {
    /// Packs `weights` (`n × k`, type `TW`) for inputs of type `TI`.
    pub fn new<TI: QInt, TW: QInt>(n: usize, k: usize, q: ConvQuant, weights: &[TW]) -> QFullyConnected {
        Self::with_layout::<TI, TW>(n, k, q, weights, best_layout())
    }

    /// Like [`QFullyConnected::new`] with an explicit packing.
    pub fn with_layout<TI: QInt, TW: QInt>(n: usize, k: usize, q: ConvQuant, weights: &[TW], layout: QLayout) -> QFullyConnected {
        let eight_bit = std::mem::size_of::<TI>() == 1 && std::mem::size_of::<TW>() == 1;
        let fast = (eight_bit && !q.wide).then(|| {
            let b = QPackedB::pack(layout, n, k, weights, &q.w_zp);
            let ep = QEpilogue::new(&b, &q, q.in_zp + input_shift::<TI>());
            (b, ep)
        });
        let weights = if fast.is_some() {
            Vec::new()
        } else {
            weights.iter().map(|w| w.get() as i16).collect()
        };
        QFullyConnected { n, k, q, fast, weights }
    }

    /// Runs on `input` (`m × k`) into `out` (`m × n`).
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        let m = input.len() / self.k.max(1);
        match &self.fast {
            Some((b, ep)) => qgemm(m, &RowsSource { data: input, k: self.k }, b, ep, out, self.n, 0),
            None => reference::fully_connected::<TI, i16, TO>(m, self.k, self.n, &self.q, input, &self.weights, out),
        }
    }
}
