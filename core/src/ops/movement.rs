//! Ops that move data without computing on it: SPLIT, SPLIT_V, PACK, UNPACK, SQUEEZE,
//! EXPAND_DIMS, GATHER, GATHER_ND, TILE, REVERSE_V2.

use super::{fixed, one, spec, Rules, Spec, INDEX_TYPES};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

/// Input slot of the data (every op but SPLIT; the first of PACK's inputs).
pub const INPUT: usize = 0;
/// Input slot of EXPAND_DIMS's axis.
pub const AXIS: usize = 1;
/// Input slot of GATHER's and GATHER_ND's indices.
pub const INDICES: usize = 1;
/// Input slot of TILE's multiples.
pub const MULTIPLES: usize = 1;
/// Input slot of REVERSE_V2's axes.
pub const AXES: usize = 1;

/// Input slots of SPLIT (the axis comes first).
pub mod split {
    /// The axis split.
    pub const AXIS: usize = 0;
    /// The data.
    pub const INPUT: usize = 1;
}

/// Input slots of SPLIT_V.
pub mod split_v {
    /// The data.
    pub const INPUT: usize = 0;
    /// The size of each part (one may be -1).
    pub const SIZE_SPLITS: usize = 1;
    /// The axis split.
    pub const AXIS: usize = 2;
}

pub(crate) const RULES: Rules = Rules { spec: op_spec, infer };

fn op_spec(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Split { .. } => spec("Split", 2, Some(2), None),
        OpKind::SplitV { .. } => spec("SplitV", 3, Some(3), None),
        OpKind::Pack { .. } => spec("Pack", 1, None, Some(1)),
        OpKind::Unpack { .. } => spec("Unpack", 1, Some(1), None),
        OpKind::Squeeze { .. } => fixed("Squeeze", 1, 1),
        OpKind::ExpandDims => fixed("ExpandDims", 2, 1),
        OpKind::Gather { .. } => fixed("Gather", 2, 1),
        OpKind::GatherNd => fixed("GatherNd", 2, 1),
        OpKind::Tile => fixed("Tile", 2, 1),
        OpKind::ReverseV2 => fixed("ReverseV2", 2, 1),
        _ => return None,
    })
}

fn infer(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    match &cx.op.kind {
        OpKind::Split { num_splits } => split(cx, *num_splits),
        OpKind::SplitV { num_splits } => split_v(cx, *num_splits),
        OpKind::Pack { axis, count } => one(pack(cx, *axis, *count)),
        OpKind::Unpack { axis, num } => unpack(cx, *axis, *num),
        OpKind::Squeeze { axes } => one(squeeze(cx, axes)),
        OpKind::ExpandDims => one(expand_dims(cx)),
        OpKind::Gather { axis, batch_dims } => one(gather(cx, *axis, *batch_dims)),
        OpKind::GatherNd => one(gather_nd(cx)),
        OpKind::Tile => one(tile(cx)),
        OpKind::ReverseV2 => one(reverse(cx)),
        _ => Err(cx.unlisted()),
    }
}

fn split(cx: &Cx, num_splits: usize) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(split::INPUT)?;
    cx.outputs_like(split::INPUT)?;
    let axis = cx.axis(cx.const_axis(split::AXIS)?, x.len())?;
    cx.expect_outputs(num_splits)?;
    if num_splits == 0 || x[axis] % num_splits != 0 {
        return Err(cx.input_err(split::INPUT, format!("dim {axis} of {} does not split into {num_splits} equal parts", fmt_dims(x))));
    }
    let mut part = x.to_vec();
    part[axis] /= num_splits;
    Ok(vec![part; num_splits])
}

fn split_v(cx: &Cx, num_splits: usize) -> Result<Vec<Vec<usize>>, CompileError> {
    use split_v::{AXIS, INPUT, SIZE_SPLITS};
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    cx.expect_dtype(SIZE_SPLITS, INDEX_TYPES)?;
    let sizes = cx.const_ints(SIZE_SPLITS)?;
    let axis = cx.axis(cx.const_axis(AXIS)?, x.len())?;
    cx.expect_outputs(num_splits)?;
    if sizes.len() != num_splits {
        return Err(cx.input_err(SIZE_SPLITS, format!("holds {} sizes for {num_splits} splits", sizes.len())));
    }
    let unknown: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] == -1).collect();
    let known: i64 = sizes.iter().filter(|&&s| s != -1).sum();
    if sizes.iter().any(|&s| s < -1) || unknown.len() > 1 {
        return Err(cx.input_err(SIZE_SPLITS, format!("sizes {sizes:?} must be >= 0 with at most one -1")));
    }
    let total = x[axis] as i64;
    let mut sizes = sizes;
    match unknown.first() {
        Some(&i) if known <= total => sizes[i] = total - known,
        None if known == total => {}
        _ => return Err(cx.input_err(SIZE_SPLITS, format!("sizes {sizes:?} do not add up to dim {axis} of {} ({total})", fmt_dims(x)))),
    }
    Ok(sizes
        .iter()
        .map(|&s| {
            let mut d = x.to_vec();
            d[axis] = s as usize;
            d
        })
        .collect())
}

fn pack(cx: &Cx, axis: i32, count: usize) -> Result<Vec<usize>, CompileError> {
    let first = cx.input(INPUT)?;
    let t = cx.outputs_like(INPUT)?;
    if count != cx.op.inputs.len() {
        return Err(cx.err(format!("values_count {count} but the op has {} inputs", cx.op.inputs.len())));
    }
    for i in 1..cx.op.inputs.len() {
        if cx.input(i)? != first || cx.dtype(i)? != t {
            return Err(cx.input_err(i, format!("{} {} differs from input 0's {t} {}", cx.dtype(i)?, fmt_dims(cx.input(i)?), fmt_dims(first))));
        }
    }
    let axis = cx.axis(axis as i64, first.len() + 1)?;
    let mut out = first.to_vec();
    out.insert(axis, count);
    Ok(out)
}

fn unpack(cx: &Cx, axis: i32, num: usize) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    if x.is_empty() {
        return Err(cx.input_err(INPUT, "cannot unpack a scalar"));
    }
    let axis = cx.axis(axis as i64, x.len())?;
    cx.expect_outputs(num)?;
    if x[axis] != num {
        return Err(cx.input_err(INPUT, format!("dim {axis} of {} is not num = {num}", fmt_dims(x))));
    }
    let mut part = x.to_vec();
    part.remove(axis);
    Ok(vec![part; num])
}

fn squeeze(cx: &Cx, axes: &[i32]) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    let mut drop = vec![false; x.len()];
    if axes.is_empty() {
        for (d, &n) in x.iter().enumerate() {
            drop[d] = n == 1;
        }
    }
    for &a in axes {
        let a = cx.axis(a as i64, x.len())?;
        if x[a] != 1 {
            return Err(cx.input_err(INPUT, format!("dim {a} of {} is not 1 and cannot be squeezed", fmt_dims(x))));
        }
        drop[a] = true;
    }
    Ok(x.iter().zip(&drop).filter(|(_, &d)| !d).map(|(&n, _)| n).collect())
}

fn expand_dims(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    let axis = cx.axis(cx.const_axis(AXIS)?, x.len() + 1)?;
    let mut out = x.to_vec();
    out.insert(axis, 1);
    Ok(out)
}

fn gather(cx: &Cx, axis: i32, batch_dims: i32) -> Result<Vec<usize>, CompileError> {
    let (x, idx) = (cx.input(INPUT)?, cx.input(INDICES)?);
    cx.outputs_like(INPUT)?;
    cx.expect_dtype(INDICES, &[DType::I16, DType::I32, DType::I64])?;
    if x.is_empty() {
        return Err(cx.input_err(INPUT, "cannot gather from a scalar"));
    }
    let axis = cx.axis(axis as i64, x.len())?;
    let bd = if batch_dims < 0 { batch_dims as i64 + idx.len() as i64 } else { batch_dims as i64 };
    if bd < 0 || bd as usize > idx.len() || bd as usize > axis {
        return Err(cx.err(format!("batch_dims {batch_dims} must lie in [0, min(axis {axis}, indices rank {})]", idx.len())));
    }
    let bd = bd as usize;
    if x[..bd] != idx[..bd] {
        return Err(cx.input_err(INDICES, format!("the first {bd} dims of {} must equal the params' {}", fmt_dims(idx), fmt_dims(x))));
    }
    let mut out = x[..axis].to_vec();
    out.extend_from_slice(&idx[bd..]);
    out.extend_from_slice(&x[axis + 1..]);
    Ok(out)
}

fn gather_nd(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (x, idx) = (cx.input(INPUT)?, cx.input(INDICES)?);
    cx.outputs_like(INPUT)?;
    cx.expect_dtype(INDICES, &[DType::I16, DType::I32, DType::I64])?;
    let k = *idx.last().ok_or_else(|| cx.input_err(INDICES, "indices must have rank >= 1"))?;
    if k > x.len() {
        return Err(cx.input_err(INDICES, format!("index tuples of {k} exceed the params' rank {}", x.len())));
    }
    let mut out = idx[..idx.len() - 1].to_vec();
    out.extend_from_slice(&x[k..]);
    Ok(out)
}

fn tile(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    cx.expect_dtype(MULTIPLES, INDEX_TYPES)?;
    let m = cx.const_ints(MULTIPLES)?;
    if m.len() != x.len() || m.iter().any(|&v| v < 0) {
        return Err(cx.input_err(MULTIPLES, format!("multiples {m:?} need one value >= 0 per dim of {}", fmt_dims(x))));
    }
    Ok(x.iter().zip(&m).map(|(&d, &k)| d * k as usize).collect())
}

fn reverse(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    cx.expect_dtype(AXES, INDEX_TYPES)?;
    for a in cx.const_ints(AXES)? {
        cx.axis(a, x.len())?;
    }
    Ok(x.to_vec())
}
