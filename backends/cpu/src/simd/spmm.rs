//! Sparse weights × dense activations (the "spmm" of XNNPACK's sparse inference) for a 1×1
//! convolution whose filter is mostly zeros (`kernels::sparse_conv`).
//!
//! The activations of a tile of `mr` pixels are held channel-major (`xt[k * mr + j]`: input
//! channel `k` of pixel `j`), so each nonzero weight multiplies one contiguous run of `mr`
//! pixels. Output channels are taken [`ROWS`] at a time (their nonzeros interleaved, the
//! shorter rows padded with zero weights), which gives the vector units `ROWS × mr / lanes`
//! independent multiply-add chains. Each output value is one chain that starts from the bias
//! and runs over the channel's nonzero weights in increasing input channel: the dense GEMM's
//! chain without the terms whose weight is zero, so the two agree bit for bit on finite inputs
//! (an added `x · 0` leaves a sum unchanged but for the sign of a zero sum).
//!
//! [`SparseRows`] checks every index once, when it is built; the entry points check slice
//! lengths against it and then run `#[target_feature]` loops over raw pointers.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{Avx2Token, Avx512Token, Isa};

/// Output channels computed together (interleaved nonzeros).
pub(crate) const ROWS: usize = 4;
/// Pixels per tile of the AVX-512 kernel (two 16-lane vectors per output channel).
pub(crate) const MR_AVX512: usize = 32;
/// Pixels per tile of the AVX2 kernel (two 8-lane vectors per output channel).
pub(crate) const MR_AVX2: usize = 16;
/// Pixels per tile of the portable kernel.
pub(crate) const MR_PORTABLE: usize = 8;

/// Which loop runs the tiles, with the proof that the CPU has its instruction set.
#[derive(Clone, Copy, Debug)]
enum Kernel {
    Avx512(Avx512Token),
    Avx2(Avx2Token),
    Portable,
}

/// One group of [`ROWS`] output channels: its nonzeros are entries `start .. start + len`.
#[derive(Clone, Copy, Debug)]
struct Group {
    start: usize,
    len: usize,
}

/// The nonzero weights of an `out_c × in_c` matrix in groups of [`ROWS`] rows, for the tile
/// width of one instruction set. Rows are sorted by their count of nonzeros (longest first) so
/// that a group's rows need little padding; each kernel row writes the tile output row of its
/// output channel.
#[derive(Debug)]
pub(crate) struct SparseRows {
    kernel: Kernel,
    mr: usize,
    in_c: usize,
    groups: Vec<Group>,
    /// Entry `e`, row `r` of the interleaved list: `offs[e * ROWS + r]` is `k * mr` (where the
    /// input channel `k` starts in the tile), `vals[e * ROWS + r]` the weight.
    offs: Vec<u32>,
    vals: Vec<f32>,
    /// The start of each kernel row's sum (the bias, or 0), `groups.len() * ROWS` values.
    bias: Vec<f32>,
    /// The tile output row of each kernel row: its output channel, or for the padding rows of
    /// the last group `out_c ..` (a permutation of `0 .. rows()`).
    perm: Vec<u32>,
    nnz: usize,
}

/// Pixels per tile of the kernel that runs on `isa`.
pub(crate) fn mr_for(isa: Isa) -> usize {
    match kernel_for(isa) {
        Kernel::Avx512(_) => MR_AVX512,
        Kernel::Avx2(_) => MR_AVX2,
        Kernel::Portable => MR_PORTABLE,
    }
}

fn kernel_for(isa: Isa) -> Kernel {
    match isa {
        Isa::Avx512 => Avx512Token::new().map_or(Kernel::Portable, Kernel::Avx512),
        Isa::Avx2Fma => Avx2Token::new().map_or(Kernel::Portable, Kernel::Avx2),
        _ => Kernel::Portable,
    }
}

impl SparseRows {
    /// Gathers the nonzeros of `w` (`out_c` rows of `in_c` weights, row-major) and the bias
    /// (`out_c` values) for the kernel of `isa`. `None` when an index would not fit the
    /// kernel's 32-bit offsets (`in_c * mr` ≥ 2³²) or `w` / `bias` are too short.
    pub(crate) fn new(isa: Isa, w: &[f32], out_c: usize, in_c: usize, bias: Option<&[f32]>) -> Option<SparseRows> {
        let kernel = kernel_for(isa);
        let mr = mr_for(isa);
        if w.len() < out_c.checked_mul(in_c)? || bias.is_some_and(|b| b.len() < out_c) || u32::try_from(in_c.checked_mul(mr)?).is_err() {
            return None;
        }
        let row = |o: usize| &w[o * in_c..(o + 1) * in_c];
        let counts: Vec<usize> = (0..out_c).map(|o| row(o).iter().filter(|&&v| v != 0.0).count()).collect();
        let mut order: Vec<usize> = (0..out_c).collect();
        order.sort_by_key(|&o| std::cmp::Reverse(counts[o]));
        let n_groups = out_c.div_ceil(ROWS);
        let padded: usize = order.chunks(ROWS).map(|g| counts[g[0]]).sum();
        let mut offs = Vec::with_capacity(padded * ROWS);
        let mut vals = Vec::with_capacity(padded * ROWS);
        let mut groups = Vec::with_capacity(n_groups);
        // Padding rows write the rows past the output channels.
        let mut perm: Vec<u32> = (0..n_groups * ROWS).map(|i| i as u32).collect();
        let mut start_of = vec![0f32; n_groups * ROWS];
        // One list of (channel, weight) per row of a group, reused: collecting each row's
        // nonzeros into a new, growing vector was most of a sparse model's prepare.
        let mut nz: Vec<Vec<(usize, f32)>> = (0..ROWS).map(|_| Vec::with_capacity(in_c)).collect();
        for (g, rows) in order.chunks(ROWS).enumerate() {
            let len = counts[rows[0]];
            for (r, list) in nz.iter_mut().enumerate() {
                list.clear();
                if let Some(&o) = rows.get(r) {
                    list.extend(row(o).iter().copied().enumerate().filter(|&(_, v)| v != 0.0));
                }
            }
            for e in 0..len {
                for r in 0..ROWS {
                    // A shorter row (or a padding row) repeats a zero weight at channel 0: it
                    // adds nothing to the sum.
                    let (k, v) = nz.get(r).and_then(|l| l.get(e)).copied().unwrap_or((0, 0.0));
                    offs.push((k * mr) as u32);
                    vals.push(v);
                }
            }
            for (r, &o) in rows.iter().enumerate() {
                perm[g * ROWS + r] = o as u32;
                start_of[g * ROWS + r] = bias.map_or(0.0, |b| b[o]);
            }
            groups.push(Group { start: offs.len() / ROWS - len, len });
        }
        let nnz = counts.iter().sum();
        Some(SparseRows { kernel, mr, in_c, groups, offs, vals, bias: start_of, perm, nnz })
    }

    /// Pixels per tile.
    pub(crate) fn mr(&self) -> usize {
        self.mr
    }

    /// Rows of a tile's output (`ot`): output channels rounded up to [`ROWS`].
    pub(crate) fn rows(&self) -> usize {
        self.groups.len() * ROWS
    }

    /// Nonzero weights.
    pub(crate) fn nnz(&self) -> usize {
        self.nnz
    }

    /// One tile: `ot[o * mr + j] = clamp(bias[o] + Σ w[o][k] · xt[k * mr + j])` over output
    /// channel `o`'s nonzeros, for every channel `o` and pixel `j < mr` (rows `out_c ..
    /// rows()` of `ot` are padding). `xt` holds `in_c × mr`
    /// channel-major values.
    ///
    /// # Panics
    /// If `xt` is shorter than `in_c * mr` or `ot` than `rows() * mr`.
    pub(crate) fn tile(&self, xt: &[f32], ot: &mut [f32], min: f32, max: f32) {
        assert!(xt.len() >= self.in_c * self.mr, "spmm tile input holds {} values, needs {}", xt.len(), self.in_c * self.mr);
        assert!(ot.len() >= self.rows() * self.mr, "spmm tile output holds {} values, needs {}", ot.len(), self.rows() * self.mr);
        match self.kernel {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512(_) => {
                // SAFETY: the token proves AVX-512F; every offset is `k * mr` with `k < in_c`
                // (built in `new`), so each load of `mr` values stays inside `xt`; each group
                // writes rows `g * ROWS .. g * ROWS + ROWS` < `rows()` of `ot`.
                unsafe { tile_avx512(self, xt.as_ptr(), ot.as_mut_ptr(), min, max) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(_) => {
                // SAFETY: as above, with the token proving AVX2 and FMA.
                unsafe { tile_avx2(self, xt.as_ptr(), ot.as_mut_ptr(), min, max) }
            }
            _ => tile_portable(self, xt, ot, min, max),
        }
    }
}

/// The clamp of the dense kernels: `min(max(x, lo), hi)`, a NaN kept.
#[inline(always)]
fn clamp(x: f32, min: f32, max: f32) -> f32 {
    let y = if x < min { min } else { x };
    if y > max {
        max
    } else {
        y
    }
}

/// The portable twin of the tile loops (also the reference of the tests): multiply and add
/// apart, as the portable GEMM does.
fn tile_portable(w: &SparseRows, xt: &[f32], ot: &mut [f32], min: f32, max: f32) {
    let mr = w.mr;
    for (g, grp) in w.groups.iter().enumerate() {
        for r in 0..ROWS {
            let i = g * ROWS + r;
            let p = w.perm[i] as usize;
            let out = &mut ot[p * mr..(p + 1) * mr];
            out.fill(w.bias[i]);
            for e in grp.start..grp.start + grp.len {
                let (o, v) = (w.offs[e * ROWS + r] as usize, w.vals[e * ROWS + r]);
                if v == 0.0 {
                    continue;
                }
                for (s, &x) in out.iter_mut().zip(&xt[o..o + mr]) {
                    *s += x * v;
                }
            }
            for s in out.iter_mut() {
                *s = clamp(*s, min, max);
            }
        }
    }
}

/// # Safety
/// AVX-512F available; `w.mr == MR_AVX512`; `xt` valid for `w.in_c * 32` reads and `ot` for
/// `w.rows() * 32` writes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512(w: &SparseRows, xt: *const f32, ot: *mut f32, min: f32, max: f32) {
    let (vmin, vmax) = (_mm512_set1_ps(min), _mm512_set1_ps(max));
    let (offs, vals) = (w.offs.as_ptr(), w.vals.as_ptr());
    for (g, grp) in w.groups.iter().enumerate() {
        let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
        for (r, a) in acc.iter_mut().enumerate() {
            let b = _mm512_set1_ps(w.bias[g * ROWS + r]);
            *a = [b, b];
        }
        for e in grp.start..grp.start + grp.len {
            for (r, a) in acc.iter_mut().enumerate() {
                // SAFETY: entry e < offs.len() / ROWS (groups cover the entries); the offset
                // is k * 32 with k < in_c, so both 16-value loads lie inside xt.
                unsafe {
                    let o = *offs.add(e * ROWS + r) as usize;
                    let v = _mm512_set1_ps(*vals.add(e * ROWS + r));
                    a[0] = _mm512_fmadd_ps(_mm512_loadu_ps(xt.add(o)), v, a[0]);
                    a[1] = _mm512_fmadd_ps(_mm512_loadu_ps(xt.add(o + 16)), v, a[1]);
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            let p = w.perm[g * ROWS + r] as usize;
            for (h, &y) in a.iter().enumerate() {
                let y = _mm512_min_ps(vmax, _mm512_max_ps(vmin, y));
                // SAFETY: row p < rows() (perm is a permutation of them), 16 values at
                // p * 32 + 16 * h inside ot.
                unsafe { _mm512_storeu_ps(ot.add(p * MR_AVX512 + 16 * h), y) };
            }
        }
    }
}

/// # Safety
/// AVX2 and FMA available; `w.mr == MR_AVX2`; `xt` valid for `w.in_c * 16` reads and `ot` for
/// `w.rows() * 16` writes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2(w: &SparseRows, xt: *const f32, ot: *mut f32, min: f32, max: f32) {
    let (vmin, vmax) = (_mm256_set1_ps(min), _mm256_set1_ps(max));
    let (offs, vals) = (w.offs.as_ptr(), w.vals.as_ptr());
    for (g, grp) in w.groups.iter().enumerate() {
        let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
        for (r, a) in acc.iter_mut().enumerate() {
            let b = _mm256_set1_ps(w.bias[g * ROWS + r]);
            *a = [b, b];
        }
        for e in grp.start..grp.start + grp.len {
            for (r, a) in acc.iter_mut().enumerate() {
                // SAFETY: as in `tile_avx512`, with offsets k * 16 and two 8-value loads.
                unsafe {
                    let o = *offs.add(e * ROWS + r) as usize;
                    let v = _mm256_set1_ps(*vals.add(e * ROWS + r));
                    a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(xt.add(o)), v, a[0]);
                    a[1] = _mm256_fmadd_ps(_mm256_loadu_ps(xt.add(o + 8)), v, a[1]);
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            let p = w.perm[g * ROWS + r] as usize;
            for (h, &y) in a.iter().enumerate() {
                let y = _mm256_min_ps(vmax, _mm256_max_ps(vmin, y));
                // SAFETY: row p < rows(), 8 values at p * 16 + 8 * h inside ot.
                unsafe { _mm256_storeu_ps(ot.add(p * MR_AVX2 + 8 * h), y) };
            }
        }
    }
}

/// `dst[c * dld + r] = src[r * sld + c]` for `r < rows`, `c < cols`: a tile's pixels into
/// channel-major order and back. 8×8 blocks in AVX registers where the CPU has AVX2, the
/// edges (and other CPUs) one value at a time.
///
/// # Panics
/// If `src` or `dst` are too short for the shapes, or `sld < cols`, `dld < rows`.
pub(crate) fn transpose(src: &[f32], sld: usize, rows: usize, cols: usize, dst: &mut [f32], dld: usize) {
    if rows == 0 || cols == 0 {
        return;
    }
    assert!(sld >= cols && src.len() >= (rows - 1) * sld + cols, "transpose source too short");
    assert!(dld >= rows && dst.len() >= (cols - 1) * dld + rows, "transpose destination too short");
    let (r8, c8) = (rows / 8 * 8, cols / 8 * 8);
    #[cfg(target_arch = "x86_64")]
    if r8 > 0 && c8 > 0 {
        if let Some(t) = Avx2Token::new() {
            let _ = t;
            // SAFETY: the token proves AVX2; the blocks cover rows < r8 ≤ rows and cols < c8 ≤
            // cols, inside both slices by the checks above.
            unsafe { transpose8_avx(src.as_ptr(), sld, r8, c8, dst.as_mut_ptr(), dld) };
            transpose_scalar(src, sld, (0, r8), (c8, cols), dst, dld);
            transpose_scalar(src, sld, (r8, rows), (0, cols), dst, dld);
            return;
        }
    }
    transpose_scalar(src, sld, (0, rows), (0, cols), dst, dld);
}

/// [`transpose`] of rows `r0..r1` and columns `c0..c1`, one value at a time.
fn transpose_scalar(src: &[f32], sld: usize, (r0, r1): (usize, usize), (c0, c1): (usize, usize), dst: &mut [f32], dld: usize) {
    for r in r0..r1 {
        for c in c0..c1 {
            dst[c * dld + r] = src[r * sld + c];
        }
    }
}

/// # Safety
/// AVX available; `rows` and `cols` multiples of 8; `src` valid for reads of rows `< rows`
/// (stride `sld`, `cols` values each) and `dst` for writes of rows `< cols` (stride `dld`,
/// `rows` values each).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn transpose8_avx(src: *const f32, sld: usize, rows: usize, cols: usize, dst: *mut f32, dld: usize) {
    for r0 in (0..rows).step_by(8) {
        for c0 in (0..cols).step_by(8) {
            // SAFETY: rows r0..r0 + 8 and columns c0..c0 + 8 lie inside the block (caller).
            let r: [__m256; 8] = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(src.add((r0 + i) * sld + c0)) });
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            let out = [
                _mm256_permute2f128_ps::<0x20>(u0, u4),
                _mm256_permute2f128_ps::<0x20>(u1, u5),
                _mm256_permute2f128_ps::<0x20>(u2, u6),
                _mm256_permute2f128_ps::<0x20>(u3, u7),
                _mm256_permute2f128_ps::<0x31>(u0, u4),
                _mm256_permute2f128_ps::<0x31>(u1, u5),
                _mm256_permute2f128_ps::<0x31>(u2, u6),
                _mm256_permute2f128_ps::<0x31>(u3, u7),
            ];
            for (c, v) in out.into_iter().enumerate() {
                // SAFETY: destination row c0 + c < cols, values r0..r0 + 8 < rows.
                unsafe { _mm256_storeu_ps(dst.add((c0 + c) * dld + r0), v) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_matches_the_definition() {
        for (rows, cols, sld, dld) in [(1, 1, 1, 1), (8, 8, 8, 8), (17, 9, 11, 32), (5, 40, 40, 8), (32, 161, 161, 32), (24, 16, 20, 24)] {
            let src: Vec<f32> = (0..(rows - 1) * sld + cols).map(|v| v as f32).collect();
            let mut dst = vec![-1.0; (cols - 1) * dld + rows];
            transpose(&src, sld, rows, cols, &mut dst, dld);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(dst[c * dld + r], src[r * sld + c], "{rows}x{cols}: ({r}, {c})");
                }
            }
        }
    }
}
