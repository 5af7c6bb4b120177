//! Windowed ops: convolution, depthwise convolution, pooling.

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, Conv2D, DepthwiseConv2D, Padding, Pool2D};

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
    if w[3] == 0 || x[3] % w[3] != 0 {
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
