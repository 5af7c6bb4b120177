//! Weights packed into GEMM panels (`kernels::gemm::PackedB`): a transpose of the row-major
//! `N×K` weights into panels of `K` rows of `nr` floats, 16 weight rows at a time with AVX-512
//! gathers (one gather reads one column of 16 rows), the rest by a plain loop.
//!
//! The plain loop took ~11 instructions per weight (a store per value down a panel, each
//! bounds-checked): 45 M of the 58 M instructions of EfficientNet-B0's prepare.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use super::Avx512Token;

/// Writes rows `j0 .. j0 + cols` of `w` (row-major, `k` values a row) into the panel `dst`
/// (`k` rows of `nr` floats): `dst[kk * nr + c] = w[(j0 + c) * k + kk]`. Columns `cols .. nr`
/// of `dst` are left as they are.
///
/// # Panics
/// If `cols > nr`, `dst` holds fewer than `k * nr` values or `w` fewer than `(j0 + cols) * k`.
pub(crate) fn pack_panel(w: &[f32], k: usize, j0: usize, cols: usize, nr: usize, dst: &mut [f32]) {
    assert!(cols <= nr && dst.len() >= k * nr && w.len() >= (j0 + cols) * k, "pack_panel: {cols} of {nr} columns, k {k}, {} weights from row {j0}, panel of {}", w.len(), dst.len());
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = Avx512Token::new() {
        // Gather offsets are 32-bit: 16 rows of `k` floats must be addressable.
        if k > 0 && k.checked_mul(16).is_some_and(|v| v <= i32::MAX as usize) {
            // SAFETY: the token proves AVX-512F; the bounds are asserted above.
            done = unsafe { gather16(t, w, k, j0, cols, nr, dst) };
        }
    }
    for c in done..cols {
        let src = &w[(j0 + c) * k..][..k];
        for (row, &v) in dst.chunks_exact_mut(nr).zip(src) {
            row[c] = v;
        }
    }
}

/// [`pack_panel`]'s whole groups of 16 columns; returns how many columns it wrote.
///
/// # Safety
/// The CPU has AVX-512F; `cols <= nr`, `dst.len() >= k * nr`, `w.len() >= (j0 + cols) * k`
/// and `16 * k <= i32::MAX`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gather16(_: Avx512Token, w: &[f32], k: usize, j0: usize, cols: usize, nr: usize, dst: &mut [f32]) -> usize {
    let rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(k as i32));
    let mut c0 = 0;
    while c0 + 16 <= cols {
        // SAFETY: row `j0 + c0` starts inside `w` (`c0 < cols`).
        let base = unsafe { w.as_ptr().add((j0 + c0) * k) };
        for kk in 0..k {
            // SAFETY: lane `r` reads `w[(j0 + c0 + r) * k + kk]`, `r < 16`, `c0 + 16 <= cols`,
            // `kk < k`: inside `w`; the offsets `r * k` fit in i32 (caller).
            let v = unsafe { _mm512_i32gather_ps::<4>(rows, base.add(kk)) };
            // SAFETY: `dst[kk * nr + c0 .. + 16]` is inside `dst`: `c0 + 16 <= cols <= nr`, `kk < k`.
            unsafe { _mm512_storeu_ps(dst.as_mut_ptr().add(kk * nr + c0), v) };
        }
        c0 += 16;
    }
    c0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column count around the 16-column groups, `k` from 0 up, against the definition.
    #[test]
    fn panels_hold_the_transposed_rows() {
        for nr in [8usize, 16, 32] {
            for cols in 0..=nr {
                for k in [0usize, 1, 3, 17, 40] {
                    let j0 = 2;
                    let w: Vec<f32> = (0..(j0 + cols) * k).map(|i| i as f32 + 0.5).collect();
                    let mut dst = vec![-1.0f32; k * nr];
                    pack_panel(&w, k, j0, cols, nr, &mut dst);
                    for kk in 0..k {
                        for c in 0..nr {
                            let want = if c < cols { w[(j0 + c) * k + kk] } else { -1.0 };
                            assert_eq!(dst[kk * nr + c], want, "nr {nr} cols {cols} k {k}: row {kk} column {c}");
                        }
                    }
                }
            }
        }
    }
}
