//! Ops that create tensors or describe them: FILL, RANGE, SHAPE, RANK, ZEROS_LIKE / ONES_LIKE,
//! ONE_HOT, TOPK_V2. Where the output shape depends on a tensor's values, that tensor must be a
//! constant (shapes computed at run time are not supported yet).

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType};

pub(super) fn fill(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::I32, DType::I64])?;
    if cx.input(0)?.len() != 1 {
        return Err(cx.input_err(0, format!("dims must be 1-D, shape is {}", fmt_dims(cx.input(0)?))));
    }
    let dims = cx.const_ints(0)?;
    if dims.iter().any(|&d| d < 0) {
        return Err(cx.input_err(0, format!("dims {dims:?} must be >= 0")));
    }
    if cx.input(1)?.iter().product::<usize>() != 1 {
        return Err(cx.input_err(1, format!("the value must be a scalar, shape is {}", fmt_dims(cx.input(1)?))));
    }
    let t = cx.dtype(1)?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the value has {t}", cx.out_dtype(0)?)));
    }
    Ok(dims.iter().map(|&d| d as usize).collect())
}

/// RANGE's length: integers `ceil(|limit - start| / |delta|)`, floats `ceil(|(limit - start) / delta|)`.
pub(super) fn range(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.expect_dtype(0, &[DType::I32, DType::I64, DType::F32])?;
    for i in 1..3 {
        if cx.dtype(i)? != t {
            return Err(cx.input_err(i, format!("has type {} but start has {t}", cx.dtype(i)?)));
        }
    }
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but start has {t}", cx.out_dtype(0)?)));
    }
    let mut v = [0f64; 3];
    for (i, slot) in v.iter_mut().enumerate() {
        match cx.const_f64s(i)?.as_slice() {
            [x] => *slot = *x,
            other => return Err(cx.input_err(i, format!("must be a scalar, holds {} values", other.len()))),
        }
    }
    let [start, limit, delta] = v;
    if delta == 0.0 || (start < limit && delta < 0.0) || (start > limit && delta > 0.0) {
        return Err(cx.input_err(2, format!("delta {delta} cannot go from {start} to {limit}")));
    }
    let n = if t == DType::F32 {
        let (s, l, d) = (start as f32, limit as f32, delta as f32);
        ((l - s) / d).abs().ceil() as f64
    } else {
        ((limit - start).abs() / delta.abs()).ceil()
    };
    Ok(vec![n as usize])
}

pub(super) fn shape(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.out_dtype(0)?;
    if t != DType::I32 && t != DType::I64 {
        return Err(cx.out_err(0, format!("has type {t}; SHAPE writes int32 or int64")));
    }
    Ok(vec![cx.input(0)?.len()])
}

pub(super) fn rank(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.input(0)?;
    cx.expect_out_dtype(0, DType::I32)?;
    Ok(vec![])
}

pub(super) fn like(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.dtype(0)?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the input has {t}", cx.out_dtype(0)?)));
    }
    Ok(cx.input(0)?.to_vec())
}

/// ONE_HOT: inputs indices, depth (constant scalar), on value, off value; the new dim of size
/// depth goes at `axis` (-1: last).
pub(super) fn one_hot(cx: &Cx, axis: i32) -> Result<Vec<usize>, CompileError> {
    let idx = cx.input(0)?;
    cx.expect_dtype(0, &[DType::I32, DType::I64, DType::U8, DType::I8])?;
    cx.expect_dtype(1, &[DType::I32])?;
    let depth = cx.const_scalar(1)?;
    if depth < 0 {
        return Err(cx.input_err(1, format!("depth {depth} must be >= 0")));
    }
    let t = cx.out_dtype(0)?;
    for i in 2..4 {
        if cx.dtype(i)? != t || cx.input(i)?.iter().product::<usize>() != 1 {
            return Err(cx.input_err(i, format!("must be one {t} value (the output's type), is {} {}", cx.dtype(i)?, fmt_dims(cx.input(i)?))));
        }
    }
    let rank = idx.len() as i64;
    let a = if axis == -1 { rank } else { axis as i64 };
    if a < 0 || a > rank {
        return Err(cx.err(format!("axis {axis} is out of range for indices of rank {rank}")));
    }
    let mut out = idx.to_vec();
    out.insert(a as usize, depth as usize);
    Ok(out)
}

/// TOPK_V2: values and int32 indices of the `k` largest entries of the last dim.
pub(super) fn top_k(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(0)?;
    let t = cx.dtype(0)?;
    cx.expect_dtype(1, &[DType::I32])?;
    let k = cx.const_scalar(1)?;
    let last = *x.last().ok_or_else(|| cx.input_err(0, "top_k needs rank >= 1"))?;
    if k < 0 || k as usize > last {
        return Err(cx.input_err(1, format!("k = {k} must lie in [0, {last}] (the last dim of {})", fmt_dims(x))));
    }
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the input has {t}", cx.out_dtype(0)?)));
    }
    let ti = cx.out_dtype(1)?;
    if ti != DType::I32 && ti != DType::I64 {
        return Err(cx.out_err(1, format!("has type {ti}; indices are int32 or int64")));
    }
    let mut out = x.to_vec();
    *out.last_mut().expect("rank >= 1 checked") = k as usize;
    Ok(vec![out.clone(), out])
}
