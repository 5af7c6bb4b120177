//! Element-wise operators, activations, comparisons, reductions and CAST.
//!
//! Binary ops broadcast like nnrt's (TOSA requires equal ranks, so numpy rules agree). CLAMP
//! becomes the matching activation when its bounds are a known one, else MAXIMUM then MINIMUM
//! with its bounds as constants (its `min_val`/`max_val` bytes are already in the input type).

use nnrt_core::{Activation, BinaryOp, CompareOp, DType, LoadError, LogicalOp, OpKind, ReduceOp, UnaryOp};

use super::{is_float, BlockBuilder, Op};
use crate::generated::tosa;

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    use tosa::Op as T;
    let binary = |op| OpKind::Binary { op, act: Activation::None };
    match o.kind {
        T::ADD | T::SUB | T::MAXIMUM | T::MINIMUM | T::POW | T::MUL => {
            let (x, y, out) = (o.input(b, 0)?, o.input(b, 1)?, o.output(b, 0)?);
            if o.kind == T::MUL && !is_float(o.input_type(b, 0)?) {
                // Integer MUL: widening products and the rounding shift (IntMul).
                let shift = o.input(b, 2)?;
                if b.const_bytes(shift).is_none() {
                    return Err(o.unsupported(b, "MUL with a shift computed at run time is not mapped"));
                }
                b.emit_all(OpKind::IntMul, &[x, y, shift], vec![out]);
                return Ok(());
            }
            if b.dtype(x) != b.dtype(out) {
                return Err(b.err(format!("{} has {} operands and a {} result", o.name(), b.dtype(x), b.dtype(out))));
            }
            if o.kind == T::POW && !is_float(o.input_type(b, 0)?) {
                return Err(o.unsupported(b, ""));
            }
            let op = match o.kind {
                T::ADD => BinaryOp::Add,
                T::SUB => BinaryOp::Sub,
                T::MAXIMUM => BinaryOp::Maximum,
                T::MINIMUM => BinaryOp::Minimum,
                T::POW => BinaryOp::Pow,
                _ => BinaryOp::Mul,
            };
            b.emit_all(binary(op), &[x, y], vec![out]);
        }
        T::EQUAL | T::GREATER | T::GREATER_EQUAL => {
            let op = match o.kind {
                T::EQUAL => CompareOp::Equal,
                T::GREATER => CompareOp::Greater,
                _ => CompareOp::GreaterEqual,
            };
            let (x, y, out) = (o.input(b, 0)?, o.input(b, 1)?, o.output(b, 0)?);
            b.emit_all(OpKind::Compare(op), &[x, y], vec![out]);
        }
        T::LOGICAL_AND | T::LOGICAL_OR => {
            let op = if o.kind == T::LOGICAL_AND { LogicalOp::And } else { LogicalOp::Or };
            let (x, y, out) = (o.input(b, 0)?, o.input(b, 1)?, o.output(b, 0)?);
            b.emit_all(OpKind::Logical(op), &[x, y], vec![out]);
        }
        T::LOGICAL_XOR => {
            // On booleans, a xor b is a != b.
            let (x, y, out) = (o.input(b, 0)?, o.input(b, 1)?, o.output(b, 0)?);
            b.emit_all(OpKind::Compare(CompareOp::NotEqual), &[x, y], vec![out]);
        }
        T::NEGATE if !is_float(o.input_type(b, 0)?) => super::integer::negate(b, o)?,
        T::SELECT => {
            let (c, x, y, out) = (o.input(b, 0)?, o.input(b, 1)?, o.input(b, 2)?, o.output(b, 0)?);
            b.emit_all(OpKind::Select { v2: true }, &[c, x, y], vec![out]);
        }
        T::LOGICAL_NOT => {
            let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
            b.emit_all(OpKind::Unary(UnaryOp::LogicalNot), &[x], vec![out]);
        }
        T::ABS | T::CEIL | T::COS | T::EXP | T::FLOOR | T::LOG | T::NEGATE | T::RSQRT | T::SIN | T::SIGMOID | T::TANH | T::ERF => {
            let ty = o.input_type(b, 0)?;
            let int_ok = matches!(o.kind, T::ABS) && ty == tosa::DType::INT32;
            if !is_float(ty) && !int_ok {
                return Err(o.unsupported(b, "the integer form is not mapped yet"));
            }
            let op = match o.kind {
                T::ABS => UnaryOp::Abs,
                T::CEIL => UnaryOp::Ceil,
                T::COS => UnaryOp::Cos,
                T::EXP => UnaryOp::Exp,
                T::FLOOR => UnaryOp::Floor,
                T::LOG => UnaryOp::Log,
                T::NEGATE => UnaryOp::Neg,
                T::RSQRT => UnaryOp::Rsqrt,
                T::SIN => UnaryOp::Sin,
                T::SIGMOID => UnaryOp::Logistic,
                T::TANH => UnaryOp::Tanh,
                _ => UnaryOp::Erf,
            };
            let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
            b.emit_all(OpKind::Unary(op), &[x], vec![out]);
        }
        T::RECIPROCAL => {
            if o.input_type(b, 0)? != tosa::DType::FP32 {
                return Err(o.unsupported(b, ""));
            }
            let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
            let rank = b.dims(x).len();
            let one = b.constant(DType::F32, &vec![1; rank], 1f32.to_le_bytes().to_vec());
            b.emit_all(binary(BinaryOp::Div), &[one, x], vec![out]);
        }
        T::CLAMP => clamp(b, o)?,
        T::ARGMAX => argmax(b, o)?,
        T::REDUCE_ALL | T::REDUCE_ANY | T::REDUCE_MAX | T::REDUCE_MIN | T::REDUCE_PRODUCT | T::REDUCE_SUM => {
            let (op, axis) = match o.kind {
                T::REDUCE_ALL => (ReduceOp::All, o.t.attribute_as_reduce_all_attribute().map(|a| a.axis())),
                T::REDUCE_ANY => (ReduceOp::Any, o.t.attribute_as_reduce_any_attribute().map(|a| a.axis())),
                T::REDUCE_MAX => (ReduceOp::Max, o.t.attribute_as_reduce_max_attribute().map(|a| a.axis())),
                T::REDUCE_MIN => (ReduceOp::Min, o.t.attribute_as_reduce_min_attribute().map(|a| a.axis())),
                T::REDUCE_PRODUCT => (ReduceOp::Prod, o.t.attribute_as_reduce_product_attribute().map(|a| a.axis())),
                _ => (ReduceOp::Sum, o.t.attribute_as_reduce_sum_attribute().map(|a| a.axis())),
            };
            let axis = o.attr(b, axis, "a reduction attribute")?;
            // REDUCE_MAX / REDUCE_MIN's NaN mode (PROPAGATE unless the attribute says IGNORE).
            let propagate = match o.kind {
                T::REDUCE_MAX => o.t.attribute_as_reduce_max_attribute().map(|a| a.nan_mode()),
                T::REDUCE_MIN => o.t.attribute_as_reduce_min_attribute().map(|a| a.nan_mode()),
                _ => None,
            } != Some(tosa::NanPropagationMode::IGNORE);
            let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
            if axis < 0 || axis as usize >= b.dims(x).len() {
                return Err(b.err(format!("axis {axis} is outside the input's {} dims", b.dims(x).len())));
            }
            let axes = b.const_i32(&[axis]);
            if matches!(op, ReduceOp::Max | ReduceOp::Min) && matches!(b.dtype(x), DType::I8 | DType::I16) {
                // nnrt reduces int32: widen, reduce, narrow (exact, the result is an input value).
                let (xd, od) = (b.dims(x), b.dims(out));
                let (wide, red) = (b.temp(DType::I32, &xd), b.temp(DType::I32, &od));
                b.emit_all(OpKind::Cast, &[x], vec![wide]);
                b.emit_all(OpKind::Reduce { op, keep_dims: true }, &[wide, axes], vec![red]);
                b.emit_all(OpKind::Cast, &[red], vec![out]);
                return Ok(());
            }
            if matches!(op, ReduceOp::Max | ReduceOp::Min) && b.dtype(x) == DType::F32 {
                return float_extreme(b, x, axes, out, op == ReduceOp::Max, propagate);
            }
            b.emit_all(OpKind::Reduce { op, keep_dims: true }, &[x, axes], vec![out]);
        }
        T::CAST => {
            let (from, to) = (o.input_type(b, 0)?, b.tosa_type(o.outputs.first().copied().unwrap_or_default())?);
            if is_float(from) && !is_float(to) {
                return float_to_int(b, o, from, to);
            }
            // Integer to integer sign-extends or keeps the low bits (TOSA's truncate), as
            // nnrt's Cast does.
            let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
            b.emit_all(OpKind::Cast, &[x], vec![out]);
        }
        _ => return Err(o.unsupported(b, "")),
    }
    Ok(())
}

fn clamp(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let a = o.attr(b, o.t.attribute_as_clamp_attribute(), "ClampAttribute")?;
    let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
    let dtype = b.dtype(x);
    let size = dtype.size();
    let (mut lo, mut hi) = (a.min_val().map(|v| v.bytes().to_vec()).unwrap_or_default(), a.max_val().map(|v| v.bytes().to_vec()).unwrap_or_default());
    // tosa-opt pads each bound to 8 bytes; the value is the first element.
    if lo.len() < size || hi.len() < size {
        return Err(b.err(format!("CLAMP bounds are {} and {} bytes; one {dtype} ({size} bytes) each expected", lo.len(), hi.len())));
    }
    lo.truncate(size);
    hi.truncate(size);
    // A NaN input gives NaN under PROPAGATE and min_val under IGNORE (the specification's
    // apply_clip_s). nnrt's float Maximum / Minimum return their second operand when one is a
    // NaN, so the operand order chooses: (bound, x) keeps the NaN, (x, bound) the bound. The
    // ReLU activations (which a convolution before them absorbs) return the bound for a NaN:
    // they stand for the CLAMPs they match in either mode, for speed; under PROPAGATE a NaN
    // then becomes the lower bound.
    let propagate = a.nan_mode() != tosa::NanPropagationMode::IGNORE;
    if dtype == DType::F32 {
        let f = |v: &[u8]| f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
        let (l, h) = (f(&lo), f(&hi));
        let act = match (l, h) {
            (0.0, 6.0) => Some(UnaryOp::Relu6),
            (-1.0, 1.0) => Some(UnaryOp::ReluN1To1),
            (0.0, 1.0) => Some(UnaryOp::Relu0To1),
            (0.0, h) if h == f32::MAX || h == f32::INFINITY => Some(UnaryOp::Relu),
            _ => None,
        };
        if let Some(u) = act {
            b.emit_all(OpKind::Unary(u), &[x], vec![out]);
            return Ok(());
        }
    }
    let rank = b.dims(x).len();
    let ones = vec![1; rank];
    let (lo_c, hi_c) = (b.constant(dtype, &ones, lo), b.constant(dtype, &ones, hi));
    let mid = b.temp(dtype, &b.dims(x));
    let keep_nan = propagate && dtype == DType::F32;
    let (max_in, min_in) = if keep_nan { ([lo_c, x], [hi_c, mid]) } else { ([x, lo_c], [mid, hi_c]) };
    b.emit_all(OpKind::Binary { op: BinaryOp::Maximum, act: Activation::None }, &max_in, vec![mid]);
    b.emit_all(OpKind::Binary { op: BinaryOp::Minimum, act: Activation::None }, &min_in, vec![out]);
    Ok(())
}

/// CAST from float32 to int8 / int16 / int32: TOSA rounds half to even and saturates. Round
/// (ties to even), clip to the target's range in float (exact for these bounds), then Cast,
/// which is exact on integral values in range.
fn float_to_int(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>, from: tosa::DType, to: tosa::DType) -> Result<(), LoadError> {
    let (lo, hi) = match to {
        tosa::DType::INT8 => (-128.0f32, 127.0f32),
        tosa::DType::INT16 => (-32768.0, 32767.0),
        // float32 to int32 saturates in nnrt's Cast.
        tosa::DType::INT32 => (f32::MIN, f32::MAX),
        _ => return Err(o.unsupported(b, "float CAST to this type is not mapped")),
    };
    if from != tosa::DType::FP32 {
        return Err(o.unsupported(b, "only float32 is cast to integers"));
    }
    let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
    let dims = b.dims(x);
    let mut r = b.temp(DType::F32, &dims);
    b.emit_all(OpKind::Unary(UnaryOp::Round), &[x], vec![r]);
    if to != tosa::DType::INT32 {
        let ones = vec![1; dims.len()];
        let (l, h) = (b.constant(DType::F32, &ones, lo.to_le_bytes().to_vec()), b.constant(DType::F32, &ones, hi.to_le_bytes().to_vec()));
        let (m, c) = (b.temp(DType::F32, &dims), b.temp(DType::F32, &dims));
        b.emit_all(OpKind::Binary { op: BinaryOp::Maximum, act: Activation::None }, &[r, l], vec![m]);
        b.emit_all(OpKind::Binary { op: BinaryOp::Minimum, act: Activation::None }, &[m, h], vec![c]);
        r = c;
    }
    b.emit_all(OpKind::Cast, &[r], vec![out]);
    Ok(())
}

/// ARGMAX: nnrt's ArgMax (the first maximum; the first NaN under PROPAGATE). Under IGNORE a
/// float input's NaNs become -inf first, so they lose to every number (when every value is a
/// NaN or -inf the index is that of the first of them rather than of the first -inf).
fn argmax(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let a = o.attr(b, o.t.attribute_as_arg_max_attribute(), "ArgMaxAttribute")?;
    let ty = o.input_type(b, 0)?;
    if !matches!(ty, tosa::DType::INT8 | tosa::DType::INT16 | tosa::DType::FP32) {
        return Err(o.unsupported(b, "ARGMAX takes int8, int16 or fp32"));
    }
    let (mut x, out) = (o.input(b, 0)?, o.output(b, 0)?);
    let dims = b.dims(x);
    let axis = a.axis();
    if axis < 0 || axis as usize >= dims.len() {
        return Err(b.err(format!("ARGMAX axis {axis} is outside the rank-{} input", dims.len())));
    }
    if ty == tosa::DType::FP32 && a.nan_mode() == tosa::NanPropagationMode::IGNORE {
        let ones = vec![1; dims.len()];
        let low = b.constant(DType::F32, &ones, f32::NEG_INFINITY.to_le_bytes().to_vec());
        let (is_num, y) = (b.temp(DType::Bool, &dims), b.temp(DType::F32, &dims));
        b.emit_all(OpKind::Compare(CompareOp::Equal), &[x, x], vec![is_num]);
        b.emit_all(OpKind::Select { v2: true }, &[is_num, x, low], vec![y]);
        x = y;
    }
    let ax = b.const_i32(&[axis]);
    b.emit_all(OpKind::ArgMinMax { max: true }, &[x, ax], vec![out]);
    Ok(())
}

/// Float REDUCE_MAX / REDUCE_MIN as TOSA defines them. nnrt's reduction (TFLite's) skips NaNs
/// and starts from the lowest (highest) finite value, so it is exact whenever some value lies
/// above -inf (below +inf); otherwise TOSA gives -inf (+inf), or NaN when every value is NaN.
/// PROPAGATE mode gives NaN for any NaN in the reduced row; IGNORE skips them.
fn float_extreme(b: &mut BlockBuilder<'_, '_>, x: nnrt_core::OperandId, axes: nnrt_core::OperandId, out: nnrt_core::OperandId, max: bool, propagate: bool) -> Result<(), LoadError> {
    let (xd, od) = (b.dims(x), b.dims(out));
    let ones = vec![1; xd.len()];
    let scalar = |b: &mut BlockBuilder<'_, '_>, v: f32| b.constant(DType::F32, &ones, v.to_le_bytes().to_vec());
    let (edge, nan) = (scalar(b, if max { f32::NEG_INFINITY } else { f32::INFINITY }), scalar(b, f32::NAN));
    let m = b.temp(DType::F32, &od);
    b.emit_all(OpKind::Reduce { op: if max { ReduceOp::Max } else { ReduceOp::Min }, keep_dims: true }, &[x, axes], vec![m]);
    // Some value above -inf (below +inf): NaN compares false.
    let (inside, any_inside) = (b.temp(DType::Bool, &xd), b.temp(DType::Bool, &od));
    b.emit_all(OpKind::Compare(if max { CompareOp::Greater } else { CompareOp::Less }), &[x, edge], vec![inside]);
    b.emit_all(OpKind::Reduce { op: ReduceOp::Any, keep_dims: true }, &[inside, axes], vec![any_inside]);
    let (is_nan, nans) = (b.temp(DType::Bool, &xd), b.temp(DType::Bool, &od));
    b.emit_all(OpKind::Compare(CompareOp::NotEqual), &[x, x], vec![is_nan]);
    b.emit_all(OpKind::Reduce { op: if propagate { ReduceOp::Any } else { ReduceOp::All }, keep_dims: true }, &[is_nan, axes], vec![nans]);
    let t = b.temp(DType::F32, &od);
    if propagate {
        // NaN if any; else the reduction where a value is inside, the edge otherwise.
        b.emit_all(OpKind::Select { v2: true }, &[any_inside, m, edge], vec![t]);
        b.emit_all(OpKind::Select { v2: true }, &[nans, nan, t], vec![out]);
    } else {
        // The reduction where a value is inside; else NaN if all are NaN, the edge otherwise.
        b.emit_all(OpKind::Select { v2: true }, &[nans, nan, edge], vec![t]);
        b.emit_all(OpKind::Select { v2: true }, &[any_inside, m, t], vec![out]);
    }
    Ok(())
}
