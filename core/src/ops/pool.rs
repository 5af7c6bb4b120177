//! 2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D.

use super::conv::{spatial, Padding};
use super::Shapes::One;
use super::{spec, Activation, Spec};
use crate::infer::Cx;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the NHWC image.",
    INPUT_ZP = 1: "Average pooling's input zero point in the plain-integer form (TOSA AVG_POOL2D on int8 / int16).",
    OUTPUT_ZP = 2: "Average pooling's output zero point in the plain-integer form."
);

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

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    let OpKind::Pool2D(p) = kind else { return None };
    let name = match p.kind {
        PoolKind::Average => "AveragePool2D",
        PoolKind::Max => "MaxPool2D",
        PoolKind::L2 => "L2Pool2D",
    };
    Some(spec(name, 1, Some(3), Some(1), One(pool)))
}

/// Pooling windows slide over height and width; batch and channels stay.
fn pool(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Pool2D(p) = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.expect_rank(INPUT, 4)?;
    if cx.op.input(INPUT_ZP).is_some() || cx.op.input(OUTPUT_ZP).is_some() {
        // The plain-integer average (TOSA): int8 or int16 in and out, the sum of in-bounds
        // `x - input_zp` divided by their count with the specification's rounding, plus output_zp.
        if p.kind != PoolKind::Average || cx.op.input(INPUT_ZP).is_none() || cx.op.input(OUTPUT_ZP).is_none() {
            return Err(cx.err("zero points apply to average pooling, both of them"));
        }
        let t = cx.expect_dtype(INPUT, &[DType::I8, DType::I16])?;
        cx.expect_out_dtype(0, t)?;
        for slot in [INPUT_ZP, OUTPUT_ZP] {
            cx.expect_dtype(slot, &[t])?;
            if cx.value_bytes(slot)?.1.len() != t.size() {
                return Err(cx.input_err(slot, format!("a zero point is one {t} element")));
            }
        }
    }
    spatial(cx, x, p.filter, p.stride, [1, 1], p.padding).map(|[oh, ow]| vec![x[0], oh, ow, x[3]])
}

