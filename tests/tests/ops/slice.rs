//! SPLIT, SPLIT_V, PACK, UNPACK, SLICE, STRIDED_SLICE, and empty tensors passing through.

use nnrt_core::{CompareOp, DType, OpKind, StridedSlice};
use nnrt_tests::{b, f, i, seq, Case, Graph, V};

use crate::{zero_input as z, F};

nnrt_tests::replay_on_every_target!(split_pack_cases, slice_cases, strided_slice_cases, empty_cases, later_builtin_neg_cases);

fn split_pack_cases() -> Vec<Case> {
    let x = seq(24); // [2, 3, 4]
    // SPLIT along -1 into 2: inputs are (axis, value).
    let mut g = Graph::new();
    let ax = g.scalar(-1);
    let xi = g.input(&[2, 3, 4], f(&x));
    let (o0, o1) = (g.out(DType::F32, &[2, 3, 2]), g.out(DType::F32, &[2, 3, 2]));
    g.op(OpKind::Split { num_splits: 2 }, &[Some(ax), Some(xi)], &[o0, o1]);
    let halves = |h: usize| -> Vec<f32> { x.chunks(4).flat_map(|r| r[h * 2..h * 2 + 2].to_vec()).collect() };
    let mut cases = vec![Case::new("split along -1", &g).out(0, f(&halves(0))).out(1, f(&halves(1)))];
    // SPLIT_V with a -1 size along axis 1.
    let mut g = Graph::new();
    let xi = g.input(&[2, 3, 4], f(&x));
    let sizes = g.ints(&[-1, 2]);
    let ax = g.scalar(1);
    let (o0, o1) = (g.out(DType::F32, &[2, 1, 4]), g.out(DType::F32, &[2, 2, 4]));
    g.op(OpKind::SplitV { num_splits: 2 }, &[Some(xi), Some(sizes), Some(ax)], &[o0, o1]);
    let (first, rest) = ([&x[0..4], &x[12..16]].concat(), [&x[4..12], &x[16..24]].concat());
    cases.push(Case::new("split_v with a -1 size", &g).out(0, f(&first)).out(1, f(&rest)));
    // PACK two [2, 3] along axis -1 -> [2, 3, 2]; UNPACK it back along axis 2.
    let (a, bv) = (seq(6), seq(6).iter().map(|v| v + 100.0).collect::<Vec<_>>());
    let mut g = Graph::new();
    let ai = g.input(&[2, 3], f(&a));
    let bi = g.input(&[2, 3], f(&bv));
    let y = g.out(DType::F32, &[2, 3, 2]);
    g.op(OpKind::Pack { axis: -1, count: 2 }, &[Some(ai), Some(bi)], &[y]);
    let packed: Vec<f32> = (0..6).flat_map(|k| [a[k], bv[k]]).collect();
    cases.push(Case::new("pack along -1", &g).out(0, f(&packed)));
    let mut g = Graph::new();
    let pi = g.input(&[2, 3, 2], f(&packed));
    let (u0, u1) = (g.out(DType::F32, &[2, 3]), g.out(DType::F32, &[2, 3]));
    g.op(OpKind::Unpack { axis: 2, num: 2 }, &[Some(pi)], &[u0, u1]);
    cases.push(Case::new("unpack along 2", &g).out(0, f(&a)).out(1, f(&bv)));
    let mut g = Graph::new();
    let ax = g.scalar(1);
    let xi = g.input(&[2, 3], f(&[0.0; 6]));
    let (o0, o1) = (g.out(DType::F32, &[2, 1]), g.out(DType::F32, &[2, 1]));
    g.op(OpKind::Split { num_splits: 2 }, &[Some(ax), Some(xi)], &[o0, o1]);
    cases.push(Case::new("neg_split_unequal_parts", &g).prepare_error(&["Split", "2 equal parts"]));
    let mut g = Graph::new();
    let xi = g.input(&[2, 3], f(&[0.0; 6]));
    let o0 = g.out(DType::F32, &[3]);
    g.op(OpKind::Unpack { axis: 0, num: 1 }, &[Some(xi)], &[o0]);
    cases.push(Case::new("neg_unpack_wrong_num", &g).prepare_error(&["Unpack", "num = 1"]));
    cases.into_iter().map(|c| c.no_gpu("no Split/SplitV/Pack/Unpack kernels")).collect()
}

fn slice_model(x: (&[usize], V), begin: &[i32], size: &[i32], od: &[usize]) -> Graph {
    let mut g = Graph::new();
    let dtype = x.1.dtype();
    let xi = g.input(x.0, x.1);
    let (bg, sz) = (g.ints(begin), g.ints(size));
    let y = g.out(dtype, od);
    g.op(OpKind::Slice, &[Some(xi), Some(bg), Some(sz)], &[y]);
    g
}

fn slice_cases() -> Vec<Case> {
    let g = slice_model((&[2, 3, 4], f(&seq(24))), &[1, 0, 1], &[1, -1, 2], &[1, 3, 2]);
    let ok = Case::new("slice with size -1", &g).out(0, f(&[13.0, 14.0, 17.0, 18.0, 21.0, 22.0]));
    let g = slice_model((&[4], i(&[1, 2, 3, 4])), &[3], &[2], &[2]);
    let neg = Case::new("neg_slice_outside_the_dim", &g).prepare_error(&["Slice", "outside dim 0"]);
    vec![ok.no_gpu("no Slice kernel"), neg]
}

fn strided(x: (&[usize], V), bg: &[i32], end: &[i32], st: &[i32], p: StridedSlice, od: &[usize]) -> Graph {
    let mut g = Graph::new();
    let dtype = x.1.dtype();
    let xi = g.input(x.0, x.1);
    let (b1, e1, s1) = (g.ints(bg), g.ints(end), g.ints(st));
    let y = g.out(dtype, od);
    g.op(OpKind::StridedSlice(p), &[Some(xi), Some(b1), Some(e1), Some(s1)], &[y]);
    g
}

fn strided_slice_cases() -> Vec<Case> {
    let x = seq(24); // [2, 3, 4]
    let at = |a: usize, bb: usize, c: usize| x[(a * 3 + bb) * 4 + c];
    let d = StridedSlice::default();
    let x3 = || (&[2usize, 3, 4][..], f(&x));
    let ints6 = || (&[6usize][..], i(&[0, 1, 2, 3, 4, 5]));
    let rows = [
        // x[:, 1:, ::2]
        ("x[:, 1:, ::2]", strided(x3(), &[0, 1, 0], &[0, 3, 4], &[1, 1, 2], StridedSlice { begin_mask: 1, end_mask: 1, ..d }, &[2, 2, 2]), None, f(&[at(0, 1, 0), at(0, 1, 2), at(0, 2, 0), at(0, 2, 2), at(1, 1, 0), at(1, 1, 2), at(1, 2, 0), at(1, 2, 2)])),
        // shrink dim 1, negative strides
        ("x[::-1, -1, 3:0:-2]", strided(x3(), &[0, -1, 3], &[0, 0, 0], &[-1, 1, -2], StridedSlice { begin_mask: 1, end_mask: 1, shrink_axis_mask: 2, ..d }, &[2, 2]), None, f(&[at(1, 2, 3), at(1, 2, 1), at(0, 2, 3), at(0, 2, 1)])),
        // ellipsis then shrink
        ("x[..., 1]", strided(x3(), &[0, 1], &[0, 2], &[1, 1], StridedSlice { ellipsis_mask: 1, shrink_axis_mask: 2, ..d }, &[2, 3]), None, f(&(0..6).map(|k| at(k / 3, k % 3, 1)).collect::<Vec<_>>())),
        // shrink, new axis, trailing dim taken whole
        ("x[1, None, :2]", strided(x3(), &[1, 0, 0], &[2, 0, 2], &[1, 1, 1], StridedSlice { shrink_axis_mask: 1, new_axis_mask: 2, ..d }, &[1, 2, 4]), None, f(&(0..8).map(|k| at(1, k / 4, k % 4)).collect::<Vec<_>>())),
        // offset: end is a size relative to begin
        ("offset", strided(ints6(), &[1], &[3], &[1], StridedSlice { offset: true, ..d }, &[3]), None, i(&[1, 2, 3])),
        // begin past end: an empty result
        ("begin past end", strided(ints6(), &[4], &[2], &[1], d, &[0]), Some(vec![0]), i(&[])),
    ];
    let mut cases: Vec<Case> = rows
        .into_iter()
        .map(|(name, g, dims, want)| {
            let c = Case::new(format!("strided_slice {name}"), &g).out(0, want);
            let c = if let Some(dims) = dims { c.dims(0, &dims) } else { c };
            c.no_gpu("no StridedSlice kernel")
        })
        .collect();
    let g = strided((&[4], f(&[0.0; 4])), &[0], &[4], &[0], d, &[4]);
    cases.push(Case::new("neg_strided_slice_zero_stride", &g).prepare_error(&["StridedSlice", "stride 0 is 0"]));
    let g = strided((&[4], f(&[0.0; 4])), &[7], &[8], &[1], StridedSlice { shrink_axis_mask: 1, ..d }, &[]);
    cases.push(Case::new("neg_strided_slice_bad_shrink", &g).prepare_error(&["StridedSlice", "out of range"]));
    cases
}

/// Gather with no indices, a comparison of empty tensors, a zero-length split part.
fn empty_cases() -> Vec<Case> {
    let mut g = Graph::new();
    let xi = g.input(&[3, 2], f(&[0.0; 6]));
    let idx = g.input(&[0], i(&[]));
    let y = g.out(DType::F32, &[0, 2]);
    g.op(OpKind::Gather { axis: 0, batch_dims: 0 }, &[Some(xi), Some(idx)], &[y]);
    let gather = Case::new("empty gather", &g).dims(0, &[0, 2]).out(0, f(&[])).no_gpu("no Gather kernel");
    let g = Graph::binary(OpKind::Compare(CompareOp::Less), (&[0, 3], f(&[])), (&[3], f(&[1.0, 2.0, 3.0])), (DType::Bool, &[0, 3]));
    let compare = Case::new("empty comparison", &g).dims(0, &[0, 3]).out(0, b(&[])).no_gpu("no comparison kernels");
    let mut g = Graph::new();
    let xi = g.input(&[2, 3], f(&seq(6)));
    let sizes = g.ints(&[0, 3]);
    let ax = g.scalar(1);
    let (o0, o1) = (g.out(DType::F32, &[2, 0]), g.out(DType::F32, &[2, 3]));
    g.op(OpKind::SplitV { num_splits: 2 }, &[Some(xi), Some(sizes), Some(ax)], &[o0, o1]);
    let split = Case::new("empty split part", &g).dims(0, &[2, 0]).out(0, f(&[])).out(1, f(&seq(6))).no_gpu("no SplitV kernel");
    vec![gather, compare, split]
}

/// `neg_` cases of the builtins added after the first op set (their values are checked against
/// LiteRT by `tests/builtin_oneop.rs`): bad options, shapes or types fail at prepare naming the
/// op and the rule.
fn later_builtin_neg_cases() -> Vec<Case> {
    let g = Graph::one_op(OpKind::DynamicUpdateSlice, &[z(F, &[2, 2]), z(F, &[3, 1]), z(DType::I32, &[2])], &[(F, &[2, 2])]);
    vec![Case::new("neg_dynamic_update_slice_update_larger_than_operand", &g).prepare_error(&["DynamicUpdateSlice", "fit"])]
}
