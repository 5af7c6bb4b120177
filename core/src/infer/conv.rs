//! Windowed ops: convolution, depthwise convolution, pooling.

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, Conv2D, Conv3D, DType, DepthwiseConv2D, Padding, Pool2D, TransposeConv};

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
        Padding::Explicit(p) => {
            let (before, after) = (p[axis * 2], p[axis * 2 + 1]);
            let padded = input + before + after;
            if padded < eff {
                return Some(Window { out: 0, pad_before: before });
            }
            Some(Window { out: (padded - eff) / stride + 1, pad_before: before })
        }
    }
}

fn spatial(cx: &Cx, input: &[usize], k: [usize; 2], stride: [usize; 2], dil: [usize; 2], padding: Padding) -> Result<[usize; 2], CompileError> {
    let mut out = [0; 2];
    for a in 0..2 {
        let w = window_output(input[1 + a], k[a], stride[a], dil[a], padding, a).ok_or_else(|| {
            cx.err(format!("window {k:?} with stride {stride:?} and dilation {dil:?} is invalid (zero)"))
        })?;
        out[a] = w.out;
    }
    Ok(out)
}

pub(super) fn conv2d(cx: &Cx, p: &Conv2D) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 4)?;
    let w = cx.expect_rank(1, 4)?;
    // x[3] == 0 would make zero groups: a filter needs at least one input channel to read.
    if w[3] == 0 || x[3] == 0 || x[3] % w[3] != 0 {
        return Err(cx.input_err(
            1,
            format!("filter {} has {} input channels, which must divide the input's {} channels", fmt_dims(w), w[3], x[3]),
        ));
    }
    let groups = x[3] / w[3];
    if w[0] % groups != 0 {
        return Err(cx.input_err(1, format!("{} output channels are not divisible into {groups} groups", w[0])));
    }
    check_bias(cx, w[0])?;
    let [oh, ow] = spatial(cx, x, [w[1], w[2]], p.stride, p.dilation, p.padding)?;
    Ok(vec![x[0], oh, ow, w[0]])
}

/// CONV_3D: NDHWC input, `[k_d, k_h, k_w, in_c, out_c]` filter whose `in_c` is the input's.
pub(super) fn conv3d(cx: &Cx, p: &Conv3D) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 5)?;
    let w = cx.expect_rank(1, 5)?;
    if w[3] != x[4] || w[3] == 0 {
        return Err(cx.input_err(1, format!("filter {} must have the input's {} channels as its 4th dim", fmt_dims(w), x[4])));
    }
    if matches!(p.padding, Padding::Explicit(_)) {
        return Err(cx.err("CONV_3D takes SAME or VALID padding"));
    }
    check_bias(cx, w[4])?;
    let mut out = vec![x[0], 0, 0, 0, w[4]];
    for a in 0..3 {
        out[1 + a] = window_output(x[1 + a], w[a], p.stride[a], p.dilation[a], p.padding, 0)
            .ok_or_else(|| cx.err(format!("window {:?} with stride {:?} and dilation {:?} is invalid (zero)", &w[..3], p.stride, p.dilation)))?
            .out;
    }
    Ok(out)
}

/// CONV_3D_TRANSPOSE: the output shape is input 0's values (`[n, d, h, w, out_c]`); filter
/// `[k_d, k_h, k_w, out_c, in_c]`; NDHWC input with `in_c` channels; bias per output channel.
pub(super) fn conv3d_transpose(cx: &Cx, p: &Conv3D) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::I32, DType::I64])?;
    let shape = cx.const_ints(0)?;
    let w = cx.expect_rank(1, 5)?;
    let x = cx.expect_rank(2, 5)?;
    if shape.len() != 5 || shape.iter().any(|&d| d < 0) {
        return Err(cx.input_err(0, format!("output shape {shape:?} must hold 5 dims >= 0")));
    }
    let out: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    if out[0] != x[0] || out[4] != w[3] || w[4] != x[4] {
        return Err(cx.input_err(
            1,
            format!("filter {} must be [k_d, k_h, k_w, {}, {}] for input {} and output shape {shape:?}", fmt_dims(w), out[4], x[4], fmt_dims(x)),
        ));
    }
    if matches!(p.padding, Padding::Explicit(_)) {
        return Err(cx.err("CONV_3D_TRANSPOSE takes SAME or VALID padding"));
    }
    if let Some(b) = cx.opt_input(3)? {
        if b.iter().product::<usize>() != w[3] {
            return Err(cx.input_err(3, format!("bias {} must have {} elements, one per output channel", fmt_dims(b), w[3])));
        }
    }
    for a in 0..3 {
        window_output(out[1 + a], w[a], p.stride[a], p.dilation[a], p.padding, 0)
            .ok_or_else(|| cx.err(format!("window {:?} with stride {:?} and dilation {:?} is invalid (zero)", &w[..3], p.stride, p.dilation)))?;
    }
    Ok(out)
}

pub(super) fn depthwise(cx: &Cx, p: &DepthwiseConv2D) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 4)?;
    let w = cx.expect_rank(1, 4)?;
    if w[0] != 1 {
        return Err(cx.input_err(1, format!("filter {} must have 1 as its first dim", fmt_dims(w))));
    }
    let in_c = x[3];
    if in_c == 0 || w[3] % in_c != 0 {
        return Err(cx.input_err(1, format!("filter {} channels must be a multiple of the input's {in_c}", fmt_dims(w))));
    }
    let multiplier = w[3] / in_c;
    if p.depth_multiplier != 0 && p.depth_multiplier != multiplier {
        // TFLite ignores a depth_multiplier that disagrees with the filter (and newer converters
        // write 0); the filter is the truth.
        log::debug!("op {}: depth_multiplier {} ignored, filter says {}", cx.id, p.depth_multiplier, multiplier);
    }
    check_bias(cx, w[3])?;
    let [oh, ow] = spatial(cx, x, [w[1], w[2]], p.stride, p.dilation, p.padding)?;
    Ok(vec![x[0], oh, ow, w[3]])
}

pub(super) fn pool(cx: &Cx, p: &Pool2D) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 4)?;
    let [oh, ow] = spatial(cx, x, p.filter, p.stride, [1, 1], p.padding)?;
    Ok(vec![x[0], oh, ow, x[3]])
}

/// TRANSPOSE_CONV: the output shape is input 0's values; the filter is `[out_c, kh, kw, in_c]`.
pub(super) fn transpose_conv(cx: &Cx, p: &TransposeConv) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::I32, DType::I64])?;
    let shape = cx.const_ints(0)?;
    let w = cx.expect_rank(1, 4)?;
    let x = cx.expect_rank(2, 4)?;
    if shape.len() != 4 || shape.iter().any(|&d| d < 0) {
        return Err(cx.input_err(0, format!("output shape {shape:?} must hold 4 dims >= 0")));
    }
    let out: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    if out[0] != x[0] || out[3] != w[0] {
        return Err(cx.input_err(0, format!("output shape {shape:?} must have the input's batch {} and the filter's {} channels", x[0], w[0])));
    }
    if w[3] != x[3] {
        return Err(cx.input_err(1, format!("filter {} must have the input's {} channels last", fmt_dims(w), x[3])));
    }
    if let Some(b) = cx.opt_input(3)? {
        if b.iter().product::<usize>() != w[0] {
            return Err(cx.input_err(3, format!("bias {} must have {} elements, one per output channel", fmt_dims(b), w[0])));
        }
    }
    for a in 0..2 {
        // Padding is that of a convolution from the output back to the input; TFLite does not
        // require the sizes to round-trip, so only the window itself is checked.
        window_output(out[1 + a], w[1 + a], p.stride[a], 1, p.padding, a)
            .ok_or_else(|| cx.err(format!("window {:?} with stride {:?} is invalid (zero)", &w[1..3], p.stride)))?;
    }
    Ok(out)
}

/// RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR: NHWC input, constant `[new_h, new_w]`.
pub(super) fn resize(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 4)?;
    if let crate::OpKind::Resize(r) = &cx.op.kind {
        if r.align_corners && r.half_pixel_centers {
            return Err(cx.err("align_corners and half_pixel_centers cannot both be set"));
        }
    }
    cx.expect_dtype(1, &[DType::I32])?;
    let size = cx.const_ints(1)?;
    if size.len() != 2 || size.iter().any(|&v| v <= 0) {
        return Err(cx.input_err(1, format!("size {size:?} must be two positive values [height, width]")));
    }
    Ok(vec![x[0], size[0] as usize, size[1] as usize, x[3]])
}

pub(super) fn space_to_depth(cx: &Cx, b: usize) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 4)?;
    if b == 0 || x[1] % b != 0 || x[2] % b != 0 {
        return Err(cx.input_err(0, format!("height and width of {} must be multiples of block_size {b}", fmt_dims(x))));
    }
    Ok(vec![x[0], x[1] / b, x[2] / b, x[3] * b * b])
}

pub(super) fn depth_to_space(cx: &Cx, b: usize) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 4)?;
    if b == 0 || x[3] % (b * b) != 0 {
        return Err(cx.input_err(0, format!("channels of {} must be a multiple of block_size² = {}", fmt_dims(x), b * b)));
    }
    Ok(vec![x[0], x[1] * b, x[2] * b, x[3] / (b * b)])
}

/// Block shape (input 1) and `[m, 2]` crops or paddings (input 2) of the *_ND ops.
fn blocks(cx: &Cx, what: &str) -> Result<(Vec<usize>, Vec<[usize; 2]>), CompileError> {
    let x = cx.input(0)?;
    let block = cx.const_ints(1)?;
    let m = block.len();
    if m == 0 || x.len() < m + 1 || block.iter().any(|&b| b < 1) {
        return Err(cx.input_err(1, format!("block shape {block:?} must be >= 1 for each of up to {} spatial dims of {}", x.len().saturating_sub(1), fmt_dims(x))));
    }
    let pads = cx.const_ints(2)?;
    if cx.input(2)? != [m, 2] || pads.iter().any(|&v| v < 0) {
        return Err(cx.input_err(2, format!("{what} {pads:?} must be [{m}, 2] values >= 0")));
    }
    let pads = pads.chunks_exact(2).map(|c| [c[0] as usize, c[1] as usize]).collect();
    Ok((block.iter().map(|&b| b as usize).collect(), pads))
}

pub(super) fn batch_to_space(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let (block, crops) = blocks(cx, "crops")?;
    let prod: usize = block.iter().product();
    if x[0] % prod != 0 {
        return Err(cx.input_err(0, format!("batch {} is not a multiple of the block product {prod}", x[0])));
    }
    let mut out = x.to_vec();
    out[0] = x[0] / prod;
    for (i, (&b, c)) in block.iter().zip(&crops).enumerate() {
        let full = x[1 + i] * b;
        if c[0] + c[1] > full {
            return Err(cx.input_err(2, format!("crops {c:?} exceed dim {} of size {full}", 1 + i)));
        }
        out[1 + i] = full - c[0] - c[1];
    }
    Ok(out)
}

pub(super) fn space_to_batch(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let (block, pads) = blocks(cx, "paddings")?;
    let mut out = x.to_vec();
    out[0] = x[0] * block.iter().product::<usize>();
    for (i, (&b, p)) in block.iter().zip(&pads).enumerate() {
        let padded = x[1 + i] + p[0] + p[1];
        if padded % b != 0 {
            return Err(cx.input_err(2, format!("padded dim {} ({padded}) is not a multiple of block {b}", 1 + i)));
        }
        out[1 + i] = padded / b;
    }
    Ok(out)
}

fn check_bias(cx: &Cx, channels: usize) -> Result<(), CompileError> {
    if let Some(b) = cx.opt_input(2)? {
        let n: usize = b.iter().product();
        if n != channels {
            return Err(cx.input_err(2, format!("bias {} must have {channels} elements, one per output channel", fmt_dims(b))));
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
