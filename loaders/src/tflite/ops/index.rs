//! Ops driven by index or slice tensors: gather, scatter, slices, one-hot, sparse-to-dense.

use nnrt_core::{LoadError, OpKind, StridedSlice};

use super::{OpRef, B};

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let op = m.op;
    Ok(Some(match B(m.code.code) {
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
        B::ONE_HOT => OpKind::OneHot { axis: op.builtin_options_as_one_hot_options().map_or(-1, |o| o.axis()) },
        B::EMBEDDING_LOOKUP => OpKind::EmbeddingLookup,
        B::SCATTER_ND => OpKind::ScatterNd,
        B::WHERE => OpKind::Where,
        B::SPARSE_TO_DENSE => {
            OpKind::SparseToDense { validate_indices: op.builtin_options_as_sparse_to_dense_options().is_some_and(|o| o.validate_indices()) }
        }
        B::DYNAMIC_UPDATE_SLICE => OpKind::DynamicUpdateSlice,
        _ => return Ok(None),
    }))
}
