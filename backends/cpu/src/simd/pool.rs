//! The SIMD inner loops of MAX_POOL_2D and AVERAGE_POOL_2D (AVX-512, 16 lanes, and AVX2, 8
//! lanes): one output pixel's channels a vector at a time (the last step masked). Max: the
//! maximum over the window's in-bounds cells; pools of few channels (BlazeFace's 2×2 pools of
//! 28) otherwise ran a vector loop and a scalar tail per cell. Average: one nine-cell step of
//! XNNPACK's sum, which the compiler's baseline build ran four lanes at a time (selfie
//! segmentation's ten global pools).
#![deny(unsafe_op_in_unsafe_fn)]

use super::VecIsa;

/// `px[ch] = max(f32::MIN, image[(y, x, ch)] for y in ys, x in xs)`, a cell's value taken when
/// it is greater (so a NaN cell is skipped, as TFLite's `std::max(acc, v)` skips it), over an
/// image `in_w` pixels wide with `px.len()` channels.
///
/// # Panics
/// If the window's last cell lies outside `image`.
pub(crate) fn max_window(t: VecIsa, image: &[f32], in_w: usize, ys: (usize, usize), xs: (usize, usize), px: &mut [f32]) {
    let c = px.len();
    if ys.0 >= ys.1 || xs.0 >= xs.1 {
        px.fill(f32::MIN);
        return;
    }
    assert!(xs.1 <= in_w && ((ys.1 - 1) * in_w + xs.1) * c <= image.len(), "max pool window outside the image");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves the instruction set; the assert bounds every cell's c values.
    unsafe {
        match t {
            VecIsa::Avx512(_) => avx512::max_window(image.as_ptr(), in_w, ys, xs, px.as_mut_ptr(), c),
            VecIsa::Avx2(_) => avx2::max_window(image.as_ptr(), in_w, ys, xs, px.as_mut_ptr(), c),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, image, in_w);
        unreachable!("a SIMD token cannot exist off x86_64");
    }
}

/// `acc[ch] += ((v2 + v3) + (v4 + v5)) + (((v0 + v1) + v8) + (v6 + v7))` at channel `ch` of
/// the nine cells `v` (XNNPACK's sum of one nine-cell step of an average pool), for every `ch <
/// acc.len()`.
///
/// # Panics
/// If a cell holds fewer values than `acc`.
pub(crate) fn avg_step(t: VecIsa, v: [&[f32]; 9], acc: &mut [f32]) {
    let n = acc.len();
    assert!(v.iter().all(|c| c.len() >= n), "average pool cell shorter than its channels");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves the instruction set; the assert bounds the n values read from
    // each cell.
    unsafe {
        match t {
            VecIsa::Avx512(_) => avx512::avg_step(v.map(<[f32]>::as_ptr), acc.as_mut_ptr(), n),
            VecIsa::Avx2(_) => avx2::avg_step(v.map(<[f32]>::as_ptr), acc.as_mut_ptr(), n),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, v);
        unreachable!("a SIMD token cannot exist off x86_64");
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::super::lane_mask16;
    use core::arch::x86_64::*;

    /// # Safety
    /// AVX-512F; each of `v` points at `n` readable values and `acc` at `n` writable ones.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avg_step(v: [*const f32; 9], acc: *mut f32, n: usize) {
        let mut ch = 0;
        while ch < n {
            let m: __mmask16 = lane_mask16(n, ch / 16);
            // SAFETY: lanes under `m` are values ch.. < n of each cell and of acc (contract).
            let x: [__m512; 9] = std::array::from_fn(|i| unsafe { _mm512_maskz_loadu_ps(m, v[i].add(ch)) });
            let a = unsafe { _mm512_maskz_loadu_ps(m, acc.add(ch)) };
            let s = _mm512_add_ps(
                _mm512_add_ps(_mm512_add_ps(x[2], x[3]), _mm512_add_ps(x[4], x[5])),
                _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x[0], x[1]), x[8]), _mm512_add_ps(x[6], x[7])),
            );
            // SAFETY: as above.
            unsafe { _mm512_mask_storeu_ps(acc.add(ch), m, _mm512_add_ps(a, s)) };
            ch += 16;
        }
    }

    /// # Safety
    /// AVX-512F; cells `(y, x)` for y in ys, x in xs hold `c` values at `image + (y·in_w + x)·c`;
    /// `px` points at `c` writable values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn max_window(image: *const f32, in_w: usize, ys: (usize, usize), xs: (usize, usize), px: *mut f32, c: usize) {
        let mut ch = 0;
        while ch < c {
            let m: __mmask16 = lane_mask16(c, ch / 16);
            let mut acc = _mm512_set1_ps(f32::MIN);
            for y in ys.0..ys.1 {
                for x in xs.0..xs.1 {
                    // SAFETY: lanes under `m` are channels ch.. < c of an in-bounds cell (contract).
                    let v = unsafe { _mm512_maskz_loadu_ps(m, image.add((y * in_w + x) * c + ch)) };
                    // `v > acc ? v : acc`: a NaN v leaves acc.
                    acc = _mm512_max_ps(v, acc);
                }
            }
            // SAFETY: lanes under `m` are channels of px (contract).
            unsafe { _mm512_mask_storeu_ps(px.add(ch), m, acc) };
            ch += 16;
        }
    }
}

/// The AVX2 twins of [`avx512`]: 8 lanes, without masked stores (slow on Zen).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    /// # Safety
    /// AVX2; each of `v` points at `n` readable values and `acc` at `n` writable ones.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avg_step(v: [*const f32; 9], acc: *mut f32, n: usize) {
        let mut ch = 0;
        while ch + 8 <= n {
            // SAFETY: values ch..ch + 8 ≤ n of each cell and of acc (contract).
            unsafe {
                let x: [__m256; 9] = std::array::from_fn(|i| _mm256_loadu_ps(v[i].add(ch)));
                let s = _mm256_add_ps(
                    _mm256_add_ps(_mm256_add_ps(x[2], x[3]), _mm256_add_ps(x[4], x[5])),
                    _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x[0], x[1]), x[8]), _mm256_add_ps(x[6], x[7])),
                );
                _mm256_storeu_ps(acc.add(ch), _mm256_add_ps(_mm256_loadu_ps(acc.add(ch)), s));
            }
            ch += 8;
        }
        // The last < 8 channels one at a time, the same sums (masked stores are slow on Zen).
        for ch in ch..n {
            // SAFETY: value ch < n of each cell and of acc (contract).
            unsafe {
                let x: [f32; 9] = std::array::from_fn(|i| *v[i].add(ch));
                *acc.add(ch) += ((x[2] + x[3]) + (x[4] + x[5])) + (((x[0] + x[1]) + x[8]) + (x[6] + x[7]));
            }
        }
    }

    /// # Safety
    /// AVX2; cells `(y, x)` for y in ys, x in xs hold `c` values at `image + (y·in_w + x)·c`;
    /// `px` points at `c` writable values.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn max_window(image: *const f32, in_w: usize, ys: (usize, usize), xs: (usize, usize), px: *mut f32, c: usize) {
        if c < 8 {
            // SAFETY: px holds c values (contract).
            unsafe { std::slice::from_raw_parts_mut(px, c) }.fill(f32::MIN);
            for y in ys.0..ys.1 {
                for x in xs.0..xs.1 {
                    for ch in 0..c {
                        // SAFETY: channel ch < c of an in-bounds cell, and of px (contract).
                        unsafe {
                            let (v, a) = (*image.add((y * in_w + x) * c + ch), px.add(ch));
                            *a = if v > *a { v } else { *a };
                        }
                    }
                }
            }
            return;
        }
        // Vectors of 8 channels; the last one ends at c, overlapping the one before where c is
        // not a multiple of 8 (the maximum of the same cells again: no masked store, which is
        // slow on Zen).
        let mut ch = 0;
        loop {
            let mut acc = _mm256_set1_ps(f32::MIN);
            for y in ys.0..ys.1 {
                for x in xs.0..xs.1 {
                    // SAFETY: channels ch..ch + 8 ≤ c of an in-bounds cell (contract).
                    let v = unsafe { _mm256_loadu_ps(image.add((y * in_w + x) * c + ch)) };
                    // `v > acc ? v : acc`: a NaN v leaves acc.
                    acc = _mm256_max_ps(v, acc);
                }
            }
            // SAFETY: channels ch..ch + 8 ≤ c of px (contract).
            unsafe { _mm256_storeu_ps(px.add(ch), acc) };
            if ch + 8 == c {
                break;
            }
            ch = (ch + 8).min(c - 8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equals the scalar nine-cell sum bit for bit (same association), around the 16-lane steps.
    #[test]
    fn avg_step_matches_the_scalar_sum() {
        for t in VecIsa::all() {
        for n in [1, 5, 8, 9, 16, 17, 31, 64] {
            // Values spread over eight decades, so that each association rounds differently.
            let cells: Vec<Vec<f32>> = (0..9).map(|i| crate::testdata::spread_values(n, (n * 9 + i) as u64).collect()).collect();
            let start: Vec<f32> = (0..n).map(|k| k as f32 * 0.3 - 1.0).collect();
            let mut want = start.clone();
            for (k, a) in want.iter_mut().enumerate() {
                let v: Vec<f32> = cells.iter().map(|c| c[k]).collect();
                *a += ((v[2] + v[3]) + (v[4] + v[5])) + (((v[0] + v[1]) + v[8]) + (v[6] + v[7]));
            }
            let mut got = start.clone();
            avg_step(t, std::array::from_fn(|i| &cells[i][..]), &mut got);
            assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{t:?} n {n}");
        }
        }
    }

    /// Equals the scalar rule (`v > acc ? v : acc` from `f32::MIN`) bit for bit, NaN and -inf
    /// cells included, for channel counts around the 16-lane steps and clipped windows.
    #[test]
    fn max_window_matches_the_scalar_rule() {
        let specials = [f32::NAN, f32::NEG_INFINITY, -0.0, 0.0, f32::INFINITY];
        for t in VecIsa::all() {
        for c in [1, 7, 8, 9, 16, 17, 28, 33, 64] {
            let (in_h, in_w) = (4, 5);
            let image: Vec<f32> = (0..in_h * in_w * c).map(|i| if i % 7 == 3 { specials[i % 5] } else { ((i * 37 % 101) as f32 - 50.0) * 0.25 }).collect();
            for (ys, xs) in [((0, 2), (0, 2)), ((1, 4), (2, 5)), ((3, 4), (4, 5)), ((0, 4), (0, 5)), ((2, 2), (0, 1))] {
                let mut want = vec![f32::MIN; c];
                for y in ys.0..ys.1 {
                    for x in xs.0..xs.1 {
                        for (ch, a) in want.iter_mut().enumerate() {
                            let v = image[(y * in_w + x) * c + ch];
                            *a = if v > *a { v } else { *a };
                        }
                    }
                }
                let mut got = vec![1.0; c];
                max_window(t, &image, in_w, ys, xs, &mut got);
                assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{t:?} c {c} window {ys:?} {xs:?}");
            }
        }
        }
    }
}
