//! Element-wise binary ops with broadcasting, unary ops and activations, softmax, dequantize.

use nnrt_core::shape::num_elements;
use nnrt_core::{cast, cast_mut, BinaryOp, CompileCtx, DType, OpId, OpKind, Quantization, UnaryOp};

use super::{all_f32, built, check_act, fused, sources};
use crate::backend::Built;
use crate::kernels::binary::{binary, BinaryOp as K};
use crate::kernels::data::f16_to_f32;
use crate::kernels::softmax::softmax;
use crate::kernels::unary::{unary, UnaryOp as U};

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Binary { act, .. } => {
            check_act(*act)?;
            all_f32(ctx, id)
        }
        OpKind::Dequantize => {
            let src = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?);
            let dst = ctx.graph.operand(op.outputs[0]);
            if dst.dtype != DType::F32 {
                return Err(format!("dequantizing to {} is not supported (float32 only)", dst.dtype));
            }
            match (src.dtype, &src.quant) {
                (DType::F16, _) => Ok(()),
                (DType::U8 | DType::I8 | DType::I16 | DType::I32, Quantization::PerTensor { .. }) => Ok(()),
                (t, q) => Err(format!("dequantizing {t} with {q:?} is not supported")),
            }
        }
        _ => all_f32(ctx, id),
    }
}

fn unary_kind(u: UnaryOp) -> U {
    match u {
        UnaryOp::Relu => U::Relu,
        UnaryOp::Relu6 => U::Relu6,
        UnaryOp::ReluN1To1 => U::ReluN1To1,
        UnaryOp::Tanh => U::Tanh,
        UnaryOp::Logistic => U::Logistic,
        UnaryOp::HardSwish => U::HardSwish,
        UnaryOp::LeakyRelu(alpha) => U::LeakyRelu(alpha),
    }
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let inputs = sources(ctx, id);
    match &op.kind {
        OpKind::Binary { op: b, act } => {
            let k = match b {
                BinaryOp::Add => K::Add,
                BinaryOp::Sub => K::Sub,
                BinaryOp::Mul => K::Mul,
                BinaryOp::Div => K::Div,
            };
            let (clamp, tanh) = fused(*act);
            Ok(built(inputs, move |ins, outs| {
                let (a, b) = (cast::<f32>(ins[0].bytes)?, cast::<f32>(ins[1].bytes)?);
                let dims = outs[0].dims;
                let out = cast_mut::<f32>(outs[0].bytes)?;
                binary(k, a, ins[0].dims, b, ins[1].dims, out, dims, clamp);
                if tanh {
                    let tmp = out.to_vec();
                    unary(U::Tanh, &tmp, out);
                }
                Ok(())
            }))
        }
        OpKind::Unary(u) => {
            let k = unary_kind(*u);
            Ok(built(inputs, move |ins, outs| {
                unary(k, cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
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
        OpKind::Dequantize => {
            let src = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?);
            let (scale, zp) = match src.quant {
                Quantization::PerTensor { scale, zero_point } => (scale, zero_point as f32),
                _ => (1.0, 0.0),
            };
            let dtype = src.dtype;
            Ok(built(inputs, move |ins, outs| {
                let out = cast_mut::<f32>(outs[0].bytes)?;
                let q = |v: f32| scale * (v - zp);
                match dtype {
                    DType::F16 => f16_to_f32(cast::<half::f16>(ins[0].bytes)?, out),
                    DType::U8 => out.iter_mut().zip(ins[0].bytes).for_each(|(o, &v)| *o = q(v as f32)),
                    DType::I8 => out.iter_mut().zip(cast::<i8>(ins[0].bytes)?).for_each(|(o, &v)| *o = q(v as f32)),
                    DType::I16 => out.iter_mut().zip(cast::<i16>(ins[0].bytes)?).for_each(|(o, &v)| *o = q(v as f32)),
                    DType::I32 => out.iter_mut().zip(cast::<i32>(ins[0].bytes)?).for_each(|(o, &v)| *o = q(v as f32)),
                    other => return Err(format!("cannot dequantize {other}")),
                }
                Ok(())
            }))
        }
        _ => Err("not an element-wise op".into()),
    }
}
