//! Data movement of MATRIX_DIAG, MATRIX_SET_DIAG, REVERSE_SEQUENCE and BROADCAST_TO, for every
//! element type (elements move as words of their size).
#![forbid(unsafe_code)]

use super::movement::strides;

/// `out[.., i, j] = diag[.., i]` where `i == j`, else zero; `diag` rows have `n` values.
pub fn matrix_diag<T: Copy + Default>(diag: &[T], n: usize, out: &mut [T]) {
    out.fill(T::default());
    if n == 0 {
        return;
    }
    for (d, m) in diag.chunks_exact(n).zip(out.chunks_exact_mut(n * n)) {
        for (i, &v) in d.iter().enumerate() {
            m[i * n + i] = v;
        }
    }
}

/// `out` = `input` (`[.., rows, cols]` matrices) with `out[.., i, i] = diag[.., i]`.
pub fn matrix_set_diag<T: Copy>(input: &[T], diag: &[T], rows: usize, cols: usize, out: &mut [T]) {
    out.copy_from_slice(input);
    let k = rows.min(cols);
    if k == 0 {
        return;
    }
    for (d, m) in diag.chunks_exact(k).zip(out.chunks_exact_mut(rows * cols)) {
        for (i, &v) in d.iter().enumerate() {
            m[i * cols + i] = v;
        }
    }
}

/// Reverses, for each index `b` of dim `batch_dim`, the first `lengths[b]` elements along dim
/// `seq_dim` of `input` (dims `dims`). Lengths were checked to lie in `[0, dims[seq_dim]]`.
pub fn reverse_sequence<T: Copy>(input: &[T], dims: &[usize], seq_dim: usize, batch_dim: usize, lengths: &[usize], out: &mut [T]) {
    let st = strides(dims);
    let mut idx = vec![0usize; dims.len()];
    for (flat, o) in out.iter_mut().enumerate() {
        let mut rem = flat;
        for (k, s) in st.iter().enumerate() {
            idx[k] = rem / s;
            rem %= s;
        }
        let len = lengths[idx[batch_dim]];
        let s = idx[seq_dim];
        let src = if s < len { flat - s * st[seq_dim] + (len - 1 - s) * st[seq_dim] } else { flat };
        *o = input[src];
    }
}

/// Broadcasts `input` (dims `in_dims`, right-aligned) to `out_dims`.
pub fn broadcast_to<T: Copy>(input: &[T], in_dims: &[usize], out_dims: &[usize], out: &mut [T]) {
    let rank = out_dims.len();
    let pad = rank - in_dims.len();
    // Input strides per output dim: 0 where the input is stretched (or absent).
    let ist = strides(in_dims);
    let src_stride: Vec<usize> = (0..rank).map(|d| if d < pad || in_dims[d - pad] == 1 { 0 } else { ist[d - pad] }).collect();
    let inner = out_dims.last().copied().unwrap_or(1);
    if inner == 0 || out.is_empty() {
        return;
    }
    let last_stride = src_stride.last().copied().unwrap_or(0);
    let mut idx = vec![0usize; rank.saturating_sub(1)];
    for row in out.chunks_exact_mut(inner) {
        let base: usize = idx.iter().zip(&src_stride).map(|(i, s)| i * s).sum();
        if last_stride == 0 {
            row.fill(input[base]);
        } else {
            row.copy_from_slice(&input[base..base + inner]);
        }
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < out_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_to_stretches_ones_and_missing_dims() {
        let mut out = [0; 12];
        broadcast_to(&[1, 2, 3], &[1, 3], &[2, 2, 3], &mut out);
        assert_eq!(out, [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
        let mut out = [0; 6];
        broadcast_to(&[7, 8], &[2, 1], &[2, 3], &mut out);
        assert_eq!(out, [7, 7, 7, 8, 8, 8]);
    }

    #[test]
    fn reverse_sequence_reverses_only_the_prefix() {
        // [batch 2, seq 4]
        let mut out = [0; 8];
        reverse_sequence(&[1, 2, 3, 4, 5, 6, 7, 8], &[2, 4], 1, 0, &[3, 0], &mut out);
        assert_eq!(out, [3, 2, 1, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn set_diag_on_wide_matrices() {
        let mut out = [0; 6];
        matrix_set_diag(&[1, 2, 3, 4, 5, 6], &[9, 8], 2, 3, &mut out);
        assert_eq!(out, [9, 2, 3, 4, 8, 6]);
    }
}
