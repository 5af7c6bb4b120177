//! The AVX-512 inner loop of MAX_POOL_2D: one output pixel's channels, 16 at a time (the last
//! step masked), each the maximum over the window's in-bounds cells. Pools of few channels
//! (BlazeFace's 2×2 pools of 28) otherwise ran a 16-lane loop and a scalar tail per cell.
#![deny(unsafe_op_in_unsafe_fn)]

use super::Avx512Token;

/// `px[ch] = max(f32::MIN, image[(y, x, ch)] for y in ys, x in xs)`, a cell's value taken when
/// it is greater (so a NaN cell is skipped, as TFLite's `std::max(acc, v)` skips it), over an
/// image `in_w` pixels wide with `px.len()` channels.
///
/// # Panics
/// If the window's last cell lies outside `image`.
pub(crate) fn max_window(t: Avx512Token, image: &[f32], in_w: usize, ys: (usize, usize), xs: (usize, usize), px: &mut [f32]) {
    let c = px.len();
    if ys.0 >= ys.1 || xs.0 >= xs.1 {
        px.fill(f32::MIN);
        return;
    }
    assert!(xs.1 <= in_w && ((ys.1 - 1) * in_w + xs.1) * c <= image.len(), "max pool window outside the image");
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        // SAFETY: the token proves AVX-512F; the assert bounds every cell's c values.
        unsafe { avx512::max_window(image.as_ptr(), in_w, ys, xs, px.as_mut_ptr(), c) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, image, in_w);
        unreachable!("an Avx512Token cannot exist off x86_64");
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use core::arch::x86_64::*;

    /// # Safety
    /// AVX-512F; cells `(y, x)` for y in ys, x in xs hold `c` values at `image + (y·in_w + x)·c`;
    /// `px` points at `c` writable values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn max_window(image: *const f32, in_w: usize, ys: (usize, usize), xs: (usize, usize), px: *mut f32, c: usize) {
        let mut ch = 0;
        while ch < c {
            let m: __mmask16 = if c - ch >= 16 { 0xffff } else { ((1u32 << (c - ch)) - 1) as u16 };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Equals the scalar rule (`v > acc ? v : acc` from `f32::MIN`) bit for bit, NaN and -inf
    /// cells included, for channel counts around the 16-lane steps and clipped windows.
    #[test]
    fn max_window_matches_the_scalar_rule() {
        let Some(t) = Avx512Token::new() else {
            eprintln!("skipped: no AVX-512");
            return;
        };
        let specials = [f32::NAN, f32::NEG_INFINITY, -0.0, 0.0, f32::INFINITY];
        for c in [1, 7, 16, 17, 28, 33, 64] {
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
                assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "c {c} window {ys:?} {xs:?}");
            }
        }
    }
}
