//! `neg_` cases beyond single ops (those are in `tests/ops/`, replayed on every backend): models
//! or calls that must fail at a named phase (load, prepare, run, or the session's state rules)
//! with the typed error of that phase and a message naming the problem.

use nnrt::{Error, LoadError, Session};
use nnrt_tests::{BuiltinOperator as Op, ModelBuilder, Options, TensorType};

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
