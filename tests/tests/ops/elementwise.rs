//! Element-wise unary math, binary arithmetic with broadcasting, comparisons and logical ops.

use nnrt_core::{Activation, BinaryOp, BitwiseOp, CompareOp, DType, LogicalOp, OpKind, UnaryOp};
use nnrt_tests::reference as r;
use nnrt_tests::{b, f, i, i64s, rand, Case, Graph, Options, Tol, XorShift, V};
use nnrt_tests::{Act, BuiltinOperator as Op, ModelBuilder, TensorType};

use crate::{dims_i32, random, zero_input as z, F, GPU_MATH, GPU_SUMS, ULPS};

nnrt_tests::replay_on_every_target!(unary_cases, binary_cases, integer_binary_cases, compare_and_logical_cases, tflite_binary_cases, gpu_binary_cases, gpu_unary_cases, later_builtin_neg_cases, tflite_neg_cases);

const NO_INT: &str = "no int or bool kernels (gpu kernels compute in float32)";

fn unary(op: UnaryOp, dims: &[usize], x: V, out: DType) -> Graph {
    Graph::unary(OpKind::Unary(op), dims, x, out)
}

fn binary(op: BinaryOp, act: Activation, a: (&[usize], V), bb: (&[usize], V), out: (DType, &[usize])) -> Graph {
    Graph::binary(OpKind::Binary { op, act }, a, bb, out)
}

fn unary_cases() -> Vec<Case> {
    let x = rand(40, 11, -3.0, 3.0);
    let pos = rand(40, 12, 0.05, 9.0);
    type Fn1 = fn(f32) -> f32;
    let rows: [(UnaryOp, &[f32], Fn1); 13] = [
        (UnaryOp::Abs, &x, f32::abs),
        (UnaryOp::Neg, &x, |v| -v),
        (UnaryOp::Exp, &x, f32::exp),
        (UnaryOp::Log, &pos, f32::ln),
        (UnaryOp::Sqrt, &pos, f32::sqrt),
        (UnaryOp::Rsqrt, &pos, |v| 1.0 / v.sqrt()),
        (UnaryOp::Square, &x, |v| v * v),
        (UnaryOp::Sin, &x, f32::sin),
        (UnaryOp::Cos, &x, f32::cos),
        (UnaryOp::Floor, &x, f32::floor),
        (UnaryOp::Ceil, &x, f32::ceil),
        (UnaryOp::Round, &x, f32::round_ties_even),
        (UnaryOp::Sign, &x, f32::signum),
    ];
    let mut cases: Vec<Case> = rows
        .into_iter()
        .map(|(op, input, want)| {
            let expect: Vec<f32> = input.iter().map(|&v| want(v)).collect();
            Case::new(format!("unary_math_matches_std {op:?}"), &unary(op, &[4, 10], f(input), DType::F32)).out_close(0, f(&expect), ULPS).gpu_tol(GPU_MATH)
        })
        .collect();
    // (-0.0 == 0.0: the sign of a zero result is not asserted.)
    let g = unary(UnaryOp::Round, &[7], f(&[0.5, 1.5, 2.5, -0.5, -2.5, 3.4999998, -7.5]), DType::F32);
    cases.push(Case::new("round is half to even", &g).out(0, f(&[0.0, 2.0, 2.0, 0.0, -2.0, 3.0, -8.0])));
    let g = unary(UnaryOp::Sign, &[4], f(&[-0.0, 0.0, -3.0, 1e-30]), DType::F32);
    cases.push(Case::new("sign of zero is zero", &g).out(0, f(&[0.0, 0.0, -1.0, 1.0])));
    let ints = [
        ("abs int32", unary(UnaryOp::Abs, &[4], i(&[-3, 0, 7, i32::MIN]), DType::I32), i(&[3, 0, 7, i32::MIN])),
        ("neg int64", unary(UnaryOp::Neg, &[3], i64s(&[5, -6, 0]), DType::I64), i64s(&[-5, 6, 0])),
        ("sign int32", unary(UnaryOp::Sign, &[3], i(&[-9, 0, 4]), DType::I32), i(&[-1, 0, 1])),
        ("logical not", unary(UnaryOp::LogicalNot, &[3], b(&[true, false, true]), DType::Bool), b(&[false, true, false])),
    ];
    cases.extend(ints.into_iter().map(|(name, g, want)| Case::new(name, &g).out(0, want).no_gpu(NO_INT)));
    let negs = [
        (unary(UnaryOp::LogicalNot, &[2], f(&[1.0, 0.0]), DType::F32), ["LogicalNot", "bool"]),
        (unary(UnaryOp::Exp, &[2], b(&[true, false]), DType::Bool), ["Exp", "bool"]),
        (unary(UnaryOp::Sqrt, &[2], f(&[1.0, 4.0]), DType::I32), ["Sqrt", "int32"]),
    ];
    cases.extend(negs.into_iter().map(|(g, needles)| Case::new(format!("neg_unary_wrong_dtype {}", needles[0]), &g).prepare_error(&needles)));
    cases
}

fn binary_cases() -> Vec<Case> {
    let a = rand(24, 41, -4.0, 4.0);
    let bv = rand(4, 42, 0.5, 3.0);
    type Fn2 = fn(f32, f32) -> f32;
    let rows: [(BinaryOp, Fn2); 6] = [
        (BinaryOp::Pow, |x, y| x.abs().powf(y)),
        (BinaryOp::SquaredDifference, |x, y| (x - y) * (x - y)),
        (BinaryOp::Maximum, f32::max),
        (BinaryOp::Minimum, f32::min),
        (BinaryOp::FloorDiv, |x, y| (x / y).floor()),
        (BinaryOp::FloorMod, |x, y| x - (x / y).floor() * y),
    ];
    let mut cases = Vec::new();
    for (op, want) in rows {
        let a_in: Vec<f32> = if op == BinaryOp::Pow { a.iter().map(|v| v.abs()).collect() } else { a.clone() };
        let g = binary(op, Activation::None, (&[2, 3, 4], f(&a_in)), (&[4], f(&bv)), (DType::F32, &[2, 3, 4]));
        let expect: Vec<f32> = (0..24).map(|k| want(a_in[k], bv[k % 4])).collect();
        let tol = Tol::new(2e-6, 2e-6, "pow, and floor of a quotient, may round differently from std's by an ulp");
        cases.push(Case::new(format!("binary float {op:?} broadcast"), &g).out_close(0, f(&expect), tol).gpu_tol(GPU_MATH));
    }
    // FLOOR_MOD takes the divisor's sign; the fused activation clamps.
    let g = binary(BinaryOp::FloorMod, Activation::None, (&[4], f(&[-7.0, 7.0, 6.0, -1.5])), (&[4], f(&[3.0, -3.0, -3.0, 1.0])), (DType::F32, &[4]));
    cases.push(Case::new("floor_mod takes the divisor's sign", &g).out(0, f(&[2.0, -2.0, 0.0, 0.5])));
    let g = binary(BinaryOp::Maximum, Activation::Relu6, (&[3], f(&[-9.0, 4.0, 8.0])), (&[], f(&[-1.0])), (DType::F32, &[3]));
    cases.push(Case::new("maximum with a fused relu6", &g).out(0, f(&[0.0, 4.0, 6.0])));
    cases
}

fn integer_binary_cases() -> Vec<Case> {
    let (av, bvv) = ([-7, 7, 9, -9, 100], [2, -2, 3, 4, 7]);
    type Fn2 = fn(i32, i32) -> i32;
    let rows: [(BinaryOp, Fn2); 8] = [
        (BinaryOp::Add, |x, y| x + y),
        (BinaryOp::Sub, |x, y| x - y),
        (BinaryOp::Mul, |x, y| x * y),
        (BinaryOp::Div, |x, y| x / y),
        (BinaryOp::FloorDiv, |x, y| x.div_euclid(y) - if x.rem_euclid(y) != 0 && y < 0 { 1 } else { 0 }),
        (BinaryOp::FloorMod, |x, y| ((x % y) + y) % y),
        (BinaryOp::Maximum, i32::max),
        (BinaryOp::Minimum, i32::min),
    ];
    let mut cases = Vec::new();
    for (op, want) in rows {
        let g = binary(op, Activation::None, (&[5], i(&av)), (&[5], i(&bvv)), (DType::I32, &[5]));
        let expect: Vec<i32> = av.iter().zip(&bvv).map(|(&x, &y)| want(x, y)).collect();
        cases.push(Case::new(format!("binary int32 {op:?}"), &g).out(0, i(&expect)));
    }
    // int64 with broadcasting and a fused RELU.
    let g = binary(BinaryOp::Mul, Activation::Relu, (&[2, 2], i64s(&[3, -4, 5_000_000_000, 1])), (&[2], i64s(&[2, 3])), (DType::I64, &[2, 2]));
    cases.push(Case::new("mul int64 broadcast relu", &g).out(0, i64s(&[6, 0, 10_000_000_000, 3])));
    let g = binary(BinaryOp::Pow, Activation::None, (&[2], i(&[2, 3])), (&[2], i(&[3, -1])), (DType::I32, &[2]));
    cases.push(Case::new("neg_integer_pow_with_negative_exponent_fails_at_run", &g).run_error(&["negative exponent"]));
    let g = binary(BinaryOp::Pow, Activation::None, (&[2], i(&[2, -3])), (&[], i(&[3])), (DType::I32, &[2]));
    cases.push(Case::new("integer pow", &g).out(0, i(&[8, -27])));
    for op in [BinaryOp::Div, BinaryOp::FloorDiv, BinaryOp::FloorMod] {
        let g = binary(op, Activation::None, (&[2], i(&[4, 5])), (&[2], i(&[1, 0])), (DType::I32, &[2]));
        cases.push(Case::new(format!("neg_integer_division_by_zero_fails_at_run {op:?}"), &g).run_error(&["division by zero"]));
    }
    let cases = cases.into_iter().map(|c| c.no_gpu(NO_INT));
    let g = binary(BinaryOp::Pow, Activation::None, (&[2], f(&[1.0, 2.0])), (&[2], i(&[1, 2])), (DType::F32, &[2]));
    let mut cases: Vec<Case> = cases.collect();
    cases.push(Case::new("neg_binary_mismatched_dtypes", &g).prepare_error(&["Pow", "type int32"]));
    let g = binary(BinaryOp::Minimum, Activation::None, (&[2, 3], f(&[0.0; 6])), (&[2], f(&[0.0; 2])), (DType::F32, &[2, 3]));
    cases.push(Case::new("neg_binary_mismatched_shapes", &g).prepare_error(&["Minimum", "cannot be broadcast"]));
    cases
}

fn compare_and_logical_cases() -> Vec<Case> {
    const NO_KERNEL: &str = "no comparison or logical kernels";
    let a = [1.0, 2.0, f32::NAN, -1.0, 3.0, 2.0];
    let bv = [2.0, 2.0, 0.0];
    let ai: Vec<i64> = vec![1, 2, 0, -1, 3, 2];
    type Fn2 = fn(f32, f32) -> bool;
    let rows: [(CompareOp, Fn2); 6] = [
        (CompareOp::Equal, |x, y| x == y),
        (CompareOp::NotEqual, |x, y| x != y),
        (CompareOp::Less, |x, y| x < y),
        (CompareOp::LessEqual, |x, y| x <= y),
        (CompareOp::Greater, |x, y| x > y),
        (CompareOp::GreaterEqual, |x, y| x >= y),
    ];
    let mut cases = Vec::new();
    for (op, want) in rows {
        let g = Graph::binary(OpKind::Compare(op), (&[2, 3], f(&a)), (&[3], f(&bv)), (DType::Bool, &[2, 3]));
        cases.push(Case::new(format!("{op:?} float broadcast"), &g).out(0, V::Bool((0..6).map(|k| want(a[k], bv[k % 3])).collect())));
        let g = Graph::binary(OpKind::Compare(op), (&[2, 3], i64s(&ai)), (&[1], i64s(&[2])), (DType::Bool, &[2, 3]));
        cases.push(Case::new(format!("{op:?} int64 broadcast"), &g).out(0, V::Bool(ai.iter().map(|&x| want(x as f32, 2.0)).collect())));
    }
    let g = Graph::binary(OpKind::Compare(CompareOp::Greater), (&[3], i(&[5, -5, 0])), (&[], i(&[0])), (DType::Bool, &[3]));
    cases.push(Case::new("greater int32 scalar", &g).out(0, b(&[true, false, false])));
    let g = Graph::binary(OpKind::Compare(CompareOp::Less), (&[2], f(&[0.0; 2])), (&[2], f(&[0.0; 2])), (DType::F32, &[2]));
    cases.push(Case::new("neg_comparison_output_must_be_bool", &g).prepare_error(&["Less", "bool"]));
    let a = b(&[true, false, true, false]);
    let g = Graph::binary(OpKind::Logical(LogicalOp::And), (&[2, 2], a.clone()), (&[2], b(&[true, false])), (DType::Bool, &[2, 2]));
    cases.push(Case::new("logical and broadcast", &g).out(0, b(&[true, false, true, false])));
    let g = Graph::binary(OpKind::Logical(LogicalOp::Or), (&[2, 2], a), (&[2, 1], b(&[false, true])), (DType::Bool, &[2, 2]));
    cases.push(Case::new("logical or broadcast", &g).out(0, b(&[true, false, true, true])));
    let g = Graph::binary(OpKind::Logical(LogicalOp::Or), (&[1], f(&[1.0])), (&[1], b(&[true])), (DType::Bool, &[1]));
    cases.push(Case::new("neg_logical_or_of_a_float", &g).prepare_error(&["LogicalOr", "bool"]));
    cases.into_iter().map(|c| c.no_gpu(NO_KERNEL)).collect()
}

/// ADD, SUB, MUL, DIV through the TFLite reader, broadcast both ways, with a fused RELU.
fn tflite_binary(name: &str, code: Op, b_dims: &[usize], act: Act, seed: u64) -> Case {
    let a_dims = [1, 4, 5, 3];
    let a = random(&a_dims, seed).map(|v| v * 4.0);
    // Divisors away from 0: |b| in [0.5, 1.5).
    let bt = random(b_dims, seed + 1).map(|v| if v < 0.0 { v - 0.5 } else { v + 0.5 });
    let fun: fn(f32, f32) -> f32 = match code {
        Op::ADD => |x, y| x + y,
        Op::SUB => |x, y| x - y,
        Op::MUL => |x, y| x * y,
        _ => |x, y| x / y,
    };
    let fused: fn(f32) -> f32 = if act == Act::RELU { |v| v.max(0.0) } else { |v| v };
    let want = r::binary(&a, &bt, fun).map(fused);
    let options = match code {
        Op::ADD => Options::Add { act },
        Op::SUB => Options::Sub { act },
        Op::MUL => Options::Mul { act },
        _ => Options::Div { act },
    };
    let mut mb = ModelBuilder::new();
    let ai = mb.input("a", TensorType::FLOAT32, &dims_i32(&a_dims));
    let bi = mb.input("b", TensorType::FLOAT32, &dims_i32(b_dims));
    let y = mb.tensor("y", TensorType::FLOAT32, &dims_i32(&want.dims));
    mb.op(code, &[ai, bi], &[y], options);
    mb.output(y);
    let tol = if code == Op::DIV { Tol::new(0.0, 3e-7, "a kernel may multiply by a reciprocal (<= 2 ulp)") } else { Tol::EXACT };
    Case::tflite(name, &mb, vec![f(&a.data), f(&bt.data)]).out_tensor(0, &want, tol).gpu_tol(GPU_SUMS)
}

fn tflite_binary_cases() -> Vec<Case> {
    vec![
        tflite_binary("ADD [1,4,5,3]+[3] relu", Op::ADD, &[3], Act::RELU, 130),
        tflite_binary("ADD [1,4,5,3]+[1,1,5,1]", Op::ADD, &[1, 1, 5, 1], Act::NONE, 140),
        tflite_binary("SUB [1,4,5,3]-[3] relu", Op::SUB, &[3], Act::RELU, 150),
        tflite_binary("SUB [1,4,5,3]-[1,1,5,1]", Op::SUB, &[1, 1, 5, 1], Act::NONE, 151),
        tflite_binary("MUL [1,4,5,3]*[3]", Op::MUL, &[3], Act::NONE, 160),
        tflite_binary("MUL [1,4,5,3]*[1,1,5,1] relu", Op::MUL, &[1, 1, 5, 1], Act::RELU, 161),
        tflite_binary("DIV [1,4,5,3]/[3] relu", Op::DIV, &[3], Act::RELU, 170),
        tflite_binary("DIV [1,4,5,3]/[1,1,5,1]", Op::DIV, &[1, 1, 5, 1], Act::NONE, 171),
    ]
}

/// Every GPU binary op on three broadcast patterns, and fused activations, against the cpu.
fn gpu_binary_cases() -> Vec<Case> {
    let rows = [
        (BinaryOp::Add, GPU_SUMS),
        (BinaryOp::Sub, GPU_SUMS),
        (BinaryOp::Mul, GPU_SUMS),
        (BinaryOp::Div, GPU_SUMS),
        (BinaryOp::Pow, GPU_MATH),
        (BinaryOp::SquaredDifference, GPU_SUMS),
        (BinaryOp::Maximum, Tol::EXACT),
        (BinaryOp::Minimum, Tol::EXACT),
        (BinaryOp::FloorDiv, GPU_SUMS),
        (BinaryOp::FloorMod, GPU_SUMS),
    ];
    let shapes = [(vec![2, 1, 3], vec![4, 1], vec![2, 4, 3]), (vec![2, 3, 4], vec![2, 3, 4], vec![2, 3, 4]), (vec![1, 2, 1, 3, 1, 2], vec![2, 1], vec![1, 2, 1, 3, 2, 2])];
    let mut cases = Vec::new();
    for (op, tol) in rows {
        for (ad, bd, od) in &shapes {
            let mut g = Graph::new();
            let a = g.input(ad, f(&XorShift::new(70).fill(ad.iter().product(), -3.0, 3.0)));
            let n = bd.iter().product();
            let bvals: Vec<f32> = match op {
                // Integer exponents make negative bases defined; divisors stay away from 0.
                BinaryOp::Pow => XorShift::new(71).fill(n, -3.0, 3.0).iter().map(|v| v.round()).collect(),
                BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::FloorMod => {
                    XorShift::new(71).fill(n, 0.5, 2.0).iter().enumerate().map(|(k, v)| if k % 2 == 0 { *v } else { -v }).collect()
                }
                _ => XorShift::new(71).fill(n, -3.0, 3.0),
            };
            let bi = g.konst(bd, f(&bvals));
            let o = g.out(DType::F32, od);
            g.op(OpKind::Binary { op, act: Activation::None }, &[Some(a), Some(bi)], &[o]);
            cases.push(Case::new(format!("gpu {op:?} {ad:?} x {bd:?}"), &g).same_as_cpu(tol));
        }
    }
    for act in [Activation::Relu, Activation::ReluN1To1, Activation::Relu6, Activation::Tanh] {
        let mut g = Graph::new();
        let a = g.input(&[4, 8], f(&XorShift::new(80).fill(32, -8.0, 8.0)));
        let bi = g.input(&[8], f(&XorShift::new(81).fill(8, -8.0, 8.0)));
        let o = g.out(DType::F32, &[4, 8]);
        g.op(OpKind::Binary { op: BinaryOp::Add, act }, &[Some(a), Some(bi)], &[o]);
        cases.push(Case::new(format!("gpu add fused {act:?}"), &g).same_as_cpu(GPU_MATH));
    }
    cases
}

/// Every GPU unary op against the cpu, on 257 values (halves exercise round-half-to-even,
/// zeros sign and the relus).
fn gpu_unary_cases() -> Vec<Case> {
    let rows = [
        (UnaryOp::Relu, Tol::EXACT, -4.0, 4.0),
        (UnaryOp::Relu6, Tol::EXACT, -8.0, 8.0),
        (UnaryOp::ReluN1To1, Tol::EXACT, -2.0, 2.0),
        (UnaryOp::Relu0To1, Tol::EXACT, -2.0, 2.0),
        (UnaryOp::Tanh, GPU_MATH, -6.0, 6.0),
        (UnaryOp::Logistic, GPU_MATH, -10.0, 10.0),
        (UnaryOp::HardSwish, GPU_SUMS, -5.0, 5.0),
        (UnaryOp::LeakyRelu(0.2), Tol::EXACT, -4.0, 4.0),
        (UnaryOp::Elu, GPU_MATH, -4.0, 4.0),
        (UnaryOp::Gelu { approximate: false }, GPU_MATH, -4.0, 4.0),
        (UnaryOp::Gelu { approximate: true }, GPU_MATH, -4.0, 4.0),
        (UnaryOp::Abs, Tol::EXACT, -4.0, 4.0),
        (UnaryOp::Neg, Tol::EXACT, -4.0, 4.0),
        (UnaryOp::Exp, GPU_MATH, -4.0, 4.0),
        (UnaryOp::Log, GPU_MATH, 0.01, 10.0),
        (UnaryOp::Sqrt, GPU_SUMS, 0.0, 10.0),
        (UnaryOp::Rsqrt, GPU_SUMS, 0.1, 10.0),
        (UnaryOp::Square, GPU_SUMS, -4.0, 4.0),
        (UnaryOp::Sin, GPU_MATH, -3.0, 3.0),
        (UnaryOp::Cos, GPU_MATH, -3.0, 3.0),
        (UnaryOp::Floor, Tol::EXACT, -4.0, 4.0),
        (UnaryOp::Ceil, Tol::EXACT, -4.0, 4.0),
        (UnaryOp::Round, Tol::EXACT, -4.0, 4.0),
        (UnaryOp::Sign, Tol::EXACT, -4.0, 4.0),
    ];
    let mut cases = Vec::new();
    for (k, (op, tol, lo, hi)) in rows.into_iter().enumerate() {
        let mut v = XorShift::new(90 + k as u64).fill(257, lo, hi);
        v[0] = 0.0;
        v[1] = 2.5;
        v[2] = -1.5;
        if lo < 0.0 {
            v[3] = -0.0;
        }
        cases.push(Case::new(format!("gpu {op:?}"), &unary(op, &[257], f(&v), DType::F32)).same_as_cpu(tol));
    }
    cases
}

/// `neg_` cases of the builtins added after the first op set (their values are checked against
/// LiteRT by `tests/builtin_oneop.rs`): bad options, shapes or types fail at prepare naming the
/// op and the rule.
fn later_builtin_neg_cases() -> Vec<Case> {
    let i32s = DType::I32;
    let rows = [
        ("neg_add_n_inputs_of_different_shapes", OpKind::AddN, vec![z(F, &[2, 3]), z(F, &[3, 2])], (F, &[2, 3][..]), ["AddN", "every input must match"]),
        ("neg_atan2_does_not_broadcast", OpKind::Atan2, vec![z(F, &[2, 3]), z(F, &[1, 3])], (F, &[2, 3]), ["Atan2", "does not broadcast"]),
        ("neg_bitwise_xor_of_floats", OpKind::Bitwise(BitwiseOp::Xor), vec![z(F, &[4]), z(F, &[4])], (F, &[4]), ["BitwiseXor", "expected"]),
        ("neg_right_shift_shapes_not_broadcastable", OpKind::Bitwise(BitwiseOp::RightShift), vec![z(i32s, &[4]), z(i32s, &[3])], (i32s, &[4]), ["RightShift", "cannot be broadcast"]),
        ("neg_bucketize_unsorted_boundaries", OpKind::Bucketize { boundaries: vec![1.0, 0.0] }, vec![z(F, &[4])], (i32s, &[4]), ["Bucketize", "sorted"]),
    ];
    rows.into_iter().map(|(name, kind, args, out, needles)| Case::new(name, &Graph::one_op(kind, &args, &[out])).prepare_error(&needles)).collect()
}

/// ADD's `neg_` cases through the TFLite reader (which must load them): shapes that do not
/// broadcast, operands of different types.
fn tflite_neg_cases() -> Vec<Case> {
    [(TensorType::FLOAT32, [1, 4, 5, 2], ["Add", "[1,4,5,3] and [1,4,5,2]", "cannot be broadcast"]), (TensorType::INT32, [1, 4, 5, 3], ["Add", "int32", "must match"])]
        .into_iter()
        .map(|(c_type, c_dims, needles)| {
            let mut mb = ModelBuilder::new();
            let a = mb.input("a", TensorType::FLOAT32, &[1, 4, 5, 3]);
            let c = mb.input("c", c_type, &c_dims);
            let y = mb.tensor("y", TensorType::FLOAT32, &[1, 4, 5, 3]);
            mb.op(Op::ADD, &[a, c], &[y], Options::Add { act: Act::NONE });
            mb.output(y);
            Case::tflite(format!("neg_prepare_add {}", needles[2]), &mb, vec![]).prepare_error(&needles)
        })
        .collect()
}
