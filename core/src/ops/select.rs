//! Ops whose output length is decided by values: WHERE, UNIQUE, NON_MAX_SUPPRESSION_V4/V5.
//! With a computed input their outputs are dynamic.

use std::collections::HashSet;

use super::Shapes::{Many, One};
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(INPUT = 0: "Input slot of WHERE's condition and UNIQUE's values.");

slots! {
    /// Input slots of NON_MAX_SUPPRESSION_V4 / V5.
    mod nms: BOXES = 0: "Boxes `[n, 4]`.", SCORES = 1: "Scores `[n]`.", MAX_OUTPUT_SIZE = 2: "Most boxes selected (int32 scalar).",
        IOU_THRESHOLD = 3: "Overlap above which a box is suppressed.", SCORE_THRESHOLD = 4: "Score below which a box is dropped.",
        SOFT_NMS_SIGMA = 5: "V5's soft-NMS sigma.";
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Where => fixed("Where", 1, 1, One(where_)),
        OpKind::Unique => fixed("Unique", 1, 2, Many(unique)),
        OpKind::NonMaxSuppression { v5: false } => fixed("NonMaxSuppressionV4", 5, 2, Many(nms)),
        OpKind::NonMaxSuppression { v5: true } => fixed("NonMaxSuppressionV5", 6, 3, Many(nms)),
        _ => return None,
    })
}

/// The element types WHERE reads as conditions.
const WHERE_TYPES: &[DType] = &[DType::Bool, DType::F32, DType::I64, DType::I32, DType::I8, DType::U8];

/// WHERE(condition): int64 `[count of non-zero elements, rank]`.
fn where_(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    let t = cx.expect_dtype(INPUT, WHERE_TYPES)?;
    cx.expect_out_dtype(0, DType::I64)?;
    let (_, bytes) = cx.value_bytes(INPUT)?;
    let count = match t {
        // -0.0 is false, as `x != 0` says.
        DType::F32 => bytes.chunks_exact(4).filter(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) != 0.0).count(),
        _ => bytes.chunks_exact(t.size()).filter(|c| c.iter().any(|&b| b != 0)).count(),
    };
    Ok(vec![count, x.len()])
}

/// The element types UNIQUE handles.
const UNIQUE_TYPES: &[DType] = &[DType::I8, DType::I16, DType::I32, DType::I64, DType::F32, DType::U8];

/// A hashable key per element: equal values give equal keys (0.0 and -0.0 too).
pub fn unique_keys(dtype: DType, bytes: &[u8]) -> Vec<u64> {
    let n = dtype.size();
    bytes
        .chunks_exact(n)
        .map(|c| match dtype {
            DType::F32 => {
                let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                if v == 0.0 {
                    0
                } else {
                    v.to_bits() as u64
                }
            }
            _ => c.iter().rev().fold(0u64, |acc, &b| (acc << 8) | b as u64),
        })
        .collect()
}

/// UNIQUE(x): the distinct values of 1-D `x` `[count]` and int32/int64 indices `[len(x)]`.
fn unique(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.expect_rank(INPUT, 1)?;
    let t = cx.expect_dtype(INPUT, UNIQUE_TYPES)?;
    cx.expect_out_like(0, INPUT)?;
    let ti = cx.out_dtype(1)?;
    if ti != DType::I32 && ti != DType::I64 {
        return Err(cx.out_err(1, format!("has type {ti}; indices are int32 or int64")));
    }
    let (_, bytes) = cx.value_bytes(INPUT)?;
    let distinct: HashSet<u64> = unique_keys(t, bytes).into_iter().collect();
    Ok(vec![vec![distinct.len()], x.to_vec()])
}

/// NON_MAX_SUPPRESSION_V4/V5: boxes `[n, 4]`, scores `[n]`, scalars max_output_size (int32),
/// IoU and score thresholds (and V5's sigma, float32). Outputs `[max_output_size]` indices
/// (V5: and scores), zero-padded, and the scalar count.
fn nms(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let OpKind::NonMaxSuppression { v5 } = cx.op.kind else { return Err(cx.unlisted()) };
    use nms::{BOXES, MAX_OUTPUT_SIZE, SCORES};
    let b = cx.expect_rank(BOXES, 2)?;
    cx.expect_dtype(BOXES, &[DType::F32])?;
    if b[1] != 4 {
        return Err(cx.input_err(BOXES, format!("boxes must be [n, 4], are {}", fmt_dims(b))));
    }
    let s = cx.expect_rank(SCORES, 1)?;
    cx.expect_dtype(SCORES, &[DType::F32])?;
    if s[0] != b[0] {
        return Err(cx.input_err(SCORES, format!("holds {} scores for {} boxes", s[0], b[0])));
    }
    cx.expect_rank(MAX_OUTPUT_SIZE, 0)?;
    cx.expect_dtype(MAX_OUTPUT_SIZE, &[DType::I32])?;
    let scalars = if v5 { nms::IOU_THRESHOLD..nms::SOFT_NMS_SIGMA + 1 } else { nms::IOU_THRESHOLD..nms::SOFT_NMS_SIGMA };
    for i in scalars {
        cx.expect_rank(i, 0)?;
        cx.expect_dtype(i, &[DType::F32])?;
    }
    cx.expect_out_dtype(0, DType::I32)?;
    if v5 {
        cx.expect_out_dtype(1, DType::F32)?;
    }
    cx.expect_out_dtype(if v5 { 2 } else { 1 }, DType::I32)?;
    let max = cx.const_scalar(MAX_OUTPUT_SIZE)?;
    if max < 0 {
        return Err(cx.input_err(MAX_OUTPUT_SIZE, format!("max_output_size {max} must be >= 0")));
    }
    let m = max as usize;
    Ok(if v5 { vec![vec![m], vec![m], vec![]] } else { vec![vec![m], vec![]] })
}
