//! Ops that make tensors from shapes and scalars: FILL, RANGE, SHAPE, RANK, ZEROS_LIKE, ONES_LIKE.

use nnrt_core::{DType, OpKind};
use nnrt_tests::{f, i, i64s, Case, Graph, V};

nnrt_tests::replay_on_every_target!(generate_cases);

fn range(s: V, l: V, d: V, n: usize) -> Graph {
    let mut g = Graph::new();
    let dtype = s.dtype();
    let (si, li, di) = (g.konst(&[], s), g.konst(&[], l), g.konst(&[], d));
    let y = g.out(dtype, &[n]);
    g.op(OpKind::Range, &[Some(si), Some(li), Some(di)], &[y]);
    g
}

fn shape_of(kind: OpKind, x: &[usize], dtype: DType, od: &[usize]) -> Graph {
    let mut g = Graph::new();
    let xi = g.input(x, f(&vec![0.0; x.iter().product()]));
    let y = g.out(dtype, od);
    g.op(kind, &[Some(xi)], &[y]);
    g
}

fn generate_cases() -> Vec<Case> {
    let mut g = Graph::new();
    let dims = g.ints(&[2, 3]);
    let v = g.input(&[], i64s(&[7]));
    let y = g.out(DType::I64, &[2, 3]);
    g.op(OpKind::Fill, &[Some(dims), Some(v)], &[y]);
    let cases = vec![
        Case::new("fill int64", &g).out(0, i64s(&[7; 6])),
        Case::new("range int32 negative delta", &range(i(&[2]), i(&[-6]), i(&[-3]), 3)).out(0, i(&[2, -1, -4])),
        Case::new("range float", &range(f(&[0.0]), f(&[1.0]), f(&[0.3]), 4)).out(0, f(&[0.0, 0.3, 0.6, 0.90000004])),
        Case::new("neg_range_delta_away_from_the_limit", &range(i(&[0]), i(&[5]), i(&[-1]), 5)).prepare_error(&["Range", "delta"]),
        Case::new("shape int32", &shape_of(OpKind::Shape, &[2, 1, 3], DType::I32, &[3])).out(0, i(&[2, 1, 3])),
        Case::new("shape int64", &shape_of(OpKind::Shape, &[2, 1, 3], DType::I64, &[3])).out(0, i64s(&[2, 1, 3])),
        Case::new("rank", &shape_of(OpKind::Rank, &[2, 1, 3], DType::I32, &[])).out(0, i(&[3])),
        Case::new("neg_shape_float_output", &shape_of(OpKind::Shape, &[2], DType::F32, &[1])).prepare_error(&["Shape", "int32 or int64"]),
        Case::new("zeros_like int32", &Graph::unary(OpKind::ZerosLike, &[3], i(&[4, 5, 6]), DType::I32)).out(0, i(&[0, 0, 0])),
        Case::new("ones_like float", &Graph::unary(OpKind::OnesLike, &[2], f(&[4.0, 5.0]), DType::F32)).out(0, f(&[1.0, 1.0])),
    ];
    cases.into_iter().map(|c| c.no_gpu("no Fill/Range/Shape/Rank/ZerosLike/OnesLike kernels")).collect()
}
