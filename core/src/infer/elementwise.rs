//! Element-wise ops: broadcasting binary ops, softmax.

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, UnaryOp};

/// NumPy broadcasting of two shapes (right-aligned; a dim of 1 stretches). `None` if incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i < rank - a.len() { 1 } else { a[i - (rank - a.len())] };
        let db = if i < rank - b.len() { 1 } else { b[i - (rank - b.len())] };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

pub(super) fn binary(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (a, b) = (cx.input(0)?, cx.input(1)?);
    let (ta, tb) = (cx.dtype(0)?, cx.dtype(1)?);
    if ta != tb {
        return Err(cx.input_err(1, format!("has type {tb} but input 0 has {ta}; both must match")));
    }
    broadcast_shapes(a, b)
        .ok_or_else(|| cx.err(format!("shapes {} and {} cannot be broadcast together", fmt_dims(a), fmt_dims(b))))
}

fn broadcast2(cx: &Cx, a: &[usize], b: &[usize]) -> Result<Vec<usize>, CompileError> {
    broadcast_shapes(a, b)
        .ok_or_else(|| cx.err(format!("shapes {} and {} cannot be broadcast together", fmt_dims(a), fmt_dims(b))))
}

pub(super) fn compare(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (ta, tb) = (cx.dtype(0)?, cx.dtype(1)?);
    if ta != tb {
        return Err(cx.input_err(1, format!("has type {tb} but input 0 has {ta}; both must match")));
    }
    cx.expect_out_dtype(0, DType::Bool)?;
    broadcast2(cx, cx.input(0)?, cx.input(1)?)
}

pub(super) fn logical(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::Bool])?;
    cx.expect_dtype(1, &[DType::Bool])?;
    cx.expect_out_dtype(0, DType::Bool)?;
    broadcast2(cx, cx.input(0)?, cx.input(1)?)
}

pub(super) fn prelu(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (ta, tb) = (cx.dtype(0)?, cx.dtype(1)?);
    // Quantized int16 inputs take an int8 alpha, as in TFLite.
    if ta != tb && !(ta == DType::I16 && tb == DType::I8) {
        return Err(cx.input_err(1, format!("alpha has type {tb} but the input has {ta}; both must match")));
    }
    broadcast2(cx, cx.input(0)?, cx.input(1)?)
}

/// SELECT needs equal shapes, or a rank-1 condition that picks rows of x/y; SELECT_V2
/// broadcasts condition, x and y together.
pub(super) fn select(cx: &Cx, v2: bool) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::Bool])?;
    let (tx, ty) = (cx.dtype(1)?, cx.dtype(2)?);
    if tx != ty {
        return Err(cx.input_err(2, format!("has type {ty} but x has {tx}; both must match")));
    }
    if cx.out_dtype(0)? != tx {
        return Err(cx.out_err(0, format!("has type {} but x and y have {tx}", cx.out_dtype(0)?)));
    }
    let (c, x, y) = (cx.input(0)?, cx.input(1)?, cx.input(2)?);
    if v2 {
        let xy = broadcast2(cx, x, y)?;
        return broadcast2(cx, c, &xy);
    }
    if x != y {
        return Err(cx.input_err(2, format!("y {} must have the shape of x {} (SELECT does not broadcast)", fmt_dims(y), fmt_dims(x))));
    }
    let rank_one = c.len() == 1 && !x.is_empty() && c[0] == x[0];
    if c != x && !rank_one {
        return Err(cx.input_err(
            0,
            format!("condition {} must have x's shape {} or be rank 1 with {} elements", fmt_dims(c), fmt_dims(x), x.first().copied().unwrap_or(0)),
        ));
    }
    Ok(x.to_vec())
}

/// Unary ops keep the shape; the output type must be the input's (bool for LOGICAL_NOT).
pub(super) fn unary(cx: &Cx, op: UnaryOp) -> Result<Vec<usize>, CompileError> {
    let t = cx.dtype(0)?;
    if op == UnaryOp::LogicalNot {
        cx.expect_dtype(0, &[DType::Bool])?;
    } else if t == DType::Bool {
        return Err(cx.input_err(0, format!("has type bool; {} takes numbers", cx.op.kind.name())));
    }
    if cx.out_dtype(0)? != t && !cx.g.operand(cx.input_id(0)?).quant.is_quantized() {
        return Err(cx.out_err(0, format!("has type {} but the input has {t}", cx.out_dtype(0)?)));
    }
    Ok(cx.input(0)?.to_vec())
}

pub(super) fn softmax(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    if x.is_empty() {
        return Err(cx.input_err(0, "softmax needs at least one dim"));
    }
    Ok(x.to_vec())
}

/// RFFT2D: float32 input of rank >= 2, constant int32 `[fft_h, fft_w]` (powers of two, as
/// TFLite requires); complex64 output `[..., fft_h, fft_w / 2 + 1]`.
pub(super) fn rfft2d(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    cx.expect_dtype(0, &[DType::F32])?;
    cx.expect_dtype(1, &[DType::I32])?;
    if x.len() < 2 {
        return Err(cx.input_err(0, format!("shape {} must have rank 2 or more", fmt_dims(x))));
    }
    let len = cx.const_ints(1)?;
    if len.len() != 2 || len.iter().any(|&v| v <= 0 || (v & (v - 1)) != 0) {
        return Err(cx.input_err(1, format!("fft_length {len:?} must be two powers of two")));
    }
    if cx.out_dtype(0)? != DType::C64 {
        return Err(cx.out_err(0, format!("has type {}; RFFT2D writes complex64", cx.out_dtype(0)?)));
    }
    let mut out = x[..x.len() - 2].to_vec();
    out.extend([len[0] as usize, len[1] as usize / 2 + 1]);
    Ok(out)
}

/// COMPLEX_ABS, REAL, IMAG: complex64 input, float32 output of the same shape.
pub(super) fn complex_part(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::C64])?;
    if cx.out_dtype(0)? != DType::F32 {
        return Err(cx.out_err(0, format!("has type {}; the parts of complex64 values are float32", cx.out_dtype(0)?)));
    }
    Ok(cx.input(0)?.to_vec())
}

#[cfg(test)]
mod tests {
    use super::broadcast_shapes;

    #[test]
    fn broadcasting_is_numpy_like() {
        assert_eq!(broadcast_shapes(&[1, 4, 5, 3], &[3]), Some(vec![1, 4, 5, 3]));
        assert_eq!(broadcast_shapes(&[1, 4, 5, 3], &[1, 1, 5, 1]), Some(vec![1, 4, 5, 3]));
        assert_eq!(broadcast_shapes(&[], &[2, 2]), Some(vec![2, 2]));
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 2]), None);
    }
}
