//! Golden loader tests on the real-model corpus (`../shared/corpus`, or `$NNRT_SHARED/corpus`),
//! skipped when it is absent.

use std::path::PathBuf;
use std::sync::Arc;

use nnrt_core::{Blob, LoadError};

fn corpus() -> Option<PathBuf> {
    let shared = std::env::var_os("NNRT_SHARED").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let p = shared.join("corpus/tflite");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: ../shared/corpus/tflite not found");
        None
    }
}

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
        let bytes = std::fs::read(&model).unwrap();
        let blob: Blob = Arc::new(bytes);
        let result = nnrt_loaders::tflite::load_blob(&model.display().to_string(), blob.clone());
        match result {
            Ok(m) => {
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
            // A builtin nnrt does not map yet: the error names one the model really uses.
            Err(LoadError::UnsupportedOp { op, .. }) => {
                assert!(ops.contains(&op), "{}: error names {op}, which the model does not use ({ops:?})", folder.display());
            }
            Err(e) => panic!("{}: {e}", folder.display()),
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

#[test]
fn two_model_package_joins_into_one_graph() {
    let Some(dir) = corpus() else { return };
    let pkg_dir = dir.join("../nnpackage/mobilenet_v1_two_models");
    let pkg = nnrt_loaders::load(&pkg_dir).unwrap();
    assert_eq!(pkg.manifest.version, (1, 3, 0));
    assert_eq!(pkg.models.len(), 2);
    let joined = nnrt_loaders::join(&pkg).unwrap();
    let (a, b) = (pkg.models[0].entry(), pkg.models[1].entry());
    let g = joined.entry();
    assert_eq!(g.ops.len(), a.ops.len() + b.ops.len());
    assert_eq!(g.inputs.len(), 1);
    assert_eq!(g.outputs.len(), 1);
    // The head's first op reads the features model's output tensor itself.
    let features_out = a.outputs[0];
    let head_first = &g.ops[a.ops.len()];
    assert!(head_first.inputs.iter().flatten().any(|&i| i == features_out), "{head_first}");
    nnrt_core::validate(g).unwrap();
}
