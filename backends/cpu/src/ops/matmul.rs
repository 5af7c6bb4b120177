//! TRANSPOSE_CONV and BATCH_MATMUL (float32): right-hand sides packed at compile when constant.

use nnrt_core::infer::window_output;
use nnrt_core::{cast, cast_mut, CompileCtx, Conv3D as Conv3DParams, OpId, OpKind, TransposeConv as TransposeConvParams};

use super::conv::conv3d_geom;
use super::{all_f32, built, check_act, const_f32, fused, source, tanh_in_place};
use crate::backend::Built;
use crate::kernels::batch_matmul::{batch_matmul, MatMulGeom, PackedY};
use crate::kernels::conv3d::Conv3dTranspose;
use crate::kernels::transpose_conv::{TransposeConv, TransposeConvGeom};

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::TransposeConv(TransposeConvParams { act, .. }) | OpKind::Conv3DTranspose(Conv3DParams { act, .. }) => {
            check_act(*act)?;
            for &o in op.inputs.iter().skip(1).flatten().chain(&op.outputs) {
                let t = ctx.graph.operand(o).dtype;
                if t != nnrt_core::DType::F32 {
                    return Err(format!("operand {o} is {t}; this CPU kernel handles float32"));
                }
            }
            let w = op.input(1).ok_or("input 1 (filter) is absent")?;
            if !ctx.graph.operand(w).is_const() {
                return Err("the filter must be a constant tensor (it is packed at prepare)".into());
            }
            if op.input(3).is_some_and(|b| !ctx.graph.operand(b).is_const()) {
                return Err("the bias must be a constant tensor".into());
            }
            Ok(())
        }
        _ => all_f32(ctx, id),
    }
}

/// The geometry of TRANSPOSE_CONV `id` (float or quantized), its shapes checked.
pub(super) fn transpose_conv_geom(ctx: &CompileCtx, id: OpId) -> Result<TransposeConvGeom, String> {
    let op = ctx.graph.op(id);
    let OpKind::TransposeConv(p) = &op.kind else { return Err("not a TransposeConv".into()) };
    let (w, x) = (op.input(1).ok_or("input 1 (filter) is absent")?, op.input(2).ok_or("input 2 (input) is absent")?);
    let (wd, xd, od) = (ctx.dims(w), ctx.dims(x), ctx.dims(op.outputs[0]));
    if wd.len() != 4 || xd.len() != 4 || od.len() != 4 || wd[3] != xd[3] || wd[0] != od[3] || xd[0] != od[0] {
        return Err(format!("TransposeConv shapes do not fit: input {xd:?}, filter {wd:?}, output {od:?}"));
    }
    // The padding of the convolution that maps the output back onto the input.
    let wh = window_output(od[1], wd[1], p.stride[0], 1, p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(od[2], wd[2], p.stride[1], 1, p.padding, 1).ok_or("invalid window")?;
    Ok(TransposeConvGeom::nhwc(xd, wd, od, p.stride, [wh.pad_before, ww.pad_before]))
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::TransposeConv(p) => {
            let g = transpose_conv_geom(ctx, id)?;
            let (w, x) = (op.input(1).ok_or("input 1 (filter) is absent")?, op.input(2).ok_or("input 2 (input) is absent")?);
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            let bias = match op.input(3) {
                Some(b) => Some(const_f32(ctx, b).ok_or("the bias must be a float32 constant")?),
                None => None,
            };
            if filter.len() != g.out_c * g.k_h * g.k_w * g.in_c || bias.as_ref().is_some_and(|b| b.len() != g.out_c) {
                return Err(format!("the filter ({} values) or bias does not fit {} output channels", filter.len(), g.out_c));
            }
            let (act, tanh) = fused(p.act);
            let mut conv = TransposeConv::new(g, &filter, bias.as_deref(), act);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let out = cast_mut::<f32>(outs[0].bytes)?;
                conv.run(cast::<f32>(ins[0].bytes)?, out);
                if tanh {
                    tanh_in_place(out);
                }
                Ok(())
            }))
        }
        OpKind::Conv3DTranspose(p) => {
            let (w, x) = (op.input(1).ok_or("input 1 (filter) is absent")?, op.input(2).ok_or("input 2 (input) is absent")?);
            let (wd, xd, od) = (ctx.dims(w), ctx.dims(x), ctx.dims(op.outputs[0]));
            if wd.len() != 5 || xd.len() != 5 || od.len() != 5 || wd[3] != od[4] || wd[4] != xd[4] || xd[0] != od[0] {
                return Err(format!("CONV_3D_TRANSPOSE shapes do not fit: input {xd:?}, filter {wd:?}, output {od:?}"));
            }
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            let bias = match op.input(3) {
                Some(b) => Some(const_f32(ctx, b).ok_or("the bias must be a float32 constant")?),
                None => None,
            };
            if filter.len() != wd.iter().product::<usize>() || bias.as_ref().is_some_and(|b| b.len() != od[4]) {
                return Err(format!("the filter ({} values) or bias does not fit {wd:?}", filter.len()));
            }
            // The convolution from this op's output back to its input.
            let g = conv3d_geom(od, wd, xd, p)?;
            let (act, tanh) = fused(p.act);
            let mut conv = Conv3dTranspose::new(g, &filter, bias.as_deref(), act);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let out = cast_mut::<f32>(outs[0].bytes)?;
                conv.run(cast::<f32>(ins[0].bytes)?, out);
                if tanh {
                    tanh_in_place(out);
                }
                Ok(())
            }))
        }
        OpKind::BatchMatMul { adj_x, adj_y } => {
            let (x, y) = (op.input(0).ok_or("input 0 is absent")?, op.input(1).ok_or("input 1 is absent")?);
            let g = MatMulGeom::new(ctx.dims(x), ctx.dims(y), *adj_x, *adj_y)?;
            match const_f32(ctx, y) {
                Some(yv) => {
                    let packed = PackedY::pack(&g, &yv);
                    Ok(built(vec![source(ctx, x)], move |ins, outs| {
                        batch_matmul(&g, cast::<f32>(ins[0].bytes)?, &packed, cast_mut::<f32>(outs[0].bytes)?);
                        Ok(())
                    }))
                }
                None => Ok(built(vec![source(ctx, x), source(ctx, y)], move |ins, outs| {
                    let packed = PackedY::pack(&g, cast::<f32>(ins[1].bytes)?);
                    batch_matmul(&g, cast::<f32>(ins[0].bytes)?, &packed, cast_mut::<f32>(outs[0].bytes)?);
                    Ok(())
                })),
            }
        }
        _ => Err("not a matmul op".into()),
    }
}
