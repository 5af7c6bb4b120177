//! Ops that pick elements by index or condition: GATHER, GATHER_ND, ONE_HOT, TOPK_V2, SELECT,
//! SELECT_V2.

use nnrt_core::{DType, OpKind};
use nnrt_tests::Arg;

use crate::{ints, zero_input as z, F};
use nnrt_tests::{b, f, i, i64s, seq, Case, Graph, V};

nnrt_tests::replay_on_every_target!(gather_cases, one_hot_top_k_cases, select_cases, later_builtin_neg_cases);

/// `kind(x, index)` with both graph inputs (or the index a constant).
fn indexed(kind: OpKind, x: (&[usize], V), idx: (&[usize], V), const_idx: bool, out: (DType, &[usize])) -> Graph {
    let mut g = Graph::new();
    let xi = g.input(x.0, x.1);
    let ii = if const_idx { g.konst(idx.0, idx.1) } else { g.input(idx.0, idx.1) };
    let y = g.out(out.0, out.1);
    g.op(kind, &[Some(xi), Some(ii)], &[y]);
    g
}

fn gather_cases() -> Vec<Case> {
    let x = seq(24); // [2, 3, 4]
    let x3 = || (&[2usize, 3, 4][..], f(&x));
    let gather = |axis, batch_dims| OpKind::Gather { axis, batch_dims };
    let g = indexed(gather(-2, 0), x3(), (&[2], i64s(&[2, 0])), false, (DType::F32, &[2, 2, 4]));
    let mut cases = vec![Case::new("gather axis -2, int64 indices", &g).out(0, f(&[&x[8..12], &x[0..4], &x[20..24], &x[12..16]].concat()))];
    // batch_dims 1: each batch picks its own rows.
    let g = indexed(gather(1, 1), x3(), (&[2, 1], i(&[1, 2])), false, (DType::F32, &[2, 1, 4]));
    cases.push(Case::new("gather batch_dims 1", &g).out(0, f(&[&x[4..8], &x[20..24]].concat())));
    // Any element type: bools.
    let g = indexed(gather(0, 0), (&[3], b(&[true, false, true])), (&[2, 2], i(&[1, 1, 0, 2])), true, (DType::Bool, &[2, 2]));
    cases.push(Case::new("gather bools", &g).out(0, b(&[false, false, true, true])));
    let g = indexed(gather(0, 0), (&[3, 2], f(&[0.0; 6])), (&[1], i(&[3])), false, (DType::F32, &[1, 2]));
    cases.push(Case::new("neg_gather_index_out_of_range_fails_at_run", &g).run_error(&["out of range"]));
    let g = indexed(gather(0, 0), (&[3, 2], f(&[0.0; 6])), (&[1], f(&[0.0])), false, (DType::F32, &[1, 2]));
    cases.push(Case::new("neg_gather_float_indices", &g).prepare_error(&["Gather", "float32"]));
    let g = indexed(OpKind::GatherNd, x3(), (&[2, 2], i(&[1, 2, 0, 1])), false, (DType::F32, &[2, 4]));
    cases.push(Case::new("gather_nd slices", &g).out(0, f(&[&x[20..24], &x[4..8]].concat())));
    let g = indexed(OpKind::GatherNd, x3(), (&[1, 3], i(&[1, 0, 3])), false, (DType::F32, &[1]));
    cases.push(Case::new("gather_nd tuples", &g).out(0, f(&[15.0])));
    cases.into_iter().map(|c| c.no_gpu("no Gather/GatherNd kernels")).collect()
}

fn one_hot_top_k_cases() -> Vec<Case> {
    let one_hot = |axis: i32, od: &[usize]| {
        let mut g = Graph::new();
        let idx = g.input(&[3], i(&[0, 2, 5]));
        let depth = g.scalar(3);
        let on = g.konst(&[], f(&[1.0]));
        let off = g.konst(&[], f(&[-1.0]));
        let y = g.out(DType::F32, od);
        g.op(OpKind::OneHot { axis }, &[Some(idx), Some(depth), Some(on), Some(off)], &[y]);
        g
    };
    let mut cases = vec![
        Case::new("one_hot axis -1", &one_hot(-1, &[3, 3])).out(0, f(&[1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0])),
        Case::new("one_hot axis 0", &one_hot(0, &[3, 3])).out(0, f(&[1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0])),
        Case::new("neg_one_hot_axis_out_of_range", &one_hot(2, &[3, 3])).prepare_error(&["OneHot", "axis 2"]),
    ];
    let top_k = |x: V, k: i32| {
        let mut g = Graph::new();
        let xi = g.input(&[2, 4], x);
        let ki = g.scalar(k);
        let (v, ix) = (g.out(DType::F32, &[2, k as usize]), g.out(DType::I32, &[2, k as usize]));
        g.op(OpKind::TopKV2, &[Some(xi), Some(ki)], &[v, ix]);
        g
    };
    let g = top_k(f(&[1.0, 5.0, 3.0, 5.0, -1.0, -2.0, 0.0, 9.0]), 3);
    cases.push(Case::new("top_k values and indices", &g).out(0, f(&[5.0, 5.0, 3.0, 9.0, 0.0, -1.0])).out(1, i(&[1, 3, 2, 3, 2, 0])));
    cases.push(Case::new("neg_top_k_more_than_the_row", &top_k(f(&[0.0; 8]), 5)).prepare_error(&["TopKV2", "k = 5"]));
    cases.into_iter().map(|c| c.no_gpu("no OneHot/TopKV2 kernels")).collect()
}

fn select(v2: bool, c: (&[usize], V), x: (&[usize], V), y: (&[usize], V), out: (DType, &[usize])) -> Graph {
    let mut g = Graph::new();
    let ci = g.input(c.0, c.1);
    let xi = g.input(x.0, x.1);
    let yi = g.input(y.0, y.1);
    let o = g.out(out.0, out.1);
    g.op(OpKind::Select { v2 }, &[Some(ci), Some(xi), Some(yi)], &[o]);
    g
}

fn select_cases() -> Vec<Case> {
    let x = seq(6);
    let y: Vec<f32> = x.iter().map(|v| -v).collect();
    // SELECT with a rank-1 condition picks rows.
    let g = select(false, (&[2], b(&[false, true])), (&[2, 3], f(&x)), (&[2, 3], f(&y)), (DType::F32, &[2, 3]));
    let mut cases = vec![Case::new("select rank-1 condition", &g).out(0, f(&[-0.0, -1.0, -2.0, 3.0, 4.0, 5.0]))];
    // SELECT_V2 broadcasts all three: condition [3], x [2, 3], y scalar.
    let g = select(true, (&[3], b(&[true, false, true])), (&[2, 3], i(&[1, 2, 3, 4, 5, 6])), (&[], i(&[0])), (DType::I32, &[2, 3]));
    cases.push(Case::new("select_v2 broadcast", &g).out(0, i(&[1, 0, 3, 4, 0, 6])));
    // SELECT (v1) does not broadcast x and y.
    let g = select(false, (&[2, 3], b(&[true; 6])), (&[2, 3], f(&x)), (&[3], f(&y[..3])), (DType::F32, &[2, 3]));
    cases.push(Case::new("neg_select_v1_does_not_broadcast", &g).prepare_error(&["Select", "does not broadcast"]));
    cases.into_iter().map(|c| c.no_gpu("no Select kernel")).collect()
}

/// `neg_` cases of the builtins added after the first op set (their values are checked against
/// LiteRT by `tests/builtin_oneop.rs`): bad options, shapes or types fail at prepare naming the
/// op and the rule.
fn later_builtin_neg_cases() -> Vec<Case> {
    let i32s = DType::I32;
    let rows = [
        ("neg_scatter_nd_updates_do_not_fit", OpKind::ScatterNd, vec![z(i32s, &[2, 1]), z(F, &[2, 4]), ints(&[2], &[5, 3])], vec![(F, &[5, 3][..])], ["ScatterNd", "do not fit"]),
        (
            "neg_sparse_to_dense_indices_of_rank_3",
            OpKind::SparseToDense { validate_indices: false },
            vec![z(i32s, &[1, 1, 2]), ints(&[2], &[3, 3]), z(F, &[1]), z(F, &[])],
            vec![(F, &[3, 3][..])],
            ["SparseToDense", "rank <= 2"],
        ),
        (
            "neg_nms_boxes_not_four_wide",
            OpKind::NonMaxSuppression { v5: false },
            vec![z(F, &[5, 3]), z(F, &[5]), ints(&[], &[2]), z(F, &[]), z(F, &[])],
            vec![(i32s, &[2][..]), (i32s, &[])],
            ["NonMaxSuppressionV4", "[n, 4]"],
        ),
        ("neg_unique_of_a_matrix", OpKind::Unique, vec![z(i32s, &[2, 2])], vec![(i32s, &[4][..]), (i32s, &[4])], ["Unique", "rank 1"]),
        ("neg_embedding_lookup_table_of_rank_1", OpKind::EmbeddingLookup, vec![z(i32s, &[2]), z(F, &[5])], vec![(F, &[2][..])], ["EmbeddingLookup", "rank >= 2"]),
    ];
    let mut cases: Vec<Case> = rows.into_iter().map(|(name, kind, args, outs, needles)| Case::new(name, &Graph::one_op(kind, &args, &outs)).prepare_error(&needles)).collect();
    let lookup = embedding_lookup(&[0, 3]);
    cases.push(Case::new("neg_embedding_lookup_index_out_of_range_fails_at_run", &lookup).run_error(&["EmbeddingLookup", "out of bounds"]).no_gpu("no EmbeddingLookup kernel"));
    cases
}

/// EMBEDDING_LOOKUP of `ids` in a zero table of 3 rows of 2.
fn embedding_lookup(ids: &[i32]) -> Graph {
    Graph::one_op(OpKind::EmbeddingLookup, &[Arg::In(&[2], i(ids)), Arg::Const(&[3, 2], f(&[0.0; 6]))], &[(F, &[2, 2])])
}

/// A run error leaves the session usable: valid indices run afterwards.
#[test]
fn embedding_lookup_session_stays_usable_after_a_run_error() {
    let g = embedding_lookup(&[0, 3]);
    let mut s = nnrt::Session::from_model(g.model()).expect("model");
    s.set_backends("cpu").expect("backends");
    s.prepare().expect("prepare");
    s.set_input(0, &i(&[0, 3]).bytes()).expect("input");
    assert!(matches!(s.run(), Err(nnrt::Error::Run(_))), "index 3 of 3 rows must fail at run");
    s.set_input(0, &i(&[2, 1]).bytes()).expect("input");
    s.run().expect("valid indices run after the error");
}
