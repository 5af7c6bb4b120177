//! Ops that scan along one axis: CUMSUM and TOPK_V2.
#![forbid(unsafe_code)]

use std::cmp::Ordering;

/// Element types CUMSUM adds (wrapping for integers, as C++'s `+=` on TFLite's int types does
/// not, but overflow there is undefined).
pub trait CumElem: Copy + Default {
    /// `self + b`.
    fn add(self, b: Self) -> Self;
}

impl CumElem for f32 {
    fn add(self, b: Self) -> Self {
        self + b
    }
}

impl CumElem for i32 {
    fn add(self, b: Self) -> Self {
        self.wrapping_add(b)
    }
}

impl CumElem for i64 {
    fn add(self, b: Self) -> Self {
        self.wrapping_add(b)
    }
}

/// CUMSUM over the middle dim of `input` viewed as `[outer, n, inner]`. `exclusive` leaves out
/// the current element (the first sum is 0); `reverse` sums from the end.
pub fn cumsum<T: CumElem>(input: &[T], outer: usize, n: usize, inner: usize, exclusive: bool, reverse: bool, out: &mut [T]) {
    assert_eq!(input.len(), outer * n * inner, "cumsum: input length");
    assert_eq!(out.len(), input.len(), "cumsum: output length");
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = T::default();
            for step in 0..n {
                let j = if reverse { n - 1 - step } else { step };
                let at = (o * n + j) * inner + i;
                if exclusive {
                    out[at] = acc;
                    acc = acc.add(input[at]);
                } else {
                    acc = acc.add(input[at]);
                    out[at] = acc;
                }
            }
        }
    }
}

/// TOPK_V2 over rows of `n`: the `k` largest values of each row, largest first, and their
/// positions; equal values keep their order (the lower index first), as TFLite's TopContainer.
/// NaN compares as neither larger nor smaller, so it stays where the stable sort leaves it.
pub fn top_k<T: PartialOrd + Copy>(input: &[T], n: usize, k: usize, values: &mut [T], indices: &mut [i64]) {
    let rows = input.len().checked_div(n).unwrap_or(0);
    assert_eq!(values.len(), rows * k, "top_k: values length");
    assert_eq!(indices.len(), rows * k, "top_k: indices length");
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for r in 0..rows {
        let row = &input[r * n..(r + 1) * n];
        order.clear();
        order.extend(0..n);
        // Stable: ties (and incomparable pairs) keep ascending index order.
        order.sort_by(|&a, &b| row[b].partial_cmp(&row[a]).unwrap_or(Ordering::Equal));
        for (j, &i) in order[..k].iter().enumerate() {
            values[r * k + j] = row[i];
            indices[r * k + j] = i as i64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumsum_modes() {
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let mut o = [0.0; 4];
        cumsum(&x, 1, 4, 1, false, false, &mut o);
        assert_eq!(o, [1.0, 3.0, 6.0, 10.0]);
        cumsum(&x, 1, 4, 1, true, false, &mut o);
        assert_eq!(o, [0.0, 1.0, 3.0, 6.0]);
        cumsum(&x, 1, 4, 1, false, true, &mut o);
        assert_eq!(o, [10.0, 9.0, 7.0, 4.0]);
        cumsum(&x, 1, 4, 1, true, true, &mut o);
        assert_eq!(o, [9.0, 7.0, 4.0, 0.0]);
    }

    #[test]
    fn top_k_keeps_the_first_of_ties() {
        let x = [1, 5, 3, 5, 2, 9, 9, 0];
        let (mut v, mut i) = ([0; 4], [0i64; 4]);
        top_k(&x, 4, 2, &mut v, &mut i);
        assert_eq!(v, [5, 5, 9, 9]);
        assert_eq!(i, [1, 3, 1, 2]);
    }
}
