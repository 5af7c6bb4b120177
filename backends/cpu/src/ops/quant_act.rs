//! Builders of the quantized activations that are not 8-bit tables: int16 LOGISTIC and TANH,
//! PRELU (uint8, int8, int16 with int8 alpha) and LOG_SOFTMAX (uint8, int8). Each `supports`
//! refuses what TFLite's Prepare refuses, naming the parameter.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, UnaryOp};

use super::quant::{dtype, input, qp};
use super::{built, source, sources};
use crate::backend::Built;
use crate::quant::activation::PreluQ;
use crate::quant::binary::{broadcast_strides, for_each_index};
use crate::quant::log_softmax::LogSoftmaxQ;
use crate::quant::sigmoid16::Sigmoid16;
use crate::quant::QInt;

/// Whether this file builds `op`.
pub(super) fn handles(ctx: &CompileCtx, id: OpId) -> bool {
    let op = ctx.graph.op(id);
    let xt = op.input(0).map(|x| dtype(ctx, x));
    match &op.kind {
        OpKind::Unary(UnaryOp::Logistic | UnaryOp::Tanh) => xt == Some(DType::I16),
        OpKind::Prelu | OpKind::LogSoftmax => true,
        _ => false,
    }
}

fn sigmoid16(ctx: &CompileCtx, id: OpId) -> Result<Sigmoid16, String> {
    let op = ctx.graph.op(id);
    let (x, out) = (input(ctx, id, 0)?, op.outputs[0]);
    if dtype(ctx, out) != DType::I16 {
        return Err(format!("int16 {} needs an int16 output, got {}", op.kind.name(), dtype(ctx, out)));
    }
    Sigmoid16::new(op.kind == OpKind::Unary(UnaryOp::Tanh), qp(ctx, x)?, qp(ctx, out)?)
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

/// Why these kernels cannot run `op`, or `Ok`.
pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    match &ctx.graph.op(id).kind {
        OpKind::Unary(_) => sigmoid16(ctx, id).map(|_| ()),
        OpKind::LogSoftmax => log_softmax_check(ctx, id).map(|_| ()),
        _ => prelu_types(ctx, id).map(|_| ()),
    }
}

/// Builds the kernel of `op`.
pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let x = input(ctx, id, 0)?;
    match &op.kind {
        OpKind::Unary(_) => {
            let s = sigmoid16(ctx, id)?;
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                s.run(cast::<i16>(ins[0].bytes)?, cast_mut::<i16>(outs[0].bytes)?);
                Ok(())
            }))
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
                prelu::<T, A>(&p, cast::<T>(ins[0].bytes)?, ins[0].dims, cast::<A>(ins[1].bytes)?, ins[1].dims, cast_mut::<T>(outs[0].bytes)?);
                Ok(())
            }))))
        }
    }
}

/// PRELU over `x` with `alpha` broadcast to x's shape (right-aligned, NumPy rules).
fn prelu<T: QInt, A: QInt>(p: &PreluQ, x: &[T], x_dims: &[usize], alpha: &[A], a_dims: &[usize], out: &mut [T]) {
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
