//! Reductions and scans along axes: MEAN, SUM, REDUCE_* (axes in input 1), ARG_MAX / ARG_MIN,
//! CUMSUM, TOPK_V2.

use super::{fixed, one, Rules, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

/// Input slot of the values reduced or scanned (every op of the family).
pub const INPUT: usize = 0;
/// Input slot of a reduction's axes.
pub const AXES: usize = 1;
/// Input slot of ARG_MAX / ARG_MIN's and CUMSUM's axis.
pub const AXIS: usize = 1;
/// Input slot of TOPK_V2's `k`.
pub const K: usize = 1;

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

pub(crate) const RULES: Rules = Rules { spec: op_spec, infer };

fn op_spec(kind: &OpKind) -> Option<Spec<'_>> {
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
        OpKind::ArgMinMax { max: true } => "ArgMax",
        OpKind::ArgMinMax { max: false } => "ArgMin",
        OpKind::Cumsum { .. } => "Cumsum",
        OpKind::TopKV2 => return Some(fixed("TopKV2", 2, 2)),
        _ => return None,
    };
    Some(fixed(name, 2, 1))
}

fn infer(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    match &cx.op.kind {
        OpKind::Reduce { op, keep_dims } => one(reduce(cx, *op, *keep_dims)),
        OpKind::ArgMinMax { .. } => one(arg_min_max(cx)),
        OpKind::Cumsum { .. } => one(cumsum(cx)),
        OpKind::TopKV2 => top_k(cx),
        _ => Err(cx.unlisted()),
    }
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
fn reduce(cx: &Cx, op: ReduceOp, keep_dims: bool) -> Result<Vec<usize>, CompileError> {
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
    let axis = cx.axis(cx.const_scalar(AXIS)?, x.len())?;
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
