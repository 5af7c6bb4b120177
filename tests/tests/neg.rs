//! `neg_` cases: models or calls that must fail at a named phase (load, prepare, run, or the
//! session's state rules) with the typed error of that phase and a message naming the problem.

mod common;

use nnrt::{Error, LoadError, Session};
use nnrt_tests::{Act, BuiltinOperator as Op, ModelBuilder, Options, Padding, TensorIdx, TensorType};

const F32: TensorType = TensorType::FLOAT32;

/// Loads the model (which must succeed) into a session on the `cpu` backend.
fn session(b: &ModelBuilder) -> Session {
    let model = nnrt_loaders::tflite::load_bytes("neg.tflite", b.finish()).unwrap_or_else(|e| panic!("load must succeed: {e}"));
    let mut s = Session::from_model(model).expect("session");
    s.set_backends("cpu").expect("configure");
    s
}

/// Prepare must fail with `Error::Compile` whose message contains every one of `needles`.
fn expect_prepare_error(b: &ModelBuilder, needles: &[&str]) {
    let mut s = session(b);
    match s.prepare() {
        Err(e @ Error::Compile(_)) => {
            let msg = e.to_string();
            for n in needles {
                assert!(msg.contains(n), "prepare error should mention {n:?}: {msg}");
            }
        }
        Err(e) => panic!("expected a compile (prepare) error, got {e:?}"),
        Ok(()) => panic!("prepare succeeded; expected an error mentioning {needles:?}"),
    }
}

/// `y = code(x, c)` with x [1,4,5,3] input and `c` a constant made by `constant`.
fn unary_with_const(code: Op, y_dims: &[i32], options: Options, constant: impl FnOnce(&mut ModelBuilder) -> TensorIdx) -> ModelBuilder {
    let mut b = ModelBuilder::new();
    let x = b.input("x", F32, &[1, 4, 5, 3]);
    let c = constant(&mut b);
    let y = b.tensor("y", F32, y_dims);
    b.op(code, &[x, c], &[y], options);
    b.output(y);
    b
}

#[test]
fn neg_prepare_conv_filter_channel_mismatch() {
    // Input has 3 channels, the filter expects 2 (and 2 does not divide 3, so not grouped).
    let mut b = ModelBuilder::new();
    let x = b.input("x", F32, &[1, 5, 5, 3]);
    let w = b.constant_f32("w", &[4, 3, 3, 2], &[0.5; 72]);
    let y = b.tensor("y", F32, &[1, 5, 5, 4]);
    b.op(Op::CONV_2D, &[x, w, TensorIdx::ABSENT], &[y], Options::conv(Padding::SAME, 1, Act::NONE));
    b.output(y);
    expect_prepare_error(&b, &["Conv2D", "input channels"]);
}

#[test]
fn neg_prepare_add_shapes_not_broadcastable() {
    let mut b = ModelBuilder::new();
    let a = b.input("a", F32, &[1, 4, 5, 3]);
    let c = b.input("c", F32, &[1, 4, 5, 2]);
    let y = b.tensor("y", F32, &[1, 4, 5, 3]);
    b.op(Op::ADD, &[a, c], &[y], Options::Add { act: Act::NONE });
    b.output(y);
    expect_prepare_error(&b, &["Add", "[1,4,5,3] and [1,4,5,2]", "cannot be broadcast"]);
}

#[test]
fn neg_prepare_transpose_bad_perm() {
    let b = unary_with_const(Op::TRANSPOSE, &[1, 4, 4, 3], Options::None, |b| b.constant_i32("perm", &[4], &[0, 1, 1, 3]));
    expect_prepare_error(&b, &["Transpose", "not a permutation"]);
}

#[test]
fn neg_prepare_concat_bad_axis() {
    let mut b = ModelBuilder::new();
    let a = b.input("a", F32, &[1, 2, 3, 4]);
    let c = b.input("c", F32, &[1, 2, 3, 4]);
    let y = b.tensor("y", F32, &[1, 2, 3, 8]);
    b.op(Op::CONCATENATION, &[a, c], &[y], Options::Concatenation { axis: 4, act: Act::NONE });
    b.output(y);
    expect_prepare_error(&b, &["Concatenation", "axis 4 is out of range"]);
}

#[test]
fn neg_prepare_reshape_wrong_count() {
    let b = unary_with_const(Op::RESHAPE, &[7, 9], Options::None, |b| b.constant_i32("shape", &[2], &[7, 9]));
    expect_prepare_error(&b, &["Reshape", "cannot reshape", "60 elements"]);
}

#[test]
fn neg_prepare_mean_axis_out_of_range() {
    let b = unary_with_const(Op::MEAN, &[1, 3], Options::Reducer { keep_dims: false }, |b| b.constant_i32("axes", &[2], &[1, 5]));
    expect_prepare_error(&b, &["Mean", "axis 5 is out of range"]);
}

#[test]
fn neg_prepare_wrong_dtype() {
    let mut b = ModelBuilder::new();
    let a = b.input("a", F32, &[2, 3]);
    let c = b.input("c", TensorType::INT32, &[2, 3]);
    let y = b.tensor("y", F32, &[2, 3]);
    b.op(Op::ADD, &[a, c], &[y], Options::Add { act: Act::NONE });
    b.output(y);
    expect_prepare_error(&b, &["Add", "int32", "must match"]);
}

#[test]
fn neg_prepare_unknown_custom_op() {
    let mut b = ModelBuilder::new();
    let x = b.input("x", F32, &[1, 8]);
    let y = b.tensor("y", F32, &[1, 8]);
    b.custom_op("NnrtTestNoSuchOp", &[x], &[y], b"\x01\x02");
    b.output(y);
    expect_prepare_error(&b, &["NnrtTestNoSuchOp"]);
}

#[test]
fn neg_load_unsupported_builtin() {
    // LSH_PROJECTION (code 15) and STABLEHLO_ADD (163, written as 127 + builtin_code): well-formed
    // files whose operator nnrt does not implement. Load must fail naming the operator.
    for (code, name) in [(Op::LSH_PROJECTION, "LSH_PROJECTION"), (Op::STABLEHLO_ADD, "STABLEHLO_ADD")] {
        let mut b = ModelBuilder::new();
        let x = b.input("x", F32, &[4]);
        let c = b.constant_f32("c", &[4], &[1.0; 4]);
        let y = b.tensor("y", F32, &[4]);
        b.op(code, &[c, x], &[y], Options::None);
        b.output(y);
        match nnrt_loaders::tflite::load_bytes("neg.tflite", b.finish()) {
            Err(e @ LoadError::UnsupportedOp { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(name) && msg.contains("not supported"), "load error should name {name}: {msg}");
            }
            Err(e) => panic!("{name}: expected LoadError::UnsupportedOp, got {e:?}"),
            Ok(_) => panic!("{name}: load succeeded; expected an unsupported-operator error"),
        }
    }
}

fn relu_model() -> ModelBuilder {
    let mut b = ModelBuilder::new();
    let x = b.input("x", F32, &[2, 3]);
    let y = b.tensor("y", F32, &[2, 3]);
    b.op(Op::RELU, &[x], &[y], Options::None);
    b.output(y);
    b
}

#[test]
fn neg_run_short_input_buffer() {
    let mut s = session(&relu_model());
    s.prepare().expect("prepare");
    match s.set_input(0, &[0u8; 20]) {
        Err(e @ Error::Run(_)) => {
            let msg = e.to_string();
            assert!(msg.contains("20 bytes") && msg.contains("expected 24"), "{msg}");
        }
        other => panic!("expected a run-phase error for a 20-byte buffer, got {other:?}"),
    }
}

#[test]
fn neg_state_run_before_prepare() {
    let mut s = session(&relu_model());
    match s.run() {
        Err(e @ Error::InvalidState { .. }) => assert!(e.to_string().contains("prepare"), "{e}"),
        other => panic!("run before prepare must be an InvalidState error, got {other:?}"),
    }
    match s.output(0) {
        Err(Error::InvalidState { call: "output", .. }) => {}
        other => panic!("output before run must be an InvalidState error, got {other:?}"),
    }
}

#[test]
fn neg_state_set_config_after_prepare() {
    let mut s = session(&relu_model());
    s.prepare().expect("prepare");
    for (what, result) in [("set_threads", s.set_threads(2)), ("set_backends", s.set_backends("cpu")), ("set_config", s.set_config("NUM_THREADS", "1"))] {
        match result {
            Err(e @ Error::InvalidState { .. }) => assert!(e.to_string().contains("before prepare"), "{what}: {e}"),
            other => panic!("{what} after prepare must be an InvalidState error, got {other:?}"),
        }
    }
}
