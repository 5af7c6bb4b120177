//! Constant data (packed weights) stored from a 64-byte boundary, so the 64-byte vector loads
//! of the micro-kernels never straddle two cache lines.

use std::ops::Deref;

/// A read-only slice of `T` starting on a cache line.
#[derive(Debug, Default)]
pub(crate) struct Lines<T> {
    storage: Vec<T>,
    off: usize,
    len: usize,
}

impl<T: Copy + Default> Lines<T> {
    /// Copies `values` to a 64-byte boundary.
    pub(crate) fn new(values: &[T]) -> Lines<T> {
        let size = std::mem::size_of::<T>().max(1);
        let slack = 64usize.div_ceil(size);
        let mut storage = vec![T::default(); values.len() + slack];
        // `align_offset` counts elements; for element sizes that do not divide 64 it may not
        // reach a boundary within the slack, and the data then starts unaligned (correct, slower).
        let off = match storage.as_ptr().align_offset(64) {
            o if o < slack => o,
            _ => 0,
        };
        storage[off..off + values.len()].copy_from_slice(values);
        Lines { storage, off, len: values.len() }
    }
}

impl<T> Deref for Lines<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.storage[self.off..self.off + self.len]
    }
}

impl<T: Copy + Default> Clone for Lines<T> {
    /// A fresh aligned copy (a cloned `Vec` may start elsewhere in a line).
    fn clone(&self) -> Self {
        Lines::new(self)
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
}
