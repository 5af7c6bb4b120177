//! The AVX-512 row of RESIZE_BILINEAR (float): each output pixel's channels 16 at a time (the
//! last step masked), with the arithmetic of `kernels::resize::resize_bilinear` (along x
//! first, then y; separate multiplies and adds, no fused multiply-add), so the values are the
//! same bit for bit. The baseline build ran the channel loop four lanes at a time behind four
//! bounds-checked slices per pixel (selfie segmentation's 128×128×16 upsampling: 0.5 ns a value).
#![deny(unsafe_op_in_unsafe_fn)]

use super::Avx512Token;

/// One output row: pixel `k` of `out` (`d` channels each) interpolates columns `xs[k].1` (left)
/// and `xs[k].2` (right) of input rows `top` and `bottom` (`d` channels per column) at
/// `dx = xs[k].0 - xs[k].1`, then the two rows at `dy`.
///
/// # Panics
/// If `out` is not `xs.len() * d` values or a column lies outside `top` or `bottom`.
pub(crate) fn bilinear_row(t: Avx512Token, top: &[f32], bottom: &[f32], xs: &[(f32, usize, usize)], dy: f32, d: usize, out: &mut [f32]) {
    assert_eq!(out.len(), xs.len() * d, "resize row length");
    let cols = top.len().min(bottom.len()) / d.max(1);
    assert!(xs.iter().all(|&(_, l, r)| l < cols && r < cols), "resize column outside the input row");
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        // SAFETY: the token proves AVX-512F; the asserts bound every read and write.
        unsafe { avx512::bilinear_row(top.as_ptr(), bottom.as_ptr(), xs, dy, d, out.as_mut_ptr()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, top, bottom, dy);
        unreachable!("an Avx512Token cannot exist off x86_64");
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::super::lane_mask16;
    use core::arch::x86_64::*;

    /// # Safety
    /// AVX-512F; every column of `xs` holds `d` readable values at `top`/`bottom + column·d`;
    /// `out` points at `xs.len()·d` writable values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn bilinear_row(top: *const f32, bottom: *const f32, xs: &[(f32, usize, usize)], dy: f32, d: usize, out: *mut f32) {
        let vdy = _mm512_set1_ps(dy);
        for (k, &(ix, l, r)) in xs.iter().enumerate() {
            let vdx = _mm512_set1_ps(ix - l as f32);
            let mut ch = 0;
            while ch < d {
                let m: __mmask16 = lane_mask16(d, ch / 16);
                // SAFETY: lanes under `m` are channels ch.. < d of in-bounds columns (contract).
                let (tl, tr, bl, br) = unsafe {
                    (
                        _mm512_maskz_loadu_ps(m, top.add(l * d + ch)),
                        _mm512_maskz_loadu_ps(m, top.add(r * d + ch)),
                        _mm512_maskz_loadu_ps(m, bottom.add(l * d + ch)),
                        _mm512_maskz_loadu_ps(m, bottom.add(r * d + ch)),
                    )
                };
                let upper = _mm512_add_ps(tl, _mm512_mul_ps(_mm512_sub_ps(tr, tl), vdx));
                let lower = _mm512_add_ps(bl, _mm512_mul_ps(_mm512_sub_ps(br, bl), vdx));
                let y = _mm512_add_ps(upper, _mm512_mul_ps(_mm512_sub_ps(lower, upper), vdy));
                // SAFETY: lanes under `m` are output channels of pixel k (contract).
                unsafe { _mm512_mask_storeu_ps(out.add(k * d + ch), m, y) };
                ch += 16;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equals the scalar arithmetic bit for bit, for channel counts around the 16-lane steps
    /// and weights outside [0, 1] (half-pixel borders).
    #[test]
    fn bilinear_row_matches_the_scalar_arithmetic() {
        let Some(t) = Avx512Token::new() else {
            eprintln!("skipped: no AVX-512");
            return;
        };
        for d in [1, 3, 16, 17, 40] {
            let w = 5;
            let top: Vec<f32> = crate::testdata::spread_values(w * d, 2 * d as u64).collect();
            let bottom: Vec<f32> = crate::testdata::spread_values(w * d, 2 * d as u64 + 1).collect();
            let xs = [(0.25f32, 0usize, 1usize), (-0.25, 0, 0), (3.6, 3, 4), (4.0, 4, 4), (1.0 / 3.0, 0, 1), (2.75, 2, 3)];
            let dy = 0.3137f32;
            let mut want = vec![0.0f32; xs.len() * d];
            for (k, &(ix, l, r)) in xs.iter().enumerate() {
                let dx = ix - l as f32;
                for ch in 0..d {
                    let (tl, tr, bl, br) = (top[l * d + ch], top[r * d + ch], bottom[l * d + ch], bottom[r * d + ch]);
                    let upper = tl + (tr - tl) * dx;
                    let lower = bl + (br - bl) * dx;
                    want[k * d + ch] = upper + (lower - upper) * dy;
                }
            }
            let mut got = vec![f32::NAN; xs.len() * d];
            bilinear_row(t, &top, &bottom, &xs, dy, d, &mut got);
            assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "d {d}");
        }
    }
}
