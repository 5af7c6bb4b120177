//! Every input a fuzz target once crashed on (`fuzz/regressions/TARGET/`), replayed the way that
//! target runs it: each must now end in a model or a typed error, never a panic (which the API
//! would report as `Error::Internal`).

use std::path::PathBuf;

use nnrt::{Error, Session};

fn regressions(target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files
}

/// Prepares `model` on the CPU under the fuzz targets' small limits and runs it once on zeros;
/// panics (naming `f`) only if that ends in an internal error, i.e. a caught panic.
fn prepare_and_run(model: nnrt_core::Model, f: &std::path::Path) {
    let mut s = Session::from_model(model).unwrap();
    for (k, v) in [("BACKENDS", "cpu"), ("NUM_THREADS", "1"), ("MEMORY_LIMIT", "64M"), ("WHILE_MAX_ITERATIONS", "1000")] {
        s.set_config(k, v).unwrap();
    }
    let result = s.prepare().and_then(|()| {
        for i in 0..s.input_count() {
            let info = s.input_info(i)?;
            s.set_input(i, &vec![0u8; info.dims.iter().product::<usize>() * info.dtype.size()])?;
        }
        s.run()
    });
    if let Err(e @ Error::Internal { .. }) = result {
        panic!("{}: {e}", f.display());
    }
}

/// The `prepare` target: load, prepare on the CPU under small limits, run once on zeros.
#[test]
fn prepare_findings_end_in_typed_errors() {
    let files = regressions("prepare");
    assert!(!files.is_empty(), "fuzz/regressions/prepare holds the findings of the prepare target");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let Ok(model) = nnrt_loaders::tflite::load_bytes("fuzz.tflite", bytes) else { continue };
        prepare_and_run(model, &f);
    }
}

/// The `pte` target: an ExecuTorch program loaded, then prepared on the CPU under small limits
/// and run once on zeros.
#[test]
fn pte_findings_end_in_typed_errors() {
    let files = regressions("pte");
    assert!(!files.is_empty(), "fuzz/regressions/pte holds the findings of the pte target");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let Ok(loaded) = nnrt_loaders::pte::load("fuzz.pte", std::sync::Arc::new(bytes)) else { continue };
        prepare_and_run(loaded.model, &f);
    }
}

/// The `npy` target: parse; an array that parsed round-trips through the writer.
#[test]
fn npy_findings_end_in_typed_errors() {
    let files = regressions("npy");
    assert!(!files.is_empty(), "fuzz/regressions/npy holds the findings of the npy target");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let parsed = std::panic::catch_unwind(|| nnrt_npy::parse(&bytes)).unwrap_or_else(|_| panic!("{}: parse panicked", f.display()));
        if let Ok(a) = parsed {
            assert_eq!(nnrt_npy::parse(&nnrt_npy::to_bytes(a.dtype, &a.dims, &a.data)).as_ref(), Ok(&a), "{}", f.display());
        }
    }
}
