//! Ops that scan one axis: CUMSUM, TOPK_V2, ARG_MAX / ARG_MIN.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind};

use super::util::{QuantIo, const_ints, input, quantized_input, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::quant::misc;

use crate::kernels::reduce::arg_max_min;
use crate::kernels::scan::{cumsum, top_k};

/// ARG_MAX / ARG_MIN of a quantized input take the integer kernel.
fn quantized_op(ctx: &CompileCtx, id: OpId) -> bool {
    matches!(ctx.graph.op(id).kind, OpKind::ArgMinMax { .. }) && quantized_input(ctx, id, 0)
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let x = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?);
    if x.quant.is_quantized() && !matches!(op.kind, OpKind::ArgMinMax { .. } | OpKind::TopKV2) {
        return Err("quantized CUMSUM is not implemented".into());
    }
    let ok = match op.kind {
        OpKind::Cumsum { .. } => matches!(x.dtype, DType::F32 | DType::I32 | DType::I64),
        OpKind::ArgMinMax { .. } => matches!(x.dtype, DType::F32 | DType::I32 | DType::I64 | DType::U8 | DType::I8 | DType::I16 | DType::Bool),
        _ => matches!(x.dtype, DType::F32 | DType::I32 | DType::I64 | DType::U8 | DType::I8 | DType::I16),
    };
    if !ok {
        return Err(format!("{} on {} is not supported by the CPU backend", op.kind.name(), x.dtype));
    }
    Ok(())
}

fn axis(ctx: &CompileCtx, id: OpId, rank: usize) -> Result<usize, String> {
    let op = ctx.graph.op(id);
    let v = ctx.graph.const_ints(id, op.input(1).ok_or("input 1 (axis) is absent")?).map_err(|e| e.to_string())?;
    let a = *v.first().ok_or("the axis tensor is empty")?;
    Ok(if a < 0 { (a + rank as i64) as usize } else { a as usize })
}

/// Runs `$body` with `$t` the Rust type of numeric `$dtype`.
macro_rules! by_type {
    ($dtype:expr, |$t:ident| $body:expr) => {
        match $dtype {
            DType::F32 => { type $t = f32; $body }
            DType::I32 => { type $t = i32; $body }
            DType::I64 => { type $t = i64; $body }
            DType::Bool => { type $t = u8; $body }
            other => by_qtype!(other, |$t| $body),
        }
    };
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let QuantIo { ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::ArgMinMax { .. } => {
            if !matches!(ot, DType::I32 | DType::I64) {
                return Err(format!("arg max/min into {ot}"));
            }
            const_ints(ctx, input(ctx, id, 1)?).map(|_| ())
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let dims = ctx.dims(x).to_vec();
    let dtype = ctx.graph.operand(x).dtype;
    let out_type = ctx.graph.operand(op.outputs[0]).dtype;
    match &op.kind {
        OpKind::Cumsum { exclusive, reverse } => {
            let a = axis(ctx, id, dims.len())?;
            let (outer, n, inner) = (dims[..a].iter().product(), dims[a], dims[a + 1..].iter().product());
            let (ex, rev) = (*exclusive, *reverse);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                match dtype {
                    DType::F32 => cumsum(cast::<f32>(ins[0].bytes)?, outer, n, inner, ex, rev, cast_mut::<f32>(outs[0].bytes)?),
                    DType::I32 => cumsum(cast::<i32>(ins[0].bytes)?, outer, n, inner, ex, rev, cast_mut::<i32>(outs[0].bytes)?),
                    _ => cumsum(cast::<i64>(ins[0].bytes)?, outer, n, inner, ex, rev, cast_mut::<i64>(outs[0].bytes)?),
                }
                Ok(())
            }))
        }
        OpKind::ArgMinMax { max } => {
            let a = axis(ctx, id, dims.len())?;
            let is_max = *max;
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                by_type!(dtype, |T| {
                    let input = cast::<T>(ins[0].bytes)?;
                    if out_type == DType::I64 {
                        arg_max_min(input, &dims, a, is_max, cast_mut::<i64>(outs[0].bytes)?);
                    } else {
                        arg_max_min(input, &dims, a, is_max, cast_mut::<i32>(outs[0].bytes)?);
                    }
                });
                Ok(())
            }))
        }
        OpKind::TopKV2 => {
            let n = dims.last().copied().unwrap_or(0);
            let k = ctx.dims(op.outputs[0]).last().copied().unwrap_or(0);
            let idx_type = ctx.graph.operand(op.outputs[1]).dtype;
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let rows = (ins[0].bytes.len() / dtype.size()).checked_div(n).unwrap_or(0);
                let mut idx = vec![0i64; rows * k];
                let (vals, rest) = outs.split_at_mut(1);
                by_type!(dtype, |T| top_k(cast::<T>(ins[0].bytes)?, n, k, cast_mut::<T>(vals[0].bytes)?, &mut idx));
                if idx_type == DType::I64 {
                    cast_mut::<i64>(rest[0].bytes)?.copy_from_slice(&idx);
                } else {
                    cast_mut::<i32>(rest[0].bytes)?.iter_mut().zip(&idx).for_each(|(o, &i)| *o = i as i32);
                }
                Ok(())
            }))
        }
        _ => Err("not a scan op".into()),
    }
}

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { x: in0, xt, ot, xd, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::ArgMinMax { max } => {
            let rank = xd.len() as i64;
            let a = *const_ints(ctx, input(ctx, id, 1)?)?.first().ok_or("the axis is empty")?;
            let axis = if a < 0 { a + rank } else { a } as usize;
            let max = *max;
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                let x = cast::<T>(ins[0].bytes)?;
                if ot == DType::I64 {
                    misc::arg_extreme::<T, i64>(x, ins[0].dims, axis, max, cast_mut::<i64>(outs[0].bytes)?, |i| i as i64);
                } else {
                    misc::arg_extreme::<T, i32>(x, ins[0].dims, axis, max, cast_mut::<i32>(outs[0].bytes)?, |i| i as i32);
                }
                Ok(())
            })))
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["Cumsum", "TopKV2", "ArgMax", "ArgMin"], supports, build, (quantized_op, supports_quantized, build_quantized));
}
