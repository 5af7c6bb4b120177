//! Ops that move data without computing on it: split, pack, squeeze, slices, gather, tile,
//! reverse, cumulative sums (same shape).

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, StridedSlice};

const INDEX_TYPES: &[DType] = &[DType::I32, DType::I64];

/// The one integer of constant input `i`, checked to be an int32/int64 tensor.
fn axis_input(cx: &Cx, i: usize) -> Result<i64, CompileError> {
    cx.expect_dtype(i, INDEX_TYPES)?;
    cx.const_scalar(i)
}

/// Checks that the data inputs and outputs share one type (data movement never converts).
fn same_dtype(cx: &Cx, data_input: usize) -> Result<DType, CompileError> {
    let t = cx.dtype(data_input)?;
    for k in 0..cx.op.outputs.len() {
        if cx.out_dtype(k)? != t {
            return Err(cx.out_err(k, format!("has type {} but the input has {t}", cx.out_dtype(k)?)));
        }
    }
    Ok(t)
}

pub(super) fn split(cx: &Cx, num_splits: usize) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(1)?;
    same_dtype(cx, 1)?;
    let axis = cx.axis(axis_input(cx, 0)?, x.len())?;
    cx.expect_outputs(num_splits)?;
    if num_splits == 0 || x[axis] % num_splits != 0 {
        return Err(cx.input_err(1, format!("dim {axis} of {} does not split into {num_splits} equal parts", fmt_dims(x))));
    }
    let mut part = x.to_vec();
    part[axis] /= num_splits;
    Ok(vec![part; num_splits])
}

pub(super) fn split_v(cx: &Cx, num_splits: usize) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    cx.expect_dtype(1, INDEX_TYPES)?;
    let sizes = cx.const_ints(1)?;
    let axis = cx.axis(axis_input(cx, 2)?, x.len())?;
    cx.expect_outputs(num_splits)?;
    if sizes.len() != num_splits {
        return Err(cx.input_err(1, format!("holds {} sizes for {num_splits} splits", sizes.len())));
    }
    let unknown: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] == -1).collect();
    let known: i64 = sizes.iter().filter(|&&s| s != -1).sum();
    if sizes.iter().any(|&s| s < -1) || unknown.len() > 1 {
        return Err(cx.input_err(1, format!("sizes {sizes:?} must be >= 0 with at most one -1")));
    }
    let total = x[axis] as i64;
    let mut sizes = sizes;
    match unknown.first() {
        Some(&i) if known <= total => sizes[i] = total - known,
        None if known == total => {}
        _ => return Err(cx.input_err(1, format!("sizes {sizes:?} do not add up to dim {axis} of {} ({total})", fmt_dims(x)))),
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

pub(super) fn pack(cx: &Cx, axis: i32, count: usize) -> Result<Vec<usize>, CompileError> {
    let first = cx.input(0)?;
    let t = same_dtype(cx, 0)?;
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

pub(super) fn unpack(cx: &Cx, axis: i32, num: usize) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    if x.is_empty() {
        return Err(cx.input_err(0, "cannot unpack a scalar"));
    }
    let axis = cx.axis(axis as i64, x.len())?;
    cx.expect_outputs(num)?;
    if x[axis] != num {
        return Err(cx.input_err(0, format!("dim {axis} of {} is not num = {num}", fmt_dims(x))));
    }
    let mut part = x.to_vec();
    part.remove(axis);
    Ok(vec![part; num])
}

pub(super) fn squeeze(cx: &Cx, axes: &[i32]) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    let mut drop = vec![false; x.len()];
    if axes.is_empty() {
        for (d, &n) in x.iter().enumerate() {
            drop[d] = n == 1;
        }
    }
    for &a in axes {
        let a = cx.axis(a as i64, x.len())?;
        if x[a] != 1 {
            return Err(cx.input_err(0, format!("dim {a} of {} is not 1 and cannot be squeezed", fmt_dims(x))));
        }
        drop[a] = true;
    }
    Ok(x.iter().zip(&drop).filter(|(_, &d)| !d).map(|(&n, _)| n).collect())
}

pub(super) fn expand_dims(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    let axis = cx.axis(axis_input(cx, 1)?, x.len() + 1)?;
    let mut out = x.to_vec();
    out.insert(axis, 1);
    Ok(out)
}

pub(super) fn slice(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    cx.expect_dtype(1, INDEX_TYPES)?;
    cx.expect_dtype(2, INDEX_TYPES)?;
    let size = cx.const_ints(2)?;
    let begin_is_const = cx.op.input(1).is_some_and(|b| cx.g.operand(b).is_const());
    if !begin_is_const && size.len() == x.len() && size.iter().all(|&s| s >= 0) {
        // The begin comes from run-time data (e.g. a loop counter): with every size given, the
        // output shape is known; the kernel checks the bounds when it runs.
        if let Some(d) = (0..x.len()).find(|&d| size[d] as usize > x[d]) {
            return Err(cx.input_err(2, format!("size {} is larger than dim {d} of {}", size[d], fmt_dims(x))));
        }
        return Ok(size.iter().map(|&s| s as usize).collect());
    }
    let begin = cx.const_ints(1)?;
    if begin.len() != x.len() || size.len() != x.len() {
        return Err(cx.input_err(1, format!("begin {begin:?} and size {size:?} need one entry per dim of {}", fmt_dims(x))));
    }
    let mut out = Vec::with_capacity(x.len());
    for d in 0..x.len() {
        let n = x[d] as i64;
        let s = if size[d] == -1 { n - begin[d] } else { size[d] };
        if begin[d] < 0 || s < 0 || begin[d] + s > n {
            return Err(cx.input_err(1, format!("begin {} size {} is outside dim {d} of {}", begin[d], size[d], fmt_dims(x))));
        }
        out.push(s as usize);
    }
    Ok(out)
}

/// A strided slice resolved against an input shape: the input viewed with the new axes
/// inserted (`in_dims`), and per dim of that view the first index, the step and the count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlicePlan {
    /// The input's dims with a 1 at every new axis.
    pub in_dims: Vec<usize>,
    /// First index along each dim of `in_dims`.
    pub start: Vec<i64>,
    /// Step along each dim (never 0).
    pub stride: Vec<i64>,
    /// Number of elements taken along each dim.
    pub count: Vec<usize>,
    /// The output dims (`count` without the shrunk dims).
    pub out_dims: Vec<usize>,
}

/// Resolves STRIDED_SLICE as TFLite does: the ellipsis expands to the dims the spec leaves out
/// (a new axis at the ellipsis' own position is ignored), new axes become dims of size 1, dims
/// past the spec are taken whole; then per dim begin/end are wrapped (negative + size), clamped
/// (to `[0, size]` going forward, `[-1, size-1]` backward) and overridden by the masks;
/// `offset` makes end relative to begin; a shrunk dim takes one element.
pub fn strided_slice_plan(x: &[usize], begin: &[i64], end: &[i64], strides: &[i64], p: &StridedSlice) -> Result<SlicePlan, String> {
    let n = begin.len();
    if end.len() != n || strides.len() != n {
        return Err(format!("begin, end and strides have {}, {} and {} entries; they must match", n, end.len(), strides.len()));
    }
    let bit = |mask: i32, i: usize| i < 32 && mask & (1 << i) != 0;
    if (0..n).filter(|&i| bit(p.ellipsis_mask, i)).count() > 1 {
        return Err(format!("ellipsis_mask {:#b} has more than one bit set", p.ellipsis_mask));
    }
    // Each spec entry becomes one or more dims of the effective input.
    enum Entry {
        Full,
        NewAxis,
        Spec(usize),
    }
    let new_axes = (0..n).filter(|&i| bit(p.new_axis_mask, i) && !bit(p.ellipsis_mask, i)).count();
    let spec_dims = n - new_axes - (0..n).filter(|&i| bit(p.ellipsis_mask, i)).count();
    if spec_dims > x.len() {
        return Err(format!("the spec has {n} entries for an input of rank {}", x.len()));
    }
    let mut entries = Vec::new();
    for i in 0..n {
        if bit(p.ellipsis_mask, i) {
            for _ in 0..x.len() - spec_dims {
                entries.push(Entry::Full);
            }
        } else if bit(p.new_axis_mask, i) {
            entries.push(Entry::NewAxis);
        } else {
            entries.push(Entry::Spec(i));
        }
    }
    while entries.iter().filter(|e| !matches!(e, Entry::NewAxis)).count() < x.len() {
        entries.push(Entry::Full);
    }
    let mut plan = SlicePlan { in_dims: vec![], start: vec![], stride: vec![], count: vec![], out_dims: vec![] };
    let mut d = 0; // dim of x
    for e in entries {
        match e {
            Entry::NewAxis => {
                plan.in_dims.push(1);
                plan.start.push(0);
                plan.stride.push(1);
                plan.count.push(1);
                plan.out_dims.push(1);
            }
            Entry::Full => {
                plan.in_dims.push(x[d]);
                plan.start.push(0);
                plan.stride.push(1);
                plan.count.push(x[d]);
                plan.out_dims.push(x[d]);
                d += 1;
            }
            Entry::Spec(i) => {
                let size = x[d] as i64;
                let stride = strides[i];
                if stride == 0 {
                    return Err(format!("stride {i} is 0"));
                }
                let clamp = |v: i64| if stride > 0 { v.clamp(0, size) } else { v.clamp(-1, size - 1) };
                let wrap = |v: i64| if v < 0 { v + size } else { v };
                let mut start = clamp(wrap(begin[i]));
                if bit(p.begin_mask, i) {
                    start = if stride > 0 { 0 } else { size - 1 };
                }
                let shrink = bit(p.shrink_axis_mask, i);
                let count = if shrink {
                    // TFLite reads element `start`: it must exist.
                    let at = if bit(p.begin_mask, i) { start } else { wrap(begin[i]) };
                    if at < 0 || at >= size {
                        return Err(format!("shrink index {} is out of range for dim {d} of size {size}", begin[i]));
                    }
                    start = at;
                    1
                } else {
                    let mut stop = end[i];
                    if p.offset {
                        stop += start;
                    }
                    let mut stop = clamp(wrap(stop));
                    if bit(p.end_mask, i) {
                        stop = if stride > 0 { size } else { -1 };
                    }
                    let span = stop - start;
                    let c = if (span > 0) == (stride > 0) && span != 0 { (span + stride - stride.signum()) / stride } else { 0 };
                    c.max(0) as usize
                };
                plan.in_dims.push(x[d]);
                plan.start.push(start);
                plan.stride.push(stride);
                plan.count.push(count);
                if !shrink {
                    plan.out_dims.push(count);
                }
                d += 1;
            }
        }
    }
    Ok(plan)
}

pub(super) fn strided_slice(cx: &Cx, p: &StridedSlice) -> Result<SlicePlan, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    for i in 1..4 {
        cx.expect_dtype(i, INDEX_TYPES)?;
        if cx.input(i)?.len() != 1 {
            return Err(cx.input_err(i, format!("must be 1-D, has shape {}", fmt_dims(cx.input(i)?))));
        }
    }
    let (b, e, s) = (cx.const_ints(1)?, cx.const_ints(2)?, cx.const_ints(3)?);
    strided_slice_plan(x, &b, &e, &s, p).map_err(|r| cx.err(format!("{r} (input {})", fmt_dims(x))))
}

pub(super) fn gather(cx: &Cx, axis: i32, batch_dims: i32) -> Result<Vec<usize>, CompileError> {
    let (x, idx) = (cx.input(0)?, cx.input(1)?);
    same_dtype(cx, 0)?;
    cx.expect_dtype(1, &[DType::I16, DType::I32, DType::I64])?;
    if x.is_empty() {
        return Err(cx.input_err(0, "cannot gather from a scalar"));
    }
    let axis = cx.axis(axis as i64, x.len())?;
    let bd = if batch_dims < 0 { batch_dims as i64 + idx.len() as i64 } else { batch_dims as i64 };
    if bd < 0 || bd as usize > idx.len() || bd as usize > axis {
        return Err(cx.err(format!("batch_dims {batch_dims} must lie in [0, min(axis {axis}, indices rank {})]", idx.len())));
    }
    let bd = bd as usize;
    if x[..bd] != idx[..bd] {
        return Err(cx.input_err(1, format!("the first {bd} dims of {} must equal the params' {}", fmt_dims(idx), fmt_dims(x))));
    }
    let mut out = x[..axis].to_vec();
    out.extend_from_slice(&idx[bd..]);
    out.extend_from_slice(&x[axis + 1..]);
    Ok(out)
}

pub(super) fn gather_nd(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (x, idx) = (cx.input(0)?, cx.input(1)?);
    same_dtype(cx, 0)?;
    cx.expect_dtype(1, &[DType::I16, DType::I32, DType::I64])?;
    let k = *idx.last().ok_or_else(|| cx.input_err(1, "indices must have rank >= 1"))?;
    if k > x.len() {
        return Err(cx.input_err(1, format!("index tuples of {k} exceed the params' rank {}", x.len())));
    }
    let mut out = idx[..idx.len() - 1].to_vec();
    out.extend_from_slice(&x[k..]);
    Ok(out)
}

pub(super) fn tile(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    cx.expect_dtype(1, INDEX_TYPES)?;
    let m = cx.const_ints(1)?;
    if m.len() != x.len() || m.iter().any(|&v| v < 0) {
        return Err(cx.input_err(1, format!("multiples {m:?} need one value >= 0 per dim of {}", fmt_dims(x))));
    }
    Ok(x.iter().zip(&m).map(|(&d, &k)| d * k as usize).collect())
}

pub(super) fn reverse(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    cx.expect_dtype(1, INDEX_TYPES)?;
    for a in cx.const_ints(1)? {
        cx.axis(a, x.len())?;
    }
    Ok(x.to_vec())
}

pub(super) fn cumsum(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    same_dtype(cx, 0)?;
    cx.axis(axis_input(cx, 1)?, x.len())?;
    Ok(x.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(x: &[usize], b: &[i64], e: &[i64], s: &[i64], p: StridedSlice) -> Vec<usize> {
        strided_slice_plan(x, b, e, s, &p).unwrap().out_dims
    }

    #[test]
    fn strided_slice_masks_follow_numpy() {
        let p = StridedSlice::default();
        // x[1:3] of [4]
        assert_eq!(plan(&[4], &[1], &[3], &[1], p), vec![2]);
        // x[::-1]
        assert_eq!(plan(&[4], &[0], &[0], &[-1], StridedSlice { begin_mask: 1, end_mask: 1, ..p }), vec![4]);
        // x[-3:-1:2] of [7] -> 4, 6? indices 4,5 -> [4]
        assert_eq!(plan(&[7], &[-3], &[-1], &[2], p), vec![1]);
        // x[..., 1] of [2,3,4] (ellipsis then shrink)
        let q = StridedSlice { ellipsis_mask: 1, shrink_axis_mask: 2, ..p };
        assert_eq!(plan(&[2, 3, 4], &[0, 1], &[0, 2], &[1, 1], q), vec![2, 3]);
        // x[None, 1:] of [3, 2]
        let q = StridedSlice { new_axis_mask: 1, ..p };
        assert_eq!(plan(&[3, 2], &[0, 1], &[0, 3], &[1, 1], q), vec![1, 2, 2]);
        // offset: end is a size
        let q = StridedSlice { offset: true, ..p };
        assert_eq!(plan(&[10], &[2], &[3], &[1], q), vec![3]);
        // out of range shrink is refused
        assert!(strided_slice_plan(&[3], &[5], &[6], &[1], &StridedSlice { shrink_axis_mask: 1, ..p }).is_err());
        // begin past end gives an empty dim
        assert_eq!(plan(&[5], &[4], &[1], &[1], p), vec![0]);
    }
}
