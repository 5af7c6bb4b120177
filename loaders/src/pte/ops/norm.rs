//! Normalisations computed from their statistics: `native_layer_norm` (over the last dims) and
//! `native_group_norm` (over channel groups), each as mean, centred square mean, `rsqrt(var +
//! eps)`, then the affine weight and bias. Their second and third results (mean and rstd) are
//! the statistics themselves.

use nnrt_core::{Activation, BinaryOp, DType, LoadError, OpKind, OperandId, ReduceOp, UnaryOp};

use super::{binary, reshape, unary, Convert};
use crate::pte::method::{MethodBuilder, Scalar};

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "aten::native_layer_norm.out" => layer_norm,
        "aten::native_group_norm.out" => group_norm,
        _ => return None,
    })
}

/// The mean of `x` over `axes`, kept as size-1 dims. Over the innermost dim alone it is a SUM
/// (which the CPU adds in eight lanes under ExecuTorch's numerics, as ExecuTorch's optimized sum
/// does) divided by the count: ExecuTorch's optimized layer norm takes its moments with a
/// cascade sum, and the element-by-element order of its portable MEAN put nnrt's layer norms
/// ~8x further from it (5.7e-6 against 7e-7 on rows of 2048 with mean 10).
fn mean_keep(b: &mut MethodBuilder<'_, '_>, x: OperandId, axes: &[usize]) -> OperandId {
    let mut dims = b.dims(x);
    for &a in axes {
        dims[a] = 1;
    }
    let ax = b.const_i32(&axes.iter().map(|&a| a as i32).collect::<Vec<_>>());
    let out = b.temp(b.dtype(x), &dims);
    let count: usize = axes.iter().map(|&a| b.dims(x)[a]).product();
    if dims.len().checked_sub(1).is_some_and(|last| axes == [last]) && count > 0 {
        b.emit_all(OpKind::Reduce { op: ReduceOp::Sum, keep_dims: true }, &[x, ax], vec![out]);
        let n = b.const_f32(&[], &[count as f32]);
        return binary(b, BinaryOp::Div, out, n);
    }
    b.emit_all(OpKind::Reduce { op: ReduceOp::Mean, keep_dims: true }, &[x, ax], vec![out]);
    out
}

/// Normalises `x` over `axes`: returns (normalised, mean, rstd).
fn normalise(b: &mut MethodBuilder<'_, '_>, x: OperandId, axes: &[usize], eps: f64) -> Result<(OperandId, OperandId, OperandId), LoadError> {
    let mean = mean_keep(b, x, axes);
    let d = binary(b, BinaryOp::Sub, x, mean);
    let sq = binary(b, BinaryOp::Mul, d, d);
    let var = mean_keep(b, sq, axes);
    let e = b.const_scalar(b.dtype(x), Scalar::Double(eps))?;
    let ve = binary(b, BinaryOp::Add, var, e);
    let rstd = unary(b, UnaryOp::Rsqrt, ve);
    let y = binary(b, BinaryOp::Mul, d, rstd);
    Ok((y, mean, rstd))
}

/// `y * w + bias`, either optional, into `out`.
fn affine(b: &mut MethodBuilder<'_, '_>, y: OperandId, w: Option<OperandId>, bias: Option<OperandId>, out: OperandId) {
    let mut r = y;
    if let Some(w) = w {
        r = binary(b, BinaryOp::Mul, r, w);
    }
    match bias {
        Some(c) => b.emit_all(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[r, c], vec![out]),
        None => super::reshape_into(b, r, out),
    }
}

/// Binds a statistic to out-argument `k` (reshaped to what the program declares) when the
/// program has it.
fn stat(b: &mut MethodBuilder<'_, '_>, a: &[i64], k: usize, v: OperandId) -> Result<(), LoadError> {
    let n_v: usize = b.dims(v).iter().product();
    let t = b.arg(a, k)?;
    let declared: usize = t.val_as_tensor().and_then(|t| t.sizes()).map_or(0, |s| s.iter().map(|d| d.max(0) as usize).product());
    if declared == n_v {
        let out = b.out(a, k)?;
        super::reshape_into(b, v, out);
    }
    Ok(())
}

/// `native_layer_norm(input, normalized_shape, weight?, bias?, eps)` -> (out, mean, rstd).
fn layer_norm(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let shape = b.ints(a, 1)?;
    let w = b.opt_tensor(a, 2)?;
    let bias = b.opt_tensor(a, 3)?;
    let eps = b.double(a, 4)?;
    let x = b.cast(x, DType::F32);
    let rank = b.dims(x).len();
    if shape.len() > rank || shape.is_empty() {
        return Err(b.err(format!("normalized_shape {shape:?} does not fit an input of rank {rank}")));
    }
    let axes: Vec<usize> = (rank - shape.len()..rank).collect();
    let (y, mean, rstd) = normalise(b, x, &axes, eps)?;
    let out = b.out(a, 5)?;
    affine(b, y, w, bias, out);
    stat(b, a, 6, mean)?;
    stat(b, a, 7, rstd)
}

/// `native_group_norm(input, weight?, bias?, N, C, HxW, group, eps)` -> (out, mean, rstd).
fn group_norm(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let w = b.opt_tensor(a, 1)?;
    let bias = b.opt_tensor(a, 2)?;
    let groups = usize::try_from(b.int(a, 6)?).ok().filter(|&g| g > 0).ok_or_else(|| b.err("group must be positive"))?;
    let eps = b.double(a, 7)?;
    let xd = b.dims(x);
    if xd.len() < 2 || !xd[1].is_multiple_of(groups) {
        return Err(b.err(format!("group norm of {xd:?} into {groups} groups: the channels (dim 1) must divide evenly")));
    }
    let n = xd[0];
    let rest: usize = xd[1..].iter().product();
    let x = b.cast(x, DType::F32);
    let g = reshape(b, x, &[n, groups, rest / groups]);
    let (y, mean, rstd) = normalise(b, g, &[2], eps)?;
    let y = reshape(b, y, &xd);
    // Per-channel weight and bias broadcast as [C, 1, ...].
    let mut cshape = vec![xd[1]];
    cshape.extend(std::iter::repeat_n(1, xd.len() - 2));
    let w = w.map(|w| reshape(b, w, &cshape));
    let bias = bias.map(|c| reshape(b, c, &cshape));
    let out = b.out(a, 8)?;
    affine(b, y, w, bias, out);
    stat(b, a, 9, mean)?;
    stat(b, a, 10, rstd)
}
