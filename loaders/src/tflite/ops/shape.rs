//! Ops that move or reshape data without arithmetic: reshape, transpose, pad, concat, split, tile, resize, fill.

use nnrt_core::{LoadError, MirrorMode, OpKind, Resize, ResizeMode};

use super::{act, count, OpRef, B};
use crate::generated::tflite as t;

/// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: the same two flags in two options tables.
macro_rules! resize {
    ($mode:expr, $options:expr) => {{
        let o = $options;
        OpKind::Resize(Resize { mode: $mode, align_corners: o.is_some_and(|o| o.align_corners()), half_pixel_centers: o.is_some_and(|o| o.half_pixel_centers()) })
    }};
}

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let op = m.op;
    let inputs = op.inputs().map_or(0, |v| v.len());
    let outputs = op.outputs().map_or(0, |v| v.len());
    Ok(Some(match B(m.code.code) {
        B::CONCATENATION => {
            let o = op.builtin_options_as_concatenation_options();
            OpKind::Concatenation { axis: o.map_or(0, |o| o.axis()), act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default() }
        }
        B::RESHAPE => OpKind::Reshape {
            new_shape: op.builtin_options_as_reshape_options().and_then(|o| o.new_shape()).map(|v| v.iter().collect()),
        },
        B::TRANSPOSE => OpKind::Transpose,
        B::DILATE => OpKind::Dilate,
        B::PAD | B::PADV2 => OpKind::Pad,
        B::MIRROR_PAD => OpKind::MirrorPad(match op.builtin_options_as_mirror_pad_options().map(|o| o.mode()) {
            Some(t::MirrorPadMode::SYMMETRIC) => MirrorMode::Symmetric,
            _ => MirrorMode::Reflect,
        }),
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
        B::RESIZE_BILINEAR => resize!(ResizeMode::Bilinear, op.builtin_options_as_resize_bilinear_options()),
        B::RESIZE_NEAREST_NEIGHBOR => resize!(ResizeMode::Nearest, op.builtin_options_as_resize_nearest_neighbor_options()),
        B::TILE => OpKind::Tile,
        B::SPACE_TO_DEPTH => OpKind::SpaceToDepth { block: op.builtin_options_as_space_to_depth_options().map_or(0, |o| o.block_size()).max(0) as usize },
        B::DEPTH_TO_SPACE => OpKind::DepthToSpace { block: op.builtin_options_as_depth_to_space_options().map_or(0, |o| o.block_size()).max(0) as usize },
        B::BATCH_TO_SPACE_ND => OpKind::BatchToSpaceNd,
        B::SPACE_TO_BATCH_ND => OpKind::SpaceToBatchNd,
        B::REVERSE_V2 => OpKind::ReverseV2,
        B::FILL => OpKind::Fill,
        B::RANGE => OpKind::Range,
        B::SHAPE => OpKind::Shape,
        B::RANK => OpKind::Rank,
        // TFLite has no ONES_LIKE builtin (converters emit FILL); OpKind::OnesLike serves other formats.
        B::ZEROS_LIKE => OpKind::ZerosLike,
        B::BROADCAST_TO => OpKind::BroadcastTo,
        B::BROADCAST_ARGS => OpKind::BroadcastArgs,
        B::MATRIX_DIAG => OpKind::MatrixDiag,
        B::MATRIX_SET_DIAG => OpKind::MatrixSetDiag,
        B::REVERSE_SEQUENCE => {
            let o = op.builtin_options_as_reverse_sequence_options();
            OpKind::ReverseSequence { seq_dim: o.map_or(0, |o| o.seq_dim()), batch_dim: o.map_or(0, |o| o.batch_dim()) }
        }
        _ => return Ok(None),
    }))
}
