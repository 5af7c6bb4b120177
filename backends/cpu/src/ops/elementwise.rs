//! Element-wise binary ops with broadcasting (float32, int32, int64), unary ops and activations,
//! PRELU, SOFTMAX / LOG_SOFTMAX / L2_NORMALIZATION, DEQUANTIZE.

use nnrt_core::shape::num_elements;
use nnrt_core::{cast, cast_mut, Activation, BinaryOp, CompileCtx, DType, OpId, OpKind, Quantization, UnaryOp};

use super::{all_f32, built, check_act, fused, sources};
use crate::backend::Built;
use crate::kernels::binary::{binary, binary_i32, binary_i64, BinaryOp as K};
use crate::kernels::compare::logical_not;
use crate::kernels::data::f16_to_f32;
use crate::kernels::softmax::{l2_normalize, log_softmax, softmax};
use crate::kernels::unary::{prelu, unary, UnaryOp as U};

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Binary { act, .. } => {
            check_act(*act)?;
            match plain_dtype(ctx, id)? {
                DType::F32 => Ok(()),
                DType::I32 | DType::I64 if *act != Activation::Tanh => Ok(()),
                t => Err(format!("this CPU kernel handles float32, int32 and int64 (not {t}) without a tanh activation")),
            }
        }
        OpKind::Unary(u) => {
            let t = plain_dtype(ctx, id)?;
            let ok = match u {
                UnaryOp::LogicalNot => t == DType::Bool,
                UnaryOp::Abs | UnaryOp::Neg | UnaryOp::Square | UnaryOp::Sign => matches!(t, DType::F32 | DType::I32 | DType::I64),
                _ => t == DType::F32,
            };
            if !ok {
                return Err(format!("{} on {t} is not supported by the CPU backend", op.kind.name()));
            }
            Ok(())
        }
        OpKind::L2Normalization { act } => {
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

/// The one type shared by every operand of `op`, refusing quantized operands (their kernels
/// live in `quant`).
fn plain_dtype(ctx: &CompileCtx, id: OpId) -> Result<DType, String> {
    let op = ctx.graph.op(id);
    let first = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?).dtype;
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        let operand = ctx.graph.operand(o);
        if operand.quant.is_quantized() {
            return Err(format!("operand {o} is quantized; this CPU kernel handles plain numbers"));
        }
        if operand.dtype != first {
            return Err(format!("operand {o} is {} but input 0 is {first}", operand.dtype));
        }
    }
    Ok(first)
}

fn unary_kind(u: UnaryOp) -> U {
    match u {
        UnaryOp::Relu => U::Relu,
        UnaryOp::Relu6 => U::Relu6,
        UnaryOp::ReluN1To1 => U::ReluN1To1,
        UnaryOp::Relu0To1 => U::Relu0To1,
        UnaryOp::Tanh => U::Tanh,
        UnaryOp::Logistic => U::Logistic,
        UnaryOp::HardSwish => U::HardSwish,
        UnaryOp::LeakyRelu(alpha) => U::LeakyRelu(alpha),
        UnaryOp::Elu => U::Elu,
        UnaryOp::Gelu { approximate } => U::Gelu { approximate },
        UnaryOp::Abs => U::Abs,
        UnaryOp::Neg => U::Neg,
        UnaryOp::Exp => U::Exp,
        UnaryOp::Log => U::Log,
        UnaryOp::Sqrt => U::Sqrt,
        UnaryOp::Rsqrt => U::Rsqrt,
        UnaryOp::Square => U::Square,
        UnaryOp::Sin => U::Sin,
        UnaryOp::Cos => U::Cos,
        UnaryOp::Floor => U::Floor,
        UnaryOp::Ceil => U::Ceil,
        UnaryOp::Round => U::Round,
        UnaryOp::Sign => U::Sign,
        // Refused for float by `supports`; bools take the logical path in `build`.
        UnaryOp::LogicalNot => U::Sign,
    }
}

fn binary_kind(b: BinaryOp) -> K {
    match b {
        BinaryOp::Add => K::Add,
        BinaryOp::Sub => K::Sub,
        BinaryOp::Mul => K::Mul,
        BinaryOp::Div => K::Div,
        BinaryOp::Pow => K::Pow,
        BinaryOp::SquaredDifference => K::SquaredDifference,
        BinaryOp::Maximum => K::Maximum,
        BinaryOp::Minimum => K::Minimum,
        BinaryOp::FloorDiv => K::FloorDiv,
        BinaryOp::FloorMod => K::FloorMod,
    }
}

/// Integer unary ops (ABS, NEG, SQUARE, SIGN on int32 / int64), wrapping like two's complement.
fn unary_int<T: Copy + Ord + Default + num_like::Wrapping>(u: UnaryOp, x: &[T], out: &mut [T]) {
    let zero = T::default();
    for (o, &v) in out.iter_mut().zip(x) {
        *o = match u {
            UnaryOp::Abs => if v < zero { v.neg_w() } else { v },
            UnaryOp::Neg => v.neg_w(),
            UnaryOp::Square => v.mul_w(v),
            _ => if v > zero { T::one() } else if v < zero { T::one().neg_w() } else { zero },
        };
    }
}

mod num_like {
    /// The wrapping arithmetic the integer unary ops need.
    pub trait Wrapping {
        fn neg_w(self) -> Self;
        fn mul_w(self, b: Self) -> Self;
        fn one() -> Self;
    }
    macro_rules! imp {
        ($t:ty) => {
            impl Wrapping for $t {
                fn neg_w(self) -> Self {
                    self.wrapping_neg()
                }
                fn mul_w(self, b: Self) -> Self {
                    self.wrapping_mul(b)
                }
                fn one() -> Self {
                    1
                }
            }
        };
    }
    imp!(i32);
    imp!(i64);
}

/// Integer division by zero and a negative integer exponent fail the op, as in TFLite.
fn check_divisor<T: Copy + Default + PartialOrd>(op: BinaryOp, b: &[T]) -> Result<(), String> {
    if matches!(op, BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::FloorMod) && b.iter().any(|&v| v == T::default()) {
        return Err("integer division by zero".into());
    }
    if op == BinaryOp::Pow && b.iter().any(|&v| v < T::default()) {
        return Err("integer POW with a negative exponent (TFLite supports only exponents >= 0)".into());
    }
    Ok(())
}

/// The fused activation of an integer op as bounds (TFLite's `CalculateActivationRange`).
fn int_bounds(act: Activation) -> (i64, i64) {
    match act {
        Activation::Relu => (0, i64::MAX),
        Activation::Relu6 => (0, 6),
        Activation::ReluN1To1 => (-1, 1),
        _ => (i64::MIN, i64::MAX),
    }
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let inputs = sources(ctx, id);
    match &op.kind {
        OpKind::Binary { op: b, act } if ctx.graph.operand(op.outputs[0]).dtype != DType::F32 => {
            let (k, b, (lo, hi)) = (binary_kind(*b), *b, int_bounds(*act));
            let dtype = ctx.graph.operand(op.outputs[0]).dtype;
            Ok(built(inputs, move |ins, outs| {
                let dims = outs[0].dims;
                if dtype == DType::I64 {
                    let (x, y) = (cast::<i64>(ins[0].bytes)?, cast::<i64>(ins[1].bytes)?);
                    check_divisor(b, y)?;
                    let out = cast_mut::<i64>(outs[0].bytes)?;
                    binary_i64(k, x, ins[0].dims, y, ins[1].dims, out, dims);
                    out.iter_mut().for_each(|v| *v = (*v).clamp(lo, hi));
                } else {
                    let (x, y) = (cast::<i32>(ins[0].bytes)?, cast::<i32>(ins[1].bytes)?);
                    check_divisor(b, y)?;
                    let out = cast_mut::<i32>(outs[0].bytes)?;
                    binary_i32(k, x, ins[0].dims, y, ins[1].dims, out, dims);
                    out.iter_mut().for_each(|v| *v = (*v as i64).clamp(lo, hi) as i32);
                }
                Ok(())
            }))
        }
        OpKind::Binary { op: b, act } => {
            let k = binary_kind(*b);
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
        OpKind::Unary(UnaryOp::LogicalNot) => Ok(built(inputs, |ins, outs| {
            logical_not(ins[0].bytes, outs[0].bytes);
            Ok(())
        })),
        OpKind::Unary(u) if ctx.graph.operand(op.outputs[0]).dtype != DType::F32 => {
            let (u, dtype) = (*u, ctx.graph.operand(op.outputs[0]).dtype);
            Ok(built(inputs, move |ins, outs| {
                match dtype {
                    DType::I64 => unary_int(u, cast::<i64>(ins[0].bytes)?, cast_mut::<i64>(outs[0].bytes)?),
                    _ => unary_int(u, cast::<i32>(ins[0].bytes)?, cast_mut::<i32>(outs[0].bytes)?),
                }
                Ok(())
            }))
        }
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
