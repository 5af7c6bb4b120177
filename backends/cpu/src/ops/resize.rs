//! RESIZE_BILINEAR (float32) and RESIZE_NEAREST_NEIGHBOR (any type).

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, ResizeMode};

use super::movement::by_size;
use super::{built, source};
use crate::backend::Built;
use crate::kernels::resize::{resize_bilinear, resize_nearest, ResizeGeom};

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let OpKind::Resize(r) = &op.kind else { return Err("not a resize".into()) };
    let x = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?);
    let out = ctx.graph.operand(op.outputs[0]);
    if x.dtype != out.dtype || (x.quant.is_quantized() && x.quant != out.quant) {
        return Err(format!("input {} and output {} must have the same type and quantization", x.dtype, out.dtype));
    }
    if r.align_corners && r.half_pixel_centers {
        return Err("align_corners and half_pixel_centers cannot both be set".into());
    }
    if r.mode == ResizeMode::Bilinear && x.dtype != DType::F32 {
        return Err(format!("bilinear resize of {} is not implemented on the CPU (float32 only)", x.dtype));
    }
    Ok(())
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let OpKind::Resize(r) = op.kind else { return Err("not a resize".into()) };
    let x = op.input(0).ok_or("input 0 is absent")?;
    let (xd, od) = (ctx.dims(x), ctx.dims(op.outputs[0]));
    let g = ResizeGeom { batch: xd[0], in_h: xd[1], in_w: xd[2], out_h: od[1], out_w: od[2], depth: xd[3] };
    let dtype = ctx.graph.operand(x).dtype;
    Ok(built(vec![source(ctx, x)], move |ins, outs| {
        match r.mode {
            ResizeMode::Bilinear => resize_bilinear(&g, r.align_corners, r.half_pixel_centers, cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?),
            ResizeMode::Nearest => {
                by_size!(dtype, |T| resize_nearest(&g, r.align_corners, r.half_pixel_centers, cast::<T>(ins[0].bytes)?, cast_mut::<T>(outs[0].bytes)?))
            }
        }
        Ok(())
    }))
}
