//! Normalizations over the last dim: SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION,
//! LOCAL_RESPONSE_NORMALIZATION.

use super::arith::out_like;
use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::{CompileError, DType, OpKind};

slots!(INPUT = 0: "Input slot of the values normalized.");

/// Parameters of LOCAL_RESPONSE_NORMALIZATION over the last dim:
/// `out = in * (bias + alpha * Σ in²)^-beta`, the sum over `radius` channels either side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalResponseNorm {
    /// Channels either side included in the sum.
    pub radius: i32,
    /// Added to the scaled sum.
    pub bias: f32,
    /// Scale of the sum of squares.
    pub alpha: f32,
    /// Exponent.
    pub beta: f32,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    let name = match kind {
        OpKind::Softmax { .. } => "Softmax",
        OpKind::LogSoftmax => "LogSoftmax",
        OpKind::L2Normalization { .. } => "L2Normalization",
        OpKind::LocalResponseNorm(_) => return Some(fixed("LocalResponseNormalization", 1, 1, One(lrn))),
        _ => return None,
    };
    Some(fixed(name, 1, 1, One(softmax)))
}

/// Softmax-like ops keep the shape of an input of rank >= 1.
fn softmax(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    if x.is_empty() {
        return Err(cx.input_err(INPUT, "softmax needs at least one dim"));
    }
    Ok(x.to_vec())
}

/// LOCAL_RESPONSE_NORMALIZATION: a 4-D float32 tensor, normalized over its last dim.
fn lrn(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::LocalResponseNorm(p) = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    cx.expect_dtype(INPUT, &[DType::F32])?;
    out_like(cx, INPUT)?;
    if p.radius < 0 || !p.bias.is_finite() || !p.alpha.is_finite() || !p.beta.is_finite() {
        return Err(cx.err(format!("radius {} must be >= 0 and bias {}, alpha {}, beta {} finite", p.radius, p.bias, p.alpha, p.beta)));
    }
    Ok(x.to_vec())
}
