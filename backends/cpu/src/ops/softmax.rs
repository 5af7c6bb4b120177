//! SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION and PRELU: float32 kernels, and quantized ones with
//! TFLite's arithmetic (SOFTMAX on uint8 / int8 into uint8 / int8 / int16 and on int16,
//! LOG_SOFTMAX on uint8 / int8, PRELU on uint8, int8 and int16 with int8 alpha). Each quantized
//! `supports` refuses what TFLite's Prepare refuses, naming the parameter.

use nnrt_core::shape::num_elements;
use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, OpId, OpKind};

use super::util::{QuantIo, all_f32, check_act, check_all_params, dtype, fused, input, qp, quantized_input, source, sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::softmax::{l2_normalize, log_softmax, softmax};
use crate::kernels::unary::{prelu, unary, UnaryOp as U};
use crate::quant::activation::PreluQ;
use crate::quant::binary::{broadcast_strides, for_each_index};
use crate::quant::log_softmax::LogSoftmaxQ;
use crate::quant::softmax::{Softmax16, Softmax8};
use crate::quant::QInt;

/// L2_NORMALIZATION has float kernels only.
fn quantized_op(ctx: &CompileCtx, id: OpId) -> bool {
    !matches!(ctx.graph.op(id).kind, OpKind::L2Normalization { .. }) && quantized_input(ctx, id, 0)
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    if let OpKind::L2Normalization { act } = &ctx.graph.op(id).kind {
        check_act(*act)?;
    }
    all_f32(ctx, id)
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    check_all_params(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::LogSoftmax => return log_softmax_check(ctx, id).map(|_| ()),
        OpKind::Prelu => return prelu_types(ctx, id).map(|_| ()),
        _ => {}
    }
    let out = op.outputs.first().copied().ok_or("the op has no output")?;
    let in0 = input(ctx, id, 0)?;
    let (xt, ot) = (dtype(ctx, in0), dtype(ctx, out));
    match &op.kind {
        OpKind::Softmax { .. } => match (xt, ot) {
            (DType::U8 | DType::I8, DType::U8 | DType::I8 | DType::I16) | (DType::I16, DType::I16) => Ok(()),
            _ => Err(format!("quantized softmax {xt} -> {ot} is not supported")),
        },
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn log_softmax_check(ctx: &CompileCtx, id: OpId) -> Result<LogSoftmaxQ, String> {
    let (x, out) = (input(ctx, id, 0)?, ctx.graph.op(id).outputs[0]);
    let (xt, ot) = (dtype(ctx, x), dtype(ctx, out));
    let want_zp = match (xt, ot) {
        (DType::U8, DType::U8) => 255,
        (DType::I8, DType::I8) => 127,
        _ => return Err(format!("quantized LogSoftmax on {xt} -> {ot} is not supported (uint8 and int8 are)")),
    };
    let oq = qp(ctx, out)?;
    if oq.scale != 16.0 / 256.0 || oq.zero_point != want_zp {
        return Err(format!(
            "quantized LogSoftmax needs output scale 16/256 and zero point {want_zp} (TFLite requires them), got {} and {}",
            oq.scale, oq.zero_point
        ));
    }
    Ok(LogSoftmaxQ::new(qp(ctx, x)?.scale))
}

fn prelu_types(ctx: &CompileCtx, id: OpId) -> Result<(DType, DType), String> {
    let (x, a, out) = (input(ctx, id, 0)?, input(ctx, id, 1)?, ctx.graph.op(id).outputs[0]);
    let (xt, at, ot) = (dtype(ctx, x), dtype(ctx, a), dtype(ctx, out));
    match (xt, at, ot) {
        (DType::U8, DType::U8, DType::U8) | (DType::I8, DType::I8, DType::I8) | (DType::I16, DType::I8, DType::I16) => {
            qp(ctx, x)?;
            qp(ctx, a)?;
            qp(ctx, out)?;
            if ctx.dims(out) != ctx.dims(x) {
                return Err(format!("Prelu's alpha {a} must broadcast to the input's shape {:?}", ctx.dims(x)));
            }
            Ok((xt, at))
        }
        _ => Err(format!("quantized Prelu with input {xt}, alpha {at}, output {ot} is not supported")),
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let inputs = sources(ctx, id);
    match &op.kind {
        OpKind::Prelu => Ok(built(inputs, |ins, outs| {
            prelu(cast::<f32>(ins[0].bytes)?, ins[0].dims, cast::<f32>(ins[1].bytes)?, ins[1].dims, cast_mut::<f32>(outs[0].bytes)?);
            Ok(())
        })),
        OpKind::LogSoftmax | OpKind::L2Normalization { .. } => {
            let (log, act) = match &op.kind {
                OpKind::L2Normalization { act } => (false, *act),
                _ => (true, Activation::None),
            };
            let (clamp, tanh) = fused(act);
            Ok(built(inputs, move |ins, outs| {
                let dims = ins[0].dims;
                let depth = dims.last().copied().unwrap_or(1);
                let outer = num_elements(dims).unwrap_or(0) / depth.max(1);
                let (x, out) = (cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
                if log {
                    log_softmax(x, outer, depth, out);
                } else {
                    l2_normalize(x, outer, depth, out);
                    out.iter_mut().for_each(|v| *v = crate::kernels::binary::clamp(*v, clamp));
                    if tanh {
                        let tmp = out.to_vec();
                        unary(U::Tanh, &tmp, out);
                    }
                }
                Ok(())
            }))
        }
        OpKind::Softmax { beta } => {
            let beta = *beta;
            Ok(built(inputs, move |ins, outs| {
                let dims = ins[0].dims;
                let depth = dims.last().copied().unwrap_or(1);
                let outer = num_elements(dims).unwrap_or(0) / depth.max(1);
                softmax(cast::<f32>(ins[0].bytes)?, outer, depth, beta, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }))
        }
        _ => Err("not a softmax or normalization op".into()),
    }
}

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let QuantIo { x, xt, ot, xd, .. } = QuantIo::of(ctx, id)?;
    let in0 = x;
    match &op.kind {
        OpKind::Softmax { beta } => {
            let iq = qp(ctx, in0)?;
            let depth = *xd.last().unwrap_or(&1);
            if xt == DType::I16 {
                let s = Softmax16::new(*beta, iq.scale);
                return Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    s.run(cast::<i16>(ins[0].bytes)?, depth, cast_mut::<i16>(outs[0].bytes)?);
                    Ok(())
                }));
            }
            let s = Softmax8::new(*beta, iq.scale);
            by_qtype!(xt, |TI| by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                s.run::<TI, TO>(cast::<TI>(ins[0].bytes)?, depth.max(1), cast_mut::<TO>(outs[0].bytes)?);
                Ok(())
            }))))
        }
        OpKind::LogSoftmax => {
            let l = log_softmax_check(ctx, id)?;
            let depth = ctx.dims(x).last().copied().unwrap_or(1).max(1);
            by_qtype!(dtype(ctx, x), |T| Ok(built(vec![source(ctx, x)], move |ins, outs| {
                l.run::<T>(cast::<T>(ins[0].bytes)?, depth, cast_mut::<T>(outs[0].bytes)?);
                Ok(())
            })))
        }
        _ => {
            let (xt, at) = prelu_types(ctx, id)?;
            let a = input(ctx, id, 1)?;
            let p = PreluQ::new(qp(ctx, x)?, qp(ctx, a)?, qp(ctx, op.outputs[0])?);
            by_qtype!(xt, |T| by_qtype!(at, |A| Ok(built(sources(ctx, id), move |ins, outs| {
                prelu_q::<T, A>(&p, cast::<T>(ins[0].bytes)?, ins[0].dims, cast::<A>(ins[1].bytes)?, ins[1].dims, cast_mut::<T>(outs[0].bytes)?);
                Ok(())
            }))))
        }
    }
}

/// PRELU over `x` with `alpha` broadcast to x's shape (right-aligned, NumPy rules).
fn prelu_q<T: QInt, A: QInt>(p: &PreluQ, x: &[T], x_dims: &[usize], alpha: &[A], a_dims: &[usize], out: &mut [T]) {
    if alpha.len() == x.len() {
        for ((o, &v), &a) in out.iter_mut().zip(x).zip(alpha) {
            *o = p.apply(v, a);
        }
        return;
    }
    let sa = broadcast_strides(a_dims, x_dims);
    for_each_index(x_dims, |i, idx| {
        let ia: usize = idx.iter().zip(&sa).map(|(&v, &s)| v * s).sum();
        out[i] = p.apply(x[i], alpha[ia]);
    });
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["Softmax", "LogSoftmax", "L2Normalization", "Prelu"], supports, build, (quantized_op, supports_quantized, build_quantized));
}
