//! Circle files that set Circle's byte fields, `SubGraph.data_format` and
//! `Tensor.compression_type`, written the way Circle's writers do (one byte, at whatever offset
//! the builder gives it), load through the frontend.

use flatbuffers::{FlatBufferBuilder, WIPOffset};
use nnrt_core::{Layout, LoadError, OpKind};
use nnrt_loaders::generated::tflite as t;
use nnrt_loaders::Format;

/// A Circle RELU over a [1, 2, 2, 3] float tensor plus a constant `w`. `data_format` is the
/// subgraph's byte; `compression` is written on `w` (and `x`) as a byte when given.
fn circle(data_format: u8, compression: Option<u8>) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::new();
    let weights = fbb.create_vector(&[0u8; 48]);
    let empty = t::Buffer::create(&mut fbb, &t::BufferArgs::default());
    let w_data = t::Buffer::create(&mut fbb, &t::BufferArgs { data: Some(weights), ..Default::default() });
    let buffers = fbb.create_vector(&[empty, w_data]);
    let mut tensor = |name: &str, buffer: u32| {
        let shape = fbb.create_vector(&[1i32, 2, 2, 3]);
        let name = fbb.create_string(name);
        let start = fbb.start_table();
        fbb.push_slot_always(t::Tensor::VT_SHAPE, shape);
        fbb.push_slot_always(t::Tensor::VT_NAME, name);
        fbb.push_slot::<u32>(t::Tensor::VT_BUFFER, buffer, 0);
        if let Some(c) = compression {
            // Circle: `compression_type: CompressionType (byte)`, TFLite's `external_buffer` slot.
            fbb.push_slot_always::<u8>(t::Tensor::VT_EXTERNAL_BUFFER, c);
        }
        WIPOffset::<t::Tensor>::new(fbb.end_table(start).value())
    };
    let tensors = [tensor("x", 0), tensor("y", 0), tensor("w", 1)];
    let tensors = fbb.create_vector(&tensors);
    let (x, y) = (fbb.create_vector(&[0i32]), fbb.create_vector(&[1i32]));
    let op = t::Operator::create(&mut fbb, &t::OperatorArgs { opcode_index: 0, inputs: Some(x), outputs: Some(y), ..Default::default() });
    let ops = fbb.create_vector(&[op]);
    let name = fbb.create_string("main");
    let start = fbb.start_table();
    fbb.push_slot_always(t::SubGraph::VT_TENSORS, tensors);
    fbb.push_slot_always(t::SubGraph::VT_INPUTS, x);
    fbb.push_slot_always(t::SubGraph::VT_OUTPUTS, y);
    fbb.push_slot_always(t::SubGraph::VT_OPERATORS, ops);
    fbb.push_slot_always(t::SubGraph::VT_NAME, name);
    // Circle: `data_format: DataFormat (byte)`, TFLite's `debug_metadata_index` slot.
    fbb.push_slot_always::<u8>(t::SubGraph::VT_DEBUG_METADATA_INDEX, data_format);
    let subgraph = WIPOffset::<t::SubGraph>::new(fbb.end_table(start).value());
    let subgraphs = fbb.create_vector(&[subgraph]);
    let relu = t::BuiltinOperator::RELU;
    let code = t::OperatorCode::create(&mut fbb, &t::OperatorCodeArgs { deprecated_builtin_code: relu.0 as i8, builtin_code: relu, version: 1, ..Default::default() });
    let codes = fbb.create_vector(&[code]);
    let model = t::Model::create(&mut fbb, &t::ModelArgs { version: 0, operator_codes: Some(codes), subgraphs: Some(subgraphs), buffers: Some(buffers), ..Default::default() });
    fbb.finish(model, Some("CIR0"));
    fbb.finished_data().to_vec()
}

fn load(bytes: Vec<u8>) -> Result<nnrt_loaders::Loaded, LoadError> {
    nnrt_loaders::format::load("test.circle", std::sync::Arc::new(bytes))
}

#[test]
fn circle_with_data_format_and_compression_type_loads() {
    for data_format in [0, 1] {
        let bytes = circle(data_format, Some(0));
        // The bytes are where TFLite's verifier rejects them: read as TFLite, the file is corrupt.
        let mut as_tflite = bytes.clone();
        as_tflite[4..8].copy_from_slice(b"TFL3");
        let err = nnrt_loaders::tflite::load_bytes("as.tflite", as_tflite).unwrap_err();
        assert!(err.to_string().contains("failed FlatBuffers verification"), "{err}");

        let loaded = load(bytes).unwrap_or_else(|e| panic!("data_format {data_format}: {e}"));
        assert_eq!(loaded.info.format, Format::Circle);
        let g = loaded.model.entry();
        assert_eq!(g.name, "main");
        assert!(matches!(g.ops[0].kind, OpKind::Unary(_)), "{:?}", g.ops[0].kind);
        // CHANNELS_FIRST (1) makes the 4-D tensors NCHW; CHANNELS_LAST (0) keeps NHWC.
        let layout = if data_format == 1 { Layout::Nchw } else { Layout::Nhwc };
        assert!(g.operands.iter().all(|o| o.layout == layout), "{:?}", g.operands);
        assert_eq!(g.operands[2].data.as_ref().map(|d| d.len()), Some(48));
    }
    // The fields absent load as before.
    assert!(load(circle(0, None)).is_ok());
}

#[test]
fn huffman_compressed_weights_are_refused_by_name() {
    let err = load(circle(0, Some(1))).unwrap_err();
    assert!(matches!(err, LoadError::UnsupportedType { tensor: 2, .. }), "{err:?}");
    assert!(err.to_string().contains("'w'") && err.to_string().contains("compression_type 1 (HUFFMAN)"), "{err}");
}

#[test]
fn circle_byte_fields_never_panic_on_truncation() {
    let bytes = circle(1, Some(0));
    for len in 0..bytes.len() {
        let _ = load(bytes[..len].to_vec());
    }
}

#[test]
fn two_thousand_byte_flips_of_a_circle_file_never_panic() {
    // xorshift64*: deterministic, so a failure names a reproducible case.
    let mut state = 0x2545_F491_4F6C_DD1D_u64;
    let bytes = circle(1, Some(0));
    let (mut loaded, mut refused) = (0, 0);
    for _ in 0..2_000 {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let mut flipped = bytes.clone();
        let pos = (r % flipped.len() as u64) as usize;
        flipped[pos] ^= ((r >> 32) % 255 + 1) as u8;
        match load(flipped) {
            Ok(l) => {
                let _ = format!("{:?}", l.model);
                loaded += 1;
            }
            Err(_) => refused += 1,
        }
    }
    assert!(loaded > 0 && refused > 0, "loaded {loaded}, refused {refused}");
}
