//! A list kept in place (no allocation) up to a fixed length.

/// Up to `N` values in place, more on the heap: the views [`crate::OpIo::views`] hands a kernel
/// on every run of every step (a step's inputs and outputs are a handful, so a run of a graph
/// of tiny ops — TOSA's integer softmax: dozens of steps on a few elements — allocates nothing
/// for them; two `Vec`s per step had been ~4 % of such a run), and the coalesced dims, strides
/// and counters a kernel makes on every run (a reduction's layout, a broadcast's plan).
#[derive(Clone, Debug)]
pub struct Seq<T, const N: usize> {
    len: usize,
    inline: [T; N],
    heap: Vec<T>,
}

impl<T: Default, const N: usize> Seq<T, N> {
    /// An empty list.
    pub fn new() -> Self {
        Seq { len: 0, inline: std::array::from_fn(|_| T::default()), heap: Vec::new() }
    }

    /// `n` copies of `v`.
    pub fn filled(n: usize, v: T) -> Self
    where
        T: Clone,
    {
        let mut s = Seq::new();
        (0..n).for_each(|_| s.push(v.clone()));
        s
    }

    /// Removes and returns the last value; back to `N` values, the list moves back in place.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        if self.len < N {
            return Some(std::mem::take(&mut self.inline[self.len]));
        }
        let v = self.heap.pop();
        if self.len == N {
            self.inline.iter_mut().zip(self.heap.drain(..)).for_each(|(i, h)| *i = h);
        }
        v
    }

    /// Appends `v`; past `N` values the list moves to the heap.
    pub fn push(&mut self, v: T) {
        if self.len < N {
            self.inline[self.len] = v;
        } else {
            if self.len == N {
                self.heap.reserve(2 * N + 1);
                self.heap.extend(self.inline.iter_mut().map(std::mem::take));
            }
            self.heap.push(v);
        }
        self.len += 1;
    }
}

impl<T: Default, const N: usize> Default for Seq<T, N> {
    fn default() -> Self {
        Seq::new()
    }
}

impl<T, const N: usize> std::ops::Deref for Seq<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self.len <= N {
            true => &self.inline[..self.len],
            false => &self.heap,
        }
    }
}

impl<T, const N: usize> std::ops::DerefMut for Seq<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self.len <= N {
            true => &mut self.inline[..self.len],
            false => &mut self.heap,
        }
    }
}

impl<T: Default, const N: usize> FromIterator<T> for Seq<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut s = Seq::new();
        iter.into_iter().for_each(|v| s.push(v));
        s
    }
}

impl<'s, T, const N: usize> IntoIterator for &'s Seq<T, N> {
    type Item = &'s T;
    type IntoIter = std::slice::Iter<'s, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'s, T, const N: usize> IntoIterator for &'s mut Seq<T, N> {
    type Item = &'s mut T;
    type IntoIter = std::slice::IterMut<'s, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::Seq;

    #[test]
    fn values_stay_in_order_in_place_and_on_the_heap() {
        for n in 0..12 {
            let mut s: Seq<String, 4> = Seq::new();
            for k in 0..n {
                s.push(k.to_string());
            }
            let want: Vec<String> = (0..n).map(|k| k.to_string()).collect();
            assert_eq!(&s[..], &want[..], "{n} values");
            s.iter_mut().for_each(|v| v.push('!'));
            assert!(s.iter().all(|v| v.ends_with('!')));
            assert_eq!((&s).into_iter().count(), n);
        }
        let c: Seq<u8, 2> = (1..=5).collect();
        assert_eq!(&c[..], &[1, 2, 3, 4, 5]);
    }

    /// Pushes and pops across the inline capacity keep every value in order.
    #[test]
    fn values_spill_to_the_heap_and_back() {
        let mut s: Seq<usize, 6> = Seq::new();
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
        assert_eq!(&Seq::<u8, 6>::filled(10, 2)[..], &[2; 10]);
    }
}
