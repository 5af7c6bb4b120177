//! CAST between every supported type, and DEQUANTIZE of float16 constants.

use nnrt_core::{DType, OpKind};
use nnrt_tests::reference::{self as r, T};
use nnrt_tests::{b, f, i, i64s, Act, BuiltinOperator as Op, Case, Graph, Options, TensorType, Tol, V};

use crate::{random, tflite_unary};

nnrt_tests::replay_on_every_target!(cast_cases);

fn cast(name: &str, x: V, to: DType, want: V) -> Case {
    Case::new(format!("cast {name}"), &Graph::unary(OpKind::Cast, &[x.len()], x, to)).out(0, want)
}

fn cast_cases() -> Vec<Case> {
    let xf = f(&[-3.7, -0.5, 0.0, 2.5, 300.0, f32::NAN]);
    let mut cases = vec![
        cast("f32 to i32", xf.clone(), DType::I32, i(&[-3, 0, 0, 2, 300, i32::MAX])),
        cast("f32 to u8", xf.clone(), DType::U8, V::U8(vec![0, 0, 0, 2, 255, 0])),
        cast("f32 to i16", xf.clone(), DType::I16, V::I16(vec![-3, 0, 0, 2, 300, 0])),
        cast("f32 to i8", xf.clone(), DType::I8, V::I8(vec![-3, 0, 0, 2, 44, 0])),
        cast("f32 to bool", xf, DType::Bool, b(&[true, true, false, true, true, true])),
        cast("f32 to i64", f(&[-3.7, 1e12]), DType::I64, i64s(&[-3, 999_999_995_904])),
        cast("f32 to f16", f(&[1.0, 65520.0, 0.1]), DType::F16, V::F16(vec![1.0, f32::INFINITY, 0.099975586])),
        cast("f16 to f32", V::F16(vec![1.5, -2.0]), DType::F32, f(&[1.5, -2.0])),
        cast("i32 to u8", i(&[300, -1, 7]), DType::U8, V::U8(vec![44, 255, 7])),
        cast("i32 to bool", i(&[300, -1, 0]), DType::Bool, b(&[true, true, false])),
        cast("i64 to f32", i64s(&[16_777_217, -5]), DType::F32, f(&[16_777_216.0, -5.0])),
        cast("i64 to i32", i64s(&[1 << 40, -5]), DType::I32, i(&[0, -5])),
        cast("bool to f32", b(&[true, false]), DType::F32, f(&[1.0, 0.0])),
        cast("u8 to i8", V::U8(vec![255, 1]), DType::I8, V::I8(vec![-1, 1])),
        cast("i8 to i64", V::I8(vec![-1, 5]), DType::I64, i64s(&[-1, 5])),
        cast("i16 to f32", V::I16(vec![-300]), DType::F32, f(&[-300.0])),
        // Empty tensors convert to empty tensors.
        cast("empty f32 to i32", f(&[]), DType::I32, i(&[])),
    ];
    let mut g = Graph::new();
    let xi = g.input(&[2], f(&[1.0, 2.0]));
    let y = g.out(DType::I32, &[3]);
    g.op(OpKind::Cast, &[Some(xi)], &[y]);
    cases.push(Case::new("neg_cast_to_another_shape", &g).prepare_error(&["Cast", "[2]"]));
    let mut cases: Vec<Case> = cases.into_iter().map(|c| c.no_gpu("no Cast kernel")).collect();
    // The float16 converter's pattern: f16 weights -> DEQUANTIZE -> float op. The values are not
    // all exact in f16; the reference rounds them the same way (nearest even) before adding.
    let consts = [0.1f32, -2.5, 1000.3];
    let rounded: Vec<f32> = consts.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
    let x = random(&[1, 4, 5, 3], 250);
    let want = r::binary(&x, &T::new(&[3], rounded), |a, c| a + c);
    let dequantize = tflite_unary("DEQUANTIZE f16 + ADD", &x, &want, Tol::EXACT, |b, xi, y| {
        let c16 = b.constant_f16("c_f16", &[3], &consts);
        let c32 = b.tensor("c", TensorType::FLOAT32, &[3]);
        b.op(Op::DEQUANTIZE, &[c16], &[c32], Options::None);
        b.op(Op::ADD, &[xi, c32], &[y], Options::Add { act: Act::NONE });
    });
    cases.push(dequantize.no_gpu("no Dequantize kernel"));
    cases
}
