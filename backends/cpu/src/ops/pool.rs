//! Average, max and L2 pooling (float32), average and max pooling on uint8 / int8 / int16.

use nnrt_core::infer::window_output;
use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, PoolKind};

use super::util::{QuantIo, all_f32, check_act, first_input_quantized, fused, is_qint, nhwc, qp, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::pool::{avg_pool, l2_pool, max_pool, PoolGeom};
use crate::quant::misc::{self, PoolGeom as QPoolGeom};
use crate::quant::{activation_range, QInt};

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    nhwc(ctx, id)?;
    if super::int_forms::is_int_form(ctx, id) {
        return super::int_forms::supports(ctx, id);
    }
    all_f32(ctx, id)?;
    match &ctx.graph.op(id).kind {
        OpKind::Pool2D(p) => check_act(p.act),
        _ => Err("not a pooling op".into()),
    }
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let QuantIo { xt, ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Pool2D(p) => {
            if p.kind == PoolKind::L2 || !is_qint(xt) || xt != ot {
                return Err(format!("quantized {} on {xt} -> {ot} is not supported", op.kind.name()));
            }
            Ok(())
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// TFLite's padding before the window (top, left) of pooling `p` over NHWC input `xd`.
fn pads(xd: &[usize], p: &nnrt_core::Pool2D) -> Result<[usize; 2], String> {
    let wh = window_output(xd[1], p.filter[0], p.stride[0], 1, p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], p.filter[1], p.stride[1], 1, p.padding, 1).ok_or("invalid window")?;
    Ok([wh.pad_before, ww.pad_before])
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    if super::int_forms::is_int_form(ctx, id) {
        return super::int_forms::build(ctx, id);
    }
    let op = ctx.graph.op(id);
    let OpKind::Pool2D(p) = &op.kind else { return Err("not a pooling op".into()) };
    let x = op.input(0).ok_or("input 0 is absent")?;
    let (xd, od) = (ctx.dims(x).to_vec(), ctx.dims(op.outputs[0]).to_vec());
    let g = PoolGeom::nhwc(&xd, &od, p.filter, p.stride, pads(&xd, p)?);
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

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { x: in0, out, xt, xd, od, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Pool2D(p) => {
            let g = QPoolGeom { n: xd[0], in_h: xd[1], in_w: xd[2], c: xd[3], out_h: od[1], out_w: od[2], k: p.filter, stride: p.stride, pad: pads(&xd, p)? };
            let average = p.kind == PoolKind::Average;
            by_qtype!(xt, |T| {
                let act = activation_range(p.act, qp(ctx, out)?, <T as QInt>::MIN, <T as QInt>::MAX);
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    misc::pool::<T>(&g, average, act, cast::<T>(ins[0].bytes)?, cast_mut::<T>(outs[0].bytes)?);
                    Ok(())
                }))
            })
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["AveragePool2D", "MaxPool2D", "L2Pool2D"], supports, build, (first_input_quantized, supports_quantized, build_quantized));
}
