//! Matrix and sequence ops: MATRIX_DIAG, MATRIX_SET_DIAG, REVERSE_SEQUENCE.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the data (MATRIX_DIAG's diagonals).", DIAGONAL = 1: "Input slot of MATRIX_SET_DIAG's new diagonals.",
    SEQ_LENGTHS = 1: "Input slot of REVERSE_SEQUENCE's lengths, one per batch."
);

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::MatrixDiag => fixed("MatrixDiag", 1, 1, One(matrix_diag)),
        OpKind::MatrixSetDiag => fixed("MatrixSetDiag", 2, 1, One(matrix_set_diag)),
        OpKind::ReverseSequence { .. } => fixed("ReverseSequence", 2, 1, One(reverse_sequence)),
        _ => return None,
    })
}

/// MATRIX_DIAG(d): `d ++ [last dim of d]`.
fn matrix_diag(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.expect_out_like(0, INPUT)?;
    let &n = x.last().ok_or_else(|| cx.input_err(INPUT, "the diagonal must have rank >= 1"))?;
    let mut out = x.to_vec();
    out.push(n);
    Ok(out)
}

/// MATRIX_SET_DIAG(x, d): `x` of rank >= 2; `d` is `x[..-2] ++ [min of the last two dims]`.
fn matrix_set_diag(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    let t = cx.expect_out_like(0, INPUT)?;
    if x.len() < 2 {
        return Err(cx.input_err(INPUT, format!("must have rank >= 2, is {}", fmt_dims(x))));
    }
    let r = x.len();
    let mut want = x[..r - 2].to_vec();
    want.push(x[r - 2].min(x[r - 1]));
    if cx.input(DIAGONAL)? != want.as_slice() || cx.dtype(DIAGONAL)? != t {
        return Err(cx.input_err(DIAGONAL, format!("the diagonal is {} {}; expected {t} {}", cx.dtype(DIAGONAL)?, fmt_dims(cx.input(DIAGONAL)?), fmt_dims(&want))));
    }
    Ok(x.to_vec())
}

/// REVERSE_SEQUENCE(x, seq_lengths): `x`'s shape; `seq_lengths` has one entry per batch.
fn reverse_sequence(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::ReverseSequence { seq_dim, batch_dim } = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.input(INPUT)?;
    cx.expect_out_like(0, INPUT)?;
    cx.expect_dtype(INPUT, &[DType::F32, DType::U8, DType::I16, DType::I32, DType::I64])?;
    cx.expect_dtype(SEQ_LENGTHS, &[DType::I32, DType::I64])?;
    let r = x.len() as i32;
    if seq_dim < 0 || batch_dim < 0 || seq_dim == batch_dim || seq_dim >= r || batch_dim >= r {
        return Err(cx.err(format!("seq_dim {seq_dim} and batch_dim {batch_dim} must be distinct dims of {}", fmt_dims(x))));
    }
    let l = cx.expect_rank(SEQ_LENGTHS, 1)?;
    if l[0] != x[batch_dim as usize] {
        return Err(cx.input_err(SEQ_LENGTHS, format!("holds {} lengths for batch dim {batch_dim} of {}", l[0], fmt_dims(x))));
    }
    if cx.is_const(SEQ_LENGTHS) {
        let n = x[seq_dim as usize] as i64;
        if let Some(v) = cx.const_ints(SEQ_LENGTHS)?.into_iter().find(|&v| v < 0 || v > n) {
            return Err(cx.input_err(SEQ_LENGTHS, format!("sequence length {v} is outside [0, {n}] (dim {seq_dim} of {})", fmt_dims(x))));
        }
    }
    Ok(x.to_vec())
}
