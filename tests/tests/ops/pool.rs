//! AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D.

use nnrt_core::{Activation, DType, OpKind, Padding, Pool2D, PoolKind, UnaryOp};
use nnrt_tests::reference::{self as r, Geom};
use nnrt_tests::{Act, BuiltinOperator as Op, Case, Graph, Options, Padding as TflPadding, Tol};

use crate::{noise, random, tflite_unary, GPU_SUMS, SUMS};

nnrt_tests::replay_on_every_target!(tflite_cases, gpu_cases);

fn tflite_cases() -> Vec<Case> {
    // 5x6 input, 3x3 window, stride 2, SAME: border windows hang over the edge, so the average
    // must count only the cells inside (TFLite) and the max must ignore the padding.
    let geom = Geom { stride: [2, 2], dilation: [1, 1], same: true };
    let options = Options::Pool2D { padding: TflPadding::SAME, stride: [2, 2], filter: [3, 3], act: Act::NONE };
    let x = random(&[1, 5, 6, 2], 110);
    let avg = tflite_unary("AVERAGE_POOL_2D SAME", &x, &r::pool(&x, [3, 3], geom, false), SUMS, |b, xi, y| {
        b.op(Op::AVERAGE_POOL_2D, &[xi], &[y], options.clone());
    });
    // All-negative inputs: a kernel that pads with 0 would return 0 at the border.
    let x = random(&[1, 5, 6, 2], 120).map(|v| v - 2.0);
    let max = tflite_unary("MAX_POOL_2D SAME negative", &x, &r::pool(&x, [3, 3], geom, true), Tol::EXACT, |b, xi, y| {
        b.op(Op::MAX_POOL_2D, &[xi], &[y], options.clone());
    });
    vec![avg.gpu_tol(GPU_SUMS), max]
}

/// Every GPU pool kind against the cpu; L2 also against sqrt(average pool(x²)) on the cpu,
/// which pins both L2 kernels.
fn gpu_cases() -> Vec<Case> {
    let rows = [
        (PoolKind::Average, Padding::Same, [3, 3], [2, 2], Activation::None),
        (PoolKind::Max, Padding::Valid, [2, 2], [2, 2], Activation::Relu),
        (PoolKind::L2, Padding::Same, [2, 3], [1, 2], Activation::None),
        (PoolKind::Average, Padding::Valid, [7, 7], [1, 1], Activation::Relu6),
    ];
    let mut cases = Vec::new();
    for (k, (kind, pad, filter, stride, act)) in rows.into_iter().enumerate() {
        let x: [usize; 4] = [1, 7, 7, 5];
        let (oh, ow) = match pad {
            Padding::Same => (x[1].div_ceil(stride[0]), x[2].div_ceil(stride[1])),
            _ => ((x[1] - filter[0]) / stride[0] + 1, (x[2] - filter[1]) / stride[1] + 1),
        };
        let mut g = Graph::new();
        let xi = g.input(&x, noise(&x, 100 + k as u64));
        let o = g.out(DType::F32, &[1, oh, ow, 5]);
        g.op(OpKind::Pool2D(Pool2D { kind, padding: pad, stride, filter, act }), &[Some(xi)], &[o]);
        if kind == PoolKind::L2 {
            let mut sq = Graph::new();
            let xr = sq.input(&x, noise(&x, 100 + k as u64));
            let t = sq.tensor(DType::F32, &x);
            sq.op(OpKind::Unary(UnaryOp::Square), &[Some(xr)], &[t]);
            let avg = sq.tensor(DType::F32, &[1, oh, ow, 5]);
            sq.op(OpKind::Pool2D(Pool2D { kind: PoolKind::Average, padding: pad, stride, filter, act }), &[Some(t)], &[avg]);
            let or = sq.out(DType::F32, &[1, oh, ow, 5]);
            sq.op(OpKind::Unary(UnaryOp::Sqrt), &[Some(avg)], &[or]);
            cases.push(Case::new("L2 pool against sqrt(avg(x²))", &g).same_as_cpu_of(&sq, GPU_SUMS));
            cases.push(Case::new("L2 pool", &g).same_as_cpu(GPU_SUMS));
            continue;
        }
        let tol = if kind == PoolKind::Max { Tol::EXACT } else { GPU_SUMS };
        cases.push(Case::new(format!("{kind:?} pool {k}"), &g).same_as_cpu(tol));
    }
    // Pools over a whole large image: one workgroup per channel (`reduce_wide`).
    for (k, (kind, x, act)) in [(PoolKind::Average, [2, 32, 24, 5], Activation::Relu6), (PoolKind::Max, [2, 32, 24, 5], Activation::None), (PoolKind::Average, [1, 17, 16, 70], Activation::None)].into_iter().enumerate() {
        let mut g = Graph::new();
        let xi = g.input(&x, noise(&x, 130 + k as u64));
        let o = g.out(DType::F32, &[x[0], 1, 1, x[3]]);
        g.op(OpKind::Pool2D(Pool2D { kind, padding: Padding::Valid, stride: [1, 1], filter: [x[1], x[2]], act }), &[Some(xi)], &[o]);
        let tol = if kind == PoolKind::Max { Tol::EXACT } else { GPU_SUMS };
        cases.push(Case::new(format!("global {kind:?} pool {k}"), &g).same_as_cpu(tol));
    }
    cases
}
