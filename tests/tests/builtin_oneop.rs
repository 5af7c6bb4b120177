//! One-op models of the builtins added after the first op set (ADD_N … BITWISE_XOR): every case
//! in `tests/models/builtin_oneop/` (made by `tools/make_builtin_oneop_models.py`, which ran each
//! model on LiteRT) must give LiteRT's outputs on the CPU backend, with 1 and 2 threads. Cases
//! with state (RNN, SVDF) run as many times as LiteRT did (the `runs` file) so the state
//! carries over. Tolerance: integer and boolean outputs exactly; float32 outputs within 1e-5
//! relative to max(1, |expected|), since the float math (atan2, pow, tanh, dot products) may
//! round differently from LiteRT's in the last bits; float data movement is exact anyway.

use std::path::Path;

use nnrt::Session;
use nnrt_tests::{model_cases, numbered_npys};

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Runs one case and returns a line per output that differs from LiteRT's.
fn run_case(dir: &Path, threads: usize) -> Vec<String> {
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
        } else if want.descr == "<f4" {
            let (g, w) = (f32s(got), f32s(&want.data));
            let worst = g.iter().zip(&w).map(|(a, b)| if a == b || (a.is_nan() && b.is_nan()) { 0.0 } else { (a - b).abs() / b.abs().max(1.0) }).fold(0f32, f32::max);
            // Written so that a NaN error (a NaN where LiteRT has a number) fails too.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(worst <= 1e-5) {
                bad.push(format!("{name} output {j}: relative error {worst} > 1e-5 (nnrt {g:?}, LiteRT {w:?})"));
            }
        } else if got != want.data.as_slice() {
            bad.push(format!("{name} output {j} ({}): nnrt {got:?}, LiteRT {:?}", want.descr, want.data));
        }
    }
    bad
}

#[test]
fn builtin_one_op_models_match_litert() {
    let cases = model_cases("builtin_oneop");
    assert!(cases.len() >= 60, "expected the committed one-op models, found {}", cases.len());
    let mut bad = Vec::new();
    for dir in &cases {
        for threads in [1, 2] {
            bad.extend(run_case(dir, threads).into_iter().map(|b| format!("{b} ({threads} threads)")));
        }
    }
    assert!(bad.is_empty(), "outputs differing from LiteRT:\n{}", bad.join("\n"));
}
