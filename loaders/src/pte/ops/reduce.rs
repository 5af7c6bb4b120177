//! Reductions and scans: `mean`, `sum`, `amax`/`amin`, `prod`, `any`/`all`, `argmax`/`argmin`,
//! `max`/`min` over a dim (values and indices), `_softmax`/`_log_softmax` over any dim, `cumsum`.

use nnrt_core::{DType, LoadError, OpKind, OperandId, ReduceOp};

use super::{axes, copy_into, reshape, transpose, transpose_into, Convert};
use crate::pte::method::MethodBuilder;

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "aten::mean.out" | "aten::mean.dim_out" => |b, a| reduce(b, a, ReduceOp::Mean, true),
        "aten::sum.IntList_out" => |b, a| reduce(b, a, ReduceOp::Sum, true),
        "aten::amax.out" => |b, a| reduce(b, a, ReduceOp::Max, false),
        "aten::amin.out" => |b, a| reduce(b, a, ReduceOp::Min, false),
        "aten::any.dims_out" => |b, a| reduce(b, a, ReduceOp::Any, false),
        "aten::any.all_out" => |b, a| reduce_all(b, a, ReduceOp::Any),
        "aten::all.all_out" => |b, a| reduce_all(b, a, ReduceOp::All),
        "aten::mean.dtype_out" => |b, a| reduce_all(b, a, ReduceOp::Mean),
        "aten::prod.out" => |b, a| reduce_all(b, a, ReduceOp::Prod),
        "aten::max.unary_out" => |b, a| reduce_all(b, a, ReduceOp::Max),
        "aten::min.unary_out" => |b, a| reduce_all(b, a, ReduceOp::Min),
        "aten::any.out" => |b, a| bool_dim(b, a, ReduceOp::Any),
        "aten::all.out" => |b, a| bool_dim(b, a, ReduceOp::All),
        "aten::prod.int_out" => prod_dim,
        "aten::argmax.out" => |b, a| arg(b, a, true),
        "aten::argmin.out" => |b, a| arg(b, a, false),
        "aten::max.dim_max" => |b, a| min_max_dim(b, a, true),
        "aten::min.dim_min" => |b, a| min_max_dim(b, a, false),
        "aten::_softmax.out" => |b, a| softmax(b, a, false),
        "aten::_log_softmax.out" => |b, a| softmax(b, a, true),
        "aten::cumsum.out" => cumsum,
        "aten::var.correction_out" => var,
        _ => return None,
    })
}

fn reduce_into(b: &mut MethodBuilder<'_, '_>, x: OperandId, op: ReduceOp, ax: &[usize], out: OperandId) {
    let dt = b.dtype(out);
    if let (Some(t), true) = (b.twin(x), b.dtype(x) == dt) {
        // Reduce the NHWC twin over the same dims (NCHW dim d is NHWC dim [0, 3, 1, 2][d]).
        let nhwc_ax: Vec<i32> = ax.iter().map(|&a| [0, 3, 1, 2][a]).collect();
        let mut td = b.dims(t);
        for &a in &nhwc_ax {
            td[a as usize] = 1;
        }
        let axes = b.const_i32(&nhwc_ax);
        let rt = b.temp(dt, &td);
        b.emit_all(OpKind::Reduce { op, keep_dims: true }, &[t, axes], vec![rt]);
        let mut dims = b.dims(x);
        for &a in ax {
            dims[a] = 1;
        }
        let r = b.temp(dt, &dims);
        b.set_lazy(r, rt);
        copy_into(b, r, out);
        return;
    }
    // Sum and mean of integers or bools accumulate in the out type (PyTorch: int64).
    let x = if matches!(op, ReduceOp::Any | ReduceOp::All) { x } else { b.cast(x, dt) };
    let axes = b.const_i32(&ax.iter().map(|&a| a as i32).collect::<Vec<_>>());
    // keep_dims: the out tensor's shape then decides.
    let mut dims = b.dims(x);
    for &a in ax {
        dims[a] = 1;
    }
    let t = b.temp(b.dtype(x), &dims);
    b.emit_all(OpKind::Reduce { op, keep_dims: true }, &[x, axes], vec![t]);
    copy_into(b, t, out);
}

/// `mean(self, dim?, keepdim, dtype?)`, `sum.IntList(self, dim?, keepdim, dtype?)`,
/// `amax(self, dim, keepdim)`: an empty or absent dim list reduces over every dim.
fn reduce(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: ReduceOp, has_dtype: bool) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let dims = b.opt_ints(a, 1)?.unwrap_or_default();
    let ax = if dims.is_empty() { (0..rank).collect() } else { axes(b, &dims, rank)? };
    let out = b.out(a, if has_dtype { 4 } else { 3 })?;
    if rank == 0 {
        copy_into(b, x, out);
        return Ok(());
    }
    reduce_into(b, x, op, &ax, out);
    Ok(())
}

/// `any(self)`, `all(self)`, `mean.dtype(self, dtype?)`, `prod(self, dtype?)`, `max(self)`,
/// `min(self)`: over everything.
fn reduce_all(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: ReduceOp) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let k = b.last_out(a)?;
    let out = b.out(a, k)?;
    let rank = b.dims(x).len();
    if rank == 0 {
        copy_into(b, x, out);
        return Ok(());
    }
    let x = if matches!(op, ReduceOp::Any | ReduceOp::All) && b.dtype(x) != DType::Bool {
        let zero = b.const_scalar(b.dtype(x), crate::pte::method::Scalar::Int(0))?;
        let t = b.temp(DType::Bool, &b.dims(x));
        b.emit_all(OpKind::Compare(nnrt_core::CompareOp::NotEqual), &[x, zero], vec![t]);
        t
    } else {
        x
    };
    reduce_into(b, x, op, &(0..rank).collect::<Vec<_>>(), out);
    Ok(())
}

/// `prod.int(self, dim, keepdim, dtype?)`.
fn prod_dim(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let d = b.axis(b.int(a, 1)?, rank)?;
    let out = b.out(a, 4)?;
    reduce_into(b, x, ReduceOp::Prod, &[d], out);
    Ok(())
}

/// `argmax(self, dim?, keepdim)`: the first index of the extreme value; no dim flattens.
fn arg(b: &mut MethodBuilder<'_, '_>, a: &[i64], max: bool) -> Result<(), LoadError> {
    let mut x = b.tensor(a, 0)?;
    let dim = b.opt_int(a, 1)?;
    let out = b.out(a, 3)?;
    let axis = match dim {
        Some(d) => b.axis(d, b.dims(x).len())?,
        None => {
            let n: usize = b.dims(x).iter().product();
            x = reshape(b, x, &[n]);
            0
        }
    };
    let mut dims = b.dims(x);
    dims.remove(axis.min(dims.len().saturating_sub(1)));
    let ax = b.const_i32_scalar(axis as i32);
    let t = b.temp(b.dtype(out), &dims);
    b.emit_all(OpKind::ArgMinMax { max }, &[x, ax], vec![t]);
    copy_into(b, t, out);
    Ok(())
}

/// `max.dim(self, dim, keepdim)` -> (values, indices).
fn min_max_dim(b: &mut MethodBuilder<'_, '_>, a: &[i64], max: bool) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let d = b.axis(b.int(a, 1)?, rank)?;
    let values = b.out(a, 3)?;
    reduce_into(b, x, if max { ReduceOp::Max } else { ReduceOp::Min }, &[d], values);
    let indices = b.out(a, 4)?;
    let mut dims = b.dims(x);
    dims.remove(d);
    let ax = b.const_i32_scalar(d as i32);
    let t = b.temp(b.dtype(indices), &dims);
    b.emit_all(OpKind::ArgMinMax { max }, &[x, ax], vec![t]);
    copy_into(b, t, indices);
    Ok(())
}

/// `_softmax(self, dim, half_to_float)`: nnrt's softmax runs over the last dim, so another dim
/// is moved last and back.
fn softmax(b: &mut MethodBuilder<'_, '_>, a: &[i64], log: bool) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let d = b.axis(b.int(a, 1)?, rank)?;
    let out = b.out(a, 3)?;
    let kind = if log { OpKind::LogSoftmax } else { OpKind::Softmax { beta: 1.0 } };
    if rank == 0 || d + 1 == rank {
        let x = b.cast(x, b.dtype(out));
        b.emit_all(kind, &[x], vec![out]);
        return Ok(());
    }
    let mut perm: Vec<usize> = (0..rank).filter(|&i| i != d).collect();
    perm.push(d);
    let mut inverse = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let t = transpose(b, x, &perm);
    let s = b.temp(b.dtype(t), &b.dims(t));
    b.emit_all(kind, &[t], vec![s]);
    transpose_into(b, s, &inverse, out);
    Ok(())
}

/// `cumsum(self, dim, dtype?)`.
fn cumsum(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let d = b.axis(b.int(a, 1)?, rank)?;
    let out = b.out(a, 3)?;
    let x = b.cast(x, b.dtype(out));
    let ax = b.const_i32_scalar(d as i32);
    b.emit_all(OpKind::Cumsum { exclusive: false, reverse: false }, &[x, ax], vec![out]);
    Ok(())
}

/// `var.correction(self, dim?, *, correction?, keepdim)`: the mean squared deviation over `dim`,
/// divided by `N - correction` (default 1).
fn var(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    use nnrt_core::BinaryOp;
    let x = b.tensor(a, 0)?;
    let x = b.cast(x, DType::F32);
    let xd = b.dims(x);
    let dims = b.opt_ints(a, 1)?.unwrap_or_default();
    let ax = if dims.is_empty() { (0..xd.len()).collect() } else { axes(b, &dims, xd.len())? };
    let correction = b.opt_scalar(a, 2)?.map_or(1.0, crate::pte::method::Scalar::as_f64);
    let n: usize = ax.iter().map(|&i| xd[i]).product();
    let out = b.out(a, 4)?;
    let axc = b.const_i32(&ax.iter().map(|&i| i as i32).collect::<Vec<_>>());
    let mut kd = xd.clone();
    for &i in &ax {
        kd[i] = 1;
    }
    let mean = b.temp(DType::F32, &kd);
    b.emit_all(OpKind::Reduce { op: ReduceOp::Mean, keep_dims: true }, &[x, axc], vec![mean]);
    let d = super::binary(b, BinaryOp::Sub, x, mean);
    let sq = super::binary(b, BinaryOp::Mul, d, d);
    let axc = b.const_i32(&ax.iter().map(|&i| i as i32).collect::<Vec<_>>());
    let s = b.temp(DType::F32, &kd);
    b.emit_all(OpKind::Reduce { op: ReduceOp::Sum, keep_dims: true }, &[sq, axc], vec![s]);
    let k = b.const_f32(&[], &[(n as f64 - correction).max(0.0) as f32]);
    let v = super::binary(b, BinaryOp::Div, s, k);
    copy_into(b, v, out);
    Ok(())
}

/// `any.out(self, int dim, bool keepdim)` / `all.out`: over one dim, of the values as bools.
fn bool_dim(b: &mut MethodBuilder<'_, '_>, a: &[i64], op: ReduceOp) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let d = b.axis(b.int(a, 1)?, rank)?;
    let out = b.out(a, 3)?;
    let x = if b.dtype(x) == DType::Bool {
        x
    } else {
        let zero = b.const_scalar(b.dtype(x), crate::pte::method::Scalar::Int(0))?;
        let t = b.temp(DType::Bool, &b.dims(x));
        b.emit_all(OpKind::Compare(nnrt_core::CompareOp::NotEqual), &[x, zero], vec![t]);
        t
    };
    reduce_into(b, x, op, &[d], out);
    Ok(())
}
