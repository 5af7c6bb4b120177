//! Element-wise binary ops with broadcasting (float32, int32, int64, and uint8 / int8 / int16
//! quantized with TFLite's fixed-point arithmetic) and unary ops and activations (float32, the
//! integer ABS / NEG / SQUARE / SIGN, LOGICAL_NOT, quantized RELUs, LEAKY_RELU, HARD_SWISH and
//! 8-bit LOGISTIC / TANH tables, int16 LOGISTIC / TANH).

use nnrt_core::{cast, cast_mut, Activation, BinaryOp, CompileCtx, DType, Numerics, OpId, OpKind, TensorMut, TensorRef, UnaryOp};

use super::util::{QuantIo, check_act, check_all_params, dtype, first_input_quantized, fused, input, qp, source, sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::binary::{binary, binary_i32, binary_i64, broadcast_rows, map_row, BinaryOp as K};
use crate::kernels::compare::logical_not;
use crate::kernels::unary::{unary, UnaryOp as U};
use crate::quant::activation::{HardSwishQ, LeakyReluQ, Lut8, ReluQ};
use crate::quant::binary::{QBinary, QBinaryOp};
use crate::quant::sigmoid16::Sigmoid16;
use crate::quant::unary::QUnary;
use crate::quant::QInt;

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Binary { act, .. } => {
            check_act(*act)?;
            match plain_dtype(ctx, id)? {
                DType::F32 => Ok(()),
                DType::I32 | DType::I64 if *act != Activation::Tanh => Ok(()),
                // Plain int8 / int16 (TOSA's CLAMP and MAXIMUM / MINIMUM): the bounds only.
                DType::I8 | DType::I16 if *act == Activation::None && matches!(op.kind, OpKind::Binary { op: BinaryOp::Maximum | BinaryOp::Minimum, .. }) => Ok(()),
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
        _ => Err("not an element-wise op".into()),
    }
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    check_all_params(ctx, id)?;
    let op = ctx.graph.op(id);
    let int16_sigmoid = matches!(op.kind, OpKind::Unary(UnaryOp::Logistic | UnaryOp::Tanh)) && op.input(0).map(|x| dtype(ctx, x)) == Some(DType::I16);
    if int16_sigmoid {
        return sigmoid16(ctx, id).map(|_| ());
    }
    let out = op.outputs.first().copied().ok_or("the op has no output")?;
    let in0 = input(ctx, id, 0)?;
    let (xt, ot) = (dtype(ctx, in0), dtype(ctx, out));
    match &op.kind {
        OpKind::Binary { op: b, .. } => {
            let y = input(ctx, id, 1)?;
            if matches!(b, BinaryOp::Maximum | BinaryOp::Minimum) {
                return if xt == dtype(ctx, y) && xt == ot { Ok(()) } else { Err(format!("quantized {} needs one type", op.kind.name())) };
            }
            if *b == BinaryOp::SquaredDifference && xt != DType::I8 {
                // As TFLite: its quantized kernel is int8 only.
                return Err(format!("quantized SquaredDifference on {xt} is not supported (int8 is)"));
            }
            if !matches!(b, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::SquaredDifference) {
                return Err(format!("quantized {} is not supported", op.kind.name()));
            }
            if xt != dtype(ctx, y) || xt != ot {
                return Err(format!(
                    "quantized {} needs one integer type, got {xt}, {}, {ot}",
                    op.kind.name(),
                    dtype(ctx, y)
                ));
            }
            qp(ctx, y)?;
            qp(ctx, out)?;
            Ok(())
        }
        OpKind::Unary(u) => match u {
            UnaryOp::Logistic | UnaryOp::Tanh | UnaryOp::HardSwish if matches!(xt, DType::U8 | DType::I8) && xt == ot => {
                Ok(())
            }
            _ if relu_bounds(u).is_some() && xt == ot => qp(ctx, out).map(|_| ()),
            UnaryOp::LeakyRelu(_) if xt == ot => qp(ctx, out).map(|_| ()),
            _ if xt == ot && crate::quant::unary::supported(*u, xt) => QUnary::new(*u, xt, qp(ctx, in0)?, qp(ctx, out)?).map(|_| ()),
            _ => Err(format!("quantized {} on {xt} is not supported", op.kind.name())),
        },
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
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
        UnaryOp::Erf => U::Erf,
        // Refused for float by `supports`; bools take the logical path in `build`.
        UnaryOp::LogicalNot => U::Sign,
    }
}

pub(super) fn binary_kind(b: BinaryOp) -> K {
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

/// The real clamp of a RELU-family op.
fn relu_bounds(u: &UnaryOp) -> Option<(f32, f32)> {
    match u {
        UnaryOp::Relu => Some((0.0, f32::INFINITY)),
        UnaryOp::Relu6 => Some((0.0, 6.0)),
        UnaryOp::ReluN1To1 => Some((-1.0, 1.0)),
        UnaryOp::Relu0To1 => Some((0.0, 1.0)),
        _ => None,
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

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let inputs = sources(ctx, id);
    match &op.kind {
        OpKind::Binary { op: b, act } if ctx.graph.operand(op.outputs[0]).dtype != DType::F32 => {
            let (k, b, (lo, hi)) = (binary_kind(*b), *b, int_bounds(*act));
            let dtype = ctx.graph.operand(op.outputs[0]).dtype;
            Ok(built(inputs, move |ins, outs| {
                let dims = outs[0].dims;
                if matches!(dtype, DType::I8 | DType::I16) {
                    // Maximum / Minimum only (see `supports`): widened to int32, exact.
                    let widen = |b: &[u8]| -> Result<Vec<i32>, String> {
                        Ok(if dtype == DType::I8 { cast::<i8>(b)?.iter().map(|&v| i32::from(v)).collect() } else { cast::<i16>(b)?.iter().map(|&v| i32::from(v)).collect() })
                    };
                    let (x, y) = (widen(ins[0].bytes)?, widen(ins[1].bytes)?);
                    let mut wide = vec![0i32; dims.iter().product()];
                    binary_i32(k, &x, ins[0].dims, &y, ins[1].dims, &mut wide, dims);
                    if dtype == DType::I8 {
                        cast_mut::<i8>(outs[0].bytes)?.iter_mut().zip(&wide).for_each(|(o, &v)| *o = v as i8);
                    } else {
                        cast_mut::<i16>(outs[0].bytes)?.iter_mut().zip(&wide).for_each(|(o, &v)| *o = v as i16);
                    }
                } else if dtype == DType::I64 {
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
        OpKind::Unary(u) => {
            let k = unary_kind(*u);
            Ok(built(inputs, move |ins, outs| {
                unary(k, cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }))
        }
        _ => Err("not an element-wise op".into()),
    }
}

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { x: in0, out, xt, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Unary(UnaryOp::Logistic | UnaryOp::Tanh) if xt == DType::I16 => {
            let s = sigmoid16(ctx, id)?;
            Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                s.run(cast::<i16>(ins[0].bytes)?, cast_mut::<i16>(outs[0].bytes)?);
                Ok(())
            }))
        }
        OpKind::Binary { op: b, .. } if matches!(b, BinaryOp::Maximum | BinaryOp::Minimum) => {
            // TFLite compares the raw integers (inputs and output share their quantization).
            let max = *b == BinaryOp::Maximum;
            by_qtype!(xt, |T| Ok(built(sources(ctx, id), move |ins, outs| {
                let (a, b) = (cast::<T>(ins[0].bytes)?, cast::<T>(ins[1].bytes)?);
                let od = outs[0].dims;
                let out = cast_mut::<T>(outs[0].bytes)?;
                broadcast_rows(a, ins[0].dims, b, ins[1].dims, out, od, |ra, rb, o| {
                    map_row(ra, rb, o, |x: T, y: T| T::put(if max { x.get().max(y.get()) } else { x.get().min(y.get()) }))
                });
                Ok(())
            })))
        }
        OpKind::Binary { op: b, act } => {
            let k = match b {
                BinaryOp::Add => QBinaryOp::Add,
                BinaryOp::Sub => QBinaryOp::Sub,
                BinaryOp::SquaredDifference => QBinaryOp::SquaredDifference,
                _ => QBinaryOp::Mul,
            };
            let y = input(ctx, id, 1)?;
            let (aq, bq, oq) = (qp(ctx, in0)?, qp(ctx, y)?, qp(ctx, out)?);
            by_qtype!(xt, |T| {
                let p = if ctx.graph.numerics == Numerics::ExecuTorch { QBinary::xnnpack::<T>(k, aq, bq, oq, *act) } else { QBinary::new::<T>(k, aq, bq, oq, *act) };
                // 8-bit ops of 32K values or more: every output by its input bytes, tabulated
                // on the first run (64 KiB) and looked up from then on.
                let table = std::sync::OnceLock::new();
                Ok(built(sources(ctx, id), move |ins, outs| {
                    let dims = outs[0].dims;
                    let (a, b) = (cast::<T>(ins[0].bytes)?, cast::<T>(ins[1].bytes)?);
                    // The AVX-512 or AVX2 lanes first (they need no table); the table for what
                    // they do not take.
                    if p.run_lanes::<T, T>(a, ins[0].dims, b, ins[1].dims, cast_mut::<T>(outs[0].bytes)?, dims) {
                        return Ok(());
                    }
                    if outs[0].bytes.len() >= 1 << 15 {
                        if let Some(t) = table.get_or_init(|| p.table2::<T, T>()) {
                            let (a, b) = (cast::<T>(ins[0].bytes)?, cast::<T>(ins[1].bytes)?);
                            p.run_table2::<T, T>(t, a, ins[0].dims, b, ins[1].dims, cast_mut::<T>(outs[0].bytes)?, dims);
                            return Ok(());
                        }
                    }
                    p.run::<T, T>(
                        cast::<T>(ins[0].bytes)?,
                        ins[0].dims,
                        cast::<T>(ins[1].bytes)?,
                        ins[1].dims,
                        cast_mut::<T>(outs[0].bytes)?,
                        dims,
                    );
                    Ok(())
                }))
            })
        }
        OpKind::Unary(u) if relu_bounds(u).is_some() => {
            let bounds = relu_bounds(u).unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
            let (iq, oq) = (qp(ctx, in0)?, qp(ctx, out)?);
            by_qtype!(xt, |T| {
                let r = ReluQ::new::<T>(iq, oq, bounds);
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    for (o, &x) in cast_mut::<T>(outs[0].bytes)?.iter_mut().zip(cast::<T>(ins[0].bytes)?) {
                        *o = r.apply(x);
                    }
                    Ok(())
                }))
            })
        }
        OpKind::Unary(UnaryOp::LeakyRelu(alpha)) => {
            let r = LeakyReluQ::new(qp(ctx, in0)?, qp(ctx, out)?, *alpha);
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                for (o, &x) in cast_mut::<T>(outs[0].bytes)?.iter_mut().zip(cast::<T>(ins[0].bytes)?) {
                    *o = r.apply(x);
                }
                Ok(())
            })))
        }
        OpKind::Unary(u) if !matches!(u, UnaryOp::Logistic | UnaryOp::Tanh | UnaryOp::HardSwish) => {
            let k = QUnary::new(*u, xt, qp(ctx, in0)?, qp(ctx, out)?)?;
            Ok(built(vec![source(ctx, in0)], move |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]| k.run(ins[0].bytes, outs[0].bytes)))
        }
        OpKind::Unary(u) => {
            let (iq, oq) = (qp(ctx, in0)?, qp(ctx, out)?);
            if *u == UnaryOp::HardSwish {
                let h = HardSwishQ::new(iq, oq);
                return by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    for (o, &x) in cast_mut::<T>(outs[0].bytes)?.iter_mut().zip(cast::<T>(ins[0].bytes)?) {
                        *o = h.apply(x);
                    }
                    Ok(())
                })));
            }
            let lut = by_qtype!(xt, |T| if *u == UnaryOp::Logistic {
                Lut8::logistic::<T>(iq, oq)
            } else {
                Lut8::tanh::<T>(iq, oq)
            });
            Ok(built(vec![source(ctx, in0)], move |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]| {
                lut.run(ins[0].bytes, outs[0].bytes);
                Ok(())
            }))
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["Add", "Sub", "Mul", "Div", "Pow", "SquaredDifference", "Maximum", "Minimum", "FloorDiv", "FloorMod"], supports, build, (first_input_quantized, supports_quantized, build_quantized));
    r.ops_with_int(&["Relu", "Relu6", "ReluN1To1", "Relu0To1", "Tanh", "Logistic", "HardSwish", "LeakyRelu", "Elu", "Gelu"], supports, build, (first_input_quantized, supports_quantized, build_quantized));
    r.ops_with_int(&["Abs", "Neg", "Exp", "Log", "Sqrt", "Rsqrt", "Square", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "LogicalNot", "Erf"], supports, build, (first_input_quantized, supports_quantized, build_quantized));
}
