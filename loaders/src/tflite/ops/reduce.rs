//! Reductions along axes, normalizations, scans, sorting/segment ops and RFFT2D.

use nnrt_core::{LoadError, LocalResponseNorm, OpKind, ReduceOp, SegmentOp};

use super::{act, OpRef, B};

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let op = m.op;
    let reduce = |r: ReduceOp| OpKind::Reduce { op: r, keep_dims: op.builtin_options_as_reducer_options().map(|o| o.keep_dims()).unwrap_or(false) };
    Ok(Some(match B(m.code.code) {
        B::MEAN => reduce(ReduceOp::Mean),
        B::SUM => reduce(ReduceOp::Sum),
        B::REDUCE_MAX => reduce(ReduceOp::Max),
        B::REDUCE_MIN => reduce(ReduceOp::Min),
        B::REDUCE_PROD => reduce(ReduceOp::Prod),
        B::SOFTMAX => OpKind::Softmax { beta: op.builtin_options_as_softmax_options().map_or(1.0, |o| o.beta()) },
        B::REDUCE_ANY => reduce(ReduceOp::Any),
        B::REDUCE_ALL => reduce(ReduceOp::All),
        B::ARG_MAX => OpKind::ArgMinMax { max: true },
        B::ARG_MIN => OpKind::ArgMinMax { max: false },
        B::LOG_SOFTMAX => OpKind::LogSoftmax,
        B::L2_NORMALIZATION => {
            OpKind::L2Normalization { act: op.builtin_options_as_l2_norm_options().map(|o| act(o.fused_activation_function())).unwrap_or_default() }
        }
        B::CUMSUM => {
            let o = op.builtin_options_as_cumsum_options();
            OpKind::Cumsum { exclusive: o.is_some_and(|o| o.exclusive()), reverse: o.is_some_and(|o| o.reverse()) }
        }
        B::RFFT2D => OpKind::Rfft2d,
        B::TOPK_V2 => OpKind::TopKV2,
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
        B::SEGMENT_SUM => OpKind::SegmentSum,
        B::UNSORTED_SEGMENT_SUM => OpKind::UnsortedSegment(SegmentOp::Sum),
        B::UNSORTED_SEGMENT_MAX => OpKind::UnsortedSegment(SegmentOp::Max),
        B::UNSORTED_SEGMENT_MIN => OpKind::UnsortedSegment(SegmentOp::Min),
        B::UNSORTED_SEGMENT_PROD => OpKind::UnsortedSegment(SegmentOp::Prod),
        B::NON_MAX_SUPPRESSION_V4 => OpKind::NonMaxSuppression { v5: false },
        B::NON_MAX_SUPPRESSION_V5 => OpKind::NonMaxSuppression { v5: true },
        // UniqueOptions.idx_out_type repeats output 1's type, which the IR and kernel use.
        B::UNIQUE => OpKind::Unique,
        B::BUCKETIZE => OpKind::Bucketize {
            boundaries: op.builtin_options_as_bucketize_options().and_then(|o| o.boundaries()).map(|v| v.iter().collect()).unwrap_or_default(),
        },
        _ => return Ok(None),
    }))
}
