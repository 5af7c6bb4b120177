//! Unary ops and activations: `relu`, `tanh`, `sigmoid`, `hardtanh`, `clamp`, `hardswish`,
//! `hardsigmoid`, `silu`, `gelu`, `leaky_relu`, `elu`, `abs`, `neg`, `exp`, `log`, `sqrt`,
//! `rsqrt`, `floor`, `ceil`, `round`, `sign`, `sin`, `cos`, `reciprocal`, and the copies
//! (`clone`, `_to_copy`, the dim-order copies) that change nothing but perhaps the type.

use nnrt_core::{BinaryOp, DType, LoadError, OpKind, UnaryOp};

use super::{binary, copy_into, unary, Convert};
use crate::pte::method::{MethodBuilder, Scalar};

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "aten::relu.out" => |b, a| simple(b, a, UnaryOp::Relu),
        "aten::tanh.out" => |b, a| simple(b, a, UnaryOp::Tanh),
        "aten::sigmoid.out" => |b, a| simple(b, a, UnaryOp::Logistic),
        "aten::hardswish.out" => |b, a| simple(b, a, UnaryOp::HardSwish),
        "aten::abs.out" => |b, a| simple(b, a, UnaryOp::Abs),
        "aten::neg.out" => |b, a| simple(b, a, UnaryOp::Neg),
        "aten::exp.out" => |b, a| simple(b, a, UnaryOp::Exp),
        "aten::log.out" => |b, a| simple(b, a, UnaryOp::Log),
        "aten::sqrt.out" => |b, a| simple(b, a, UnaryOp::Sqrt),
        "aten::rsqrt.out" => |b, a| simple(b, a, UnaryOp::Rsqrt),
        "aten::floor.out" => |b, a| simple(b, a, UnaryOp::Floor),
        "aten::ceil.out" => |b, a| simple(b, a, UnaryOp::Ceil),
        "aten::round.out" => |b, a| simple(b, a, UnaryOp::Round),
        "aten::sign.out" => |b, a| simple(b, a, UnaryOp::Sign),
        "aten::sin.out" => |b, a| simple(b, a, UnaryOp::Sin),
        "aten::cos.out" => |b, a| simple(b, a, UnaryOp::Cos),
        "aten::erf.out" => |b, a| simple(b, a, UnaryOp::Erf),
        "aten::reciprocal.out" => reciprocal,
        "aten::hardtanh.out" => hardtanh,
        "aten::clamp.out" => clamp,
        "aten::clamp.Tensor_out" => clamp_tensor,
        "aten::hardsigmoid.out" => hardsigmoid,
        "aten::silu.out" => silu,
        "aten::gelu.out" => gelu,
        "aten::leaky_relu.out" => leaky_relu,
        "aten::elu.out" => elu,
        "aten::clone.out" | "aten::_to_copy.out" | "aten::alias_copy.out" | "aten::detach_copy.out" | "aten::lift_fresh_copy.out" => copy,
        "dim_order_ops::_clone_dim_order.out" | "dim_order_ops::_to_dim_order_copy.out" => copy,
        "aten::copy_" | "aten::copy.out" => copy_in_place,
        _ => return None,
    })
}

/// The input converted to float when it is an integer tensor (the unary float ops promote).
fn float_input(b: &mut MethodBuilder<'_, '_>, a: &[i64], out_k: usize) -> Result<nnrt_core::OperandId, LoadError> {
    let x = b.tensor(a, 0)?;
    let want = b.arg(a, out_k)?.val_as_tensor().and_then(|t| crate::pte::method::dtype_of(t.scalar_type())).unwrap_or(DType::F32);
    Ok(if want.is_float() { b.cast(x, want) } else { x })
}

fn simple(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: UnaryOp) -> Result<(), LoadError> {
    let x = float_input(b, a, 1)?;
    let r = unary(b, op, x);
    let out = b.out(a, 1)?;
    copy_into(b, r, out);
    Ok(())
}

fn reciprocal(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = float_input(b, a, 1)?;
    let one = b.const_scalar(b.dtype(x), Scalar::Int(1))?;
    let r = binary(b, BinaryOp::Div, one, x);
    let out = b.out(a, 1)?;
    b.g.operands[r.index()].default_dims = b.dims(x);
    b.g.operands[r.index()].shape = nnrt_core::Shape::fixed(&b.dims(x));
    copy_into(b, r, out);
    Ok(())
}

/// `min(max(x, lo), hi)` with either bound optional.
fn clamp_between(b: &mut MethodBuilder<'_, '_>, x: nnrt_core::OperandId, lo: Option<Scalar>, hi: Option<Scalar>) -> Result<nnrt_core::OperandId, LoadError> {
    let dt = b.dtype(x);
    let lf = lo.map(Scalar::as_f64);
    let hf = hi.map(Scalar::as_f64);
    if dt.is_float() {
        match (lf, hf) {
            (Some(l), Some(h)) if l == 0.0 && h == 6.0 => return Ok(unary(b, UnaryOp::Relu6, x)),
            (Some(l), Some(h)) if l == -1.0 && h == 1.0 => return Ok(unary(b, UnaryOp::ReluN1To1, x)),
            (Some(l), Some(h)) if l == 0.0 && h == 1.0 => return Ok(unary(b, UnaryOp::Relu0To1, x)),
            (Some(0.0), None) => return Ok(unary(b, UnaryOp::Relu, x)),
            _ => {}
        }
    }
    let mut y = x;
    if let Some(l) = lo {
        let k = b.const_scalar(dt, l)?;
        y = binary(b, BinaryOp::Maximum, y, k);
    }
    if let Some(h) = hi {
        let k = b.const_scalar(dt, h)?;
        y = binary(b, BinaryOp::Minimum, y, k);
    }
    if y == x {
        let dims = b.dims(x);
        let c = b.temp(dt, &dims);
        super::reshape_into(b, x, c);
        y = c;
    }
    Ok(y)
}

fn hardtanh(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let lo = b.opt_scalar(a, 1)?.unwrap_or(Scalar::Double(-1.0));
    let hi = b.opt_scalar(a, 2)?.unwrap_or(Scalar::Double(1.0));
    let r = clamp_between(b, x, Some(lo), Some(hi))?;
    let out = b.out(a, 3)?;
    copy_into(b, r, out);
    Ok(())
}

fn clamp(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let lo = b.opt_scalar(a, 1)?;
    let hi = b.opt_scalar(a, 2)?;
    let out_t = b.arg(a, 3)?.val_as_tensor().and_then(|t| crate::pte::method::dtype_of(t.scalar_type())).unwrap_or(DType::F32);
    let x = b.cast(x, out_t);
    let r = clamp_between(b, x, lo, hi)?;
    let out = b.out(a, 3)?;
    copy_into(b, r, out);
    Ok(())
}

fn clamp_tensor(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let dt = b.dtype(x);
    let mut y = x;
    if let Some(lo) = b.opt_tensor(a, 1)? {
        let lo = b.cast(lo, dt);
        y = binary(b, BinaryOp::Maximum, y, lo);
    }
    if let Some(hi) = b.opt_tensor(a, 2)? {
        let hi = b.cast(hi, dt);
        y = binary(b, BinaryOp::Minimum, y, hi);
    }
    let out = b.out(a, 3)?;
    copy_into(b, y, out);
    Ok(())
}

/// `hardsigmoid(x) = min(max(x + 3, 0), 6) / 6`.
fn hardsigmoid(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = float_input(b, a, 1)?;
    let three = b.const_scalar(b.dtype(x), Scalar::Int(3))?;
    let six = b.const_scalar(b.dtype(x), Scalar::Int(6))?;
    let s = binary(b, BinaryOp::Add, x, three);
    let c = unary(b, UnaryOp::Relu6, s);
    let r = binary(b, BinaryOp::Div, c, six);
    let out = b.out(a, 1)?;
    copy_into(b, r, out);
    Ok(())
}

/// `silu(x) = x * sigmoid(x)`.
fn silu(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = float_input(b, a, 1)?;
    let s = unary(b, UnaryOp::Logistic, x);
    let r = binary(b, BinaryOp::Mul, x, s);
    let out = b.out(a, 1)?;
    copy_into(b, r, out);
    Ok(())
}

/// `gelu(x, approximate)`: "none" is the erf form, "tanh" the tanh approximation.
fn gelu(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = float_input(b, a, 2)?;
    let approximate = match b.opt_str(a, 1)?.as_deref() {
        None | Some("none") => false,
        Some("tanh") => true,
        Some(other) => return Err(b.err(format!("gelu approximate '{other}' is not 'none' or 'tanh'"))),
    };
    let r = unary(b, UnaryOp::Gelu { approximate }, x);
    let out = b.out(a, 2)?;
    copy_into(b, r, out);
    Ok(())
}

fn leaky_relu(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = float_input(b, a, 2)?;
    let slope = b.opt_scalar(a, 1)?.map_or(0.01, Scalar::as_f64);
    let r = unary(b, UnaryOp::LeakyRelu(slope as f32), x);
    let out = b.out(a, 2)?;
    copy_into(b, r, out);
    Ok(())
}

/// `elu(x, alpha, scale, input_scale) = scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1))`.
fn elu(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = float_input(b, a, 4)?;
    let alpha = b.opt_scalar(a, 1)?.map_or(1.0, Scalar::as_f64);
    let scale = b.opt_scalar(a, 2)?.map_or(1.0, Scalar::as_f64);
    let input_scale = b.opt_scalar(a, 3)?.map_or(1.0, Scalar::as_f64);
    let dt = b.dtype(x);
    let r = if alpha == 1.0 && scale == 1.0 && input_scale == 1.0 {
        unary(b, UnaryOp::Elu, x)
    } else {
        let is = b.const_scalar(dt, Scalar::Double(input_scale))?;
        let xs = binary(b, BinaryOp::Mul, x, is);
        let e = unary(b, UnaryOp::Exp, xs);
        let one = b.const_scalar(dt, Scalar::Int(1))?;
        let em1 = binary(b, BinaryOp::Sub, e, one);
        let al = b.const_scalar(dt, Scalar::Double(alpha))?;
        let neg = binary(b, BinaryOp::Mul, em1, al);
        let zero = b.const_scalar(dt, Scalar::Int(0))?;
        let dims = b.dims(x);
        let pos = b.temp(DType::Bool, &dims);
        b.emit_all(OpKind::Compare(nnrt_core::CompareOp::Greater), &[x, zero], vec![pos]);
        let sel = b.temp(dt, &dims);
        b.emit_all(OpKind::Select { v2: true }, &[pos, x, neg], vec![sel]);
        let sc = b.const_scalar(dt, Scalar::Double(scale))?;
        binary(b, BinaryOp::Mul, sel, sc)
    };
    let out = b.out(a, 4)?;
    copy_into(b, r, out);
    Ok(())
}

/// The copies: the value again, in the out tensor's type. (Dim order only changes how the
/// runtime lays out memory; nnrt's tensors are always in logical order.)
/// `copy_(self, src, non_blocking)` with `out` = `self` (how ExecuTorch writes a mutated buffer
/// back), and `copy.out(self, src, non_blocking, *, out)` (a slice assignment `t[a:b] = v`
/// exports as slice_copy, copy.out, slice_scatter): the result is `src` broadcast to `self`'s
/// shape and converted to its type.
fn copy_in_place(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let src = b.tensor(a, 1)?;
    let k = b.last_out(a)?;
    let out = b.out(a, k)?;
    let src = b.cast(src, b.dtype(out));
    let dims = b.dims(out);
    if b.dims(src).iter().product::<usize>() == dims.iter().product::<usize>() {
        copy_into(b, src, out);
    } else {
        let shape = b.const_i32(&dims.iter().map(|&d| d as i32).collect::<Vec<_>>());
        b.emit_all(nnrt_core::OpKind::BroadcastTo, &[src, shape], vec![out]);
    }
    Ok(())
}

fn copy(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let k = b.last_out(a)?;
    let out = b.out(a, k)?;
    copy_into(b, x, out);
    Ok(())
}
