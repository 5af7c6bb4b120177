//! Ops that create tensors or describe them: FILL, RANGE, SHAPE, RANK, ZEROS_LIKE / ONES_LIKE,
//! ONE_HOT. Where the output shape depends on a tensor's values, a computed tensor makes the
//! output dynamic.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(INPUT = 0: "Input slot of the tensor SHAPE, RANK, ZEROS_LIKE and ONES_LIKE describe.");

slots! {
    /// Input slots of FILL.
    mod fill: DIMS = 0: "The output's dims (1-D int32 / int64).", VALUE = 1: "The scalar value.";
    /// Input slots of RANGE (scalars of one type).
    mod range: START = 0: "The first value.", LIMIT = 1: "The bound, not included.", DELTA = 2: "The step.";
    /// Input slots of ONE_HOT.
    mod one_hot: INDICES = 0: "The indices.", DEPTH = 1: "The size of the new dim (a constant scalar).", ON_VALUE = 2: "The value at each index.",
        OFF_VALUE = 3: "The value elsewhere.";
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Fill => fixed("Fill", 2, 1, One(fill)),
        OpKind::Range => fixed("Range", 3, 1, One(range)),
        OpKind::Shape => fixed("Shape", 1, 1, One(shape)),
        OpKind::Rank => fixed("Rank", 1, 1, One(rank)),
        OpKind::ZerosLike => fixed("ZerosLike", 1, 1, One(like)),
        OpKind::OnesLike => fixed("OnesLike", 1, 1, One(like)),
        OpKind::OneHot { .. } => fixed("OneHot", 4, 1, One(one_hot)),
        _ => return None,
    })
}

/// FILL: the dims in input 0 (checked >= 0), of the scalar value's type.
fn fill(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use fill::{DIMS, VALUE};
    cx.expect_dtype(DIMS, &[DType::I32, DType::I64])?;
    if cx.input(DIMS)?.len() != 1 {
        return Err(cx.input_err(DIMS, format!("dims must be 1-D, shape is {}", fmt_dims(cx.input(DIMS)?))));
    }
    let dims = cx.const_ints(DIMS)?;
    if dims.iter().any(|&d| d < 0) {
        return Err(cx.input_err(DIMS, format!("dims {dims:?} must be >= 0")));
    }
    if cx.input(VALUE)?.iter().product::<usize>() != 1 {
        return Err(cx.input_err(VALUE, format!("the value must be a scalar, shape is {}", fmt_dims(cx.input(VALUE)?))));
    }
    let t = cx.dtype(VALUE)?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the value has {t}", cx.out_dtype(0)?)));
    }
    Ok(dims.iter().map(|&d| d as usize).collect())
}

/// RANGE's length: integers `ceil(|limit - start| / |delta|)`, floats `ceil(|(limit - start) / delta|)`.
fn range(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use range::{DELTA, LIMIT, START};
    let t = cx.expect_dtype(START, &[DType::I32, DType::I64, DType::F32])?;
    for i in [LIMIT, DELTA] {
        if cx.dtype(i)? != t {
            return Err(cx.input_err(i, format!("has type {} but start has {t}", cx.dtype(i)?)));
        }
    }
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but start has {t}", cx.out_dtype(0)?)));
    }
    let mut v = [0f64; 3];
    for (i, slot) in [START, LIMIT, DELTA].into_iter().zip(v.iter_mut()) {
        match cx.const_f64s(i)?.as_slice() {
            [x] => *slot = *x,
            other => return Err(cx.input_err(i, format!("must be a scalar, holds {} values", other.len()))),
        }
    }
    let [start, limit, delta] = v;
    if delta == 0.0 || (start < limit && delta < 0.0) || (start > limit && delta > 0.0) {
        return Err(cx.input_err(DELTA, format!("delta {delta} cannot go from {start} to {limit}")));
    }
    let n = if t == DType::F32 {
        let (s, l, d) = (start as f32, limit as f32, delta as f32);
        ((l - s) / d).abs().ceil() as f64
    } else {
        ((limit - start).abs() / delta.abs()).ceil()
    };
    Ok(vec![n as usize])
}

/// SHAPE: one int32 / int64 per dim of the input.
fn shape(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.out_dtype(0)?;
    if t != DType::I32 && t != DType::I64 {
        return Err(cx.out_err(0, format!("has type {t}; SHAPE writes int32 or int64")));
    }
    Ok(vec![cx.input(INPUT)?.len()])
}

/// RANK: an int32 scalar.
fn rank(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.input(INPUT)?;
    cx.expect_out_dtype(0, DType::I32)?;
    Ok(vec![])
}

/// ZEROS_LIKE / ONES_LIKE: the input's shape and type.
fn like(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.expect_out_like(0, INPUT)?;
    Ok(cx.input(INPUT)?.to_vec())
}

/// ONE_HOT: inputs indices, depth (constant scalar), on value, off value; the new dim of size
/// depth goes at `axis` (-1: last).
fn one_hot(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::OneHot { axis } = cx.op.kind else { return Err(cx.unlisted()) };
    use one_hot::{DEPTH, INDICES, OFF_VALUE, ON_VALUE};
    let idx = cx.input(INDICES)?;
    cx.expect_dtype(INDICES, &[DType::I32, DType::I64, DType::U8, DType::I8])?;
    cx.expect_dtype(DEPTH, &[DType::I32])?;
    let depth = cx.const_scalar(DEPTH)?;
    if depth < 0 {
        return Err(cx.input_err(DEPTH, format!("depth {depth} must be >= 0")));
    }
    let t = cx.out_dtype(0)?;
    for i in [ON_VALUE, OFF_VALUE] {
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
