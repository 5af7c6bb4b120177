//! Type and grid conversions: CAST between every supported type, DEQUANTIZE of float16
//! constants, FAKE_QUANT.

use nnrt_core::{DType, OpKind};
use nnrt_tests::reference::{self as r, T};
use nnrt_tests::{b, f, i, i64s, Act, BuiltinOperator as Op, Case, Graph, ModelBuilder, Options, TensorType, Tol, V};

use crate::{random, tflite_unary};

nnrt_tests::replay_on_every_target!(cast_cases, fake_quant_cases);

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

/// FAKE_QUANT through the TFLite reader on `[6]`.
fn fake_quant(name: &str, min: f32, max: f32, num_bits: i32, narrow_range: bool, x: &[f32]) -> Case {
    let mut b = ModelBuilder::new();
    let xi = b.input("x", TensorType::FLOAT32, &[6]);
    let y = b.tensor("y", TensorType::FLOAT32, &[6]);
    b.op(Op::FAKE_QUANT, &[xi], &[y], Options::FakeQuant { min, max, num_bits, narrow_range });
    b.output(y);
    Case::tflite(name, &b, vec![f(x)]).no_gpu("no FakeQuant kernel")
}

fn fake_quant_cases() -> Vec<Case> {
    // [-0.4, 1.1] over 4 bits: 15 steps of 0.1, and 0 is level 4, so nothing is nudged. Rounding
    // is on the distance from the range's minimum, half away from zero: -0.05 is 3.5 steps up
    // and goes to step 4 (0.0). The ends clamp.
    let tol = Tol::new(1e-6, 0.0, "grid levels min + k·step are rounded once in f32");
    let snap = fake_quant("values snap to the grid", -0.4, 1.1, 4, false, &[-3.0, -0.05, 0.0, 0.26, 0.349, 7.0]);
    let narrow = fake_quant("neg_a_narrow_range_is_refused_at_prepare", -1.0, 1.0, 8, true, &[0.0; 6]);
    vec![snap.out_close(0, f(&[-0.4, 0.0, 0.0, 0.3, 0.3, 1.1]), tol), narrow.prepare_error(&["FakeQuant", "narrow_range"])]
}
