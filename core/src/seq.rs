//! A list kept in place (no allocation) up to a fixed length.

/// Up to `N` values in place, more on the heap: the views [`crate::OpIo::views`] hands a kernel
/// on every run of every step. A step's inputs and outputs are a handful, so a run of a graph
/// of tiny ops (TOSA's integer softmax: dozens of steps on a few elements) allocates nothing
/// for them; two `Vec`s per step had been ~4 % of such a run.
#[derive(Debug)]
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
}
