//! Elementwise arithmetic, comparisons, logic and selection: `add`/`sub` (with `alpha`),
//! `mul`, `div` (true, floor and trunc), `remainder`, `fmod`, `floor_divide`, `pow`,
//! `maximum`/`minimum`, `eq`/`ne`/`lt`/`le`/`gt`/`ge`, `logical_*`, `where`, `masked_fill`.
//! Tensor and Scalar overloads alike; inputs are converted to the type the out tensor declares
//! (comparisons: to the promoted type of their operands).

use nnrt_core::{BinaryOp, CompareOp, DType, LoadError, LogicalOp, OpKind, OperandId, UnaryOp};

use super::{binary, broadcast, promote, unary, Convert};
use crate::pte::method::{MethodBuilder, Scalar};

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "aten::add.out" => |b, a| add_sub(b, a, BinaryOp::Add, false),
        "aten::add.Scalar_out" => |b, a| add_sub(b, a, BinaryOp::Add, true),
        "aten::sub.out" => |b, a| add_sub(b, a, BinaryOp::Sub, false),
        "aten::sub.Scalar_out" => |b, a| add_sub(b, a, BinaryOp::Sub, true),
        "aten::rsub.Scalar_out" => rsub,
        "aten::mul.out" | "aten::mul.Scalar_out" => |b, a| simple(b, a, BinaryOp::Mul),
        "aten::maximum.out" => |b, a| simple(b, a, BinaryOp::Maximum),
        "aten::minimum.out" => |b, a| simple(b, a, BinaryOp::Minimum),
        "aten::pow.Tensor_Tensor_out" | "aten::pow.Tensor_Scalar_out" => |b, a| simple(b, a, BinaryOp::Pow),
        "aten::pow.Scalar_out" => pow_scalar_base,
        "aten::floor_divide.out" | "aten::floor_divide.Scalar_out" => |b, a| simple(b, a, BinaryOp::FloorDiv),
        "aten::remainder.Tensor_out" | "aten::remainder.Scalar_out" => remainder,
        "aten::fmod.Tensor_out" | "aten::fmod.Scalar_out" => fmod,
        "aten::div.out" | "aten::div.Scalar_out" => |b, a| div(b, a, false),
        "aten::div.out_mode" | "aten::div.Scalar_mode_out" => |b, a| div(b, a, true),
        "aten::eq.Tensor_out" | "aten::eq.Scalar_out" => |b, a| compare(b, a, CompareOp::Equal),
        "aten::ne.Tensor_out" | "aten::ne.Scalar_out" => |b, a| compare(b, a, CompareOp::NotEqual),
        "aten::lt.Tensor_out" | "aten::lt.Scalar_out" => |b, a| compare(b, a, CompareOp::Less),
        "aten::le.Tensor_out" | "aten::le.Scalar_out" => |b, a| compare(b, a, CompareOp::LessEqual),
        "aten::gt.Tensor_out" | "aten::gt.Scalar_out" => |b, a| compare(b, a, CompareOp::Greater),
        "aten::ge.Tensor_out" | "aten::ge.Scalar_out" => |b, a| compare(b, a, CompareOp::GreaterEqual),
        "aten::logical_and.out" => |b, a| logical(b, a, LogicalOp::And),
        "aten::logical_or.out" => |b, a| logical(b, a, LogicalOp::Or),
        "aten::logical_xor.out" => logical_xor,
        "aten::logical_not.out" => logical_not,
        "aten::bitwise_not.out" => bitwise_not,
        "aten::bitwise_and.Tensor_out" | "aten::bitwise_and.Scalar_out" => |b, a| bitwise(b, a, "and"),
        "aten::bitwise_or.Tensor_out" | "aten::bitwise_or.Scalar_out" => |b, a| bitwise(b, a, "or"),
        "aten::bitwise_xor.Tensor_out" | "aten::bitwise_xor.Scalar_out" => |b, a| bitwise(b, a, "xor"),
        "aten::where.self_out" => where_self,
        "aten::masked_fill.Scalar_out" => masked_fill,
        _ => return None,
    })
}

/// Argument `k` as an operand of `dtype`: a tensor converted, or a Scalar made a constant.
pub(super) fn operand_as(b: &mut MethodBuilder<'_, '_>, a: &[i64], k: usize, dtype: DType) -> Result<OperandId, LoadError> {
    if b.arg(a, k)?.val_as_tensor().is_some() {
        let x = b.tensor(a, k)?;
        return Ok(b.cast(x, dtype));
    }
    let s = b.scalar(a, k)?;
    b.const_scalar(dtype, s)
}

/// The type an argument computes in: its tensor type, or for a Scalar the kind it is.
fn arg_type(b: &mut MethodBuilder<'_, '_>, a: &[i64], k: usize, other: DType) -> Result<DType, LoadError> {
    if b.arg(a, k)?.val_as_tensor().is_some() {
        let x = b.tensor(a, k)?;
        return Ok(b.dtype(x));
    }
    // A Scalar takes the tensor's type unless it is a float next to an integer tensor.
    Ok(match b.scalar(a, k)? {
        Scalar::Double(_) if !other.is_float() => DType::F32,
        Scalar::Int(_) if other == DType::Bool => DType::I64,
        _ => other,
    })
}

/// Writes `y` into out-argument `k`, converting the type when the program declares another.
fn finish(b: &mut MethodBuilder<'_, '_>, a: &[i64], k: usize, y: OperandId) -> Result<(), LoadError> {
    let out = b.out(a, k)?;
    super::copy_into(b, y, out);
    Ok(())
}

fn simple(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: BinaryOp) -> Result<(), LoadError> {
    let out_t = b.arg(a, 2)?.val_as_tensor().and_then(|t| crate::pte::method::dtype_of(t.scalar_type())).unwrap_or(DType::F32);
    let x = operand_as(b, a, 0, out_t)?;
    let y = operand_as(b, a, 1, out_t)?;
    let r = binary(b, op, x, y);
    finish(b, a, 2, r)
}

fn out_type(b: &MethodBuilder<'_, '_>, a: &[i64], k: usize) -> Result<DType, LoadError> {
    let t = b.arg(a, k)?.val_as_tensor().ok_or_else(|| b.err(format!("argument {k} must be the out Tensor")))?;
    crate::pte::method::dtype_of(t.scalar_type()).ok_or_else(|| b.err(format!("argument {k} has a type nnrt does not support")))
}

/// `add(self, other, alpha)` = self + alpha * other (and `sub` likewise).
fn add_sub(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: BinaryOp, _scalar: bool) -> Result<(), LoadError> {
    let dt = out_type(b, a, 3)?;
    let x = operand_as(b, a, 0, dt)?;
    let mut y = operand_as(b, a, 1, dt)?;
    let alpha = b.opt_scalar(a, 2)?.unwrap_or(Scalar::Int(1));
    if alpha.as_f64() != 1.0 {
        let k = b.const_scalar(dt, alpha)?;
        y = binary(b, BinaryOp::Mul, y, k);
    }
    let r = binary(b, op, x, y);
    finish(b, a, 3, r)
}

/// `rsub(self, other, alpha)` = other - alpha * self.
fn rsub(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let dt = out_type(b, a, 3)?;
    let mut x = operand_as(b, a, 0, dt)?;
    let y = operand_as(b, a, 1, dt)?;
    let alpha = b.opt_scalar(a, 2)?.unwrap_or(Scalar::Int(1));
    if alpha.as_f64() != 1.0 {
        let k = b.const_scalar(dt, alpha)?;
        x = binary(b, BinaryOp::Mul, x, k);
    }
    let r = binary(b, BinaryOp::Sub, y, x);
    finish(b, a, 3, r)
}

fn pow_scalar_base(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let dt = out_type(b, a, 2)?;
    let e = operand_as(b, a, 1, dt)?;
    let s = b.scalar(a, 0)?;
    let base = b.const_scalar(dt, s)?;
    // Broadcast the scalar base over the exponent's shape.
    let r = binary(b, BinaryOp::Pow, base, e);
    let dims = b.dims(e);
    b.g.operands[r.index()].default_dims = dims.clone();
    b.g.operands[r.index()].shape = nnrt_core::Shape::fixed(&dims);
    finish(b, a, 2, r)
}

/// `fmod`: the remainder with the dividend's sign, `x - trunc(x / y) * y`.
fn fmod(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let dt = out_type(b, a, 2)?;
    let x = operand_as(b, a, 0, dt)?;
    let y = operand_as(b, a, 1, dt)?;
    let q = if dt.is_float() {
        let q = binary(b, BinaryOp::Div, x, y);
        trunc(b, q)
    } else {
        binary(b, BinaryOp::Div, x, y)
    };
    let p = binary(b, BinaryOp::Mul, q, y);
    let r = binary(b, BinaryOp::Sub, x, p);
    finish(b, a, 2, r)
}

/// Float `trunc(q)`: `floor` for q >= 0, `ceil` below.
fn trunc(b: &mut MethodBuilder<'_, '_>, q: OperandId) -> OperandId {
    let fl = unary(b, UnaryOp::Floor, q);
    let ce = unary(b, UnaryOp::Ceil, q);
    let zero = b.const_f32(&[], &[0.0]);
    let zero = b.cast(zero, b.dtype(q));
    let dims = b.dims(q);
    let neg = b.temp(DType::Bool, &dims);
    b.emit_all(OpKind::Compare(CompareOp::Less), &[q, zero], vec![neg]);
    let out = b.temp(b.dtype(q), &dims);
    b.emit_all(OpKind::Select { v2: true }, &[neg, ce, fl], vec![out]);
    out
}

/// `div`: true division (an integer input becomes float), or with `rounding_mode` "trunc" /
/// "floor" in the out type.
fn div(b: &mut MethodBuilder<'_, '_>, a: &[i64], mode_arg: bool) -> Result<(), LoadError> {
    let (mode, out_k) = if mode_arg { (b.opt_str(a, 2)?, 3) } else { (None, 2) };
    let dt = out_type(b, a, out_k)?;
    let r = match mode.as_deref() {
        None => {
            let ct = if dt.is_float() { dt } else { DType::F32 };
            let x = operand_as(b, a, 0, ct)?;
            let y = operand_as(b, a, 1, ct)?;
            binary(b, BinaryOp::Div, x, y)
        }
        Some("floor") => {
            let x = operand_as(b, a, 0, dt)?;
            let y = operand_as(b, a, 1, dt)?;
            if dt.is_float() {
                let q = binary(b, BinaryOp::Div, x, y);
                unary(b, UnaryOp::Floor, q)
            } else {
                binary(b, BinaryOp::FloorDiv, x, y)
            }
        }
        Some("trunc") => {
            let x = operand_as(b, a, 0, dt)?;
            let y = operand_as(b, a, 1, dt)?;
            let q = binary(b, BinaryOp::Div, x, y);
            if dt.is_float() {
                trunc(b, q)
            } else {
                q
            }
        }
        Some(other) => return Err(b.err(format!("rounding_mode '{other}' is not one of 'trunc', 'floor'"))),
    };
    finish(b, a, out_k, r)
}

fn compare(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: CompareOp) -> Result<(), LoadError> {
    let t0 = {
        let x = b.tensor(a, 0)?;
        b.dtype(x)
    };
    let t1 = arg_type(b, a, 1, t0)?;
    let ct = promote(t0, t1);
    let x = operand_as(b, a, 0, ct)?;
    let y = operand_as(b, a, 1, ct)?;
    let dims = broadcast(&b.dims(x), &b.dims(y)).ok_or_else(|| b.err("the operands do not broadcast"))?;
    let r = b.temp(DType::Bool, &dims);
    b.emit_all(OpKind::Compare(op), &[x, y], vec![r]);
    finish(b, a, 2, r)
}

fn as_bool(b: &mut MethodBuilder<'_, '_>, a: &[i64], k: usize) -> Result<OperandId, LoadError> {
    let x = b.tensor(a, k)?;
    if b.dtype(x) == DType::Bool {
        return Ok(x);
    }
    let zero = b.const_scalar(b.dtype(x), Scalar::Int(0))?;
    let dims = b.dims(x);
    let r = b.temp(DType::Bool, &dims);
    b.emit_all(OpKind::Compare(CompareOp::NotEqual), &[x, zero], vec![r]);
    Ok(r)
}

fn logical(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: LogicalOp) -> Result<(), LoadError> {
    let x = as_bool(b, a, 0)?;
    let y = as_bool(b, a, 1)?;
    let dims = broadcast(&b.dims(x), &b.dims(y)).ok_or_else(|| b.err("the operands do not broadcast"))?;
    let r = b.temp(DType::Bool, &dims);
    b.emit_all(OpKind::Logical(op), &[x, y], vec![r]);
    finish(b, a, 2, r)
}

fn logical_xor(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = as_bool(b, a, 0)?;
    let y = as_bool(b, a, 1)?;
    let dims = broadcast(&b.dims(x), &b.dims(y)).ok_or_else(|| b.err("the operands do not broadcast"))?;
    let r = b.temp(DType::Bool, &dims);
    b.emit_all(OpKind::Compare(CompareOp::NotEqual), &[x, y], vec![r]);
    finish(b, a, 2, r)
}

fn logical_not(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = as_bool(b, a, 0)?;
    let r = unary(b, UnaryOp::LogicalNot, x);
    finish(b, a, 1, r)
}

fn bitwise_not(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    if b.dtype(x) != DType::Bool {
        let r = unary(b, UnaryOp::Neg, x);
        let one = b.const_scalar(b.dtype(x), Scalar::Int(1))?;
        // ~x == -x - 1 in two's complement.
        let r = binary(b, BinaryOp::Sub, r, one);
        return finish(b, a, 1, r);
    }
    let r = unary(b, UnaryOp::LogicalNot, x);
    finish(b, a, 1, r)
}

/// `where(condition, self, other)`.
fn where_self(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let c = as_bool(b, a, 0)?;
    let dt = out_type(b, a, 3)?;
    let x = operand_as(b, a, 1, dt)?;
    let y = operand_as(b, a, 2, dt)?;
    let dims = broadcast(&b.dims(c), &b.dims(x)).and_then(|d| broadcast(&d, &b.dims(y))).ok_or_else(|| b.err("the operands do not broadcast"))?;
    let r = b.temp(dt, &dims);
    b.emit_all(OpKind::Select { v2: true }, &[c, x, y], vec![r]);
    finish(b, a, 3, r)
}

/// `masked_fill(self, mask, value)`: `value` where `mask`, else `self`.
fn masked_fill(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let m = as_bool(b, a, 1)?;
    let v = b.scalar(a, 2)?;
    let dt = b.dtype(x);
    let k = b.const_scalar(dt, v)?;
    let dims = broadcast(&b.dims(m), &b.dims(x)).ok_or_else(|| b.err("the mask does not broadcast to the tensor"))?;
    let r = b.temp(dt, &dims);
    b.emit_all(OpKind::Select { v2: true }, &[m, k, x], vec![r]);
    finish(b, a, 3, r)
}

/// `remainder`: floor modulo for floats; for integers ExecuTorch's portable kernel uses C's `%`
/// (the sign follows the dividend), which nnrt matches.
fn remainder(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    if out_type(b, a, 2)?.is_float() {
        simple(b, a, BinaryOp::FloorMod)
    } else {
        fmod(b, a)
    }
}

/// `bitwise_and/or/xor`: on bools the logical op, on integers the bitwise one.
fn bitwise(b: &mut MethodBuilder<'_, '_>, a: &[i64], which: &str) -> Result<(), LoadError> {
    let dt = out_type(b, a, 2)?;
    if dt == DType::Bool {
        return match which {
            "and" => logical(b, a, LogicalOp::And),
            "or" => logical(b, a, LogicalOp::Or),
            _ => logical_xor(b, a),
        };
    }
    let x = operand_as(b, a, 0, dt)?;
    let y = operand_as(b, a, 1, dt)?;
    let dims = broadcast(&b.dims(x), &b.dims(y)).ok_or_else(|| b.err("the operands do not broadcast"))?;
    let r = b.temp(dt, &dims);
    let op = match which {
        "and" => nnrt_core::BitwiseOp::And,
        "or" => nnrt_core::BitwiseOp::Or,
        _ => nnrt_core::BitwiseOp::Xor,
    };
    b.emit_all(OpKind::Bitwise(op), &[x, y], vec![r]);
    finish(b, a, 2, r)
}
