//! Quantization parameters come from the file: a zero point outside its type's range or a scale
//! that is 0, negative, tiny, NaN or infinite must give a typed error or a result, never a panic
//! (e.g. a clamp whose bounds cross). Each case starts from a model that runs, so the kernels are
//! reached.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::exercise::{exercise, panic_message, Outcome};
use nnrt_tests::{Act, BuiltinOperator as Op, ModelBuilder, Options, Padding, TensorType};

/// Scale and zero point of the tensor a case corrupts.
#[derive(Clone, Copy, Debug)]
struct Q {
    scale: f32,
    zero_point: i64,
}

/// uint8 `y = relu6(a + b)`; `out` quantizes y.
fn uint8_add(out: Q) -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let x1 = b.input("a", TensorType::UINT8, &[1, 2, 3, 4]);
    let x2 = b.input("b", TensorType::UINT8, &[1, 2, 3, 4]);
    let y = b.tensor("y", TensorType::UINT8, &[1, 2, 3, 4]);
    b.quantization(x1, &[0.05], &[128], 0).quantization(x2, &[0.1], &[100], 0).quantization(y, &[out.scale], &[out.zero_point], 0);
    b.op(Op::ADD, &[x1, x2], &[y], Options::Add { act: Act::RELU6 });
    b.output(y);
    b.finish()
}

/// int8 CONV_2D 1x1 with per-channel filter scales and an int32 bias; `out` quantizes the output.
fn int8_conv(out: Q) -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::INT8, &[1, 3, 3, 2]);
    let w = b.constant_bytes("w", TensorType::INT8, &[2, 1, 1, 2], &[1, 2, 0xFF, 0x80]);
    let bias = b.constant_i32("bias", &[2], &[100, -100]);
    let y = b.tensor("y", TensorType::INT8, &[1, 3, 3, 2]);
    b.quantization(x, &[0.05], &[-3], 0).quantization(w, &[0.01, 0.02], &[0, 0], 0).quantization(bias, &[0.0005, 0.001], &[0, 0], 0);
    b.quantization(y, &[out.scale], &[out.zero_point], 0);
    b.op(Op::CONV_2D, &[x, w, bias], &[y], Options::conv(Padding::VALID, 1, Act::RELU));
    b.output(y);
    b.finish()
}

const BAD: &[(&str, Q)] = &[
    ("zero point 300", Q { scale: 0.1, zero_point: 300 }),
    ("zero point -1000", Q { scale: 0.1, zero_point: -1000 }),
    ("zero point i32::MAX", Q { scale: 0.1, zero_point: i32::MAX as i64 }),
    ("zero point i64::MIN", Q { scale: 0.1, zero_point: i64::MIN }),
    ("scale 0", Q { scale: 0.0, zero_point: 0 }),
    ("scale -0.1", Q { scale: -0.1, zero_point: 0 }),
    ("scale 1e-30", Q { scale: 1e-30, zero_point: 0 }),
    ("scale 1e30", Q { scale: 1e30, zero_point: 0 }),
    ("scale NaN", Q { scale: f32::NAN, zero_point: 0 }),
    ("scale inf", Q { scale: f32::INFINITY, zero_point: 0 }),
];

fn check(model: &str, make: fn(Q) -> Vec<u8>, good: Q) -> Vec<String> {
    assert_eq!(exercise(model, make(good)), Outcome::Ran, "{model}: the well-formed model must run");
    let mut failures = Vec::new();
    for &(what, q) in BAD {
        match catch_unwind(AssertUnwindSafe(|| exercise(model, make(q)))) {
            Ok(outcome) => println!("{model}, output {what}: {outcome:?}"),
            Err(panic) => failures.push(format!("{model}, output {what}: panicked: {}", panic_message(&*panic))),
        }
    }
    failures
}

#[test]
fn out_of_range_quantization_does_not_panic() {
    let mut failures = check("uint8 ADD + relu6", uint8_add, Q { scale: 0.1, zero_point: 120 });
    failures.extend(check("int8 CONV_2D + relu", int8_conv, Q { scale: 0.1, zero_point: -5 }));
    assert!(failures.is_empty(), "quantized kernels panicked on parameters read from the file:\n{}", failures.join("\n"));
}
