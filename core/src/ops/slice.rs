//! SLICE and STRIDED_SLICE, and the strided slice plan backends follow.

use super::Shapes::One;
use super::{fixed, Spec, INDEX_TYPES};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, OpKind};

slots!(
    INPUT = 0: "Input slot of the data.", BEGIN = 1: "Input slot of the first index per dim.",
    SIZE = 2: "Input slot of SLICE's sizes (-1: to the end).", END = 2: "Input slot of STRIDED_SLICE's ends.",
    STRIDES = 3: "Input slot of STRIDED_SLICE's strides."
);

/// Parameters of STRIDED_SLICE: bit `i` of a mask refers to entry `i` of begin/end/strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct StridedSlice {
    /// Ignore `begin[i]`: start at the first (last, for a negative stride) element.
    pub begin_mask: i32,
    /// Ignore `end[i]`: run to the end.
    pub end_mask: i32,
    /// Entry `i` stands for as many full dims as needed.
    pub ellipsis_mask: i32,
    /// Entry `i` inserts a new dim of size 1.
    pub new_axis_mask: i32,
    /// Entry `i` takes one element and drops the dim.
    pub shrink_axis_mask: i32,
    /// `end` holds sizes relative to `begin` rather than absolute positions.
    pub offset: bool,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Slice => fixed("Slice", 3, 1, One(slice)),
        OpKind::StridedSlice(_) => fixed("StridedSlice", 4, 1, One(strided_slice)),
        _ => return None,
    })
}

/// SLICE: `size` elements from `begin` per dim. A computed `begin` is allowed when every size
/// is given (the kernel checks the bounds).
fn slice(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    cx.expect_dtype(BEGIN, INDEX_TYPES)?;
    cx.expect_dtype(SIZE, INDEX_TYPES)?;
    let size = cx.const_ints(SIZE)?;
    let begin_is_const = cx.op.input(BEGIN).is_some_and(|b| cx.g.operand(b).is_const());
    if !begin_is_const && size.len() == x.len() && size.iter().all(|&s| s >= 0) {
        // The begin comes from run-time data (e.g. a loop counter): with every size given, the
        // output shape is known; the kernel checks the bounds when it runs.
        if let Some(d) = (0..x.len()).find(|&d| size[d] as usize > x[d]) {
            return Err(cx.input_err(SIZE, format!("size {} is larger than dim {d} of {}", size[d], fmt_dims(x))));
        }
        return Ok(size.iter().map(|&s| s as usize).collect());
    }
    let begin = cx.const_ints(BEGIN)?;
    if begin.len() != x.len() || size.len() != x.len() {
        return Err(cx.input_err(BEGIN, format!("begin {begin:?} and size {size:?} need one entry per dim of {}", fmt_dims(x))));
    }
    let mut out = Vec::with_capacity(x.len());
    for d in 0..x.len() {
        let n = x[d] as i64;
        let s = if size[d] == -1 { n - begin[d] } else { size[d] };
        if begin[d] < 0 || s < 0 || begin[d] + s > n {
            return Err(cx.input_err(BEGIN, format!("begin {} size {} is outside dim {d} of {}", begin[d], size[d], fmt_dims(x))));
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

/// STRIDED_SLICE: the plan of `begin`, `end` and `strides` (1-D each) over the input.
fn strided_slice(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::StridedSlice(p) = &cx.op.kind else { return Err(cx.unlisted()) };
    let x = cx.input(INPUT)?;
    cx.outputs_like(INPUT)?;
    for i in BEGIN..=STRIDES {
        cx.expect_dtype(i, INDEX_TYPES)?;
        if cx.input(i)?.len() != 1 {
            return Err(cx.input_err(i, format!("must be 1-D, has shape {}", fmt_dims(cx.input(i)?))));
        }
    }
    let (b, e, s) = (cx.const_ints(BEGIN)?, cx.const_ints(END)?, cx.const_ints(STRIDES)?);
    let plan = strided_slice_plan(x, &b, &e, &s, p).map_err(|r| cx.err(format!("{r} (input {})", fmt_dims(x))))?;
    Ok(plan.out_dims)
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
