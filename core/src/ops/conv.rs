//! Convolutions: CONV_2D, DEPTHWISE_CONV_2D, CONV_3D, TRANSPOSE_CONV, CONV_3D_TRANSPOSE, and
//! the window rule (output size and padding of one spatial dim) pooling shares.

use super::Shapes::One;
use super::{spec, Activation, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the image (NHWC, or NDHWC for CONV_3D) of CONV_2D, DEPTHWISE_CONV_2D and CONV_3D.",
    FILTER = 1: "Input slot of the filter (OHWI; `[1, H, W, C*multiplier]` depthwise; `[D, H, W, I, O]` 3-D).",
    BIAS = 2: "Input slot of the optional bias, one value per output channel.",
    INPUT_ZP = 3: "Input slot of the image's zero point in the plain-integer form (TOSA): one constant of the image's type.",
    FILTER_ZP = 4: "Input slot of the filter's zero point in the plain-integer form (TOSA): one constant int8."
);

slots! {
    /// Input slots of TRANSPOSE_CONV and CONV_3D_TRANSPOSE.
    mod transpose: OUTPUT_SHAPE = 0: "The output shape (int32 values).",
        FILTER = 1: "The filter (`[out_c, kh, kw, in_c]`; 3-D: `[k_d, k_h, k_w, out_c, in_c]`).", INPUT = 2: "The image.",
        BIAS = 3: "The optional bias.";
}

/// How a windowed op pads its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Padding {
    /// Output size `ceil(in / stride)`, padding split with the extra cell at the end.
    Same,
    /// No padding: only windows fully inside the input.
    Valid,
    /// Explicit cells before and after each spatial dim: `[top, bottom, left, right]`.
    Explicit([usize; 4]),
    /// Explicit cells before and after each dim of a 3-D window (CONV3D):
    /// `[front, back, top, bottom, left, right]`. Padding taps add nothing to the sum: a kernel
    /// skips them rather than multiplying a filled value (TOSA's CONV3D pseudo-code).
    Explicit3([usize; 6]),
}

/// Parameters of 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv2D {
    /// Padding scheme.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Dilation along height, width.
    pub dilation: [usize; 2],
    /// Fused activation.
    pub act: Activation,
}

/// Parameters of 3-D convolution (CONV_3D: NDHWC input, `[k_d, k_h, k_w, in_c, out_c]` filter).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv3D {
    /// Padding scheme (SAME or VALID; CONV3D also `Explicit3`).
    pub padding: Padding,
    /// Stride along depth, height, width.
    pub stride: [usize; 3],
    /// Dilation along depth, height, width.
    pub dilation: [usize; 3],
    /// Fused activation.
    pub act: Activation,
}

/// Parameters of depthwise 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DepthwiseConv2D {
    /// Padding scheme.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Dilation along height, width.
    pub dilation: [usize; 2],
    /// Output channels per input channel (0 in a model means "infer from the filter").
    pub depth_multiplier: usize,
    /// Fused activation.
    pub act: Activation,
}

/// Parameters of a transposed 2-D convolution (TFLite TRANSPOSE_CONV).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransposeConv {
    /// Padding scheme, applied to the output as a convolution would pad its input.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Fused activation.
    pub act: Activation,
}

/// Parameters of TOSA's TRANSPOSE_CONV2D ([`OpKind::TransposeConvPadded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransposeConvPadded {
    /// Stride along height, width (>= 1).
    pub stride: [usize; 2],
    /// `[top, bottom, left, right]` added to (or, negative, cut from) the full output.
    pub out_pad: [i32; 4],
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Conv2D(_) => spec("Conv2D", 2, Some(5), Some(1), One(conv2d)),
        OpKind::Conv3D(_) => spec("Conv3D", 2, Some(5), Some(1), One(conv3d)),
        OpKind::DepthwiseConv2D(_) => spec("DepthwiseConv2D", 2, Some(5), Some(1), One(depthwise)),
        OpKind::TransposeConv(_) => spec("TransposeConv", 3, Some(4), Some(1), One(transpose_conv)),
        OpKind::TransposeConvPadded(_) => spec("TransposeConvPadded", 3, Some(5), Some(1), One(transpose_conv_padded)),
        OpKind::Conv3DTranspose(_) => spec("Conv3DTranspose", 3, Some(4), Some(1), One(conv3d_transpose)),
        _ => return None,
    })
}

/// Output size and padding of one spatial dim of a windowed op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Output size.
    pub out: usize,
    /// Cells of padding before the first input cell.
    pub pad_before: usize,
}

/// TFLite's rule for one spatial dim: SAME gives `ceil(in / stride)` outputs with the total padding
/// split so the extra cell goes after; VALID keeps only windows fully inside. `axis` is 0 for
/// height, 1 for width (to pick the explicit padding). `None` when no output cell fits.
pub fn window_output(input: usize, k: usize, stride: usize, dilation: usize, padding: Padding, axis: usize) -> Option<Window> {
    if stride == 0 || dilation == 0 || k == 0 {
        return None;
    }
    let eff = (k - 1) * dilation + 1;
    match padding {
        Padding::Same => {
            let out = input.div_ceil(stride);
            let needed = (out.saturating_sub(1) * stride + eff).saturating_sub(input);
            Some(Window { out, pad_before: needed / 2 })
        }
        Padding::Valid => {
            if input < eff {
                return Some(Window { out: 0, pad_before: 0 });
            }
            Some(Window { out: (input - eff) / stride + 1, pad_before: 0 })
        }
        Padding::Explicit(_) | Padding::Explicit3(_) => {
            let (before, after) = match padding {
                Padding::Explicit(p) => (*p.get(axis * 2)?, *p.get(axis * 2 + 1)?),
                Padding::Explicit3(p) => (*p.get(axis * 2)?, *p.get(axis * 2 + 1)?),
                _ => (0, 0),
            };
            let padded = input + before + after;
            if padded < eff {
                return Some(Window { out: 0, pad_before: before });
            }
            Some(Window { out: (padded - eff) / stride + 1, pad_before: before })
        }
    }
}

/// Output height and width of a 2-D window over NHWC `input`.
pub(super) fn spatial(cx: &Cx, input: &[usize], k: [usize; 2], stride: [usize; 2], dil: [usize; 2], padding: Padding) -> Result<[usize; 2], CompileError> {
    if matches!(padding, Padding::Explicit3(_)) {
        return Err(cx.err("a 2-D window takes SAME, VALID or 4 explicit paddings, not 6"));
    }
    let mut out = [0; 2];
    for a in 0..2 {
        let w = window_output(input[1 + a], k[a], stride[a], dil[a], padding, a).ok_or_else(|| {
            cx.err(format!("window {k:?} with stride {stride:?} and dilation {dil:?} is invalid (zero)"))
        })?;
        out[a] = w.out;
    }
    Ok(out)
}

fn conv2d(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Conv2D(p) = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    let w = cx.expect_rank(FILTER, 4)?;
    // x[3] == 0 would make zero groups: a filter needs at least one input channel to read.
    if w[3] == 0 || x[3] == 0 || x[3] % w[3] != 0 {
        return Err(cx.input_err(
            FILTER,
            format!("filter {} has {} input channels, which must divide the input's {} channels", fmt_dims(w), w[3], x[3]),
        ));
    }
    let groups = x[3] / w[3];
    if w[0] % groups != 0 {
        return Err(cx.input_err(FILTER, format!("{} output channels are not divisible into {groups} groups", w[0])));
    }
    check_bias(cx, BIAS, w[0])?;
    check_zero_points(cx)?;
    let [oh, ow] = spatial(cx, x, [w[1], w[2]], p.stride, p.dilation, p.padding)?;
    Ok(vec![x[0], oh, ow, w[0]])
}

/// CONV_3D: NDHWC input, `[k_d, k_h, k_w, in_c, out_c]` filter whose `in_c` is the input's.
fn conv3d(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Conv3D(p) = &cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 5)?;
    let w = cx.expect_rank(FILTER, 5)?;
    if w[3] != x[4] || w[3] == 0 {
        return Err(cx.input_err(FILTER, format!("filter {} must have the input's {} channels as its 4th dim", fmt_dims(w), x[4])));
    }
    if matches!(p.padding, Padding::Explicit(_)) {
        return Err(cx.err("CONV_3D takes SAME, VALID or 6 explicit paddings, not 4"));
    }
    check_bias(cx, BIAS, w[4])?;
    check_zero_points(cx)?;
    let mut out = vec![x[0], 0, 0, 0, w[4]];
    for a in 0..3 {
        out[1 + a] = window_3d(cx, w, p, x[1 + a], a)?;
    }
    Ok(out)
}

/// Output size of spatial dim `a` of a 3-D window over `size` cells.
fn window_3d(cx: &Cx, w: &[usize], p: &Conv3D, size: usize, a: usize) -> Result<usize, CompileError> {
    window_output(size, w[a], p.stride[a], p.dilation[a], p.padding, a)
        .map(|win| win.out)
        .ok_or_else(|| cx.err(format!("window {:?} with stride {:?} and dilation {:?} is invalid (zero)", &w[..3], p.stride, p.dilation)))
}

/// CONV_3D_TRANSPOSE: the output shape is input 0's values (`[n, d, h, w, out_c]`); filter
/// `[k_d, k_h, k_w, out_c, in_c]`; NDHWC input with `in_c` channels; bias per output channel.
fn conv3d_transpose(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Conv3DTranspose(p) = &cx.op.kind else { return Err(cx.unlisted()) };
    use transpose::{BIAS, FILTER, INPUT, OUTPUT_SHAPE};
    cx.expect_dtype(OUTPUT_SHAPE, &[DType::I32, DType::I64])?;
    let shape = cx.const_ints(OUTPUT_SHAPE)?;
    let w = cx.expect_rank(FILTER, 5)?;
    let x = cx.expect_rank(INPUT, 5)?;
    let out = dims_of(cx, &shape, 5)?;
    if out[0] != x[0] || out[4] != w[3] || w[4] != x[4] {
        return Err(cx.input_err(
            FILTER,
            format!("filter {} must be [k_d, k_h, k_w, {}, {}] for input {} and output shape {shape:?}", fmt_dims(w), out[4], x[4], fmt_dims(x)),
        ));
    }
    if matches!(p.padding, Padding::Explicit(_) | Padding::Explicit3(_)) {
        return Err(cx.err("CONV_3D_TRANSPOSE takes SAME or VALID padding"));
    }
    check_bias(cx, BIAS, w[3])?;
    for a in 0..3 {
        window_3d(cx, w, p, out[1 + a], a)?;
    }
    Ok(out)
}

fn depthwise(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::DepthwiseConv2D(p) = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    let w = cx.expect_rank(FILTER, 4)?;
    if w[0] != 1 {
        return Err(cx.input_err(FILTER, format!("filter {} must have 1 as its first dim", fmt_dims(w))));
    }
    let in_c = x[3];
    if in_c == 0 || w[3] % in_c != 0 {
        return Err(cx.input_err(FILTER, format!("filter {} channels must be a multiple of the input's {in_c}", fmt_dims(w))));
    }
    let multiplier = w[3] / in_c;
    if p.depth_multiplier != 0 && p.depth_multiplier != multiplier {
        // TFLite ignores a depth_multiplier that disagrees with the filter (and newer converters
        // write 0); the filter is the truth.
        log::debug!("op {}: depth_multiplier {} ignored, filter says {}", cx.id, p.depth_multiplier, multiplier);
    }
    check_bias(cx, BIAS, w[3])?;
    check_zero_points(cx)?;
    let [oh, ow] = spatial(cx, x, [w[1], w[2]], p.stride, p.dilation, p.padding)?;
    Ok(vec![x[0], oh, ow, w[3]])
}

/// TRANSPOSE_CONV: the output shape is input 0's values; the filter is `[out_c, kh, kw, in_c]`.
fn transpose_conv(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::TransposeConv(p) = cx.op.kind else { return Err(cx.unlisted()) };
    use transpose::{BIAS, FILTER, INPUT, OUTPUT_SHAPE};
    cx.expect_dtype(OUTPUT_SHAPE, &[DType::I32, DType::I64])?;
    let shape = cx.const_ints(OUTPUT_SHAPE)?;
    let w = cx.expect_rank(FILTER, 4)?;
    let x = cx.expect_rank(INPUT, 4)?;
    let out = dims_of(cx, &shape, 4)?;
    if out[0] != x[0] || out[3] != w[0] {
        return Err(cx.input_err(
            OUTPUT_SHAPE,
            format!("output shape {shape:?} must have the input's batch {} and the filter's {} channels", x[0], w[0]),
        ));
    }
    if w[3] != x[3] {
        return Err(cx.input_err(FILTER, format!("filter {} must have the input's {} channels last", fmt_dims(w), x[3])));
    }
    check_bias(cx, BIAS, w[0])?;
    for a in 0..2 {
        // Padding is that of a convolution from the output back to the input; TFLite does not
        // require the sizes to round-trip, so only the window itself is checked.
        window_output(out[1 + a], w[1 + a], p.stride[a], 1, p.padding, a)
            .ok_or_else(|| cx.err(format!("window {:?} with stride {:?} is invalid (zero)", &w[1..3], p.stride)))?;
    }
    Ok(out)
}

/// TOSA TRANSPOSE_CONV2D: NHWC input, OHWI filter, bias of one or OC elements; output
/// `OH = (IH - 1) * stride_y + out_pad_top + out_pad_bottom + KH` (width likewise). Float32
/// throughout, or the plain-integer form (zero points as inputs 3 and 4, as for Conv2D).
fn transpose_conv_padded(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::TransposeConvPadded(p) = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    let w = cx.expect_rank(FILTER, 4)?;
    if w[3] != x[3] {
        return Err(cx.input_err(FILTER, format!("filter {} must have the input's {} channels last", fmt_dims(w), x[3])));
    }
    if p.stride.contains(&0) {
        return Err(cx.err("strides must be at least 1"));
    }
    if cx.op.input(INPUT_ZP).is_some() || cx.op.input(FILTER_ZP).is_some() {
        check_zero_points(cx)?;
    } else {
        for i in [INPUT, FILTER] {
            cx.expect_dtype(i, &[DType::F32])?;
        }
        cx.expect_out_dtype(0, DType::F32)?;
    }
    check_bias(cx, BIAS, w[0])?;
    let mut out = vec![x[0], 0, 0, w[0]];
    for a in 0..2 {
        let size = (x[1 + a] as i64 - 1) * p.stride[a] as i64 + i64::from(p.out_pad[2 * a]) + i64::from(p.out_pad[2 * a + 1]) + w[1 + a] as i64;
        if x[1 + a] == 0 || size < 1 || p.out_pad[2 * a] <= -(w[1 + a] as i32) || p.out_pad[2 * a + 1] <= -(w[1 + a] as i32) {
            return Err(cx.err(format!("out_pad {:?} with input {} and filter {} gives no output", p.out_pad, fmt_dims(x), fmt_dims(w))));
        }
        out[1 + a] = size as usize;
    }
    Ok(out)
}

/// The output shape of a transposed convolution from the values of its shape input: `rank`
/// dims, each >= 0.
fn dims_of(cx: &Cx, shape: &[i64], rank: usize) -> Result<Vec<usize>, CompileError> {
    if shape.len() != rank || shape.iter().any(|&d| d < 0) {
        return Err(cx.input_err(transpose::OUTPUT_SHAPE, format!("output shape {shape:?} must hold {rank} dims >= 0")));
    }
    Ok(shape.iter().map(|&d| d as usize).collect())
}

/// Checks that the optional bias in input `slot` has one element per output channel.
/// The plain-integer form (TOSA; inputs 3 and 4 present): an int8 or int16 image and an int8
/// filter without quantization parameters, one-element constant zero points of their types, a
/// bias and an output holding the exact sums `Σ (x - x_zp)(w - w_zp) + bias` (padding
/// contributes nothing): int32 for int8 images, int64 (TOSA's int48) for int16 ones.
fn check_zero_points(cx: &Cx) -> Result<(), CompileError> {
    let (a, b) = (cx.op.input(INPUT_ZP), cx.op.input(FILTER_ZP));
    if a.is_none() && b.is_none() {
        return Ok(());
    }
    if a.is_none() || b.is_none() {
        return Err(cx.err("the plain-integer form needs both zero points (inputs 3 and 4)"));
    }
    let t = cx.expect_dtype(INPUT, &[DType::I8, DType::I16])?;
    cx.expect_dtype(FILTER, &[DType::I8])?;
    // int16 images sum into 48 bits, held in int64.
    let acc = if t == DType::I8 { DType::I32 } else { DType::I64 };
    cx.expect_out_dtype(0, acc)?;
    for (slot, zt) in [(INPUT_ZP, t), (FILTER_ZP, DType::I8)] {
        cx.expect_dtype(slot, &[zt])?;
        let (_, bytes) = cx.value_bytes(slot)?;
        if bytes.len() != zt.size() {
            return Err(cx.input_err(slot, format!("a zero point is one {zt} element")));
        }
    }
    if cx.op.input(BIAS).is_some() {
        cx.expect_dtype(BIAS, &[acc])?;
    }
    Ok(())
}

fn check_bias(cx: &Cx, slot: usize, channels: usize) -> Result<(), CompileError> {
    if let Some(b) = cx.opt_input(slot)? {
        let n: usize = b.iter().product();
        if n != channels {
            return Err(cx.input_err(slot, format!("bias {} must have {channels} elements, one per output channel", fmt_dims(b))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_and_valid_follow_tflite() {
        // 224 input, 3x3, stride 2, SAME: 112 outputs, total pad 1 -> 0 before.
        assert_eq!(window_output(224, 3, 2, 1, Padding::Same, 0), Some(Window { out: 112, pad_before: 0 }));
        assert_eq!(window_output(16, 3, 1, 1, Padding::Same, 0), Some(Window { out: 16, pad_before: 1 }));
        assert_eq!(window_output(17, 3, 2, 1, Padding::Valid, 0), Some(Window { out: 8, pad_before: 0 }));
        // dilation 2, 3x3 -> effective 5
        assert_eq!(window_output(20, 3, 1, 2, Padding::Same, 0), Some(Window { out: 20, pad_before: 2 }));
        assert_eq!(window_output(2, 3, 1, 1, Padding::Valid, 0), Some(Window { out: 0, pad_before: 0 }));
        assert_eq!(window_output(5, 3, 0, 1, Padding::Valid, 0), None);
    }
}
