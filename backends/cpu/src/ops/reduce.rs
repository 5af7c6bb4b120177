//! Reductions over constant axes (mean, sum, max, min, prod).

use nnrt_core::{cast, cast_mut, CompileCtx, OpId, OpKind, ReduceOp};

use super::{built, source};
use crate::backend::Built;
use crate::kernels::reduce::{reduce, ReduceOp as R};

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let out = op.outputs[0];
    for o in [x, out] {
        let t = ctx.graph.operand(o).dtype;
        if t != nnrt_core::DType::F32 {
            return Err(format!("operand {o} is {t}; this CPU reduction handles float32"));
        }
    }
    let axes = op.input(1).ok_or("input 1 (axes) is absent")?;
    if !ctx.graph.operand(axes).is_const() {
        return Err("the axes must be a constant tensor".into());
    }
    Ok(())
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
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
    };
    Ok(built(vec![source(ctx, x)], move |ins, outs| {
        reduce(k, cast::<f32>(ins[0].bytes)?, ins[0].dims, &axes, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}
