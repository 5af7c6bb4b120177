//! Element type conversions, which keep the shape: CAST, QUANTIZE, DEQUANTIZE, FAKE_QUANT.

use super::{fixed, one, Rules, Spec};
use crate::infer::Cx;
use crate::{CompileError, DType, OpKind};

/// Input slot of the values converted.
pub const INPUT: usize = 0;

pub(crate) const RULES: Rules = Rules { spec: op_spec, infer };

fn op_spec(kind: &OpKind) -> Option<Spec<'_>> {
    let name = match kind {
        OpKind::Cast => "Cast",
        OpKind::Quantize => "Quantize",
        OpKind::Dequantize => "Dequantize",
        OpKind::FakeQuant { .. } => "FakeQuant",
        _ => return None,
    };
    Some(fixed(name, 1, 1))
}

fn infer(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    match &cx.op.kind {
        OpKind::Cast | OpKind::Quantize | OpKind::Dequantize => one(Ok(cx.input(INPUT)?.to_vec())),
        OpKind::FakeQuant { min, max, num_bits, narrow_range } => one(fake_quant(cx, *min, *max, *num_bits, *narrow_range)),
        _ => Err(cx.unlisted()),
    }
}

/// FAKE_QUANT: float32 in and out, a range `min < max` and 2 to 16 bits (TFLite's limits). Like
/// TFLite, a narrow range is refused: it only applies to weights, which converters fold.
fn fake_quant(cx: &Cx, min: f32, max: f32, num_bits: u32, narrow_range: bool) -> Result<Vec<usize>, CompileError> {
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
