//! Values known at prepare: the integer tensors a graph computes from static shapes. Keras and
//! the TFLite converter build reshape targets at run time from `SHAPE` of a tensor (SHAPE →
//! STRIDED_SLICE → PACK → RESHAPE in every squeeze-and-excitation block of an EfficientNet);
//! when the shape read is static, so is the target, and carrying its value through those ops
//! keeps the rest of the graph static (fixed kernels, one memory plan, fusions).
//!
//! Only small integer tensors (int32/int64, at most [`MAX_ELEMENTS`] elements) are evaluated, by
//! the ops that shape arithmetic uses. An op whose result cannot be computed here exactly as its
//! kernel would (an index out of range, a division by zero) gives no value, so the reading op
//! stays dynamic and the kernel reports the problem when it runs.

use crate::ops::elementwise::broadcast_shapes;
use crate::ops::slice::strided_slice_plan;
use crate::{BinaryOp, DType, OpId, OpKind, ReduceOp, Subgraph};

/// The most elements a prepare-time value may have: shapes, not data.
pub const MAX_ELEMENTS: usize = 64;

/// The most elements an input read here may have (a constant table indexed by a shape, say).
const MAX_INPUT_ELEMENTS: usize = 4096;

/// The values of op `id`'s outputs when every one of them can be computed from its inputs' static
/// shapes and known values: `shapes` and `values` by operand id (a value in the operand's dtype,
/// little-endian bytes). `None` when the op is not one of shape arithmetic's or an input's value
/// is unknown.
pub(crate) fn evaluate(g: &Subgraph, id: OpId, shapes: &[Option<Vec<usize>>], values: &[Option<Vec<u8>>]) -> Option<Vec<Vec<u8>>> {
    let op = g.op(id);
    let [out] = op.outputs.as_slice() else { return None };
    let out_dtype = g.operand(*out).dtype;
    if !matches!(out_dtype, DType::I32 | DType::I64) {
        return None;
    }
    let out_dims = shapes.get(out.index())?.as_ref()?;
    let count = out_dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    if count > MAX_ELEMENTS {
        return None;
    }
    let shape_of = |i: usize| -> Option<&[usize]> { shapes.get(op.input(i)?.index())?.as_deref() };
    let ints = |i: usize| -> Option<Vec<i64>> {
        let id = op.input(i)?;
        let operand = g.operand(id);
        let bytes = match &operand.data {
            Some(d) => d.bytes(),
            None => values.get(id.index())?.as_deref()?,
        };
        if bytes.len() > MAX_INPUT_ELEMENTS * 8 {
            return None;
        }
        decode(operand.dtype, bytes)
    };
    let v: Vec<i64> = match &op.kind {
        OpKind::Shape => shape_of(0)?.iter().map(|&d| d as i64).collect(),
        OpKind::Rank => vec![shape_of(0)?.len() as i64],
        // Same values, another shape (already inferred).
        OpKind::Reshape { .. } | OpKind::Squeeze { .. } | OpKind::ExpandDims => ints(0)?,
        OpKind::Cast => ints(0)?,
        OpKind::Fill => {
            let v = ints(1)?;
            vec![*v.first()?; count]
        }
        OpKind::StridedSlice(p) => {
            let x = shape_of(0)?;
            let plan = strided_slice_plan(x, &ints(1)?, &ints(2)?, &ints(3)?, p).ok()?;
            if plan.count.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(count) {
                return None;
            }
            let src = ints(0)?;
            let strides = row_major_strides(&plan.in_dims);
            let mut out = Vec::with_capacity(count);
            for_each_index(&plan.count, |idx| {
                let at: i64 = idx.iter().enumerate().map(|(d, &k)| (plan.start[d] + k as i64 * plan.stride[d]) * strides[d] as i64).sum();
                out.push(*src.get(usize::try_from(at).ok()?)?);
                Some(())
            })?;
            out
        }
        OpKind::Slice => {
            let x = shape_of(0)?;
            let (begin, src) = (ints(1)?, ints(0)?);
            if begin.len() != x.len() || begin.iter().zip(x).zip(out_dims).any(|((&b, &n), &s)| b < 0 || b as usize + s > n) {
                return None;
            }
            let strides = row_major_strides(x);
            let mut out = Vec::with_capacity(count);
            for_each_index(out_dims, |idx| {
                let at: usize = idx.iter().enumerate().map(|(d, &k)| (begin[d] as usize + k) * strides[d]).sum();
                out.push(*src.get(at)?);
                Some(())
            })?;
            out
        }
        OpKind::Pack { axis, .. } => {
            let parts = (0..op.inputs.len()).map(ints).collect::<Option<Vec<_>>>()?;
            let axis = axis_in(*axis as i64, out_dims.len())?;
            interleave(&parts, &out_dims[..axis])?
        }
        OpKind::Concatenation { axis, act } => {
            if *act != crate::Activation::None {
                return None;
            }
            let axis = axis_in(*axis as i64, out_dims.len())?;
            let parts = (0..op.inputs.len()).map(ints).collect::<Option<Vec<_>>>()?;
            let widths = (0..op.inputs.len()).map(|i| shape_of(i).map(|s| s.get(axis..).map_or(1, |t| t.iter().product()))).collect::<Option<Vec<usize>>>()?;
            let outer: usize = out_dims[..axis].iter().product();
            let mut out = Vec::with_capacity(count);
            for o in 0..outer {
                for (p, &w) in parts.iter().zip(&widths) {
                    out.extend_from_slice(p.get(o * w..(o + 1) * w)?);
                }
            }
            out
        }
        OpKind::Gather { axis, batch_dims: 0 } => {
            let x = shape_of(0)?;
            let axis = axis_in(*axis as i64, x.len())?;
            let (src, idx) = (ints(0)?, ints(1)?);
            let (outer, n, inner): (usize, usize, usize) = (x[..axis].iter().product(), x[axis], x[axis + 1..].iter().product());
            let mut out = Vec::with_capacity(count);
            for o in 0..outer {
                for &i in &idx {
                    let i = usize::try_from(i).ok().filter(|&i| i < n)?;
                    out.extend_from_slice(src.get((o * n + i) * inner..(o * n + i + 1) * inner)?);
                }
            }
            out
        }
        OpKind::Binary { op: bop, act: crate::Activation::None } => {
            let (a, b) = (ints(0)?, ints(1)?);
            let (sa, sb) = (shape_of(0)?, shape_of(1)?);
            let dims = broadcast_shapes(sa, sb)?;
            let (ia, ib) = (broadcast_index(sa, &dims), broadcast_index(sb, &dims));
            let mut out = Vec::with_capacity(count);
            for k in 0..count {
                out.push(binary(*bop, *a.get(ia(k))?, *b.get(ib(k))?, out_dtype)?);
            }
            out
        }
        OpKind::Reduce { op: rop, .. } => {
            let x = shape_of(0)?;
            let src = ints(0)?;
            let mut reduced = vec![false; x.len()];
            for a in ints(1)? {
                reduced[axis_in(a, x.len())?] = true;
            }
            let (init, f): (i64, fn(i64, i64) -> i64) = match rop {
                ReduceOp::Sum => (0, i64::wrapping_add),
                ReduceOp::Prod => (1, i64::wrapping_mul),
                ReduceOp::Max => (i64::MIN, i64::max),
                ReduceOp::Min => (i64::MAX, i64::min),
                _ => return None,
            };
            if src.is_empty() && matches!(rop, ReduceOp::Max | ReduceOp::Min) {
                return None;
            }
            let kept: Vec<usize> = x.iter().zip(&reduced).map(|(&d, &r)| if r { 1 } else { d }).collect();
            let kept_strides = row_major_strides(&kept);
            let mut out = vec![init; kept.iter().product()];
            if out.len() != count {
                return None;
            }
            let mut k = 0;
            for_each_index(x, |idx| {
                let at: usize = idx.iter().zip(&reduced).zip(&kept_strides).map(|((&i, &r), &s)| if r { 0 } else { i * s }).sum();
                out[at] = wrap(out_dtype, f(out[at], *src.get(k)?));
                k += 1;
                Some(())
            })?;
            out
        }
        _ => return None,
    };
    (v.len() == count).then(|| vec![encode(out_dtype, &v)])
}

/// The integers of a value in `dtype`, or `None` for another type.
fn decode(dtype: DType, bytes: &[u8]) -> Option<Vec<i64>> {
    match dtype {
        DType::I32 => Some(bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
        DType::I64 => Some(bytes.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()),
        _ => None,
    }
}

/// The bytes of `v` in `dtype` (int32 values wrap, as the kernels' casts do).
fn encode(dtype: DType, v: &[i64]) -> Vec<u8> {
    match dtype {
        DType::I32 => v.iter().flat_map(|&x| (x as i32).to_le_bytes()).collect(),
        _ => v.iter().flat_map(|&x| x.to_le_bytes()).collect(),
    }
}

/// `x` wrapped to `dtype`'s range.
fn wrap(dtype: DType, x: i64) -> i64 {
    if dtype == DType::I32 {
        x as i32 as i64
    } else {
        x
    }
}

/// One element of an integer binary op, wrapped to the output type; `None` where the kernel
/// would fail (division by zero) or the op is not integer arithmetic.
fn binary(op: BinaryOp, a: i64, b: i64, dtype: DType) -> Option<i64> {
    let v = match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Maximum => a.max(b),
        BinaryOp::Minimum => a.min(b),
        BinaryOp::FloorDiv if b != 0 => a.checked_div(b)? - i64::from((a % b != 0) && ((a < 0) != (b < 0))),
        BinaryOp::FloorMod if b != 0 => {
            let r = a.checked_rem(b)?;
            if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            }
        }
        _ => return None,
    };
    Some(wrap(dtype, v))
}

/// `axis` (negative counts from the end) as an index below `rank`.
fn axis_in(axis: i64, rank: usize) -> Option<usize> {
    let a = if axis < 0 { axis + rank as i64 } else { axis };
    usize::try_from(a).ok().filter(|&a| a < rank)
}

/// Row-major strides of `dims`.
fn row_major_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// Calls `f` with every index of `dims` in row-major order; stops at the first `None`.
fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize]) -> Option<()>) -> Option<()> {
    if dims.contains(&0) {
        return Some(());
    }
    let mut idx = vec![0; dims.len()];
    loop {
        f(&idx)?;
        let mut d = dims.len();
        loop {
            if d == 0 {
                return Some(());
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Maps a flat index of `out` to the flat index of an operand of shape `s` broadcast to it.
fn broadcast_index(s: &[usize], out: &[usize]) -> impl Fn(usize) -> usize {
    let pad = out.len() - s.len();
    let strides = row_major_strides(s);
    let out_strides = row_major_strides(out);
    let s = s.to_vec();
    move |mut k| {
        let mut at = 0;
        for (d, &os) in out_strides.iter().enumerate() {
            let i = k / os;
            k %= os;
            if d >= pad && s[d - pad] != 1 {
                at += i * strides[d - pad];
            }
        }
        at
    }
}

/// Stacks `parts` (equal sizes) along a new axis after the dims `outer`: for each outer index,
/// that index's run of each part in turn.
fn interleave(parts: &[Vec<i64>], outer: &[usize]) -> Option<Vec<i64>> {
    let first = parts.first()?;
    if parts.iter().any(|p| p.len() != first.len()) {
        return None;
    }
    let outer: usize = outer.iter().product();
    if outer == 0 || first.len() % outer != 0 {
        return (first.is_empty()).then(Vec::new);
    }
    let inner = first.len() / outer;
    let mut out = Vec::with_capacity(first.len() * parts.len());
    for o in 0..outer {
        for p in parts {
            out.extend_from_slice(&p[o * inner..(o + 1) * inner]);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{infer_graph_with, Activation, ConstData, Operand, Operation, StridedSlice};

    fn konst(g: &mut Subgraph, dims: &[usize], v: &[i32]) -> crate::OperandId {
        let mut o = Operand::new("c", DType::I32, dims);
        o.data = Some(ConstData::owned(v.iter().flat_map(|x| x.to_le_bytes()).collect()));
        g.add_operand(o)
    }

    /// Keras' squeeze-and-excitation reshape: SHAPE → STRIDED_SLICE (batch) → PACK with
    /// constants → RESHAPE. The target is known at prepare, so nothing is dynamic, for the
    /// declared batch and for a resized one.
    #[test]
    fn a_reshape_target_built_from_a_static_shape_is_static() {
        let mut g = Subgraph::default();
        let x = g.add_operand(Operand::new("x", DType::F32, &[1, 4, 4, 8]));
        let pooled = g.add_operand(Operand::new("pooled", DType::F32, &[1, 8]));
        let shape = g.add_operand(Operand::new("shape", DType::I32, &[2]));
        let (b, e, s) = (konst(&mut g, &[1], &[0]), konst(&mut g, &[1], &[1]), konst(&mut g, &[1], &[1]));
        let batch = g.add_operand(Operand::new("batch", DType::I32, &[]));
        let one = konst(&mut g, &[], &[1]);
        let c = konst(&mut g, &[], &[8]);
        let target = g.add_operand(Operand::new("target", DType::I32, &[4]));
        let y = g.add_operand(Operand::new("y", DType::F32, &[1, 1, 1, 8]));
        let axes = konst(&mut g, &[2], &[1, 2]);
        g.add_op(Operation { kind: OpKind::Reduce { op: ReduceOp::Mean, keep_dims: false }, inputs: vec![Some(x), Some(axes)], outputs: vec![pooled] });
        g.add_op(Operation { kind: OpKind::Shape, inputs: vec![Some(pooled)], outputs: vec![shape] });
        let p = StridedSlice { shrink_axis_mask: 1, ..Default::default() };
        g.add_op(Operation { kind: OpKind::StridedSlice(p), inputs: vec![Some(shape), Some(b), Some(e), Some(s)], outputs: vec![batch] });
        g.add_op(Operation { kind: OpKind::Pack { axis: 0, count: 4 }, inputs: vec![Some(batch), Some(one), Some(one), Some(c)], outputs: vec![target] });
        g.add_op(Operation { kind: OpKind::Reshape { new_shape: None }, inputs: vec![Some(pooled), Some(target)], outputs: vec![y] });
        g.inputs = vec![x];
        g.outputs = vec![y];
        let inferred = infer_graph_with(&g, &[vec![1, 4, 4, 8]], &mut |_, _| None).unwrap();
        assert!(!inferred.has_dynamic());
        assert_eq!(inferred.dims[y.index()], vec![1, 1, 1, 8]);
        let inferred = infer_graph_with(&g, &[vec![3, 4, 4, 8]], &mut |_, _| None).unwrap();
        assert!(!inferred.has_dynamic());
        assert_eq!(inferred.dims[y.index()], vec![3, 1, 1, 8]);
        assert_eq!(crate::infer_graph(&g, &[vec![3, 4, 4, 8]]).unwrap()[target.index()], vec![4]);
    }

    fn eval_one(kind: OpKind, inputs: &[(Vec<usize>, Option<Vec<i32>>)], out_dims: &[usize]) -> Option<Vec<i64>> {
        let mut g = Subgraph::default();
        let mut shapes = Vec::new();
        let mut ids = Vec::new();
        for (dims, v) in inputs {
            let id = match v {
                Some(v) => konst(&mut g, dims, v),
                None => g.add_operand(Operand::new("x", DType::F32, dims)),
            };
            shapes.push(Some(dims.clone()));
            ids.push(Some(id));
        }
        let out = g.add_operand(Operand::new("y", DType::I32, out_dims));
        shapes.push(Some(out_dims.to_vec()));
        g.add_op(Operation { kind, inputs: ids, outputs: vec![out] });
        let values = vec![None; shapes.len()];
        evaluate(&g, OpId(0), &shapes, &values).map(|v| decode(DType::I32, &v[0]).unwrap())
    }

    #[test]
    fn shape_arithmetic_ops_compute_what_their_kernels_do() {
        let shape = eval_one(OpKind::Shape, &[(vec![2, 3, 5], None)], &[3]);
        assert_eq!(shape, Some(vec![2, 3, 5]));
        // [[1,2,3],[4,5,6]] gathered at columns [2,0] along axis 1.
        let gathered = eval_one(OpKind::Gather { axis: 1, batch_dims: 0 }, &[(vec![2, 3], Some(vec![1, 2, 3, 4, 5, 6])), (vec![2], Some(vec![2, 0]))], &[2, 2]);
        assert_eq!(gathered, Some(vec![3, 1, 6, 4]));
        let out_of_range = eval_one(OpKind::Gather { axis: 0, batch_dims: 0 }, &[(vec![3], Some(vec![1, 2, 3])), (vec![1], Some(vec![3]))], &[1]);
        assert_eq!(out_of_range, None, "left to the kernel, which reports it");
        let concat = eval_one(OpKind::Concatenation { axis: 0, act: Activation::None }, &[(vec![2], Some(vec![1, 2])), (vec![1], Some(vec![7]))], &[3]);
        assert_eq!(concat, Some(vec![1, 2, 7]));
        let pack1 = eval_one(OpKind::Pack { axis: 1, count: 2 }, &[(vec![2], Some(vec![1, 2])), (vec![2], Some(vec![3, 4]))], &[2, 2]);
        assert_eq!(pack1, Some(vec![1, 3, 2, 4]));
        let floordiv = eval_one(OpKind::Binary { op: BinaryOp::FloorDiv, act: Activation::None }, &[(vec![3], Some(vec![7, -7, 6])), (vec![], Some(vec![2]))], &[3]);
        assert_eq!(floordiv, Some(vec![3, -4, 3]));
        let floormod = eval_one(OpKind::Binary { op: BinaryOp::FloorMod, act: Activation::None }, &[(vec![2], Some(vec![7, -7])), (vec![], Some(vec![3]))], &[2]);
        assert_eq!(floormod, Some(vec![1, 2]));
        let by_zero = eval_one(OpKind::Binary { op: BinaryOp::FloorDiv, act: Activation::None }, &[(vec![1], Some(vec![7])), (vec![], Some(vec![0]))], &[1]);
        assert_eq!(by_zero, None);
        let prod = eval_one(OpKind::Reduce { op: ReduceOp::Prod, keep_dims: false }, &[(vec![2, 3], Some(vec![1, 2, 3, 4, 5, 6])), (vec![1], Some(vec![1]))], &[2]);
        assert_eq!(prod, Some(vec![6, 120]));
        let rev = StridedSlice { begin_mask: 1, end_mask: 1, ..Default::default() };
        let reversed = eval_one(OpKind::StridedSlice(rev), &[(vec![4], Some(vec![1, 2, 3, 4])), (vec![1], Some(vec![0])), (vec![1], Some(vec![0])), (vec![1], Some(vec![-2]))], &[2]);
        assert_eq!(reversed, Some(vec![4, 2]));
        let sliced = eval_one(OpKind::Slice, &[(vec![2, 3], Some(vec![1, 2, 3, 4, 5, 6])), (vec![2], Some(vec![1, 1])), (vec![2], Some(vec![1, 2]))], &[1, 2]);
        assert_eq!(sliced, Some(vec![5, 6]));
    }
}
