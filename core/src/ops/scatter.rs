//! Ops that write values at computed positions: SCATTER_ND, SPARSE_TO_DENSE,
//! DYNAMIC_UPDATE_SLICE, EMBEDDING_LOOKUP, SEGMENT_SUM, UNSORTED_SEGMENT_*. Where the output
//! shape comes from a tensor's values (SCATTER_ND's shape, SPARSE_TO_DENSE's output shape,
//! SEGMENT_SUM's ids, UNSORTED_SEGMENT's count), a computed tensor makes the output dynamic.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots! {
    /// Input slots of SCATTER_ND.
    mod scatter_nd: INDICES = 0: "The int32 index tuples `[.., k]`.", UPDATES = 1: "The values added at them.", SHAPE = 2: "The output shape.";
    /// Input slots of SPARSE_TO_DENSE.
    mod sparse_to_dense: INDICES = 0: "The indices (rank <= 2).", OUTPUT_SHAPE = 1: "The output shape.",
        VALUES = 2: "The values at the indices (one, or one per index).", DEFAULT_VALUE = 3: "The value elsewhere.";
    /// Input slots of DYNAMIC_UPDATE_SLICE.
    mod dynamic_update_slice: OPERAND = 0: "The tensor updated.", UPDATE = 1: "The slice written.",
        START_INDICES = 2: "Where it starts, one index per dim.";
    /// Input slots of EMBEDDING_LOOKUP.
    mod embedding_lookup: LOOKUP = 0: "The int32 row numbers.", VALUE = 1: "The table.";
    /// Input slots of ScatterRows (TOSA SCATTER).
    mod scatter_rows: VALUES_IN = 0: "The rows `[N, K, C]` copied to the output.", ROWS = 1: "The int32 row numbers `[N, W]` written.",
        UPDATES = 2: "The rows `[N, W, C]` written there.";
    /// Input slots of SEGMENT_SUM and UNSORTED_SEGMENT_*.
    mod segment: DATA = 0: "The rows combined.", SEGMENT_IDS = 1: "The segment of each row.",
        NUM_SEGMENTS = 2: "UNSORTED_SEGMENT_*'s count of segments.";
}

/// How UNSORTED_SEGMENT_* combines the rows of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentOp {
    /// Sum (0 for an empty segment).
    Sum,
    /// Maximum (the type's lowest value for an empty segment).
    Max,
    /// Minimum (the type's highest value for an empty segment).
    Min,
    /// Product (1 for an empty segment).
    Prod,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::ScatterNd => fixed("ScatterNd", 3, 1, One(scatter_nd)),
        OpKind::ScatterRows => fixed("ScatterRows", 3, 1, One(scatter_rows)),
        OpKind::SparseToDense { .. } => fixed("SparseToDense", 4, 1, One(sparse_to_dense)),
        OpKind::DynamicUpdateSlice => fixed("DynamicUpdateSlice", 3, 1, One(dynamic_update_slice)),
        OpKind::EmbeddingLookup => fixed("EmbeddingLookup", 2, 1, One(embedding_lookup)),
        OpKind::SegmentSum => fixed("SegmentSum", 2, 1, One(segment_sum)),
        OpKind::UnsortedSegment(s) => {
            let name = match s {
                SegmentOp::Sum => "UnsortedSegmentSum",
                SegmentOp::Max => "UnsortedSegmentMax",
                SegmentOp::Min => "UnsortedSegmentMin",
                SegmentOp::Prod => "UnsortedSegmentProd",
            };
            fixed(name, 3, 1, One(unsorted_segment))
        }
        _ => return None,
    })
}

/// Dims from the values of a 1-D shape input, each checked >= 0.
fn shape_values(cx: &Cx, i: usize) -> Result<Vec<usize>, CompileError> {
    let dims = cx.const_ints(i)?;
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(cx.input_err(i, format!("dim {d} of shape {dims:?} must be >= 0")));
    }
    Ok(dims.iter().map(|&d| d as usize).collect())
}

/// ScatterRows (TOSA SCATTER): `values_in [N, K, C]`, int32 `rows [N, W]`, `updates [N, W, C]`
/// of the values' type; the output is `[N, K, C]`.
fn scatter_rows(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use scatter_rows::{ROWS, UPDATES, VALUES_IN};
    let (v, r, u) = (cx.expect_rank(VALUES_IN, 3)?, cx.expect_rank(ROWS, 2)?, cx.expect_rank(UPDATES, 3)?);
    cx.expect_dtype(ROWS, &[DType::I32])?;
    let t = cx.dtype(VALUES_IN)?;
    cx.expect_dtype(UPDATES, &[t])?;
    cx.expect_out_dtype(0, t)?;
    if r[0] != v[0] || u[0] != v[0] || u[1] != r[1] || u[2] != v[2] {
        return Err(cx.err(format!("values {}, rows {} and updates {} must be [N, K, C], [N, W] and [N, W, C]", fmt_dims(v), fmt_dims(r), fmt_dims(u))));
    }
    Ok(v.to_vec())
}

/// SCATTER_ND(indices, updates, shape): `indices` int32 `[.., k]`, `updates` `indices[..-1] ++
/// shape[k..]`, output `shape` of the updates' type.
fn scatter_nd(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use scatter_nd::{INDICES, SHAPE, UPDATES};
    let (ix, up) = (cx.input(INDICES)?, cx.input(UPDATES)?);
    cx.expect_dtype(INDICES, &[DType::I32])?;
    cx.expect_dtype(SHAPE, &[DType::I32])?;
    let t = cx.expect_dtype(UPDATES, &[DType::F32, DType::U8, DType::Bool, DType::I8, DType::I64, DType::I32])?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the updates have {t}", cx.out_dtype(0)?)));
    }
    cx.expect_rank(SHAPE, 1)?;
    if ix.is_empty() || up.is_empty() {
        return Err(cx.err(format!("indices {} and updates {} must have rank >= 1", fmt_dims(ix), fmt_dims(up))));
    }
    let shape = shape_values(cx, SHAPE)?;
    let outer = ix.len() - 1;
    let k = ix[outer];
    let want: Option<Vec<usize>> = (k <= shape.len()).then(|| ix[..outer].iter().chain(&shape[k..]).copied().collect());
    if want.as_deref() != Some(up) {
        return Err(cx.input_err(UPDATES, format!("updates {} do not fit indices {} into shape {}", fmt_dims(up), fmt_dims(ix), fmt_dims(&shape))));
    }
    Ok(shape)
}

/// TFLite's SPARSE_TO_DENSE writes at most 4-D outputs.
const SPARSE_MAX_RANK: usize = 4;

/// SPARSE_TO_DENSE(indices, output_shape, values, default_value).
fn sparse_to_dense(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use sparse_to_dense::{DEFAULT_VALUE, INDICES, OUTPUT_SHAPE, VALUES};
    let (ix, sh, vals) = (cx.input(INDICES)?, cx.input(OUTPUT_SHAPE)?, cx.input(VALUES)?);
    cx.expect_dtype(INDICES, &[DType::I32, DType::I64])?;
    cx.expect_dtype(OUTPUT_SHAPE, &[DType::I32, DType::I64])?;
    let t = cx.expect_dtype(VALUES, &[DType::I32, DType::I64, DType::I8, DType::U8, DType::F32])?;
    if cx.dtype(DEFAULT_VALUE)? != t || cx.input(DEFAULT_VALUE)?.iter().product::<usize>() != 1 {
        return Err(cx.input_err(DEFAULT_VALUE, format!("the default must be one {t} value, is {} {}", cx.dtype(DEFAULT_VALUE)?, fmt_dims(cx.input(DEFAULT_VALUE)?))));
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
        return Err(cx.input_err(OUTPUT_SHAPE, format!("output_shape {} must name one dim per index column ({depth}, at most {SPARSE_MAX_RANK})", fmt_dims(sh))));
    }
    if !vals.is_empty() && vals[0] != count {
        return Err(cx.input_err(VALUES, format!("holds {} values for {count} indices", vals[0])));
    }
    shape_values(cx, OUTPUT_SHAPE)
}

/// DYNAMIC_UPDATE_SLICE(operand, update, start_indices): the operand's shape.
fn dynamic_update_slice(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use dynamic_update_slice::{OPERAND, START_INDICES, UPDATE};
    let (x, u) = (cx.input(OPERAND)?, cx.input(UPDATE)?);
    let t = cx.dtype(OPERAND)?;
    if cx.dtype(UPDATE)? != t || cx.out_dtype(0)? != t {
        return Err(cx.input_err(UPDATE, format!("update {} and output {} must have the operand's type {t}", cx.dtype(UPDATE)?, cx.out_dtype(0)?)));
    }
    cx.expect_dtype(START_INDICES, &[DType::I32, DType::I64])?;
    if u.len() != x.len() || u.iter().zip(x).any(|(a, b)| a > b) {
        return Err(cx.input_err(UPDATE, format!("update {} must have the operand's rank and fit in {}", fmt_dims(u), fmt_dims(x))));
    }
    let s = cx.expect_rank(START_INDICES, 1)?;
    if s[0] != x.len() {
        return Err(cx.input_err(START_INDICES, format!("holds {} start indices for rank {}", s[0], x.len())));
    }
    Ok(x.to_vec())
}

/// EMBEDDING_LOOKUP(lookup, value): rows of `value` at int32 `lookup`; a quantized 8-bit
/// `value` with a float32 output is dequantized (zero point 0; per-row scales allowed).
fn embedding_lookup(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use embedding_lookup::{LOOKUP, VALUE};
    let ix = cx.expect_rank(LOOKUP, 1)?;
    cx.expect_dtype(LOOKUP, &[DType::I32])?;
    let v = cx.input(VALUE)?;
    if v.len() < 2 {
        return Err(cx.input_err(VALUE, format!("the table must have rank >= 2, is {}", fmt_dims(v))));
    }
    let (t, out) = (cx.dtype(VALUE)?, cx.out_dtype(0)?);
    let hybrid = matches!(t, DType::U8 | DType::I8) && out == DType::F32;
    if !(hybrid || out == t) {
        return Err(cx.out_err(0, format!("has type {out}; the {t} table gives {t} (or float32 from a quantized 8-bit table)")));
    }
    if hybrid {
        let q = &cx.g.operand(cx.input_id(VALUE)?).quant;
        let ok = match q {
            crate::Quantization::PerTensor { zero_point, .. } => *zero_point == 0,
            crate::Quantization::PerAxis { zero_points, axis, scales } => *axis == 0 && scales.len() == v[0] && zero_points.iter().all(|&z| z == 0),
            crate::Quantization::None => false,
        };
        if !ok {
            return Err(cx.input_err(VALUE, "a table dequantized to float32 needs a scale (per tensor or per row) and zero point 0"));
        }
    }
    let mut out_dims = v.to_vec();
    out_dims[0] = ix[0];
    Ok(out_dims)
}

/// Checks a data tensor for the segment ops: float32 or int32, like the output.
fn segment_data<'a>(cx: &Cx<'a>) -> Result<&'a [usize], CompileError> {
    use segment::{DATA, SEGMENT_IDS};
    let t = cx.expect_dtype(DATA, &[DType::F32, DType::I32])?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the data has {t}", cx.out_dtype(0)?)));
    }
    cx.expect_dtype(SEGMENT_IDS, &[DType::I32])?;
    let d = cx.input(DATA)?;
    if d.is_empty() {
        return Err(cx.input_err(DATA, "the data must have rank >= 1"));
    }
    Ok(d)
}

/// SEGMENT_SUM(data, ids): ids 1-D, one per row, starting at 0 and rising by 0 or 1.
fn segment_sum(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use segment::SEGMENT_IDS;
    let d = segment_data(cx)?;
    let s = cx.expect_rank(SEGMENT_IDS, 1)?;
    if s[0] != d[0] {
        return Err(cx.input_err(SEGMENT_IDS, format!("holds {} ids for {} rows", s[0], d[0])));
    }
    let ids = cx.const_ints(SEGMENT_IDS)?;
    let mut prev = -1;
    for (k, &id) in ids.iter().enumerate() {
        if (k == 0 && id != 0) || (k > 0 && id != prev && id != prev + 1) {
            return Err(cx.input_err(SEGMENT_IDS, format!("segment ids must start at 0 and rise by 0 or 1; id {k} is {id} after {prev}")));
        }
        prev = id;
    }
    let mut out = d.to_vec();
    out[0] = (prev + 1) as usize;
    Ok(out)
}

/// UNSORTED_SEGMENT_*(data, ids, num_segments): ids shaped like a prefix of the data's dims;
/// output `[num_segments] ++ data[rank(ids)..]`. Negative ids drop their slice.
fn unsorted_segment(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use segment::{NUM_SEGMENTS, SEGMENT_IDS};
    let d = segment_data(cx)?;
    let s = cx.input(SEGMENT_IDS)?;
    if s.len() > d.len() || s != &d[..s.len()] {
        return Err(cx.input_err(SEGMENT_IDS, format!("ids {} must be shaped like a prefix of the data {}", fmt_dims(s), fmt_dims(d))));
    }
    cx.expect_dtype(NUM_SEGMENTS, &[DType::I32])?;
    if cx.input(NUM_SEGMENTS)?.len() > 1 || cx.input(NUM_SEGMENTS)?.iter().product::<usize>() != 1 {
        return Err(cx.input_err(NUM_SEGMENTS, format!("num_segments must be a scalar, is {}", fmt_dims(cx.input(NUM_SEGMENTS)?))));
    }
    let n = cx.const_scalar(NUM_SEGMENTS)?;
    if n < 0 {
        return Err(cx.input_err(NUM_SEGMENTS, format!("num_segments {n} must be >= 0")));
    }
    if cx.is_const(SEGMENT_IDS) {
        if let Some(id) = cx.const_ints(SEGMENT_IDS)?.into_iter().find(|&id| id >= n) {
            return Err(cx.input_err(SEGMENT_IDS, format!("segment id {id} is not below num_segments {n}")));
        }
    }
    let mut out = vec![n as usize];
    out.extend_from_slice(&d[s.len()..]);
    Ok(out)
}
