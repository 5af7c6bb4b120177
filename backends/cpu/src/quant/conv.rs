//! Optimized quantized CONV_2D and FULLY_CONNECTED: weights packed once ([`QPackedB`]), `A`
//! built one block of output pixels at a time (im2col in the unsigned-byte domain, padding taps
//! reading the input zero point so they contribute nothing), the integer GEMM, and the
//! requantizing epilogue. Grouped convolutions and 16-bit activations run the reference loops.

use super::gemm::{best_layout, input_shift, lanes, qgemm, qgemm_f32, QASource, QEpilogue, QLayout, QPackedB, RowsSource};
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
        // Short runs (a 3-channel stem copies 9 bytes at a time) go through `copy_flip`: the
        // flip is opaque to the compiler so the copy of a uint8 input does not become a
        // `memcpy` call per run, which costs more than the run.
        let flip: u8 = std::hint::black_box(if TI::MIN < 0 && std::mem::size_of::<TI>() == 1 { 0x80 } else { 0 });
        let short = std::mem::size_of::<TI>() == 1 && seg < 64;
        // Output columns whose taps are all inside the image horizontally (dil_w = 1):
        // ix0 = ox * stride_w - pad_left >= 0 and ix0 + k_w <= in_w.
        let ox_lo = g.pad_left.div_ceil(g.stride_w);
        let ox_hi = if g.in_w + g.pad_left >= g.k_w { ((g.in_w + g.pad_left - g.k_w) / g.stride_w + 1).min(g.out_w) } else { 0 };
        let pix_step = g.stride_w * cin;
        let mut r = 0;
        while r < rows {
            let iy0 = (oy * g.stride_h) as isize - g.pad_top as isize;
            if g.dil_w == 1 && iy0 >= 0 && iy0 as usize + eff_h <= g.in_h && ox >= ox_lo && ox < ox_hi {
                // A run of interior pixels along this output row, each k_h segments.
                let n = (ox_hi - ox).min(rows - r);
                let s0 = ((b * g.in_h + iy0 as usize) * g.in_w + ox * g.stride_w - g.pad_left) * cin;
                let done = if short && seg <= 16 && kp >= 16 {
                    stem_run(&mut dst[r * kp..], kp, n, bytemuck::cast_slice(self.input), s0, pix_step, row_step, g.k_h, seg, flip)
                } else {
                    0
                };
                for (i, d) in dst[r * kp..(r + n) * kp].chunks_exact_mut(kp).enumerate().skip(done) {
                    let sp = s0 + i * pix_step;
                    for ky in 0..g.k_h {
                        let dseg = &mut d[ky * seg..(ky + 1) * seg];
                        let s = sp + ky * row_step;
                        if short {
                            copy_flip(dseg, bytemuck::cast_slice(&self.input[s..s + seg]), flip);
                        } else {
                            super::gemm::to_unsigned(&self.input[s..s + seg], dseg);
                        }
                    }
                }
                r += n;
                ox += n - 1;
            } else {
                self.border_pixel(&mut dst[r * kp..(r + 1) * kp], b, oy, ox);
                r += 1;
            }
            (b, oy, ox) = g.next_pixel((b, oy, ox));
        }
    }
}

/// Im2col rows of `n` interior pixels whose `k_h` segments are at most 16 bytes (stems with
/// few input channels), pixel `i` reading segment `ky` at `input[s0 + i * pix_step + ky *
/// row_step ..]`: one 16-byte load, flip and store per segment, each store running past its
/// segment into the next one (written after it), then 16 zero bytes over the row's K padding.
/// A row's stores reach at most 16 bytes into the next row (`kp >= 16`), which are rewritten
/// after: by that row's first store if it is one of these pixels, else by `border_pixel` or
/// the exact copies, which write its first `k_h * seg` bytes (at least 16 here: the caller
/// only comes here for rows of at least 16 bytes). Returns how many pixels it wrote: it stops where a load
/// or store would leave `input` or `dst`, for the caller to finish with exact-length copies.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn stem_run(dst: &mut [u8], kp: usize, n: usize, input: &[u8], s0: usize, pix_step: usize, row_step: usize, k_h: usize, seg: usize, flip: u8) -> usize {
    let f = u128::from_ne_bytes([flip; 16]);
    let o = k_h * seg;
    let last_in = s0 + (n - 1) * pix_step + (k_h - 1) * row_step + 16;
    // Pixels whose loads and stores all stay inside the slices.
    let fits_in = if last_in <= input.len() { n } else { 0 };
    let reach = if o < kp { o + 16 } else { o - seg + 16 };
    let fits_out = if dst.len() >= reach { (dst.len() - reach) / kp + 1 } else { 0 };
    let m = n.min(fits_in).min(fits_out);
    for i in 0..m {
        let d = i * kp;
        let sp = s0 + i * pix_step;
        for ky in 0..k_h {
            let s = sp + ky * row_step;
            let v = u128::from_ne_bytes(input[s..s + 16].try_into().expect("16 bytes")) ^ f;
            dst[d + ky * seg..d + ky * seg + 16].copy_from_slice(&v.to_ne_bytes());
        }
        if o < kp {
            dst[d + o..d + o + 16].fill(0);
        }
    }
    m
}

/// `dst[i] = src[i] ^ flip` for a short run (`dst.len()` bytes, `src` at least as long): eight
/// bytes at a time, the last eight overlapping the ones before when the length is not a
/// multiple of eight (a 3-channel 3x3 stem copies runs of 9 bytes; byte by byte that was two
/// thirds of the layer).
#[inline(always)]
fn copy_flip(dst: &mut [u8], src: &[u8], flip: u8) {
    let n = dst.len();
    let src = &src[..n];
    if n < 8 {
        for (t, &x) in dst.iter_mut().zip(src) {
            *t = x ^ flip;
        }
        return;
    }
    let f = u64::from_ne_bytes([flip; 8]);
    let eight = |at: usize, dst: &mut [u8]| {
        let v = u64::from_ne_bytes(src[at..at + 8].try_into().expect("eight bytes")) ^ f;
        dst[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    };
    let mut i = 0;
    while i + 8 <= n {
        eight(i, dst);
        i += 8;
    }
    if i < n {
        eight(n - 8, dst);
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
        let (q, weights) = match &fast {
            Some(_) => (q.fast_path_only(), Vec::new()),
            None => (q, filter.iter().map(|w| w.get() as i16).collect()),
        };
        QConv { g, q, fast, weights }
    }

    /// Runs on `input` (NHWC) into `out` (NHWC) on the current run's kernel pool.
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        let g = self.g;
        match &self.fast {
            Some((b, ep)) => {
                let m = g.batch * g.out_h * g.out_w;
                if g.is_direct() {
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

/// A prepared dynamic-range ("hybrid") CONV_2D of one image: the float input quantized at run
/// time (by the caller) to bytes in the unsigned domain (`x + 128`), int8 symmetric weights
/// packed once, and the float epilogue inside the GEMM's tiles (`simd::quant::FloatLanes`):
/// `clamp((Σ w·(x − zx)) · scale[c] · input_scale + bias[c])` as TFLite's
/// `HybridConvPerChannel` computes it, without the int32 accumulators going through memory.
/// 1×1 convolutions whose channels are a multiple of 4 read the quantized input in place.
pub struct HybridConv {
    g: ConvGeom,
    b: QPackedB,
    /// Column sums, scales and biases padded to whole 32-column panels.
    col_sum: Vec<i32>,
    scale: Vec<f32>,
    bias: Option<Vec<f32>>,
    clamp: (f32, f32),
}

impl HybridConv {
    /// Packs `filter` (OHWI int8, scale `scale[c]` per output channel) of an ungrouped
    /// convolution of one image (`g.batch` is 1); `None` for a grouped one.
    pub fn new(g: ConvGeom, filter: &[i8], scale: &[f32], bias: Option<&[f32]>, clamp: (f32, f32)) -> Option<HybridConv> {
        Self::with_layout(g, filter, scale, bias, clamp, best_layout())
    }

    /// Like [`HybridConv::new`] with an explicit packing (tests compare layouts).
    pub fn with_layout(g: ConvGeom, filter: &[i8], scale: &[f32], bias: Option<&[f32]>, clamp: (f32, f32), layout: QLayout) -> Option<HybridConv> {
        if g.groups != 1 || g.batch != 1 || scale.len() < g.out_c || bias.is_some_and(|b| b.len() < g.out_c) {
            return None;
        }
        let b = QPackedB::pack(layout, g.out_c, g.taps(), filter, &vec![0; g.out_c]);
        let pad = |v: &[f32]| lanes(g.out_c, |c| v[c]);
        Some(HybridConv { g, col_sum: b.col_sum_lanes(), scale: pad(scale), bias: bias.map(pad), clamp, b })
    }

    /// Runs on one image `xq` (NHWC, unsigned-domain bytes with zero point `zx`, scale
    /// `input_scale`) into `out` (NHWC floats) on the current run's kernel pool.
    pub fn run(&self, xq: &[u8], zx: i32, input_scale: f32, out: &mut [f32]) {
        let g = self.g;
        let (zx, input_scale) = ([zx], [input_scale]);
        let f = crate::simd::quant::FloatLanes { col_sum: &self.col_sum, scale: &self.scale, bias: self.bias.as_deref(), zx: &zx, input_scale: &input_scale, scales_first: false, clamp: self.clamp };
        let m = g.out_h * g.out_w;
        if g.is_direct() {
            qgemm_f32(m, &RowsSource { data: xq, k: g.in_c }, &self.b, &f, out, g.out_c);
        } else {
            qgemm_f32(m, &Im2col { g, input: xq, pad: zx[0] as u8 }, &self.b, &f, out, g.out_c);
        }
    }
}

/// A prepared dynamic-range ("hybrid") FULLY_CONNECTED: each input row quantized at run time
/// (by the caller) to unsigned bytes with its own zero point and scale, int8 symmetric weights
/// packed once, and TFLite's float epilogue in the GEMM's tiles: `bias[c] + (Σ w·(x − zxᵢ)) ·
/// (input_scaleᵢ · scale[c])`, then the clamp (`MatrixBatchVectorMultiplyAccumulate` with
/// per-row offsets; a missing bias adds 0.0, as TFLite's zeroed output does).
pub struct HybridFullyConnected {
    n: usize,
    k: usize,
    b: QPackedB,
    col_sum: Vec<i32>,
    scale: Vec<f32>,
    bias: Vec<f32>,
    clamp: (f32, f32),
}

impl HybridFullyConnected {
    /// Packs `weights` (`n × k` int8) with one scale per output channel, or one for all
    /// (`scale.len() == 1`).
    pub fn new(n: usize, k: usize, weights: &[i8], scale: &[f32], bias: Option<&[f32]>, clamp: (f32, f32)) -> Option<HybridFullyConnected> {
        Self::with_layout(n, k, weights, scale, bias, clamp, best_layout())
    }

    /// Like [`HybridFullyConnected::new`] with an explicit packing (tests compare layouts).
    pub fn with_layout(n: usize, k: usize, weights: &[i8], scale: &[f32], bias: Option<&[f32]>, clamp: (f32, f32), layout: QLayout) -> Option<HybridFullyConnected> {
        if weights.len() < n * k || scale.is_empty() || (scale.len() != 1 && scale.len() < n) || bias.is_some_and(|b| b.len() < n) {
            return None;
        }
        let b = QPackedB::pack(layout, n, k, &weights[..n * k], &vec![0; n]);
        let scale = lanes(n, |c| scale[if scale.len() == 1 { 0 } else { c }]);
        let bias = lanes(n, |c| bias.map_or(0.0, |b| b[c]));
        Some(HybridFullyConnected { n, k, col_sum: b.col_sum_lanes(), b, scale, bias, clamp })
    }

    /// Runs on `xq` (`m × k` unsigned bytes; row `i` with zero point `zx[i]` in that domain and
    /// scale `input_scale[i]`) into `out` (`m × n` floats) on the current run's kernel pool.
    pub fn run(&self, xq: &[u8], zx: &[i32], input_scale: &[f32], out: &mut [f32]) {
        let m = zx.len().min(input_scale.len()).min(xq.len() / self.k.max(1)).min(out.len() / self.n.max(1));
        let f = crate::simd::quant::FloatLanes {
            col_sum: &self.col_sum,
            scale: &self.scale,
            bias: Some(&self.bias),
            zx: &zx[..m],
            input_scale: &input_scale[..m],
            scales_first: true,
            clamp: self.clamp,
        };
        qgemm_f32(m, &RowsSource { data: xq, k: self.k }, &self.b, &f, out, self.n);
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
        let (q, weights) = match &fast {
            Some(_) => (q.fast_path_only(), Vec::new()),
            None => (q, weights.iter().map(|w| w.get() as i16).collect()),
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
