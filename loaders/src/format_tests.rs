//! Detection by bytes and by MANIFEST `model-types`, and the errors of each frontend.

use std::sync::Arc;

use flatbuffers::FlatBufferBuilder;
use nnrt_core::{Blob, LoadError, OpKind};

use super::*;
use crate::generated::tflite as t;

/// A one-op model: `custom` names a CUSTOM op, `None` makes it a RELU. `id` is the identifier.
fn model_bytes(custom: Option<&str>, id: &str) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::new();
    let tensors: Vec<_> = ["x", "y"]
        .iter()
        .map(|name| {
            let name = fbb.create_string(name);
            let shape = fbb.create_vector(&[1i32, 4]);
            t::Tensor::create(&mut fbb, &t::TensorArgs { shape: Some(shape), name: Some(name), type_: t::TensorType::FLOAT32, ..Default::default() })
        })
        .collect();
    let tensors = fbb.create_vector(&tensors);
    let (x, y) = (fbb.create_vector(&[0i32]), fbb.create_vector(&[1i32]));
    let op = t::Operator::create(&mut fbb, &t::OperatorArgs { opcode_index: 0, inputs: Some(x), outputs: Some(y), ..Default::default() });
    let ops = fbb.create_vector(&[op]);
    let sg = t::SubGraph::create(&mut fbb, &t::SubGraphArgs { tensors: Some(tensors), inputs: Some(x), outputs: Some(y), operators: Some(ops), ..Default::default() });
    let sgs = fbb.create_vector(&[sg]);
    let code = if custom.is_some() { t::BuiltinOperator::CUSTOM } else { t::BuiltinOperator::RELU };
    let custom_code = custom.map(|c| fbb.create_string(c));
    let oc = t::OperatorCode::create(&mut fbb, &t::OperatorCodeArgs { deprecated_builtin_code: code.0 as i8, builtin_code: code, custom_code, version: 1 });
    let codes = fbb.create_vector(&[oc]);
    let empty = t::Buffer::create(&mut fbb, &t::BufferArgs::default());
    let buffers = fbb.create_vector(&[empty]);
    let description = fbb.create_string("nnrt format test");
    let args = t::ModelArgs { version: 3, operator_codes: Some(codes), subgraphs: Some(sgs), buffers: Some(buffers), description: Some(description), ..Default::default() };
    let m = t::Model::create(&mut fbb, &args);
    fbb.finish(m, Some(id));
    fbb.finished_data().to_vec()
}

/// The first bytes of a file of another format: a root offset, then `id`.
fn header(id: &[u8; 4]) -> Blob {
    let mut bytes = vec![0x3c, 0, 0, 0];
    bytes.extend_from_slice(id);
    bytes.extend_from_slice(&[0; 56]);
    Arc::new(bytes)
}

fn blob(bytes: Vec<u8>) -> Blob {
    Arc::new(bytes)
}

fn message(r: Result<Loaded, LoadError>) -> String {
    r.map(|l| l.info.format.name()).unwrap_err().to_string()
}

#[test]
fn each_identifier_names_its_format() {
    assert_eq!(detect("m", &model_bytes(None, "TFL3")).unwrap(), Format::Tflite);
    assert_eq!(detect("m", &model_bytes(None, "CIR0")).unwrap(), Format::Circle);
    assert_eq!(detect("m", (*header(b"ET12")).as_ref()).unwrap(), Format::ExecuTorch);
    assert_eq!(detect("m", (*header(b"TOSA")).as_ref()).unwrap(), Format::Tosa);
    assert_eq!(detect("m", &model_bytes(Some(EDGETPU_CUSTOM_OP), "TFL3")).unwrap(), Format::EdgeTpu);
    // Another custom op does not make a file an Edge TPU one.
    assert_eq!(detect("m", &model_bytes(Some("MyOp"), "TFL3")).unwrap(), Format::Tflite);
    for f in Format::ALL {
        assert_eq!(Format::from_identifier(f.identifier()).map(Format::reader), Some(f.reader()), "{f}");
    }
}

#[test]
fn tosa_graphs_go_to_their_reader() {
    // The header alone is not a TOSA graph: the TOSA reader says so (it verifies the flatbuffer).
    for r in [load("g.tosa", header(b"TOSA")), load_declared("g.tosa", "tosa", header(b"TOSA"))] {
        let err = r.map(|l| l.info.format).unwrap_err();
        assert!(matches!(&err, LoadError::Malformed { format: "TOSA", .. }), "{err:?}");
    }
    assert!(Format::Tosa.is_supported());
}

#[test]
fn executorch_programs_go_to_their_reader() {
    // A bare header is not a program: the ExecuTorch reader's verifier says so.
    assert!(Format::ExecuTorch.is_supported());
    let m = message(load("m.pte", header(b"ET12")));
    assert!(m.starts_with("m.pte: not a valid ExecuTorch model: "), "{m}");
    let m = message(load_declared("m.pte", "pte", header(b"ET12")));
    assert!(m.starts_with("m.pte: not a valid ExecuTorch model: "), "{m}");
}

#[test]
fn unknown_bytes_name_what_was_found() {
    let err = load("x.bin", blob(b"this is not a model".to_vec())).unwrap_err();
    assert!(matches!(err, LoadError::UnknownFormat { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(r#"file identifier is " is " (bytes 4..8)"#), "{text}");
    // What nnrt recognises comes from `Format::ALL`, once.
    assert!(text.contains("expected an nnpackage folder or zip, or a model file"), "{text}");
    for known in ["\"TFL3\" (TFLite, .tflite)", "\"CIR0\" (Circle, .circle)", "\"ET12\" (ExecuTorch program, .pte)", "\"TOSA\" (TOSA flatbuffer, .tosa)"] {
        assert_eq!(text.matches(known).count(), 1, "{known}: {text}");
    }
    assert_eq!(text.matches("\"TFL3\"").count(), 1, "{text}");
    let short = load("x.bin", blob(b"TFL".to_vec())).unwrap_err().to_string();
    assert!(short.contains("the file is 3 bytes, too short"), "{short}");
    let declared = load_declared("x.pte", "pte", blob(b"PK\x03\x04\x14\x00\x00\x00".to_vec())).unwrap_err().to_string();
    assert!(declared.contains(r#""\x14\x00\x00\x00""#) && declared.contains("the MANIFEST declares it 'pte'"), "{declared}");
}

#[test]
fn manifest_model_types_pick_the_frontend() {
    for (ty, f) in [("tflite", Format::Tflite), ("circle", Format::Circle), ("pte", Format::ExecuTorch), ("tosa", Format::Tosa)] {
        assert_eq!(Format::from_model_type(ty), Some(f));
        assert_eq!(f.model_type(), ty);
        assert_eq!(Format::from_file_name(&format!("dir/model.{ty}")), Some(f));
    }
    assert_eq!(Format::from_model_type("edgetpu"), None);
    assert_eq!(Format::from_file_name("model"), None);
    // TFLite and Circle share a reader: either type loads either file, and says what it found.
    let loaded = load_declared("m.tflite", "tflite", blob(model_bytes(None, "CIR0"))).unwrap();
    assert_eq!(loaded.info.format, Format::Circle);
    let loaded = load_declared("m.circle", "circle", blob(model_bytes(None, "TFL3"))).unwrap();
    assert_eq!(loaded.info.format, Format::Tflite);
    let onnx = message(load_declared("m.onnx", "onnx", blob(model_bytes(None, "TFL3"))));
    assert_eq!(onnx, "m.onnx: model type 'onnx' is not supported (known: tflite, circle, pte, tosa; loadable: tflite, circle, pte, tosa)");
    let wrong = message(load_declared("m.pte", "pte", blob(model_bytes(None, "TFL3"))));
    assert_eq!(wrong, "m.pte: the MANIFEST declares model type 'pte' (ExecuTorch program), but the file is TFLite (TFL3)");
    let wrong = message(load_declared("m.tflite", "tflite", header(b"TOSA")));
    assert!(wrong.contains("declares model type 'tflite' (TFLite), but the file is TOSA flatbuffer (TOSA)"), "{wrong}");
}

#[test]
fn tflite_facts_and_the_edge_tpu_op() {
    let loaded = load("m.tflite", blob(model_bytes(None, "TFL3"))).unwrap();
    let info = &loaded.info;
    assert_eq!((info.format, info.schema_version, info.subgraphs, info.signatures), (Format::Tflite, 3, 1, 0));
    assert_eq!(info.description.as_deref(), Some("nnrt format test"));
    assert_eq!(info.to_string(), "TFLite (TFL3), schema version 3, description 'nnrt format test', 1 subgraph, 0 signatures");

    // An Edge TPU file is recognised by its op, and its op's options must hold a DarwiNN package:
    // this one has none, so loading names the op and what its options should be.
    let bytes = model_bytes(Some(EDGETPU_CUSTOM_OP), "TFL3");
    assert_eq!(detect("m_edgetpu.tflite", &bytes).unwrap(), Format::EdgeTpu);
    let e = message(load("m_edgetpu.tflite", blob(bytes)));
    assert!(e.contains("op 0 (edgetpu-custom-op)") && e.contains("key \"4\" holds the DWN1 package"), "{e}");

    // A real one loads as TFLite with its package read; the op is left for prepare to place.
    let shared = std::env::var_os("NNRT_SHARED").map(std::path::PathBuf::from).unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let Ok(real) = std::fs::read(shared.join("corpus/darwinn/split_concat/model_edgetpu.tflite")) else {
        eprintln!("skipped: the corpus' split_concat Edge TPU model not found");
        return;
    };
    let loaded = load("m_edgetpu.tflite", blob(real)).unwrap();
    assert_eq!(loaded.info.format, Format::EdgeTpu);
    assert!(loaded.info.to_string().starts_with("TFLite with Edge TPU custom op (TFL3), schema version 3"), "{}", loaded.info);
    assert_eq!(loaded.info.format.model_type(), "tflite");
    assert_eq!(loaded.info.edgetpu.len(), 1);
    let OpKind::Custom { name, .. } = &loaded.model.entry().ops[0].kind else { panic!("{:?}", loaded.model.entry().ops[0]) };
    assert_eq!(name, EDGETPU_CUSTOM_OP);
}
