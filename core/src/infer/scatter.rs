//! Shape rules of ops that write values at computed positions: SCATTER_ND, SPARSE_TO_DENSE,
//! DYNAMIC_UPDATE_SLICE, EMBEDDING_LOOKUP, SEGMENT_SUM, UNSORTED_SEGMENT_*. Where the output
//! shape comes from a tensor's values (SCATTER_ND's shape, SPARSE_TO_DENSE's output shape,
//! SEGMENT_SUM's ids, UNSORTED_SEGMENT's count), a computed tensor makes the output dynamic.

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType};

/// Dims from the values of a 1-D shape input, each checked >= 0.
fn shape_values(cx: &Cx, i: usize) -> Result<Vec<usize>, CompileError> {
    let dims = cx.const_ints(i)?;
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(cx.input_err(i, format!("dim {d} of shape {dims:?} must be >= 0")));
    }
    Ok(dims.iter().map(|&d| d as usize).collect())
}

/// Whether input `i` is a constant (its values can be checked at prepare).
fn is_const(cx: &Cx, i: usize) -> bool {
    cx.op.input(i).is_some_and(|id| cx.g.operand(id).data.is_some())
}

/// SCATTER_ND(indices, updates, shape): `indices` int32 `[.., k]`, `updates` `indices[..-1] ++
/// shape[k..]`, output `shape` of the updates' type.
pub(super) fn scatter_nd(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (ix, up) = (cx.input(0)?, cx.input(1)?);
    cx.expect_dtype(0, &[DType::I32])?;
    cx.expect_dtype(2, &[DType::I32])?;
    let t = cx.expect_dtype(1, &[DType::F32, DType::U8, DType::Bool, DType::I8, DType::I64, DType::I32])?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the updates have {t}", cx.out_dtype(0)?)));
    }
    cx.expect_rank(2, 1)?;
    if ix.is_empty() || up.is_empty() {
        return Err(cx.err(format!("indices {} and updates {} must have rank >= 1", fmt_dims(ix), fmt_dims(up))));
    }
    let shape = shape_values(cx, 2)?;
    let outer = ix.len() - 1;
    let k = ix[outer];
    let want: Option<Vec<usize>> = (k <= shape.len()).then(|| ix[..outer].iter().chain(&shape[k..]).copied().collect());
    if want.as_deref() != Some(up) {
        return Err(cx.input_err(1, format!("updates {} do not fit indices {} into shape {}", fmt_dims(up), fmt_dims(ix), fmt_dims(&shape))));
    }
    Ok(shape)
}

/// TFLite's SPARSE_TO_DENSE writes at most 4-D outputs.
const SPARSE_MAX_RANK: usize = 4;

/// SPARSE_TO_DENSE(indices, output_shape, values, default_value).
pub(super) fn sparse_to_dense(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (ix, sh, vals) = (cx.input(0)?, cx.input(1)?, cx.input(2)?);
    cx.expect_dtype(0, &[DType::I32, DType::I64])?;
    cx.expect_dtype(1, &[DType::I32, DType::I64])?;
    let t = cx.expect_dtype(2, &[DType::I32, DType::I64, DType::I8, DType::U8, DType::F32])?;
    if cx.dtype(3)? != t || cx.input(3)?.iter().product::<usize>() != 1 {
        return Err(cx.input_err(3, format!("the default must be one {t} value, is {} {}", cx.dtype(3)?, fmt_dims(cx.input(3)?))));
    }
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the values have {t}", cx.out_dtype(0)?)));
    }
    if ix.len() > 2 || sh.len() != 1 || vals.len() > 1 {
        return Err(cx.err(format!("indices {} must have rank <= 2, output_shape {} rank 1, values {} rank <= 1", fmt_dims(ix), fmt_dims(sh), fmt_dims(vals))));
    }
    let n: usize = ix.iter().product();
    let (count, depth) = if ix.len() == 2 { (ix[0], ix[1]) } else { (n, 1) };
    if sh[0] != depth || depth > SPARSE_MAX_RANK {
        return Err(cx.input_err(1, format!("output_shape {} must name one dim per index column ({depth}, at most {SPARSE_MAX_RANK})", fmt_dims(sh))));
    }
    if !vals.is_empty() && vals[0] != count {
        return Err(cx.input_err(2, format!("holds {} values for {count} indices", vals[0])));
    }
    shape_values(cx, 1)
}

/// DYNAMIC_UPDATE_SLICE(operand, update, start_indices): the operand's shape.
pub(super) fn dynamic_update_slice(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (x, u) = (cx.input(0)?, cx.input(1)?);
    let t = cx.dtype(0)?;
    if cx.dtype(1)? != t || cx.out_dtype(0)? != t {
        return Err(cx.input_err(1, format!("update {} and output {} must have the operand's type {t}", cx.dtype(1)?, cx.out_dtype(0)?)));
    }
    cx.expect_dtype(2, &[DType::I32, DType::I64])?;
    if u.len() != x.len() || u.iter().zip(x).any(|(a, b)| a > b) {
        return Err(cx.input_err(1, format!("update {} must have the operand's rank and fit in {}", fmt_dims(u), fmt_dims(x))));
    }
    let s = cx.expect_rank(2, 1)?;
    if s[0] != x.len() {
        return Err(cx.input_err(2, format!("holds {} start indices for rank {}", s[0], x.len())));
    }
    Ok(x.to_vec())
}

/// EMBEDDING_LOOKUP(lookup, value): rows of `value` at int32 `lookup`; a quantized 8-bit
/// `value` with a float32 output is dequantized (zero point 0; per-row scales allowed).
pub(super) fn embedding_lookup(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let ix = cx.expect_rank(0, 1)?;
    cx.expect_dtype(0, &[DType::I32])?;
    let v = cx.input(1)?;
    if v.len() < 2 {
        return Err(cx.input_err(1, format!("the table must have rank >= 2, is {}", fmt_dims(v))));
    }
    let (t, out) = (cx.dtype(1)?, cx.out_dtype(0)?);
    let hybrid = matches!(t, DType::U8 | DType::I8) && out == DType::F32;
    if !(hybrid || out == t) {
        return Err(cx.out_err(0, format!("has type {out}; the {t} table gives {t} (or float32 from a quantized 8-bit table)")));
    }
    if hybrid {
        let q = &cx.g.operand(cx.input_id(1)?).quant;
        let ok = match q {
            crate::Quantization::PerTensor { zero_point, .. } => *zero_point == 0,
            crate::Quantization::PerAxis { zero_points, axis, scales } => *axis == 0 && scales.len() == v[0] && zero_points.iter().all(|&z| z == 0),
            crate::Quantization::None => false,
        };
        if !ok {
            return Err(cx.input_err(1, "a table dequantized to float32 needs a scale (per tensor or per row) and zero point 0"));
        }
    }
    let mut out_dims = v.to_vec();
    out_dims[0] = ix[0];
    Ok(out_dims)
}

/// Checks a data tensor for the segment ops: float32 or int32, like the output.
fn segment_data<'a>(cx: &Cx<'a>) -> Result<&'a [usize], CompileError> {
    let t = cx.expect_dtype(0, &[DType::F32, DType::I32])?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the data has {t}", cx.out_dtype(0)?)));
    }
    cx.expect_dtype(1, &[DType::I32])?;
    let d = cx.input(0)?;
    if d.is_empty() {
        return Err(cx.input_err(0, "the data must have rank >= 1"));
    }
    Ok(d)
}

/// SEGMENT_SUM(data, ids): ids 1-D, one per row, starting at 0 and rising by 0 or 1.
pub(super) fn segment_sum(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let d = segment_data(cx)?;
    let s = cx.expect_rank(1, 1)?;
    if s[0] != d[0] {
        return Err(cx.input_err(1, format!("holds {} ids for {} rows", s[0], d[0])));
    }
    let ids = cx.const_ints(1)?;
    let mut prev = -1;
    for (k, &id) in ids.iter().enumerate() {
        if (k == 0 && id != 0) || (k > 0 && id != prev && id != prev + 1) {
            return Err(cx.input_err(1, format!("segment ids must start at 0 and rise by 0 or 1; id {k} is {id} after {prev}")));
        }
        prev = id;
    }
    let mut out = d.to_vec();
    out[0] = (prev + 1) as usize;
    Ok(out)
}

/// UNSORTED_SEGMENT_*(data, ids, num_segments): ids shaped like a prefix of the data's dims;
/// output `[num_segments] ++ data[rank(ids)..]`. Negative ids drop their slice.
pub(super) fn unsorted_segment(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let d = segment_data(cx)?;
    let s = cx.input(1)?;
    if s.len() > d.len() || s != &d[..s.len()] {
        return Err(cx.input_err(1, format!("ids {} must be shaped like a prefix of the data {}", fmt_dims(s), fmt_dims(d))));
    }
    cx.expect_dtype(2, &[DType::I32])?;
    if cx.input(2)?.len() > 1 || cx.input(2)?.iter().product::<usize>() != 1 {
        return Err(cx.input_err(2, format!("num_segments must be a scalar, is {}", fmt_dims(cx.input(2)?))));
    }
    let n = cx.const_scalar(2)?;
    if n < 0 {
        return Err(cx.input_err(2, format!("num_segments {n} must be >= 0")));
    }
    if is_const(cx, 1) {
        if let Some(id) = cx.const_ints(1)?.into_iter().find(|&id| id >= n) {
            return Err(cx.input_err(1, format!("segment id {id} is not below num_segments {n}")));
        }
    }
    let mut out = vec![n as usize];
    out.extend_from_slice(&d[s.len()..]);
    Ok(out)
}
