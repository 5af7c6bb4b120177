//! Builtin operator codes and options tables into typed [`OpKind`]s.

use nnrt_core::{
    Activation, BidirectionalLstm, BinaryOp, BitwiseOp, CompareOp, LocalResponseNorm, Rnn, SegmentOp, Svdf, Conv2D, Conv3D, DepthwiseConv2D, FullyConnected, LoadError, LogicalOp, MirrorMode, OpKind, Padding, Pool2D,
    PoolKind, ReduceOp, Resize, ResizeMode, SequenceLstm, StridedSlice, SubgraphId, TransposeConv, UnaryOp,
};

use super::{Loader, OpCode};
use crate::generated::tflite as t;
use t::BuiltinOperator as B;

fn act(a: t::ActivationFunctionType) -> Activation {
    match a {
        t::ActivationFunctionType::RELU => Activation::Relu,
        t::ActivationFunctionType::RELU_N1_TO_1 => Activation::ReluN1To1,
        t::ActivationFunctionType::RELU6 => Activation::Relu6,
        t::ActivationFunctionType::TANH => Activation::Tanh,
        t::ActivationFunctionType::SIGN_BIT => Activation::SignBit,
        _ => Activation::None,
    }
}

fn padding(p: t::Padding) -> Padding {
    if p == t::Padding::VALID {
        Padding::Valid
    } else {
        Padding::Same
    }
}

/// CONV_3D's and CONV_3D_TRANSPOSE's options (both use Conv3DOptions).
fn conv3d_options(op: &t::Operator<'_>) -> Conv3D {
    let o = op.builtin_options_as_conv_3_doptions();
    Conv3D {
        padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
        stride: [pos(o.map_or(1, |o| o.stride_d())), pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
        dilation: [pos(o.map_or(1, |o| o.dilation_d_factor())), pos(o.map_or(1, |o| o.dilation_h_factor())), pos(o.map_or(1, |o| o.dilation_w_factor()))],
        act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
    }
}

/// Strides and dilations of 0 (absent options) mean 1, as TFLite's defaults.
fn pos(v: i32) -> usize {
    if v <= 0 {
        1
    } else {
        v as usize
    }
}

/// Maps one operator. `si`/`oi` locate it for errors.
pub(super) fn map(cx: &Loader, si: usize, oi: usize, code: &OpCode, op: &t::Operator<'_>) -> Result<OpKind, LoadError> {
    let unsupported = |detail: String| LoadError::UnsupportedOp {
        path: cx.path.to_string(),
        subgraph: si,
        index: oi,
        op: B(code.code).variant_name().map(String::from).unwrap_or_else(|| format!("builtin code {}", code.code)),
        detail,
    };
    let binary = |op: BinaryOp, a: Activation| OpKind::Binary { op, act: a };
    let reduce = |r: ReduceOp| OpKind::Reduce { op: r, keep_dims: op.builtin_options_as_reducer_options().map(|o| o.keep_dims()).unwrap_or(false) };
    let pool = |kind: PoolKind| {
        let o = op.builtin_options_as_pool_2_doptions();
        OpKind::Pool2D(Pool2D {
            kind,
            padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
            stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
            filter: [o.map_or(1, |o| o.filter_height()).max(0) as usize, o.map_or(1, |o| o.filter_width()).max(0) as usize],
            act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
        })
    };
    let inputs = op.inputs().map_or(0, |v| v.len());
    let outputs = op.outputs().map_or(0, |v| v.len());
    let kind = match B(code.code) {
        B::CONV_2D => {
            let o = op.builtin_options_as_conv_2_doptions();
            OpKind::Conv2D(Conv2D {
                padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
                stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
                dilation: [pos(o.map_or(1, |o| o.dilation_h_factor())), pos(o.map_or(1, |o| o.dilation_w_factor()))],
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
            })
        }
        B::CONV_3D => OpKind::Conv3D(conv3d_options(op)),
        B::CONV_3D_TRANSPOSE => OpKind::Conv3DTranspose(conv3d_options(op)),
        B::DEPTHWISE_CONV_2D => {
            let o = op.builtin_options_as_depthwise_conv_2_doptions();
            OpKind::DepthwiseConv2D(DepthwiseConv2D {
                padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
                stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
                dilation: [pos(o.map_or(1, |o| o.dilation_h_factor())), pos(o.map_or(1, |o| o.dilation_w_factor()))],
                depth_multiplier: o.map_or(0, |o| o.depth_multiplier()).max(0) as usize,
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
            })
        }
        B::FULLY_CONNECTED => {
            let o = op.builtin_options_as_fully_connected_options();
            if let Some(f) = o.map(|o| o.weights_format()).filter(|f| *f != t::FullyConnectedOptionsWeightsFormat::DEFAULT) {
                return Err(unsupported(format!(": weights format {} is not supported", f.variant_name().unwrap_or("unknown"))));
            }
            OpKind::FullyConnected(FullyConnected {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                keep_num_dims: o.is_some_and(|o| o.keep_num_dims()),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::AVERAGE_POOL_2D => pool(PoolKind::Average),
        B::MAX_POOL_2D => pool(PoolKind::Max),
        B::L2_POOL_2D => pool(PoolKind::L2),
        B::ADD => binary(BinaryOp::Add, op.builtin_options_as_add_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::SUB => binary(BinaryOp::Sub, op.builtin_options_as_sub_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::MUL => binary(BinaryOp::Mul, op.builtin_options_as_mul_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::DIV => binary(BinaryOp::Div, op.builtin_options_as_div_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::RELU => OpKind::Unary(UnaryOp::Relu),
        B::RELU6 => OpKind::Unary(UnaryOp::Relu6),
        B::RELU_N1_TO_1 => OpKind::Unary(UnaryOp::ReluN1To1),
        B::TANH => OpKind::Unary(UnaryOp::Tanh),
        B::LOGISTIC => OpKind::Unary(UnaryOp::Logistic),
        B::HARD_SWISH => OpKind::Unary(UnaryOp::HardSwish),
        B::LEAKY_RELU => OpKind::Unary(UnaryOp::LeakyRelu(op.builtin_options_as_leaky_relu_options().map_or(0.2, |o| o.alpha()))),
        B::MEAN => reduce(ReduceOp::Mean),
        B::SUM => reduce(ReduceOp::Sum),
        B::REDUCE_MAX => reduce(ReduceOp::Max),
        B::REDUCE_MIN => reduce(ReduceOp::Min),
        B::REDUCE_PROD => reduce(ReduceOp::Prod),
        B::SOFTMAX => OpKind::Softmax { beta: op.builtin_options_as_softmax_options().map_or(1.0, |o| o.beta()) },
        B::CONCATENATION => {
            let o = op.builtin_options_as_concatenation_options();
            OpKind::Concatenation { axis: o.map_or(0, |o| o.axis()), act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default() }
        }
        B::RESHAPE => OpKind::Reshape {
            new_shape: op.builtin_options_as_reshape_options().and_then(|o| o.new_shape()).map(|v| v.iter().collect()),
        },
        B::TRANSPOSE => OpKind::Transpose,
        B::PAD | B::PADV2 => OpKind::Pad,
        B::MIRROR_PAD => OpKind::MirrorPad(match op.builtin_options_as_mirror_pad_options().map(|o| o.mode()) {
            Some(t::MirrorPadMode::SYMMETRIC) => MirrorMode::Symmetric,
            _ => MirrorMode::Reflect,
        }),
        B::POW => binary(BinaryOp::Pow, Activation::None),
        B::SQUARED_DIFFERENCE => binary(BinaryOp::SquaredDifference, Activation::None),
        B::MAXIMUM => binary(BinaryOp::Maximum, Activation::None),
        B::MINIMUM => binary(BinaryOp::Minimum, Activation::None),
        B::FLOOR_DIV => binary(BinaryOp::FloorDiv, Activation::None),
        B::FLOOR_MOD => binary(BinaryOp::FloorMod, Activation::None),
        B::EQUAL => OpKind::Compare(CompareOp::Equal),
        B::NOT_EQUAL => OpKind::Compare(CompareOp::NotEqual),
        B::LESS => OpKind::Compare(CompareOp::Less),
        B::LESS_EQUAL => OpKind::Compare(CompareOp::LessEqual),
        B::GREATER => OpKind::Compare(CompareOp::Greater),
        B::GREATER_EQUAL => OpKind::Compare(CompareOp::GreaterEqual),
        B::LOGICAL_AND => OpKind::Logical(LogicalOp::And),
        B::LOGICAL_OR => OpKind::Logical(LogicalOp::Or),
        B::LOGICAL_NOT => OpKind::Unary(UnaryOp::LogicalNot),
        B::RELU_0_TO_1 => OpKind::Unary(UnaryOp::Relu0To1),
        B::ELU => OpKind::Unary(UnaryOp::Elu),
        B::GELU => OpKind::Unary(UnaryOp::Gelu { approximate: op.builtin_options_as_gelu_options().is_some_and(|o| o.approximate()) }),
        B::ABS => OpKind::Unary(UnaryOp::Abs),
        B::NEG => OpKind::Unary(UnaryOp::Neg),
        B::EXP => OpKind::Unary(UnaryOp::Exp),
        B::LOG => OpKind::Unary(UnaryOp::Log),
        B::SQRT => OpKind::Unary(UnaryOp::Sqrt),
        B::RSQRT => OpKind::Unary(UnaryOp::Rsqrt),
        B::SQUARE => OpKind::Unary(UnaryOp::Square),
        B::SIN => OpKind::Unary(UnaryOp::Sin),
        B::COS => OpKind::Unary(UnaryOp::Cos),
        B::FLOOR => OpKind::Unary(UnaryOp::Floor),
        B::CEIL => OpKind::Unary(UnaryOp::Ceil),
        B::ROUND => OpKind::Unary(UnaryOp::Round),
        B::SIGN => OpKind::Unary(UnaryOp::Sign),
        B::PRELU => OpKind::Prelu,
        B::REDUCE_ANY => reduce(ReduceOp::Any),
        B::REDUCE_ALL => reduce(ReduceOp::All),
        B::ARG_MAX => OpKind::ArgMinMax { max: true },
        B::ARG_MIN => OpKind::ArgMinMax { max: false },
        B::LOG_SOFTMAX => OpKind::LogSoftmax,
        B::L2_NORMALIZATION => {
            OpKind::L2Normalization { act: op.builtin_options_as_l2_norm_options().map(|o| act(o.fused_activation_function())).unwrap_or_default() }
        }
        B::TRANSPOSE_CONV => {
            let o = op.builtin_options_as_transpose_conv_options();
            OpKind::TransposeConv(TransposeConv {
                padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Same),
                stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
            })
        }
        B::BATCH_MATMUL => {
            let o = op.builtin_options_as_batch_mat_mul_options();
            if o.is_some_and(|o| o.asymmetric_quantize_inputs()) {
                log::debug!("subgraph {si} op {oi}: BATCH_MATMUL asymmetric_quantize_inputs only matters for hybrid models");
            }
            OpKind::BatchMatMul { adj_x: o.is_some_and(|o| o.adj_x()), adj_y: o.is_some_and(|o| o.adj_y()) }
        }
        B::SPLIT => OpKind::Split { num_splits: count(op.builtin_options_as_split_options().map(|o| o.num_splits()), outputs) },
        B::SPLIT_V => OpKind::SplitV { num_splits: count(op.builtin_options_as_split_voptions().map(|o| o.num_splits()), outputs) },
        B::PACK => {
            let o = op.builtin_options_as_pack_options();
            OpKind::Pack { axis: o.map_or(0, |o| o.axis()), count: count(o.map(|o| o.values_count()), inputs) }
        }
        B::UNPACK => {
            let o = op.builtin_options_as_unpack_options();
            OpKind::Unpack { axis: o.map_or(0, |o| o.axis()), num: count(o.map(|o| o.num()), outputs) }
        }
        B::SQUEEZE => OpKind::Squeeze {
            axes: op.builtin_options_as_squeeze_options().and_then(|o| o.squeeze_dims()).map(|v| v.iter().collect()).unwrap_or_default(),
        },
        B::EXPAND_DIMS => OpKind::ExpandDims,
        B::SLICE => OpKind::Slice,
        B::STRIDED_SLICE => {
            let o = op.builtin_options_as_strided_slice_options();
            OpKind::StridedSlice(StridedSlice {
                begin_mask: o.map_or(0, |o| o.begin_mask()),
                end_mask: o.map_or(0, |o| o.end_mask()),
                ellipsis_mask: o.map_or(0, |o| o.ellipsis_mask()),
                new_axis_mask: o.map_or(0, |o| o.new_axis_mask()),
                shrink_axis_mask: o.map_or(0, |o| o.shrink_axis_mask()),
                offset: o.is_some_and(|o| o.offset()),
            })
        }
        B::GATHER => {
            let o = op.builtin_options_as_gather_options();
            OpKind::Gather { axis: o.map_or(0, |o| o.axis()), batch_dims: o.map_or(0, |o| o.batch_dims()) }
        }
        B::GATHER_ND => OpKind::GatherNd,
        B::RESIZE_BILINEAR => {
            let o = op.builtin_options_as_resize_bilinear_options();
            OpKind::Resize(Resize {
                mode: ResizeMode::Bilinear,
                align_corners: o.is_some_and(|o| o.align_corners()),
                half_pixel_centers: o.is_some_and(|o| o.half_pixel_centers()),
            })
        }
        B::RESIZE_NEAREST_NEIGHBOR => {
            let o = op.builtin_options_as_resize_nearest_neighbor_options();
            OpKind::Resize(Resize {
                mode: ResizeMode::Nearest,
                align_corners: o.is_some_and(|o| o.align_corners()),
                half_pixel_centers: o.is_some_and(|o| o.half_pixel_centers()),
            })
        }
        B::TILE => OpKind::Tile,
        B::SPACE_TO_DEPTH => OpKind::SpaceToDepth { block: op.builtin_options_as_space_to_depth_options().map_or(0, |o| o.block_size()).max(0) as usize },
        B::DEPTH_TO_SPACE => OpKind::DepthToSpace { block: op.builtin_options_as_depth_to_space_options().map_or(0, |o| o.block_size()).max(0) as usize },
        B::BATCH_TO_SPACE_ND => OpKind::BatchToSpaceNd,
        B::SPACE_TO_BATCH_ND => OpKind::SpaceToBatchNd,
        B::CUMSUM => {
            let o = op.builtin_options_as_cumsum_options();
            OpKind::Cumsum { exclusive: o.is_some_and(|o| o.exclusive()), reverse: o.is_some_and(|o| o.reverse()) }
        }
        B::REVERSE_V2 => OpKind::ReverseV2,
        B::RFFT2D => OpKind::Rfft2d,
        B::FAKE_QUANT => {
            let o = op.builtin_options_as_fake_quant_options();
            OpKind::FakeQuant {
                min: o.map_or(0.0, |o| o.min()),
                max: o.map_or(0.0, |o| o.max()),
                num_bits: o.map_or(0, |o| o.num_bits()).max(0) as u32,
                narrow_range: o.is_some_and(|o| o.narrow_range()),
            }
        }
        B::COMPLEX_ABS => OpKind::ComplexAbs,
        B::REAL => OpKind::Real,
        B::IMAG => OpKind::Imag,
        // CastOptions, ArgMaxOptions.output_type and ShapeOptions.out_type repeat the output
        // tensor's type, which is what the IR and the kernels use.
        B::CAST => OpKind::Cast,
        B::SELECT => OpKind::Select { v2: false },
        B::SELECT_V2 => OpKind::Select { v2: true },
        B::FILL => OpKind::Fill,
        B::RANGE => OpKind::Range,
        B::SHAPE => OpKind::Shape,
        B::RANK => OpKind::Rank,
        // TFLite has no ONES_LIKE builtin (converters emit FILL); OpKind::OnesLike serves other formats.
        B::ZEROS_LIKE => OpKind::ZerosLike,
        B::ONE_HOT => OpKind::OneHot { axis: op.builtin_options_as_one_hot_options().map_or(-1, |o| o.axis()) },
        B::TOPK_V2 => OpKind::TopKV2,
        B::UNIDIRECTIONAL_SEQUENCE_LSTM => {
            let o = op.builtin_options_as_unidirectional_sequence_lstmoptions();
            OpKind::UnidirectionalSequenceLstm(SequenceLstm {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or(Activation::Tanh),
                cell_clip: o.map_or(0.0, |o| o.cell_clip()),
                proj_clip: o.map_or(0.0, |o| o.proj_clip()),
                time_major: o.is_some_and(|o| o.time_major()),
                diagonal_recurrent: o.is_some_and(|o| o.diagonal_recurrent_tensors()),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::ADD_N => OpKind::AddN,
        B::BROADCAST_TO => OpKind::BroadcastTo,
        B::BROADCAST_ARGS => OpKind::BroadcastArgs,
        B::EMBEDDING_LOOKUP => OpKind::EmbeddingLookup,
        B::LOCAL_RESPONSE_NORMALIZATION => {
            // Absent options are TFLite's zeros; prepare rejects what they make meaningless.
            let o = op.builtin_options_as_local_response_normalization_options();
            OpKind::LocalResponseNorm(LocalResponseNorm {
                radius: o.map_or(0, |o| o.radius()),
                bias: o.map_or(0.0, |o| o.bias()),
                alpha: o.map_or(0.0, |o| o.alpha()),
                beta: o.map_or(0.0, |o| o.beta()),
            })
        }
        B::ATAN2 => OpKind::Atan2,
        B::BITWISE_XOR => OpKind::Bitwise(BitwiseOp::Xor),
        B::RIGHT_SHIFT => OpKind::Bitwise(BitwiseOp::RightShift),
        B::SCATTER_ND => OpKind::ScatterNd,
        B::WHERE => OpKind::Where,
        B::SEGMENT_SUM => OpKind::SegmentSum,
        B::UNSORTED_SEGMENT_SUM => OpKind::UnsortedSegment(SegmentOp::Sum),
        B::UNSORTED_SEGMENT_MAX => OpKind::UnsortedSegment(SegmentOp::Max),
        B::UNSORTED_SEGMENT_MIN => OpKind::UnsortedSegment(SegmentOp::Min),
        B::UNSORTED_SEGMENT_PROD => OpKind::UnsortedSegment(SegmentOp::Prod),
        B::MATRIX_DIAG => OpKind::MatrixDiag,
        B::MATRIX_SET_DIAG => OpKind::MatrixSetDiag,
        B::REVERSE_SEQUENCE => {
            let o = op.builtin_options_as_reverse_sequence_options();
            OpKind::ReverseSequence { seq_dim: o.map_or(0, |o| o.seq_dim()), batch_dim: o.map_or(0, |o| o.batch_dim()) }
        }
        B::SPARSE_TO_DENSE => {
            OpKind::SparseToDense { validate_indices: op.builtin_options_as_sparse_to_dense_options().is_some_and(|o| o.validate_indices()) }
        }
        B::DYNAMIC_UPDATE_SLICE => OpKind::DynamicUpdateSlice,
        B::NON_MAX_SUPPRESSION_V4 => OpKind::NonMaxSuppression { v5: false },
        B::NON_MAX_SUPPRESSION_V5 => OpKind::NonMaxSuppression { v5: true },
        B::RNN => {
            let o = op.builtin_options_as_rnnoptions();
            OpKind::Rnn(Rnn {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                time_major: false,
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::UNIDIRECTIONAL_SEQUENCE_RNN => {
            let o = op.builtin_options_as_sequence_rnnoptions();
            OpKind::SequenceRnn(Rnn {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                time_major: o.is_some_and(|o| o.time_major()),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::SVDF => {
            let o = op.builtin_options_as_svdfoptions();
            OpKind::Svdf(Svdf {
                rank: o.map_or(0, |o| o.rank()),
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::BIDIRECTIONAL_SEQUENCE_LSTM => {
            let o = op.builtin_options_as_bidirectional_sequence_lstmoptions();
            OpKind::BidirectionalSequenceLstm(BidirectionalLstm {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or(Activation::Tanh),
                cell_clip: o.map_or(0.0, |o| o.cell_clip()),
                proj_clip: o.map_or(0.0, |o| o.proj_clip()),
                merge_outputs: o.is_some_and(|o| o.merge_outputs()),
                // Version 1 models have no field and are time-major, the schema's default.
                time_major: o.is_none_or(|o| o.time_major()),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        // UniqueOptions.idx_out_type repeats output 1's type, which the IR and kernel use.
        B::UNIQUE => OpKind::Unique,
        B::BUCKETIZE => OpKind::Bucketize {
            boundaries: op.builtin_options_as_bucketize_options().and_then(|o| o.boundaries()).map(|v| v.iter().collect()).unwrap_or_default(),
        },
        B::DEQUANTIZE => OpKind::Dequantize,
        B::QUANTIZE => OpKind::Quantize,
        B::CUSTOM => OpKind::Custom {
            name: code.custom.clone().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} is a custom op without a custom_code name")))?,
            options: op.custom_options().map(|v| v.bytes().to_vec()).unwrap_or_default(),
        },
        B::IF => {
            let o = op.builtin_options_as_if_options().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} (IF) has no IfOptions")))?;
            OpKind::If { then_branch: sub(cx, o.then_subgraph_index())?, else_branch: sub(cx, o.else_subgraph_index())? }
        }
        B::WHILE => {
            let o = op.builtin_options_as_while_options().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} (WHILE) has no WhileOptions")))?;
            OpKind::While { cond: sub(cx, o.cond_subgraph_index())?, body: sub(cx, o.body_subgraph_index())? }
        }
        _ => return Err(unsupported(String::new())),
    };
    Ok(kind)
}

/// A count option (num_splits, values_count, num), or `fallback` (the tensor count) when the
/// options are absent or hold 0.
fn count(option: Option<i32>, fallback: usize) -> usize {
    match option {
        Some(n) if n > 0 => n as usize,
        _ => fallback,
    }
}

fn sub(cx: &Loader, i: i32) -> Result<SubgraphId, LoadError> {
    if i < 0 {
        return Err(cx.malformed(format!("negative subgraph index {i}")));
    }
    Ok(SubgraphId::new(i as usize))
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;
