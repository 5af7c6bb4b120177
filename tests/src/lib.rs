//! # nnrt-tests
//!
//! Workspace integration tests of nnrt, and the small library they share:
//!
//! - [`Graph`], [`Case`], [`replay`]: op tests as data: a one-op model in nnrt IR, its inputs
//!   ([`V`]), the outputs or failing phase expected, tolerances with their reasons, skips with
//!   theirs; [`replay_on_every_target!`] runs a family's cases on `cpu` (1 and 2 threads), `gpu`
//!   and `gpu;cpu` (`tests/tests/ops/`); [`reference`] holds plain reference kernels;
//! - [`ModelBuilder`]: one-subgraph TFLite models written with the generated flatbuffers
//!   builder of `nnrt-loaders` (constants in their own buffers, deduplicated operator codes,
//!   codes above 127 written the schema-3a way), for one-op and `neg_` tests;
//! - [`NnPackage`]: nnpackage folders and zips around a model, with any MANIFEST and cfg files;
//! - [`example`]: the tiny MobileNet-style model shipped in `examples/models/` (regenerate with
//!   `cargo run -p nnrt-tests --bin make_example_models`);
//! - [`XorShift`], [`npy_f32`], [`TempDir`]: seeded randomness, `.npy` files and temp folders
//!   without extra dependencies.
//!
//! The tests live in `tests/tests/`; the ones that read `../shared/corpus` or the CLI binaries
//! (build them first: `cargo build --release -p nnrt-cli`) skip with a message when those are
//! absent. `NNRT_TESTS_DUMP_DIR=DIR` makes the TFLite op cases also write each case as the corpus
//! lays models out (`model.tflite`, `input_<i>.npy`, `expected_0.npy`), to check the references
//! against LiteRT; `NNRT_ROBUSTNESS_SEED=N` explores other corruptions.
//!
//! The cases run through the `nnrt` API; GPU targets skip, saying why, only where no wgpu adapter
//! exists at all.

#![forbid(unsafe_code)]

mod builder;
mod built;
mod case;
pub mod example;
mod graph;
mod npy;
mod options;
mod package;
pub mod reference;
mod replay;
mod rng;
mod values;

pub use builder::{BuiltinOperator, ModelBuilder, TensorIdx, TensorType};
pub use built::{built_plugin, cli_binary};
pub use case::{Case, Target, Tol};
pub use graph::{Arg, Graph};
pub use npy::{model_cases, npy_f32, npy_file, numbered_npys, read_npy_f32, read_npy_raw, run_on_cpu, RawNpy};
pub use options::{Act, MirrorPadMode, Options, Padding};
pub use package::{manifest, NnPackage, TempDir, ZipMethod};
pub use replay::{dump, gpu_adapter, replay};
pub use rng::XorShift;
pub use values::{b, f, i, i64s, rand, seq, zeros, V};

/// The repository root (the folder holding the workspace `Cargo.toml`).
pub fn repo_root() -> std::path::PathBuf {
    let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map_or_else(|| manifest_dir.join(".."), std::path::Path::to_path_buf)
}

/// `../shared/corpus` beside the repository (`$NNRT_SHARED/corpus` when that is set, for a
/// checkout elsewhere, e.g. a git worktree), when it exists.
pub fn corpus_dir() -> Option<std::path::PathBuf> {
    let shared = std::env::var_os("NNRT_SHARED").map(std::path::PathBuf::from).unwrap_or_else(|| repo_root().join("../shared"));
    let p = shared.join("corpus");
    p.is_dir().then_some(p)
}

/// `rel` inside the corpus; when the corpus is absent, prints that the calling test is skipped.
pub fn corpus_model_or_skip(rel: &str) -> Option<std::path::PathBuf> {
    let found = corpus_dir().map(|c| c.join(rel));
    if found.is_none() {
        eprintln!("skipped: ../shared/corpus is absent (wanted {rel})");
    }
    found
}
