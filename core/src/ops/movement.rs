//! Ops that move data without computing on it: SPLIT, SPLIT_V, PACK, UNPACK, SQUEEZE,
//! EXPAND_DIMS, GATHER, GATHER_ND, TILE, DILATE, REVERSE_V2.

use super::Shapes::{Many, One};
use super::{fixed, spec, Spec, INDEX_TYPES};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the data (every op but SPLIT; the first of PACK's inputs).", AXIS = 1: "Input slot of EXPAND_DIMS's axis.",
    INDICES = 1: "Input slot of GATHER's and GATHER_ND's indices.", MULTIPLES = 1: "Input slot of TILE's multiples.",
    AXES = 1: "Input slot of REVERSE_V2's axes."
);

slots! {
    /// Input slots of SPLIT (the axis comes first).
    mod split: AXIS = 0: "The axis split.", INPUT = 1: "The data.";
    /// Input slots of SPLIT_V.
    mod split_v: INPUT = 0: "The data.", SIZE_SPLITS = 1: "The size of each part (one may be -1).", AXIS = 2: "The axis split.";
    /// Input slots of DILATE.
    mod dilate: INPUT = 0: "The data.", DILATIONS = 1: "One int32 factor >= 1 per dim.", PADDING_VALUE = 2: "A one-element tensor of the data's type filling the gaps.";
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Split { .. } => spec("Split", 2, Some(2), None, Many(split)),
        OpKind::SplitV { .. } => spec("SplitV", 3, Some(3), None, Many(split_v)),
        OpKind::Pack { .. } => spec("Pack", 1, None, Some(1), One(pack)),
        OpKind::Unpack { .. } => spec("Unpack", 1, Some(1), None, Many(unpack)),
        OpKind::Squeeze { .. } => fixed("Squeeze", 1, 1, One(squeeze)),
        OpKind::ExpandDims => fixed("ExpandDims", 2, 1, One(expand_dims)),
        OpKind::Gather { .. } => fixed("Gather", 2, 1, One(gather)),
        OpKind::GatherNd => fixed("GatherNd", 2, 1, One(gather_nd)),
        OpKind::Tile => fixed("Tile", 2, 1, One(tile)),
        OpKind::Dilate => fixed("Dilate", 3, 1, One(dilate_shape)),
        OpKind::ReverseV2 => fixed("ReverseV2", 2, 1, One(reverse)),
        _ => return None,
    })
}

/// SPLIT: `num_splits` equal parts along the axis in input 0.
fn split(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let OpKind::Split { num_splits } = cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.input(split::INPUT)?;
    cx.outputs_like(split::INPUT)?;
    let axis = cx.dim_axis(cx.const_axis(split::AXIS)?, x.len())?;
    cx.expect_outputs(num_splits)?;
    if num_splits == 0 || x[axis] % num_splits != 0 {
        return Err(cx.input_err(split::INPUT, format!("dim {axis} of {} does not split into {num_splits} equal parts", fmt_dims(x))));
    }
    let mut part = x.to_vec();
    part[axis] /= num_splits;
    Ok(vec![part; num_splits])
}

/// SPLIT_V: parts of the given sizes (one may be -1) along the axis in input 2.
fn split_v(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let OpKind::SplitV { num_splits } = cx.op.kind else { return Err(cx.unlisted()) };
    use split_v::{AXIS, INPUT, SIZE_SPLITS};
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    cx.expect_dtype(SIZE_SPLITS, INDEX_TYPES)?;
    let sizes = cx.const_ints(SIZE_SPLITS)?;
    let axis = cx.dim_axis(cx.const_axis(AXIS)?, x.len())?;
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

/// PACK: inputs of one shape and type stacked along a new dim.
fn pack(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Pack { axis, count } = cx.op.kind else { return Err(cx.unlisted()) };
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

/// UNPACK: `num` outputs, the input without the unpacked dim.
fn unpack(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let OpKind::Unpack { axis, num } = cx.op.kind else { return Err(cx.unlisted()) };
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

/// SQUEEZE: drops the given dims of size 1 (every one when none is given).
fn squeeze(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Squeeze { axes } = &cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    let mut drop = vec![false; x.len()];
    if axes.is_empty() {
        for (d, &n) in x.iter().enumerate() {
            drop[d] = n == 1;
        }
    }
    for &a in axes {
        let a = cx.dim_axis(a as i64, x.len())?;
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

/// GATHER: the indices' dims replace the params' axis (after `batch_dims` shared dims).
fn gather(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Gather { axis, batch_dims } = cx.op.kind else { return Err(cx.unlisted()) };
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

/// DILATE: a dim of `n` elements dilated by `d` holds `(n - 1) * d + 1` (an empty dim stays empty).
fn dilate_shape(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use dilate::{DILATIONS, INPUT, PADDING_VALUE};
    let x = cx.input(INPUT)?;
    let t = cx.outputs_like(INPUT)?;
    if x.is_empty() {
        return Err(cx.input_err(INPUT, "is a scalar; DILATE needs a tensor of rank 1 or more"));
    }
    cx.expect_dtype(DILATIONS, &[DType::I32])?;
    if cx.dtype(PADDING_VALUE)? != t || cx.input(PADDING_VALUE)?.iter().product::<usize>() != 1 {
        return Err(cx.input_err(PADDING_VALUE, format!("the padding value must hold one {t} value (the data's type)")));
    }
    let d = cx.const_ints(DILATIONS)?;
    if d.len() != x.len() || d.iter().any(|&v| v < 1) {
        return Err(cx.input_err(DILATIONS, format!("dilations {d:?} need one value >= 1 per dim of {}", fmt_dims(x))));
    }
    x.iter()
        .zip(&d)
        .map(|(&n, &k)| if n == 0 { Some(0) } else { (n - 1).checked_mul(k as usize).and_then(|v| v.checked_add(1)) })
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| cx.input_err(DILATIONS, format!("dilations {d:?} make {} too large", fmt_dims(x))))
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
