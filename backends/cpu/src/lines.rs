//! Constant data (packed weights) stored from a 64-byte boundary, so the 64-byte vector loads
//! of the micro-kernels never straddle two cache lines. The data is either owned (packed at
//! prepare) or borrowed from a memory-mapped file (an ahead-of-time artifact's parameters,
//! packed when the artifact was compiled: see `crate::prepack`).

use std::ops::Deref;

use nnrt_core::ConstData;

/// A read-only slice of `T` starting on a cache line.
#[derive(Debug)]
pub(crate) struct Lines<T> {
    storage: Storage<T>,
    off: usize,
    len: usize,
}

#[derive(Debug)]
enum Storage<T> {
    Owned(Vec<T>),
    /// Bytes of a mapped file, checked at construction to hold `len` aligned `T`s.
    Mapped(ConstData),
}

impl<T> Default for Lines<T> {
    fn default() -> Self {
        Lines { storage: Storage::Owned(Vec::new()), off: 0, len: 0 }
    }
}

impl<T: Copy + Default> Lines<T> {
    /// Copies `values` to a 64-byte boundary.
    pub(crate) fn new(values: &[T]) -> Lines<T> {
        Lines::build(values.len(), |dst| dst.copy_from_slice(values))
    }

    /// `len` values starting on a 64-byte boundary, default-initialized and then written by
    /// `fill` in place (no copy).
    pub(crate) fn build(len: usize, fill: impl FnOnce(&mut [T])) -> Lines<T> {
        let size = std::mem::size_of::<T>().max(1);
        let slack = 64usize.div_ceil(size);
        let mut storage = vec![T::default(); len + slack];
        // `align_offset` counts elements; for element sizes that do not divide 64 it may not
        // reach a boundary within the slack, and the data then starts unaligned (correct, slower).
        let off = match storage.as_ptr().align_offset(64) {
            o if o < slack => o,
            _ => 0,
        };
        fill(&mut storage[off..off + len]);
        Lines { storage: Storage::Owned(storage), off, len }
    }
}

impl<T: bytemuck::Pod> Lines<T> {
    /// Borrows `data` as `T`s when it holds a whole number of them, aligned for `T`; `None`
    /// otherwise (the caller packs instead).
    pub(crate) fn mapped(data: ConstData) -> Option<Lines<T>> {
        let len = bytemuck::try_cast_slice::<u8, T>(data.bytes()).ok()?.len();
        Some(Lines { storage: Storage::Mapped(data), off: 0, len })
    }
}

impl<T: bytemuck::Pod> Deref for Lines<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.storage {
            Storage::Owned(v) => &v[self.off..self.off + self.len],
            // Checked in `mapped`: the bytes are aligned and a multiple of T's size, and a
            // `ConstData` never moves its bytes.
            Storage::Mapped(c) => bytemuck::try_cast_slice(c.bytes()).unwrap_or(&[]),
        }
    }
}

impl<T: bytemuck::Pod + Default> Clone for Lines<T> {
    /// A fresh aligned copy (a cloned `Vec` may start elsewhere in a line); a mapped one is
    /// borrowed again.
    fn clone(&self) -> Self {
        match &self.storage {
            Storage::Owned(_) => Lines::new(self),
            Storage::Mapped(c) => Lines { storage: Storage::Mapped(c.clone()), off: 0, len: self.len },
        }
    }
}

impl<T: Copy + Default> From<Vec<T>> for Lines<T> {
    fn from(v: Vec<T>) -> Self {
        Lines::new(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_line_and_keeps_values() {
        for n in [0usize, 1, 63, 64, 1000] {
            let v: Vec<i8> = (0..n).map(|i| i as i8).collect();
            let l = Lines::new(&v);
            assert_eq!(&*l, &v[..]);
            assert_eq!(l.as_ptr() as usize % 64, 0);
            let c = l.clone();
            assert_eq!(&*c, &v[..]);
            assert_eq!(c.as_ptr() as usize % 64, 0);
        }
    }

    #[test]
    fn mapped_bytes_are_borrowed_when_aligned() {
        let v: Vec<u8> = (0..64).collect();
        let blob: nnrt_core::Blob = std::sync::Arc::new(v);
        let whole = ConstData::borrowed(blob.clone(), 0, 64).unwrap();
        let l = Lines::<u8>::mapped(whole).unwrap();
        assert_eq!(l.len(), 64);
        assert!(l.clone().iter().copied().eq(0..64u8));
        // Three bytes are not a whole number of i32s.
        assert!(Lines::<i32>::mapped(ConstData::borrowed(blob, 0, 3).unwrap()).is_none());
    }
}
