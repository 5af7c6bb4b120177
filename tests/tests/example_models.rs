//! The models shipped in `examples/models/` are exactly what `nnrt_tests::example` makes, and
//! nnrt runs them to LiteRT's answer.

mod common;

use std::path::{Path, PathBuf};

use common::{f32_bytes, f32_values};
use nnrt::Session;
use nnrt_tests::{example, read_npy_f32, TempDir};

/// Files under `examples/models/` that the builder does not make (documented in its README).
const NOT_GENERATED: &[&str] = &[
    "README.md",
    "tiny_mobilenet_expected.0.npy",
    // The README's first run: Coral's classifier, labels and photo (sources in its NOTICE).
    "mobilenet_v1_0.25_128_quant/NOTICE",
    "mobilenet_v1_0.25_128_quant/cat.bmp",
    "mobilenet_v1_0.25_128_quant/cat_input.0.npy",
    "mobilenet_v1_0.25_128_quant/labels.txt",
    "mobilenet_v1_0.25_128_quant/model.tflite",
];

fn shipped_dir() -> PathBuf {
    nnrt_tests::repo_root().join("examples/models")
}

/// Every file under `root`, as sorted paths relative to it.
fn files_under(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn shipped_examples_are_made_by_the_builder() {
    let tmp = TempDir::new("examples").expect("temp dir");
    example::write_examples(tmp.path()).expect("write examples");
    let made = files_under(tmp.path());
    let shipped: Vec<String> = files_under(&shipped_dir()).into_iter().filter(|f| !NOT_GENERATED.contains(&f.as_str())).collect();
    assert_eq!(shipped, made, "examples/models/ holds other files than make_example_models writes (run it, or list the file in NOT_GENERATED)");
    for rel in &made {
        let want = std::fs::read(tmp.path().join(rel)).expect("regenerated file");
        let got = std::fs::read(shipped_dir().join(rel)).expect("shipped file");
        assert!(got == want, "examples/models/{rel} differs from what the builder makes: run `cargo run -p nnrt-tests --bin make_example_models`");
    }
}

fn npy(name: &str) -> (Vec<usize>, Vec<f32>) {
    let p = shipped_dir().join(name);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    read_npy_f32(&bytes).unwrap_or_else(|| panic!("{}: not a float32 .npy", p.display()))
}

fn run_example(path: &Path, threads: usize) -> (Vec<usize>, Vec<f32>) {
    let (dims, input) = npy("tiny_mobilenet_input.0.npy");
    let mut s = Session::load(path).unwrap_or_else(|e| panic!("load {}: {e}", path.display()));
    s.set_threads(threads).expect("configure");
    assert_eq!(s.input_info(0).expect("input 0").dims, dims);
    s.prepare().unwrap_or_else(|e| panic!("prepare {}: {e}", path.display()));
    s.set_input(0, &f32_bytes(&input)).expect("set_input");
    s.run().unwrap_or_else(|e| panic!("run {}: {e}", path.display()));
    (s.output_info(0).expect("output 0").dims, f32_values(s.output(0).expect("output")))
}

#[test]
fn example_model_matches_litert() {
    let (want_dims, want) = npy("tiny_mobilenet_expected.0.npy");
    for path in ["tiny_mobilenet.tflite", "tiny_mobilenet.nnpkg"] {
        for threads in [1, 2] {
            let (dims, got) = run_example(&shipped_dir().join(path), threads);
            assert_eq!(dims, want_dims, "{path}: output shape");
            let sum: f32 = got.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "{path}: softmax output sums to {sum}");
            // Five layers of f32 sums (K ≤ 32 each) reordered by SIMD kernels, then a softmax:
            // probabilities agree with LiteRT's reference kernels to ~1e-6; 1e-5 leaves room.
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-5, "{path} ({threads} threads): class {i} is {g}, LiteRT says {w}");
            }
        }
    }
}

#[test]
fn example_package_applies_its_config() {
    let s = Session::load(shipped_dir().join("tiny_mobilenet.nnpkg")).expect("load");
    assert_eq!(s.package().manifest.models, vec!["tiny_mobilenet.tflite"]);
    assert_eq!(s.package().config, vec![("BACKENDS".to_string(), "cpu".to_string())]);
    assert_eq!(s.model().signatures.first().map(|sig| sig.key.as_str()), Some("serving_default"));
}
