//! One-op quantized models with LiteRT's answers: every case in `tests/models/quant_oneop/`
//! (made by `tools/make_quant_oneop_models.py`, which ran each model on LiteRT's reference
//! kernels) must give exactly LiteRT's integers on the CPU backend, with 1 and 2 threads.
//! Tolerance: none; these ops promise TFLite's integer arithmetic bit for bit.

use std::path::Path;

use nnrt::Session;
use nnrt_tests::{model_cases, npy_file, numbered_npys, repo_root, RawNpy};

/// Runs one case and returns a line per output that differs from LiteRT's.
fn run_case(dir: &Path, threads: usize) -> Vec<String> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let bytes = std::fs::read(dir.join("model.tflite")).unwrap_or_else(|e| panic!("{name}: {e}"));
    let model = nnrt_loaders::tflite::load_bytes(&name, bytes).unwrap_or_else(|e| panic!("{name}: load: {e}"));
    let mut s = Session::from_model(model).unwrap_or_else(|e| panic!("{name}: {e}"));
    s.set_backends("cpu").unwrap_or_else(|e| panic!("{name}: {e}"));
    s.set_threads(threads).unwrap_or_else(|e| panic!("{name}: {e}"));
    s.prepare().unwrap_or_else(|e| panic!("{name}: prepare: {e}"));
    for (i, x) in numbered_npys(dir, "input").iter().enumerate() {
        s.set_input(i, &x.data).unwrap_or_else(|e| panic!("{name}: input {i}: {e}"));
    }
    s.run().unwrap_or_else(|e| panic!("{name}: run: {e}"));
    let expected = numbered_npys(dir, "expected");
    assert!(!expected.is_empty(), "{name}: no expected outputs");
    let mut bad = Vec::new();
    for (j, want) in expected.iter().enumerate() {
        let dims = s.output_info(j).unwrap_or_else(|e| panic!("{name}: {e}")).dims;
        let got = s.output(j).unwrap_or_else(|e| panic!("{name}: {e}"));
        if dims != want.dims {
            bad.push(format!("{name} output {j}: shape {dims:?}, LiteRT {:?}", want.dims));
        } else if got != want.data.as_slice() {
            let size = want.data.len() / want.dims.iter().product::<usize>().max(1);
            let first = got.chunks(size.max(1)).zip(want.data.chunks(size.max(1))).position(|(a, b)| a != b).unwrap_or(0);
            let n = got.chunks(size.max(1)).zip(want.data.chunks(size.max(1))).filter(|(a, b)| a != b).count();
            bad.push(format!("{name} output {j} ({}): {n} elements differ, first at {first}", want.descr));
        }
    }
    bad
}

#[test]
fn quantized_one_op_models_match_litert_exactly() {
    let cases = model_cases("quant_oneop");
    assert!(cases.len() >= 20, "expected the committed one-op models, found {}", cases.len());
    let mut bad = Vec::new();
    for dir in &cases {
        for threads in [1, 2] {
            bad.extend(run_case(dir, threads).into_iter().map(|b| format!("{b} ({threads} threads)")));
        }
    }
    assert!(bad.is_empty(), "outputs differing from LiteRT:\n{}", bad.join("\n"));
}

/// The integer LSTM keeps its variable state tensors between runs like TFLite: three runs of
/// the corpus' `coral_keras_lstm_mnist_ptq` on one input give LiteRT's three outputs (stored in
/// `tests/models/lstm_state_runs`; runs 2 and 3 differ from run 1 only through the state).
#[test]
fn integer_lstm_state_carries_over_runs_like_litert() {
    let Some(corpus) = nnrt_tests::corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let dir = corpus.join("tflite/coral_keras_lstm_mnist_ptq");
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
