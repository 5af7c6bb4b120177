//! Reductions over constant axes (mean, sum, max, min, prod on float32 / int32 / int64; any, all
//! on bools; MEAN on uint8 / int8 / int16 with TFLite's requantization).

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, ReduceOp};

use super::util::{QuantIo, const_ints, first_input_quantized, input, qp, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::reduce::{reduce, reduce_bool, reduce_i32, reduce_i64, reduce_in_order, ReduceOp as R};
use crate::quant::misc;

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let out = op.outputs[0];
    let OpKind::Reduce { op: r, .. } = &op.kind else { return Err("not a reduction".into()) };
    for o in [x, out] {
        let operand = ctx.graph.operand(o);
        let ok = match (r, operand.dtype) {
            (ReduceOp::Any | ReduceOp::All, t) => t == DType::Bool,
            (_, t) => matches!(t, DType::F32 | DType::I32 | DType::I64),
        };
        if !ok || operand.quant.is_quantized() {
            return Err(format!("operand {o} is {}; this CPU reduction handles float32, int32 and int64 (bool for ANY / ALL)", operand.dtype));
        }
    }
    let axes = op.input(1).ok_or("input 1 (axes) is absent")?;
    if !ctx.graph.operand(axes).is_const() {
        return Err("the axes must be a constant tensor".into());
    }
    Ok(())
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let QuantIo { xt, ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Reduce { op: r, .. } => {
            if *r != nnrt_core::ReduceOp::Mean || xt != ot {
                return Err(format!("quantized {} is not supported (MEAN is)", op.kind.name()));
            }
            const_ints(ctx, input(ctx, id, 1)?).map(|_| ())
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let OpKind::Reduce { op: r, .. } = &op.kind else { return Err("not a reduction".into()) };
    let x = op.input(0).ok_or("input 0 is absent")?;
    let rank = ctx.dims(x).len() as i64;
    let mut axes: Vec<usize> = Vec::new();
    for a in ctx.graph.const_ints(id, op.input(1).ok_or("input 1 (axes) is absent")?).map_err(|e| e.to_string())? {
        let a = if a < 0 { a + rank } else { a };
        if a < 0 || a >= rank.max(1) {
            return Err(format!("axis {a} is out of range for rank {rank}"));
        }
        if !axes.contains(&(a as usize)) {
            axes.push(a as usize);
        }
    }
    axes.sort_unstable();
    let k = match r {
        ReduceOp::Mean => R::Mean,
        ReduceOp::Sum => R::Sum,
        ReduceOp::Max => R::Max,
        ReduceOp::Min => R::Min,
        ReduceOp::Prod => R::Prod,
        ReduceOp::Any => R::Any,
        ReduceOp::All => R::All,
    };
    let dtype = ctx.graph.operand(x).dtype;
    // ExecuTorch's portable sum and mean add in index order, one element at a time; a quantize
    // after them turns a last-bit difference of another order into a whole step.
    let in_order = ctx.graph.numerics == nnrt_core::Numerics::ExecuTorch && matches!(k, R::Mean | R::Sum);
    Ok(built(vec![source(ctx, x)], move |ins, outs| {
        let dims = ins[0].dims;
        match dtype {
            DType::F32 if in_order => reduce_in_order(k, cast::<f32>(ins[0].bytes)?, dims, &axes, cast_mut::<f32>(outs[0].bytes)?),
            DType::Bool => reduce_bool(k, ins[0].bytes, dims, &axes, outs[0].bytes),
            DType::I32 => reduce_i32(k, cast::<i32>(ins[0].bytes)?, dims, &axes, cast_mut::<i32>(outs[0].bytes)?),
            DType::I64 => reduce_i64(k, cast::<i64>(ins[0].bytes)?, dims, &axes, cast_mut::<i64>(outs[0].bytes)?),
            _ => reduce(k, cast::<f32>(ins[0].bytes)?, dims, &axes, cast_mut::<f32>(outs[0].bytes)?),
        }
        Ok(())
    }))
}

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { x: in0, out, xt, xd, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Reduce { .. } => {
            let rank = xd.len() as i64;
            let mut axes: Vec<usize> = const_ints(ctx, input(ctx, id, 1)?)?
                .into_iter()
                .map(|a| if a < 0 { a + rank } else { a } as usize)
                .collect();
            axes.sort_unstable();
            axes.dedup();
            let (iq, oq) = (qp(ctx, in0)?, qp(ctx, out)?);
            let xnnpack = ctx.graph.numerics == nnrt_core::Numerics::ExecuTorch;
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::mean::<T>(cast::<T>(ins[0].bytes)?, ins[0].dims, &axes, iq, oq, xnnpack, cast_mut::<T>(outs[0].bytes)?);
                Ok(())
            })))
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["Mean", "Sum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceAny", "ReduceAll"], supports, build, (first_input_quantized, supports_quantized, build_quantized));
}
