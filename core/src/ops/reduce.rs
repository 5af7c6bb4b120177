//! Reductions and scans along axes: MEAN, SUM, REDUCE_* (axes in input 1), ARG_MAX / ARG_MIN,
//! CUMSUM, TOPK_V2.

use super::Shapes::{Many, One};
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the values reduced or scanned (every op of the family).", AXES = 1: "Input slot of a reduction's axes.",
    AXIS = 1: "Input slot of ARG_MAX / ARG_MIN's and CUMSUM's axis.", K = 1: "Input slot of TOPK_V2's `k`."
);

/// Reductions over axes given by the op's second input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Arithmetic mean.
    Mean,
    /// Sum.
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
    /// Logical or (bools).
    Any,
    /// Logical and (bools).
    All,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    let name = match kind {
        OpKind::Reduce { op, .. } => match op {
            ReduceOp::Mean => "Mean",
            ReduceOp::Sum => "Sum",
            ReduceOp::Max => "ReduceMax",
            ReduceOp::Min => "ReduceMin",
            ReduceOp::Prod => "ReduceProd",
            ReduceOp::Any => "ReduceAny",
            ReduceOp::All => "ReduceAll",
        },
        OpKind::ArgMinMax { max: true } => return Some(fixed("ArgMax", 2, 1, One(arg_min_max))),
        OpKind::ArgMinMax { max: false } => return Some(fixed("ArgMin", 2, 1, One(arg_min_max))),
        OpKind::Cumsum { .. } => return Some(fixed("Cumsum", 2, 1, One(cumsum))),
        OpKind::TopKV2 => return Some(fixed("TopKV2", 2, 2, Many(top_k))),
        _ => return None,
    };
    Some(fixed(name, 2, 1, One(reduce)))
}

/// Normalized, deduplicated, sorted axes from constant input `i`.
fn axes(cx: &Cx, i: usize, rank: usize) -> Result<Vec<usize>, CompileError> {
    let mut out = Vec::new();
    for a in cx.const_ints(i)? {
        let a = cx.axis(a, rank)?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// A reduction removes its axes (or keeps them as size 1); REDUCE_ANY / _ALL read bools.
fn reduce(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Reduce { op, keep_dims } = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.input(INPUT)?;
    if matches!(op, ReduceOp::Any | ReduceOp::All) {
        cx.expect_dtype(INPUT, &[DType::Bool])?;
    }
    cx.expect_out_like(0, INPUT)?;
    let axes = axes(cx, AXES, x.len())?;
    let mut out = Vec::with_capacity(x.len());
    for (d, &n) in x.iter().enumerate() {
        if axes.contains(&d) {
            if keep_dims {
                out.push(1);
            }
        } else {
            out.push(n);
        }
    }
    Ok(out)
}

/// ARG_MAX / ARG_MIN: the axis (a constant scalar or one-element tensor) is removed.
fn arg_min_max(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.expect_dtype(AXIS, &[DType::I32, DType::I64])?;
    let axis = cx.dim_axis(cx.const_scalar(AXIS)?, x.len())?;
    let t = cx.out_dtype(0)?;
    if t != DType::I32 && t != DType::I64 {
        return Err(cx.out_err(0, format!("has type {t}; the index output must be int32 or int64")));
    }
    let mut out = x.to_vec();
    out.remove(axis);
    Ok(out)
}

/// CUMSUM keeps the shape; the axis must lie within it.
fn cumsum(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    cx.axis(cx.const_axis(AXIS)?, x.len())?;
    Ok(x.to_vec())
}

/// TOPK_V2: values and int32 indices of the `k` largest entries of the last dim.
fn top_k(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.expect_dtype(K, &[DType::I32])?;
    let k = cx.const_scalar(K)?;
    let last = *x.last().ok_or_else(|| cx.input_err(INPUT, "top_k needs rank >= 1"))?;
    if k < 0 || k as usize > last {
        return Err(cx.input_err(K, format!("k = {k} must lie in [0, {last}] (the last dim of {})", fmt_dims(x))));
    }
    cx.expect_out_like(0, INPUT)?;
    let ti = cx.out_dtype(1)?;
    if ti != DType::I32 && ti != DType::I64 {
        return Err(cx.out_err(1, format!("has type {ti}; indices are int32 or int64")));
    }
    let mut out = x.to_vec();
    *out.last_mut().expect("rank >= 1 checked") = k as usize;
    Ok(vec![out.clone(), out])
}
