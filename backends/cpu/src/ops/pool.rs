//! Average, max and L2 pooling.

use nnrt_core::infer::window_output;
use nnrt_core::{cast, cast_mut, CompileCtx, OpId, OpKind, PoolKind};

use super::{all_f32, built, check_act, fused, source};
use crate::backend::Built;
use crate::kernels::pool::{avg_pool, l2_pool, max_pool, PoolGeom};

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    all_f32(ctx, id)?;
    match &ctx.graph.op(id).kind {
        OpKind::Pool2D(p) => check_act(p.act),
        _ => Err("not a pooling op".into()),
    }
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let OpKind::Pool2D(p) = &op.kind else { return Err("not a pooling op".into()) };
    let x = op.input(0).ok_or("input 0 is absent")?;
    let (xd, od) = (ctx.dims(x).to_vec(), ctx.dims(op.outputs[0]).to_vec());
    let wh = window_output(xd[1], p.filter[0], p.stride[0], 1, p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], p.filter[1], p.stride[1], 1, p.padding, 1).ok_or("invalid window")?;
    let g = PoolGeom {
        batch: xd[0],
        in_h: xd[1],
        in_w: xd[2],
        channels: xd[3],
        out_h: od[1],
        out_w: od[2],
        k_h: p.filter[0],
        k_w: p.filter[1],
        stride_h: p.stride[0],
        stride_w: p.stride[1],
        pad_top: wh.pad_before,
        pad_left: ww.pad_before,
    };
    let (act, tanh) = fused(p.act);
    let kind = p.kind;
    Ok(built(vec![source(ctx, x)], move |ins, outs| {
        let input = cast::<f32>(ins[0].bytes)?;
        let out = cast_mut::<f32>(outs[0].bytes)?;
        match kind {
            PoolKind::Max => max_pool(&g, input, out, act),
            PoolKind::L2 => l2_pool(&g, input, out, act),
            PoolKind::Average => avg_pool(&g, input, out, act),
        }
        if tanh {
            for v in out.iter_mut() {
                *v = v.tanh();
            }
        }
        Ok(())
    }))
}
