//! Element-wise ops: broadcasting binary ops, softmax.

use super::Cx;
use crate::shape::fmt_dims;
use crate::CompileError;

/// NumPy broadcasting of two shapes (right-aligned; a dim of 1 stretches). `None` if incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i < rank - a.len() { 1 } else { a[i - (rank - a.len())] };
        let db = if i < rank - b.len() { 1 } else { b[i - (rank - b.len())] };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

pub(super) fn binary(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (a, b) = (cx.input(0)?, cx.input(1)?);
    let (ta, tb) = (cx.dtype(0)?, cx.dtype(1)?);
    if ta != tb {
        return Err(cx.input_err(1, format!("has type {tb} but input 0 has {ta}; both must match")));
    }
    broadcast_shapes(a, b)
        .ok_or_else(|| cx.err(format!("shapes {} and {} cannot be broadcast together", fmt_dims(a), fmt_dims(b))))
}

pub(super) fn softmax(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    if x.is_empty() {
        return Err(cx.input_err(0, "softmax needs at least one dim"));
    }
    Ok(x.to_vec())
}

#[cfg(test)]
mod tests {
    use super::broadcast_shapes;

    #[test]
    fn broadcasting_is_numpy_like() {
        assert_eq!(broadcast_shapes(&[1, 4, 5, 3], &[3]), Some(vec![1, 4, 5, 3]));
        assert_eq!(broadcast_shapes(&[1, 4, 5, 3], &[1, 1, 5, 1]), Some(vec![1, 4, 5, 3]));
        assert_eq!(broadcast_shapes(&[], &[2, 2]), Some(vec![2, 2]));
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 2]), None);
    }
}
