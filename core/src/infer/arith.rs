//! Shape rules of the element-wise and broadcasting builtins added after the first op set:
//! ADD_N, ATAN2, BITWISE_XOR / RIGHT_SHIFT, BUCKETIZE, LOCAL_RESPONSE_NORMALIZATION,
//! BROADCAST_TO, BROADCAST_ARGS.

use super::elementwise::broadcast_shapes;
use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, LocalResponseNorm};

/// Checks that output 0 has the type of input `i`.
fn out_like(cx: &Cx, i: usize) -> Result<DType, CompileError> {
    let t = cx.dtype(i)?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but input {i} has {t}", cx.out_dtype(0)?)));
    }
    Ok(t)
}

/// ADD_N: two or more float32 / int32 tensors of one shape (no broadcasting, as TFLite).
pub(super) fn add_n(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let first = cx.input(0)?;
    let t = cx.expect_dtype(0, &[DType::F32, DType::I32])?;
    for i in 1..cx.op.inputs.len() {
        if cx.input(i)? != first || cx.dtype(i)? != t {
            return Err(cx.input_err(i, format!("is {} {}; every input must match input 0 ({t} {})", cx.dtype(i)?, fmt_dims(cx.input(i)?), fmt_dims(first))));
        }
    }
    out_like(cx, 0)?;
    Ok(first.to_vec())
}

/// ATAN2(y, x): float32 tensors of one shape (TFLite does not broadcast).
pub(super) fn atan2(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (y, x) = (cx.input(0)?, cx.input(1)?);
    cx.expect_dtype(0, &[DType::F32])?;
    cx.expect_dtype(1, &[DType::F32])?;
    if y != x {
        return Err(cx.input_err(1, format!("x has shape {} but y has {}; ATAN2 does not broadcast", fmt_dims(x), fmt_dims(y))));
    }
    out_like(cx, 0)?;
    Ok(y.to_vec())
}

/// BITWISE_XOR / RIGHT_SHIFT: two integer tensors of one type, broadcast.
pub(super) fn bitwise(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.expect_dtype(0, &[DType::U8, DType::I8, DType::I16, DType::I32])?;
    if cx.dtype(1)? != t {
        return Err(cx.input_err(1, format!("has type {} but input 0 has {t}; both must match", cx.dtype(1)?)));
    }
    for i in 0..2 {
        if cx.g.operand(cx.input_id(i)?).quant.is_quantized() {
            return Err(cx.input_err(i, "is quantized; bitwise ops take plain integers"));
        }
    }
    out_like(cx, 0)?;
    let (a, b) = (cx.input(0)?, cx.input(1)?);
    broadcast_shapes(a, b).ok_or_else(|| cx.err(format!("shapes {} and {} cannot be broadcast together", fmt_dims(a), fmt_dims(b))))
}

/// BUCKETIZE: int32 bucket indices of float32 / int32 / int64 values; boundaries sorted.
pub(super) fn bucketize(cx: &Cx, boundaries: &[f32]) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::F32, DType::I32, DType::I64])?;
    cx.expect_out_dtype(0, DType::I32)?;
    if let Some(w) = boundaries.windows(2).find(|w| w[1] < w[0]) {
        return Err(cx.err(format!("boundaries must be sorted ascending; {} comes before {}", w[0], w[1])));
    }
    Ok(cx.input(0)?.to_vec())
}

/// FAKE_QUANT: float32 in and out, a range `min < max` and 2 to 16 bits (TFLite's limits). Like
/// TFLite, a narrow range is refused: it only applies to weights, which converters fold.
pub(super) fn fake_quant(cx: &Cx, min: f32, max: f32, num_bits: u32, narrow_range: bool) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(0, &[DType::F32])?;
    cx.expect_out_dtype(0, DType::F32)?;
    if narrow_range {
        return Err(cx.err("narrow_range FAKE_QUANT is not supported at run time (it only applies to weights, as in TFLite)"));
    }
    if min.partial_cmp(&max) != Some(std::cmp::Ordering::Less) || !(2..=16).contains(&num_bits) {
        return Err(cx.err(format!("needs min < max and 2..=16 bits, got [{min}, {max}] with {num_bits} bits")));
    }
    Ok(cx.input(0)?.to_vec())
}

/// LOCAL_RESPONSE_NORMALIZATION: a 4-D float32 tensor, normalized over its last dim.
pub(super) fn lrn(cx: &Cx, p: &LocalResponseNorm) -> Result<Vec<usize>, CompileError> {
    let x = cx.expect_rank(0, 4)?;
    cx.expect_dtype(0, &[DType::F32])?;
    out_like(cx, 0)?;
    if p.radius < 0 || !p.bias.is_finite() || !p.alpha.is_finite() || !p.beta.is_finite() {
        return Err(cx.err(format!("radius {} must be >= 0 and bias {}, alpha {}, beta {} finite", p.radius, p.bias, p.alpha, p.beta)));
    }
    Ok(x.to_vec())
}

/// TFLite's limit on BROADCAST_TO's output rank.
const MAX_BROADCAST_RANK: usize = 8;

/// BROADCAST_TO: input 0 stretched to the dims in input 1 (a constant, or read at run time).
pub(super) fn broadcast_to(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    out_like(cx, 0)?;
    cx.expect_dtype(1, &[DType::I32, DType::I64])?;
    if cx.input(1)?.len() != 1 {
        return Err(cx.input_err(1, format!("the shape must be 1-D, is {}", fmt_dims(cx.input(1)?))));
    }
    let dims = cx.const_ints(1)?;
    if dims.len() > MAX_BROADCAST_RANK || dims.len() < x.len() {
        return Err(cx.input_err(1, format!("a shape of rank {} cannot hold input {} (rank at most {MAX_BROADCAST_RANK})", dims.len(), fmt_dims(x))));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(cx.input_err(1, format!("dim {d} of shape {dims:?} must be >= 0")));
    }
    let out: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let off = out.len() - x.len();
    for (k, &d) in x.iter().enumerate() {
        if d != 1 && d != out[off + k] {
            return Err(cx.input_err(1, format!("input {} does not broadcast to {}", fmt_dims(x), fmt_dims(&out))));
        }
    }
    Ok(out)
}

/// BROADCAST_ARGS: the broadcast of two 1-D shapes (int32 or int64, one type for all three).
/// The length is known from the inputs' lengths; whether they broadcast is checked on the values.
pub(super) fn broadcast_args(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.expect_dtype(0, &[DType::I32, DType::I64])?;
    if cx.dtype(1)? != t {
        return Err(cx.input_err(1, format!("has type {} but input 0 has {t}", cx.dtype(1)?)));
    }
    out_like(cx, 0)?;
    let (a, b) = (cx.expect_rank(0, 1)?, cx.expect_rank(1, 1)?);
    Ok(vec![a[0].max(b[0])])
}
