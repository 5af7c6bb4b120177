//! ExecuTorch's primitive scalar operators (`executorch_prim::*.Scalar`, `aten::sym_numel`) and
//! `et_copy_index`, the operators its emitter writes for `torch.map` and `torch.scan` loops and
//! for arithmetic on sizes. nnrt computes them at load: on scalars known there (a fixed size,
//! a loop counter) the result is known and a loop on it is unrolled; on a size known only at run
//! time the result is too, and only a view may take it.
//!
//! A size known only at run time that a view takes is computed there: `sym_size` becomes SHAPE
//! and GATHER, `+ - * // % max min` on it int32 binary ops, and the view a RESHAPE by the shape
//! they make.
//!
//! Semantics are Python's, as the exporter traced them (`exir/passes/executorch_prim_ops_registry.py`):
//! Int op Int stays Int and a Double operand makes a Double; `floordiv` and `mod` round
//! towards negative infinity; `truediv` is always a Double; comparisons give a Bool.

use nnrt_core::{BinaryOp, DType, LoadError, OpKind, OperandId};

use super::super::method::{MethodBuilder, Scalar};
use super::Convert;

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "executorch_prim::add.Scalar" => |b, a| binary(b, a, Bin::Add),
        "executorch_prim::sub.Scalar" => |b, a| binary(b, a, Bin::Sub),
        "executorch_prim::mul.Scalar" => |b, a| binary(b, a, Bin::Mul),
        "executorch_prim::floordiv.Scalar" | "executorch_prim::floordiv.int" => |b, a| binary(b, a, Bin::FloorDiv),
        "executorch_prim::truediv.Scalar" => |b, a| binary(b, a, Bin::TrueDiv),
        "executorch_prim::mod.Scalar" | "executorch_prim::mod.int" => |b, a| binary(b, a, Bin::Mod),
        "executorch_prim::sym_max.Scalar" => |b, a| binary(b, a, Bin::Max),
        "executorch_prim::sym_min.Scalar" => |b, a| binary(b, a, Bin::Min),
        "executorch_prim::eq.Scalar" => |b, a| binary(b, a, Bin::Eq),
        "executorch_prim::gt.Scalar" => |b, a| binary(b, a, Bin::Gt),
        "executorch_prim::lt.Scalar" => |b, a| binary(b, a, Bin::Lt),
        "executorch_prim::ge.Scalar" => |b, a| binary(b, a, Bin::Ge),
        "executorch_prim::le.Scalar" => |b, a| binary(b, a, Bin::Le),
        "executorch_prim::neg.Scalar" => |b, a| unary(b, a, Un::Neg),
        "executorch_prim::ceil.Scalar" => |b, a| unary(b, a, Un::Ceil),
        "executorch_prim::round.Scalar" => |b, a| unary(b, a, Un::Round),
        "executorch_prim::trunc.Scalar" => |b, a| unary(b, a, Un::Trunc),
        "executorch_prim::sym_float.Scalar" => |b, a| unary(b, a, Un::Float),
        "executorch_prim::sym_int.Scalar" => |b, a| unary(b, a, Un::Int),
        "executorch_prim::sym_not.Scalar" => |b, a| unary(b, a, Un::Not),
        "executorch_prim::sym_ite.Scalar" => ite,
        "aten::sym_numel" | "aten::sym_numel.default" => sym_numel,
        "executorch_prim::et_copy_index.tensor" => copy_index,
        _ => return None,
    })
}

#[derive(Clone, Copy, Debug)]
enum Bin {
    Add,
    Sub,
    Mul,
    FloorDiv,
    TrueDiv,
    Mod,
    Max,
    Min,
    Eq,
    Gt,
    Lt,
    Ge,
    Le,
}

#[derive(Clone, Copy, Debug)]
enum Un {
    Neg,
    Ceil,
    Round,
    Trunc,
    Float,
    Int,
    Not,
}

/// Scalar argument `k` as known at load; `None` when it is a size known only at run time.
fn operand(b: &MethodBuilder<'_, '_>, a: &[i64], k: usize) -> Result<Option<Scalar>, LoadError> {
    if b.symbolic.contains(&b.arg_index(a, k)?) {
        return Ok(None);
    }
    b.scalar(a, k).map(Some)
}

/// Writes the result (argument `k`), known or run-time only.
fn set(b: &mut MethodBuilder<'_, '_>, a: &[i64], k: usize, x: Option<Scalar>) -> Result<(), LoadError> {
    let out = b.arg_index(a, k)?;
    let v = b.value(out)?;
    if v.val_as_int().is_none() && v.val_as_double().is_none() && v.val_as_bool().is_none() {
        return Err(b.err(format!("the result (value {out}) is {}, where an Int, Double or Bool is expected", v.val_type().variant_name().unwrap_or("unknown kind"))));
    }
    b.set_scalar(out, x)
}

/// An Int, or a Bool as Python's arithmetic takes it (0 or 1).
fn as_int(x: Scalar) -> Option<i64> {
    match x {
        Scalar::Int(i) => Some(i),
        Scalar::Bool(v) => Some(i64::from(v)),
        Scalar::Double(_) => None,
    }
}

fn apply(b: &MethodBuilder<'_, '_>, op: Bin, x: Scalar, y: Scalar) -> Result<Scalar, LoadError> {
    let overflow = || b.err(format!("{op:?} of {x:?} and {y:?} overflows a 64-bit Int"));
    let by_zero = || b.err(format!("{op:?} of {x:?} by zero"));
    if let (Some(i), Some(j)) = (as_int(x), as_int(y)) {
        return Ok(match op {
            Bin::Add => Scalar::Int(i.checked_add(j).ok_or_else(overflow)?),
            Bin::Sub => Scalar::Int(i.checked_sub(j).ok_or_else(overflow)?),
            Bin::Mul => Scalar::Int(i.checked_mul(j).ok_or_else(overflow)?),
            Bin::FloorDiv | Bin::Mod => {
                if j == 0 {
                    return Err(by_zero());
                }
                let q = i.checked_div(j).ok_or_else(overflow)?;
                let r = i - q * j;
                // Python rounds the quotient towards negative infinity; the remainder takes the
                // divisor's sign.
                let (q, r) = if r != 0 && ((r < 0) != (j < 0)) { (q - 1, r + j) } else { (q, r) };
                Scalar::Int(if matches!(op, Bin::FloorDiv) { q } else { r })
            }
            Bin::TrueDiv => {
                if j == 0 {
                    return Err(by_zero());
                }
                Scalar::Double(i as f64 / j as f64)
            }
            Bin::Max => Scalar::Int(i.max(j)),
            Bin::Min => Scalar::Int(i.min(j)),
            Bin::Eq | Bin::Gt | Bin::Lt | Bin::Ge | Bin::Le => Scalar::Bool(compare(op, i, j)),
        });
    }
    let (p, q) = (x.as_f64(), y.as_f64());
    Ok(match op {
        Bin::Add => Scalar::Double(p + q),
        Bin::Sub => Scalar::Double(p - q),
        Bin::Mul => Scalar::Double(p * q),
        Bin::TrueDiv | Bin::FloorDiv | Bin::Mod if q == 0.0 => return Err(by_zero()),
        Bin::TrueDiv => Scalar::Double(p / q),
        Bin::FloorDiv => Scalar::Double((p / q).floor()),
        Bin::Mod => Scalar::Double(p - (p / q).floor() * q),
        Bin::Max => Scalar::Double(p.max(q)),
        Bin::Min => Scalar::Double(p.min(q)),
        Bin::Eq | Bin::Gt | Bin::Lt | Bin::Ge | Bin::Le => Scalar::Bool(compare(op, p, q)),
    })
}

/// A comparison operator on two Ints or two Doubles (each in its own type, so large Ints are
/// compared exactly).
fn compare<T: PartialOrd>(op: Bin, x: T, y: T) -> bool {
    match op {
        Bin::Eq => x == y,
        Bin::Gt => x > y,
        Bin::Lt => x < y,
        Bin::Ge => x >= y,
        _ => x <= y,
    }
}

/// `op.Scalar(a, b) -> out`.
fn binary(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: Bin) -> Result<(), LoadError> {
    if let (Some(x), Some(y)) = (operand(b, a, 0)?, operand(b, a, 1)?) {
        let r = apply(b, op, x, y)?;
        return set(b, a, 2, Some(r));
    }
    // A size known only at run time: computed there when the operator is integer arithmetic.
    let kind = match op {
        Bin::Add => Some(BinaryOp::Add),
        Bin::Sub => Some(BinaryOp::Sub),
        Bin::Mul => Some(BinaryOp::Mul),
        Bin::FloorDiv => Some(BinaryOp::FloorDiv),
        Bin::Mod => Some(BinaryOp::FloorMod),
        Bin::Max => Some(BinaryOp::Maximum),
        Bin::Min => Some(BinaryOp::Minimum),
        _ => None,
    };
    set(b, a, 2, None)?;
    if let Some(kind) = kind {
        let x = size_operand(b, b.arg_index(a, 0)?)?;
        let y = size_operand(b, b.arg_index(a, 1)?)?;
        let r = b.temp(DType::I32, &[1]);
        b.emit_all(OpKind::Binary { op: kind, act: nnrt_core::Activation::None }, &[x, y], vec![r]);
        b.derived.insert(b.arg_index(a, 2)?, r);
    }
    Ok(())
}

/// An int32 [1] operand holding Int value `vi` at run time: a constant when it is known at
/// load, SHAPE + GATHER for a `sym_size`, or what the operators computing it emitted.
pub(crate) fn size_operand(b: &mut MethodBuilder<'_, '_>, vi: i64) -> Result<OperandId, LoadError> {
    if let Some(&r) = b.derived.get(&vi) {
        return Ok(r);
    }
    if let Some(&(x, d)) = b.sym_src.get(&vi) {
        let rank = b.dims(x).len();
        let shape = b.temp(DType::I32, &[rank]);
        b.emit_all(OpKind::Shape, &[x], vec![shape]);
        let at = b.const_i32(&[d as i32]);
        let r = b.temp(DType::I32, &[1]);
        b.emit_all(OpKind::Gather { axis: 0, batch_dims: 0 }, &[shape, at], vec![r]);
        return Ok(r);
    }
    if b.symbolic.contains(&vi) {
        return Err(b.err(format!("value {vi} is a scalar known only at run time that nnrt does not compute there (it computes sizes with + - * // % max min)")));
    }
    let v = b.value(vi)?;
    let x = match b.known.get(&vi).copied() {
        Some(x) => x,
        None => match (v.val_as_int(), v.val_as_bool()) {
            (Some(i), _) => Scalar::Int(i.int_val()),
            (_, Some(t)) => Scalar::Bool(t.bool_val()),
            _ => return Err(b.err(format!("value {vi} is {}, where an Int size is expected", v.val_type().variant_name().unwrap_or("unknown kind")))),
        },
    };
    let i = as_int(x).and_then(|i| i32::try_from(i).ok()).ok_or_else(|| b.err(format!("value {vi} ({x:?}) is not a 32-bit Int size")))?;
    Ok(b.const_i32(&[i]))
}

/// A Double rounded to an Int the way `op` does; refused when it does not fit.
fn to_int(b: &MethodBuilder<'_, '_>, d: f64, op: Un) -> Result<Scalar, LoadError> {
    let r = match op {
        Un::Ceil => d.ceil(),
        // Python's round(): halves to even.
        Un::Round => d.round_ties_even(),
        _ => d.trunc(),
    };
    if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
        return Err(b.err(format!("{op:?} of {d} is not a 64-bit Int")));
    }
    Ok(Scalar::Int(r as i64))
}

/// `op.Scalar(a) -> out`.
fn unary(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: Un) -> Result<(), LoadError> {
    let Some(x) = operand(b, a, 0)? else {
        set(b, a, 1, None)?;
        // An Int size stays what it is under the rounding operators; its negation is 0 - it.
        let out = b.arg_index(a, 1)?;
        match op {
            Un::Neg => {
                let (zero, x) = (b.const_i32(&[0]), size_operand(b, b.arg_index(a, 0)?)?);
                let r = b.temp(DType::I32, &[1]);
                b.emit_all(OpKind::Binary { op: BinaryOp::Sub, act: nnrt_core::Activation::None }, &[zero, x], vec![r]);
                b.derived.insert(out, r);
            }
            Un::Ceil | Un::Round | Un::Trunc | Un::Int => {
                let r = size_operand(b, b.arg_index(a, 0)?)?;
                b.derived.insert(out, r);
            }
            Un::Float | Un::Not => {}
        }
        return Ok(());
    };
    let r = match (op, x) {
        (Un::Not, x) => Scalar::Bool(x.as_f64() == 0.0),
        (Un::Float, x) => Scalar::Double(x.as_f64()),
        (Un::Neg, Scalar::Double(d)) => Scalar::Double(-d),
        (Un::Neg, x) => Scalar::Int(as_int(x).unwrap_or(0).checked_neg().ok_or_else(|| b.err(format!("-{x:?} overflows a 64-bit Int")))?),
        (_, Scalar::Double(d)) => to_int(b, d, op)?,
        (_, x) => Scalar::Int(as_int(x).unwrap_or(0)),
    };
    set(b, a, 1, Some(r))
}

/// `sym_ite(b, t, f)`: `t` if `b` else `f`.
fn ite(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let r = match (operand(b, a, 0)?, operand(b, a, 1)?, operand(b, a, 2)?) {
        (Some(c), Some(t), Some(f)) => Some(if c.as_f64() != 0.0 { t } else { f }),
        _ => None,
    };
    set(b, a, 3, r)
}

/// `sym_numel(self) -> SymInt`: the element count, known at load when every size is fixed.
fn sym_numel(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let shape = &b.g.operand(x).shape.0;
    let n = shape.iter().try_fold(1i64, |acc, d| match d {
        nnrt_core::Dim::Known(n) => i64::try_from(*n).ok().and_then(|n| acc.checked_mul(n)),
        nnrt_core::Dim::Unknown => None,
    });
    set(b, a, 1, n.map(Scalar::Int))
}

/// `et_copy_index(copy_to, copy_from, index)`: `copy_from` becomes row `index` of `copy_to`
/// (the stacked output of a `torch.map` / `torch.scan` loop).
fn copy_index(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let to = b.arg_index(a, 0)?;
    if b.value(to)?.val_as_tensor().is_none() {
        return Err(b.err(format!("copy_to (value {to}) must be a Tensor")));
    }
    let row = b.tensor(a, 1)?;
    let index = b.int(a, 2)?;
    b.copy_index(to, row, index)
}
