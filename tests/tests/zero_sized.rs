//! Tensors with a zero-sized dim are legal in TFLite (an empty batch, a 0-wide concat input):
//! every op must handle them or refuse them with a typed error, never panic (e.g. on a division
//! by a zero count).

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::exercise::{exercise, panic_message};
use nnrt_tests::{Act, BuiltinOperator as Op, MirrorPadMode, ModelBuilder, Options, Padding, TensorType};

/// One op over a tensor with a zero-sized dim: `y = code(x, constants…)`.
struct ZeroCase {
    what: &'static str,
    code: Op,
    x: &'static [i32],
    y: &'static [i32],
    options: Options,
    /// Constant inputs after `x`: (dims, f32 values) or (dims, i32 values).
    consts: Vec<Const>,
}

enum Const {
    F32(&'static [i32], Vec<f32>),
    I32(&'static [i32], Vec<i32>),
}

fn zero_cases() -> Vec<ZeroCase> {
    let conv = Options::conv(Padding::SAME, 1, Act::NONE);
    let pool = Options::Pool2D { padding: Padding::SAME, stride: [1, 1], filter: [2, 2], act: Act::NONE };
    let dw = Options::DepthwiseConv2D { padding: Padding::SAME, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Act::NONE };
    vec![
        ZeroCase { what: "CONV_2D, input with 0 channels", code: Op::CONV_2D, x: &[1, 3, 3, 0], y: &[1, 3, 3, 2], options: conv.clone(), consts: vec![Const::F32(&[2, 1, 1, 1], vec![1.0; 2])] },
        ZeroCase { what: "CONV_2D, input with 0 rows", code: Op::CONV_2D, x: &[1, 0, 3, 1], y: &[1, 0, 3, 2], options: conv, consts: vec![Const::F32(&[2, 1, 1, 1], vec![1.0; 2])] },
        ZeroCase { what: "DEPTHWISE_CONV_2D, 0 rows", code: Op::DEPTHWISE_CONV_2D, x: &[1, 0, 3, 2], y: &[1, 0, 3, 2], options: dw, consts: vec![Const::F32(&[1, 1, 1, 2], vec![1.0; 2])] },
        ZeroCase { what: "FULLY_CONNECTED, batch 0", code: Op::FULLY_CONNECTED, x: &[0, 4], y: &[0, 3], options: Options::FullyConnected { act: Act::NONE, keep_num_dims: false }, consts: vec![Const::F32(&[3, 4], vec![1.0; 12])] },
        ZeroCase { what: "AVERAGE_POOL_2D, 0 columns", code: Op::AVERAGE_POOL_2D, x: &[1, 3, 0, 2], y: &[1, 3, 0, 2], options: pool.clone(), consts: vec![] },
        ZeroCase { what: "MAX_POOL_2D, 0 channels", code: Op::MAX_POOL_2D, x: &[1, 3, 3, 0], y: &[1, 3, 3, 0], options: pool, consts: vec![] },
        ZeroCase { what: "ADD, 0 rows broadcast with [3]", code: Op::ADD, x: &[0, 3], y: &[0, 3], options: Options::Add { act: Act::RELU }, consts: vec![Const::F32(&[3], vec![1.0; 3])] },
        ZeroCase { what: "LOGISTIC, 0 elements", code: Op::LOGISTIC, x: &[2, 0], y: &[2, 0], options: Options::None, consts: vec![] },
        ZeroCase { what: "MEAN over a 0-sized axis", code: Op::MEAN, x: &[2, 0, 3], y: &[2, 3], options: Options::Reducer { keep_dims: false }, consts: vec![Const::I32(&[1], vec![1])] },
        ZeroCase { what: "SOFTMAX, last dim 0", code: Op::SOFTMAX, x: &[2, 0], y: &[2, 0], options: Options::Softmax { beta: 1.0 }, consts: vec![] },
        ZeroCase { what: "SOFTMAX, batch 0", code: Op::SOFTMAX, x: &[0, 5], y: &[0, 5], options: Options::Softmax { beta: 1.0 }, consts: vec![] },
        ZeroCase { what: "CONCATENATION with a 0-wide input", code: Op::CONCATENATION, x: &[2, 0], y: &[2, 3], options: Options::Concatenation { axis: 1, act: Act::NONE }, consts: vec![Const::F32(&[2, 3], vec![1.0; 6])] },
        ZeroCase { what: "RESHAPE 0 elements to [0, 4]", code: Op::RESHAPE, x: &[2, 0], y: &[0, 4], options: Options::None, consts: vec![Const::I32(&[2], vec![0, 4])] },
        ZeroCase { what: "TRANSPOSE with a 0 dim", code: Op::TRANSPOSE, x: &[2, 0, 3], y: &[3, 2, 0], options: Options::None, consts: vec![Const::I32(&[3], vec![2, 0, 1])] },
        ZeroCase { what: "PAD of a 0-sized dim", code: Op::PAD, x: &[2, 0], y: &[2, 2], options: Options::None, consts: vec![Const::I32(&[2, 2], vec![0, 0, 1, 1])] },
        ZeroCase { what: "MIRROR_PAD of a 0-sized dim", code: Op::MIRROR_PAD, x: &[0, 3], y: &[0, 5], options: Options::MirrorPad { mode: MirrorPadMode::SYMMETRIC }, consts: vec![Const::I32(&[2, 2], vec![0, 0, 1, 1])] },
    ]
}

#[test]
fn zero_sized_dims_do_not_panic() {
    let mut failures = Vec::new();
    for case in zero_cases() {
        let mut b = ModelBuilder::new();
        let x = b.input("x", TensorType::FLOAT32, case.x);
        let mut inputs = vec![x];
        for (i, c) in case.consts.iter().enumerate() {
            inputs.push(match c {
                Const::F32(dims, v) => b.constant_f32(&format!("c{i}"), dims, v),
                Const::I32(dims, v) => b.constant_i32(&format!("c{i}"), dims, v),
            });
        }
        let y = b.tensor("y", TensorType::FLOAT32, case.y);
        b.op(case.code, &inputs, &[y], case.options.clone());
        b.output(y);
        let bytes = b.finish();
        match catch_unwind(AssertUnwindSafe(|| exercise(case.what, bytes))) {
            Ok(outcome) => println!("{}: {outcome:?}", case.what),
            Err(panic) => failures.push(format!("{}: panicked: {}", case.what, panic_message(&*panic))),
        }
    }
    assert!(failures.is_empty(), "ops panicked on zero-sized tensors:\n{}", failures.join("\n"));
}
