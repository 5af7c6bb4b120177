//! 2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D.

use super::conv::{spatial, Padding};
use super::{fixed, one, Activation, Rules, Spec};
use crate::infer::Cx;
use crate::{CompileError, OpKind};

/// Input slot of the NHWC image.
pub const INPUT: usize = 0;

/// The kind of a pooling window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Average of the in-bounds cells.
    Average,
    /// Maximum of the in-bounds cells.
    Max,
    /// Square root of the mean of squares.
    L2,
}

/// Parameters of 2-D pooling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pool2D {
    /// Which reduction.
    pub kind: PoolKind,
    /// Padding scheme.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Window height, width.
    pub filter: [usize; 2],
    /// Fused activation.
    pub act: Activation,
}

pub(crate) const RULES: Rules = Rules { spec: op_spec, infer };

fn op_spec(kind: &OpKind) -> Option<Spec<'_>> {
    let OpKind::Pool2D(p) = kind else { return None };
    let name = match p.kind {
        PoolKind::Average => "AveragePool2D",
        PoolKind::Max => "MaxPool2D",
        PoolKind::L2 => "L2Pool2D",
    };
    Some(fixed(name, 1, 1))
}

fn infer(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let OpKind::Pool2D(p) = &cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    one(spatial(cx, x, p.filter, p.stride, [1, 1], p.padding).map(|[oh, ow]| vec![x[0], oh, ow, x[3]]))
}
