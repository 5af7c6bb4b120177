//! The mapping of builtin options onto `OpKind` parameters, on one-op models written with the
//! generated flatbuffers builder.

use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use nnrt_core::{Activation, CompareOp, OpKind, Padding, ResizeMode, UnaryOp};

use crate::generated::tflite as t;

type Opts = Box<dyn FnOnce(&mut FlatBufferBuilder<'static>) -> (t::BuiltinOptions, Option<WIPOffset<UnionWIPOffset>>)>;

/// A model with one `code` op over `inputs` float tensors (index -1 = absent) and `outputs`
/// more; the options come from `opts`.
fn model(code: t::BuiltinOperator, inputs: &[i32], outputs: usize, opts: Opts) -> OpKind {
    let mut fbb = FlatBufferBuilder::new();
    let n = inputs.iter().copied().max().unwrap_or(-1) + 1;
    let tensors: Vec<_> = (0..n + outputs as i32)
        .map(|k| {
            let name = fbb.create_string(&format!("t{k}"));
            let shape = fbb.create_vector(&[1i32]);
            t::Tensor::create(&mut fbb, &t::TensorArgs { shape: Some(shape), name: Some(name), type_: t::TensorType::FLOAT32, ..Default::default() })
        })
        .collect();
    let tensors = fbb.create_vector(&tensors);
    let (ty, options) = opts(&mut fbb);
    let ins = fbb.create_vector(inputs);
    let outs: Vec<i32> = (n..n + outputs as i32).collect();
    let outs = fbb.create_vector(&outs);
    let op = t::Operator::create(
        &mut fbb,
        &t::OperatorArgs { opcode_index: 0, inputs: Some(ins), outputs: Some(outs), builtin_options_type: ty, builtin_options: options, ..Default::default() },
    );
    let ops = fbb.create_vector(&[op]);
    let sg_in = fbb.create_vector(&(0..n).collect::<Vec<i32>>());
    let sg_out = fbb.create_vector(&(n..n + outputs as i32).collect::<Vec<i32>>());
    let sg = t::SubGraph::create(&mut fbb, &t::SubGraphArgs { tensors: Some(tensors), inputs: Some(sg_in), outputs: Some(sg_out), operators: Some(ops), ..Default::default() });
    let sgs = fbb.create_vector(&[sg]);
    let deprecated_builtin_code = i8::try_from(code.0).unwrap_or(127);
    let oc = t::OperatorCode::create(&mut fbb, &t::OperatorCodeArgs { deprecated_builtin_code, builtin_code: code, version: 1, ..Default::default() });
    let codes = fbb.create_vector(&[oc]);
    let empty = t::Buffer::create(&mut fbb, &t::BufferArgs::default());
    let buffers = fbb.create_vector(&[empty]);
    let m = t::Model::create(&mut fbb, &t::ModelArgs { version: 3, operator_codes: Some(codes), subgraphs: Some(sgs), buffers: Some(buffers), ..Default::default() });
    fbb.finish(m, Some("TFL3"));
    let model = crate::tflite::load_bytes("ops_test.tflite", fbb.finished_data().to_vec()).unwrap_or_else(|e| panic!("{e}"));
    model.subgraphs[0].ops[0].kind.clone()
}

fn none() -> Opts {
    Box::new(|_| (t::BuiltinOptions::NONE, None))
}

#[test]
fn strided_slice_keeps_every_mask_and_offset() {
    let k = model(
        t::BuiltinOperator::STRIDED_SLICE,
        &[0, 1, 2, 3],
        1,
        Box::new(|fbb| {
            let args = t::StridedSliceOptionsArgs { begin_mask: 1, end_mask: 2, ellipsis_mask: 4, new_axis_mask: 8, shrink_axis_mask: 16, offset: true };
            (t::BuiltinOptions::StridedSliceOptions, Some(t::StridedSliceOptions::create(fbb, &args).as_union_value()))
        }),
    );
    let OpKind::StridedSlice(p) = k else { panic!("{k:?}") };
    assert_eq!((p.begin_mask, p.end_mask, p.ellipsis_mask, p.new_axis_mask, p.shrink_axis_mask, p.offset), (1, 2, 4, 8, 16, true));
}

#[test]
fn options_reach_their_op_kinds() {
    let k = model(
        t::BuiltinOperator::TRANSPOSE_CONV,
        &[0, 1, 2, -1],
        1,
        Box::new(|fbb| {
            let args = t::TransposeConvOptionsArgs { padding: t::Padding::VALID, stride_w: 3, stride_h: 2, fused_activation_function: t::ActivationFunctionType::RELU6, ..Default::default() };
            (t::BuiltinOptions::TransposeConvOptions, Some(t::TransposeConvOptions::create(fbb, &args).as_union_value()))
        }),
    );
    let OpKind::TransposeConv(p) = k else { panic!("{k:?}") };
    assert_eq!((p.padding, p.stride, p.act), (Padding::Valid, [2, 3], Activation::Relu6));

    let k = model(
        t::BuiltinOperator::UNIDIRECTIONAL_SEQUENCE_LSTM,
        &[0, 1],
        1,
        Box::new(|fbb| {
            let args = t::UnidirectionalSequenceLSTMOptionsArgs {
                fused_activation_function: t::ActivationFunctionType::RELU,
                cell_clip: 1.5,
                proj_clip: 2.5,
                time_major: true,
                asymmetric_quantize_inputs: true,
                diagonal_recurrent_tensors: true,
            };
            (t::BuiltinOptions::UnidirectionalSequenceLSTMOptions, Some(t::UnidirectionalSequenceLSTMOptions::create(fbb, &args).as_union_value()))
        }),
    );
    let OpKind::UnidirectionalSequenceLstm(p) = k else { panic!("{k:?}") };
    assert_eq!((p.act, p.cell_clip, p.proj_clip, p.time_major, p.diagonal_recurrent, p.asymmetric_quantize_inputs), (Activation::Relu, 1.5, 2.5, true, true, true));

    let k = model(
        t::BuiltinOperator::GATHER,
        &[0, 1],
        1,
        Box::new(|fbb| (t::BuiltinOptions::GatherOptions, Some(t::GatherOptions::create(fbb, &t::GatherOptionsArgs { axis: -2, batch_dims: 1 }).as_union_value()))),
    );
    assert_eq!(k, OpKind::Gather { axis: -2, batch_dims: 1 });

    let k = model(
        t::BuiltinOperator::RESIZE_NEAREST_NEIGHBOR,
        &[0, 1],
        1,
        Box::new(|fbb| {
            let args = t::ResizeNearestNeighborOptionsArgs { align_corners: false, half_pixel_centers: true };
            (t::BuiltinOptions::ResizeNearestNeighborOptions, Some(t::ResizeNearestNeighborOptions::create(fbb, &args).as_union_value()))
        }),
    );
    let OpKind::Resize(r) = k else { panic!("{k:?}") };
    assert_eq!((r.mode, r.align_corners, r.half_pixel_centers), (ResizeMode::Nearest, false, true));

    let k = model(
        t::BuiltinOperator::BATCH_MATMUL,
        &[0, 1],
        1,
        Box::new(|fbb| {
            let args = t::BatchMatMulOptionsArgs { adj_x: true, adj_y: false, asymmetric_quantize_inputs: false };
            (t::BuiltinOptions::BatchMatMulOptions, Some(t::BatchMatMulOptions::create(fbb, &args).as_union_value()))
        }),
    );
    assert_eq!(k, OpKind::BatchMatMul { adj_x: true, adj_y: false });

    let k = model(
        t::BuiltinOperator::CUMSUM,
        &[0, 1],
        1,
        Box::new(|fbb| (t::BuiltinOptions::CumsumOptions, Some(t::CumsumOptions::create(fbb, &t::CumsumOptionsArgs { exclusive: true, reverse: true }).as_union_value()))),
    );
    assert_eq!(k, OpKind::Cumsum { exclusive: true, reverse: true });

    let k = model(
        t::BuiltinOperator::GELU,
        &[0],
        1,
        Box::new(|fbb| (t::BuiltinOptions::GeluOptions, Some(t::GeluOptions::create(fbb, &t::GeluOptionsArgs { approximate: true }).as_union_value()))),
    );
    assert_eq!(k, OpKind::Unary(UnaryOp::Gelu { approximate: true }));
}

#[test]
fn counts_fall_back_to_the_tensor_lists() {
    // SPLIT without options splits into as many parts as it has outputs; PACK counts inputs.
    assert_eq!(model(t::BuiltinOperator::SPLIT, &[0, 1], 3, none()), OpKind::Split { num_splits: 3 });
    assert_eq!(model(t::BuiltinOperator::PACK, &[0, 1, 2], 1, none()), OpKind::Pack { axis: 0, count: 3 });
    let k = model(
        t::BuiltinOperator::UNPACK,
        &[0],
        2,
        Box::new(|fbb| (t::BuiltinOptions::UnpackOptions, Some(t::UnpackOptions::create(fbb, &t::UnpackOptionsArgs { num: 2, axis: -1 }).as_union_value()))),
    );
    assert_eq!(k, OpKind::Unpack { axis: -1, num: 2 });
    let k = model(
        t::BuiltinOperator::SQUEEZE,
        &[0],
        1,
        Box::new(|fbb| {
            let dims = fbb.create_vector(&[0i32, -1]);
            (t::BuiltinOptions::SqueezeOptions, Some(t::SqueezeOptions::create(fbb, &t::SqueezeOptionsArgs { squeeze_dims: Some(dims) }).as_union_value()))
        }),
    );
    assert_eq!(k, OpKind::Squeeze { axes: vec![0, -1] });
    // ONE_HOT's axis defaults to -1 (last) when the options are absent.
    assert_eq!(model(t::BuiltinOperator::ONE_HOT, &[0, 1, 2, 3], 1, none()), OpKind::OneHot { axis: -1 });
    assert_eq!(model(t::BuiltinOperator::GREATER_EQUAL, &[0, 1], 1, none()), OpKind::Compare(CompareOp::GreaterEqual));
}
