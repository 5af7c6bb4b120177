//! The epilogue of a GEMM followed by the ADD of a channel-padded shortcut
//! (`kernels::gemm::Residual`): each row of C (`n` values) gets `x`'s row (`channels` values) at
//! columns `first..first + channels` and `fill` at the others, then the ADD's clamp.
//!
//! The AVX-512 pass walks a band of dense rows (`ldc == n ≥ 16`) as one flat array of whole
//! 16-lane vectors: a vector covers the end of one row and the start of the next and takes `x`
//! with two masked loads (one per row; `fill` where neither mask has the lane), from a table of
//! masks and offsets that repeats every `lcm(n, 16)` values. Row by row, a row of 28 values ends
//! in a masked store that the next row's first load overlaps, which blocks store forwarding:
//! that walk measured 3× slower on BlazeFace's 64×64×28 block. Other bands (rows narrower than a
//! vector, or strided) take the portable loop.
#![deny(unsafe_op_in_unsafe_fn)]

use super::Avx512Token;

/// A band of C and the padded shortcut rows added to it (see the module doc).
pub(crate) struct PaddedRows<'a> {
    /// Rows of `x`, `channels` values each, starting at the band's first row.
    pub x: &'a [f32],
    pub channels: usize,
    pub first: usize,
    pub fill: f32,
    /// Values per row of C, and its row stride.
    pub n: usize,
    pub ldc: usize,
    /// The ADD's clamp.
    pub lo: f32,
    pub hi: f32,
}

impl PaddedRows<'_> {
    /// Rows of `cc` the band covers: the last may stop after its `n` values.
    fn rows(&self, cc: &[f32]) -> usize {
        if self.n == 0 || cc.len() < self.n {
            0
        } else {
            (cc.len() - self.n) / self.ldc.max(1) + 1
        }
    }

    /// Panics unless every row of `cc` and of `x` the band touches is in bounds.
    fn check(&self, cc: &[f32]) -> usize {
        let rows = self.rows(cc);
        assert!(self.ldc >= self.n, "residual rows: stride {} below the row length {}", self.ldc, self.n);
        assert!(self.first + self.channels <= self.n, "residual rows: {} channels from {} exceed {}", self.channels, self.first, self.n);
        assert!(self.x.len() >= rows * self.channels, "residual rows: x holds {} values, needs {}", self.x.len(), rows * self.channels);
        rows
    }

    /// `cc[r*ldc + c] = clamp(cc[..] + (x[r*channels + c - first] or fill))` for every row of
    /// the band, AVX-512 where `t` is given, else AVX2 where the CPU has it.
    pub(crate) fn add_to(&self, t: Option<Avx512Token>, cc: &mut [f32]) {
        let rows = self.check(cc);
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = t {
            let _ = t;
            if self.ldc == self.n && self.n >= 16 {
                // SAFETY: the token proves AVX-512F; `check` bounded rows·channels values of x
                // and rows·n values of cc (ldc == n), and first + channels ≤ n.
                return unsafe { avx512::add_flat(self, rows, cc.as_mut_ptr()) };
            }
        }
        #[cfg(target_arch = "x86_64")]
        if super::isa() >= super::Isa::Avx2Fma {
            for r in 0..rows {
                let row = &mut cc[r * self.ldc..r * self.ldc + self.n];
                let xr = &self.x[r * self.channels..(r + 1) * self.channels];
                let (pre, rest) = row.split_at_mut(self.first);
                let (mid, post) = rest.split_at_mut(self.channels);
                // SAFETY: AVX2 was detected; each call gets slices of equal lengths.
                unsafe {
                    avx2::add_fill(pre, self.fill, self.lo, self.hi);
                    avx2::add_row(mid, xr, self.lo, self.hi);
                    avx2::add_fill(post, self.fill, self.lo, self.hi);
                }
            }
            return;
        }
        let _ = t;
        self.add_portable(rows, cc)
    }

    /// The portable loop of [`PaddedRows::add_to`] over `rows` rows.
    fn add_portable(&self, rows: usize, cc: &mut [f32]) {
        for r in 0..rows {
            let row = &mut cc[r * self.ldc..r * self.ldc + self.n];
            let xr = &self.x[r * self.channels..(r + 1) * self.channels];
            for (c, o) in row.iter_mut().enumerate() {
                let v = if c >= self.first && c < self.first + self.channels { xr[c - self.first] } else { self.fill };
                *o = clamp(*o + v, self.lo, self.hi);
            }
        }
    }
}

/// TFLite's `min(max(x, lo), hi)` (a NaN passes through), as the SIMD path computes it.
#[inline(always)]
fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let y = if x < lo { lo } else { x };
    if hi < y {
        hi
    } else {
        y
    }
}

/// Row segments on 8 lanes, the partial last vector in scalar code (the same operations:
/// no masked stores, which AMD's cores run slowly).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    use super::clamp;

    /// `c[i] = clamp(c[i] + x[i])`.
    ///
    /// # Safety
    /// The CPU has AVX2; `x.len() == c.len()`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn add_row(c: &mut [f32], x: &[f32], lo: f32, hi: f32) {
        assert_eq!(c.len(), x.len());
        let (vlo, vhi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
        let mut i = 0;
        while i + 8 <= c.len() {
            // SAFETY: i + 8 ≤ len of both slices.
            unsafe {
                let y = _mm256_add_ps(_mm256_loadu_ps(c.as_ptr().add(i)), _mm256_loadu_ps(x.as_ptr().add(i)));
                _mm256_storeu_ps(c.as_mut_ptr().add(i), _mm256_min_ps(vhi, _mm256_max_ps(vlo, y)));
            }
            i += 8;
        }
        for (o, &v) in c[i..].iter_mut().zip(&x[i..]) {
            *o = clamp(*o + v, lo, hi);
        }
    }

    /// `c[i] = clamp(c[i] + fill)`.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn add_fill(c: &mut [f32], fill: f32, lo: f32, hi: f32) {
        let (vlo, vhi, f) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi), _mm256_set1_ps(fill));
        let mut i = 0;
        while i + 8 <= c.len() {
            // SAFETY: i + 8 ≤ c.len().
            unsafe {
                let y = _mm256_add_ps(_mm256_loadu_ps(c.as_ptr().add(i)), f);
                _mm256_storeu_ps(c.as_mut_ptr().add(i), _mm256_min_ps(vhi, _mm256_max_ps(vlo, y)));
            }
            i += 8;
        }
        for o in &mut c[i..] {
            *o = clamp(*o + fill, lo, hi);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use core::arch::x86_64::*;

    use super::PaddedRows;

    /// Lanes `a..b` of 16 (each bound clamped to 0..=16).
    fn lanes(a: isize, b: isize) -> u16 {
        let (a, b) = (a.clamp(0, 16) as u32, b.clamp(0, 16) as u32);
        (((1u32 << b) - 1) & !((1u32 << a) - 1)) as u16
    }

    /// One vector's place in the period of `lcm(n, 16)` values: the lanes that read x in the
    /// row the vector starts in (`m1`) and in the next (`m2`), and their x offsets from the
    /// period's first row (lane l reads `x[off + l]`).
    #[derive(Clone, Copy)]
    struct Step {
        m1: u16,
        m2: u16,
        off1: isize,
        off2: isize,
    }

    /// # Safety
    /// The CPU has AVX-512F/FMA; `cc` points at `rows·n` writable values with `n ≥ 16`, `p.x` holds
    /// `rows·channels` values, and `first + channels ≤ n`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn add_flat(p: &PaddedRows, rows: usize, cc: *mut f32) {
        let (n, first, ch) = (p.n, p.first as isize, p.channels as isize);
        let total = rows * n;
        let (lo, hi, fill) = (_mm512_set1_ps(p.lo), _mm512_set1_ps(p.hi), _mm512_set1_ps(p.fill));
        // A period is n / gcd(n, 16) vectors over 16 / gcd(n, 16) rows; n ≥ 16, so a vector's
        // lanes belong to at most two rows: its first k to the row it starts in (at column c0),
        // the rest to the next row's first columns.
        let mut g = (n, 16);
        while g.1 != 0 {
            g = (g.1, g.0 % g.1);
        }
        let (period, period_rows) = (n / g.0, (16 / g.0) as isize);
        let steps: Vec<Step> = (0..period)
            .map(|q| {
                let (r, c) = (((q * 16) / n) as isize, ((q * 16) % n) as isize);
                let k = (n as isize - c).min(16);
                Step {
                    m1: lanes(first - c, first + ch - c) & lanes(0, k),
                    m2: lanes(k + first, k + first + ch),
                    off1: r * ch + c - first,
                    off2: (r + 1) * ch - k - first,
                }
            })
            .collect();
        let x = p.x.as_ptr();
        let (mut f, mut base) = (0usize, 0isize);
        'bands: loop {
            for st in &steps {
                if f >= total {
                    break 'bands;
                }
                let full = total - f >= 16;
                let m = if full { 0xffff } else { ((1u32 << (total - f)) - 1) as u16 };
                // SAFETY: lanes under `m` are values f..min(f + 16, total) of the band. Lane l
                // under `st.m1 & m` is a column of x's row of the vector's first value, at
                // x[base + off1 + l]; under `st.m2 & m` a column of the next row (below `rows`,
                // as the lane is below total), at x[base + off2 + l]. Masked-off lanes are
                // neither read nor faulted; the base addresses are formed with wrapping
                // arithmetic and dereferenced only under the masks.
                unsafe {
                    let acc = if full { _mm512_loadu_ps(cc.add(f)) } else { _mm512_maskz_loadu_ps(m, cc.add(f)) };
                    let xv = _mm512_mask_loadu_ps(fill, st.m1 & m, x.wrapping_offset(base + st.off1));
                    let xv = _mm512_mask_loadu_ps(xv, st.m2 & m, x.wrapping_offset(base + st.off2));
                    let y = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(acc, xv)));
                    if full {
                        _mm512_storeu_ps(cc.add(f), y);
                    } else {
                        _mm512_mask_storeu_ps(cc.add(f), m, y);
                    }
                }
                f += 16;
            }
            base += period_rows * ch;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX-512 pass (or the AVX2 one) equals the portable loop at every layout of the shortcut in the row
    /// (before, inside and across 16-lane steps, row lengths with periods of 1 to 17 vectors);
    /// bands it does not take (rows narrower than a vector, a stride wider than the row) run the
    /// portable loop, which leaves the gaps between rows alone.
    #[test]
    fn simd_matches_portable() {
        let t = Avx512Token::new();
        if t.is_none() && super::super::Avx2Token::new().is_none() {
            eprintln!("skipped: neither AVX-512 nor AVX2");
            return;
        }
        let cases = [(28, 0, 24, 28), (28, 2, 24, 28), (48, 0, 42, 48), (40, 17, 9, 45), (16, 0, 16, 16), (7, 3, 0, 9), (33, 1, 31, 33), (36, 0, 32, 36), (96, 0, 88, 96), (20, 19, 1, 20), (17, 0, 3, 17), (12, 0, 8, 12)];
        for ((n, first, channels, ldc), rows) in cases.into_iter().flat_map(|c| [(c, 1), (c, 5), (c, 9)]) {
            let x: Vec<f32> = (0..rows * channels).map(|i| (i as f32 * 0.37).sin() * 4.0).collect();
            let c: Vec<f32> = (0..(rows - 1) * ldc + n).map(|i| (i as f32 * 0.11).cos() * 5.0).collect();
            let p = PaddedRows { x: &x, channels, first, fill: -0.25, n, ldc, lo: -3.0, hi: 6.0 };
            let (mut want, mut got) = (c.clone(), c.clone());
            p.add_portable(p.check(&want), &mut want);
            p.add_to(t, &mut got);
            assert_eq!(want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "n {n} first {first} channels {channels} rows {rows}");
            // The gaps between rows are left alone.
            for r in 0..rows - 1 {
                assert_eq!(&got[r * ldc + n..(r + 1) * ldc], &c[r * ldc + n..(r + 1) * ldc]);
            }
        }
    }
}
