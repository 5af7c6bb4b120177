//! RFFT2D, FFT2D and the complex64 parts (COMPLEX_ABS, REAL, IMAG). Complex64 values are
//! stored as (real, imaginary) f32 pairs.
//!
//! RFFT2D works in f64 as TFLite does (it runs Ooura's double-precision `rdft2d` and rounds the
//! result to float): each matrix of the input, zero-padded or cropped to `fft_h × fft_w`, gets a
//! real FFT along its rows (one complex radix-2 FFT of half the length; the `fft_w / 2 + 1`
//! non-negative frequencies), then a complex one along its columns. `X[k1, k2] = Σ x[n1, n2] · e^(−2πi (k1·n1 / fft_h + k2·n2 / fft_w))`.
#![forbid(unsafe_code)]

use std::f64::consts::PI;

/// A radix-2 FFT plan for one power-of-two length: bit-reversal order and twiddles.
#[derive(Debug)]
struct Plan {
    n: usize,
    /// `rev[i]`: the bit-reversed index of i.
    rev: Vec<usize>,
    /// `e^(−2πi k / n)` for `k < n / 2`, as (cos, −sin).
    twiddle: Vec<(f64, f64)>,
}

impl Plan {
    fn new(n: usize) -> Plan {
        assert!(n.is_power_of_two(), "fft length {n} is not a power of two");
        let bits = n.trailing_zeros();
        let rev = (0..n).map(|i| if bits == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - bits) }).collect();
        let twiddle = (0..n / 2).map(|k| {
            let a = 2.0 * PI * k as f64 / n as f64;
            (a.cos(), -a.sin())
        });
        Plan { n, rev, twiddle: twiddle.collect() }
    }

    /// Transforms `(re, im)` in place (forward, unscaled).
    fn run(&self, re: &mut [f64], im: &mut [f64]) {
        let n = self.n;
        for i in 0..n {
            let j = self.rev[i];
            if i < j {
                re.swap(i, j);
                im.swap(i, j);
            }
        }
        let mut len = 2;
        while len <= n {
            let step = n / len;
            for start in (0..n).step_by(len) {
                for k in 0..len / 2 {
                    let (wr, wi) = self.twiddle[k * step];
                    let (a, b) = (start + k, start + k + len / 2);
                    let tr = re[b] * wr - im[b] * wi;
                    let ti = re[b] * wi + im[b] * wr;
                    re[b] = re[a] - tr;
                    im[b] = im[a] - ti;
                    re[a] += tr;
                    im[a] += ti;
                }
            }
            len *= 2;
        }
    }
}

/// The spectrum of a real signal of power-of-two length `n` through one complex FFT of half the
/// length: even samples as real parts, odd ones as imaginary parts, then the two interleaved
/// spectra separated and combined (`X[k] = E[k] + e^(−2πi k / n) · O[k]`).
#[derive(Debug)]
struct RealPlan {
    n: usize,
    /// The half-length complex transform (absent for n = 1).
    half: Option<Plan>,
    /// `e^(−2πi k / n)` for `k ≤ n / 2`, as (cos, −sin).
    twiddle: Vec<(f64, f64)>,
}

impl RealPlan {
    fn new(n: usize) -> RealPlan {
        assert!(n.is_power_of_two(), "fft length {n} is not a power of two");
        let twiddle = (0..=n / 2).map(|k| {
            let a = 2.0 * PI * k as f64 / n as f64;
            (a.cos(), -a.sin())
        });
        RealPlan { n, half: (n >= 2).then(|| Plan::new(n / 2)), twiddle: twiddle.collect() }
    }

    /// The `n / 2 + 1` bins of `x` (zero-padded or cropped to n) into `(re, im)`; `zr`, `zi`
    /// are scratch of n / 2 values.
    fn run(&self, x: &[f32], re: &mut [f64], im: &mut [f64], zr: &mut [f64], zi: &mut [f64]) {
        let n = self.n;
        let at = |i: usize| x.get(i).map_or(0.0, |&v| v as f64);
        let Some(half) = &self.half else {
            re[0] = at(0);
            im[0] = 0.0;
            return;
        };
        let m = n / 2;
        for j in 0..m {
            zr[j] = at(2 * j);
            zi[j] = at(2 * j + 1);
        }
        half.run(&mut zr[..m], &mut zi[..m]);
        for k in 0..=m {
            let (ar, ai) = (zr[k % m], zi[k % m]);
            let (br, bi) = (zr[(m - k) % m], -zi[(m - k) % m]);
            // Even part E = (Z[k] + conj Z[m−k]) / 2, odd part O = (Z[k] − conj Z[m−k]) / 2i.
            let (er, ei) = (0.5 * (ar + br), 0.5 * (ai + bi));
            let (or, oi) = (0.5 * (ai - bi), -0.5 * (ar - br));
            let (wr, wi) = self.twiddle[k];
            re[k] = er + wr * or - wi * oi;
            im[k] = ei + wr * oi + wi * or;
        }
    }
}

/// RFFT2D of `matrices` inputs of `rows × cols` float32 each (`x`), into complex64 `out`
/// (`matrices × fft_h × (fft_w / 2 + 1)` pairs).
#[derive(Debug)]
pub struct Rfft2d {
    rows: usize,
    cols: usize,
    fft_h: usize,
    row_plan: RealPlan,
    col_plan: Plan,
    /// Row spectra and FFT scratch, kept between runs.
    scratch: Vec<f64>,
}

impl Rfft2d {
    /// A transform of `rows × cols` matrices with lengths `fft_h × fft_w` (powers of two).
    ///
    /// # Panics
    /// If a length is not a power of two.
    pub fn new(rows: usize, cols: usize, fft_h: usize, fft_w: usize) -> Rfft2d {
        Rfft2d { rows, cols, fft_h, row_plan: RealPlan::new(fft_w), col_plan: Plan::new(fft_h), scratch: Vec::new() }
    }

    /// Complex values per matrix in the output.
    pub fn out_len(&self) -> usize {
        self.fft_h * (self.row_plan.n / 2 + 1)
    }

    /// Transforms every matrix of `x` into `out` (interleaved real, imaginary).
    ///
    /// # Panics
    /// If the lengths do not match.
    pub fn run(&mut self, x: &[f32], out: &mut [f32]) {
        let (fh, fw) = (self.fft_h, self.row_plan.n);
        let half = fw / 2 + 1;
        let image = self.rows * self.cols;
        let matrices = x.len().checked_div(image).unwrap_or(out.len() / (2 * self.out_len()).max(1));
        assert_eq!(out.len(), matrices * 2 * self.out_len(), "rfft2d: output length");
        let per = 2 * self.out_len();
        let line = half.max(fh);
        let Rfft2d { rows, cols, row_plan, col_plan, scratch, .. } = self;
        let (rows, cols) = (*rows, *cols);
        scratch.resize(2 * fh * half + 4 * line, 0.0);
        let (spectra, rest) = scratch.split_at_mut(2 * fh * half);
        let (sr, si) = spectra.split_at_mut(fh * half);
        let (re, rest) = rest.split_at_mut(line);
        let (im, rest) = rest.split_at_mut(line);
        let (zr, zi) = rest.split_at_mut(line);
        for (m, o) in out.chunks_exact_mut(per).enumerate() {
            // Row spectra [fh][half]; rows past the input are zero.
            for r in 0..fh {
                let row: &[f32] = if r < rows { &x[m * image + r * cols..][..cols] } else { &[] };
                row_plan.run(row, &mut re[..half], &mut im[..half], zr, zi);
                sr[r * half..(r + 1) * half].copy_from_slice(&re[..half]);
                si[r * half..(r + 1) * half].copy_from_slice(&im[..half]);
            }
            if fh > 1 {
                for c in 0..half {
                    for r in 0..fh {
                        re[r] = sr[r * half + c];
                        im[r] = si[r * half + c];
                    }
                    col_plan.run(&mut re[..fh], &mut im[..fh]);
                    for r in 0..fh {
                        sr[r * half + c] = re[r];
                        si[r * half + c] = im[r];
                    }
                }
            }
            // The bins at rows 0 and fh / 2 and columns 0 and fw / 2 are real for a real
            // signal: their imaginary parts are exactly zero (TOSA's RFFT2D skips the terms
            // whose sine is zero, so they stay zero even for non-finite input).
            for r in [0, fh / 2] {
                for c in [0, half - 1] {
                    si[r * half + c] = 0.0;
                }
            }
            for (pair, (&r, &i)) in o.chunks_exact_mut(2).zip(sr.iter().zip(si.iter())) {
                pair[0] = r as f32;
                pair[1] = i as f32;
            }
        }
    }
}

/// TOSA's FFT2D of `matrices` complex `h × w` signals given as real and imaginary parts (both
/// powers of two): a complex FFT along each row, then along each column, in f64 and rounded
/// once to float. TOSA's pseudo-code sums the definition directly
/// (`Σ x · e^(∓2πi (ay / H + ax / W))` with the products' indices taken modulo H and W); both
/// are the same transform, which its FFT compliance mode checks within an error bound.
/// `inverse` uses `e^(+2πi …)` (the conjugate of the forward transform of the conjugate), with
/// no 1/(H·W) scaling.
#[derive(Debug)]
pub struct Fft2d {
    h: usize,
    w: usize,
    inverse: bool,
    row_plan: Plan,
    col_plan: Plan,
    /// One matrix's real and imaginary parts and a column, kept between runs.
    scratch: Vec<f64>,
}

impl Fft2d {
    /// A transform of `h × w` signals (powers of two).
    ///
    /// # Panics
    /// If a length is not a power of two.
    pub fn new(h: usize, w: usize, inverse: bool) -> Fft2d {
        Fft2d { h, w, inverse, row_plan: Plan::new(w), col_plan: Plan::new(h), scratch: Vec::new() }
    }

    /// Transforms every matrix of `(re, im)` into `(out_re, out_im)`.
    ///
    /// # Panics
    /// If the lengths are not the same multiple of `h × w`.
    pub fn run(&mut self, re: &[f32], im: &[f32], out_re: &mut [f32], out_im: &mut [f32]) {
        let (h, w) = (self.h, self.w);
        let image = h * w;
        assert!(re.len() == im.len() && re.len() == out_re.len() && re.len() == out_im.len() && re.len().is_multiple_of(image), "fft2d: lengths");
        // The inverse transform conjugates the input and the result of the forward one.
        let sign = if self.inverse { -1.0 } else { 1.0 };
        let Fft2d { row_plan, col_plan, scratch, .. } = self;
        scratch.resize(2 * image + 2 * h, 0.0);
        let (mr, rest) = scratch.split_at_mut(image);
        let (mi, rest) = rest.split_at_mut(image);
        let (cr, ci) = rest.split_at_mut(h);
        for m in 0..re.len() / image {
            let at = m * image;
            for (i, (r, j)) in mr.iter_mut().zip(mi.iter_mut()).enumerate() {
                *r = re[at + i] as f64;
                *j = sign * im[at + i] as f64;
            }
            for (r, j) in mr.chunks_exact_mut(w).zip(mi.chunks_exact_mut(w)) {
                row_plan.run(r, j);
            }
            if h > 1 {
                for c in 0..w {
                    for r in 0..h {
                        cr[r] = mr[r * w + c];
                        ci[r] = mi[r * w + c];
                    }
                    col_plan.run(cr, ci);
                    for r in 0..h {
                        mr[r * w + c] = cr[r];
                        mi[r * w + c] = ci[r];
                    }
                }
            }
            for i in 0..image {
                out_re[at + i] = mr[i] as f32;
                out_im[at + i] = (sign * mi[i]) as f32;
            }
        }
    }
}

/// Reference twin of [`Fft2d::run`] for one matrix: TOSA's pseudo-code in f64 (angles from the
/// products' indices modulo H and W).
pub fn fft2d_ref(re: &[f32], im: &[f32], h: usize, w: usize, inverse: bool) -> (Vec<f32>, Vec<f32>) {
    let sign = if inverse { -1.0 } else { 1.0 };
    let (mut or, mut oi) = (vec![0f32; h * w], vec![0f32; h * w]);
    for oy in 0..h {
        for ox in 0..w {
            let (mut sr, mut si) = (0f64, 0f64);
            for iy in 0..h {
                for ix in 0..w {
                    let (vr, vi) = (re[iy * w + ix] as f64, im[iy * w + ix] as f64);
                    let a = sign * 2.0 * PI * (((iy * oy) % h) as f64 / h as f64 + ((ix * ox) % w) as f64 / w as f64);
                    sr += vr * a.cos() + vi * a.sin();
                    si += -vr * a.sin() + vi * a.cos();
                }
            }
            or[oy * w + ox] = sr as f32;
            oi[oy * w + ox] = si as f32;
        }
    }
    (or, oi)
}

/// Reference twin of [`Rfft2d::run`] for one matrix: the definition summed directly in f64.
pub fn rfft2d_ref(x: &[f32], rows: usize, cols: usize, fft_h: usize, fft_w: usize) -> Vec<f32> {
    let half = fft_w / 2 + 1;
    let mut out = vec![0f32; 2 * fft_h * half];
    for k1 in 0..fft_h {
        for k2 in 0..half {
            let (mut sr, mut si) = (0f64, 0f64);
            for n1 in 0..rows.min(fft_h) {
                for n2 in 0..cols.min(fft_w) {
                    let a = -2.0 * PI * ((k1 * n1) as f64 / fft_h as f64 + (k2 * n2) as f64 / fft_w as f64);
                    let v = x[n1 * cols + n2] as f64;
                    sr += v * a.cos();
                    si += v * a.sin();
                }
            }
            out[2 * (k1 * half + k2)] = sr as f32;
            out[2 * (k1 * half + k2) + 1] = si as f32;
        }
    }
    out
}

/// Which part of complex64 values [`complex_part`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `|z|` (`hypot(re, im)`, as `std::abs` of `std::complex<float>`).
    Abs,
    /// The real part.
    Real,
    /// The imaginary part.
    Imag,
}

/// One float32 per complex64 pair of `z`.
///
/// # Panics
/// If `out` does not hold one value per pair.
pub fn complex_part(part: Part, z: &[f32], out: &mut [f32]) {
    assert_eq!(z.len(), 2 * out.len(), "complex part: output length");
    for (o, c) in out.iter_mut().zip(z.chunks_exact(2)) {
        *o = match part {
            Part::Abs => c[0].hypot(c[1]),
            Part::Real => c[0],
            Part::Imag => c[1],
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::gemm::tests::values;

    #[test]
    fn matches_the_definition() {
        // Cropped, padded and exact sizes; 1 × N and N × 1 lengths.
        for (seed, &(rows, cols, fh, fw)) in [(4, 8, 4, 8), (3, 5, 4, 8), (6, 10, 4, 8), (1, 16, 1, 16), (5, 1, 8, 1), (7, 9, 16, 2)].iter().enumerate() {
            let x = values(2 * rows * cols, seed as u64 + 1);
            let mut f = Rfft2d::new(rows, cols, fh, fw);
            let mut got = vec![0f32; 2 * 2 * f.out_len()];
            f.run(&x, &mut got);
            for m in 0..2 {
                let want = rfft2d_ref(&x[m * rows * cols..][..rows * cols], rows, cols, fh, fw);
                for (i, (a, b)) in got[m * 2 * f.out_len()..][..want.len()].iter().zip(&want).enumerate() {
                    // Both in f64, rounded once to f32: at most one float ulp apart.
                    assert!((a - b).abs() <= 1e-6 * (1.0 + b.abs()), "{rows}x{cols} -> {fh}x{fw}, matrix {m}, value {i}: {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn fft2d_matches_the_pseudo_code() {
        for (seed, &(h, w)) in [(1, 1), (1, 8), (8, 1), (4, 4), (2, 16), (8, 4)].iter().enumerate() {
            let (re, im) = (values(3 * h * w, seed as u64 + 1), values(3 * h * w, seed as u64 + 11));
            for inverse in [false, true] {
                let mut f = Fft2d::new(h, w, inverse);
                let (mut gr, mut gi) = (vec![0f32; re.len()], vec![0f32; re.len()]);
                f.run(&re, &im, &mut gr, &mut gi);
                for m in 0..3 {
                    let s = m * h * w..(m + 1) * h * w;
                    let (wr, wi) = fft2d_ref(&re[s.clone()], &im[s.clone()], h, w, inverse);
                    for (i, (a, b)) in gr[s.clone()].iter().chain(&gi[s.clone()]).zip(wr.iter().chain(&wi)).enumerate() {
                        // Both in f64, rounded once: within a float ulp or two of the sum's size.
                        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{h}x{w} inverse {inverse}, matrix {m}, value {i}: {a} vs {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn inverse_after_forward_scales_by_the_size() {
        let (h, w) = (4, 8);
        let (re, im) = (values(h * w, 5), values(h * w, 6));
        let (mut fr, mut fi) = (vec![0f32; h * w], vec![0f32; h * w]);
        Fft2d::new(h, w, false).run(&re, &im, &mut fr, &mut fi);
        let (mut br, mut bi) = (vec![0f32; h * w], vec![0f32; h * w]);
        Fft2d::new(h, w, true).run(&fr, &fi, &mut br, &mut bi);
        for i in 0..h * w {
            assert!((br[i] / (h * w) as f32 - re[i]).abs() < 1e-5 && (bi[i] / (h * w) as f32 - im[i]).abs() < 1e-5, "{i}");
        }
    }

    #[test]
    fn a_constant_has_only_a_dc_term() {
        let mut f = Rfft2d::new(2, 4, 2, 4);
        let mut out = vec![1f32; 2 * f.out_len()];
        f.run(&[1.0; 8], &mut out);
        assert_eq!(out[..2], [8.0, 0.0]);
        assert!(out[2..].iter().all(|&v| v.abs() < 1e-12), "{out:?}");
    }

    #[test]
    fn parts() {
        let z = [3.0, -4.0, 0.0, 2.5];
        let mut o = [0.0; 2];
        complex_part(Part::Abs, &z, &mut o);
        assert_eq!(o, [5.0, 2.5]);
        complex_part(Part::Real, &z, &mut o);
        assert_eq!(o, [3.0, 0.0]);
        complex_part(Part::Imag, &z, &mut o);
        assert_eq!(o, [-4.0, 2.5]);
    }
}
