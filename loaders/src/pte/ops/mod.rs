//! ExecuTorch operators (`name.overload`) onto nnrt's IR, one file per family. Each converter
//! reads its arguments in schema order (out-arguments last; the trailing return value that
//! programs append is ignored) and emits IR ops; image ops get the NCHW <-> NHWC transposes the
//! NHWC kernels need.

mod activation;
pub(crate) use conv::{channels, dilate_kernel, rows};
mod arith;
mod conv;
mod matmul;
mod norm;
mod prim;
mod quant;
pub(crate) use quant::dequantized_constant;
mod reduce;
mod shape;

use nnrt_core::{DType, LoadError, OpKind, OperandId};

use super::method::MethodBuilder;

/// Converts one KernelCall with argument value indices `args`.
pub(crate) type Convert = fn(&mut MethodBuilder<'_, '_>, &[i64]) -> Result<(), LoadError>;

/// The converter of operator `name` (`aten::add.out`), if nnrt has one.
pub(crate) fn find(name: &str) -> Option<Convert> {
    arith::find(name)
        .or_else(|| activation::find(name))
        .or_else(|| conv::find(name))
        .or_else(|| matmul::find(name))
        .or_else(|| norm::find(name))
        .or_else(|| reduce::find(name))
        .or_else(|| shape::find(name))
        .or_else(|| quant::find(name))
        .or_else(|| prim::find(name))
}

/// Computes a deferred result for value `vi` (see [`crate::pte::method::Deferred`]).
pub(crate) fn compute_deferred(b: &mut MethodBuilder<'_, '_>, vi: i64, d: crate::pte::method::Deferred) -> Result<OperandId, LoadError> {
    match d {
        crate::pte::method::Deferred::PoolIndices { x, k, s, p, ceil } => conv::pool_indices(b, vi, x, k, s, p, ceil),
        crate::pte::method::Deferred::QParams { .. } => Err(b.err(format!("reads value {vi}, a scale or zero point chosen at run time by choose_qparams: nnrt runs those only as the quantize and dequantize of the tensor they were chosen for"))),
        crate::pte::method::Deferred::Stack(rows) => b.stack_rows(vi, rows),
        crate::pte::method::Deferred::DynQuantized { .. } => Err(b.err(format!("reads value {vi}, an integer tensor quantized with run-time parameters: nnrt runs it only through its dequantize"))),
    }
}

/// Dims of `dims` permuted by `perm`.
fn permuted_dims(dims: &[usize], perm: &[usize]) -> Vec<usize> {
    perm.iter().map(|&p| dims.get(p).copied().unwrap_or(1)).collect()
}

/// `x` transposed by `perm` into a new operand. A constant is permuted here, once.
pub(crate) fn transpose(b: &mut MethodBuilder<'_, '_>, x: OperandId, perm: &[usize]) -> OperandId {
    let dims = b.dims(x);
    let out_dims = permuted_dims(&dims, perm);
    let is_perm = perm.len() == dims.len() && { let mut p = perm.to_vec(); p.sort_unstable(); p.iter().enumerate().all(|(i, &v)| i == v) };
    if let (Some(data), true) = (b.g.operand(x).data.clone(), is_perm) {
        let es = b.dtype(x).size();
        let bytes = data.bytes();
        let n: usize = dims.iter().product();
        if bytes.len() == n * es {
            let mut strides = vec![1usize; dims.len()];
            for d in (0..dims.len().saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * dims[d + 1];
            }
            let mut out = vec![0u8; bytes.len()];
            let mut idx = vec![0usize; dims.len()];
            for o in 0..n {
                let src: usize = idx.iter().zip(perm).map(|(&i, &p)| i * strides[p]).sum();
                out[o * es..(o + 1) * es].copy_from_slice(&bytes[src * es..(src + 1) * es]);
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < out_dims[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
            let dt = b.dtype(x);
            return b.constant(dt, &out_dims, out);
        }
    }
    let out = b.temp(b.dtype(x), &out_dims);
    let p = b.const_i32(&perm.iter().map(|&p| p as i32).collect::<Vec<_>>());
    b.emit_all(OpKind::Transpose, &[x, p], vec![out]);
    out
}

/// Transposes `x` by `perm` into the existing operand `out`.
pub(crate) fn transpose_into(b: &mut MethodBuilder<'_, '_>, x: OperandId, perm: &[usize], out: OperandId) {
    let p = b.const_i32(&perm.iter().map(|&p| p as i32).collect::<Vec<_>>());
    b.emit_all(OpKind::Transpose, &[x, p], vec![out]);
}

/// NCHW -> NHWC.
pub(crate) const TO_NHWC: [usize; 4] = [0, 2, 3, 1];
/// NHWC -> NCHW.
pub(crate) const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

/// `x` in NHWC order: its twin, or a transpose (remembered as its twin). `x` is 4-D.
pub(crate) fn as_nhwc(b: &mut MethodBuilder<'_, '_>, x: OperandId) -> OperandId {
    if let Some(t) = b.twin(x) {
        return t;
    }
    let t = transpose(b, x, &TO_NHWC);
    if b.g.operand(x).data.is_none() {
        b.set_twin(x, t);
    }
    t
}

/// A constant with the same bytes as constant `x` and dims `dims` (same element count).
fn reshaped_const(b: &mut MethodBuilder<'_, '_>, x: OperandId, dims: &[usize]) -> OperandId {
    let mut op = b.g.operand(x).clone();
    op.shape = nnrt_core::Shape::fixed(dims);
    op.default_dims = dims.to_vec();
    op.name = format!("{}_r", op.name);
    b.g.add_operand(op)
}

/// Whether [`nhwc_operand`] can give `x` in NHWC order without a transpose of activations it
/// would not otherwise need: a twin, a constant (of rank <= 4), or a one-element operand.
fn nhwc_ready(b: &MethodBuilder<'_, '_>, x: OperandId) -> bool {
    let d = b.dims(x);
    b.twin(x).is_some() || d.iter().product::<usize>() == 1 || (d.len() <= 4 && b.g.operand(x).data.is_some()) || d.len() == 4
}

/// `x` laid out to broadcast against a 4-D NHWC operand as it did against the NCHW one.
fn nhwc_operand(b: &mut MethodBuilder<'_, '_>, x: OperandId) -> OperandId {
    if let Some(t) = b.twin(x) {
        return t;
    }
    let d = b.dims(x);
    if d.iter().product::<usize>() == 1 {
        return x;
    }
    if d.len() < 4 {
        let mut d4 = vec![1; 4 - d.len()];
        d4.extend(&d);
        let c = reshaped_const(b, x, &d4);
        return transpose(b, c, &TO_NHWC);
    }
    as_nhwc(b, x)
}

/// A binary op computed on NHWC twins when an operand has one (the result then has a twin
/// too); `None` when the op must run in NCHW.
fn lazy_binary(b: &mut MethodBuilder<'_, '_>, op: nnrt_core::BinaryOp, x: OperandId, y: OperandId) -> Option<OperandId> {
    if b.twin(x).is_none() && b.twin(y).is_none() {
        return None;
    }
    let dims = broadcast(&b.dims(x), &b.dims(y))?;
    if dims.len() != 4 || !nhwc_ready(b, x) || !nhwc_ready(b, y) {
        return None;
    }
    let (nx, ny) = (nhwc_operand(b, x), nhwc_operand(b, y));
    let dt = b.dtype(x);
    let t = b.temp(dt, &permuted_dims(&dims, &TO_NHWC));
    b.emit_all(OpKind::Binary { op, act: nnrt_core::Activation::None }, &[nx, ny], vec![t]);
    let r = b.temp(dt, &dims);
    b.set_lazy(r, t);
    Some(r)
}

/// Copies (or reshapes) `x` into `out`, converting the type when they differ.
pub(crate) fn copy_into(b: &mut MethodBuilder<'_, '_>, x: OperandId, out: OperandId) {
    if let Some(t) = b.twin(x) {
        if b.dtype(x) == b.dtype(out) && b.dims(x) == b.dims(out) {
            b.set_lazy(out, t);
            return;
        }
    }
    if b.retarget(x, out) {
        return;
    }
    if b.dtype(x) != b.dtype(out) {
        let dims = b.dims(out);
        if b.dims(x).iter().product::<usize>() == dims.iter().product::<usize>() && b.dims(x) != dims {
            let c = b.cast(x, b.dtype(out));
            reshape_into(b, c, out);
        } else {
            b.emit_all(OpKind::Cast, &[x], vec![out]);
        }
        return;
    }
    reshape_into(b, x, out);
}

/// Reshapes `x` to `out`'s declared dims.
pub(crate) fn reshape_into(b: &mut MethodBuilder<'_, '_>, x: OperandId, out: OperandId) {
    b.reshape_op(x, out);
}

/// `x` reshaped to `dims` in a new operand.
pub(crate) fn reshape(b: &mut MethodBuilder<'_, '_>, x: OperandId, dims: &[usize]) -> OperandId {
    let out = b.temp(b.dtype(x), dims);
    reshape_into(b, x, out);
    out
}

/// The type two operands (or an operand and a scalar) compute in, as PyTorch promotes: a float
/// wins over an integer, a wider type over a narrower one, bool loses to everything.
pub(crate) fn promote(a: DType, c: DType) -> DType {
    fn rank(d: DType) -> u8 {
        match d {
            DType::Bool => 0,
            DType::U8 => 1,
            DType::I8 => 2,
            DType::I16 => 3,
            DType::I32 => 4,
            DType::I64 => 5,
            DType::F16 => 6,
            DType::F32 => 7,
            DType::C64 => 8,
        }
    }
    if rank(a) >= rank(c) {
        a
    } else {
        c
    }
}

/// Shape of broadcasting `a` with `c` (numpy rules); `None` when they do not broadcast.
pub(crate) fn broadcast(a: &[usize], c: &[usize]) -> Option<Vec<usize>> {
    nnrt_core::ops::elementwise::broadcast_shapes(a, c)
}

/// Emits a binary op into a new operand of `dtype` with the broadcast shape.
pub(crate) fn binary(b: &mut MethodBuilder<'_, '_>, op: nnrt_core::BinaryOp, x: OperandId, y: OperandId) -> OperandId {
    if let Some(r) = lazy_binary(b, op, x, y) {
        return r;
    }
    let dims = broadcast(&b.dims(x), &b.dims(y)).unwrap_or_default();
    let out = b.temp(b.dtype(x), &dims);
    b.emit_all(OpKind::Binary { op, act: nnrt_core::Activation::None }, &[x, y], vec![out]);
    out
}

/// Emits a unary op into a new operand shaped like `x`.
pub(crate) fn unary(b: &mut MethodBuilder<'_, '_>, op: nnrt_core::UnaryOp, x: OperandId) -> OperandId {
    if let Some(t) = b.twin(x) {
        let rt = b.temp(b.dtype(x), &b.dims(t));
        b.emit_all(OpKind::Unary(op), &[t], vec![rt]);
        let r = b.temp(b.dtype(x), &b.dims(x));
        b.set_lazy(r, rt);
        return r;
    }
    let dims = b.dims(x);
    let out = b.temp(b.dtype(x), &dims);
    b.emit_all(OpKind::Unary(op), &[x], vec![out]);
    out
}

/// The normalised dims `ds` of a tensor of rank `rank`, sorted, without repeats.
pub(crate) fn axes(b: &MethodBuilder<'_, '_>, ds: &[i64], rank: usize) -> Result<Vec<usize>, LoadError> {
    let mut v = ds.iter().map(|&d| b.axis(d, rank)).collect::<Result<Vec<_>, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}
