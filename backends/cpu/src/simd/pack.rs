//! Weights packed into GEMM panels (`kernels::gemm::PackedB`, `quant::gemm::QPackedB`): a
//! transpose of the row-major `N×K` weights into panels of `nr` columns, one 32-bit word (a
//! float, or four consecutive int8 weights) per column and panel row, 16 weight rows at a time
//! with AVX-512 gathers (one gather reads one word of 16 rows), 8 rows at a time by 8×8
//! transposes in AVX2 registers, the rest by a plain loop; and the AVX2 int8 kernel's pair
//! panels the same way, in 16-bit units.
//!
//! The plain loops took ~11 instructions per weight (one bounds-checked store per value down a
//! panel): 45 M of the 58 M instructions of EfficientNet-B0's prepare, 23 M of the 44 M of the
//! int8 MobileNetV2's.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use super::{Avx2Token, Avx512Token};

/// Writes rows `j0 .. j0 + cols` of `w` (row-major, `k` values a row) into the panel `dst`
/// (`k` rows of `nr` floats): `dst[kk * nr + c] = w[(j0 + c) * k + kk]`. Columns `cols .. nr`
/// of `dst` are left as they are.
///
/// # Panics
/// If `cols > nr`, `dst` holds fewer than `k * nr` values or `w` fewer than `(j0 + cols) * k`.
pub(crate) fn pack_panel(w: &[f32], k: usize, j0: usize, cols: usize, nr: usize, dst: &mut [f32]) {
    assert!(w.len() >= (j0 + cols) * k, "pack_panel: {} weights, rows {j0}..{} of {k}", w.len(), j0 + cols);
    pack_words(bytemuck::cast_slice(w), 4 * k, k, j0, cols, nr, 0, bytemuck::cast_slice_mut(dst));
}

/// The word transpose under [`pack_panel`], in bytes: word `(q, c)` of the panel `dst` (bytes
/// `4 (q nr + c) ..+ 4`) is the word at byte `4 q` of row `j0 + c` of `src` (rows of `row_bytes`
/// bytes), XORed with `xor`, for `q < words`, `c < cols`; other columns are left as they are.
///
/// # Panics
/// If `cols > nr`, `4 * words > row_bytes`, `dst` holds fewer than `4 * words * nr` bytes or
/// `src` ends before row `j0 + cols`.
pub(crate) fn pack_words(src: &[u8], row_bytes: usize, words: usize, j0: usize, cols: usize, nr: usize, xor: u32, dst: &mut [u8]) {
    assert!(
        cols <= nr && 4 * words <= row_bytes && dst.len() >= 4 * words * nr && src.len() >= (j0 + cols) * row_bytes,
        "pack_words: {cols} of {nr} columns, {words} words of rows of {row_bytes} bytes from row {j0} of {} bytes, panel of {} bytes",
        src.len(),
        dst.len()
    );
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = Avx512Token::new() {
        // Gather offsets are 32-bit: 16 rows must be addressable.
        if words > 0 && row_bytes.checked_mul(16).is_some_and(|v| v <= i32::MAX as usize) {
            // SAFETY: the token proves AVX-512F; the bounds are asserted above.
            done = unsafe { gather16(t, src, row_bytes, words, j0, cols, nr, xor, dst) };
        }
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = Avx2Token::new() {
        if words > 0 && cols - done >= 8 {
            // SAFETY: the token proves AVX2; the bounds are asserted above.
            done += unsafe { words8(t, src, row_bytes, words, j0 + done, cols - done, nr, xor, &mut dst[4 * done..]) };
        }
    }
    for c in done..cols {
        word_column(&src[(j0 + c) * row_bytes..][..4 * words], 0, c, nr, xor, dst);
    }
}

/// Words `q0..` of one row (`row`, whole words) into column `c` of a [`pack_words`] panel.
fn word_column(row: &[u8], q0: usize, c: usize, nr: usize, xor: u32, dst: &mut [u8]) {
    let x = xor.to_le_bytes();
    for (q, word) in row.chunks_exact(4).enumerate().skip(q0) {
        let at = 4 * (q * nr + c);
        for (d, (&b, &m)) in dst[at..at + 4].iter_mut().zip(word.iter().zip(&x)) {
            *d = b ^ m;
        }
    }
}

/// Words `q0..` of one row (`row`, whole words) into column `c` of a [`pack_pairs`] panel.
fn pair_column(row: &[u8], q0: usize, c: usize, nr: usize, xor: u8, dst: &mut [u8]) {
    for (q, w) in row.chunks_exact(4).enumerate().skip(q0) {
        let (a, b) = (2 * (2 * q * nr + c), 2 * ((2 * q + 1) * nr + c));
        dst[a] = w[0] ^ xor;
        dst[a + 1] = w[1] ^ xor;
        dst[b] = w[2] ^ xor;
        dst[b + 1] = w[3] ^ xor;
    }
}

/// [`pack_words`]' whole groups of 16 columns; returns how many columns it wrote.
///
/// # Safety
/// The CPU has AVX-512F; the bounds [`pack_words`] asserts hold, and `16 * row_bytes <= i32::MAX`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn gather16(_: Avx512Token, src: &[u8], row_bytes: usize, words: usize, j0: usize, cols: usize, nr: usize, xor: u32, dst: &mut [u8]) -> usize {
    let rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(row_bytes as i32));
    let mask = _mm512_set1_epi32(xor as i32);
    let mut c0 = 0;
    while c0 + 16 <= cols {
        // SAFETY: row `j0 + c0` starts inside `src` (`c0 < cols`).
        let base = unsafe { src.as_ptr().add((j0 + c0) * row_bytes) };
        for q in 0..words {
            // SAFETY: lane `r` reads bytes `(j0 + c0 + r) row_bytes + 4 q ..+ 4`, `r < 16`,
            // `c0 + 16 <= cols`, `4 q + 4 <= row_bytes`: inside `src`; the offsets `r row_bytes`
            // fit in i32 (caller). Gathers have no alignment requirement.
            let v = unsafe { _mm512_i32gather_epi32::<1>(rows, base.add(4 * q) as *const i32) };
            // SAFETY: bytes `4 (q nr + c0) ..+ 64` are inside `dst`: `c0 + 16 <= cols <= nr`,
            // `q < words`.
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(4 * (q * nr + c0)) as *mut _, _mm512_xor_si512(v, mask)) };
        }
        c0 += 16;
    }
    c0
}

/// [`pack_words`]' whole groups of 8 columns on AVX2, from row `j0` on into `dst` (whose byte 0
/// is column 0's): 32 bytes (8 words) of each of 8 rows transposed as an 8×8 matrix of words in
/// registers (AVX2's gathers are microcoded on Zen and took longer than the plain loop's
/// stores); returns how many columns it wrote.
///
/// # Safety
/// The CPU has AVX2; the bounds [`pack_words`] asserts hold for these `j0`, `cols` and `dst`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn words8(_: Avx2Token, src: &[u8], row_bytes: usize, words: usize, j0: usize, cols: usize, nr: usize, xor: u32, dst: &mut [u8]) -> usize {
    let mask = _mm256_set1_epi32(xor as i32);
    let mut c0 = 0;
    while c0 + 8 <= cols {
        // Rows j0 + c0 + r, r < 8: inside `src` (`c0 + 8 <= cols`).
        let rows: [&[u8]; 8] = std::array::from_fn(|r| &src[(j0 + c0 + r) * row_bytes..][..4 * words]);
        let mut q = 0;
        while q + 8 <= words {
            // SAFETY: bytes 4q ..+ 32 of each row: `4 (q + 8) <= 4 words`, the rows' length.
            let v: [__m256i; 8] = std::array::from_fn(|r| unsafe { _mm256_loadu_si256(rows[r].as_ptr().add(4 * q) as *const _) });
            // Per 128-bit lane: two rows' words interleaved, then four rows' (words w and w + 4
            // of rows 0..3 in the two lanes), then the lanes of rows 0..3 and 4..7 joined.
            let t: [__m256i; 8] = std::array::from_fn(|i| {
                let (u, w) = (v[2 * (i / 2)], v[2 * (i / 2) + 1]);
                if i % 2 == 0 { _mm256_unpacklo_epi32(u, w) } else { _mm256_unpackhi_epi32(u, w) }
            });
            let u: [__m256i; 8] = std::array::from_fn(|i| {
                // i: rows 4·(i / 4) .., word i % 4 (and i % 4 + 4).
                let (h, j) = (i / 4, i % 4);
                let (a, b) = (t[4 * h + j / 2], t[4 * h + 2 + j / 2]);
                if j % 2 == 0 { _mm256_unpacklo_epi64(a, b) } else { _mm256_unpackhi_epi64(a, b) }
            });
            for w in 0..8 {
                let col = if w < 4 { _mm256_permute2x128_si256::<0x20>(u[w], u[4 + w]) } else { _mm256_permute2x128_si256::<0x31>(u[w - 4], u[w]) };
                // SAFETY: word q + w < words, columns c0 .. c0 + 8 <= nr: bytes
                // `4 ((q + w)·nr + c0) ..+ 32` are inside `dst` (asserted by the caller).
                unsafe { _mm256_storeu_si256(dst.as_mut_ptr().add(4 * ((q + w) * nr + c0)) as *mut _, _mm256_xor_si256(col, mask)) };
            }
            q += 8;
        }
        for (r, row) in rows.iter().enumerate() {
            word_column(row, q, c0 + r, nr, xor, dst);
        }
        c0 += 8;
    }
    c0
}

/// The int8 pair panels of `quant::gemm::QPackedB` (AVX2's `vpmaddwd` layout, widened as the
/// kernel loads them): for `q < words` and `c < cols`, the 4 bytes at byte `4 q` of row `j0 + c`
/// of `src` (rows of `row_bytes` bytes), XORed with `xor`, become the pairs `dst[2 (2q·nr + c)
/// ..+ 2]` (its bytes 0 and 1) and `dst[2 ((2q+1)·nr + c) ..+ 2]` (bytes 2 and 3). Other
/// columns are left as they are.
///
/// # Panics
/// If `cols > nr`, `4 * words > row_bytes`, `dst` holds fewer than `4 * words * nr` bytes or
/// `src` ends before row `j0 + cols`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_pairs(src: &[u8], row_bytes: usize, words: usize, j0: usize, cols: usize, nr: usize, xor: u8, dst: &mut [u8]) {
    assert!(
        cols <= nr && 4 * words <= row_bytes && dst.len() >= 4 * words * nr && src.len() >= (j0 + cols) * row_bytes,
        "pack_pairs: {cols} of {nr} columns, {words} words of rows of {row_bytes} bytes from row {j0} of {} bytes, panel of {} bytes",
        src.len(),
        dst.len()
    );
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = Avx2Token::new() {
        if words > 0 {
            // SAFETY: the token proves AVX2; the bounds are asserted above.
            done = unsafe { pairs8(t, src, row_bytes, words, j0, cols, nr, xor, dst) };
        }
    }
    for c in done..cols {
        pair_column(&src[(j0 + c) * row_bytes..][..4 * words], 0, c, nr, xor, dst);
    }
}

/// [`pack_pairs`]' whole groups of 8 columns: 16 bytes (8 pairs) of each of 8 rows transposed
/// as an 8×8 matrix of 16-bit pairs in registers, each pair index to its group row of the panel
/// (a gather of one word from 8 rows per step was 13 % of an int8 MobileNetV2's prepare).
///
/// # Safety
/// The CPU has AVX2; the bounds [`pack_pairs`] asserts hold.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn pairs8(_: Avx2Token, src: &[u8], row_bytes: usize, words: usize, j0: usize, cols: usize, nr: usize, xor: u8, dst: &mut [u8]) -> usize {
    let mask = _mm_set1_epi8(xor as i8);
    let mut c0 = 0;
    while c0 + 8 <= cols {
        // Rows j0 + c0 + r, r < 8: inside `src` (`c0 + 8 <= cols`).
        let rows: [&[u8]; 8] = std::array::from_fn(|r| &src[(j0 + c0 + r) * row_bytes..][..4 * words]);
        let mut q = 0;
        while q + 4 <= words {
            // SAFETY: bytes 4q ..+ 16 of each row: `4 (q + 4) <= 4 words`, the rows' length.
            let x: [__m128i; 8] = std::array::from_fn(|r| unsafe { _mm_loadu_si128(rows[r].as_ptr().add(4 * q) as *const _) });
            // Pairs p of rows r: [r0p0 r1p0 r0p1 r1p1 ..], then 4 rows a pair, then 8.
            let a: [__m128i; 8] = std::array::from_fn(|i| {
                let (u, v) = (x[2 * (i / 2)], x[2 * (i / 2) + 1]);
                if i % 2 == 0 { _mm_unpacklo_epi16(u, v) } else { _mm_unpackhi_epi16(u, v) }
            });
            let b: [__m128i; 8] = std::array::from_fn(|i| {
                // i: rows 4·(i / 4) .., pairs 2·(i % 4) ..
                let (h, j) = (i / 4, i % 4);
                let (u, v) = (a[4 * h + j / 2], a[4 * h + 2 + j / 2]);
                if j % 2 == 0 { _mm_unpacklo_epi32(u, v) } else { _mm_unpackhi_epi32(u, v) }
            });
            for p in 0..8 {
                let (u, v) = (b[p / 2], b[4 + p / 2]);
                let col = if p % 2 == 0 { _mm_unpacklo_epi64(u, v) } else { _mm_unpackhi_epi64(u, v) };
                // SAFETY: group 2q + p < 2 words, columns c0 .. c0 + 8 <= nr: bytes
                // `2 ((2q + p)·nr + c0) ..+ 16` are inside `dst` (asserted by the caller).
                unsafe { _mm_storeu_si128(dst.as_mut_ptr().add(2 * ((2 * q + p) * nr + c0)) as *mut _, _mm_xor_si128(col, mask)) };
            }
            q += 4;
        }
        for (r, row) in rows.iter().enumerate() {
            pair_column(row, q, c0 + r, nr, xor, dst);
        }
        c0 += 8;
    }
    c0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column count around the 16-column groups, `k` from 0 up, against the definition.
    #[test]
    fn float_panels_hold_the_transposed_rows() {
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

    /// Pairs of bytes split from their words, with and without XOR, around the 8-column groups.
    #[test]
    fn pair_panels_hold_the_split_words() {
        for xor in [0u8, 0x80] {
            for (nr, cols, row_bytes, words) in [(16usize, 16usize, 8usize, 2usize), (16, 13, 12, 3), (16, 7, 4, 1), (8, 8, 9, 2), (32, 0, 4, 1), (16, 16, 16, 4), (16, 11, 28, 7), (24, 24, 40, 9)] {
                let j0 = 3;
                let src: Vec<u8> = (0..(j0 + cols) * row_bytes).map(|i| (i * 37 + 5) as u8).collect();
                let mut dst = vec![0xAAu8; 4 * words * nr];
                pack_pairs(&src, row_bytes, words, j0, cols, nr, xor, &mut dst);
                for g in 0..2 * words {
                    for c in 0..nr {
                        for b in 0..2 {
                            let want = if c < cols { src[(j0 + c) * row_bytes + 2 * g + b] ^ xor } else { 0xAA };
                            assert_eq!(dst[2 * (g * nr + c) + b], want, "xor {xor:#x} nr {nr} cols {cols}: group {g} column {c} value {b}");
                        }
                    }
                }
            }
        }
    }

    /// Byte rows longer than the words taken (int8 rows of `k` bytes, `4 * words <= k`), XOR.
    #[test]
    fn word_panels_hold_the_transposed_words() {
        for (nr, cols, row_bytes, words, xor) in [(16usize, 16usize, 8usize, 2usize, 0x8080_8080u32), (32, 21, 13, 3, 0), (64, 64, 4, 1, 0x8080_8080), (16, 5, 4, 1, 0x8080_8080), (16, 16, 32, 8, 0x8080_8080), (24, 19, 77, 19, 0)] {
            let j0 = 3;
            let src: Vec<u8> = (0..(j0 + cols) * row_bytes).map(|i| (i * 7 + 1) as u8).collect();
            let mut dst = vec![0xAAu8; 4 * words * nr];
            pack_words(&src, row_bytes, words, j0, cols, nr, xor, &mut dst);
            let x = xor.to_le_bytes();
            for q in 0..words {
                for c in 0..nr {
                    for b in 0..4 {
                        let want = if c < cols { src[(j0 + c) * row_bytes + 4 * q + b] ^ x[b] } else { 0xAA };
                        assert_eq!(dst[4 * (q * nr + c) + b], want, "nr {nr} cols {cols}: word {q} column {c} byte {b}");
                    }
                }
            }
        }
    }
}
