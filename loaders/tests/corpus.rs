//! Golden loader tests on the real-model corpus (`../shared/corpus`), skipped when it is absent.

use std::path::PathBuf;
use std::sync::Arc;

use nnrt_core::{Blob, LoadError};

fn corpus() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/tflite");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: ../shared/corpus/tflite not found");
        None
    }
}

/// Ops the loader maps today; a model using others must fail naming the op.
const MAPPED: &[&str] = &[
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "ADD", "SUB", "MUL", "DIV",
    "RELU", "RELU6", "RELU_N1_TO_1", "TANH", "LOGISTIC", "HARD_SWISH", "LEAKY_RELU", "MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN",
    "REDUCE_PROD", "SOFTMAX", "CONCATENATION", "RESHAPE", "TRANSPOSE", "PAD", "PADV2", "MIRROR_PAD", "DEQUANTIZE", "QUANTIZE", "IF", "WHILE",
];

#[test]
fn every_corpus_model_loads_or_names_its_op() {
    let Some(dir) = corpus() else { return };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let folder = entry.unwrap().path();
        let model = folder.join("model.tflite");
        let meta = folder.join("meta.json");
        if !model.is_file() || !meta.is_file() {
            continue;
        }
        let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
        let ops: Vec<String> = meta["operators"].as_array().unwrap().iter().map(|o| o["op"].as_str().unwrap().to_string()).collect();
        let unmapped: Vec<&String> = ops.iter().filter(|o| !o.starts_with("CUSTOM:") && !MAPPED.contains(&o.as_str())).collect();
        let bytes = std::fs::read(&model).unwrap();
        let blob: Blob = Arc::new(bytes);
        let result = nnrt_loaders::tflite::load_blob(&model.display().to_string(), blob.clone());
        match (result, unmapped.is_empty()) {
            (Ok(m), true) => {
                let sg = &meta["subgraphs"][0];
                assert_eq!(m.entry().ops.len() as u64, sg["num_operators"].as_u64().unwrap(), "{}", folder.display());
                assert_eq!(m.entry().operands.len() as u64, sg["num_tensors"].as_u64().unwrap(), "{}", folder.display());
                // Constants borrow the file's bytes: nothing was copied.
                for o in m.subgraphs.iter().flat_map(|g| &g.operands) {
                    if let Some(d) = &o.data {
                        assert!(d.shares_blob_with(&blob), "{}: constant '{}' was copied", folder.display(), o.name);
                    }
                }
            }
            (Err(LoadError::UnsupportedOp { op, .. }), false) => {
                assert!(unmapped.iter().any(|u| **u == op), "{}: error names {op}, expected one of {unmapped:?}", folder.display());
            }
            (Err(e), _) => panic!("{}: {e}", folder.display()),
            (Ok(_), false) => panic!("{}: loaded although {unmapped:?} are not mapped", folder.display()),
        }
        checked += 1;
    }
    assert!(checked > 40, "only {checked} models found");
}

#[test]
fn nnpackage_zip_variants_load() {
    let Some(dir) = corpus() else { return };
    let variants = dir.join("_nnpkg_variants");
    let mut n = 0;
    for entry in std::fs::read_dir(variants).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "zip") {
            let pkg = nnrt_loaders::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(pkg.models.len(), 1);
            n += 1;
        }
    }
    assert!(n >= 6);
}

#[test]
fn missing_and_foreign_files_are_typed_errors() {
    let e = nnrt_loaders::load("/nonexistent/model.tflite").unwrap_err();
    assert!(matches!(e, LoadError::Io { .. }), "{e}");
    let tmp = std::env::temp_dir().join(format!("nnrt-foreign-{}.bin", std::process::id()));
    std::fs::write(&tmp, b"this is not a model at all").unwrap();
    let e = nnrt_loaders::load(&tmp).unwrap_err();
    assert!(matches!(e, LoadError::UnknownFormat { .. }), "{e}");
    assert!(e.to_string().contains("expected an nnpackage"), "{e}");
    std::fs::remove_file(tmp).ok();
}
