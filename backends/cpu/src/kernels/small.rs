//! A short list kept in place (no allocation) up to a fixed length.

/// Up to [`INLINE`] values in place, more on the heap ([`nnrt_core::Seq`]): the coalesced dims,
/// strides and counters a kernel makes on every run (a reduction's layout, a broadcast's plan),
/// so that an op on a small tensor allocates nothing per run.
pub(crate) type Small<T> = nnrt_core::Seq<T, INLINE>;

pub(crate) const INLINE: usize = 6;
