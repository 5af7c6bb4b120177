//! CONV_2D over NHWC inputs with OHWI filters (TFLite semantics), as a GEMM.
//!
//! Row `i` of the GEMM is output pixel `(b, oh, ow)`, column `j` output channel `oc`, and the
//! reduction runs over `(kh, kw, ic)` — exactly the order of the OHWI filter's rows, so the
//! filter packs into a [`PackedB`] as is. A 1×1, stride-1, unpadded convolution reads the input
//! in place as `A`; any other shape builds `A` (im2col) one register tile at a time inside the
//! parallel GEMM loop, so the scratch is a few KiB per thread and stays in L1. Grouped
//! convolutions run one GEMM per group.
#![forbid(unsafe_code)]

use super::gemm::{clamp, gemm, gemm_add_residual, gemm_segmented, gemm_segmented_then, gemm_then, gemm_with, gemm_with_then, residual_adder, ASource, PackedB, Residual, Segment, SegmentSource};
use super::unary::PostAct;
use super::Act;
use crate::simd::{self, Isa};
use std::cell::RefCell;

/// Shape of one CONV_2D. Padding at the bottom and right is implied: taps that fall outside
/// the input read zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvGeom {
    /// Batch size (`N`).
    pub batch: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Channels of the input tensor (all groups together).
    pub in_c: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Channels of the output tensor (all groups together).
    pub out_c: usize,
    /// Filter height.
    pub k_h: usize,
    /// Filter width.
    pub k_w: usize,
    /// Vertical stride (≥ 1).
    pub stride_h: usize,
    /// Horizontal stride (≥ 1).
    pub stride_w: usize,
    /// Vertical dilation (≥ 1).
    pub dil_h: usize,
    /// Horizontal dilation (≥ 1).
    pub dil_w: usize,
    /// Zero rows above the input.
    pub pad_top: usize,
    /// Zero columns left of the input.
    pub pad_left: usize,
    /// Groups (1 normally): TFLite infers `in_c / filter_in_c`; `in_c` and `out_c` are
    /// multiples of it, and group `g` maps input channels `g*in_c/groups ..` to output channels
    /// `g*out_c/groups ..`.
    pub groups: usize,
}

impl ConvGeom {
    /// The output pixel after `(b, oh, ow)` in NHWC order (im2col walks rows this way).
    pub(crate) fn next_pixel(&self, (b, oh, ow): (usize, usize, usize)) -> (usize, usize, usize) {
        match (ow + 1 == self.out_w, oh + 1 == self.out_h) {
            (false, _) => (b, oh, ow + 1),
            (true, false) => (b, oh + 1, 0),
            (true, true) => (b + 1, 0, 0),
        }
    }

    /// Input channels seen by one group (the filter's innermost dimension).
    pub fn group_in_c(&self) -> usize {
        self.in_c / self.groups
    }

    /// Output channels produced by one group.
    pub fn group_out_c(&self) -> usize {
        self.out_c / self.groups
    }

    /// Reduction length of one output value: `k_h * k_w * group_in_c`.
    pub fn taps(&self) -> usize {
        self.k_h * self.k_w * self.group_in_c()
    }

    /// Values in the input tensor.
    pub fn input_len(&self) -> usize {
        self.batch * self.in_h * self.in_w * self.in_c
    }

    /// Values in the output tensor.
    pub fn output_len(&self) -> usize {
        self.batch * self.out_h * self.out_w * self.out_c
    }

    /// Values in the OHWI filter: `out_c * k_h * k_w * group_in_c`.
    pub fn filter_len(&self) -> usize {
        self.out_c * self.taps()
    }

    /// A 1×1, stride-1, unpadded conv whose output has the input's size: its im2col matrix is
    /// the NHWC input itself, one row per pixel.
    pub(crate) fn is_direct(&self) -> bool {
        self.k_h == 1
            && self.k_w == 1
            && self.stride_h == 1
            && self.stride_w == 1
            && self.pad_top == 0
            && self.pad_left == 0
            && self.out_h == self.in_h
            && self.out_w == self.in_w
    }

    /// Panics with a message naming the inconsistent field.
    fn validate(&self) {
        assert!(self.groups >= 1, "conv groups must be ≥ 1");
        assert!(self.in_c.is_multiple_of(self.groups), "in_c {} not a multiple of groups {}", self.in_c, self.groups);
        assert!(self.out_c.is_multiple_of(self.groups), "out_c {} not a multiple of groups {}", self.out_c, self.groups);
        assert!(self.stride_h >= 1 && self.stride_w >= 1, "conv strides must be ≥ 1");
        assert!(self.dil_h >= 1 && self.dil_w >= 1, "conv dilations must be ≥ 1");
    }

    /// Input row and column of tap `(kh, kw)` for output pixel `(oh, ow)`, when inside.
    #[inline]
    fn tap_pos(&self, oh: usize, ow: usize, kh: usize, kw: usize) -> Option<(usize, usize)> {
        let ih = (oh * self.stride_h + kh * self.dil_h).checked_sub(self.pad_top)?;
        let iw = (ow * self.stride_w + kw * self.dil_w).checked_sub(self.pad_left)?;
        (ih < self.in_h && iw < self.in_w).then_some((ih, iw))
    }
}

/// TFLite `Padding::SAME` along one axis: returns `(out_size, pad_before)` with `out_size =
/// ceil(in / stride)`, total padding `max((out - 1) * stride + (k - 1) * dilation + 1 - in,
/// 0)` and `pad_before = total / 2` (the odd extra pixel goes after).
///
/// # Panics
/// If `stride` is 0.
pub fn same_padding(in_size: usize, k: usize, stride: usize, dilation: usize) -> (usize, usize) {
    let out = in_size.div_ceil(stride);
    let eff_k = k.saturating_sub(1) * dilation + 1;
    let needed = out.saturating_sub(1) * stride + eff_k;
    (out, needed.saturating_sub(in_size) / 2)
}

/// TFLite `Padding::VALID` output size along one axis: `(in - eff_k + stride) / stride` with
/// `eff_k = (k - 1) * dilation + 1`, and 0 when the filter does not fit.
///
/// # Panics
/// If `stride` is 0.
pub fn valid_out(in_size: usize, k: usize, stride: usize, dilation: usize) -> usize {
    let eff_k = k.saturating_sub(1) * dilation + 1;
    match in_size.checked_sub(eff_k) {
        Some(rest) => rest / stride + 1,
        None => 0,
    }
}

/// A prepared CONV_2D: filter packed once, algorithm chosen from the shape.
#[derive(Debug)]
pub struct Conv2d {
    geom: ConvGeom,
    /// One packed filter per group.
    packed: Vec<PackedB>,
    bias: Option<Vec<f32>>,
    act: Act,
    /// 1×1, stride 1, no padding, same spatial size: the input is `A` as is.
    direct: bool,
    /// One group, no horizontal dilation: tiles read each filter row's taps in place
    /// ([`gemm_segmented`]), gathering only where a tile reaches the left or right padding.
    implicit: bool,
    /// The sizes every run needs, computed once (a run of a small convolution, a TOSA
    /// FULLY_CONNECTED as a 1×1 CONV2D over [N,1,1,C], is a few hundred instructions; the two
    /// divisions and the products of the geometry were ~100 of them).
    sizes: RunSizes,
    /// The geometry over a copy of the input with its left and right zero columns written out
    /// ([`padded_width`]), when the implicit GEMM reads one ([`Conv2d::with_source`]).
    padded: Option<ConvGeom>,
}

/// Most values of a horizontally padded input copy (256 KiB: it stays in L2 while the
/// convolution reads it, and bounds the per-thread buffer).
const PADDED_MAX: usize = 64 * 1024;

thread_local! {
    /// The horizontally padded input copy of the convolution running on this thread.
    static PADDED: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// The geometry of an implicit-GEMM convolution over a copy of its input with the left and
/// right padding written out as zero columns (`pad_left` 0, `in_w` the padded width), when it
/// has horizontal padding and the copy holds at most [`PADDED_MAX`] values. Every tile then
/// reads every filter row in place: a 3×3 convolution over a 32-pixel row gathered an im2col
/// row for the first and last pixel of each row, a third of its tiles through row pointers
/// (18 % of a 32×32×16 → 16 layer's time in driver and gather). Top and bottom padding stay
/// implied (whole filter rows there are skipped). The sums are the gathered tiles' sums: the
/// same products in the same order, zero products where a tap lies in the padding.
fn padded_width(g: &ConvGeom) -> Option<ConvGeom> {
    let need = g.out_w.checked_sub(1)? * g.stride_w + g.k_w.saturating_sub(1) * g.dil_w + 1;
    let width = need.max(g.in_w + g.pad_left);
    if width == g.in_w || g.in_w == 0 || g.in_c == 0 || g.batch * g.in_h * width * g.in_c > PADDED_MAX {
        return None;
    }
    Some(ConvGeom { in_w: width, pad_left: 0, ..*g })
}

/// [`Conv2d`]'s per-run sizes, from its geometry.
#[derive(Debug, Clone, Copy)]
struct RunSizes {
    /// Output pixels: the GEMM's `M`.
    m: usize,
    input_len: usize,
    output_len: usize,
    cin_g: usize,
    cout_g: usize,
}

impl RunSizes {
    fn of(g: &ConvGeom) -> RunSizes {
        RunSizes {
            m: g.batch * g.out_h * g.out_w,
            input_len: g.input_len(),
            output_len: g.output_len(),
            cin_g: g.group_in_c(),
            cout_g: g.group_out_c(),
        }
    }
}

impl Conv2d {
    /// Prepares a convolution: checks the geometry, packs `filter` (OHWI, `[out_c, k_h, k_w,
    /// in_c / groups]`) and copies `bias` (`out_c` values).
    ///
    /// # Panics
    /// If the geometry is inconsistent (groups, strides or dilations of 0, channels not
    /// divisible by groups) or `filter` / `bias` are too short. Loaders validate shapes first.
    pub fn new(geom: ConvGeom, filter: &[f32], bias: Option<&[f32]>, act: Act) -> Conv2d {
        Self::with_isa(simd::isa(), geom, filter, bias, act)
    }

    /// As [`Conv2d::new`], for the micro-kernel of `isa` (tests compare instruction sets).
    pub(crate) fn with_isa(isa: Isa, geom: ConvGeom, filter: &[f32], bias: Option<&[f32]>, act: Act) -> Conv2d {
        geom.validate();
        let g = &geom;
        assert!(filter.len() >= g.filter_len(), "filter holds {} values, needs {}", filter.len(), g.filter_len());
        if let Some(b) = bias {
            assert!(b.len() >= g.out_c, "bias holds {} values, out_c is {}", b.len(), g.out_c);
        }
        let (cout_g, k) = (g.group_out_c(), g.taps());
        let packed = (0..g.groups)
            .map(|grp| PackedB::pack_with_isa(isa, cout_g, k, &filter[grp * cout_g * k..(grp + 1) * cout_g * k]))
            .collect();
        let direct = g.is_direct();
        let implicit = !direct && g.groups == 1 && g.dil_w == 1;
        let padded = implicit.then(|| padded_width(g)).flatten();
        Conv2d { geom, packed, bias: bias.map(|b| b[..g.out_c].to_vec()), act, direct, implicit, sizes: RunSizes::of(g), padded }
    }

    /// Runs `f` on the implicit GEMM's source for `input` (one group): a horizontally padded
    /// copy ([`padded_width`]) in this thread's buffer where the geometry has one (and the
    /// buffer is not in use further up this thread's stack), else the input itself.
    fn with_source<R>(&self, input: &[f32], f: impl FnOnce(&Im2col<'_>) -> R) -> R {
        let Some(pg) = &self.padded else {
            return f(&Im2col { g: &self.geom, input, c0: 0 });
        };
        PADDED.with(|cell| {
            let Ok(mut buf) = cell.try_borrow_mut() else {
                return f(&Im2col { g: &self.geom, input, c0: 0 });
            };
            let g = &self.geom;
            let (row, prow) = (g.in_w * g.in_c, pg.in_w * g.in_c);
            let (left, len) = (g.pad_left * g.in_c, pg.input_len());
            if buf.len() < len {
                buf.resize(len, 0.0);
            }
            for (d, s) in buf[..len].chunks_exact_mut(prow).zip(input.chunks_exact(row)) {
                zero_run(&mut d[..left]);
                d[left..left + row].copy_from_slice(s);
                zero_run(&mut d[left + row..]);
            }
            f(&Im2col { g: pg, input: &buf[..len], c0: 0 })
        })
    }

    /// Switches in-place (implicit GEMM) reading off or back on, where the geometry allows it
    /// (benches compare it with im2col).
    pub fn with_implicit(mut self, on: bool) -> Conv2d {
        self.implicit = on && !self.direct && self.geom.groups == 1 && self.geom.dil_w == 1;
        self.padded = self.implicit.then(|| padded_width(&self.geom)).flatten();
        self
    }

    /// Switches the padded input copy off (tests compare the implicit GEMM with and without it).
    #[cfg(test)]
    fn without_padded_copy(mut self) -> Conv2d {
        self.padded = None;
        self
    }

    /// The geometry this convolution was prepared for.
    pub fn geom(&self) -> &ConvGeom {
        &self.geom
    }

    /// Computes `output` (NHWC, `geom.output_len()` values) from `input` (NHWC,
    /// `geom.input_len()` values) on the current run's kernel pool. Allocates nothing after the first
    /// call on each thread.
    ///
    /// # Panics
    /// If `input` or `output` are shorter than the geometry needs.
    pub fn run(&mut self, input: &[f32], output: &mut [f32]) {
        let RunSizes { m, input_len, output_len, cin_g, cout_g } = self.sizes;
        assert!(input.len() >= input_len, "conv input holds {} values, needs {input_len}", input.len());
        assert!(output.len() >= output_len, "conv output holds {} values, needs {output_len}", output.len());
        let (in_c, out_c) = (self.geom.in_c, self.geom.out_c);
        if m == 0 || out_c == 0 {
            return;
        }
        if let [packed] = &self.packed[..] {
            // One group (nearly every convolution): no per-group offsets.
            let (bias, out) = (self.bias.as_deref(), &mut output[..output_len]);
            if self.direct {
                return gemm(m, &input[..input_len], in_c, packed, bias, self.act, out, out_c);
            }
            let input = &input[..input_len];
            return if self.implicit {
                self.with_source(input, |src| gemm_segmented(m, src, packed, bias, self.act, out, out_c))
            } else {
                gemm_with(m, &Im2col { g: &self.geom, input, c0: 0 }, packed, bias, self.act, out, out_c)
            };
        }
        for (grp, packed) in self.packed.iter().enumerate() {
            let bias = self.bias.as_deref().map(|b| &b[grp * cout_g..]);
            let out = &mut output[grp * cout_g..output_len];
            if self.direct {
                let a = &input[grp * cin_g..input_len];
                gemm(m, a, in_c, packed, bias, self.act, out, out_c);
            } else {
                let src = Im2col { g: &self.geom, input: &input[..input_len], c0: grp * cin_g };
                if self.implicit {
                    gemm_segmented(m, &src, packed, bias, self.act, out, out_c);
                } else {
                    gemm_with(m, &src, packed, bias, self.act, out, out_c);
                }
            }
        }
    }

    /// [`Conv2d::run`] followed by `post` (SiLU or HARD_SWISH), applied to each band of output
    /// rows by the thread that computed it, while the band is in its cache (one group only).
    /// Bit-identical to the convolution followed by the ops `post` stands for.
    ///
    /// # Panics
    /// As [`Conv2d::run`], or if the convolution has several groups.
    pub fn run_post(&mut self, input: &[f32], post: PostAct, output: &mut [f32]) {
        let RunSizes { m, input_len, output_len, .. } = self.sizes;
        assert!(self.geom.groups == 1, "a fused output activation needs one group");
        assert!(input.len() >= input_len, "conv input holds {} values, needs {input_len}", input.len());
        assert!(output.len() >= output_len, "conv output holds {} values, needs {output_len}", output.len());
        let n = self.geom.out_c;
        if m == 0 || n == 0 {
            return;
        }
        let (packed, bias, out) = (&self.packed[0], self.bias.as_deref(), &mut output[..output_len]);
        // One group: rows are dense (`ldc == out_c`), so a band is one run of values.
        let then = move |r0: usize, r1: usize, cc: &mut [f32]| post.apply(&mut cc[..(r1 - r0) * n]);
        if self.direct {
            return gemm_then(m, &input[..input_len], self.geom.in_c, packed, bias, self.act, &then, out, n);
        }
        let input = &input[..input_len];
        if self.implicit {
            self.with_source(input, |src| gemm_segmented_then(m, src, packed, bias, self.act, out, n, Some(&then)));
        } else {
            gemm_with_then(m, &Im2col { g: &self.geom, input, c0: 0 }, packed, bias, self.act, out, n, Some(&then));
        }
    }

    /// [`Conv2d::run`] followed by a residual ADD: `output = clamp(conv(input) + x, add_act)`,
    /// each band of output rows added to `x` by the thread that computed it (one group only).
    /// Bit-identical to the two ops.
    ///
    /// # Panics
    /// As [`Conv2d::run`], if the convolution has several groups, or `x` is shorter than the
    /// output.
    pub fn run_add(&mut self, input: &[f32], x: &[f32], add_act: Act, output: &mut [f32]) {
        self.run_add_residual(input, Residual::dense(x, self.geom.out_c), add_act, output)
    }

    /// [`Conv2d::run_add`] with any [`Residual`]: a channel PAD of the shortcut folded in too.
    ///
    /// # Panics
    /// As [`Conv2d::run_add`], or if `res` does not fit the output channels.
    pub fn run_add_residual(&mut self, input: &[f32], res: Residual<'_>, add_act: Act, output: &mut [f32]) {
        let RunSizes { m, input_len, output_len, .. } = self.sizes;
        assert!(self.geom.groups == 1, "a fused residual needs one group");
        assert!(input.len() >= input_len, "conv input holds {} values, needs {input_len}", input.len());
        let n = self.geom.out_c;
        assert!(output.len() >= output_len && res.x.len() >= res.needs(m, n, n), "conv output or residual shorter than {output_len}");
        if m == 0 || n == 0 {
            return;
        }
        let (packed, bias, out) = (&self.packed[0], self.bias.as_deref(), &mut output[..output_len]);
        if self.direct {
            return gemm_add_residual(m, &input[..input_len], self.geom.in_c, packed, bias, self.act, res, add_act, out, n);
        }
        let then = residual_adder(res, add_act, n, n);
        let input = &input[..input_len];
        if self.implicit {
            self.with_source(input, |src| gemm_segmented_then(m, src, packed, bias, self.act, out, n, Some(&then)));
        } else {
            gemm_with_then(m, &Im2col { g: &self.geom, input, c0: 0 }, packed, bias, self.act, out, n, Some(&then));
        }
    }
}

/// The im2col matrix of one group, built block by block: row = output pixel, column = tap
/// `(kh, kw, ic)` (OHWI order), zero where the tap falls in the padding.
struct Im2col<'a> {
    g: &'a ConvGeom,
    input: &'a [f32],
    /// First input channel of the group.
    c0: usize,
}

impl ASource for Im2col<'_> {
    fn block<'s>(
        &'s self,
        row0: usize,
        rows: usize,
        k0: usize,
        kc: usize,
        scratch: &'s mut Vec<f32>,
    ) -> (&'s [f32], usize) {
        let g = self.g;
        if scratch.len() < rows * kc {
            scratch.resize(rows * kc, 0.0);
        }
        if kc == 0 {
            return (&scratch[..0], 0);
        }
        let cin_g = g.group_in_c();
        // With one group and no horizontal dilation, the taps of one filter row that fall
        // inside the input are one contiguous run of the input row: copy it in one go.
        let merge_kw = g.groups == 1 && g.dil_w == 1;
        if k0 == 0 && kc == g.taps() {
            self.whole_rows(row0, &mut scratch[..rows * kc], merge_kw);
            return (&scratch[..rows * kc], kc);
        }
        // Divisions only once per block: the first tap is the same for every row, and the
        // output pixel advances by one per row.
        let (tap0, ic0) = (k0 / cin_g, k0 % cin_g);
        let (kh0, kw0) = (tap0 / g.k_w, tap0 % g.k_w);
        let mut ow = row0 % g.out_w;
        let mut oh = (row0 / g.out_w) % g.out_h;
        let mut b = row0 / (g.out_w * g.out_h);
        let (in_h, in_w) = (g.in_h as isize, g.in_w as isize);
        for dst in scratch[..rows * kc].chunks_exact_mut(kc) {
            let ih0 = (oh * g.stride_h) as isize - g.pad_top as isize;
            let iw0 = (ow * g.stride_w) as isize - g.pad_left as isize;
            let (mut kh, mut kw, mut ic) = (kh0, kw0, ic0);
            let mut d = 0;
            while d < kc {
                let ih = ih0 + (kh * g.dil_h) as isize;
                let iw = iw0 + (kw * g.dil_w) as isize;
                let mut len = cin_g - ic;
                if (0..in_h).contains(&ih) && (0..in_w).contains(&iw) {
                    if merge_kw {
                        // Taps kw..kw_end stay inside: iw + (kw_end - kw) ≤ in_w.
                        let kw_end = g.k_w.min(kw + (in_w - iw) as usize);
                        len = (kw_end - kw) * cin_g - ic;
                    }
                    len = len.min(kc - d);
                    let src = ((b * g.in_h + ih as usize) * g.in_w + iw as usize) * g.in_c + self.c0 + ic;
                    copy_run(&mut dst[d..d + len], &self.input[src..src + len]);
                } else {
                    len = len.min(kc - d);
                    zero_run(&mut dst[d..d + len]);
                }
                d += len;
                // Advance (kh, kw, ic) by `len` taps-and-channels without dividing.
                ic += len;
                while ic >= cin_g {
                    ic -= cin_g;
                    kw += 1;
                    if kw == g.k_w {
                        kw = 0;
                        kh += 1;
                    }
                }
            }
            (b, oh, ow) = g.next_pixel((b, oh, ow));
        }
        (&scratch[..rows * kc], kc)
    }
}

impl SegmentSource for Im2col<'_> {
    /// `(b, oh)` of the output row.
    type Row = (usize, usize);

    fn segments(&self) -> usize {
        self.g.k_h
    }

    fn segment_len(&self) -> usize {
        self.g.k_w * self.g.group_in_c()
    }

    fn row_len(&self) -> usize {
        self.g.out_w
    }

    fn row(&self, y: usize) -> (usize, usize) {
        (y / self.g.out_h, y % self.g.out_h)
    }

    /// Filter row `kh` of output pixels `ow..ow + rows` of output row `(b, oh)`: in place when
    /// every tap of those pixels lies inside the input row, zero when the input row is padding.
    #[inline]
    fn segment<'s>(&'s self, (b, oh): (usize, usize), ow: usize, rows: usize, kh: usize) -> Option<Segment<'s>> {
        let g = self.g;
        let ih = (oh * g.stride_h + kh * g.dil_h).wrapping_sub(g.pad_top);
        if ih >= g.in_h {
            return Some(Segment::Zero);
        }
        let iw0 = (ow * g.stride_w).checked_sub(g.pad_left)?;
        if (ow + rows - 1) * g.stride_w + g.k_w > g.in_w + g.pad_left {
            return None;
        }
        let start = ((b * g.in_h + ih) * g.in_w + iw0) * g.in_c + self.c0;
        Some(Segment::Rows(&self.input[start..], g.stride_w * g.in_c))
    }

    /// Output pixels `ow` with `ow·stride_w ≥ pad_left` and `ow·stride_w + k_w ≤ in_w +
    /// pad_left`: every tap inside the input row (the two conditions `segment` checks).
    fn interior(&self) -> (usize, usize) {
        let g = self.g;
        let lo = g.pad_left.div_ceil(g.stride_w);
        let hi = match (g.in_w + g.pad_left).checked_sub(g.k_w) {
            Some(last) => last / g.stride_w + 1,
            None => 0,
        };
        (lo.min(g.out_w), hi.clamp(lo.min(g.out_w), g.out_w))
    }
}

impl Im2col<'_> {
    /// Fills `dst` with whole im2col rows (all `taps()` columns) from output pixel `row0` on,
    /// one filter row at a time: each is zeros, a run of in-bounds taps, zeros.
    fn whole_rows(&self, row0: usize, dst: &mut [f32], merge_kw: bool) {
        let g = self.g;
        let cin_g = g.group_in_c();
        let seg = g.k_w * cin_g;
        let mut ow = row0 % g.out_w;
        let mut oh = (row0 / g.out_w) % g.out_h;
        let mut b = row0 / (g.out_w * g.out_h);
        // Interior pixels (every tap inside the input) copy `k_h` runs of `seg` values.
        let eff_h = (g.k_h - 1) * g.dil_h + 1;
        let row_step = g.dil_h * g.in_w * g.in_c;
        for drow in dst.chunks_exact_mut(g.taps()) {
            let ih0 = (oh * g.stride_h) as isize - g.pad_top as isize;
            let iw0 = (ow * g.stride_w) as isize - g.pad_left as isize;
            if merge_kw && ih0 >= 0 && iw0 >= 0 && ih0 as usize + eff_h <= g.in_h && iw0 as usize + g.k_w <= g.in_w {
                let src = ((b * g.in_h + ih0 as usize) * g.in_w + iw0 as usize) * g.in_c + self.c0;
                for (kh, d) in drow.chunks_exact_mut(seg).enumerate() {
                    let s = src + kh * row_step;
                    copy_run(d, &self.input[s..s + seg]);
                }
            } else {
                self.border_row(drow, b, ih0, iw0, merge_kw);
            }
            (b, oh, ow) = g.next_pixel((b, oh, ow));
        }
    }

    /// One im2col row of a pixel whose taps reach into the padding (see [`Im2col::whole_rows`]).
    fn border_row(&self, drow: &mut [f32], b: usize, ih0: isize, iw0: isize, merge_kw: bool) {
        let g = self.g;
        let cin_g = g.group_in_c();
        let seg = g.k_w * cin_g;
        {
            // Filter columns kw_lo..kw_hi fall inside the input row.
            let kw_lo = ((-iw0).max(0) as usize).div_ceil(g.dil_w).min(g.k_w);
            let kw_hi = ((g.in_w as isize - iw0).max(0) as usize).div_ceil(g.dil_w).clamp(kw_lo, g.k_w);
            for (kh, d) in drow.chunks_exact_mut(seg).enumerate() {
                let ih = ih0 + (kh * g.dil_h) as isize;
                if ih < 0 || ih >= g.in_h as isize || kw_lo == kw_hi {
                    zero_run(d);
                    continue;
                }
                let iw_lo = (iw0 + (kw_lo * g.dil_w) as isize) as usize;
                let src = ((b * g.in_h + ih as usize) * g.in_w + iw_lo) * g.in_c + self.c0;
                zero_run(&mut d[..kw_lo * cin_g]);
                if merge_kw {
                    let n = (kw_hi - kw_lo) * cin_g;
                    copy_run(&mut d[kw_lo * cin_g..kw_hi * cin_g], &self.input[src..src + n]);
                } else {
                    for (i, kw) in (kw_lo..kw_hi).enumerate() {
                        let s = src + i * g.dil_w * g.in_c;
                        copy_run(&mut d[kw * cin_g..(kw + 1) * cin_g], &self.input[s..s + cin_g]);
                    }
                }
                zero_run(&mut d[kw_hi * cin_g..]);
            }
        }
    }
}

/// Copies `src` into `dst` (same length). Runs of an im2col row are often a handful of floats
/// (3-channel stems, small groups): fixed-size chunks compile to a few vector moves where
/// `copy_from_slice` with a run-time length would call `memmove`.
#[inline]
fn copy_run(dst: &mut [f32], src: &[f32]) {
    if dst.len() > 64 {
        return dst.copy_from_slice(src);
    }
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (d, s) in (&mut d).zip(&mut s) {
        d.copy_from_slice(s);
    }
    for (d, s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d = *s;
    }
}

/// Zeroes `dst`, in fixed-size chunks for short runs (see [`copy_run`]).
#[inline]
fn zero_run(dst: &mut [f32]) {
    if dst.len() > 64 {
        return dst.fill(0.0);
    }
    let mut d = dst.chunks_exact_mut(8);
    for d in &mut d {
        d.copy_from_slice(&[0.0; 8]);
    }
    for d in d.into_remainder() {
        *d = 0.0;
    }
}

/// Reference twin of [`Conv2d::run`]: the direct loop nest of TFLite's reference kernel, over
/// the unpacked OHWI `filter`.
pub fn conv2d_ref(g: &ConvGeom, input: &[f32], filter: &[f32], bias: Option<&[f32]>, act: Act, output: &mut [f32]) {
    g.validate();
    let (cin_g, cout_g) = (g.group_in_c(), g.group_out_c());
    for b in 0..g.batch {
        for oh in 0..g.out_h {
            for ow in 0..g.out_w {
                for oc in 0..g.out_c {
                    let c0 = (oc / cout_g) * cin_g;
                    let mut s = 0.0f32;
                    for kh in 0..g.k_h {
                        for kw in 0..g.k_w {
                            let Some((ih, iw)) = g.tap_pos(oh, ow, kh, kw) else { continue };
                            for ic in 0..cin_g {
                                let x = input[((b * g.in_h + ih) * g.in_w + iw) * g.in_c + c0 + ic];
                                let w = filter[((oc * g.k_h + kh) * g.k_w + kw) * cin_g + ic];
                                s += x * w;
                            }
                        }
                    }
                    if let Some(bias) = bias {
                        s += bias[oc];
                    }
                    output[((b * g.out_h + oh) * g.out_w + ow) * g.out_c + oc] = clamp(s, act.min, act.max);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::gemm::tests::{assert_close, isas, magnitudes, values};
    use proptest::prelude::*;

    /// Runs every instruction set's `Conv2d` against `conv2d_ref`, with the rigorous
    /// summation-order tolerance of `assert_close` (`taps` products per output).
    fn check(g: ConvGeom, with_bias: bool, act: Act, seed: u64) {
        let input = values(g.input_len(), seed);
        let filter = values(g.filter_len(), seed + 1);
        let bias = with_bias.then(|| values(g.out_c, seed + 2));
        let mut want = vec![0.0; g.output_len()];
        conv2d_ref(&g, &input, &filter, bias.as_deref(), act, &mut want);
        let mag = magnitudes(&input, &filter, bias.as_deref(), g.output_len(), |x, w, b, out| conv2d_ref(&g, x, w, b, Act::NONE, out));
        for isa in isas() {
            let mut conv = Conv2d::with_isa(isa, g, &filter, bias.as_deref(), act);
            let mut got = vec![f32::NAN; g.output_len()];
            conv.run(&input, &mut got);
            assert_close(&got, &want, &mag, g.taps(), &format!("{isa:?} {g:?}"));
            // A second run reuses the scratch and must give the same bits.
            let mut again = vec![f32::NAN; g.output_len()];
            conv.run(&input, &mut again);
            assert_eq!(got, again, "{isa:?} second run differs");
        }
    }

    prop_compose! {
        fn geom()(
            batch in 1usize..3, in_h in 1usize..10, in_w in 1usize..10,
            cin_g in 1usize..7, cout_g in prop_oneof![1usize..5, 1usize..45], groups in prop_oneof![Just(1usize), 1usize..4],
            k_h in 1usize..6, k_w in 1usize..6, stride_h in 1usize..4, stride_w in 1usize..4,
            dil_h in 1usize..4, dil_w in 1usize..4,
            pad_top in 0usize..4, pad_left in 0usize..4, pad_bottom in 0usize..4, pad_right in 0usize..4,
        ) -> ConvGeom {
            let out = |n: usize, k: usize, s: usize, d: usize| valid_out(n, k, s, d).max(1);
            ConvGeom {
                batch, in_h, in_w, in_c: cin_g * groups,
                out_h: out(in_h + pad_top + pad_bottom, k_h, stride_h, dil_h),
                out_w: out(in_w + pad_left + pad_right, k_w, stride_w, dil_w),
                out_c: cout_g * groups, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, groups,
            }
        }
    }

    fn act_strategy() -> impl Strategy<Value = Act> {
        prop_oneof![Just(Act::NONE), Just(Act::RELU), Just(Act::RELU6), Just(Act::RELU_N1_TO_1)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn conv_matches_ref(g in geom(), with_bias: bool, act in act_strategy(), seed: u64) {
            check(g, with_bias, act, seed);
        }

        #[test]
        fn pointwise_matches_ref(
            batch in 1usize..3, h in 1usize..12, w in 1usize..12, cin_g in 1usize..40,
            cout_g in 1usize..70, groups in prop_oneof![Just(1usize), 1usize..4], seed: u64,
        ) {
            let g = ConvGeom {
                batch, in_h: h, in_w: w, in_c: cin_g * groups, out_h: h, out_w: w, out_c: cout_g * groups,
                k_h: 1, k_w: 1, stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 0, pad_left: 0, groups,
            };
            check(g, true, Act::RELU6, seed);
        }
    }

    #[test]
    fn realistic_shapes() {
        // SAME 3×3 stride 2 (odd size: the extra pad goes bottom/right), a 3×3 stride-1 layer
        // big enough for K blocking (K = 9·64 > 512) and parallel rows, and a 7×7 stem.
        let (oh, pt) = same_padding(15, 3, 2, 1);
        let s2 = ConvGeom {
            batch: 1, in_h: 15, in_w: 15, in_c: 8, out_h: oh, out_w: oh, out_c: 24, k_h: 3, k_w: 3,
            stride_h: 2, stride_w: 2, dil_h: 1, dil_w: 1, pad_top: pt, pad_left: pt, groups: 1,
        };
        check(s2, true, Act::RELU6, 1);
        let big = ConvGeom { in_h: 20, in_w: 20, in_c: 64, out_h: 20, out_w: 20, out_c: 40, stride_h: 1, stride_w: 1, pad_top: 1, pad_left: 1, ..s2 };
        check(big, true, Act::NONE, 2);
        let (o7, p7) = same_padding(32, 7, 2, 1);
        let stem = ConvGeom { in_h: 32, in_w: 32, in_c: 3, out_h: o7, out_w: o7, out_c: 16, k_h: 7, k_w: 7, pad_top: p7, pad_left: p7, ..s2 };
        check(stem, false, Act::RELU, 3);
    }

    #[test]
    fn rows_cut_at_the_padding() {
        // Rows wide enough that the implicit GEMM cuts its tiles at the in-place range's ends
        // (`SegmentSource::interior`): the 16-row narrow tile (N = 16) and the 8-row tile
        // (N = 40) with padding on both sides, stride 2 with padding on the right only, and a
        // kernel wider than the left padding allows in place, each against the reference and
        // against the im2col path.
        let s1 = ConvGeom {
            batch: 2, in_h: 6, in_w: 32, in_c: 5, out_h: 6, out_w: 32, out_c: 16, k_h: 3, k_w: 3,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 1, pad_left: 1, groups: 1,
        };
        let wide = ConvGeom { out_c: 40, ..s1 };
        let (o2, p2) = same_padding(34, 3, 2, 1);
        let s2 = ConvGeom { in_w: 34, out_h: 3, out_w: o2, pad_top: 0, pad_left: p2, stride_h: 2, stride_w: 2, ..wide };
        let k5 = ConvGeom { k_w: 5, out_w: 30, pad_left: 1, ..s1 };
        for (i, g) in [s1, wide, s2, k5].into_iter().enumerate() {
            check(g, true, Act::RELU6, 90 + i as u64);
            let input = values(g.input_len(), 95 + i as u64);
            let filter = values(g.filter_len(), 96 + i as u64);
            for isa in isas() {
                let mut implicit = vec![0.0; g.output_len()];
                Conv2d::with_isa(isa, g, &filter, None, Act::NONE).run(&input, &mut implicit);
                let mut im2col = vec![0.0; g.output_len()];
                Conv2d::with_isa(isa, g, &filter, None, Act::NONE).with_implicit(false).run(&input, &mut im2col);
                // Same FMA chains; only the gathered rows add the padding's zero products.
                assert!(implicit.iter().zip(&im2col).all(|(a, b)| a == b), "{isa:?} {g:?}");
                // The implicit GEMM over the padded input copy (these inputs are small enough
                // for one) and over the input itself, gathering its edge pixels.
                let conv = Conv2d::with_isa(isa, g, &filter, None, Act::NONE);
                assert!(conv.padded.is_some(), "{g:?} has no padded copy");
                let mut gathered = vec![0.0; g.output_len()];
                conv.without_padded_copy().run(&input, &mut gathered);
                assert!(implicit.iter().zip(&gathered).all(|(a, b)| a == b), "{isa:?} {g:?}, gathered");
            }
        }
    }

    #[test]
    fn short_rows_run_tiles_across_rows() {
        // Output rows shorter than two whole register tiles: 8×8 and 7×7 with padding 1 (tiles
        // span the rows' ends, where the edge pixels are gathered), 4×4 (a tile holds the last
        // pixels of a row whose top filter row is padding and the next row's first), stride 2,
        // a 5×5 filter, two images (a tile spans both), a channel tail; against the reference,
        // against the im2col path, and on one thread against a pool of two.
        let pool = nnrt_threads::KernelPool::new(2).unwrap();
        let g8 = ConvGeom {
            batch: 1, in_h: 8, in_w: 8, in_c: 24, out_h: 8, out_w: 8, out_c: 40, k_h: 3, k_w: 3,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 1, pad_left: 1, groups: 1,
        };
        let g7 = ConvGeom { in_h: 7, in_w: 7, out_h: 7, out_w: 7, in_c: 32, out_c: 16, ..g8 };
        let g4 = ConvGeom { batch: 2, in_h: 4, in_w: 4, out_h: 4, out_w: 4, out_c: 21, ..g8 };
        let (o2, p2) = same_padding(15, 3, 2, 1);
        let s2 = ConvGeom { in_h: 15, in_w: 15, out_h: o2, out_w: o2, stride_h: 2, stride_w: 2, pad_top: p2, pad_left: p2, ..g8 };
        let k5 = ConvGeom { batch: 2, k_h: 5, k_w: 5, pad_top: 2, pad_left: 2, out_c: 8, ..g7 };
        for (i, g) in [g8, g7, g4, s2, k5].into_iter().enumerate() {
            check(g, true, Act::RELU6, 110 + i as u64);
            let input = values(g.input_len(), 115 + i as u64);
            let filter = values(g.filter_len(), 116 + i as u64);
            let bias = values(g.out_c, 117 + i as u64);
            for isa in isas() {
                let mut conv = Conv2d::with_isa(isa, g, &filter, Some(&bias), Act::NONE);
                let mut implicit = vec![0.0; g.output_len()];
                conv.run(&input, &mut implicit);
                let mut im2col = vec![0.0; g.output_len()];
                Conv2d::with_isa(isa, g, &filter, Some(&bias), Act::NONE).with_implicit(false).run(&input, &mut im2col);
                // Same FMA chains; the gathered rows and the zero rows add the padding's zero
                // products (the sign of a zero sum at most).
                assert!(implicit.iter().zip(&im2col).all(|(a, b)| a == b), "{isa:?} {g:?}");
                let mut two = vec![0.0; g.output_len()];
                pool.install(|| conv.run(&input, &mut two));
                assert!(implicit.iter().zip(&two).all(|(a, b)| a == b), "{isa:?} {g:?}, two threads");
                // Over the input itself (edge pixels gathered) instead of the padded copy.
                assert!(conv.padded.is_some(), "{g:?} has no padded copy");
                let mut gathered = conv.without_padded_copy();
                for threads in [1, 2] {
                    let mut got = vec![0.0; g.output_len()];
                    match threads {
                        1 => gathered.run(&input, &mut got),
                        _ => pool.install(|| gathered.run(&input, &mut got)),
                    }
                    assert!(implicit.iter().zip(&got).all(|(a, b)| a == b), "{isa:?} {g:?}, gathered, {threads} threads");
                }
            }
        }
    }

    #[test]
    fn run_add_equals_conv_then_add_bit_for_bit() {
        // ResNet-like shapes on the implicit (3×3), im2col (1×1 stride 2, dilation 2 across
        // columns) and direct (1×1) paths, one thread and a pool of two.
        let pool = nnrt_threads::KernelPool::new(2).unwrap();
        let (oh, pt) = same_padding(32, 3, 1, 1);
        let s1 = ConvGeom {
            batch: 1, in_h: 32, in_w: 32, in_c: 16, out_h: oh, out_w: oh, out_c: 16, k_h: 3, k_w: 3,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: pt, pad_left: pt, groups: 1,
        };
        let s2_1x1 = ConvGeom { out_h: 16, out_w: 16, out_c: 32, k_h: 1, k_w: 1, stride_h: 2, stride_w: 2, pad_top: 0, pad_left: 0, ..s1 };
        let dil = ConvGeom { out_h: 28, out_w: 28, dil_h: 2, dil_w: 2, pad_top: 0, pad_left: 0, ..s1 };
        let direct = ConvGeom { out_c: 24, k_h: 1, k_w: 1, pad_top: 0, pad_left: 0, ..s1 };
        for (i, g) in [s1, s2_1x1, dil, direct].into_iter().enumerate() {
            let input = values(g.input_len(), 50 + i as u64);
            let filter = values(g.filter_len(), 60 + i as u64);
            let bias = values(g.out_c, 70 + i as u64);
            let x = values(g.output_len(), 80 + i as u64);
            let mut conv = Conv2d::new(g, &filter, Some(&bias), Act::RELU6);
            let mut want = vec![0.0; g.output_len()];
            conv.run(&input, &mut want);
            for (o, &v) in want.iter_mut().zip(&x) {
                *o = clamp(*o + v, 0.0, f32::INFINITY);
            }
            for threads in [1, 2] {
                let mut got = vec![f32::NAN; g.output_len()];
                match threads {
                    1 => conv.run_add(&input, &x, Act::RELU, &mut got),
                    _ => pool.install(|| conv.run_add(&input, &x, Act::RELU, &mut got)),
                }
                assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{g:?}, {threads} threads");
            }
        }
    }

    #[test]
    fn one_output_row_cut_across_threads_bit_for_bit() {
        // A CONV_1D as TFLite lowers it (H = 1): the only output row is cut into pieces of
        // register tiles, one piece per task; each piece's values equal the one-thread run's,
        // with a fused activation and with the padding tiles at either end.
        let pool = nnrt_threads::KernelPool::new(2).unwrap();
        let (ow, pl) = same_padding(1003, 9, 4, 1);
        let g = ConvGeom {
            batch: 1, in_h: 1, in_w: 1003, in_c: 8, out_h: 1, out_w: ow, out_c: 40, k_h: 1, k_w: 9,
            stride_h: 1, stride_w: 4, dil_h: 1, dil_w: 1, pad_top: 0, pad_left: pl, groups: 1,
        };
        let (input, filter, bias) = (values(g.input_len(), 90), values(g.filter_len(), 91), values(g.out_c, 92));
        let mut want = vec![0.0; g.output_len()];
        conv2d_ref(&g, &input, &filter, Some(&bias), Act::RELU6, &mut want);
        let mut conv = Conv2d::new(g, &filter, Some(&bias), Act::RELU6);
        let mut one = vec![f32::NAN; g.output_len()];
        conv.run(&input, &mut one);
        let mag = magnitudes(&input, &filter, Some(&bias), g.output_len(), |x, w, b, out| conv2d_ref(&g, x, w, b, Act::NONE, out));
        assert_close(&one, &want, &mag, g.taps(), "one thread");
        let mut two = vec![f32::NAN; g.output_len()];
        pool.install(|| conv.run(&input, &mut two));
        assert!(two.iter().zip(&one).all(|(a, b)| a.to_bits() == b.to_bits()), "two threads differ from one");
        let mut post = vec![f32::NAN; g.output_len()];
        pool.install(|| conv.run_post(&input, PostAct::HardSwish, &mut post));
        let mut want_post = one.clone();
        PostAct::HardSwish.apply(&mut want_post);
        assert!(post.iter().zip(&want_post).all(|(a, b)| a.to_bits() == b.to_bits()), "the fused activation's cut differs");
        // A 3x3 map (fewer pixels than two register tiles: whole rows per task) likewise.
        let g = ConvGeom { in_h: 3, in_w: 3, in_c: 64, out_h: 3, out_w: 3, out_c: 96, k_h: 3, k_w: 3, stride_w: 1, pad_top: 1, pad_left: 1, ..g };
        let (input, filter) = (values(g.input_len(), 93), values(g.filter_len(), 94));
        let mut conv = Conv2d::new(g, &filter, None, Act::NONE);
        let (mut one, mut two) = (vec![f32::NAN; g.output_len()], vec![f32::NAN; g.output_len()]);
        conv.run(&input, &mut one);
        pool.install(|| conv.run(&input, &mut two));
        assert!(two.iter().zip(&one).all(|(a, b)| a.to_bits() == b.to_bits()), "3x3 map: two threads differ from one");
    }

    #[test]
    fn tflite_padding_rules() {
        // Values from TFLite's ComputePaddingHeightWidth / ComputeOutSize.
        assert_eq!(same_padding(224, 3, 2, 1), (112, 0));
        assert_eq!(same_padding(225, 3, 2, 1), (113, 1));
        assert_eq!(same_padding(7, 3, 1, 1), (7, 1));
        assert_eq!(same_padding(8, 3, 1, 2), (8, 2));
        assert_eq!(same_padding(5, 4, 1, 1), (5, 1));
        assert_eq!(same_padding(1, 5, 3, 1), (1, 2));
        assert_eq!(valid_out(224, 3, 2, 1), 111);
        assert_eq!(valid_out(7, 3, 1, 2), 3);
        assert_eq!(valid_out(2, 3, 1, 1), 0);
        assert_eq!(valid_out(5, 5, 2, 1), 1);
    }

    /// `cargo test --release -p nnrt-backend-cpu -- --ignored --nocapture conv_speed`
    #[test]
    #[ignore]
    fn conv_speed() {
        let base = ConvGeom {
            batch: 1, in_h: 56, in_w: 56, in_c: 64, out_h: 56, out_w: 56, out_c: 64, k_h: 3, k_w: 3,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 1, pad_left: 1, groups: 1,
        };
        let shapes = [
            ("3x3 56x56x64->64", base),
            ("3x3 28x28x128->128", ConvGeom { in_h: 28, in_w: 28, out_h: 28, out_w: 28, in_c: 128, out_c: 128, ..base }),
            ("3x3/2 stem 224x224x3->32", ConvGeom { in_h: 224, in_w: 224, in_c: 3, out_h: 112, out_w: 112, out_c: 32, stride_h: 2, stride_w: 2, pad_top: 0, pad_left: 0, ..base }),
            ("1x1 56x56x64->256", ConvGeom { out_c: 256, k_h: 1, k_w: 1, pad_top: 0, pad_left: 0, ..base }),
            ("1x1 14x14x576->160", ConvGeom { in_h: 14, in_w: 14, out_h: 14, out_w: 14, in_c: 576, out_c: 160, k_h: 1, k_w: 1, pad_top: 0, pad_left: 0, ..base }),
            ("1x1 56x56x144->24", ConvGeom { in_c: 144, out_c: 24, k_h: 1, k_w: 1, pad_top: 0, pad_left: 0, ..base }),
        ];
        let filter_env = std::env::var("NNRT_SPEED_FILTER").unwrap_or_default();
        let threads_env: Vec<usize> = std::env::var("NNRT_SPEED_THREADS")
            .map(|t| t.split(',').filter_map(|t| t.parse().ok()).collect())
            .unwrap_or_else(|_| vec![1, 2]);
        for (name, g) in shapes.into_iter().filter(|(n, _)| n.contains(filter_env.as_str())) {
            let input = values(g.input_len(), 1);
            let filter = values(g.filter_len(), 2);
            let bias = values(g.out_c, 3);
            let mut out = vec![0.0; g.output_len()];
            let mut conv = Conv2d::new(g, &filter, Some(&bias), Act::RELU6);
            let flop = 2.0 * (g.output_len() * g.taps()) as f64;
            for &threads in &threads_env {
                let pool = nnrt_threads::KernelPool::new(threads).unwrap();
                let reps = (5e8 / flop).ceil() as usize;
                let mut best = 0.0f64;
                pool.install(|| {
                    for _ in 0..15 {
                        let t = std::time::Instant::now();
                        for _ in 0..reps {
                            conv.run(&input, &mut out);
                        }
                        best = best.max(flop * reps as f64 / t.elapsed().as_secs_f64() / 1e9);
                    }
                });
                println!("conv {name} threads {threads}: best {best:.1} GFLOP/s");
            }
        }
    }
}
