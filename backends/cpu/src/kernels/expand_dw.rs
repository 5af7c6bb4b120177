//! A 1×1 CONV_2D (stride 1, one group) whose only reader is a DEPTHWISE_CONV_2D, run as one
//! step: MobileNetV2's expansion convolution and the depthwise convolution after it. The
//! expanded tensor (six times the block's input: 4.8 MB at 112×112×96) is never written in
//! full. Each task owns a band of output rows and walks it a few rows at a time, computing just
//! the expanded rows those need into a window that stays in its core's L2, then the depthwise
//! rows from that window; rows the next step shares with this one move to the window's front
//! instead of being computed again. Each value goes through the same kernels, in the same
//! order, as the two ops do alone ([`gemm`], [`depthwise_conv2d`]), so the results are the
//! same bit for bit. [`DepthwiseProject`] is the same idea one op later: a depthwise
//! convolution and the 1×1 projection that reads it; [`ExpandDepthwise::with_projection`]
//! chains the three (and a residual ADD), MobileNetV2's whole inverted-residual block, so that
//! neither the expanded tensor nor the depthwise output is written in full.
#![forbid(unsafe_code)]

use std::cell::Cell;

use super::depthwise::{depthwise_conv2d, DepthwiseGeom};
use super::gemm::{gemm, gemm_add, PackedB};
use super::Act;

/// Bytes of expanded rows a window holds (at least the rows one output row needs): inside a
/// core's L2 next to the block's input and output rows, and many rows per step so that the
/// rows carried to the next step (`k_h − stride`, copied to the window's front) are few.
/// MobileNetV2, 1 thread: 128 KiB gained nothing, 512 KiB the most (1 MiB less again).
const WINDOW_BYTES: usize = 512 * 1024;
/// Bytes of depthwise rows [`DepthwiseProject`] computes per step before projecting them: the
/// rows and the projection's output rows stay in L1/L2 between the two kernels.
const PROJECT_WINDOW_BYTES: usize = 128 * 1024;
/// Bytes of depthwise rows a whole-block step ([`ExpandDepthwise::with_projection`]) computes
/// before projecting them. MobileNetV2, 1 thread, the three fused blocks against 128 KiB: 512 KiB
/// 0.93–0.95 of their time, the expanded window's size (14 rows at 56×56×144, 1.8 MB) 1.02–1.07.
const BLOCK_WINDOW_BYTES: usize = 512 * 1024;
/// Bands of output rows per thread: enough to balance, few enough that the rows a band
/// computes twice at its top edge (`k_h − stride` rows) stay a small share.
const BANDS_PER_THREAD: usize = 2;

thread_local! {
    /// Each thread's window of expanded rows, kept between runs.
    static WINDOW: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// Each thread's window of depthwise rows of a whole block (expansion, depthwise and
    /// projection), kept between runs.
    static DW_WINDOW: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// `len` values of `store` from a 64-byte boundary (the store grown as needed). The GEMM's C
/// tiles and the depthwise rows are whole-line vector stores and loads; at the allocator's
/// 16-byte alignment each of them straddled two cache lines (MobileNetV1/V2's fused pairs
/// had run slower than the two ops apart).
fn aligned_window(store: &mut Vec<f32>, len: usize) -> &mut [f32] {
    const SLACK: usize = 64 / std::mem::size_of::<f32>();
    if store.len() < len + SLACK {
        store.resize(len + SLACK, 0.0);
    }
    // `align_offset` is at most SLACK − 1 for f32; `min` keeps the slice in bounds regardless.
    let off = store.as_ptr().align_offset(64).min(SLACK);
    &mut store[off..off + len]
}

/// Runs `band(b, image, oh0, rows)` over every image `b` of `input` (`image_in` values each) and
/// its `out_h` output rows of `row_out` values in `output`: one band on one thread (a band
/// boundary may recompute rows), else [`BANDS_PER_THREAD`] per thread, split across the run's
/// pool.
fn in_bands(input: &[f32], image_in: usize, output: &mut [f32], out_h: usize, row_out: usize, band: impl Fn(usize, &[f32], usize, &mut [f32]) + Sync) {
    if image_in == 0 || row_out == 0 || out_h == 0 {
        return;
    }
    let threads = nnrt_threads::kernel_threads();
    let bands = if threads > 1 { (threads * BANDS_PER_THREAD).min(out_h) } else { 1 };
    let band_rows = out_h.div_ceil(bands);
    for (b, (x, out)) in input.chunks_exact(image_in).zip(output.chunks_exact_mut(out_h * row_out)).enumerate() {
        nnrt_threads::par_chunks_mut(out, band_rows * row_out, |t, o| band(b, x, t * band_rows, o));
    }
}

/// The fused step: `output = depthwise(act1(input · W1ᵀ + b1))` with the 1×1 weights packed.
pub struct ExpandDepthwise {
    /// Channels of the block's input (K of the expansion).
    in_c: usize,
    packed: PackedB,
    bias: Option<Vec<f32>>,
    act: Act,
    /// The depthwise convolution over the expanded tensor (`dw.in_c` = expanded channels).
    dw: DepthwiseGeom,
    filter: Vec<f32>,
    dw_bias: Option<Vec<f32>>,
    dw_act: Act,
    /// The 1×1 projection of the depthwise rows, when the step runs the whole block.
    project: Option<Projection>,
}

/// The third convolution of a fused block ([`ExpandDepthwise::with_projection`]).
struct Projection {
    /// `out_c × mid` weights, packed.
    packed: PackedB,
    bias: Option<Vec<f32>>,
    act: Act,
    /// The residual ADD's activation, when the step adds a tensor shaped like its output.
    add: Option<Act>,
}

impl ExpandDepthwise {
    /// Prepares the pair: `w1` is the expansion filter (`[mid, 1, 1, in_c]`, i.e. `mid × in_c`
    /// row-major), `dw` the depthwise geometry over the expanded tensor (multiplier 1), `filter`
    /// its `[1, k_h, k_w, mid]` weights.
    ///
    /// # Panics
    /// If the depthwise multiplier is not 1 or a slice is shorter than the shapes need.
    #[allow(clippy::too_many_arguments)]
    pub fn new(in_c: usize, w1: &[f32], b1: Option<&[f32]>, act: Act, dw: DepthwiseGeom, filter: &[f32], b2: Option<&[f32]>, dw_act: Act) -> ExpandDepthwise {
        let mid = dw.in_c;
        assert_eq!(dw.multiplier, 1, "the fused depthwise convolution has multiplier 1");
        assert!(w1.len() >= mid * in_c, "expansion filter holds {} values, needs {}", w1.len(), mid * in_c);
        assert!(filter.len() >= dw.k_h * dw.k_w * mid, "depthwise filter too short");
        for b in [b1, b2].into_iter().flatten() {
            assert!(b.len() >= mid, "bias holds {} values, needs {mid}", b.len());
        }
        ExpandDepthwise {
            in_c,
            packed: PackedB::pack(mid, in_c, &w1[..mid * in_c]),
            bias: b1.map(|b| b[..mid].to_vec()),
            act,
            dw,
            filter: filter[..dw.k_h * dw.k_w * mid].to_vec(),
            dw_bias: b2.map(|b| b[..mid].to_vec()),
            dw_act,
            project: None,
        }
    }

    /// The whole block: the depthwise rows then go through a 1×1 projection to `out_c` channels
    /// (`w3` is `[out_c, 1, 1, mid]`, i.e. `out_c × mid` row-major) with its bias and activation,
    /// and, when `add` is given, a residual ADD of a tensor shaped like the output with that
    /// activation ([`ExpandDepthwise::run_add`]). The projection runs the GEMM the 1×1 op runs,
    /// over rows still in the core's L2, and the sum rounds as the ADD op rounds it: the results
    /// are the same bit for bit as the three (four) ops apart.
    ///
    /// # Panics
    /// If `w3` or `b3` are shorter than the shapes need.
    pub fn with_projection(mut self, out_c: usize, w3: &[f32], b3: Option<&[f32]>, act: Act, add: Option<Act>) -> ExpandDepthwise {
        let mid = self.dw.in_c;
        assert!(w3.len() >= out_c * mid, "projection filter holds {} values, needs {}", w3.len(), out_c * mid);
        assert!(b3.is_none_or(|b| b.len() >= out_c), "projection bias too short");
        self.project = Some(Projection { packed: PackedB::pack(out_c, mid, &w3[..out_c * mid]), bias: b3.map(|b| b[..out_c].to_vec()), act, add });
        self
    }

    /// Channels of the step's output: the projection's, or the expanded tensor's.
    fn out_c(&self) -> usize {
        self.project.as_ref().map_or(self.dw.in_c, |p| p.packed.n())
    }

    /// Values of the block's input (`batch × in_h × in_w × in_c`).
    pub fn input_len(&self) -> usize {
        self.dw.batch * self.dw.in_h * self.dw.in_w * self.in_c
    }

    /// Values of the output (`batch × out_h × out_w × mid`, or `× out_c` with a projection).
    pub fn output_len(&self) -> usize {
        self.dw.batch * self.dw.out_h * self.dw.out_w * self.out_c()
    }

    /// Computes `output` from `input` (both NHWC) on the current run's kernel pool. A step with
    /// a residual ADD runs through [`ExpandDepthwise::run_add`] instead.
    ///
    /// # Panics
    /// If `input` or `output` are shorter than the shapes need, or the step has a residual ADD.
    pub fn run(&self, input: &[f32], output: &mut [f32]) {
        assert!(self.project.as_ref().is_none_or(|p| p.add.is_none()), "a block with a residual ADD runs through run_add");
        self.run_with(input, None, output);
    }

    /// The whole block with its residual ADD: `output = act(project(...) + residual)`,
    /// `residual` shaped like the output.
    ///
    /// # Panics
    /// If a slice is shorter than the shapes need, or the step has no residual ADD.
    pub fn run_add(&self, input: &[f32], residual: &[f32], output: &mut [f32]) {
        assert!(self.project.as_ref().is_some_and(|p| p.add.is_some()), "run_add on a step without a residual ADD");
        assert!(residual.len() >= self.output_len(), "residual holds {} values, needs {}", residual.len(), self.output_len());
        self.run_with(input, Some(residual), output);
    }

    fn run_with(&self, input: &[f32], residual: Option<&[f32]>, output: &mut [f32]) {
        let g = self.dw;
        assert!(input.len() >= self.input_len(), "input holds {} values, needs {}", input.len(), self.input_len());
        assert!(output.len() >= self.output_len(), "output holds {} values, needs {}", output.len(), self.output_len());
        let out = &mut output[..self.output_len()];
        let image_out = g.out_h * g.out_w * self.out_c();
        in_bands(input, g.in_h * g.in_w * self.in_c, out, g.out_h, g.out_w * self.out_c(), |b, x, oh0, o| {
            self.band(x, residual.map(|r| &r[b * image_out..(b + 1) * image_out]), oh0, o)
        });
    }

    /// Output rows `oh0..` (as many as `out` holds) of one image `x` (and its `residual`).
    fn band(&self, x: &[f32], residual: Option<&[f32]>, oh0: usize, out: &mut [f32]) {
        let g = self.dw;
        let mid = g.in_c;
        let (row_in, row_mid, row_dw) = (g.in_w * self.in_c, g.in_w * mid, g.out_w * mid);
        let row_out = g.out_w * self.out_c();
        let oh_end = oh0 + out.len() / row_out;
        // Output rows per step: as many as fit the window (at least one), and with a
        // projection, as many depthwise rows as fit its window.
        let reach = (g.k_h - 1) * g.dil_h + 1;
        let fit = (WINDOW_BYTES / 4 / row_mid.max(1)).max(reach);
        let mut step = ((fit - reach) / g.stride_h + 1).max(1);
        if self.project.is_some() {
            step = step.min((BLOCK_WINDOW_BYTES / 4 / row_dw.max(1)).max(1));
        }
        // Every step's rows fit this window, which stays in place for the band (rows carried
        // to the next step are moved within it).
        let most = ((step - 1) * g.stride_h + reach).min(g.in_h) * row_mid;
        let mut store = WINDOW.with(Cell::take);
        let win = aligned_window(&mut store, most);
        let mut dw_store = if self.project.is_some() { DW_WINDOW.with(Cell::take) } else { Vec::new() };
        let dw_win = if self.project.is_some() { aligned_window(&mut dw_store, step * row_dw) } else { &mut [][..] };
        // Expanded rows `have.0..have.1` sit at the front of `win`.
        let mut have = (0usize, 0usize);
        let mut oh = oh0;
        while oh < oh_end {
            let end = (oh + step).min(oh_end);
            // Expanded rows the output rows oh..end read (their taps inside the image).
            let lo = (oh * g.stride_h).saturating_sub(g.pad_top).min(g.in_h);
            let hi = ((end - 1) * g.stride_h + reach).saturating_sub(g.pad_top).min(g.in_h).max(lo);
            let need = (hi - lo) * row_mid;
            // Rows already computed move to the front; the rest are computed after them.
            let start = if have.0 <= lo && lo < have.1 {
                win.copy_within((lo - have.0) * row_mid..(have.1.min(hi) - have.0) * row_mid, 0);
                have.1.min(hi)
            } else {
                lo
            };
            if hi > start {
                let rows = (hi - start) * g.in_w;
                gemm(rows, &x[start * row_in..hi * row_in], self.in_c, &self.packed, self.bias.as_deref(), self.act, &mut win[(start - lo) * row_mid..need], mid);
            }
            have = (lo, hi);
            // The depthwise rows over the window: its row 0 is expanded row `lo`, so the
            // padding above shrinks by `lo − oh·stride` (never below 0: lo ≥ oh·stride − pad).
            let sub = DepthwiseGeom { batch: 1, in_h: hi - lo, out_h: end - oh, pad_top: g.pad_top + lo - oh * g.stride_h, ..g };
            let o = &mut out[(oh - oh0) * row_out..(end - oh0) * row_out];
            match &self.project {
                None => depthwise_conv2d(&sub, &win[..need], &self.filter, self.dw_bias.as_deref(), self.dw_act, o),
                Some(p) => {
                    // The depthwise rows into their window, then projected from there.
                    let d = &mut dw_win[..(end - oh) * row_dw];
                    depthwise_conv2d(&sub, &win[..need], &self.filter, self.dw_bias.as_deref(), self.dw_act, d);
                    let (rows, n) = ((end - oh) * g.out_w, p.packed.n());
                    match (p.add, residual) {
                        (Some(add_act), Some(r)) => gemm_add(rows, d, mid, &p.packed, p.bias.as_deref(), p.act, &r[oh * row_out..end * row_out], add_act, o, n),
                        _ => gemm(rows, d, mid, &p.packed, p.bias.as_deref(), p.act, o, n),
                    }
                }
            }
            oh = end;
        }
        WINDOW.with(|w| w.set(store));
        if self.project.is_some() {
            DW_WINDOW.with(|w| w.set(dw_store));
        }
    }
}

/// The fused step: `output = act(depthwise(input) · Wᵀ + b)`, a DEPTHWISE_CONV_2D with
/// multiplier 1 whose only reader is a 1×1 stride-1 CONV_2D: MobileNet's depthwise convolution
/// and the projection after it. Each task walks its band of output rows a few rows at a time: the
/// depthwise rows go into a window in its core's L2, then the projection's GEMM reads them from
/// there. The depthwise output is never written in full, and each thread's projection reads
/// only rows its own core computed. Same kernels, same order as the two ops alone: the results
/// are the same bit for bit.
pub struct DepthwiseProject {
    dw: DepthwiseGeom,
    filter: Vec<f32>,
    dw_bias: Option<Vec<f32>>,
    dw_act: Act,
    /// The 1×1 convolution's weights (`out_c × dw.in_c`), packed.
    packed: PackedB,
    bias: Option<Vec<f32>>,
    act: Act,
}

impl DepthwiseProject {
    /// Prepares the pair: `dw` the depthwise geometry (multiplier 1) with its `[1, k_h, k_w, c]`
    /// `filter`, `w2` the projection filter (`[out_c, 1, 1, c]`, i.e. `out_c × c` row-major).
    ///
    /// # Panics
    /// If the multiplier is not 1 or a slice is shorter than the shapes need.
    #[allow(clippy::too_many_arguments)]
    pub fn new(dw: DepthwiseGeom, filter: &[f32], b1: Option<&[f32]>, dw_act: Act, out_c: usize, w2: &[f32], b2: Option<&[f32]>, act: Act) -> DepthwiseProject {
        let c = dw.in_c;
        assert_eq!(dw.multiplier, 1, "the fused depthwise convolution has multiplier 1");
        assert!(filter.len() >= dw.k_h * dw.k_w * c, "depthwise filter too short");
        assert!(w2.len() >= out_c * c, "projection filter holds {} values, needs {}", w2.len(), out_c * c);
        assert!(b1.is_none_or(|b| b.len() >= c) && b2.is_none_or(|b| b.len() >= out_c), "bias too short");
        DepthwiseProject {
            dw,
            filter: filter[..dw.k_h * dw.k_w * c].to_vec(),
            dw_bias: b1.map(|b| b[..c].to_vec()),
            dw_act,
            packed: PackedB::pack(out_c, c, &w2[..out_c * c]),
            bias: b2.map(|b| b[..out_c].to_vec()),
            act,
        }
    }

    /// Values of the output (`batch × out_h × out_w × out_c`).
    pub fn output_len(&self) -> usize {
        self.dw.batch * self.dw.out_h * self.dw.out_w * self.packed.n()
    }

    /// Computes `output` from `input` (both NHWC) on the current run's kernel pool.
    ///
    /// # Panics
    /// If `input` or `output` are shorter than the shapes need.
    pub fn run(&self, input: &[f32], output: &mut [f32]) {
        let g = self.dw;
        assert!(input.len() >= g.input_len(), "input holds {} values, needs {}", input.len(), g.input_len());
        assert!(output.len() >= self.output_len(), "output holds {} values, needs {}", output.len(), self.output_len());
        let out = &mut output[..self.output_len()];
        in_bands(input, g.in_h * g.in_w * g.in_c, out, g.out_h, g.out_w * self.packed.n(), |_, x, oh0, o| self.band(x, oh0, o));
    }

    /// Output rows `oh0..` (as many as `out` holds) of one image `x`.
    fn band(&self, x: &[f32], oh0: usize, out: &mut [f32]) {
        let g = self.dw;
        let (row_in, row_mid, row_out) = (g.in_w * g.in_c, g.out_w * g.in_c, g.out_w * self.packed.n());
        let oh_end = oh0 + out.len() / row_out;
        let step = (PROJECT_WINDOW_BYTES / 4 / row_mid.max(1)).max(1);
        let reach = (g.k_h - 1) * g.dil_h + 1;
        let mut store = WINDOW.with(Cell::take);
        let win = aligned_window(&mut store, step * row_mid);
        let mut oh = oh0;
        while oh < oh_end {
            let end = (oh + step).min(oh_end);
            // Input rows the output rows oh..end read (their taps inside the image).
            let lo = (oh * g.stride_h).saturating_sub(g.pad_top).min(g.in_h);
            let hi = ((end - 1) * g.stride_h + reach).saturating_sub(g.pad_top).min(g.in_h).max(lo);
            let need = (end - oh) * row_mid;
            let sub = DepthwiseGeom { batch: 1, in_h: hi - lo, out_h: end - oh, pad_top: g.pad_top + lo - oh * g.stride_h, ..g };
            depthwise_conv2d(&sub, &x[lo * row_in..hi * row_in], &self.filter, self.dw_bias.as_deref(), self.dw_act, &mut win[..need]);
            let rows = (end - oh) * g.out_w;
            gemm(rows, &win[..need], g.in_c, &self.packed, self.bias.as_deref(), self.act, &mut out[(oh - oh0) * row_out..(end - oh0) * row_out], self.packed.n());
            oh = end;
        }
        WINDOW.with(|w| w.set(store));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::gemm::tests::values;

    /// The two ops one after the other, as the unfused path runs them.
    fn unfused(f: &ExpandDepthwise, w1: &[f32], x: &[f32]) -> Vec<f32> {
        let g = f.dw;
        let m = g.batch * g.in_h * g.in_w;
        let mut mid = vec![0.0; m * g.in_c];
        gemm(m, x, f.in_c, &PackedB::pack(g.in_c, f.in_c, w1), f.bias.as_deref(), f.act, &mut mid, g.in_c);
        let mut out = vec![0.0; g.output_len()];
        depthwise_conv2d(&g, &mid, &f.filter, f.dw_bias.as_deref(), f.dw_act, &mut out);
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn geom(batch: usize, h: usize, w: usize, mid: usize, k: usize, s: usize, d: usize, same: bool) -> DepthwiseGeom {
        let (out_h, pad_top, out_w, pad_left) = if same {
            let pad = |n: usize| {
                let o = n.div_ceil(s);
                let need = ((o - 1) * s + (k - 1) * d + 1).saturating_sub(n);
                (o, need / 2)
            };
            let (oh, pt) = pad(h);
            let (ow, pl) = pad(w);
            (oh, pt, ow, pl)
        } else {
            ((h - (k - 1) * d - 1) / s + 1, 0, (w - (k - 1) * d - 1) / s + 1, 0)
        };
        DepthwiseGeom { batch, in_h: h, in_w: w, in_c: mid, multiplier: 1, out_h, out_w, k_h: k, k_w: k, stride_h: s, stride_w: s, dil_h: d, dil_w: d, pad_top, pad_left }
    }

    #[test]
    fn fused_equals_the_two_ops_bit_for_bit() {
        let pool = nnrt_threads::KernelPool::new(2).unwrap();
        let cases = [
            // (batch, h, w, in_c, mid, k, stride, dilation, SAME)
            (1, 112, 112, 16, 96, 3, 2, 1, true),
            (1, 56, 56, 24, 144, 3, 1, 1, true),
            (2, 9, 7, 5, 33, 3, 1, 1, true),
            (1, 17, 13, 8, 40, 5, 2, 1, true),
            (1, 20, 11, 3, 17, 3, 1, 2, true),
            (1, 15, 15, 4, 20, 3, 2, 1, false),
            (1, 3, 3, 2, 7, 3, 3, 1, true),
        ];
        for (seed, &(b, h, w, c0, c1, k, s, d, same)) in cases.iter().enumerate() {
            check_depthwise_project(&pool, seed as u64, b, h, w, c0, c1, k, s, d, same);
            let g = geom(b, h, w, c1, k, s, d, same);
            let w1 = values(c1 * c0, seed as u64 * 7 + 1);
            let b1 = values(c1, seed as u64 * 7 + 2);
            let filter = values(k * k * c1, seed as u64 * 7 + 3);
            let b2 = values(c1, seed as u64 * 7 + 4);
            let x = values(b * h * w * c0, seed as u64 * 7 + 5);
            let f = ExpandDepthwise::new(c0, &w1, Some(&b1), Act::RELU6, g, &filter, Some(&b2), Act::RELU);
            let want = unfused(&f, &w1, &x);
            for threads in [1, 2] {
                let mut got = vec![f32::NAN; f.output_len()];
                if threads == 1 {
                    f.run(&x, &mut got);
                } else {
                    pool.install(|| f.run(&x, &mut got));
                }
                let same_bits = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same_bits, "case {seed} ({b}x{h}x{w}x{c0} -> {c1}, k{k} s{s} d{d} same={same}), {threads} threads");
            }
        }
    }

    /// The whole block ([`ExpandDepthwise::with_projection`]) against the expansion, the
    /// depthwise op, the projection's GEMM and (with a residual) the ADD, at 1 and 2 threads.
    #[test]
    fn block_equals_the_ops_bit_for_bit() {
        let pool = nnrt_threads::KernelPool::new(2).unwrap();
        let cases = [
            // (batch, h, w, in_c, mid, out_c, k, stride, dilation, SAME, residual)
            (1, 112, 112, 16, 96, 24, 3, 2, 1, true, false),
            (1, 56, 56, 24, 144, 24, 3, 1, 1, true, true),
            (2, 9, 7, 5, 33, 5, 3, 1, 1, true, true),
            (1, 17, 13, 8, 40, 12, 5, 2, 1, true, false),
            (1, 20, 11, 3, 17, 3, 3, 1, 2, true, true),
            (1, 15, 15, 4, 20, 7, 3, 2, 1, false, false),
            (1, 3, 3, 2, 7, 2, 3, 3, 1, true, false),
        ];
        for (seed, &(b, h, w, c0, c1, c2, k, s, d, same, residual)) in cases.iter().enumerate() {
            let seed = seed as u64 + 100;
            let g = geom(b, h, w, c1, k, s, d, same);
            let (w1, b1) = (values(c1 * c0, seed * 13 + 1), values(c1, seed * 13 + 2));
            let (filter, b2) = (values(k * k * c1, seed * 13 + 3), values(c1, seed * 13 + 4));
            let (w3, b3) = (values(c2 * c1, seed * 13 + 5), values(c2, seed * 13 + 6));
            let x = values(b * h * w * c0, seed * 13 + 7);
            let m_out = b * g.out_h * g.out_w;
            let r = values(m_out * c2, seed * 13 + 8);
            let add = residual.then_some(Act::RELU6);
            let f = ExpandDepthwise::new(c0, &w1, Some(&b1), Act::RELU6, g, &filter, Some(&b2), Act::RELU6).with_projection(c2, &w3, Some(&b3), Act::NONE, add);
            // The ops apart: expansion, depthwise, projection, then the ADD op's sum and clamp.
            let mut mid = vec![0.0; b * h * w * c1];
            gemm(b * h * w, &x, c0, &PackedB::pack(c1, c0, &w1), Some(&b1), Act::RELU6, &mut mid, c1);
            let mut dwo = vec![0.0; g.output_len()];
            depthwise_conv2d(&g, &mid, &filter, Some(&b2), Act::RELU6, &mut dwo);
            let mut want = vec![0.0; m_out * c2];
            gemm(m_out, &dwo, c1, &PackedB::pack(c2, c1, &w3), Some(&b3), Act::NONE, &mut want, c2);
            if residual {
                want.iter_mut().zip(&r).for_each(|(o, &v)| *o = crate::kernels::gemm::clamp(*o + v, 0.0, 6.0));
            }
            assert_eq!(f.output_len(), want.len());
            for threads in [1, 2] {
                let mut got = vec![f32::NAN; f.output_len()];
                let go = |got: &mut Vec<f32>| if residual { f.run_add(&x, &r, got) } else { f.run(&x, got) };
                if threads == 1 {
                    go(&mut got);
                } else {
                    pool.install(|| go(&mut got));
                }
                let same_bits = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same_bits, "block case {seed} ({b}x{h}x{w}x{c0} -> {c1} -> {c2}, k{k} s{s} d{d} same={same} residual={residual}), {threads} threads");
            }
        }
    }

    /// [`DepthwiseProject`] against the depthwise op then the 1×1 GEMM, at 1 and 2 threads: the
    /// depthwise over `c1` channels, projected to `c0`.
    #[allow(clippy::too_many_arguments)]
    fn check_depthwise_project(pool: &nnrt_threads::KernelPool, seed: u64, b: usize, h: usize, w: usize, c0: usize, c1: usize, k: usize, s: usize, d: usize, same: bool) {
        let g = geom(b, h, w, c1, k, s, d, same);
        let filter = values(k * k * c1, seed * 11 + 1);
        let (b1, w2, b2) = (values(c1, seed * 11 + 2), values(c0 * c1, seed * 11 + 3), values(c0, seed * 11 + 4));
        let x = values(b * h * w * c1, seed * 11 + 5);
        let f = DepthwiseProject::new(g, &filter, Some(&b1), Act::RELU6, c0, &w2, Some(&b2), Act::NONE);
        let mut mid = vec![0.0; g.output_len()];
        depthwise_conv2d(&g, &x, &filter, Some(&b1), Act::RELU6, &mut mid);
        let mut want = vec![0.0; f.output_len()];
        gemm(b * g.out_h * g.out_w, &mid, c1, &PackedB::pack(c0, c1, &w2), Some(&b2), Act::NONE, &mut want, c0);
        for threads in [1, 2] {
            let mut got = vec![f32::NAN; f.output_len()];
            if threads == 1 {
                f.run(&x, &mut got);
            } else {
                pool.install(|| f.run(&x, &mut got));
            }
            let same_bits = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same_bits, "depthwise+project case {seed} ({b}x{h}x{w}x{c1} -> {c0}, k{k} s{s} d{d} same={same}), {threads} threads");
        }
    }
}
