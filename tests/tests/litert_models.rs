//! One-op models with LiteRT's answers, committed under `tests/models/`, on the CPU backend with
//! 1 and 2 threads:
//!
//! - `builtin_oneop/`: the builtins added after the first op set (ADD_N … BITWISE_XOR), made by
//!   `tools/make_builtin_oneop_models.py`, which ran each model on LiteRT. Cases with state (RNN,
//!   SVDF) run as many times as LiteRT did (the `runs` file) so the state carries over.
//!   Tolerance: integer and boolean outputs exactly; float32 outputs within 1e-5 relative to
//!   max(1, |expected|), since the float math (atan2, pow, tanh, dot products) may round
//!   differently from LiteRT's in the last bits; float data movement is exact anyway.
//! - `quant_oneop/`: quantized ops, made by `tools/make_quant_oneop_models.py` on LiteRT's
//!   reference kernels. Tolerance: none; these ops promise TFLite's integer arithmetic bit for bit.
//! - `lstm_state_runs/`: the integer LSTM's state carried over three runs of a corpus model.

use std::path::Path;

use nnrt::Session;
use nnrt_tests::{model_cases, npy_file, numbered_npys, repo_root, RawNpy};

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Runs one case and returns a line per output that differs from LiteRT's; float32 outputs
/// within `float_rel` of max(1, |expected|) when given, else exactly.
fn run_case(dir: &Path, threads: usize, float_rel: Option<f32>) -> Vec<String> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let bytes = std::fs::read(dir.join("model.tflite")).unwrap_or_else(|e| panic!("{name}: {e}"));
    let model = nnrt_loaders::tflite::load_bytes(&name, bytes).unwrap_or_else(|e| panic!("{name}: load: {e}"));
    let mut s = Session::from_model(model).unwrap_or_else(|e| panic!("{name}: {e}"));
    s.set_backends("cpu").unwrap_or_else(|e| panic!("{name}: {e}"));
    s.set_threads(threads).unwrap_or_else(|e| panic!("{name}: {e}"));
    s.prepare().unwrap_or_else(|e| panic!("{name}: prepare: {e}"));
    let runs: usize = std::fs::read_to_string(dir.join("runs")).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(1);
    for _ in 0..runs {
        for (i, x) in numbered_npys(dir, "input").iter().enumerate() {
            s.set_input(i, &x.data).unwrap_or_else(|e| panic!("{name}: input {i}: {e}"));
        }
        s.run().unwrap_or_else(|e| panic!("{name}: run: {e}"));
    }
    let expected = numbered_npys(dir, "expected");
    assert!(!expected.is_empty(), "{name}: no expected outputs");
    let mut bad = Vec::new();
    for (j, want) in expected.iter().enumerate() {
        let dims = s.output_info(j).unwrap_or_else(|e| panic!("{name}: {e}")).dims;
        let got = s.output(j).unwrap_or_else(|e| panic!("{name}: {e}"));
        if dims != want.dims {
            bad.push(format!("{name} output {j}: shape {dims:?}, LiteRT {:?}", want.dims));
        } else if let (Some(rel), "<f4") = (float_rel, want.descr.as_str()) {
            let (g, w) = (f32s(got), f32s(&want.data));
            let worst = g.iter().zip(&w).map(|(a, b)| if a == b || (a.is_nan() && b.is_nan()) { 0.0 } else { (a - b).abs() / b.abs().max(1.0) }).fold(0f32, f32::max);
            // Written so that a NaN error (a NaN where LiteRT has a number) fails too.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(worst <= rel) {
                bad.push(format!("{name} output {j}: relative error {worst} > {rel} (nnrt {g:?}, LiteRT {w:?})"));
            }
        } else if got != want.data.as_slice() {
            let size = (want.data.len() / want.dims.iter().product::<usize>().max(1)).max(1);
            let differ = |(a, b): &(&[u8], &[u8])| a != b;
            let pairs: Vec<_> = got.chunks(size).zip(want.data.chunks(size)).collect();
            let first = pairs.iter().position(differ).unwrap_or(0);
            let n = pairs.iter().filter(|p| differ(p)).count();
            bad.push(format!("{name} output {j} ({}): {n} elements differ, first at {first}", want.descr));
        }
    }
    bad
}

/// Every case of `tests/models/<suite>` (at least `min`) on 1 and 2 threads.
fn check_suite(suite: &str, min: usize, float_rel: Option<f32>) {
    let cases = model_cases(suite);
    assert!(cases.len() >= min, "expected the committed one-op models, found {}", cases.len());
    let mut bad = Vec::new();
    for dir in &cases {
        for threads in [1, 2] {
            bad.extend(run_case(dir, threads, float_rel).into_iter().map(|b| format!("{b} ({threads} threads)")));
        }
    }
    assert!(bad.is_empty(), "outputs differing from LiteRT:\n{}", bad.join("\n"));
}

#[test]
fn builtin_one_op_models_match_litert() {
    check_suite("builtin_oneop", 60, Some(1e-5));
}

#[test]
fn quantized_one_op_models_match_litert_exactly() {
    check_suite("quant_oneop", 20, None);
}

/// The integer LSTM keeps its variable state tensors between runs like TFLite: three runs of
/// the corpus' `coral_keras_lstm_mnist_ptq` on one input give LiteRT's three outputs (stored in
/// `tests/models/lstm_state_runs`; runs 2 and 3 differ from run 1 only through the state).
#[test]
fn integer_lstm_state_carries_over_runs_like_litert() {
    let Some(dir) = nnrt_tests::corpus_model_or_skip("tflite/coral_keras_lstm_mnist_ptq") else { return };
    let bytes = std::fs::read(dir.join("model.tflite")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let model = nnrt_loaders::tflite::load_bytes("lstm", bytes).unwrap_or_else(|e| panic!("load: {e}"));
    let mut s = Session::from_model(model).unwrap_or_else(|e| panic!("{e}"));
    s.set_backends("cpu").unwrap_or_else(|e| panic!("{e}"));
    s.prepare().unwrap_or_else(|e| panic!("prepare: {e}"));
    let input = npy_file(&dir.join("input_0.npy"));
    let runs: Vec<RawNpy> = (0..3).map(|r| npy_file(&repo_root().join(format!("tests/models/lstm_state_runs/run_{r}.npy")))).collect();
    assert_ne!(runs[0].data, runs[1].data, "the stored runs must show the state's effect");
    for (r, want) in runs.iter().enumerate() {
        s.set_input(0, &input.data).unwrap_or_else(|e| panic!("{e}"));
        s.run().unwrap_or_else(|e| panic!("run {r}: {e}"));
        assert_eq!(s.output(0).unwrap_or_else(|e| panic!("{e}")), want.data.as_slice(), "run {r}");
    }
}
