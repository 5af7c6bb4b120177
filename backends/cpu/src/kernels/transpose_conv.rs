//! TRANSPOSE_CONV (float): every input pixel scatters `filter · pixel` onto a `k_h × k_w` patch
//! of the output, at stride steps, shifted by the padding a convolution of the output would
//! use. The optimized path is one GEMM per image (pixels × taps·out_c) followed by a col2im
//! scatter-add; the reference twin is TFLite's loop. When the strides are at least the kernel
//! (MediaPipe's and Keras's 2×2 stride-2 upsampling) the taps of different pixels never meet:
//! the GEMM then adds the bias and clamps, and each pixel's row of a tap row is copied into
//! place, one contiguous run per (pixel, filter row).
#![forbid(unsafe_code)]

use super::binary::clamp;
use super::gemm::{gemm, PackedB};
use super::Act;

/// Geometry of a transposed convolution (NHWC input and output, filter `[out_c, k_h, k_w, in_c]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposeConvGeom {
    /// Batch.
    pub batch: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Input channels.
    pub in_c: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Output channels.
    pub out_c: usize,
    /// Filter height.
    pub k_h: usize,
    /// Filter width.
    pub k_w: usize,
    /// Stride along height.
    pub stride_h: usize,
    /// Stride along width.
    pub stride_w: usize,
    /// Output rows cut before the first (the padding of the equivalent convolution).
    pub pad_top: usize,
    /// Output columns cut before the first.
    pub pad_left: usize,
}

impl TransposeConvGeom {
    /// The geometry of NHWC input `x`, OHWI filter `w` and NHWC output `out` dims, with
    /// `stride` and the `pad` (top, left) cut before the first output row and column.
    pub fn nhwc(x: &[usize], w: &[usize], out: &[usize], stride: [usize; 2], pad: [usize; 2]) -> TransposeConvGeom {
        TransposeConvGeom {
            batch: x[0],
            in_h: x[1],
            in_w: x[2],
            in_c: x[3],
            out_h: out[1],
            out_w: out[2],
            out_c: out[3],
            k_h: w[1],
            k_w: w[2],
            stride_h: stride[0],
            stride_w: stride[1],
            pad_top: pad[0],
            pad_left: pad[1],
        }
    }

    fn taps(&self) -> usize {
        self.k_h * self.k_w
    }
}

/// A transposed convolution with its filter packed for the GEMM.
#[derive(Debug)]
pub struct TransposeConv {
    g: TransposeConvGeom,
    packed: PackedB,
    bias: Option<Vec<f32>>,
    act: Act,
    col: Vec<f32>,
    /// Non-overlapping taps: the bias of every GEMM column `(tap, out_c)`, added by the GEMM.
    tap_bias: Option<Vec<f32>>,
}

impl TransposeConv {
    /// Packs `filter` (`[out_c, k_h, k_w, in_c]`) as rows `(tap, out_c)` of `in_c` weights.
    ///
    /// # Panics
    /// When `filter` or `bias` do not match `g`.
    pub fn new(g: TransposeConvGeom, filter: &[f32], bias: Option<&[f32]>, act: Act) -> TransposeConv {
        assert_eq!(filter.len(), g.out_c * g.taps() * g.in_c, "transpose_conv: filter length");
        let mut rows = vec![0.0; filter.len()];
        for oc in 0..g.out_c {
            for t in 0..g.taps() {
                let src = (oc * g.taps() + t) * g.in_c;
                let dst = (t * g.out_c + oc) * g.in_c;
                rows[dst..dst + g.in_c].copy_from_slice(&filter[src..src + g.in_c]);
            }
        }
        let packed = PackedB::pack(g.taps() * g.out_c, g.in_c, &rows);
        if let Some(b) = bias {
            assert_eq!(b.len(), g.out_c, "transpose_conv: bias length");
        }
        let disjoint = g.stride_h >= g.k_h && g.stride_w >= g.k_w;
        let tap_bias = disjoint.then(|| (0..g.taps()).flat_map(|_| (0..g.out_c).map(|c| bias.map_or(0.0, |b| b[c]))).collect());
        TransposeConv { g, packed, bias: bias.map(<[f32]>::to_vec), act, col: Vec::new(), tap_bias }
    }

    /// Runs on one input (`[batch, in_h, in_w, in_c]`) into `out` (`[batch, out_h, out_w, out_c]`).
    ///
    /// # Panics
    /// When the slice lengths do not match the geometry.
    pub fn run(&mut self, input: &[f32], out: &mut [f32]) {
        let g = self.g;
        let pixels = g.in_h * g.in_w;
        let n = g.taps() * g.out_c;
        assert_eq!(input.len(), g.batch * pixels * g.in_c, "transpose_conv: input length");
        assert_eq!(out.len(), g.batch * g.out_h * g.out_w * g.out_c, "transpose_conv: output length");
        let image = g.out_h * g.out_w * g.out_c;
        self.col.resize(pixels * n, 0.0);
        if let Some(tap_bias) = &self.tap_bias {
            // Output cells no tap reaches (strides above the kernel, or past the last pixel's
            // patch) hold the activated bias.
            let covered = g.stride_h == g.k_h && g.stride_w == g.k_w && g.pad_top == 0 && g.pad_left == 0;
            if !(covered && g.out_h == g.in_h * g.k_h && g.out_w == g.in_w * g.k_w) {
                for px in out.chunks_exact_mut(g.out_c.max(1)) {
                    for (c, v) in px.iter_mut().enumerate() {
                        *v = clamp(self.bias.as_ref().map_or(0.0, |b| b[c]), self.act);
                    }
                }
            }
            for b in 0..g.batch {
                let x = &input[b * pixels * g.in_c..(b + 1) * pixels * g.in_c];
                gemm(pixels, x, g.in_c, &self.packed, Some(tap_bias), self.act, &mut self.col, n);
                place(&g, &self.col, &mut out[b * image..(b + 1) * image]);
            }
            return;
        }
        out.fill(0.0);
        for b in 0..g.batch {
            let x = &input[b * pixels * g.in_c..(b + 1) * pixels * g.in_c];
            gemm(pixels, x, g.in_c, &self.packed, None, Act::NONE, &mut self.col, n);
            scatter(&g, &self.col, &mut out[b * image..(b + 1) * image]);
        }
        finish(out, g.out_c, self.bias.as_deref(), self.act);
    }
}

/// Copies each pixel's `(tap, out_c)` row of `col` onto the output patch it covers, for taps
/// that never overlap (strides at least the kernel): one run of `k_w · out_c` values (fewer
/// where the patch is clipped) per pixel and filter row.
fn place(g: &TransposeConvGeom, col: &[f32], out: &mut [f32]) {
    let n = g.taps() * g.out_c;
    for iy in 0..g.in_h {
        for fy in 0..g.k_h {
            let Some(oy) = (iy * g.stride_h + fy).checked_sub(g.pad_top).filter(|&y| y < g.out_h) else { continue };
            let out_row = &mut out[oy * g.out_w * g.out_c..][..g.out_w * g.out_c];
            for ix in 0..g.in_w {
                // Filter columns whose output column lies in [0, out_w).
                let origin = (ix * g.stride_w) as isize - g.pad_left as isize;
                let fx0 = (-origin).clamp(0, g.k_w as isize) as usize;
                let fx1 = (g.out_w as isize - origin).clamp(fx0 as isize, g.k_w as isize) as usize;
                if fx0 == fx1 {
                    continue;
                }
                let src = &col[(iy * g.in_w + ix) * n + (fy * g.k_w + fx0) * g.out_c..][..(fx1 - fx0) * g.out_c];
                let ox0 = (origin + fx0 as isize) as usize;
                // Runs are a few values long (2 for a 2×2 kernel into one channel): an element
                // loop, not a memmove call per run.
                for (d, &v) in out_row[ox0 * g.out_c..][..src.len()].iter_mut().zip(src) {
                    *d = v;
                }
            }
        }
    }
}

/// Adds each pixel's `(tap, out_c)` row of `col` onto the output patch it covers.
fn scatter(g: &TransposeConvGeom, col: &[f32], out: &mut [f32]) {
    let n = g.taps() * g.out_c;
    for iy in 0..g.in_h {
        for ix in 0..g.in_w {
            let row = &col[(iy * g.in_w + ix) * n..][..n];
            for fy in 0..g.k_h {
                let oy = (iy * g.stride_h + fy) as isize - g.pad_top as isize;
                if oy < 0 || oy as usize >= g.out_h {
                    continue;
                }
                for fx in 0..g.k_w {
                    let ox = (ix * g.stride_w + fx) as isize - g.pad_left as isize;
                    if ox < 0 || ox as usize >= g.out_w {
                        continue;
                    }
                    let dst = &mut out[(oy as usize * g.out_w + ox as usize) * g.out_c..][..g.out_c];
                    let src = &row[(fy * g.k_w + fx) * g.out_c..][..g.out_c];
                    for (d, &s) in dst.iter_mut().zip(src) {
                        *d += s;
                    }
                }
            }
        }
    }
}

/// Bias and activation clamp, per output channel.
fn finish(out: &mut [f32], out_c: usize, bias: Option<&[f32]>, act: Act) {
    for px in out.chunks_exact_mut(out_c.max(1)) {
        for (c, v) in px.iter_mut().enumerate() {
            let with_bias = *v + bias.map_or(0.0, |b| b[c]);
            *v = clamp(with_bias, act);
        }
    }
}

/// Reference twin of [`TransposeConv::run`]: TFLite's reference loop.
///
/// # Panics
/// When the slice lengths do not match the geometry.
pub fn transpose_conv_ref(g: &TransposeConvGeom, input: &[f32], filter: &[f32], bias: Option<&[f32]>, act: Act, out: &mut [f32]) {
    assert_eq!(out.len(), g.batch * g.out_h * g.out_w * g.out_c, "transpose_conv_ref: output length");
    out.fill(0.0);
    for b in 0..g.batch {
        for iy in 0..g.in_h {
            for ix in 0..g.in_w {
                for ic in 0..g.in_c {
                    let v = input[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ic];
                    for fy in 0..g.k_h {
                        for fx in 0..g.k_w {
                            let oy = (iy * g.stride_h + fy) as isize - g.pad_top as isize;
                            let ox = (ix * g.stride_w + fx) as isize - g.pad_left as isize;
                            if oy < 0 || ox < 0 || oy as usize >= g.out_h || ox as usize >= g.out_w {
                                continue;
                            }
                            for oc in 0..g.out_c {
                                let w = filter[((oc * g.k_h + fy) * g.k_w + fx) * g.in_c + ic];
                                out[((b * g.out_h + oy as usize) * g.out_w + ox as usize) * g.out_c + oc] += v * w;
                            }
                        }
                    }
                }
            }
        }
    }
    finish(out, g.out_c, bias, act);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        crate::testdata::unit_values(n, seed).map(|u| u - 0.5).collect()
    }

    #[test]
    fn tflite_example() {
        // TFLite's transpose_conv_test SimpleTest: 4x4 input 1..16, 3x3 filter 1..9, SAME,
        // stride 1 -> 29, 62, 83, 75, …
        let g = TransposeConvGeom { batch: 1, in_h: 4, in_w: 4, in_c: 1, out_h: 4, out_w: 4, out_c: 1, k_h: 3, k_w: 3, stride_h: 1, stride_w: 1, pad_top: 1, pad_left: 1 };
        let x: Vec<f32> = (1..=16).map(|v| v as f32).collect();
        let w: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let mut o = vec![0.0; 16];
        TransposeConv::new(g, &w, None, Act::NONE).run(&x, &mut o);
        assert_eq!(&o[..4], &[29.0, 62.0, 83.0, 75.0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        // The GEMM sums over in_c before the taps; TFLite sums tap by tap. Products of values in
        // [-0.5, 0.5] summed over at most 5·3·3 terms: 1e-5 absolute covers the reordering.
        #[test]
        fn matches_reference(batch in 1usize..3, in_h in 1usize..6, in_w in 1usize..6, in_c in 1usize..6, out_c in 1usize..5,
                             k_h in 1usize..4, k_w in 1usize..4, s_h in 1usize..3, s_w in 1usize..3, pad in 0usize..2, seed in any::<u64>()) {
            let out_h = (in_h - 1) * s_h + k_h - pad;
            let out_w = (in_w - 1) * s_w + k_w - pad;
            let g = TransposeConvGeom { batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h: s_h, stride_w: s_w, pad_top: pad.min(k_h - 1), pad_left: 0 };
            let x = values(batch * in_h * in_w * in_c, seed);
            let w = values(out_c * k_h * k_w * in_c, seed ^ 5);
            let bias = values(out_c, seed ^ 9);
            let (mut o1, mut o2) = (vec![0.0; batch * out_h * out_w * out_c], vec![0.0; batch * out_h * out_w * out_c]);
            TransposeConv::new(g, &w, Some(&bias), Act::RELU6).run(&x, &mut o1);
            transpose_conv_ref(&g, &x, &w, Some(&bias), Act::RELU6, &mut o2);
            for (a, b) in o1.iter().zip(&o2) {
                prop_assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
            }
        }
    }
}
