//! DEPTHWISE_CONV_2D over NHWC inputs (TFLite semantics, filter `[1, k_h, k_w, in_c *
//! multiplier]`).
//!
//! Vectorized over channels. Each output row is cut into border pixels (some filter columns
//! fall in the padding; computed one by one with their valid tap range) and one interior run
//! (every filter column inside), so the SIMD inner loops never test bounds. Filter rows outside
//! the input are dropped per output row. With multiplier 1 the interior runs four pixels at a
//! time per filter load; other multipliers take a portable path. Output rows are split across
//! the current run's kernel pool when the work is large.
//!
//! Each output starts from its bias and adds the taps column by column (filter column outer,
//! row inner), the order of XNNPACK's depthwise micro-kernels (LiteRT's default float path),
//! with fused multiply-adds in the SIMD kernels; the reference twin keeps TFLite's reference
//! loop (rows outer, bias last).
#![forbid(unsafe_code)]


use super::gemm::clamp;
use super::unary::PostAct;
use super::Act;
pub use crate::simd::depthwise::DepthwiseGeom;
use crate::simd::depthwise::{self as sd, DwRun};
use crate::simd::{Avx2Token, Avx512Token};
use crate::simd::{self, Isa};

/// Below this many multiply-adds the whole op runs on the calling thread.
const PAR_MIN_MACS: usize = 1 << 16;
/// Multiply-adds per task (at least).
const TASK_MACS: usize = 1 << 15;

/// Filter taps `lo..hi` (of `k`) whose input position `o*s + t*d - pad` lies in `0..n`.
/// Positions grow with `t`, so the valid taps are one contiguous range.
fn tap_range(o: usize, s: usize, d: usize, pad: usize, n: usize, k: usize) -> (usize, usize) {
    let start = o * s;
    let lo = pad.saturating_sub(start).div_ceil(d);
    let hi = (n + pad).saturating_sub(start).div_ceil(d).min(k);
    (lo.min(hi), hi)
}

impl DepthwiseGeom {
    /// The depthwise conv with the batch, input, window, strides, dilations and padding of the
    /// conv `g`, and `multiplier` outputs per input channel (`g.out_c` and `g.groups` go unused).
    pub fn from_conv(g: &super::conv::ConvGeom, multiplier: usize) -> DepthwiseGeom {
        DepthwiseGeom {
            batch: g.batch, in_h: g.in_h, in_w: g.in_w, in_c: g.in_c, multiplier, out_h: g.out_h, out_w: g.out_w,
            k_h: g.k_h, k_w: g.k_w, stride_h: g.stride_h, stride_w: g.stride_w, dil_h: g.dil_h, dil_w: g.dil_w,
            pad_top: g.pad_top, pad_left: g.pad_left,
        }
    }
}

/// The vector code a call runs.
#[derive(Clone, Copy, Debug)]
enum Kernel {
    Avx512(Avx512Token),
    /// With [`DepthwiseGeom::two_pixel_blocks`] of the call's geometry (the AVX-512 kernel keeps
    /// its 8-pixel blocks everywhere, as measured on AVX-512 machines).
    Avx2(Avx2Token, bool),
    Portable,
}

impl Kernel {
    fn for_isa(isa: Isa, g: &DepthwiseGeom) -> Kernel {
        match isa {
            Isa::Avx512 => Avx512Token::new().map_or(Kernel::Portable, Kernel::Avx512),
            Isa::Avx2Fma => Avx2Token::new().map_or(Kernel::Portable, |t| Kernel::Avx2(t, g.two_pixel_blocks())),
            Isa::Scalar | Isa::Neon => Kernel::Portable,
        }
    }

    fn run(self, run: &DwRun, n_pix: usize, out: &mut [f32]) {
        match self {
            Kernel::Avx512(t) => sd::dw_run_avx512(t, run, n_pix, out),
            Kernel::Avx2(t, two_pixel) => sd::dw_run_avx2(t, run, n_pix, out, two_pixel),
            Kernel::Portable => run_portable(run, n_pix, out),
        }
    }
}

/// Portable twin of `simd::depthwise::dw_run_avx512` (same [`DwRun`] contract); the channel loop
/// is a zip LLVM vectorizes.
fn run_portable(run: &DwRun, n_pix: usize, out: &mut [f32]) {
    let c = run.c;
    for (p, o) in out[..n_pix * c].chunks_exact_mut(c).enumerate() {
        match run.bias {
            Some(b) => o.copy_from_slice(&b[..c]),
            None => o.fill(0.0),
        }
        for j in 0..run.n_kw {
            for i in 0..run.n_kh {
                let x0 = run.in_off + p * run.pix_step + i * run.kh_step + j * run.kw_step;
                let f0 = run.f_off + i * run.f_kh_step + j * c;
                let (x, w) = (&run.input[x0..x0 + c], &run.filter[f0..f0 + c]);
                for ((o, &x), &w) in o.iter_mut().zip(x).zip(w) {
                    *o += x * w;
                }
            }
        }
        for v in o.iter_mut() {
            *v = clamp(*v, run.min, run.max);
        }
    }
}

/// DEPTHWISE_CONV_2D: `output[b, oh, ow, ic*M + m] = act(bias[ic*M + m] + sum over (kh, kw)
/// of input[b, oh*stride_h - pad_top + kh*dil_h, ow*stride_w - pad_left + kw*dil_w, ic] *
/// filter[kh, kw, ic*M + m])`, taps outside the input reading zero. Runs on the current run's kernel
/// pool; allocates nothing.
///
/// # Panics
/// If the geometry has a stride, dilation or multiplier of 0, or a slice is too short.
pub fn depthwise_conv2d(
    g: &DepthwiseGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    output: &mut [f32],
) {
    depthwise_with_isa(simd::isa(), g, input, filter, bias, act, output);
}

/// [`depthwise_conv2d`] followed by `post` (SiLU or HARD_SWISH), applied to each output row as
/// soon as it is computed, while it is in L1. Bit-identical to the convolution followed by the
/// ops `post` stands for.
///
/// # Panics
/// As [`depthwise_conv2d`].
pub fn depthwise_conv2d_post(
    g: &DepthwiseGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    post: PostAct,
    output: &mut [f32],
) {
    depthwise_impl(simd::isa(), g, input, filter, bias, act, Some(post), output);
}

/// As [`depthwise_conv2d`] with the vector code of `isa` (tests compare instruction sets).
pub(crate) fn depthwise_with_isa(
    isa: Isa,
    g: &DepthwiseGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    output: &mut [f32],
) {
    depthwise_impl(isa, g, input, filter, bias, act, None, output);
}

/// [`depthwise_with_isa`], then `post` on each output row.
#[allow(clippy::too_many_arguments)]
fn depthwise_impl(
    isa: Isa,
    g: &DepthwiseGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    post: Option<PostAct>,
    output: &mut [f32],
) {
    g.validate();
    assert!(input.len() >= g.input_len(), "depthwise input holds {} values, needs {}", input.len(), g.input_len());
    assert!(filter.len() >= g.filter_len(), "depthwise filter holds {} values, needs {}", filter.len(), g.filter_len());
    assert!(output.len() >= g.output_len(), "depthwise output holds {} values, needs {}", output.len(), g.output_len());
    if let Some(b) = bias {
        assert!(b.len() >= g.out_c(), "depthwise bias holds {} values, needs {}", b.len(), g.out_c());
    }
    let row_len = g.out_w * g.out_c();
    let rows = g.batch * g.out_h;
    if row_len == 0 || rows == 0 {
        return;
    }
    let kernel = Kernel::for_isa(isa, g);
    let out = &mut output[..rows * row_len];
    let input = &input[..g.input_len()];
    let row_macs = (row_len * g.k_h * g.k_w).max(1);
    let one_row = |r: usize, o: &mut [f32]| {
        out_row(kernel, g, input, filter, bias, act, r, o);
        if let Some(post) = post {
            post.apply(o);
        }
    };
    if nnrt_threads::kernel_threads() <= 1 || rows * row_macs < PAR_MIN_MACS {
        out.chunks_mut(row_len).enumerate().for_each(|(r, o)| one_row(r, o));
    } else {
        nnrt_threads::par_rows_mut(out, row_len, TASK_MACS.div_ceil(row_macs), one_row);
    }
}

/// Computes output row `r` (`= b * out_h + oh`) into `out` (`out_w * out_c` values).
#[allow(clippy::too_many_arguments)]
fn out_row(
    kernel: Kernel,
    g: &DepthwiseGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    r: usize,
    out: &mut [f32],
) {
    let (b, oh) = (r / g.out_h, r % g.out_h);
    let (kh_lo, kh_hi) = tap_range(oh, g.stride_h, g.dil_h, g.pad_top, g.in_h, g.k_h);
    if g.multiplier != 1 {
        return out_row_multiplier(g, input, filter, bias, act, b, oh, (kh_lo, kh_hi), out);
    }
    let c = g.in_c;
    // Interior: every filter column inside, i.e. ow*sw ≥ pad_left and
    // ow*sw + (k_w-1)*dil_w < in_w + pad_left.
    let ow_lo = g.pad_left.div_ceil(g.stride_w).min(g.out_w);
    let reach = (g.k_w - 1) * g.dil_w;
    let ow_hi = (g.in_w + g.pad_left).saturating_sub(reach).div_ceil(g.stride_w).min(g.out_w).max(ow_lo);
    let row_in = b * g.in_h;
    let ih_lo = (oh * g.stride_h + kh_lo * g.dil_h).saturating_sub(g.pad_top);
    let mut run = DwRun {
        input,
        in_off: 0,
        pix_step: g.stride_w * c,
        kh_step: g.dil_h * g.in_w * c,
        kw_step: g.dil_w * c,
        n_kh: kh_hi - kh_lo,
        n_kw: 0,
        filter,
        f_off: 0,
        f_kh_step: g.k_w * c,
        c,
        bias,
        min: act.min,
        max: act.max,
    };
    let mut ow = 0;
    while ow < g.out_w {
        let (kw_lo, kw_hi, n_pix) = if ow >= ow_lo && ow < ow_hi {
            (0, g.k_w, ow_hi - ow)
        } else {
            let (lo, hi) = tap_range(ow, g.stride_w, g.dil_w, g.pad_left, g.in_w, g.k_w);
            (lo, hi, 1)
        };
        let iw_lo = (ow * g.stride_w + kw_lo * g.dil_w).saturating_sub(g.pad_left);
        run.in_off = ((row_in + ih_lo) * g.in_w + iw_lo) * c;
        run.n_kw = kw_hi - kw_lo;
        run.f_off = (kh_lo * g.k_w + kw_lo) * c;
        kernel.run(&run, n_pix, &mut out[ow * c..]);
        ow += n_pix;
    }
}

/// One output row for a multiplier other than 1: each input channel feeds `multiplier`
/// consecutive output channels.
#[allow(clippy::too_many_arguments)]
fn out_row_multiplier(
    g: &DepthwiseGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    b: usize,
    oh: usize,
    (kh_lo, kh_hi): (usize, usize),
    out: &mut [f32],
) {
    let (c, oc, mult) = (g.in_c, g.out_c(), g.multiplier);
    for (ow, o) in out.chunks_exact_mut(oc).enumerate() {
        match bias {
            Some(bias) => o.copy_from_slice(&bias[..oc]),
            None => o.fill(0.0),
        }
        let (kw_lo, kw_hi) = tap_range(ow, g.stride_w, g.dil_w, g.pad_left, g.in_w, g.k_w);
        for kw in kw_lo..kw_hi {
            let iw = ow * g.stride_w + kw * g.dil_w - g.pad_left;
            for kh in kh_lo..kh_hi {
                let ih = oh * g.stride_h + kh * g.dil_h - g.pad_top;
                let x0 = ((b * g.in_h + ih) * g.in_w + iw) * c;
                let f0 = (kh * g.k_w + kw) * oc;
                let (x, w) = (&input[x0..x0 + c], &filter[f0..f0 + oc]);
                for ((o, w), &x) in o.chunks_exact_mut(mult).zip(w.chunks_exact(mult)).zip(x) {
                    for (o, &w) in o.iter_mut().zip(w) {
                        *o += x * w;
                    }
                }
            }
        }
        for v in o.iter_mut() {
            *v = clamp(*v, act.min, act.max);
        }
    }
}

/// Reference twin of [`depthwise_conv2d`]: TFLite's reference loop nest.
pub fn depthwise_conv2d_ref(
    g: &DepthwiseGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    output: &mut [f32],
) {
    g.validate();
    let oc_n = g.out_c();
    for b in 0..g.batch {
        for oh in 0..g.out_h {
            for ow in 0..g.out_w {
                for ic in 0..g.in_c {
                    for m in 0..g.multiplier {
                        let oc = ic * g.multiplier + m;
                        let mut s = 0.0f32;
                        for kh in 0..g.k_h {
                            for kw in 0..g.k_w {
                                let ih = (oh * g.stride_h + kh * g.dil_h) as isize - g.pad_top as isize;
                                let iw = (ow * g.stride_w + kw * g.dil_w) as isize - g.pad_left as isize;
                                if ih < 0 || iw < 0 || ih >= g.in_h as isize || iw >= g.in_w as isize {
                                    continue;
                                }
                                let (ih, iw) = (ih as usize, iw as usize);
                                let x = input[((b * g.in_h + ih) * g.in_w + iw) * g.in_c + ic];
                                s += x * filter[(kh * g.k_w + kw) * oc_n + oc];
                            }
                        }
                        if let Some(bias) = bias {
                            s += bias[oc];
                        }
                        output[((b * g.out_h + oh) * g.out_w + ow) * oc_n + oc] = clamp(s, act.min, act.max);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::conv::valid_out;
    use crate::kernels::gemm::tests::{assert_close, isas, magnitudes, values};
    use proptest::prelude::*;

    /// Every instruction set against the reference, with the summation-order bound of
    /// `assert_close` (`k_h * k_w` products per output).
    fn check(g: DepthwiseGeom, with_bias: bool, act: Act, seed: u64) {
        let input = values(g.input_len(), seed);
        let filter = values(g.filter_len(), seed + 1);
        let bias = with_bias.then(|| values(g.out_c(), seed + 2));
        let mut want = vec![0.0; g.output_len()];
        depthwise_conv2d_ref(&g, &input, &filter, bias.as_deref(), act, &mut want);
        let mag = magnitudes(&input, &filter, bias.as_deref(), g.output_len(), |x, w, b, out| depthwise_conv2d_ref(&g, x, w, b, Act::NONE, out));
        for isa in isas() {
            let mut got = vec![f32::NAN; g.output_len()];
            depthwise_with_isa(isa, &g, &input, &filter, bias.as_deref(), act, &mut got);
            assert_close(&got, &want, &mag, g.k_h * g.k_w, &format!("{isa:?} {g:?}"));
        }
    }

    prop_compose! {
        fn geom()(
            batch in 1usize..3, in_h in 1usize..10, in_w in 1usize..12,
            in_c in prop_oneof![1usize..4, 1usize..40], multiplier in prop_oneof![Just(1usize), 1usize..4],
            k_h in 1usize..6, k_w in 1usize..6, stride_h in 1usize..4, stride_w in 1usize..4,
            dil_h in 1usize..4, dil_w in 1usize..4,
            pad_top in 0usize..4, pad_left in 0usize..4, pad_bottom in 0usize..4, pad_right in 0usize..4,
        ) -> DepthwiseGeom {
            let out = |n: usize, k: usize, s: usize, d: usize| valid_out(n, k, s, d).max(1);
            DepthwiseGeom {
                batch, in_h, in_w, in_c, multiplier,
                out_h: out(in_h + pad_top + pad_bottom, k_h, stride_h, dil_h),
                out_w: out(in_w + pad_left + pad_right, k_w, stride_w, dil_w),
                k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left,
            }
        }
    }

    fn act_strategy() -> impl Strategy<Value = Act> {
        prop_oneof![Just(Act::NONE), Just(Act::RELU), Just(Act::RELU6), Just(Act::RELU_N1_TO_1)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn depthwise_matches_ref(g in geom(), with_bias: bool, act in act_strategy(), seed: u64) {
            check(g, with_bias, act, seed);
        }
    }

    #[test]
    fn mobilenet_like_shapes() {
        // Large enough to split rows across threads; 3×3 SAME stride 1 and 2, 144 channels.
        let g = DepthwiseGeom {
            batch: 1, in_h: 28, in_w: 28, in_c: 144, multiplier: 1, out_h: 28, out_w: 28, k_h: 3, k_w: 3,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 1, pad_left: 1,
        };
        check(g, true, Act::RELU6, 1);
        check(DepthwiseGeom { out_h: 14, out_w: 14, stride_h: 2, stride_w: 2, pad_top: 0, pad_left: 0, ..g }, true, Act::RELU6, 2);
        check(DepthwiseGeom { in_c: 8, multiplier: 4, ..g }, false, Act::NONE, 3);
    }

    #[test]
    fn power_of_two_channels_take_two_pixel_blocks() {
        // MobileNetV1's 14×14×512 (every other pixel in one L1 set: the AVX2 kernel's two-pixel
        // blocks), 28×28×256 at stride 2, and a tail of channels past the last 32.
        let g = DepthwiseGeom {
            batch: 1, in_h: 14, in_w: 14, in_c: 512, multiplier: 1, out_h: 14, out_w: 14, k_h: 3, k_w: 3,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 1, pad_left: 1,
        };
        let run = |g: &DepthwiseGeom| g.l1_set_conflicts();
        assert!(run(&g) > 6, "512 channels: {} lines in one set", run(&g));
        assert!(run(&DepthwiseGeom { in_c: 576, ..g }) <= 6, "576 channels spread over the sets");
        check(g, true, Act::RELU6, 4);
        let s2 = DepthwiseGeom { in_h: 28, in_w: 28, in_c: 256, stride_h: 2, stride_w: 2, pad_top: 0, pad_left: 0, ..g };
        assert!(run(&s2) > 6);
        check(s2, false, Act::NONE, 5);
        let tail = DepthwiseGeom { in_c: 1025, in_h: 7, in_w: 7, out_h: 7, out_w: 7, ..g };
        assert!(run(&tail) > 6);
        check(tail, true, Act::NONE, 6);
    }

    /// `cargo test --release -p nnrt-backend-cpu -- --ignored --nocapture depthwise_speed`
    #[test]
    #[ignore]
    fn depthwise_speed() {
        let base = DepthwiseGeom {
            batch: 1, in_h: 112, in_w: 112, in_c: 32, multiplier: 1, out_h: 112, out_w: 112, k_h: 3, k_w: 3,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 1, pad_left: 1,
        };
        let shapes = [
            ("3x3 112x112x32", base),
            ("3x3 56x56x144", DepthwiseGeom { in_h: 56, in_w: 56, out_h: 56, out_w: 56, in_c: 144, ..base }),
            ("3x3/2 56x56x144", DepthwiseGeom { in_h: 56, in_w: 56, out_h: 28, out_w: 28, in_c: 144, stride_h: 2, stride_w: 2, pad_top: 0, pad_left: 0, ..base }),
            ("3x3 14x14x576", DepthwiseGeom { in_h: 14, in_w: 14, out_h: 14, out_w: 14, in_c: 576, ..base }),
            ("3x3 64x64x24", DepthwiseGeom { in_h: 64, in_w: 64, out_h: 64, out_w: 64, in_c: 24, ..base }),
            ("3x3 64x64x32", DepthwiseGeom { in_h: 64, in_w: 64, out_h: 64, out_w: 64, in_c: 32, ..base }),
            ("3x3 64x64x16", DepthwiseGeom { in_h: 64, in_w: 64, out_h: 64, out_w: 64, in_c: 16, ..base }),
            ("3x3 32x32x24", DepthwiseGeom { in_h: 32, in_w: 32, out_h: 32, out_w: 32, in_c: 24, ..base }),
            ("3x3 64x64x36", DepthwiseGeom { in_h: 64, in_w: 64, out_h: 64, out_w: 64, in_c: 36, ..base }),
            ("3x3 48x48x24", DepthwiseGeom { in_h: 48, in_w: 48, out_h: 48, out_w: 48, in_c: 24, ..base }),
            ("3x3 32x32x36", DepthwiseGeom { in_h: 32, in_w: 32, out_h: 32, out_w: 32, in_c: 36, ..base }),
            ("3x3 16x16x88", DepthwiseGeom { in_h: 16, in_w: 16, out_h: 16, out_w: 16, in_c: 88, ..base }),
            ("5x5 7x7x960", DepthwiseGeom { in_h: 7, in_w: 7, out_h: 7, out_w: 7, in_c: 960, k_h: 5, k_w: 5, pad_top: 2, pad_left: 2, ..base }),
        ];
        let filter_env = std::env::var("NNRT_SPEED_FILTER").unwrap_or_default();
        let threads_env: Vec<usize> = std::env::var("NNRT_SPEED_THREADS")
            .map(|t| t.split(',').filter_map(|t| t.parse().ok()).collect())
            .unwrap_or_else(|_| vec![1, 2]);
        for (name, g) in shapes.into_iter().filter(|(n, _)| n.contains(filter_env.as_str())) {
            let input = values(g.input_len(), 1);
            let filter = values(g.filter_len(), 2);
            let bias = values(g.out_c(), 3);
            let mut out = vec![0.0; g.output_len()];
            let flop = 2.0 * (g.output_len() * g.k_h * g.k_w) as f64;
            for &threads in &threads_env {
                let pool = nnrt_threads::KernelPool::new(threads).unwrap();
                let reps = (2e8 / flop).ceil() as usize;
                let mut best = 0.0f64;
                pool.install(|| {
                    for _ in 0..15 {
                        let t = std::time::Instant::now();
                        for _ in 0..reps {
                            depthwise_conv2d(&g, &input, &filter, Some(&bias), Act::RELU6, &mut out);
                        }
                        best = best.max(flop * reps as f64 / t.elapsed().as_secs_f64() / 1e9);
                    }
                });
                println!("depthwise {name} threads {threads}: best {best:.1} GFLOP/s ({:.1} µs)", flop / best / 1e3);
            }
        }
    }
}
