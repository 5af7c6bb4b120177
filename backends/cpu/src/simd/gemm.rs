//! The float GEMM's SIMD register tiles (CONV_2D, FULLY_CONNECTED, BATCH_MATMUL and the fused
//! convolution steps).
//!
//! Each entry point is a safe `pub(crate)` wrapper. It takes a token that proves the CPU has the
//! instruction set (tokens are only built after run-time detection), checks every slice bound
//! once, and then calls a `#[target_feature]` function whose inner loops use raw pointers without
//! per-element checks. The portable twin lives in `kernels::gemm`.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{Avx2Token, Avx512Token};
#[cfg(target_arch = "x86_64")]
use super::lane_mask16;

/// Rows of the AVX-512 GEMM register tile.
pub(crate) const MR_AVX512: usize = 8;
/// Columns of the AVX-512 GEMM register tile (two 16-lane vectors); packed B panels match it.
pub(crate) const NR_AVX512: usize = 32;
/// Columns of the narrow AVX-512 tile (one vector), used when N ≤ 16 so little is padding.
pub(crate) const NR_AVX512_NARROW: usize = 16;
/// Rows of the narrow AVX-512 tile: one accumulator per row, so twice the wide tile's rows fit
/// the registers and each tile's fixed costs (checks, epilogue, call) cover twice the work.
pub(crate) const MR_AVX512_NARROW: usize = 16;
/// Rows of the AVX2 GEMM register tile.
pub(crate) const MR_AVX2: usize = 6;
/// Columns of the AVX2 GEMM register tile (two 8-lane vectors); packed B panels match it.
pub(crate) const NR_AVX2: usize = 16;

/// Where a GEMM tile's accumulators start and what it does with them before storing.
///
/// The sum of one output is a single chain of fused multiply-adds that starts from the bias
/// and runs over `k` in order, as XNNPACK's GEMM and IGEMM micro-kernels (LiteRT's default
/// float path) compute it: each K block continues from the partial sum the previous one
/// stored in C, so blocking does not change the rounding.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Epilogue<'a> {
    /// Start from the tile's current content of C (every K block but the first).
    pub load_c: bool,
    /// Clamp to `[min, max]` (the last K block).
    pub finish: bool,
    /// Bias of the tile's columns (at least `cols` values): the first K block starts from it.
    pub bias: Option<&'a [f32]>,
    /// Lower clamp bound (`-inf` for none).
    pub min: f32,
    /// Upper clamp bound (`+inf` for none).
    pub max: f32,
}

/// One AVX-512 register tile: `C[r][j] (r < rows, j < cols) = epilogue(sum_k A[r*lda + k] *
/// B[k*nr + j])` for `k < kc`, where `B` is a packed panel of `nr` columns (zero padded past
/// `cols`), `nr` being [`NR_AVX512`] or [`NR_AVX512_NARROW`]. `rows` ≤ [`MR_AVX512`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_tile_avx512(
    t: Avx512Token,
    rows: usize,
    cols: usize,
    kc: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    nr: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    assert!(cols <= nr, "a tile holds at most {nr} columns, not {cols}");
    gemm_panels_segs_avx512(t, rows, cols, kc, &[(a, lda, 0)], b, 0, nr, c, ldc, ep)
}

/// A row of AVX-512 register tiles: `rows` ≤ [`MR_AVX512`] rows of A against `panels`
/// consecutive packed panels of `nr` columns (panel `p`'s K block at `b[p * panel_stride ..]`),
/// `cols` columns of C in all (the last panel may be partial), each tile as
/// [`gemm_tile_avx512`] with `ep.bias` covering all `cols` columns. Bounds are checked once for
/// the row and the tiles run in one `#[target_feature]` loop, without a call and a check per
/// tile (which cost ~30 % of a 1×1 convolution with K = 16).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_panels_avx512(
    t: Avx512Token,
    rows: usize,
    cols: usize,
    kc: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    panel_stride: usize,
    nr: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    gemm_panels_segs_avx512(t, rows, cols, kc, &[(a, lda, 0)], b, panel_stride, nr, c, ldc, ep)
}

/// How far ahead of the K loop (in f32 values of the packed panel, 4 KiB) the AVX-512 GEMM
/// prefetches B. Weights are streamed once per K block and row band; in a model they were
/// evicted from L2 since the last run (MobileNetV1 holds 16 MB), and the hardware streamer
/// restarts at every 4 KiB page, so the first row tile of each block waited on L3. Prefetching
/// 4 KiB ahead measured 5–7 % off MobileNetV1/V2 float end to end at 1 and 2 threads (1024 and
/// 2048 equal, 512 less; a prefetch past the panel's end touches the next K block or panel,
/// and a prefetch never faults).
const B_PREFETCH_AHEAD: usize = 1024;

/// Most segments [`gemm_panels_segs_avx512`] takes (a filter's rows).
pub(crate) const MAX_SEGS: usize = 16;

/// The AVX-512 micro-kernel every entry above comes down to: as [`gemm_panels_avx512`] for a K
/// that is split into segments of `kc` values, each read in place: `segs[i] = (a, lda, k0)`
/// gives segment `i`'s rows of A and where it starts in K (an implicit GEMM leaves out the
/// segments in padding). Every tile starts from C (`ep.load_c`), the bias or zero, accumulates
/// all its segments in registers in the order given, applies the activation when `ep.finish`
/// and stores once — the FMA chain of one pass over K without the zero segments, and without
/// storing and reloading C between segments.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_panels_segs_avx512(
    t: Avx512Token,
    rows: usize,
    cols: usize,
    kc: usize,
    segs: &[(&[f32], usize, usize)],
    b: &[f32],
    panel_stride: usize,
    nr: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    assert!(nr == NR_AVX512 || nr == NR_AVX512_NARROW, "AVX-512 panels are 16 or 32 wide, not {nr}");
    let mr = if nr == NR_AVX512 { MR_AVX512 } else { MR_AVX512_NARROW };
    assert!((1..=mr).contains(&rows) && cols > 0 && segs.len() <= MAX_SEGS, "tile row {rows}x{cols}, {} segments", segs.len());
    let panels = cols.div_ceil(nr);
    assert!(panels == 1 || panel_stride >= kc * nr, "panels overlap");
    assert!(ldc >= cols && c.len() >= (rows - 1) * ldc + cols, "C row too short");
    if let Some(bias) = ep.bias {
        assert!(bias.len() >= cols, "bias too short");
    }
    let check = |&(a, lda, k0): &(&[f32], usize, usize)| {
        assert!(kc == 0 || a.len() >= (rows - 1) * lda + kc, "A segment too short");
        assert!((panels - 1) * panel_stride + (k0 + kc) * nr <= b.len(), "B panels too short");
        (a.as_ptr(), lda, k0 * nr)
    };
    // Segment pointers in a table sized to the call: 4 entries cover dense GEMMs (one
    // segment) and 3×3 convolutions (three); zero-filling all MAX_SEGS entries per tile row was
    // a memset worth 0.6 % of MobileNetV2.
    let mut small = [(std::ptr::null::<f32>(), 0usize, 0usize); 4];
    let mut table;
    let ptrs: &mut [(*const f32, usize, usize)] = if segs.len() <= small.len() {
        &mut small[..segs.len()]
    } else {
        table = [(std::ptr::null::<f32>(), 0usize, 0usize); MAX_SEGS];
        &mut table[..segs.len()]
    };
    for (p, seg) in ptrs.iter_mut().zip(segs) {
        *p = check(seg);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        let segs = &*ptrs;
        let (b, c) = (b.as_ptr(), c.as_mut_ptr());
        macro_rules! go {
            ($r:literal, $nv:literal) => {
                // SAFETY: the token proves AVX-512F/AVX2/FMA; the checks above proved every
                // segment's rows × kc values of A, every panel's segment blocks of B (16·NV
                // wide), C's rows × cols and the bias.
                unsafe { panels_avx512::<$r, $nv>(panels, cols, kc, segs, b, panel_stride, c, ldc, ep) }
            };
        }
        if nr == NR_AVX512 {
            match rows {
                1 => go!(1, 2),
                2 => go!(2, 2),
                3 => go!(3, 2),
                4 => go!(4, 2),
                5 => go!(5, 2),
                6 => go!(6, 2),
                7 => go!(7, 2),
                _ => go!(8, 2),
            }
        } else {
            match rows {
                1 => go!(1, 1),
                2 => go!(2, 1),
                3 => go!(3, 1),
                4 => go!(4, 1),
                5 => go!(5, 1),
                6 => go!(6, 1),
                7 => go!(7, 1),
                8 => go!(8, 1),
                9 => go!(9, 1),
                10 => go!(10, 1),
                11 => go!(11, 1),
                12 => go!(12, 1),
                13 => go!(13, 1),
                14 => go!(14, 1),
                15 => go!(15, 1),
                _ => go!(16, 1),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, b, c, panel_stride, ptrs, ep);
        unreachable!("an Avx512Token cannot exist off x86_64");
    }
}

/// # Safety
/// For every panel `p < panels` and segment `(a, lda, boff)`: `a + r*lda + k` readable for
/// `r < R`, `k < kc`; `b + p*panel_stride + boff + k*16*NV + j` readable for `k < kc`,
/// `j < 16*NV`; C readable and writable at `r*ldc + p*16*NV + j` for the panel's valid columns
/// (at most `cols` in all); `ep.bias`, when present, holds `cols` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn panels_avx512<const R: usize, const NV: usize>(
    panels: usize,
    cols: usize,
    kc: usize,
    segs: &[(*const f32, usize, usize)],
    b: *const f32,
    panel_stride: usize,
    c: *mut f32,
    ldc: usize,
    ep: &Epilogue,
) {
    let nr = 16 * NV;
    for p in 0..panels {
        let j0 = p * nr;
        let valid = (cols - j0).min(nr);
        let (b, c) = (b.wrapping_add(p * panel_stride), c.wrapping_add(j0));
        let bias = ep.bias.map(|bs| bs.as_ptr().wrapping_add(j0));
        macro_rules! go {
            ($z:literal, $y:literal) => {
                // SAFETY: panel p's blocks of B, C's columns j0.. of the panel (at most `valid`
                // written) and the bias from j0 (function contract).
                unsafe { panel_avx512::<R, $z, $y>(valid, nr, kc, segs, b, c, ldc, bias, ep) }
            };
        }
        // A partial last panel computes only the vectors that hold valid columns, a 256-bit
        // one for a last group of ≤ 8: Zen 4 splits a 512-bit FMA into two 256-bit halves, so
        // N = 24 (MobileNetV2's projections) costs 1.5 vectors a row instead of 2, and N = 144
        // 4.5 panels instead of 5. Each output is the same FMA chain, only fewer padding lanes.
        match (NV, valid) {
            (_, 0..=8) => go!(0, 1),
            (1, _) | (_, 9..=16) => go!(1, 0),
            (_, 17..=24) => go!(1, 1),
            _ => go!(2, 0),
        }
    }
}

/// One panel of [`panels_avx512`]: `Z` 512-bit and `Y` 256-bit vectors (`16·Z + 8·Y ≥
/// valid`) of a panel packed `nr` wide, `valid` of its columns stored.
///
/// # Safety
/// For every segment `(a, lda, boff)`: `a + r*lda + k` readable for `r < R`, `k < kc`;
/// `b + boff + k*nr + j` readable for `k < kc`, `j < 16·Z + 8·Y ≤ nr`; C readable and writable
/// at `r*ldc + j` for `r < R`, `j < valid`; `bias`, when present, holds `valid` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn panel_avx512<const R: usize, const Z: usize, const Y: usize>(
    valid: usize,
    nr: usize,
    kc: usize,
    segs: &[(*const f32, usize, usize)],
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    bias: Option<*const f32>,
    ep: &Epilogue,
) {
    let (vmin, vmax) = (_mm512_set1_ps(ep.min), _mm512_set1_ps(ep.max));
    let (ymin, ymax) = (_mm256_set1_ps(ep.min), _mm256_set1_ps(ep.max));
    let masks: [__mmask16; Z] = std::array::from_fn(|v| lane_mask16(valid, v));
    let ymask = lane_mask8(valid.saturating_sub(16 * Z));
    let mut acc = [[_mm512_setzero_ps(); Z]; R];
    let mut yacc = [[_mm256_setzero_ps(); Y]; R];
    if ep.load_c {
        for r in 0..R {
            // SAFETY: row r < R of C, the valid columns (masked, not read past).
            unsafe {
                for v in 0..Z {
                    acc[r][v] = _mm512_maskz_loadu_ps(masks[v], c.add(r * ldc + 16 * v));
                }
                for ya in yacc[r].iter_mut() {
                    *ya = _mm256_maskload_ps(c.add(r * ldc + 16 * Z), ymask);
                }
            }
        }
    } else if let Some(bs) = bias {
        // SAFETY: the bias holds `valid` values; lanes past them are masked off.
        unsafe {
            for v in 0..Z {
                let bv = _mm512_maskz_loadu_ps(masks[v], bs.add(16 * v));
                acc.iter_mut().for_each(|a| a[v] = bv);
            }
            for v in 0..Y {
                let bv = _mm256_maskload_ps(bs.add(16 * Z), ymask);
                yacc.iter_mut().for_each(|a| a[v] = bv);
            }
        }
    }
    for &(a, lda, boff) in segs {
        // SAFETY: the segment's block of the panel (function contract).
        let mut bk = unsafe { b.add(boff) };
        let mut ak = a;
        for _ in 0..kc {
            // SAFETY: k < kc: 16·Z + 8·Y values of B and A's R rows at k (function contract).
            unsafe {
                let bv: [__m512; Z] = std::array::from_fn(|v| _mm512_loadu_ps(bk.add(16 * v)));
                let by: [__m256; Y] = std::array::from_fn(|_| _mm256_loadu_ps(bk.add(16 * Z)));
                for v in 0..Z {
                    _mm_prefetch::<_MM_HINT_T0>(bk.wrapping_add(B_PREFETCH_AHEAD + 16 * v) as *const i8);
                }
                if Z == 0 {
                    _mm_prefetch::<_MM_HINT_T0>(bk.wrapping_add(B_PREFETCH_AHEAD) as *const i8);
                }
                for r in 0..R {
                    let s = *ak.add(r * lda);
                    let x = _mm512_set1_ps(s);
                    for v in 0..Z {
                        acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
                    }
                    // The 256-bit broadcast is the low half of the 512-bit one (no second
                    // load of A per row).
                    let xy = if Z > 0 { _mm512_castps512_ps256(x) } else { _mm256_set1_ps(s) };
                    for v in 0..Y {
                        yacc[r][v] = _mm256_fmadd_ps(xy, by[v], yacc[r][v]);
                    }
                }
                ak = ak.add(1);
                bk = bk.add(nr);
            }
        }
    }
    for r in 0..R {
        for v in 0..Z {
            let mut y = acc[r][v];
            if ep.finish {
                // max(min, x) then min(max, x): a NaN in x propagates, as TFLite's
                // std::max/std::min do.
                y = _mm512_min_ps(vmax, _mm512_max_ps(vmin, y));
            }
            // SAFETY: row r < R, the valid columns (masked) of C.
            unsafe { _mm512_mask_storeu_ps(c.add(r * ldc + 16 * v), masks[v], y) };
        }
        for &ya in &yacc[r] {
            let mut y = ya;
            if ep.finish {
                y = _mm256_min_ps(ymax, _mm256_max_ps(ymin, y));
            }
            // SAFETY: row r < R, the valid columns (masked) of C.
            unsafe { _mm256_maskstore_ps(c.add(r * ldc + 16 * Z), ymask, y) };
        }
    }
}

/// One K segment of an AVX2 row of tiles read through row pointers: row `r` of the tile reads
/// its `kc` values of A from `rows[r]` (in place in the input, or a gathered edge pixel), against
/// the panels' K block from `k0` on. An indirect convolution's tile mixes both, so only the pixels
/// whose taps reach into the padding are gathered.
#[derive(Clone, Copy)]
pub(crate) struct RowSeg<'a> {
    pub rows: [&'a [f32]; MR_AVX2],
    pub k0: usize,
}

impl RowSeg<'_> {
    pub(crate) const EMPTY: RowSeg<'static> = RowSeg { rows: [&[]; MR_AVX2], k0: 0 };
}

/// [`gemm_panels_segs_avx512`] for AVX2: `rows` ≤ [`MR_AVX2`] rows of A against `cols.div_ceil(16)`
/// consecutive 16-column panels (panel `p`'s K block at `b[p * panel_stride ..]`), the K
/// segments `segs` (row `r` of segment `(a, lda, k0)` at `a[r * lda ..]`) accumulated in
/// registers in the order given, C stored once per tile. Bounds are checked once for the row of
/// tiles; whole panels load and store C without masks.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_panels_segs_avx2(
    t: Avx2Token,
    rows: usize,
    cols: usize,
    kc: usize,
    segs: &[(&[f32], usize, usize)],
    b: &[f32],
    panel_stride: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    // A strip of one tile.
    gemm_strip_segs_avx2(t, 0, &[rows], cols, kc, segs, b, panel_stride, c, ldc, ep)
}

/// [`gemm_panels_segs_avx2`] over segments read through row pointers ([`RowSeg`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_panels_rows_avx2(
    t: Avx2Token,
    rows: usize,
    cols: usize,
    kc: usize,
    segs: &[RowSeg<'_>],
    b: &[f32],
    panel_stride: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    for s in segs {
        assert!(s.rows[..rows.min(MR_AVX2)].iter().all(|r| r.len() >= kc), "A segment row too short");
    }
    panels_checked_avx2(t, rows, cols, kc, segs, b, panel_stride, c, ldc, ep)
}

/// Where a segment's rows of A are: `SegA::row(r)` is row `r`'s first value.
pub(crate) trait SegA {
    /// The start of row `r`; the caller has checked it holds `kc` values.
    fn row(&self, r: usize) -> *const f32;
    /// The segment's first K index.
    fn k0(&self) -> usize;
}

impl SegA for (&[f32], usize, usize) {
    #[inline(always)]
    fn row(&self, r: usize) -> *const f32 {
        self.0.as_ptr().wrapping_add(r * self.1)
    }
    #[inline(always)]
    fn k0(&self) -> usize {
        self.2
    }
}

impl SegA for RowSeg<'_> {
    #[inline(always)]
    fn row(&self, r: usize) -> *const f32 {
        self.rows[r].as_ptr()
    }
    #[inline(always)]
    fn k0(&self) -> usize {
        self.k0
    }
}

/// [`gemm_panels_segs_avx2`] for a strip of register tiles down consecutive rows of A and C:
/// tile `i` computes the rows from `ends[i - 1]` (from `start` for the first) to `ends[i]`, at
/// most [`MR_AVX2`] of them, row `r` of segment `(a, lda, k0)` being `a[(r - start) * lda ..]`
/// and row `r` of C `c[(r - start) * ldc ..]`. The bounds are checked once for the strip: with
/// a small K (a 3×3 convolution over 3 channels: K = 27, ~160 cycles of FMAs a tile) one call and
/// its checks per tile had been a third of the time.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_strip_segs_avx2(
    t: Avx2Token,
    start: usize,
    ends: &[usize],
    cols: usize,
    kc: usize,
    segs: &[(&[f32], usize, usize)],
    b: &[f32],
    panel_stride: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    let Some(&end) = ends.last() else { return };
    let mut prev = start;
    for &e in ends {
        assert!(e > prev && e - prev <= MR_AVX2, "strip tile {prev}..{e} is not 1..={MR_AVX2} rows");
        prev = e;
    }
    let rows = end - start;
    for &(a, lda, _) in segs {
        assert!(kc == 0 || a.len() >= (rows - 1) * lda + kc, "A segment too short");
    }
    check_panels_avx2(rows, cols, kc, segs, b, panel_stride, c, ldc, ep);
    let mut tile: [(&[f32], usize, usize); MAX_SEGS] = [(&[], 0, 0); MAX_SEGS];
    let mut r0 = 0;
    for &e in ends {
        let (off, rows) = (r0, e - start - r0);
        for (d, &(a, lda, k0)) in tile.iter_mut().zip(segs) {
            *d = match kc {
                // Nothing of A is read (and A was not checked).
                0 => (&[], lda, k0),
                // SAFETY: off ≤ rows - 1 and a holds (rows - 1)·lda + kc values (checked above),
                // so off·lda ≤ a.len().
                _ => (unsafe { a.get_unchecked(off * lda..) }, lda, k0),
            };
        }
        // SAFETY: 1 ≤ rows ≤ MR_AVX2 (checked above); the strip's checks of A, B, C and the
        // bias cover every tile in it.
        unsafe { panels_unchecked_avx2(t, rows, cols, kc, &tile[..segs.len()], b, panel_stride, &mut c[off * ldc..], ldc, ep) };
        r0 = e - start;
    }
}

/// The checks on B, C and the bias shared by the segment forms (the callers checked A), for
/// `rows` rows of C.
#[allow(clippy::too_many_arguments)]
fn check_panels_avx2<S: SegA>(rows: usize, cols: usize, kc: usize, segs: &[S], b: &[f32], panel_stride: usize, c: &[f32], ldc: usize, ep: &Epilogue) {
    let nr = NR_AVX2;
    assert!(rows >= 1 && cols > 0 && segs.len() <= MAX_SEGS, "tile row {rows}x{cols}, {} segments", segs.len());
    let panels = cols.div_ceil(nr);
    assert!(panels == 1 || panel_stride >= kc * nr, "panels overlap");
    assert!(ldc >= cols && c.len() >= (rows - 1) * ldc + cols, "C row too short");
    if let Some(bias) = ep.bias {
        assert!(bias.len() >= cols, "bias too short");
    }
    for s in segs {
        assert!((panels - 1) * panel_stride + (s.k0() + kc) * nr <= b.len(), "B panels too short");
    }
}

/// One tile read through row pointers ([`gemm_panels_rows_avx2`]): the checks on B, C and the
/// bias ([`check_panels_avx2`]; the caller checked A), then the kernel.
#[allow(clippy::too_many_arguments)]
fn panels_checked_avx2<S: SegA>(
    t: Avx2Token,
    rows: usize,
    cols: usize,
    kc: usize,
    segs: &[S],
    b: &[f32],
    panel_stride: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    assert!(rows <= MR_AVX2, "tile row {rows}x{cols}");
    check_panels_avx2(rows, cols, kc, segs, b, panel_stride, c, ldc, ep);
    // SAFETY: the checks just made; the callers checked A.
    unsafe { panels_unchecked_avx2(t, rows, cols, kc, segs, b, panel_stride, c, ldc, ep) }
}

/// [`panels_checked_avx2`] after its checks.
///
/// # Safety
/// `1 ≤ rows ≤ MR_AVX2`, [`check_panels_avx2`] passed for these rows, and every segment's
/// `rows` rows of A hold `kc` values.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn panels_unchecked_avx2<S: SegA>(
    t: Avx2Token,
    rows: usize,
    cols: usize,
    kc: usize,
    segs: &[S],
    b: &[f32],
    panel_stride: usize,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    let panels = cols.div_ceil(NR_AVX2);
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        let (b, c) = (b.as_ptr(), c.as_mut_ptr());
        macro_rules! go {
            ($r:literal) => {
                // SAFETY: the token proves AVX2/FMA; the function contract covers every
                // segment's rows (kc values each) of A, every panel's segment blocks of B (16
                // wide), C's rows × cols and the bias.
                unsafe { panels_avx2::<$r, S>(panels, cols, kc, segs, b, panel_stride, c, ldc, ep) }
            };
        }
        match rows {
            1 => go!(1),
            2 => go!(2),
            3 => go!(3),
            4 => go!(4),
            5 => go!(5),
            _ => go!(6),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, b, c, panel_stride, segs, ep);
        unreachable!("an Avx2Token cannot exist off x86_64");
    }
}

/// # Safety
/// As [`panels_avx512`] with `NV = 1` in 8-lane halves: for every panel `p < panels` and
/// segment `s`, `s.row(r) + k` readable for `r < R`, `k < kc`;
/// `b + p*panel_stride + boff + k*16 + j` readable for `k < kc`, `j < 16`; C readable and
/// writable at `r*ldc + 16p + j` for the panel's valid columns (at most `cols` in all);
/// `ep.bias`, when present, holds `cols` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn panels_avx2<const R: usize, S: SegA>(
    panels: usize,
    cols: usize,
    kc: usize,
    segs: &[S],
    b: *const f32,
    panel_stride: usize,
    c: *mut f32,
    ldc: usize,
    ep: &Epilogue,
) {
    for p in 0..panels {
        let j0 = p * NR_AVX2;
        let valid = (cols - j0).min(NR_AVX2);
        let (bp, cp) = (b.wrapping_add(p * panel_stride), c.wrapping_add(j0));
        let bias = ep.bias.map(|bs| bs[j0..].as_ptr());
        // SAFETY: panel p's part of the function contract.
        unsafe {
            if valid <= 8 {
                // A panel of at most 8 columns (N = 24, 40, 8 …): one 8-lane half, no FMAs on
                // the zero columns of its packing.
                panel_avx2::<R, S, 1>(valid, kc, segs, bp, cp, ldc, bias, ep)
            } else {
                panel_avx2::<R, S, 2>(valid, kc, segs, bp, cp, ldc, bias, ep)
            }
        }
    }
}

/// One 16-column panel of [`panels_avx2`] in `H` 8-lane halves (`valid ≤ 8·H` columns).
///
/// # Safety
/// [`panels_avx2`]'s contract for this panel: B at `bp`, C at `cp`, the panel's bias at `bias`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn panel_avx2<const R: usize, S: SegA, const H: usize>(
    valid: usize,
    kc: usize,
    segs: &[S],
    bp: *const f32,
    cp: *mut f32,
    ldc: usize,
    bias: Option<*const f32>,
    ep: &Epilogue,
) {
    let (vmin, vmax) = (_mm256_set1_ps(ep.min), _mm256_set1_ps(ep.max));
    // Half h holds columns 8h..8h+8: whole (plain loads and stores) when valid ≥ 8h + 8,
    // masked when partial (vmaskmovps stores are many µops on Zen: only a partial half uses them).
    let whole: [bool; H] = std::array::from_fn(|h| valid >= 8 * h + 8);
    let mask: [__m256i; H] = std::array::from_fn(|h| lane_mask8(valid.saturating_sub(8 * h)));
    let mut acc = [[_mm256_setzero_ps(); H]; R];
    if ep.load_c {
        for (r, acc) in acc.iter_mut().enumerate() {
            for h in 0..H {
                // SAFETY: row r < R of C, the panel's valid columns (masked when partial).
                unsafe {
                    let cr = cp.add(r * ldc + 8 * h);
                    acc[h] = if whole[h] { _mm256_loadu_ps(cr) } else { _mm256_maskload_ps(cr, mask[h]) };
                }
            }
        }
    } else if let Some(bs) = bias {
        for h in 0..H {
            // SAFETY: the bias holds the panel's valid columns.
            let v = unsafe { if whole[h] { _mm256_loadu_ps(bs.add(8 * h)) } else { _mm256_maskload_ps(bs.add(8 * h), mask[h]) } };
            acc.iter_mut().for_each(|a| a[h] = v);
        }
    }
    for s in segs {
        // SAFETY: the segment's block of the panel (function contract).
        let mut bk = unsafe { bp.add(s.k0() * NR_AVX2) };
        let a: [*const f32; R] = std::array::from_fn(|r| s.row(r));
        for k in 0..kc {
            // SAFETY: k < kc: 16 values of B and A's R rows at k (function contract); a
            // prefetch never faults.
            unsafe {
                let bv: [__m256; H] = std::array::from_fn(|h| _mm256_loadu_ps(bk.add(8 * h)));
                _mm_prefetch::<_MM_HINT_T0>(bk.wrapping_add(B_PREFETCH_AHEAD) as *const i8);
                for r in 0..R {
                    let x = _mm256_broadcast_ss(&*a[r].add(k));
                    for h in 0..H {
                        acc[r][h] = _mm256_fmadd_ps(x, bv[h], acc[r][h]);
                    }
                }
                bk = bk.add(NR_AVX2);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        for h in 0..H {
            let mut v = acc[h];
            if ep.finish {
                v = _mm256_min_ps(vmax, _mm256_max_ps(vmin, v));
            }
            // SAFETY: row r < R of C, the panel's valid columns (masked when partial).
            unsafe {
                let cr = cp.add(r * ldc + 8 * h);
                if whole[h] {
                    _mm256_storeu_ps(cr, v)
                } else {
                    _mm256_maskstore_ps(cr, mask[h], v)
                }
            }
        }
    }
}

/// One AVX2 register tile, as [`gemm_tile_avx512`] with 16-column panels and `rows` ≤
/// [`MR_AVX2`]: one panel of [`gemm_panels_segs_avx2`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_tile_avx2(
    t: Avx2Token,
    rows: usize,
    cols: usize,
    kc: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    assert!(cols <= NR_AVX2, "a tile holds at most {NR_AVX2} columns, not {cols}");
    gemm_panels_segs_avx2(t, rows, cols, kc, &[(a, lda, 0)], b, 0, c, ldc, ep)
}

/// Lane mask (all ones in lanes `< n`) for `_mm256_maskload_ps` / `_mm256_maskstore_ps`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn lane_mask8(n: usize) -> __m256i {
    let n = n.min(8) as i32;
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
}
