//! The DarwiNN reader on the corpus' Edge TPU models (`../shared/corpus/darwinn`, or
//! `$NNRT_SHARED/corpus/darwinn`): every fact of each case's `info.json` (decoded independently
//! when the corpus was made) from the bare package, from the options, and from the loaded model.
//! Skipped when the corpus is absent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nnrt_core::Blob;
use nnrt_loaders::darwinn::{self, Executable, Layer, LayerKind, Package};
use serde_json::Value;

fn corpus() -> Option<PathBuf> {
    let shared = std::env::var_os("NNRT_SHARED").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let p = shared.join("corpus/darwinn");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: ../shared/corpus/darwinn not found");
        None
    }
}

fn cases(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("info.json").is_file()).collect();
    v.sort();
    v
}

fn check_layer(l: &Layer, j: &Value, what: &str) {
    assert_eq!(l.name, j["name"].as_str().unwrap(), "{what}");
    assert_eq!(i64::from(l.size_bytes), j["size_bytes"].as_i64().unwrap(), "{what} size_bytes");
    assert_eq!([l.y_dim, l.x_dim, l.z_dim].map(i64::from), ["y_dim", "x_dim", "z_dim"].map(|k| j[k].as_i64().unwrap()), "{what} dims");
    assert_eq!(l.data_type.name(), j["data_type"].as_str().unwrap(), "{what} data_type");
    let n = l.numerics.unwrap();
    assert_eq!(i64::from(n.zero_point), j["numerics"]["zero_point"].as_i64().unwrap(), "{what} zero_point");
    // info.json holds the float32 as Python's float of it: exact after the round trip.
    assert_eq!(n.dequantization_factor, j["numerics"]["dequantization_factor"].as_f64().unwrap() as f32, "{what} dequantization_factor");
    assert_eq!(i64::from(l.execution_count_per_inference), j["execution_count_per_inference"].as_i64().unwrap());
    assert_eq!(l.cache_on_dram, j["cache_on_dram"].as_bool().unwrap());
    let shape = j["shape"].as_array().map(|a| a.iter().map(|r| (r[0].as_i64().unwrap() as i32, r[1].as_i64().unwrap() as i32)).collect::<Vec<_>>());
    assert_eq!(l.shape, shape, "{what} shape");
    match (&l.kind, j["any_layer_type"].as_str().unwrap()) {
        (LayerKind::Input, "InputLayer") => {}
        (LayerKind::Output { layout, shape_info, .. }, "OutputLayer") => {
            assert_eq!(shape_info.is_some(), !j["output_shape_info_slices"].is_null());
            let lens = &j["output_layout_map_lengths"];
            let m = layout.as_ref().unwrap();
            for (k, v) in [
                ("YCoordinateToLinearTileIdMap", &m.y_coordinate_to_linear_tile_id_map),
                ("XCoordinateToLinearTileIdMap", &m.x_coordinate_to_linear_tile_id_map),
                ("LinearizedTileByteOffset", &m.linearized_tile_byte_offset),
                ("XCoordinateToLocalByteOffset", &m.x_coordinate_to_local_byte_offset),
                ("YCoordinateToLocalYOffset", &m.y_coordinate_to_local_y_offset),
                ("XCoordinateToLocalYRowSize", &m.x_coordinate_to_local_y_row_size),
            ] {
                assert_eq!(v.len() as i64, lens[k].as_i64().unwrap(), "{what} {k}");
            }
        }
        (k, t) => panic!("{what}: layer kind {k:?} vs {t}"),
    }
}

fn check_executable(e: &Executable, j: &Value, what: &str) {
    assert_eq!(e.kind.name(), j["type"].as_str().unwrap(), "{what}");
    assert_eq!(e.name.as_deref(), j["name"].as_str(), "{what}");
    assert_eq!(e.chip.as_deref(), j["chip"].as_str(), "{what}");
    assert_eq!(e.parameter_caching_token, j["parameter_caching_token"].as_u64().unwrap(), "{what}");
    assert_eq!(e.offset as u64, j["offset_in_multi_executable"].as_u64().unwrap(), "{what} offset");
    assert_eq!(e.offset % 4096, 0, "{what}: executables are page-aligned");
    for (k, v) in [
        ("version", i64::from(e.version)),
        ("batch_size", i64::from(e.batch_size)),
        ("scratch_size_bytes", i64::from(e.scratch_size_bytes)),
        ("parameters_bytes", e.parameters.len() as i64),
        ("serialized_model_bytes", e.serialized_model.len() as i64),
        ("estimated_cycles", i64::from(e.estimated_cycles)),
        ("used_narrow_memory_bytes_per_tile", i64::from(e.used_narrow_memory_bytes_per_tile)),
        ("estimated_cycles_64bit", e.estimated_cycles_64bit),
    ] {
        assert_eq!(v, j[k].as_i64().unwrap(), "{what} {k}");
    }
    assert_eq!(e.use_tpu_dram_for_parameters, j["use_tpu_dram_for_parameters"].as_bool().unwrap());
    let bs = j["instruction_bitstreams"].as_array().unwrap();
    assert_eq!(e.instruction_bitstreams.len(), bs.len());
    for (b, jb) in e.instruction_bitstreams.iter().zip(bs) {
        assert_eq!(b.bitstream.len() as i64, jb["bitstream_bytes"].as_i64().unwrap(), "{what} bitstream_bytes");
        assert_eq!(b.field_offsets.len() as i64, jb["field_offsets"].as_i64().unwrap(), "{what} field_offsets");
        for (desc, n) in jb["field_offset_descs"].as_object().unwrap() {
            let ours = b.field_offsets.iter().filter(|f| f.meta.as_ref().is_some_and(|m| m.desc_name() == desc)).count();
            assert_eq!(ours as i64, n.as_i64().unwrap(), "{what} {desc}");
        }
        for (f, jf) in b.field_offsets.iter().zip(jb["field_offsets_first"].as_array().unwrap()) {
            let m = f.meta.as_ref().unwrap();
            assert_eq!(i64::from(f.offset_bit), jf["offset_bit"].as_i64().unwrap());
            assert_eq!(m.desc_name(), jf["desc"].as_str().unwrap());
            assert_eq!(m.position_name(), jf["position"].as_str().unwrap());
            assert_eq!(i64::from(m.batch), jf["batch"].as_i64().unwrap());
            assert_eq!(m.name.as_deref().filter(|s| !s.is_empty()), jf["name"].as_str(), "empty shows as null");
        }
    }
    let hints = e.dma_hints.as_ref().unwrap();
    assert_eq!(hints.hints.len() as i64, j["dma_hints"]["hints"].as_i64().unwrap(), "{what} dma hints");
    assert_eq!(hints.fully_deterministic, j["dma_hints"]["fully_deterministic"].as_bool().unwrap());
    for (list, key) in [(&e.input_layers, "input_layers"), (&e.output_layers, "output_layers")] {
        let jl = j[key].as_array().unwrap();
        assert_eq!(list.len(), jl.len(), "{what} {key}");
        for (l, jl) in list.iter().zip(jl) {
            check_layer(l, jl, &format!("{what} {key} '{}'", l.name));
        }
    }
}

fn check_package(p: &Package, j: &Value, what: &str) {
    assert_eq!(p.size_bytes as i64, j["size"].as_i64().unwrap(), "{what} size");
    assert_eq!(i64::from(p.min_runtime_version), j["min_runtime_version"].as_i64().unwrap(), "{what}");
    assert_eq!(i64::from(p.keypair_version), j["keypair_version"].as_i64().unwrap());
    assert_eq!(p.compiler_version.as_deref(), j["compiler_version"].as_str());
    assert_eq!(i64::from(p.virtual_chip_id), j["virtual_chip_id"].as_i64().unwrap());
    assert_eq!(p.signature.len() as i64, j["signature_bytes"].as_i64().unwrap());
    assert_eq!(p.multi_executable_bytes as i64, j["serialized_multi_executable_bytes"].as_i64().unwrap());
    assert_eq!(p.multi_executable_offset as i64, j["serialized_multi_executable_offset_in_package"].as_i64().unwrap());
    assert_eq!(p.multi_chip_packages.len() as i64, j["multi_chip_package"].as_i64().unwrap());
    // The packages hold an empty model_identifier string, which info.json's decoder shows as null.
    assert_eq!(p.model_identifier.as_deref().filter(|s| !s.is_empty()), j["model_identifier"].as_str());
    let je = j["executables"].as_array().unwrap();
    assert_eq!(p.executables.len(), je.len(), "{what}");
    for (i, (e, je)) in p.executables.iter().zip(je).enumerate() {
        check_executable(e, je, &format!("{what} executable {i}"));
    }
}

#[test]
fn every_case_matches_its_info_json() {
    let Some(dir) = corpus() else { return };
    let mut checked = 0;
    for case in cases(&dir) {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let info: Value = serde_json::from_slice(&std::fs::read(case.join("info.json")).unwrap()).unwrap();
        let jop = &info["edgetpu_custom_ops"][0];
        let jpkg = &jop["packages"][0];
        // The bare package.
        let bare = darwinn::read_package(&std::fs::read(case.join("package.dwn")).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_package(&bare, jpkg, &format!("{name} package.dwn"));
        // The options: the same package, found where info.json says, and the map's scalars.
        let opts = darwinn::read_options(&std::fs::read(case.join("custom_options.flexbuf")).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(opts.package_offset as i64, jpkg["offset_in_custom_options"].as_i64().unwrap(), "{name}");
        assert_eq!(opts.packages.len(), 1, "{name}");
        assert_eq!(opts.packages[0], bare, "{name}: the options' package is package.dwn");
        assert_eq!(opts.version, jop["flexbuffer"]["1"]["value"].as_i64());
        assert_eq!(opts.execution_preference, jop["flexbuffer"]["5"]["value"].as_i64());
        // The model: the op found, its layers matched to its tensors by name.
        let bytes = std::fs::read(case.join("model_edgetpu.tflite")).unwrap();
        let blob: Blob = Arc::new(bytes);
        let loaded = nnrt_loaders::format::load(&case.join("model_edgetpu.tflite").to_string_lossy(), blob).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(loaded.info.edgetpu.len(), 1, "{name}");
        let op = &loaded.info.edgetpu[0];
        assert_eq!(op.op as i64, jop["op_index"].as_i64().unwrap());
        assert_eq!(op.inputs, jop["op_inputs"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>());
        assert_eq!(op.outputs, jop["op_outputs"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>());
        assert_eq!(op.options.packages[0], bare, "{name}");
        let exe = bare.runnable().unwrap();
        for (k, &i) in op.layers.inputs.iter().enumerate() {
            assert_eq!(exe.input_layers[k].name, op.inputs[i], "{name}: matched by name");
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} darwinn cases");
}

/// Each layer is found by name (split_concat's op lists its outputs in another order than its
/// graph does), and the LSTM's state outputs go back to its state inputs.
#[test]
fn layers_are_matched_by_name() {
    let Some(dir) = corpus() else { return };
    let load = |case: &str| {
        let p = dir.join(case).join("model_edgetpu.tflite");
        nnrt_loaders::format::load(&p.to_string_lossy(), Arc::new(std::fs::read(&p).unwrap())).unwrap().info.edgetpu.remove(0)
    };
    let split = load("split_concat");
    use darwinn::check::OutputTarget::{Output, State};
    assert_eq!(split.layers.outputs, vec![Output(0), Output(1), Output(2), Output(3), Output(4)]);
    assert_eq!(split.outputs[1], "outputs/rnn1");
    let lstm = load("keras_lstm_mnist_ptq");
    assert_eq!(lstm.layers.inputs, vec![0, 1, 2]);
    assert_eq!(lstm.layers.outputs, vec![Output(0), State(1), State(2)]);
}
