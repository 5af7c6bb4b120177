//! Convolutions: CONV_2D (1x1 stride 1 as a matmul, the rest direct) and DEPTHWISE_CONV_2D.

use nnrt_core::infer::window_output;
use nnrt_core::{OpKind, OperandId, Padding};

use super::cx::{act_code, no_kernel, numel, words, Cx, R};
use super::matmul::matmul;
use super::{Lowered, Registry};

/// The family's ops.
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Conv2D"], conv);
    r.ops(&["DepthwiseConv2D"], depthwise);
}

/// Operands and dims of a conv-like op, and its padding before (top, left).
struct Windowed {
    x: OperandId,
    w: OperandId,
    o: OperandId,
    xd: Vec<usize>,
    wd: Vec<usize>,
    od: Vec<usize>,
    pad: [usize; 2],
}

/// Input, filter and output of a windowed op (conv, depthwise) checked to be 4-D float32, with
/// the padding before each spatial dim.
fn windowed(cx: &Cx, what: &str, stride: [usize; 2], dilation: [usize; 2], padding: Padding) -> R<Windowed> {
    let (x, w, o) = cx.f32_pair(["the input", "the filter"])?;
    let (xd, wd, od) = (cx.dims(x).to_vec(), cx.dims(w).to_vec(), cx.dims(o).to_vec());
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
        return Err(format!("{what} tensors must be 4-D"));
    }
    let wh = window_output(xd[1], wd[1], stride[0], dilation[0], padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], wd[2], stride[1], dilation[1], padding, 1).ok_or("invalid window")?;
    Ok(Windowed { x, w, o, xd, wd, od, pad: [wh.pad_before, ww.pad_before] })
}

fn conv(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let OpKind::Conv2D(p) = kind else { return no_kernel(kind) };
    let Windowed { x, w, o, xd, wd, od, pad } = windowed(cx, "convolution", p.stride, p.dilation, p.padding)?;
    if xd[3] != wd[3] {
        return Err(format!("grouped convolution ({} input channels, filter depth {}) has no gpu kernel", xd[3], wd[3]));
    }
    let act = act_code(p.act)?;
    let (bias, xb, ob) = (cx.bias(2, wd[0])?, cx.buf(x)?, cx.buf(o)?);
    let pointwise = wd[1] == 1 && wd[2] == 1 && p.stride == [1, 1] && pad == [0, 0] && od[1] == xd[1] && od[2] == xd[2];
    if pointwise {
        // 1x1: the input is an [N*H*W, Cin] matrix, the OHWI filter a [Cout, Cin] one.
        let (m, n, k) = (xd[0] * xd[1] * xd[2], wd[0], xd[3]);
        let (wb, shader) = cx.weights(w, "matmul", "matmul_f16")?;
        let d = matmul(cx, shader, xb, wb, bias, ob, m, n, k, [1, 1], [0, 0, k, 1], [0, 0, 1, k], act)?;
        return Ok(Lowered::Dispatches(vec![d]));
    }
    let threads = od[0] * od[1] * od[2] * od[3].div_ceil(4);
    let params = words(&[threads, xd[0], xd[1], xd[2], xd[3], od[1], od[2], od[3], wd[1], wd[2], p.stride[0], p.stride[1], p.dilation[0], p.dilation[1], pad[0], pad[1]])?;
    let groups = cx.grid(threads)?;
    let (wb, shader) = cx.weights(w, "conv", "conv_f16")?;
    Ok(Lowered::Dispatches(vec![cx.dispatch(shader, vec![("ACT", act)], params, vec![xb, wb, bias, ob], groups)?]))
}

fn depthwise(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let OpKind::DepthwiseConv2D(p) = kind else { return no_kernel(kind) };
    let Windowed { x, w, o, xd, wd, od, pad } = windowed(cx, "depthwise convolution", p.stride, p.dilation, p.padding)?;
    if xd[3] == 0 || wd[3] % xd[3] != 0 || od[3] != wd[3] {
        return Err(format!("filter depth {} is not a multiple of the {} input channels", wd[3], xd[3]));
    }
    let act = act_code(p.act)?;
    let (bias, xb, ob) = (cx.bias(2, wd[3])?, cx.buf(x)?, cx.buf(o)?);
    let (wb, shader) = cx.weights(w, "depthwise", "depthwise_f16")?;
    let threads = numel(&od);
    let params = words(&[threads, xd[0], xd[1], xd[2], xd[3], od[1], od[2], od[3], wd[1], wd[2], p.stride[0], p.stride[1], p.dilation[0], p.dilation[1], pad[0], pad[1], wd[3] / xd[3]])?;
    let groups = cx.grid(threads)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch(shader, vec![("ACT", act)], params, vec![xb, wb, bias, ob], groups)?]))
}
