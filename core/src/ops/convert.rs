//! Element type conversions, which keep the shape: CAST, QUANTIZE, DEQUANTIZE, FAKE_QUANT,
//! dynamic (run-time) quantization and TOSA's RESCALE.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::{CompileError, DType, OpKind};

slots!(INPUT = 0: "Input slot of the values converted.");
slots!(MULTIPLIER = 1: "Rescale's multipliers (int32 with scale32, else int16), one or one per channel.");
slots!(SHIFT = 2: "Rescale's right shifts (int8, 2..=62), as many as the multipliers.");
slots!(INPUT_ZP = 3: "Rescale's input zero point (one element of the input's type).");
slots!(OUTPUT_ZP = 4: "Rescale's output zero point (one element of the output's type).");

/// Parameters of TOSA RESCALE (`Rescale`): how the multiplier and shift apply, and whether
/// the int8/int16 input or output hold unsigned values (uint8 and uint16 have no TOSA type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rescale {
    /// 32-bit multipliers (`apply_scale_32`); otherwise 16-bit (`apply_scale_16`).
    pub scale32: bool,
    /// DOUBLE_ROUND: with a shift over 31, round once more at bit 30 (`apply_scale_32` only).
    pub double_round: bool,
    /// One multiplier and shift per channel of the last dim, else one for all.
    pub per_channel: bool,
    /// The input's bits (and its zero point) are unsigned.
    pub input_unsigned: bool,
    /// The output's bits (and its zero point) are unsigned.
    pub output_unsigned: bool,
}

/// How [`DynamicQuantize`] chooses a scale and zero point from the values it sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QParamsRule {
    /// ExecuTorch's `quantized_decomposed::choose_qparams` (PyTorch's rule): the range
    /// `[min(min, 0), max(max, 0)]` over `qmax - qmin` steps in double, 0.1 when that is 0 or
    /// its float reciprocal infinite, raised to 6.1e-5 when smaller (the range scaled with it);
    /// the zero point from the end with the smaller error, clamped, rounded half to even. Then
    /// `quantize_per_tensor` (`zp + nearbyint((1/scale as f32) * x)`, clamped) and
    /// `dequantize_per_tensor` (`(q - zp) * scale as f32`).
    ExecuTorch,
    /// XNNPACK's dynamic int8 (`qd8`): `m = 255 / (rmax - rmin)` in float (1 when the range is
    /// empty), the zero point from the end with the smaller error, clamped to int8, rounded
    /// half to even; `q = clamp(rint(x * m) + zp)`, worth `(q - zp) / m`.
    Xnnpack,
}

/// Parameters of [`crate::OpKind::DynamicQuantize`]: float32 values quantized with a scale and
/// zero point chosen from the values themselves at run time, and returned dequantized (float32)
/// for the float op that reads them — the values that op would multiply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamicQuantize {
    /// How the scale and zero point are chosen.
    pub rule: QParamsRule,
    /// Smallest quantized value.
    pub qmin: i32,
    /// Largest quantized value.
    pub qmax: i32,
    /// One scale and zero point per row of the last `row_dims` dims (XNNPACK's
    /// `num_nonbatch_dims`); 0: one for the whole tensor.
    pub row_dims: usize,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    let name = match kind {
        OpKind::Cast => "Cast",
        OpKind::Quantize => "Quantize",
        OpKind::Dequantize => "Dequantize",
        OpKind::FakeQuant { .. } => return Some(fixed("FakeQuant", 1, 1, One(fake_quant))),
        OpKind::Rescale(_) => return Some(fixed("Rescale", 5, 1, One(rescale))),
        OpKind::DynamicQuantize(_) => return Some(fixed("DynamicQuantize", 1, 1, One(dynamic_quantize))),
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

/// DynamicQuantize: float32 in and out, `qmin < qmax` within int32, rows of at most the rank.
fn dynamic_quantize(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::DynamicQuantize(d) = cx.op.kind else { return Err(cx.unlisted()) };
    cx.expect_dtype(INPUT, &[DType::F32])?;
    cx.expect_out_dtype(0, DType::F32)?;
    let x = cx.input(INPUT)?;
    if d.qmin >= d.qmax {
        return Err(cx.err(format!("needs quant_min < quant_max, got {} and {}", d.qmin, d.qmax)));
    }
    if d.rule == QParamsRule::Xnnpack && (d.qmin, d.qmax) != (-128, 127) {
        return Err(cx.err(format!("XNNPACK's dynamic quantization is int8 (-128..=127), not {}..={}", d.qmin, d.qmax)));
    }
    if d.row_dims > x.len() {
        return Err(cx.err(format!("rows of the last {} dims of a rank-{} input", d.row_dims, x.len())));
    }
    Ok(x.to_vec())
}

/// RESCALE: int8 / int16 / int32 in and out (int48 has no nnrt type), constant multipliers and
/// shifts (one, or one per channel of the last dim), one-element constant zero points.
fn rescale(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Rescale(r) = cx.op.kind else { return Err(cx.unlisted()) };
    let ints = [DType::I8, DType::I16, DType::I32];
    let x = cx.input(INPUT)?;
    // int64 input: TOSA's int48 (int16 convolution sums).
    let xt = cx.expect_dtype(INPUT, &[DType::I8, DType::I16, DType::I32, DType::I64])?;
    let ot = cx.out_dtype(0)?;
    if !ints.contains(&ot) {
        return Err(cx.err(format!("output type {ot} is not int8, int16 or int32")));
    }
    cx.expect_dtype(MULTIPLIER, &[if r.scale32 { DType::I32 } else { DType::I16 }])?;
    cx.expect_dtype(SHIFT, &[DType::I8])?;
    cx.expect_dtype(INPUT_ZP, &[xt])?;
    cx.expect_dtype(OUTPUT_ZP, &[ot])?;
    let channels = if r.per_channel { *x.last().ok_or_else(|| cx.err("per-channel rescaling needs an input of rank 1 or more"))? } else { 1 };
    let (m, s) = (small_ints(cx, MULTIPLIER)?, small_ints(cx, SHIFT)?);
    if m.len() != channels || s.len() != channels {
        return Err(cx.input_err(MULTIPLIER, format!("{} multipliers and {} shifts; {channels} of each expected", m.len(), s.len())));
    }
    if let Some(bad) = s.iter().find(|&&v| !(2..=62).contains(&v)) {
        return Err(cx.input_err(SHIFT, format!("shift {bad} is outside 2..=62")));
    }
    if let Some(bad) = m.iter().find(|&&v| v < 0) {
        return Err(cx.input_err(MULTIPLIER, format!("multiplier {bad} is negative")));
    }
    for k in [INPUT_ZP, OUTPUT_ZP] {
        if small_ints(cx, k)?.len() != 1 {
            return Err(cx.input_err(k, "a zero point is one constant element"));
        }
    }
    if r.double_round && !r.scale32 {
        return Err(cx.err("DOUBLE_ROUND applies to 32-bit multipliers only"));
    }
    if (r.input_unsigned && xt == DType::I32) || (r.output_unsigned && ot == DType::I32) {
        return Err(cx.err("int32 values cannot be unsigned"));
    }
    Ok(x.to_vec())
}

/// The values of constant input `i` of any integer type.
fn small_ints(cx: &Cx, i: usize) -> Result<Vec<i64>, CompileError> {
    let (id, bytes) = cx.value_bytes(i)?;
    Ok(match cx.g.operand(id).dtype {
        DType::I8 => bytes.iter().map(|&b| i64::from(b as i8)).collect(),
        DType::I16 => bytes.chunks_exact(2).map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))).collect(),
        _ => return cx.const_ints(i),
    })
}
