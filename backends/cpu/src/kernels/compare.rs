//! Comparisons (EQUAL … GREATER_EQUAL), LOGICAL_AND / LOGICAL_OR / LOGICAL_NOT and SELECT /
//! SELECT_V2, with NumPy broadcasting. Bools are bytes holding 0 or 1 (any nonzero byte reads
//! as true).
#![forbid(unsafe_code)]

use super::binary::{broadcast_rows, map_row};
use super::movement::strides;

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    /// `a == b`
    Equal,
    /// `a != b` (true when either is NaN)
    NotEqual,
    /// `a < b`
    Less,
    /// `a <= b`
    LessEqual,
    /// `a > b`
    Greater,
    /// `a >= b`
    GreaterEqual,
}

/// `out = a op b` as 0/1 bytes, broadcasting `a` (`a_shape`) and `b` (`b_shape`) to `out_shape`.
///
/// # Panics
/// When the shapes do not broadcast to `out_shape` or a length does not match its shape.
pub fn compare<T: PartialOrd + Copy + Sync>(op: CompareOp, a: &[T], a_shape: &[usize], b: &[T], b_shape: &[usize], out: &mut [u8], out_shape: &[usize]) {
    macro_rules! go {
        ($f:expr) => {
            broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| map_row(ra, rb, o, |x: T, y: T| $f(x, y) as u8))
        };
    }
    match op {
        CompareOp::Equal => go!(|x, y| x == y),
        CompareOp::NotEqual => go!(|x, y| x != y),
        CompareOp::Less => go!(|x, y| x < y),
        CompareOp::LessEqual => go!(|x, y| x <= y),
        CompareOp::Greater => go!(|x, y| x > y),
        CompareOp::GreaterEqual => go!(|x, y| x >= y),
    }
}

/// LOGICAL_AND (`and`) or LOGICAL_OR with broadcasting.
pub fn logical(and: bool, a: &[u8], a_shape: &[usize], b: &[u8], b_shape: &[usize], out: &mut [u8], out_shape: &[usize]) {
    if and {
        broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| map_row(ra, rb, o, |x: u8, y: u8| (x != 0 && y != 0) as u8))
    } else {
        broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| map_row(ra, rb, o, |x: u8, y: u8| (x != 0 || y != 0) as u8))
    }
}

/// LOGICAL_NOT.
pub fn logical_not(x: &[u8], out: &mut [u8]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = (v == 0) as u8;
    }
}

/// Strides of `shape` right-aligned against `out_shape`, 0 along broadcast dims.
fn broadcast_strides(shape: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let r = out_shape.len();
    let own = strides(shape);
    (0..r)
        .map(|i| match (i + shape.len()).checked_sub(r) {
            Some(j) if shape[j] != 1 => own[j],
            _ => 0,
        })
        .collect()
}

/// SELECT_V2: `out = cond ? x : y` with all three broadcast to `out_shape`.
///
/// # Panics
/// When a shape does not broadcast to `out_shape`.
#[allow(clippy::too_many_arguments)]
pub fn select<T: Copy>(cond: &[u8], c_shape: &[usize], x: &[T], x_shape: &[usize], y: &[T], y_shape: &[usize], out: &mut [T], out_shape: &[usize]) {
    let total: usize = out_shape.iter().product();
    assert_eq!(out.len(), total, "select: output length");
    if total == 0 {
        return;
    }
    if c_shape == out_shape && x_shape == out_shape && y_shape == out_shape {
        for (((o, &c), &a), &b) in out.iter_mut().zip(cond).zip(x).zip(y) {
            *o = if c != 0 { a } else { b };
        }
        return;
    }
    let (sc, sx, sy) = (broadcast_strides(c_shape, out_shape), broadcast_strides(x_shape, out_shape), broadcast_strides(y_shape, out_shape));
    let r = out_shape.len();
    let mut idx = vec![0usize; r];
    let (mut oc, mut ox, mut oy) = (0usize, 0usize, 0usize);
    for o in out.iter_mut() {
        *o = if cond[oc] != 0 { x[ox] } else { y[oy] };
        for d in (0..r).rev() {
            idx[d] += 1;
            oc += sc[d];
            ox += sx[d];
            oy += sy[d];
            if idx[d] < out_shape[d] {
                break;
            }
            oc -= sc[d] * out_shape[d];
            ox -= sx[d] * out_shape[d];
            oy -= sy[d] * out_shape[d];
            idx[d] = 0;
        }
    }
}

/// SELECT with a rank-1 condition: row `i` (of `row` elements) comes from `x` when `cond[i]`.
pub fn select_rows<T: Copy>(cond: &[u8], x: &[T], y: &[T], row: usize, out: &mut [T]) {
    for (i, o) in out.chunks_exact_mut(row.max(1)).enumerate().take(if row == 0 { 0 } else { cond.len() }) {
        let src = if cond[i] != 0 { x } else { y };
        o.copy_from_slice(&src[i * row..(i + 1) * row]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_broadcasts_and_handles_nan() {
        let mut o = [0u8; 4];
        compare(CompareOp::Less, &[1.0f32, 5.0], &[2, 1], &[2.0, 3.0], &[2], &mut o, &[2, 2]);
        assert_eq!(o, [1, 1, 0, 0]);
        let mut o = [0u8; 1];
        compare(CompareOp::NotEqual, &[f32::NAN], &[1], &[f32::NAN], &[1], &mut o, &[1]);
        assert_eq!(o, [1]);
    }

    #[test]
    fn select_v2_broadcasts_three_ways() {
        let mut o = [0i32; 4];
        select(&[1, 0], &[2, 1], &[1, 2], &[2], &[9], &[], &mut o, &[2, 2]);
        assert_eq!(o, [1, 2, 9, 9]);
        let mut o = [0i32; 4];
        select_rows(&[0, 1], &[1, 2, 3, 4], &[5, 6, 7, 8], 2, &mut o);
        assert_eq!(o, [5, 6, 3, 4]);
    }
}
