//! Shape rules of MATRIX_DIAG, MATRIX_SET_DIAG and REVERSE_SEQUENCE.

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType};

/// Checks that output 0 has input 0's type.
fn same_type(cx: &Cx) -> Result<DType, CompileError> {
    let t = cx.dtype(0)?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the input has {t}", cx.out_dtype(0)?)));
    }
    Ok(t)
}

/// MATRIX_DIAG(d): `d ++ [last dim of d]`.
pub(super) fn matrix_diag(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_type(cx)?;
    let &n = x.last().ok_or_else(|| cx.input_err(0, "the diagonal must have rank >= 1"))?;
    let mut out = x.to_vec();
    out.push(n);
    Ok(out)
}

/// MATRIX_SET_DIAG(x, d): `x` of rank >= 2; `d` is `x[..-2] ++ [min of the last two dims]`.
pub(super) fn matrix_set_diag(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let t = same_type(cx)?;
    if x.len() < 2 {
        return Err(cx.input_err(0, format!("must have rank >= 2, is {}", fmt_dims(x))));
    }
    let r = x.len();
    let mut want = x[..r - 2].to_vec();
    want.push(x[r - 2].min(x[r - 1]));
    if cx.input(1)? != want.as_slice() || cx.dtype(1)? != t {
        return Err(cx.input_err(1, format!("the diagonal is {} {}; expected {t} {}", cx.dtype(1)?, fmt_dims(cx.input(1)?), fmt_dims(&want))));
    }
    Ok(x.to_vec())
}

/// REVERSE_SEQUENCE(x, seq_lengths): `x`'s shape; `seq_lengths` has one entry per batch.
pub(super) fn reverse_sequence(cx: &Cx, seq_dim: i32, batch_dim: i32) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_type(cx)?;
    cx.expect_dtype(0, &[DType::F32, DType::U8, DType::I16, DType::I32, DType::I64])?;
    cx.expect_dtype(1, &[DType::I32, DType::I64])?;
    let r = x.len() as i32;
    if seq_dim < 0 || batch_dim < 0 || seq_dim == batch_dim || seq_dim >= r || batch_dim >= r {
        return Err(cx.err(format!("seq_dim {seq_dim} and batch_dim {batch_dim} must be distinct dims of {}", fmt_dims(x))));
    }
    let l = cx.expect_rank(1, 1)?;
    if l[0] != x[batch_dim as usize] {
        return Err(cx.input_err(1, format!("holds {} lengths for batch dim {batch_dim} of {}", l[0], fmt_dims(x))));
    }
    if cx.op.input(1).is_some_and(|id| cx.g.operand(id).data.is_some()) {
        let n = x[seq_dim as usize] as i64;
        if let Some(v) = cx.const_ints(1)?.into_iter().find(|&v| v < 0 || v > n) {
            return Err(cx.input_err(1, format!("sequence length {v} is outside [0, {n}] (dim {seq_dim} of {})", fmt_dims(x))));
        }
    }
    Ok(x.to_vec())
}
