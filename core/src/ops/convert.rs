//! Element type conversions, which keep the shape: CAST, QUANTIZE, DEQUANTIZE, FAKE_QUANT.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::{CompileError, DType, OpKind};

slots!(INPUT = 0: "Input slot of the values converted.");

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    let name = match kind {
        OpKind::Cast => "Cast",
        OpKind::Quantize => "Quantize",
        OpKind::Dequantize => "Dequantize",
        OpKind::FakeQuant { .. } => return Some(fixed("FakeQuant", 1, 1, One(fake_quant))),
        _ => return None,
    };
    Some(fixed(name, 1, 1, One(same_shape)))
}

/// CAST, QUANTIZE and DEQUANTIZE keep the shape.
fn same_shape(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    Ok(cx.input(INPUT)?.to_vec())
}

/// FAKE_QUANT: float32 in and out, a range `min < max` and 2 to 16 bits (TFLite's limits). Like
/// TFLite, a narrow range is refused: it only applies to weights, which converters fold.
fn fake_quant(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::FakeQuant { min, max, num_bits, narrow_range } = cx.op.kind else { return Err(cx.unlisted()) };
    cx.expect_dtype(INPUT, &[DType::F32])?;
    cx.expect_out_dtype(0, DType::F32)?;
    if narrow_range {
        return Err(cx.err("narrow_range FAKE_QUANT is not supported at run time (it only applies to weights, as in TFLite)"));
    }
    if min.partial_cmp(&max) != Some(std::cmp::Ordering::Less) || !(2..=16).contains(&num_bits) {
        return Err(cx.err(format!("needs min < max and 2..=16 bits, got [{min}, {max}] with {num_bits} bits")));
    }
    Ok(cx.input(INPUT)?.to_vec())
}
