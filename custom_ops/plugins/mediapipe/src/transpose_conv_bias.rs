//! `Convolution2DTransposeBias`: TFLite's TRANSPOSE_CONV (reference kernel) with a bias and the
//! output shape computed from the input rather than given as a tensor (MediaPipe's
//! transpose_conv_bias.cc).
//!
//! Inputs: `input` [N, H, W, C] float32, `weights` [O, KH, KW, C] float32 (OHWI), `bias` [O]
//! float32. Options: TfLiteTransposeConvParams as raw little-endian int32s `padding` (1 SAME,
//! 2 VALID), `stride_width`, `stride_height`. Output [N, OH, OW, O] with
//! `OH = stride_h * (H - 1) + KH - pad_h`, where `pad_h = max(0, KH - (H - 1) % stride_h - 1)`
//! for SAME and 0 otherwise (same for W); the kernel shifts by `pad / 2`.

use nnrt_plugin_sdk::{shape::expect_rank, DType, ShapeInput, Tensor, TensorMut};

use crate::util::expect_io;

const SAME: i32 = 1;

/// The op's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// TfLitePadding: 1 SAME, 2 VALID.
    pub padding: i32,
    /// Stride along W.
    pub stride_w: usize,
    /// Stride along H.
    pub stride_h: usize,
}

/// Reads the options struct.
pub fn params(options: &[u8]) -> Result<Params, String> {
    if options.len() < 12 {
        return Err(format!("options must hold TfLiteTransposeConvParams (padding, stride_width, stride_height as int32), got {} bytes", options.len()));
    }
    let int = |k: usize| i32::from_le_bytes([options[4 * k], options[4 * k + 1], options[4 * k + 2], options[4 * k + 3]]);
    let stride = |k: usize, what: &str| usize::try_from(int(k)).ok().filter(|&s| s > 0).ok_or_else(|| format!("{what} must be positive, got {}", int(k)));
    Ok(Params { padding: int(0), stride_w: stride(1, "stride_width")?, stride_h: stride(2, "stride_height")? })
}

/// Total padding along one axis (TFLite's transpose_conv Prepare).
fn total_pad(p: &Params, k: usize, n: usize, stride: usize) -> usize {
    if p.padding == SAME {
        (k as isize - ((n as isize - 1).rem_euclid(stride as isize)) - 1).max(0) as usize
    } else {
        0
    }
}

/// Output dims for input dims `x` and weight dims `w`.
pub fn output_dims(p: &Params, x: &[usize], w: &[usize]) -> Result<Vec<usize>, String> {
    expect_rank("input", x, 4)?;
    expect_rank("weights", w, 4)?;
    if x[3] != w[3] {
        return Err(format!("input has {} channels but weights (OHWI) expect {}", x[3], w[3]));
    }
    if x[1] == 0 || x[2] == 0 {
        return Err(format!("input {x:?} has an empty spatial dim"));
    }
    let oh = (p.stride_h * (x[1] - 1) + w[1]).checked_sub(total_pad(p, w[1], x[1], p.stride_h));
    let ow = (p.stride_w * (x[2] - 1) + w[2]).checked_sub(total_pad(p, w[2], x[2], p.stride_w));
    match (oh, ow) {
        (Some(oh), Some(ow)) => Ok(vec![x[0], oh, ow, w[0]]),
        _ => Err("the output would have a negative size".into()),
    }
}

/// Shape function.
pub fn shape(ins: &[ShapeInput<'_>], options: &[u8]) -> Result<Vec<Vec<usize>>, String> {
    expect_io("Convolution2DTransposeBias", ins.len(), 1, 3, 1)?;
    Ok(vec![output_dims(&params(options)?, &ins[0].dims, &ins[1].dims)?])
}

/// Kernel.
pub fn eval(ins: &[Tensor<'_>], outs: &mut [TensorMut<'_>], options: &[u8]) -> Result<(), String> {
    expect_io("Convolution2DTransposeBias", ins.len(), outs.len(), 3, 1)?;
    let p = params(options)?;
    let (x, w, b) = (&ins[0], &ins[1], &ins[2]);
    for (t, what) in [(x, "input"), (w, "weights"), (b, "bias")] {
        if t.dtype != DType::F32 {
            return Err(format!("{what} must be float32, got {}", t.dtype));
        }
    }
    let dims = output_dims(&p, &x.dims, &w.dims)?;
    expect_rank("bias", &b.dims, 1)?;
    if b.dims[0] != w.dims[0] {
        return Err(format!("bias has {} values for {} output channels", b.dims[0], w.dims[0]));
    }
    if outs[0].dims != dims {
        return Err(format!("output has shape {:?}, expected {dims:?}", outs[0].dims));
    }
    let pad = (total_pad(&p, w.dims[1], x.dims[1], p.stride_h) / 2, total_pad(&p, w.dims[2], x.dims[2], p.stride_w) / 2);
    transpose_conv_bias(x.f32s()?, &x.dims, w.f32s()?, &w.dims, b.f32s()?, &p, pad, outs[0].f32s_mut()?, &dims);
    Ok(())
}

/// The op on NHWC `x` into `out`, bit for bit as TFLite's reference loop (see [`scatter`]).
/// Strides at least as large as the kernel (MediaPipe's 2×2 stride-2 upsampling) take
/// [`non_overlapping`], which computes the same sums in the same order several times faster.
#[allow(clippy::too_many_arguments)]
pub fn transpose_conv_bias(x: &[f32], xd: &[usize], w: &[f32], wd: &[usize], bias: &[f32], p: &Params, pad: (usize, usize), out: &mut [f32], od: &[usize]) {
    if p.stride_h >= wd[1] && p.stride_w >= wd[2] {
        non_overlapping(x, xd, w, wd, bias, p, pad, out, od);
    } else {
        scatter(x, xd, w, wd, bias, p, pad, out, od);
    }
}

/// Strides ≥ kernel: every output takes the taps of at most one input pixel, so it is
/// `bias + x₀·w₀ + x₁·w₁ + …` over the input channels in order — what the scatter loop adds
/// (one multiply, then one add, per term). Each input row is transposed to `[C][W]` so that, for
/// one filter tap and output channel, the sums of all the row's pixels advance together over
/// contiguous memory (a loop LLVM vectorizes without reordering any sum).
#[allow(clippy::too_many_arguments)]
fn non_overlapping(x: &[f32], xd: &[usize], w: &[f32], wd: &[usize], bias: &[f32], p: &Params, pad: (usize, usize), out: &mut [f32], od: &[usize]) {
    let (n, h, wi, c) = (xd[0], xd[1], xd[2], xd[3]);
    let (o, kh, kw) = (wd[0], wd[1], wd[2]);
    let (oh, ow) = (od[1], od[2]);
    for pixel in out.chunks_exact_mut(o) {
        pixel.copy_from_slice(bias);
    }
    let mut xt = vec![0f32; c * wi];
    let mut acc = vec![0f32; wi];
    for b in 0..n {
        let ob = &mut out[b * oh * ow * o..(b + 1) * oh * ow * o];
        for iy in 0..h {
            let row = &x[(b * h + iy) * wi * c..][..wi * c];
            for (ix, px) in row.chunks_exact(c.max(1)).enumerate() {
                for (ic, &v) in px.iter().enumerate() {
                    xt[ic * wi + ix] = v;
                }
            }
            for fy in 0..kh {
                let Some(oy) = (iy * p.stride_h + fy).checked_sub(pad.0).filter(|&y| y < oh) else { continue };
                for fx in 0..kw {
                    for oc in 0..o {
                        acc.fill(bias[oc]);
                        let wv = &w[((oc * kh + fy) * kw + fx) * c..][..c];
                        for (&wgt, xr) in wv.iter().zip(xt.chunks_exact(wi.max(1))) {
                            for (a, &v) in acc.iter_mut().zip(xr) {
                                *a += v * wgt;
                            }
                        }
                        for (ix, &a) in acc.iter().enumerate() {
                            if let Some(ox) = (ix * p.stride_w + fx).checked_sub(pad.1).filter(|&x| x < ow) {
                                ob[(oy * ow + ox) * o + oc] = a;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The reference loop: every input pixel scatters `input * weight` into the outputs it touches.
/// The additions into each output happen in the reference kernel's order (input y, x, channel,
/// then filter y, x), so results match it bit for bit; the weights are first reordered to
/// [KH, KW, C, O] so the innermost loop over output channels reads them contiguously.
#[allow(clippy::too_many_arguments)]
fn scatter(x: &[f32], xd: &[usize], w: &[f32], wd: &[usize], bias: &[f32], p: &Params, pad: (usize, usize), out: &mut [f32], od: &[usize]) {
    let (n, h, wi, c) = (xd[0], xd[1], xd[2], xd[3]);
    let (o, kh, kw) = (wd[0], wd[1], wd[2]);
    let (oh, ow) = (od[1], od[2]);
    let mut wt = vec![0f32; w.len()];
    for oc in 0..o {
        for fy in 0..kh {
            for fx in 0..kw {
                for ic in 0..c {
                    wt[((fy * kw + fx) * c + ic) * o + oc] = w[((oc * kh + fy) * kw + fx) * c + ic];
                }
            }
        }
    }
    for pixel in out.chunks_exact_mut(o) {
        pixel.copy_from_slice(bias);
    }
    for b in 0..n {
        let ob = &mut out[b * oh * ow * o..(b + 1) * oh * ow * o];
        for iy in 0..h {
            for ix in 0..wi {
                let xin = &x[((b * h + iy) * wi + ix) * c..][..c];
                for (ic, &v) in xin.iter().enumerate() {
                    for fy in 0..kh {
                        let Some(oy) = (iy * p.stride_h + fy).checked_sub(pad.0).filter(|&y| y < oh) else { continue };
                        for fx in 0..kw {
                            let Some(ox) = (ix * p.stride_w + fx).checked_sub(pad.1).filter(|&x| x < ow) else { continue };
                            let dst = &mut ob[(oy * ow + ox) * o..][..o];
                            let wv = &wt[((fy * kw + fx) * c + ic) * o..][..o];
                            for (d, &wgt) in dst.iter_mut().zip(wv) {
                                *d += v * wgt;
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(padding: i32, sw: i32, sh: i32) -> Vec<u8> {
        [padding, sw, sh].iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// The straightforward definition: out[oy, ox, oc] = bias[oc] + sum over (iy, ix, fy, fx, ic)
    /// with oy = iy * s + fy - pad.
    #[allow(clippy::too_many_arguments)]
    fn naive(x: &[f32], xd: &[usize], w: &[f32], wd: &[usize], bias: &[f32], s: (usize, usize), pad: (usize, usize), od: &[usize]) -> Vec<f32> {
        let mut out = vec![0f32; od.iter().product()];
        for oy in 0..od[1] {
            for ox in 0..od[2] {
                for oc in 0..od[3] {
                    let mut acc = bias[oc] as f64;
                    for iy in 0..xd[1] {
                        for ix in 0..xd[2] {
                            for fy in 0..wd[1] {
                                for fx in 0..wd[2] {
                                    if iy * s.0 + fy == oy + pad.0 && ix * s.1 + fx == ox + pad.1 {
                                        for ic in 0..xd[3] {
                                            acc += (x[(iy * xd[2] + ix) * xd[3] + ic] * w[((oc * wd[1] + fy) * wd[2] + fx) * wd[3] + ic]) as f64;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    out[(oy * od[2] + ox) * od[3] + oc] = acc as f32;
                }
            }
        }
        out
    }

    #[test]
    fn output_shapes_follow_tflite() {
        let same = params(&opts(1, 2, 2)).unwrap();
        // MediaPipe's selfie model: 128x128 -> 256x256 with a 2x2 kernel, stride 2, SAME.
        assert_eq!(output_dims(&same, &[1, 128, 128, 16], &[1, 2, 2, 16]).unwrap(), vec![1, 256, 256, 1]);
        // 3x3 kernel, stride 2, SAME, H = 4: pad = max(0, 3 - 3 % 2 - 1) = 1, so 2 * 3 + 3 - 1 = 8.
        assert_eq!(output_dims(&same, &[1, 4, 4, 1], &[1, 3, 3, 1]).unwrap(), vec![1, 8, 8, 1]);
        let valid = params(&opts(2, 2, 2)).unwrap();
        assert_eq!(output_dims(&valid, &[1, 4, 4, 1], &[1, 3, 3, 1]).unwrap(), vec![1, 9, 9, 1]);
        assert!(params(&[0; 8]).is_err());
        assert!(params(&opts(1, 0, 1)).is_err());
        assert!(output_dims(&same, &[1, 4, 4, 2], &[1, 3, 3, 1]).is_err());
    }

    #[test]
    fn matches_the_definition() {
        for (padding, s, k, h, c, o) in [(1, 2, 3, 4, 3, 2), (2, 2, 3, 3, 2, 3), (1, 1, 3, 5, 2, 2), (1, 2, 2, 4, 4, 1), (2, 3, 2, 2, 1, 1)] {
            let p = params(&opts(padding, s, s)).unwrap();
            let xd = [1, h, h + 1, c];
            let wd = [o, k, k, c];
            let x: Vec<f32> = (0..xd.iter().product::<usize>()).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.25).collect();
            let w: Vec<f32> = (0..wd.iter().product::<usize>()).map(|i| ((i * 5 % 13) as f32 - 6.0) * 0.125).collect();
            let bias: Vec<f32> = (0..o).map(|i| i as f32 * 0.5 - 0.25).collect();
            let od = output_dims(&p, &xd, &wd).unwrap();
            let pad = (total_pad(&p, k, h, s as usize) / 2, total_pad(&p, k, h + 1, s as usize) / 2);
            let mut out = vec![0f32; od.iter().product()];
            transpose_conv_bias(&x, &xd, &w, &wd, &bias, &p, pad, &mut out, &od);
            let want = naive(&x, &xd, &w, &wd, &bias, (s as usize, s as usize), pad, &od);
            for (i, (a, b)) in out.iter().zip(&want).enumerate() {
                // Sums of a few dozen products of small values: float32 rounding stays far below 1e-4.
                assert!((a - b).abs() < 1e-4, "padding {padding} stride {s} k {k}: element {i}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn non_overlapping_strides_match_the_scatter_loop_bit_for_bit() {
        for (padding, s, k, h, c, o) in [(1, 2, 2, 6, 16, 1), (2, 2, 2, 5, 3, 4), (1, 3, 2, 4, 5, 2), (2, 2, 1, 3, 7, 3), (1, 2, 2, 1, 1, 1)] {
            let p = params(&opts(padding, s, s)).unwrap();
            let xd = [2, h, h + 2, c];
            let wd = [o, k, k, c];
            let x: Vec<f32> = (0..xd.iter().product::<usize>()).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.0173).collect();
            let w: Vec<f32> = (0..wd.iter().product::<usize>()).map(|i| ((i * 53 % 97) as f32 - 48.0) * 0.0311).collect();
            let bias: Vec<f32> = (0..o).map(|i| i as f32 * 0.37 - 0.21).collect();
            let od = output_dims(&p, &xd, &wd).unwrap();
            let pad = (total_pad(&p, k, h, s as usize) / 2, total_pad(&p, k, h + 2, s as usize) / 2);
            let (mut fast, mut slow) = (vec![f32::NAN; od.iter().product()], vec![f32::NAN; od.iter().product()]);
            transpose_conv_bias(&x, &xd, &w, &wd, &bias, &p, pad, &mut fast, &od);
            scatter(&x, &xd, &w, &wd, &bias, &p, pad, &mut slow, &od);
            assert_eq!(fast.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), slow.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "padding {padding} stride {s} k {k}");
        }
    }

    #[test]
    fn kernel_checks_its_inputs() {
        let x = vec![0f32; 16];
        let w = vec![0f32; 4];
        let b = vec![0f32; 1];
        let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
        let (xb, wb, bb) = (bytes(&x), bytes(&w), bytes(&b));
        let ins = [
            Tensor::new(DType::F32, vec![1, 4, 4, 1], None, &xb),
            Tensor::new(DType::F32, vec![1, 2, 2, 1], None, &wb),
            Tensor::new(DType::F32, vec![1], None, &bb),
        ];
        let mut ob = vec![0u8; 4 * 64];
        let mut outs = [TensorMut::new(DType::F32, vec![1, 8, 8, 1], None, &mut ob)];
        // The test's byte vectors may not be 4-aligned; the kernel reports that instead of panicking.
        let r = eval(&ins, &mut outs, &opts(1, 2, 2));
        assert!(r.is_ok() || r.as_ref().unwrap_err().contains("cannot be viewed"), "{r:?}");
        let mut small = vec![0u8; 16];
        let mut wrong = [TensorMut::new(DType::F32, vec![1, 2, 2, 1], None, &mut small)];
        assert!(eval(&ins, &mut wrong, &opts(1, 2, 2)).unwrap_err().contains("expected"));
    }
}
