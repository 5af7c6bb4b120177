//! A short list kept in place (no allocation) up to a fixed length.

/// Up to [`INLINE`] values in place, more on the heap: the coalesced dims, strides and counters
/// a kernel makes on every run (a reduction's layout, a broadcast's plan), so that an op on a
/// small tensor allocates nothing per run.
#[derive(Clone, Debug)]
pub(crate) struct Small<T: Copy + Default> {
    len: usize,
    inline: [T; INLINE],
    heap: Vec<T>,
}

pub(crate) const INLINE: usize = 6;

impl<T: Copy + Default> Small<T> {
    pub(crate) fn new() -> Self {
        Small { len: 0, inline: [T::default(); INLINE], heap: Vec::new() }
    }

    /// `n` copies of `v`.
    pub(crate) fn filled(n: usize, v: T) -> Self {
        match n <= INLINE {
            true => Small { len: n, inline: [v; INLINE], heap: Vec::new() },
            false => Small { len: n, inline: [v; INLINE], heap: vec![v; n] },
        }
    }

    /// Removes and returns the last value.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let v = *self.last()?;
        if self.len > INLINE {
            self.heap.pop();
            if self.len == INLINE + 1 {
                // Back in place: the values may have changed while on the heap.
                self.inline.copy_from_slice(&self.heap);
                self.heap.clear();
            }
        }
        self.len -= 1;
        Some(v)
    }

    pub(crate) fn push(&mut self, v: T) {
        if self.len < INLINE {
            self.inline[self.len] = v;
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.inline);
            }
            self.heap.push(v);
        }
        self.len += 1;
    }
}

impl<T: Copy + Default> std::ops::Deref for Small<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if self.len <= INLINE {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }
}

impl<T: Copy + Default> std::ops::DerefMut for Small<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.len <= INLINE {
            &mut self.inline[..self.len]
        } else {
            &mut self.heap
        }
    }
}

impl<T: Copy + Default> FromIterator<T> for Small<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut s = Small::new();
        iter.into_iter().for_each(|v| s.push(v));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes and pops across the inline capacity keep every value in order.
    #[test]
    fn values_spill_to_the_heap_and_back() {
        let mut s: Small<usize> = Small::new();
        for n in 0..20 {
            assert_eq!(&s[..], (0..n).collect::<Vec<_>>().as_slice());
            s.push(n);
        }
        s[3] = 99;
        for n in (0..20).rev() {
            let want = if n == 3 { 99 } else { n };
            assert_eq!(s.pop(), Some(want));
            let mut rest: Vec<usize> = (0..n).collect();
            if n > 3 {
                rest[3] = 99;
            }
            assert_eq!(&s[..], rest.as_slice());
        }
        assert_eq!(s.pop(), None);
        s.push(7);
        assert_eq!(&s[..], &[7]);
        assert_eq!(&Small::filled(10, 2)[..], &[2; 10]);
    }
}
