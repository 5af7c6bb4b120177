//! RESIZE_BILINEAR (float32) and RESIZE_NEAREST_NEIGHBOR (any type).

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, ResizeMode, TensorMut, TensorRef};

use super::movement::by_size;
use super::util::{QuantIo, const_ints, first_input_quantized, input, nhwc, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::quant::misc::{self, ResizeOpts};

use crate::kernels::resize::{resize_bilinear, resize_nearest, resize_scaled, ResizeGeom};

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    nhwc(ctx, id)?;
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

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let QuantIo { xt, ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Resize(r) => {
            if r.mode != ResizeMode::Bilinear || xt != ot {
                return Err("quantized RESIZE_NEAREST_NEIGHBOR is not supported".into());
            }
            const_ints(ctx, input(ctx, id, 1)?).map(|_| ())
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
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

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { x: in0, xt, xd, od, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Resize(r) => {
            let opts = ResizeOpts {
                align_corners: r.align_corners,
                half_pixel_centers: r.half_pixel_centers,
            };
            let in_dims = [xd[0], xd[1], xd[2], xd[3]];
            let (oh, ow) = (od[1], od[2]);
            if xt == DType::U8 {
                return Ok(built(vec![source(ctx, in0)], move |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]| {
                    misc::resize_bilinear_u8(ins[0].bytes, in_dims, oh, ow, opts, outs[0].bytes);
                    Ok(())
                }));
            }
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::resize_bilinear_int::<T>(cast::<T>(ins[0].bytes)?, in_dims, oh, ow, opts, cast_mut::<T>(outs[0].bytes)?);
                Ok(())
            })))
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// TOSA RESIZE (`ResizeScaled`): core checked the types and sizes.
fn build_scaled(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let OpKind::ResizeScaled(r) = op.kind else { return Err("not a TOSA resize".into()) };
    let x = op.input(0).ok_or("input 0 is absent")?;
    let (xd, od) = (ctx.dims(x).to_vec(), ctx.dims(op.outputs[0]).to_vec());
    if xd.len() != 4 || od.len() != 4 {
        return Err("RESIZE takes NHWC".into());
    }
    let dims = [xd[0], xd[1], xd[2], xd[3]];
    let hw = [od[1], od[2]];
    let dtype = ctx.graph.operand(x).dtype;
    let near = r.mode == ResizeMode::Nearest;
    Ok(built(vec![source(ctx, x)], move |ins, outs| {
        macro_rules! go {
            ($t:ty, $o:ty) => {{
                let xs = cast::<$t>(ins[0].bytes)?;
                if near {
                    resize_scaled::<$t>(xs, dims, hw, r.scale, r.offset, Some(cast_mut::<$t>(outs[0].bytes)?), None);
                } else {
                    resize_scaled::<$t>(xs, dims, hw, r.scale, r.offset, None, Some(cast_mut::<$o>(outs[0].bytes)?));
                }
            }};
        }
        match dtype {
            DType::F32 => go!(f32, f32),
            DType::I8 => go!(i8, i32),
            DType::I16 => go!(i16, i64),
            other => return Err(format!("RESIZE of {other} is not supported")),
        }
        Ok(())
    }))
}

fn supports_scaled(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    nhwc(ctx, id)
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["ResizeBilinear", "ResizeNearestNeighbor"], supports, build, (first_input_quantized, supports_quantized, build_quantized));
    r.ops(&["ResizeScaled"], supports_scaled, build_scaled);
}
