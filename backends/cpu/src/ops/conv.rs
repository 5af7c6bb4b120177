//! Conv2D, DepthwiseConv2D and FullyConnected: weights packed at compile, bias and clamp fused.

use nnrt_core::infer::window_output;
use nnrt_core::{cast, cast_mut, CompileCtx, OpId, OpKind};

use super::{all_f32, built, check_act, const_f32, fused, source, tanh_in_place};
use crate::backend::Built;
use crate::kernels::conv::{Conv2d, ConvGeom};
use crate::kernels::conv3d::{Conv3d, Conv3dGeom};
use crate::kernels::depthwise::{depthwise_conv2d, DepthwiseGeom};
use crate::kernels::expand_dw::{DepthwiseProject, ExpandDepthwise};
use crate::kernels::gemm::{gemm, PackedB};
use crate::kernels::Act;

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    all_f32(ctx, id)?;
    let op = ctx.graph.op(id);
    let act = match &op.kind {
        OpKind::Conv2D(p) => p.act,
        OpKind::Conv3D(p) => p.act,
        OpKind::DepthwiseConv2D(p) => p.act,
        OpKind::FullyConnected(p) => p.act,
        _ => unreachable!("dispatched by kind"),
    };
    check_act(act)?;
    if let Some(w) = op.input(1) {
        if !ctx.graph.operand(w).is_const() && !matches!(op.kind, OpKind::FullyConnected(_)) {
            return Err("the filter must be a constant tensor (weights are packed at prepare)".into());
        }
    }
    Ok(())
}


/// The geometry of the 3-D convolution from NDHWC `big` to NDHWC `small` with filter dims `wd`
/// (their first three are the window): a CONV_3D's (input, output), or a CONV_3D_TRANSPOSE's
/// (output, input), whose padding is that of the convolution back onto its input.
pub(super) fn conv3d_geom(big: &[usize], wd: &[usize], small: &[usize], p: &nnrt_core::Conv3D) -> Result<Conv3dGeom, String> {
    let mut pad = [0; 3];
    for (a, pad) in pad.iter_mut().enumerate() {
        *pad = window_output(big[1 + a], wd[a], p.stride[a], p.dilation[a], p.padding, 0).ok_or("invalid window")?.pad_before;
    }
    Ok(Conv3dGeom {
        batch: big[0],
        input: [big[1], big[2], big[3]],
        in_c: big[4],
        output: [small[1], small[2], small[3]],
        out_c: small[4],
        k: [wd[0], wd[1], wd[2]],
        stride: p.stride,
        dilation: p.dilation,
        pad,
    })
}

/// The kernel geometry of a CONV_2D from its input, filter (OHWI) and output dims: TFLite's
/// padding rule, groups from the channel ratio. Shared by the float, quantized and hybrid kernels.
pub(super) fn conv_geom(xd: &[usize], wd: &[usize], od: &[usize], p: &nnrt_core::Conv2D) -> Result<ConvGeom, String> {
    let wh = window_output(xd[1], wd[1], p.stride[0], p.dilation[0], p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], wd[2], p.stride[1], p.dilation[1], p.padding, 1).ok_or("invalid window")?;
    Ok(ConvGeom {
        batch: xd[0],
        in_h: xd[1],
        in_w: xd[2],
        in_c: xd[3],
        out_h: od[1],
        out_w: od[2],
        out_c: od[3],
        k_h: wd[1],
        k_w: wd[2],
        stride_h: p.stride[0],
        stride_w: p.stride[1],
        dil_h: p.dilation[0],
        dil_w: p.dilation[1],
        pad_top: wh.pad_before,
        pad_left: ww.pad_before,
        groups: xd[3] / wd[3].max(1),
    })
}

/// The kernel geometry of a DEPTHWISE_CONV_2D (filter [1, H, W, C*multiplier]).
pub(super) fn depthwise_geom(xd: &[usize], wd: &[usize], od: &[usize], p: &nnrt_core::DepthwiseConv2D) -> Result<DepthwiseGeom, String> {
    let wh = window_output(xd[1], wd[1], p.stride[0], p.dilation[0], p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], wd[2], p.stride[1], p.dilation[1], p.padding, 1).ok_or("invalid window")?;
    Ok(DepthwiseGeom {
        batch: xd[0],
        in_h: xd[1],
        in_w: xd[2],
        in_c: xd[3],
        multiplier: wd[3] / xd[3].max(1),
        out_h: od[1],
        out_w: od[2],
        k_h: wd[1],
        k_w: wd[2],
        stride_h: p.stride[0],
        stride_w: p.stride[1],
        dil_h: p.dilation[0],
        dil_w: p.dilation[1],
        pad_top: wh.pad_before,
        pad_left: ww.pad_before,
    })
}

/// An optional bias input: `Some(None)` when absent, `Some(Some(values))` when a float32
/// constant, `None` when it is anything else.
fn const_bias(ctx: &CompileCtx, b: Option<nnrt_core::OperandId>) -> Option<Option<Vec<f32>>> {
    match b {
        Some(b) => const_f32(ctx, b).map(Some),
        None => Some(None),
    }
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let w = op.input(1).ok_or("input 1 (weights) is absent")?;
    let bias = const_bias(ctx, op.input(2)).ok_or("the bias must be a float32 constant")?;
    let xd = ctx.dims(x).to_vec();
    let wd = ctx.dims(w).to_vec();
    let od = ctx.dims(op.outputs[0]).to_vec();
    match &op.kind {
        OpKind::Conv2D(p) => {
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            let geom = conv_geom(&xd, &wd, &od, p)?;
            let (act, tanh) = fused(p.act);
            let mut conv = Conv2d::new(geom, &filter, bias.as_deref(), act);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let out = cast_mut::<f32>(outs[0].bytes)?;
                conv.run(cast::<f32>(ins[0].bytes)?, out);
                if tanh {
                    tanh_in_place(out);
                }
                Ok(())
            }))
        }
        OpKind::Conv3D(p) => {
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            if xd.len() != 5 || wd.len() != 5 || od.len() != 5 {
                return Err(format!("CONV_3D takes 5-D tensors: input {xd:?}, filter {wd:?}, output {od:?}"));
            }
            let geom = conv3d_geom(&xd, &wd, &od, p)?;
            if filter.len() != wd.iter().product::<usize>() || wd[3] != xd[4] || wd[4] != od[4] || bias.as_ref().is_some_and(|b| b.len() != od[4]) {
                return Err(format!("filter {wd:?} or bias does not fit input {xd:?} and output {od:?}"));
            }
            let (act, tanh) = fused(p.act);
            let conv = Conv3d::new(geom, &filter, bias.as_deref(), act);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let out = cast_mut::<f32>(outs[0].bytes)?;
                conv.run(cast::<f32>(ins[0].bytes)?, out);
                if tanh {
                    tanh_in_place(out);
                }
                Ok(())
            }))
        }
        OpKind::DepthwiseConv2D(p) => {
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            let geom = depthwise_geom(&xd, &wd, &od, p)?;
            let (act, tanh) = fused(p.act);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let out = cast_mut::<f32>(outs[0].bytes)?;
                depthwise_conv2d(&geom, cast::<f32>(ins[0].bytes)?, &filter, bias.as_deref(), act, out);
                if tanh {
                    tanh_in_place(out);
                }
                Ok(())
            }))
        }
        OpKind::FullyConnected(p) => {
            let (n, k) = (wd[0], wd[1]);
            let (act, tanh) = fused(p.act);
            match const_f32(ctx, w) {
                Some(weights) => {
                    let packed = PackedB::pack(n, k, &weights);
                    Ok(built(vec![source(ctx, x)], move |ins, outs| {
                        let a = cast::<f32>(ins[0].bytes)?;
                        let out = cast_mut::<f32>(outs[0].bytes)?;
                        let m = a.len() / k.max(1);
                        gemm(m, a, k, &packed, bias.as_deref(), act, out, n);
                        if tanh {
                            tanh_in_place(out);
                        }
                        Ok(())
                    }))
                }
                None => {
                    // Weights computed at run time: pack them on every run.
                    Ok(built(vec![source(ctx, x), source(ctx, w)], move |ins, outs| {
                        let a = cast::<f32>(ins[0].bytes)?;
                        let packed = PackedB::pack(n, k, cast::<f32>(ins[1].bytes)?);
                        let out = cast_mut::<f32>(outs[0].bytes)?;
                        let m = a.len() / k.max(1);
                        gemm(m, a, k, &packed, bias.as_deref(), act, out, n);
                        if tanh {
                            tanh_in_place(out);
                        }
                        Ok(())
                    }))
                }
            }
        }
        _ => Err("not a convolution".into()),
    }
}

/// Expanded tensors smaller than this per thread stay in the cores' L2 between the two ops:
/// fusing gains nothing there. (MobileNetV2: the 4.8 MB tensor at 112×112 gains at 1 and 2
/// threads; the 1.8 MB ones at 56×56 gain 2–5 % of the pair at 1 thread, nothing at 2.)
const FUSE_MIN_BYTES: usize = 1 << 20;
/// Smallest depthwise output a depthwise + projection step is used for.
const PROJECT_MIN_BYTES: usize = 1 << 20;
/// Least ratio of the depthwise output's bytes to the projection weights' for that step.
const PROJECT_MIN_RATIO: usize = 16;

/// What a fused step needs from its first op: a float CONV_2D (one group, no tanh) with one
/// output that `next` alone reads, once, and that is not a graph output.
struct Producer {
    /// The convolution's input and output operands.
    input: nnrt_core::OperandId,
    output: nnrt_core::OperandId,
    geom: ConvGeom,
    act: Act,
    /// OHWI weights and the bias.
    weights: Vec<f32>,
    bias: Option<Vec<f32>>,
}

/// Whether `next` is the only op that reads `t`, once, and `t` is neither a graph output nor a
/// variable: a fused step may then skip writing it.
fn read_once_by(ctx: &CompileCtx, t: nnrt_core::OperandId, next: OpId) -> bool {
    let g = ctx.graph;
    let reads = g.ops.iter().flat_map(|o| o.inputs.iter().flatten()).filter(|&&i| i == t).count();
    let next_reads = g.op(next).inputs.iter().flatten().filter(|&&i| i == t).count();
    reads == 1 && next_reads == 1 && !g.outputs.contains(&t) && !g.operand(t).is_variable
}

fn producer(ctx: &CompileCtx, conv: OpId, next: OpId) -> Option<Producer> {
    let c = ctx.graph.op(conv);
    let OpKind::Conv2D(p) = &c.kind else { return None };
    all_f32(ctx, conv).ok()?;
    all_f32(ctx, next).ok()?;
    let (input, output, w) = (c.input(0)?, *c.outputs.first()?, c.input(1)?);
    if c.outputs.len() != 1 || !read_once_by(ctx, output, next) {
        return None;
    }
    let (xd, wd, od) = (ctx.dims(input), ctx.dims(w), ctx.dims(output));
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
        return None;
    }
    let geom = conv_geom(xd, wd, od, p).ok()?;
    let (act, tanh) = fused(p.act);
    if geom.groups != 1 || tanh || geom.k_h == 0 || geom.k_w == 0 {
        return None;
    }
    let weights = const_f32(ctx, w)?;
    let bias = const_bias(ctx, c.input(2))?;
    if weights.len() < geom.filter_len() || bias.as_ref().is_some_and(|b| b.len() < geom.out_c) {
        return None;
    }
    Some(Producer { input, output, geom, act, weights, bias })
}

impl Producer {
    /// A 1×1, stride-1 convolution over the whole input: its input is the GEMM's `A` as is.
    fn is_1x1(&self) -> bool {
        let g = &self.geom;
        g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 && g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w
    }
}

/// The cheap part of [`build_expand_depthwise`]'s test (no weights copied): `conv` a CONV_2D
/// whose output only `dw`, a DEPTHWISE_CONV_2D, reads, and that output large enough.
pub(crate) fn expand_depthwise_applies(ctx: &CompileCtx, conv: OpId, dw: OpId) -> bool {
    let (c, d) = (ctx.graph.op(conv), ctx.graph.op(dw));
    if !matches!(c.kind, OpKind::Conv2D(_)) || !matches!(d.kind, OpKind::DepthwiseConv2D(_)) || c.outputs.len() != 1 {
        return false;
    }
    let out = c.outputs[0];
    d.input(0) == Some(out) && read_once_by(ctx, out, dw) && ctx.dims(out).iter().product::<usize>() * 4 >= FUSE_MIN_BYTES * ctx.threads.max(1)
}

/// The fused step for op `conv` followed by op `dw` ([`ExpandDepthwise`]), when `conv` is a
/// 1×1 stride-1 [`producer`] of `dw`, a DEPTHWISE_CONV_2D with multiplier 1 (no tanh), and the
/// expanded tensor is large. `None` when they are not. The step reads the block's input at the
/// depthwise op's turn and never materializes the expanded tensor: the backend tells the memory
/// planner both (`Executable::plan_hints`).
pub(crate) fn build_expand_depthwise(ctx: &CompileCtx, conv: OpId, dw: OpId) -> Option<Built> {
    if !expand_depthwise_applies(ctx, conv, dw) {
        return None;
    }
    let d = ctx.graph.op(dw);
    let OpKind::DepthwiseConv2D(p2) = &d.kind else { return None };
    let pr = producer(ctx, conv, dw).filter(Producer::is_1x1)?;
    let out_t = *d.outputs.first()?;
    let md = ctx.dims(pr.output);
    let (w2d, od) = (ctx.dims(d.input(1)?), ctx.dims(out_t));
    if d.input(0)? != pr.output || d.outputs.len() != 1 || w2d.len() != 4 || od.len() != 4 {
        return None;
    }
    let dg = depthwise_geom(md, w2d, od, p2).ok()?;
    let (act2, tanh2) = fused(p2.act);
    if dg.multiplier != 1 || tanh2 || dg.batch != pr.geom.batch {
        return None;
    }
    let w2 = const_f32(ctx, d.input(1)?)?;
    let b2 = const_bias(ctx, d.input(2))?;
    let fusedk = ExpandDepthwise::new(pr.geom.in_c, &pr.weights, pr.bias.as_deref(), pr.act, dg, &w2, b2.as_deref(), act2);
    Some(built(vec![source(ctx, pr.input)], move |ins, outs| {
        fusedk.run(cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}

/// The fused step for op `dw` followed by op `conv` ([`DepthwiseProject`]): `dw` a float
/// DEPTHWISE_CONV_2D with multiplier 1 (no tanh) whose output only `conv` reads, `conv` a 1×1
/// stride-1 CONV_2D (one group, no tanh) of it. `None` otherwise. The step runs at the
/// convolution's turn and the depthwise output is never materialized.
pub(crate) fn build_depthwise_project(ctx: &CompileCtx, dw: OpId, conv: OpId) -> Option<Built> {
    let d = ctx.graph.op(dw);
    let OpKind::DepthwiseConv2D(p1) = &d.kind else { return None };
    let c = ctx.graph.op(conv);
    let OpKind::Conv2D(p2) = &c.kind else { return None };
    all_f32(ctx, dw).ok()?;
    all_f32(ctx, conv).ok()?;
    let (x, mid) = (d.input(0)?, *d.outputs.first()?);
    if d.outputs.len() != 1 || c.input(0)? != mid || c.outputs.len() != 1 || !read_once_by(ctx, mid, conv) {
        return None;
    }
    let (xd, w1d, md) = (ctx.dims(x), ctx.dims(d.input(1)?), ctx.dims(mid));
    let (w2d, od) = (ctx.dims(c.input(1)?), ctx.dims(c.outputs[0]));
    if xd.len() != 4 || w1d.len() != 4 || md.len() != 4 || w2d.len() != 4 || od.len() != 4 {
        return None;
    }
    // Each step of rows runs its own GEMM over the whole projection matrix: worth it while the
    // depthwise output is large next to those weights (MobileNetV2's wide maps, not the deep
    // 14×14 and 7×7 layers).
    let (mid_bytes, w2_bytes) = (md.iter().product::<usize>() * 4, w2d.iter().product::<usize>() * 4);
    if mid_bytes < PROJECT_MIN_BYTES || mid_bytes < PROJECT_MIN_RATIO * w2_bytes {
        return None;
    }
    let dg = depthwise_geom(xd, w1d, md, p1).ok()?;
    let cg = conv_geom(md, w2d, od, p2).ok()?;
    let one_by_one = cg.k_h == 1 && cg.k_w == 1 && cg.stride_h == 1 && cg.stride_w == 1 && cg.pad_top == 0 && cg.pad_left == 0;
    let ((act1, tanh1), (act2, tanh2)) = (fused(p1.act), fused(p2.act));
    if dg.multiplier != 1 || tanh1 || tanh2 || !one_by_one || cg.groups != 1 || cg.out_h != dg.out_h || cg.out_w != dg.out_w || cg.in_c != dg.in_c {
        return None;
    }
    let (w1, w2) = (const_f32(ctx, d.input(1)?)?, const_f32(ctx, c.input(1)?)?);
    let (b1, b2) = (const_bias(ctx, d.input(2))?, const_bias(ctx, c.input(2))?);
    if w1.len() < dg.k_h * dg.k_w * dg.in_c || w2.len() < cg.out_c * cg.in_c || b1.as_ref().is_some_and(|b| b.len() < dg.in_c) || b2.as_ref().is_some_and(|b| b.len() < cg.out_c) {
        return None;
    }
    let fusedk = DepthwiseProject::new(dg, &w1, b1.as_deref(), act1, cg.out_c, &w2, b2.as_deref(), act2);
    Some(built(vec![source(ctx, x)], move |ins, outs| {
        fusedk.run(cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}

/// The fused step for op `conv` followed by op `add` ([`Conv2d::run_add`]): `conv` a
/// [`producer`] of `add`, an ADD (no tanh) of its output and another tensor of the same shape
/// (MobileNetV2's projection and residual, a ResNet block's second 3×3 convolution and its
/// shortcut). `None` otherwise. As with [`build_expand_depthwise`], the step runs at the ADD's
/// turn and the convolution's output is never materialized.
pub(crate) fn build_conv_add(ctx: &CompileCtx, conv: OpId, add: OpId) -> Option<Built> {
    let a = ctx.graph.op(add);
    let OpKind::Binary { op: nnrt_core::BinaryOp::Add, act: add_act } = &a.kind else { return None };
    let pr = producer(ctx, conv, add)?;
    let (act2, tanh2) = fused(*add_act);
    let x = match (a.input(0)?, a.input(1)?) {
        (l, r) if l == pr.output => r,
        (l, _) => l,
    };
    let md = ctx.dims(pr.output);
    if a.outputs.len() != 1 || a.inputs.len() != 2 || tanh2 || ctx.dims(x) != md || ctx.dims(a.outputs[0]) != md {
        return None;
    }
    let mut conv = Conv2d::new(pr.geom, &pr.weights, pr.bias.as_deref(), pr.act);
    Some(built(vec![source(ctx, pr.input), source(ctx, x)], move |ins, outs| {
        conv.run_add(cast::<f32>(ins[0].bytes)?, cast::<f32>(ins[1].bytes)?, act2, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}
