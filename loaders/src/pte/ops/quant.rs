//! PT2E quantization in portable programs: `quantized_decomposed::quantize_per_tensor`,
//! `dequantize_per_tensor` and `dequantize_per_channel` (`.out`). A quantized tensor carries its
//! scale and zero point in the IR; dequantizing a constant per channel (the weights) is done here,
//! once.
//!
//! Dynamic quantization — `choose_qparams.Tensor_out` (per tensor) or
//! `choose_qparams_per_token_asymmetric.out` (per row of the last dim), then
//! `quantize_per_tensor.Tensor_out` / `quantize_per_token.out` and the matching dequantize with
//! those run-time scale and zero point — becomes one `DynamicQuantize` with ExecuTorch's rule:
//! the scale, zero point and int8 values are deferred ([`Deferred`]) until the dequantize that
//! reads them. A program that reads them otherwise is refused at load, naming the reader.

use nnrt_core::{ConstData, DType, DynamicQuantize, LoadError, OpKind, OperandId, QParamsRule, Quantization};

use super::Convert;
use crate::pte::method::{Deferred, MethodBuilder};

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "quantized_decomposed::quantize_per_tensor.out" => quantize_per_tensor,
        "quantized_decomposed::dequantize_per_tensor.out" => dequantize_per_tensor,
        "quantized_decomposed::dequantize_per_channel.out" => dequantize_per_channel,
        "quantized_decomposed::choose_qparams.Tensor_out" => choose_qparams,
        "quantized_decomposed::choose_qparams_per_token_asymmetric.out" => choose_qparams_per_token,
        "quantized_decomposed::quantize_per_tensor.Tensor_out" | "quantized_decomposed::quantize_per_token.out" => quantize_dynamic,
        "quantized_decomposed::dequantize_per_tensor.Tensor_out" | "quantized_decomposed::dequantize_per_token.out" => dequantize_dynamic,
        _ => return None,
    })
}

/// Gives `x` the quantization `q`: in place when it has none yet, else through a copy.
fn with_quant(b: &mut MethodBuilder<'_, '_>, x: OperandId, q: Quantization) -> OperandId {
    let op = b.g.operand(x);
    if op.quant == q {
        return x;
    }
    if !op.quant.is_quantized() && op.data.is_none() {
        b.g.operands[x.index()].quant = q;
        return x;
    }
    let mut c = op.clone();
    c.quant = q;
    c.name = format!("{}_q", c.name);
    if c.data.is_some() {
        return b.g.add_operand(c);
    }
    let id = b.g.add_operand(c);
    b.reshape_op(x, id);
    id
}

/// `quantize_per_tensor(input, scale, zero_point, quant_min, quant_max, dtype)`.
fn quantize_per_tensor(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let scale = b.double(a, 1)? as f32;
    let zero_point = b.int(a, 2)?;
    let out = b.out(a, 6)?;
    if !matches!(b.dtype(out), DType::I8 | DType::U8 | DType::I16 | DType::I32) {
        return Err(b.err(format!("quantizing to {} is not supported", b.dtype(out))));
    }
    b.g.operands[out.index()].quant = Quantization::PerTensor { scale, zero_point };
    let x = b.cast(x, DType::F32);
    b.emit_all(OpKind::Quantize, &[x], vec![out]);
    Ok(())
}

/// `dequantize_per_tensor(input, scale, zero_point, quant_min, quant_max, dtype, *, out_dtype)`.
fn dequantize_per_tensor(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let scale = b.double(a, 1)? as f32;
    let zero_point = b.int(a, 2)?;
    let k = b.last_out(a)?;
    if b.g.operand(x).data.is_some() {
        // Constant weights: dequantized here, once.
        let cid = dequantized_constant(b, x, &Quantization::PerTensor { scale, zero_point })?;
        return b.bind(b.arg_index(a, k)?, cid);
    }
    let out = b.out(a, k)?;
    let q = with_quant(b, x, Quantization::PerTensor { scale, zero_point });
    if b.dtype(out) != DType::F32 {
        return Err(b.err(format!("dequantizing to {} is not supported", b.dtype(out))));
    }
    b.emit_all(OpKind::Dequantize, &[q], vec![out]);
    Ok(())
}

fn floats(b: &MethodBuilder<'_, '_>, id: OperandId, what: &str) -> Result<Vec<f32>, LoadError> {
    let op = b.g.operand(id);
    let d = op.data.as_ref().ok_or_else(|| b.err(format!("per-channel {what} must be constant")))?;
    Ok(match op.dtype {
        DType::F32 => d.bytes().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        DType::I64 => d.bytes().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32).collect(),
        DType::I32 => d.bytes().chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32).collect(),
        other => return Err(b.err(format!("per-channel {what} of type {other}"))),
    })
}

/// `dequantize_per_channel(input, scales, zero_points?, axis, quant_min, quant_max, dtype, *,
/// out_dtype)`: `(q - zp[c]) * scale[c]` along `axis`; constant weights become float constants.
fn dequantize_per_channel(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let scales_id = b.tensor(a, 1)?;
    let zps_id = b.opt_tensor(a, 2)?;
    let dims = b.dims(x);
    let axis = b.axis(b.int(a, 3)?, dims.len())?;
    let scales = floats(b, scales_id, "scales")?;
    let zps = match zps_id {
        Some(z) => floats(b, z, "zero points")?,
        None => vec![0.0; scales.len()],
    };
    let c = dims.get(axis).copied().unwrap_or(0);
    if scales.len() != c || zps.len() != c {
        return Err(b.err(format!("{} scales and {} zero points for {c} channels", scales.len(), zps.len())));
    }
    let k = b.last_out(a)?;
    let q = Quantization::PerAxis { scales, zero_points: zps.iter().map(|&z| z as i64).collect(), axis };
    if b.g.operand(x).data.is_some() {
        let cid = dequantized_constant(b, x, &q)?;
        return b.bind(b.arg_index(a, k)?, cid);
    }
    let q = with_quant(b, x, q);
    let out = b.out(a, k)?;
    b.emit_all(OpKind::Dequantize, &[q], vec![out]);
    Ok(())
}

/// Constant integer operand `x` dequantized with `q` into a new float32 constant:
/// `(v - zero_point) * scale`, per tensor or per slice along the axis.
pub(crate) fn dequantized_constant(b: &mut MethodBuilder<'_, '_>, x: OperandId, q: &Quantization) -> Result<OperandId, LoadError> {
    let xo = b.g.operand(x);
    let data = xo.data.as_ref().ok_or_else(|| b.err(format!("'{}' is not a constant", xo.name)))?;
    let values: Vec<f32> = match xo.dtype {
        DType::I8 => data.bytes().iter().map(|&v| f32::from(v as i8)).collect(),
        DType::U8 => data.bytes().iter().map(|&v| f32::from(v)).collect(),
        DType::I32 => data.bytes().chunks_exact(4).map(|q| i32::from_le_bytes([q[0], q[1], q[2], q[3]]) as f32).collect(),
        other => return Err(b.err(format!("dequantizing {other} is not supported"))),
    };
    let dims = xo.default_dims.clone();
    let real: Vec<f32> = match q {
        Quantization::PerTensor { scale, zero_point } => values.iter().map(|&v| (v - *zero_point as f32) * scale).collect(),
        Quantization::PerAxis { scales, zero_points, axis } => {
            let c = dims.get(*axis).copied().unwrap_or(0);
            if scales.len() != c || zero_points.len() != c {
                return Err(b.err(format!("{} scales and {} zero points for {c} channels", scales.len(), zero_points.len())));
            }
            let inner: usize = dims[axis + 1..].iter().product();
            values.iter().enumerate().map(|(i, &v)| {
                let ch = (i / inner.max(1)) % c.max(1);
                (v - zero_points[ch] as f32) * scales[ch]
            }).collect()
        }
        Quantization::None => values,
    };
    let mut op = nnrt_core::Operand::new(format!("{}_dequantized", xo.name), DType::F32, &dims);
    op.data = Some(ConstData::owned(real.iter().flat_map(|v| v.to_le_bytes()).collect()));
    Ok(b.g.add_operand(op))
}

/// The quantized range of an int8/uint8/int16/int32 `dtype` argument's type, for checking
/// `quant_min`/`quant_max`.
fn qrange(b: &MethodBuilder<'_, '_>, qmin: i64, qmax: i64) -> Result<(i32, i32), LoadError> {
    match (i32::try_from(qmin), i32::try_from(qmax)) {
        (Ok(lo), Ok(hi)) if lo < hi => Ok((lo, hi)),
        _ => Err(b.err(format!("quant_min {qmin} and quant_max {qmax} are not an int32 range with min < max"))),
    }
}

/// `choose_qparams.Tensor_out(input, quant_min, quant_max, eps, dtype, *, scale_out, zero_point_out)`:
/// ExecuTorch's kernel ignores `eps`.
fn choose_qparams(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let (qmin, qmax) = qrange(b, b.int(a, 1)?, b.int(a, 2)?)?;
    defer_qparams(b, a, x, qmin, qmax, 0, 5)
}

/// `choose_qparams_per_token_asymmetric.out(input, dtype, *, scale_out, zero_point_out)`: int8,
/// one scale and zero point per row of the last dim.
fn choose_qparams_per_token(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    defer_qparams(b, a, x, -128, 127, 1, 2)
}

fn defer_qparams(b: &mut MethodBuilder<'_, '_>, a: &[i64], x: OperandId, qmin: i32, qmax: i32, row_dims: usize, k: usize) -> Result<(), LoadError> {
    if b.dtype(x) != DType::F32 {
        return Err(b.err(format!("choosing quantization parameters for {} values (float32 only)", b.dtype(x))));
    }
    for out in [k, k + 1] {
        let i = b.arg_index(a, out)?;
        b.value(i)?;
        b.deferred.insert(i, Deferred::QParams { x, qmin, qmax, row_dims });
    }
    Ok(())
}

/// The tensor and rule of the deferred scale and zero point of arguments 1 and 2.
fn dynamic_params(b: &MethodBuilder<'_, '_>, a: &[i64]) -> Result<(OperandId, i32, i32, usize), LoadError> {
    let (si, zi) = (b.arg_index(a, 1)?, b.arg_index(a, 2)?);
    match (b.deferred.get(&si), b.deferred.get(&zi)) {
        (Some(&Deferred::QParams { x, qmin, qmax, row_dims }), Some(&Deferred::QParams { x: xz, .. })) if x == xz => Ok((x, qmin, qmax, row_dims)),
        _ => Err(b.err(format!("the scale (value {si}) and zero point (value {zi}) are not the result of one choose_qparams: nnrt runs run-time quantization parameters only from choose_qparams"))),
    }
}

/// `quantize_per_tensor.Tensor_out(input, scale, zero_point, quant_min, quant_max, dtype, *, out)`
/// and `quantize_per_token.out(...)` with the parameters `choose_qparams` chose for `input`:
/// deferred to the dequantize that reads the result.
fn quantize_dynamic(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let (src, cmin, cmax, row_dims) = dynamic_params(b, a)?;
    if src != x {
        return Err(b.err("quantizes a tensor with the parameters chosen for another"));
    }
    let (qmin, qmax) = qrange(b, b.int(a, 3)?, b.int(a, 4)?)?;
    if (qmin, qmax) != (cmin, cmax) {
        return Err(b.err(format!("quantizes to {qmin}..={qmax} with parameters chosen for {cmin}..={cmax}")));
    }
    let i = b.arg_index(a, 6)?;
    b.value(i)?;
    b.deferred.insert(i, Deferred::DynQuantized { x, qmin, qmax, row_dims });
    Ok(())
}

/// `dequantize_per_tensor.Tensor_out(input, scale, zero_point, quant_min, quant_max, dtype, *,
/// out_dtype, out)` / `dequantize_per_token.out(...)` of a dynamically quantized tensor: one
/// `DynamicQuantize` of the float tensor it came from.
fn dequantize_dynamic(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let qi = b.arg_index(a, 0)?;
    let Some(&Deferred::DynQuantized { x, qmin, qmax, row_dims }) = b.deferred.get(&qi) else {
        return Err(b.err(format!("dequantizes value {qi} with run-time parameters, but it is not the result of a quantize with choose_qparams' parameters")));
    };
    let (src, ..) = dynamic_params(b, a)?;
    if src != x {
        return Err(b.err("dequantizes with the parameters chosen for another tensor"));
    }
    let k = b.last_out(a)?;
    let out = b.out(a, k)?;
    if b.dtype(out) != DType::F32 {
        return Err(b.err(format!("dequantizing to {} is not supported (float32 only)", b.dtype(out))));
    }
    b.emit_all(OpKind::DynamicQuantize(DynamicQuantize { rule: QParamsRule::ExecuTorch, qmin, qmax, row_dims }), &[x], vec![out]);
    Ok(())
}
