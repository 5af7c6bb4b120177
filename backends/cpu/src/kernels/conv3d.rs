//! CONV_3D (float): NDHWC input, filter `[k_d, k_h, k_w, in_c, out_c]` (TFLite's DHWIO), bias
//! per output channel, fused activation. The optimized path builds, for one output depth slice at
//! a time, the patch of every output pixel (taps in `(kd, kh, kw, in_c)` order, zeros where the
//! window leaves the input) and multiplies the patches by the packed filter; the reference twin
//! is TFLite's loop. Taps in the padding add nothing in both TFLite's reference loop and TOSA's
//! CONV3D pseudo-code (they are skipped): with a non-finite filter value a zero patch cell would
//! add `0 × ∞ = NaN`, so such a filter runs the reference loop instead.
#![forbid(unsafe_code)]

use std::cell::Cell;

use super::binary::clamp;
use super::gemm::{gemm, PackedB};
use super::Act;

/// Geometry of a 3-D convolution. Axis order in the arrays: depth, height, width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv3dGeom {
    /// Batch.
    pub batch: usize,
    /// Input depth, height, width.
    pub input: [usize; 3],
    /// Input channels.
    pub in_c: usize,
    /// Output depth, height, width.
    pub output: [usize; 3],
    /// Output channels.
    pub out_c: usize,
    /// Filter depth, height, width.
    pub k: [usize; 3],
    /// Strides.
    pub stride: [usize; 3],
    /// Dilations.
    pub dilation: [usize; 3],
    /// Padding cells before the first input cell.
    pub pad: [usize; 3],
}

impl Conv3dGeom {
    /// Values in one patch (the GEMM's K).
    fn patch(&self) -> usize {
        self.k.iter().product::<usize>() * self.in_c
    }

    /// Values of the input tensor.
    pub fn input_len(&self) -> usize {
        self.batch * self.input.iter().product::<usize>() * self.in_c
    }

    /// Values of the output tensor.
    pub fn output_len(&self) -> usize {
        self.batch * self.output.iter().product::<usize>() * self.out_c
    }

    /// Input coordinate along `axis` of output `o`, tap `t` (None in the padding).
    fn at(&self, axis: usize, o: usize, t: usize) -> Option<usize> {
        (o * self.stride[axis] + t * self.dilation[axis]).checked_sub(self.pad[axis]).filter(|&i| i < self.input[axis])
    }
}

/// A 3-D convolution with its filter packed for the GEMM.
#[derive(Debug)]
pub struct Conv3d {
    g: Conv3dGeom,
    packed: PackedB,
    bias: Option<Vec<f32>>,
    act: Act,
    /// The DHWIO filter, kept when a value is not finite and the window reaches the padding.
    skip_pad: Option<Vec<f32>>,
}

/// Rearranges a DHWIO filter as `out_c` rows of one patch each (the GEMM's `N × K`).
fn filter_rows(g: &Conv3dGeom, filter: &[f32]) -> Vec<f32> {
    let k = g.patch();
    let mut rows = vec![0.0; g.out_c * k];
    for (t, taps) in filter.chunks_exact(g.out_c).take(k).enumerate() {
        for (oc, &v) in taps.iter().enumerate() {
            rows[oc * k + t] = v;
        }
    }
    rows
}

impl Conv3d {
    /// Packs `filter` (`[k_d, k_h, k_w, in_c, out_c]`).
    ///
    /// # Panics
    /// When `filter` or `bias` are shorter than `g` needs.
    pub fn new(g: Conv3dGeom, filter: &[f32], bias: Option<&[f32]>, act: Act) -> Conv3d {
        assert!(filter.len() >= g.patch() * g.out_c, "conv3d: filter length");
        assert!(bias.is_none_or(|b| b.len() >= g.out_c), "conv3d: bias length");
        let packed = PackedB::pack(g.out_c, g.patch(), &filter_rows(&g, filter));
        let filter = &filter[..g.patch() * g.out_c];
        let padded = g.pad.iter().any(|&p| p > 0) || (0..3).any(|a| (g.output[a].saturating_sub(1) * g.stride[a] + (g.k[a].saturating_sub(1)) * g.dilation[a]) >= g.input[a]);
        let skip_pad = (padded && filter.iter().any(|v| !v.is_finite())).then(|| filter.to_vec());
        Conv3d { g, packed, bias: bias.map(|b| b[..g.out_c].to_vec()), act, skip_pad }
    }

    /// Runs on `input` (`[batch, d, h, w, in_c]`) into `out` (`[batch, od, oh, ow, out_c]`).
    ///
    /// # Panics
    /// When the slice lengths do not match the geometry.
    pub fn run(&self, input: &[f32], out: &mut [f32]) {
        let g = self.g;
        assert_eq!(input.len(), g.input_len(), "conv3d: input length");
        assert_eq!(out.len(), g.output_len(), "conv3d: output length");
        let [od, oh, ow] = g.output;
        let (k, pixels) = (g.patch(), oh * ow);
        if pixels == 0 || k == 0 || od == 0 {
            out.fill(0.0);
            return;
        }
        if let Some(filter) = &self.skip_pad {
            conv3d_ref(&g, input, filter, self.bias.as_deref(), self.act, out);
            return;
        }
        let image = g.input.iter().product::<usize>() * g.in_c;
        // One task per output depth slice (of every image), each with its own patch buffer.
        nnrt_threads::par_chunks_mut(out, pixels * g.out_c, |s, o| {
            let (b, z) = (s / od, s % od);
            let mut patches = PATCHES.with(Cell::take);
            patches.resize(pixels * k, 0.0);
            self.patches(&input[b * image..][..image], z, &mut patches);
            gemm(pixels, &patches, k, &self.packed, self.bias.as_deref(), self.act, o, g.out_c);
            PATCHES.with(|p| p.set(patches));
        });
    }

    /// The patch of every pixel of output slice `z` of one image: taps `(kd, kh, kw, in_c)`,
    /// zeros where the window leaves the input.
    fn patches(&self, image: &[f32], z: usize, patches: &mut [f32]) {
        let g = self.g;
        let [_, ih, iw] = g.input;
        let (k, ow, run) = (g.patch(), g.output[2], g.k[2] * g.in_c);
        for (p, patch) in patches.chunks_exact_mut(k).enumerate() {
            let (y, x) = (p / ow, p % ow);
            for (kd, plane) in patch.chunks_exact_mut(g.k[1] * run).enumerate() {
                let d = g.at(0, z, kd);
                for (kh, row) in plane.chunks_exact_mut(run).enumerate() {
                    let h = g.at(1, y, kh);
                    for (kw, cell) in row.chunks_exact_mut(g.in_c).enumerate() {
                        match (d, h, g.at(2, x, kw)) {
                            (Some(d), Some(h), Some(w)) => cell.copy_from_slice(&image[((d * ih + h) * iw + w) * g.in_c..][..g.in_c]),
                            _ => cell.fill(0.0),
                        }
                    }
                }
            }
        }
    }
}

thread_local! {
    /// Each thread's patch buffer, kept between runs.
    static PATCHES: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// A transposed 3-D convolution (CONV_3D_TRANSPOSE): every input voxel scatters
/// `filter · voxel` onto a `k_d × k_h × k_w` patch of the output, at stride steps and dilated,
/// shifted by `pad`. [`Conv3dGeom`] describes the convolution that maps the output back onto the
/// input: its `input` is this op's output and its `output` this op's input. One GEMM per input
/// depth slice (pixels × taps·out_c), scatter-added; bias and activation at the end.
#[derive(Debug)]
pub struct Conv3dTranspose {
    g: Conv3dGeom,
    packed: PackedB,
    bias: Option<Vec<f32>>,
    act: Act,
    col: Vec<f32>,
}

impl Conv3dTranspose {
    /// Packs `filter` (`[k_d, k_h, k_w, out_c, in_c]`: already rows `(tap, out_c)` of `in_c`
    /// weights). In `g`, `in_c` is this op's output channels and `out_c` its input channels.
    ///
    /// # Panics
    /// When `filter` or `bias` are shorter than `g` needs.
    pub fn new(g: Conv3dGeom, filter: &[f32], bias: Option<&[f32]>, act: Act) -> Conv3dTranspose {
        let taps = g.k.iter().product::<usize>();
        assert!(filter.len() >= taps * g.in_c * g.out_c, "conv3d_transpose: filter length");
        assert!(bias.is_none_or(|b| b.len() >= g.in_c), "conv3d_transpose: bias length");
        let packed = PackedB::pack(taps * g.in_c, g.out_c, &filter[..taps * g.in_c * g.out_c]);
        Conv3dTranspose { g, packed, bias: bias.map(|b| b[..g.in_c].to_vec()), act, col: Vec::new() }
    }

    /// Runs on `input` (`[batch, od, oh, ow, out_c]` of `g`) into `out` (`[batch, d, h, w, in_c]`).
    ///
    /// # Panics
    /// When the slice lengths do not match the geometry.
    pub fn run(&mut self, input: &[f32], out: &mut [f32]) {
        let g = self.g;
        let (oc, ic) = (g.in_c, g.out_c);
        assert_eq!(input.len(), g.batch * g.output.iter().product::<usize>() * ic, "conv3d_transpose: input length");
        assert_eq!(out.len(), g.batch * g.input.iter().product::<usize>() * oc, "conv3d_transpose: output length");
        let [d_in, h_in, w_in] = g.output;
        let [d_out, h_out, w_out] = g.input;
        let n = g.k.iter().product::<usize>() * oc;
        let pixels = h_in * w_in;
        out.fill(0.0);
        self.col.resize(pixels * n, 0.0);
        for b in 0..g.batch {
            let image = &mut out[b * d_out * h_out * w_out * oc..][..d_out * h_out * w_out * oc];
            for z in 0..d_in {
                let x = &input[((b * d_in + z) * pixels) * ic..][..pixels * ic];
                gemm(pixels, x, ic, &self.packed, None, Act::NONE, &mut self.col, n);
                for (p, row) in self.col.chunks_exact(n).enumerate() {
                    let (y, xx) = (p / w_in, p % w_in);
                    for (t, vals) in row.chunks_exact(oc).enumerate() {
                        let (kd, kh, kw) = (t / (g.k[1] * g.k[2]), t / g.k[2] % g.k[1], t % g.k[2]);
                        let (Some(d), Some(h), Some(w)) = (g.at(0, z, kd), g.at(1, y, kh), g.at(2, xx, kw)) else { continue };
                        for (o, &v) in image[((d * h_out + h) * w_out + w) * oc..][..oc].iter_mut().zip(vals) {
                            *o += v;
                        }
                    }
                }
            }
        }
        for px in out.chunks_exact_mut(oc.max(1)) {
            for (c, v) in px.iter_mut().enumerate() {
                *v = clamp(*v + self.bias.as_ref().map_or(0.0, |b| b[c]), self.act);
            }
        }
    }
}

/// Reference twin of [`Conv3dTranspose::run`]: TFLite's loop (each input value times each
/// filter tap, added to the output; then bias and clamp). `g` as for [`Conv3dTranspose::new`].
///
/// # Panics
/// When the slice lengths do not match the geometry.
pub fn conv3d_transpose_ref(g: &Conv3dGeom, input: &[f32], filter: &[f32], bias: Option<&[f32]>, act: Act, out: &mut [f32]) {
    let (oc, ic) = (g.in_c, g.out_c);
    let [d_in, h_in, w_in] = g.output;
    let [d_out, h_out, w_out] = g.input;
    out.fill(0.0);
    for b in 0..g.batch {
        for z in 0..d_in {
            for y in 0..h_in {
                for x in 0..w_in {
                    for c in 0..ic {
                        let v = input[(((b * d_in + z) * h_in + y) * w_in + x) * ic + c];
                        for kd in 0..g.k[0] {
                            for kh in 0..g.k[1] {
                                for kw in 0..g.k[2] {
                                    let (Some(d), Some(h), Some(w)) = (g.at(0, z, kd), g.at(1, y, kh), g.at(2, x, kw)) else { continue };
                                    for o in 0..oc {
                                        let f = filter[(((kd * g.k[1] + kh) * g.k[2] + kw) * oc + o) * ic + c];
                                        out[(((b * d_out + d) * h_out + h) * w_out + w) * oc + o] += v * f;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for px in out.chunks_exact_mut(oc.max(1)) {
        for (c, v) in px.iter_mut().enumerate() {
            *v = clamp(*v + bias.map_or(0.0, |b| b[c]), act);
        }
    }
}

/// Reference twin of [`Conv3d::run`]: TFLite's reference loop (taps in `(kd, kh, kw, in_c)`
/// order, then the bias, then the clamp).
///
/// # Panics
/// When the slice lengths do not match the geometry.
pub fn conv3d_ref(g: &Conv3dGeom, input: &[f32], filter: &[f32], bias: Option<&[f32]>, act: Act, out: &mut [f32]) {
    assert_eq!(out.len(), g.output_len(), "conv3d_ref: output length");
    let [id, ih, iw] = g.input;
    let [od, oh, ow] = g.output;
    for b in 0..g.batch {
        for z in 0..od {
            for y in 0..oh {
                for x in 0..ow {
                    for oc in 0..g.out_c {
                        let mut sum = 0.0f32;
                        for kd in 0..g.k[0] {
                            for kh in 0..g.k[1] {
                                for kw in 0..g.k[2] {
                                    let (Some(d), Some(h), Some(w)) = (g.at(0, z, kd), g.at(1, y, kh), g.at(2, x, kw)) else { continue };
                                    for ic in 0..g.in_c {
                                        let v = input[(((b * id + d) * ih + h) * iw + w) * g.in_c + ic];
                                        let f = filter[(((kd * g.k[1] + kh) * g.k[2] + kw) * g.in_c + ic) * g.out_c + oc];
                                        sum += v * f;
                                    }
                                }
                            }
                        }
                        let v = sum + bias.map_or(0.0, |b| b[oc]);
                        out[(((b * od + z) * oh + y) * ow + x) * g.out_c + oc] = clamp(v, act);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::gemm::tests::values;
    use proptest::prelude::*;

    #[test]
    fn ones_count_the_taps_inside() {
        // 3×3×3 input of ones, 3×3×3 filter of ones, SAME (pad 1): each output counts the
        // window cells inside the input: 8 at a corner, 27 at the centre.
        let g = Conv3dGeom { batch: 1, input: [3; 3], in_c: 1, output: [3; 3], out_c: 1, k: [3; 3], stride: [1; 3], dilation: [1; 3], pad: [1; 3] };
        let (x, f) = (vec![1.0; 27], vec![1.0; 27]);
        let mut o = vec![0.0; 27];
        Conv3d::new(g, &f, None, Act::NONE).run(&x, &mut o);
        assert_eq!((o[0], o[13], o[26]), (8.0, 27.0, 8.0));
    }

    #[test]
    fn padding_taps_are_skipped_with_an_infinite_weight() {
        // 1×1×2 input [1, 2], 1×1×2 filter [∞, 1], right padding 1: the last output's window is
        // [2, pad]; the pad tap meets ∞ and adds nothing (not 0 × ∞ = NaN). Outputs: ∞, 2·∞.
        let g = Conv3dGeom { batch: 1, input: [1, 1, 2], in_c: 1, output: [1, 1, 2], out_c: 1, k: [1, 1, 2], stride: [1; 3], dilation: [1; 3], pad: [0; 3] };
        let (x, f) = ([1.0, 2.0], [f32::INFINITY, 1.0]);
        let mut o = [0.0; 2];
        Conv3d::new(g, &f, Some(&[0.5]), Act::NONE).run(&x, &mut o);
        assert_eq!(o, [f32::INFINITY, f32::INFINITY]);
        let mut r = [0.0; 2];
        conv3d_ref(&g, &x, &f, Some(&[0.5]), Act::NONE, &mut r);
        assert_eq!(o, r);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn transpose_matches_reference(batch in 1usize..3, d in 1usize..4, h in 1usize..5, w in 1usize..5, in_c in 1usize..4, out_c in 1usize..4,
                                       k in 1usize..4, s in 1usize..3, dil in 1usize..3, pad in 0usize..2, seed in any::<u64>()) {
            // This op's input is d × h × w; its output the size a convolution would map back.
            let eff = (k - 1) * dil + 1;
            let full = |n: usize| ((n - 1) * s + eff).checked_sub(2 * pad).filter(|&v| v > 0);
            let (Some(fd), Some(fh), Some(fw)) = (full(d), full(h), full(w)) else { return Ok(()) };
            let g = Conv3dGeom { batch, input: [fd, fh, fw], in_c: out_c, output: [d, h, w], out_c: in_c, k: [k; 3], stride: [s; 3], dilation: [dil; 3], pad: [pad; 3] };
            let x = values(batch * d * h * w * in_c, seed);
            let f = values(k * k * k * out_c * in_c, seed ^ 3);
            let bias = values(out_c, seed ^ 5);
            let n = batch * fd * fh * fw * out_c;
            let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
            Conv3dTranspose::new(g, &f, Some(&bias), Act::RELU6).run(&x, &mut o1);
            conv3d_transpose_ref(&g, &x, &f, Some(&bias), Act::RELU6, &mut o2);
            for (a, b) in o1.iter().zip(&o2) {
                prop_assert!((a - b).abs() <= 1e-4, "{a} vs {b}");
            }
        }

        // Sums over at most 2·3·3·3 products of values in [-1, 1], in another order: 1e-4.
        #[test]
        fn matches_reference(batch in 1usize..3, d in 1usize..5, h in 1usize..6, w in 1usize..6, in_c in 1usize..4, out_c in 1usize..5,
                             k in 1usize..4, s in 1usize..3, dil in 1usize..3, pad in 0usize..2, seed in any::<u64>()) {
            let eff = (k - 1) * dil + 1;
            let out = |n: usize| (n + 2 * pad).checked_sub(eff).map(|v| v / s + 1);
            let (Some(od), Some(oh), Some(ow)) = (out(d), out(h), out(w)) else { return Ok(()) };
            let g = Conv3dGeom { batch, input: [d, h, w], in_c, output: [od, oh, ow], out_c, k: [k, k, k], stride: [s; 3], dilation: [dil; 3], pad: [pad; 3] };
            let x = values(g.input_len(), seed);
            let f = values(k * k * k * in_c * out_c, seed ^ 3);
            let bias = values(out_c, seed ^ 5);
            let (mut o1, mut o2) = (vec![0.0; g.output_len()], vec![0.0; g.output_len()]);
            Conv3d::new(g, &f, Some(&bias), Act::RELU6).run(&x, &mut o1);
            conv3d_ref(&g, &x, &f, Some(&bias), Act::RELU6, &mut o2);
            for (a, b) in o1.iter().zip(&o2) {
                prop_assert!((a - b).abs() <= 1e-4, "{a} vs {b}");
            }
        }
    }
}
