//! Comparisons (EQUAL, LESS, …), LOGICAL_AND / LOGICAL_OR, and SELECT / SELECT_V2.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(LHS = 0: "Input slot of a comparison's or logical op's left operand.", RHS = 1: "Input slot of a comparison's or logical op's right operand.");

slots! {
    /// Input slots of SELECT and SELECT_V2.
    mod select: CONDITION = 0: "The bool condition.", X = 1: "Values where the condition holds.", Y = 2: "Values where it does not.";
}

/// Element-wise comparisons (NumPy broadcasting), producing bools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// a == b
    Equal,
    /// a != b
    NotEqual,
    /// a < b
    Less,
    /// a <= b
    LessEqual,
    /// a > b
    Greater,
    /// a >= b
    GreaterEqual,
}

/// Element-wise logical ops on bools (NumPy broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogicalOp {
    /// a && b
    And,
    /// a || b
    Or,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    let name = match kind {
        OpKind::Compare(c) => match c {
            CompareOp::Equal => "Equal",
            CompareOp::NotEqual => "NotEqual",
            CompareOp::Less => "Less",
            CompareOp::LessEqual => "LessEqual",
            CompareOp::Greater => "Greater",
            CompareOp::GreaterEqual => "GreaterEqual",
        },
        OpKind::Logical(LogicalOp::And) => return Some(fixed("LogicalAnd", 2, 1, One(logical))),
        OpKind::Logical(LogicalOp::Or) => return Some(fixed("LogicalOr", 2, 1, One(logical))),
        OpKind::Select { v2: false } => return Some(fixed("Select", 3, 1, One(select))),
        OpKind::Select { v2: true } => return Some(fixed("SelectV2", 3, 1, One(select))),
        _ => return None,
    };
    Some(fixed(name, 2, 1, One(compare)))
}

/// Comparisons take two operands of one type and write bools.
fn compare(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (ta, tb) = (cx.dtype(LHS)?, cx.dtype(RHS)?);
    if ta != tb {
        return Err(cx.input_err(RHS, format!("has type {tb} but input 0 has {ta}; both must match")));
    }
    cx.expect_out_dtype(0, DType::Bool)?;
    cx.broadcast(cx.input(LHS)?, cx.input(RHS)?)
}

/// Logical ops read and write bools.
fn logical(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(LHS, &[DType::Bool])?;
    cx.expect_dtype(RHS, &[DType::Bool])?;
    cx.expect_out_dtype(0, DType::Bool)?;
    cx.broadcast(cx.input(LHS)?, cx.input(RHS)?)
}

/// SELECT needs equal shapes, or a rank-1 condition that picks rows of x/y; SELECT_V2
/// broadcasts condition, x and y together.
fn select(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Select { v2 } = cx.op.kind else { return Err(cx.unlisted()) };
    use select::{CONDITION, X, Y};
    cx.expect_dtype(CONDITION, &[DType::Bool])?;
    let (tx, ty) = (cx.dtype(X)?, cx.dtype(Y)?);
    if tx != ty {
        return Err(cx.input_err(Y, format!("has type {ty} but x has {tx}; both must match")));
    }
    if cx.out_dtype(0)? != tx {
        return Err(cx.out_err(0, format!("has type {} but x and y have {tx}", cx.out_dtype(0)?)));
    }
    let (c, x, y) = (cx.input(CONDITION)?, cx.input(X)?, cx.input(Y)?);
    if v2 {
        let xy = cx.broadcast(x, y)?;
        return cx.broadcast(c, &xy);
    }
    if x != y {
        return Err(cx.input_err(Y, format!("y {} must have the shape of x {} (SELECT does not broadcast)", fmt_dims(y), fmt_dims(x))));
    }
    let rank_one = c.len() == 1 && !x.is_empty() && c[0] == x[0];
    if c != x && !rank_one {
        return Err(cx.input_err(
            CONDITION,
            format!("condition {} must have x's shape {} or be rank 1 with {} elements", fmt_dims(c), fmt_dims(x), x.first().copied().unwrap_or(0)),
        ));
    }
    Ok(x.to_vec())
}
