//! Reductions (SUM, PROD, MAX, MIN, MEAN, ANY, ALL), ARG_MIN/ARG_MAX, and the softmax family
//! (SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION).

use nnrt_core::{Activation, DType, LocalResponseNorm, OpKind, ReduceOp, SegmentOp};
use nnrt_tests::reference::{self as r, T};
use nnrt_tests::{b, f, i, i64s, rand, BuiltinOperator as Op, Case, Graph, Options, Tol, XorShift, V};

use crate::{ints, random, tflite_unary, zero_input as z, F, GPU_MATH, GPU_SUMS, SUMS, ULPS};

nnrt_tests::replay_on_every_target!(reduce_cases, arg_cases, softmax_cases, tflite_cases, gpu_cases, later_builtin_neg_cases);

fn reduce_model(op: ReduceOp, x: (&[usize], V), axes: &[i32], keep: bool, out: (DType, &[usize])) -> Graph {
    let mut g = Graph::new();
    let xi = g.input(x.0, x.1);
    let ax = g.ints(axes);
    let y = g.out(out.0, out.1);
    g.op(OpKind::Reduce { op, keep_dims: keep }, &[Some(xi), Some(ax)], &[y]);
    g
}

fn reduce_cases() -> Vec<Case> {
    let x: Vec<f32> = (1..=24).map(|v| v as f32 * 0.25).collect();
    // [2, 3, 4] reduced over axes (0, -1): 3 results.
    let over = |k: usize| -> Vec<f32> { (0..2).flat_map(|a| (0..4).map(move |c| (a, c))).map(|(a, c)| x[(a * 3 + k) * 4 + c]).collect() };
    type Fold = fn(&[f32]) -> f32;
    let rows: [(ReduceOp, Fold); 5] = [
        (ReduceOp::Sum, |v| v.iter().sum()),
        (ReduceOp::Prod, |v| v.iter().product()),
        (ReduceOp::Max, |v| v.iter().copied().fold(f32::MIN, f32::max)),
        (ReduceOp::Min, |v| v.iter().copied().fold(f32::MAX, f32::min)),
        (ReduceOp::Mean, |v| v.iter().sum::<f32>() / v.len() as f32),
    ];
    let tol = Tol::new(1e-6, 1e-6, "8 terms may be combined in another order");
    let mut cases = Vec::new();
    for (op, fold) in rows {
        for keep in [false, true] {
            let od: &[usize] = if keep { &[1, 3, 1] } else { &[3] };
            let g = reduce_model(op, (&[2, 3, 4], f(&x)), &[0, -1, 0], keep, (DType::F32, od));
            let want: Vec<f32> = (0..3).map(|k| fold(&over(k))).collect();
            cases.push(Case::new(format!("{op:?} keep_dims {keep}, negative and repeated axes"), &g).dims(0, od).out_close(0, f(&want), tol).gpu_tol(GPU_SUMS));
        }
    }
    const NO_INT: &str = "no int or bool kernels (gpu kernels compute in float32)";
    let ints = [
        ("sum int32", reduce_model(ReduceOp::Sum, (&[2, 3], i(&[1, 2, 3, 4, 5, 6])), &[1], false, (DType::I32, &[2])), i(&[6, 15])),
        ("mean int64", reduce_model(ReduceOp::Mean, (&[2, 2], i64s(&[1, 2, -3, -4])), &[1], true, (DType::I64, &[2, 1])), i64s(&[1, -3])),
    ];
    cases.extend(ints.into_iter().map(|(name, g, want)| Case::new(name, &g).out(0, want).no_gpu(NO_INT)));
    let x = b(&[true, false, false, false, true, true]);
    let g = reduce_model(ReduceOp::Any, (&[2, 3], x.clone()), &[1], false, (DType::Bool, &[2]));
    cases.push(Case::new("reduce any", &g).out(0, b(&[true, true])).no_gpu(NO_INT));
    let g = reduce_model(ReduceOp::All, (&[2, 3], x), &[-1], false, (DType::Bool, &[2]));
    cases.push(Case::new("reduce all", &g).out(0, b(&[false, false])).no_gpu(NO_INT));
    let g = reduce_model(ReduceOp::Sum, (&[2, 3], f(&[0.0; 6])), &[2], false, (DType::F32, &[2]));
    cases.push(Case::new("neg_reduce_bad_axis", &g).prepare_error(&["Sum", "axis 2 is out of range"]));
    let g = reduce_model(ReduceOp::Any, (&[2, 3], f(&[0.0; 6])), &[1], false, (DType::F32, &[2]));
    cases.push(Case::new("neg_reduce_wrong_dtype", &g).prepare_error(&["ReduceAny", "bool"]));
    cases
}

fn arg_model(max: bool, x: (&[usize], V), axis: i32, out: (DType, &[usize])) -> Graph {
    let mut g = Graph::new();
    let xi = g.input(x.0, x.1);
    let a = g.ints(&[axis]);
    let y = g.out(out.0, out.1);
    g.op(OpKind::ArgMinMax { max }, &[Some(xi), Some(a)], &[y]);
    g
}

/// ARG_MIN/ARG_MAX: the first index wins a tie.
fn arg_cases() -> Vec<Case> {
    let x = f(&[1.0, 5.0, 5.0, -2.0, 0.0, 0.0]);
    let rows = [
        arg_model(true, (&[2, 3], x.clone()), -1, (DType::I32, &[2])),
        arg_model(false, (&[2, 3], x.clone()), 1, (DType::I64, &[2])),
        arg_model(true, (&[2, 3], x), 0, (DType::I32, &[3])),
        arg_model(false, (&[4], i(&[3, -7, 2, -7])), 0, (DType::I32, &[])),
        arg_model(true, (&[3], b(&[false, true, true])), 0, (DType::I32, &[])),
    ];
    let wants = [i(&[1, 1]), i64s(&[0, 0]), i(&[0, 0, 0]), i(&[1]), i(&[1])];
    let mut cases: Vec<Case> = rows.iter().zip(wants).enumerate().map(|(k, (g, want))| Case::new(format!("arg_min_max first index wins {k}"), g).out(0, want)).collect();
    let g = arg_model(true, (&[2, 3], f(&[0.0; 6])), 1, (DType::F32, &[2]));
    cases.push(Case::new("neg_arg_max_float_output", &g).prepare_error(&["ArgMax", "int32 or int64"]));
    let g = arg_model(true, (&[2, 3], f(&[0.0; 6])), -3, (DType::I32, &[2]));
    cases.push(Case::new("neg_arg_max_axis_out_of_range", &g).prepare_error(&["ArgMax", "out of range"]));
    cases.into_iter().map(|c| c.no_gpu("no ArgMin/ArgMax kernel")).collect()
}

fn softmax_cases() -> Vec<Case> {
    let x = rand(12, 51, -3.0, 3.0);
    let rows = |fun: &dyn Fn(&[f32]) -> Vec<f32>| -> V { f(&x.chunks(4).flat_map(fun).collect::<Vec<_>>()) };
    let g = Graph::unary(OpKind::Softmax { beta: 0.5 }, &[3, 4], f(&x), DType::F32);
    let want = rows(&|r| {
        let m = r.iter().copied().fold(f32::MIN, f32::max);
        let e: Vec<f32> = r.iter().map(|v| ((v - m) * 0.5).exp()).collect();
        let s: f32 = e.iter().sum();
        e.iter().map(|v| v / s).collect()
    });
    let mut cases = vec![Case::new("softmax beta", &g).out_close(0, want, ULPS).gpu_tol(GPU_MATH)];
    let g = Graph::unary(OpKind::LogSoftmax, &[3, 4], f(&x), DType::F32);
    let want = rows(&|r| {
        let m = r.iter().copied().fold(f32::MIN, f32::max);
        let ls = r.iter().map(|v| (v - m).exp()).sum::<f32>().ln();
        r.iter().map(|v| v - m - ls).collect()
    });
    let tol = Tol::new(4e-6, 2e-6, "vectorized exp and log may differ from std's by a few ulp");
    cases.push(Case::new("log_softmax", &g).out_close(0, want, tol).gpu_tol(GPU_MATH));
    let l2 = OpKind::L2Normalization { act: Activation::None };
    let g = Graph::unary(l2.clone(), &[3, 4], f(&x), DType::F32);
    let want = rows(&|r| {
        let n = r.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-6);
        r.iter().map(|v| v / n).collect()
    });
    let no_l2 = "no L2Normalization kernel";
    cases.push(Case::new("l2_normalization", &g).out_close(0, want, Tol::new(1e-6, 1e-6, "a sum of 4 squares and a square root")).no_gpu(no_l2));
    // A zero row is divided by the 1e-6 floor, not by zero.
    let g = Graph::unary(l2, &[1, 2], f(&[0.0, 0.0]), DType::F32);
    cases.push(Case::new("l2_normalization of a zero row", &g).out(0, f(&[0.0, 0.0])).no_gpu(no_l2));
    cases
}

/// MEAN and SOFTMAX through the TFLite reader.
fn tflite_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let x = random(&[2, 4, 5, 3], 190);
    for keep_dims in [true, false] {
        let want = r::mean(&x, &[1, 2], keep_dims);
        cases.push(tflite_unary(&format!("MEAN axes [1,2] keep_dims={keep_dims}"), &x, &want, SUMS, |b, xi, y| {
            let axes = b.constant_i32("axes", &[2], &[1, 2]);
            b.op(Op::MEAN, &[xi, axes], &[y], Options::Reducer { keep_dims });
        }));
    }
    let x = random(&[3, 11], 200).map(|v| v * 10.0);
    let transcendental = Tol::new(2e-6, 0.0, "vectorized exp is accurate to a few ulp of a result in [0, 1]");
    cases.push(tflite_unary("SOFTMAX beta 0.5", &x, &r::softmax(&x, 0.5), transcendental, |b, xi, y| {
        b.op(Op::SOFTMAX, &[xi], &[y], Options::Softmax { beta: 0.5 });
    }));
    cases.into_iter().map(|c| c.gpu_tol(GPU_MATH)).collect()
}

/// The GPU's reductions and softmaxes against the cpu.
fn gpu_cases() -> Vec<Case> {
    let rows = [
        (ReduceOp::Mean, vec![1, 2], vec![2, 1, 1, 6], GPU_SUMS),
        (ReduceOp::Sum, vec![0], vec![1, 4, 5, 6], GPU_SUMS),
        (ReduceOp::Max, vec![-1], vec![2, 4, 5, 1], Tol::EXACT),
        (ReduceOp::Min, vec![1, 3], vec![2, 1, 5, 1], Tol::EXACT),
        (ReduceOp::Prod, vec![2], vec![2, 4, 1, 6], GPU_SUMS),
    ];
    let mut cases = Vec::new();
    for (op, axes, od, tol) in rows {
        let g = reduce_model(op, (&[2, 4, 5, 6], f(&XorShift::new(110).fill(240, 0.5, 1.5))), &axes, true, (DType::F32, &od));
        cases.push(Case::new(format!("gpu {op:?} over {axes:?}"), &g).same_as_cpu(tol));
    }
    // Many elements per output: one workgroup per output (`reduce_wide`).
    let wide = [
        (ReduceOp::Mean, vec![1, 2], vec![2, 1, 1, 3], GPU_SUMS),
        (ReduceOp::Sum, vec![0, 1, 2, 3], vec![1, 1, 1, 1], GPU_SUMS),
        (ReduceOp::Max, vec![1, 2], vec![2, 1, 1, 3], Tol::EXACT),
        (ReduceOp::Min, vec![0, 1], vec![1, 1, 16, 3], Tol::EXACT),
    ];
    for (op, axes, od, tol) in wide {
        let g = reduce_model(op, (&[2, 20, 16, 3], f(&XorShift::new(111).fill(1920, -1.5, 1.5))), &axes, true, (DType::F32, &od));
        cases.push(Case::new(format!("gpu {op:?} over {axes:?}, many per output"), &g).same_as_cpu(tol));
    }
    let g = Graph::unary(OpKind::Softmax { beta: 0.5 }, &[3, 10], f(&XorShift::new(120).fill(30, -5.0, 5.0)), DType::F32);
    cases.push(Case::new("gpu softmax beta 0.5", &g).same_as_cpu(GPU_MATH));
    let g = Graph::unary(OpKind::LogSoftmax, &[2, 3, 7], f(&XorShift::new(121).fill(42, -5.0, 5.0)), DType::F32);
    cases.push(Case::new("gpu log softmax", &g).same_as_cpu(GPU_MATH));
    cases
}

/// `neg_` cases of the builtins added after the first op set (their values are checked against
/// LiteRT by `tests/builtin_oneop.rs`): bad options, shapes or types fail at prepare naming the
/// op and the rule.
fn later_builtin_neg_cases() -> Vec<Case> {
    let lrn = LocalResponseNorm { radius: -1, bias: 1.0, alpha: 1.0, beta: 0.5 };
    let rows = [
        ("neg_segment_sum_ids_not_sorted", OpKind::SegmentSum, vec![z(F, &[3, 2]), ints(&[3], &[0, 2, 1])], (F, &[3, 2][..]), ["SegmentSum", "rise by 0 or 1"]),
        (
            "neg_unsorted_segment_id_past_num_segments",
            OpKind::UnsortedSegment(SegmentOp::Max),
            vec![z(F, &[3, 2]), ints(&[3], &[0, 4, 1]), ints(&[], &[3])],
            (F, &[3, 2]),
            ["UnsortedSegmentMax", "not below num_segments"],
        ),
        ("neg_lrn_negative_radius", OpKind::LocalResponseNorm(lrn), vec![z(F, &[1, 2, 2, 4])], (F, &[1, 2, 2, 4]), ["LocalResponseNormalization", "radius"]),
    ];
    let mut cases: Vec<Case> = rows.into_iter().map(|(name, kind, args, out, needles)| Case::new(name, &Graph::one_op(kind, &args, &[out])).prepare_error(&needles)).collect();
    let x = T::new(&[1, 4, 5, 3], vec![0.0; 60]);
    let mean = tflite_unary("neg_prepare_mean_axis_out_of_range", &x, &T::new(&[1, 3], vec![0.0; 3]), Tol::EXACT, |b, xi, y| {
        let axes = b.constant_i32("axes", &[2], &[1, 5]);
        b.op(Op::MEAN, &[xi, axes], &[y], Options::Reducer { keep_dims: false });
    });
    cases.push(mean.prepare_error(&["Mean", "axis 5 is out of range"]));
    cases
}
