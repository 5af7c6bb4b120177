//! Format detection on the real files of `../shared/corpus` (ExecuTorch programs, TOSA graphs,
//! Edge TPU models and their CPU siblings), skipped when the corpus is absent. `NNRT_SHARED`
//! points at another `shared` folder (e.g. from a git worktree).

use std::path::PathBuf;

use nnrt_core::LoadError;
use nnrt_loaders::Format;

fn corpus(kind: &str) -> Option<PathBuf> {
    let shared = std::env::var_os("NNRT_SHARED").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let p = shared.join("corpus").join(kind);
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: {} not found", p.display());
        None
    }
}

/// Every file called `name` one folder below `dir`.
fn files(dir: &PathBuf, name: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path().join(name)).filter(|p| p.is_file()).collect();
    out.sort();
    out
}

fn detect(path: &PathBuf) -> Format {
    nnrt_loaders::detect(&path.display().to_string(), &std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn executorch_programs_are_recognised_and_loaded() {
    assert_eq!(Format::ExecuTorch.to_string(), "ExecuTorch program (ET12)");
    let Some(dir) = corpus("pte") else { return };
    let found = files(&dir, "program.pte");
    assert!(found.len() >= 7, "{found:?}");
    for p in &found {
        assert_eq!(detect(p), Format::ExecuTorch, "{}", p.display());
        let m = nnrt_loaders::load(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(!m.models[0].signatures.is_empty(), "{}: no methods", p.display());
    }
}

/// Every TOSA graph of the corpus is detected and either loads or is refused with one typed
/// error naming the operators nnrt does not map (never another error, never a panic); the
/// float graphs all load.
#[test]
fn tosa_graphs_are_recognised_and_loaded_or_refused_by_operator() {
    assert_eq!(Format::Tosa.to_string(), "TOSA flatbuffer (TOSA)");
    let Some(dir) = corpus("tosa") else { return };
    let found = files(&dir, "graph.tosa");
    assert!(found.len() >= 20, "{found:?}");
    let mut loaded = 0;
    for p in &found {
        assert_eq!(detect(p), Format::Tosa, "{}", p.display());
        match nnrt_loaders::load(p) {
            Ok(m) => {
                assert_eq!(m.formats[0].format, Format::Tosa);
                loaded += 1;
            }
            Err(LoadError::UnsupportedOp { .. }) => {
                let case = p.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
                assert!(!case.ends_with("fp32") && !case.ends_with("float"), "{case}: a float graph was refused");
            }
            Err(e) => panic!("{}: {e}", p.display()),
        }
    }
    assert!(loaded >= 10, "only {loaded} TOSA graphs loaded");
}

#[test]
fn edge_tpu_models_load_as_tflite_and_say_so() {
    let Some(dir) = corpus("darwinn") else { return };
    let models = files(&dir, "model_edgetpu.tflite");
    assert!(models.len() >= 5, "{models:?}");
    for p in &models {
        assert_eq!(detect(p), Format::EdgeTpu, "{}", p.display());
        let pkg = nnrt_loaders::load(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(pkg.formats[0].format, Format::EdgeTpu);
        assert_eq!(pkg.manifest.model_types, vec!["tflite"]);
    }
    for p in files(&dir, "model_cpu.tflite") {
        assert_eq!(detect(&p), Format::Tflite, "{}", p.display());
    }
}
