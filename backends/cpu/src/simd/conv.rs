//! SIMD micro-kernels of the convolution family: the GEMM register tile (used by CONV_2D and
//! FULLY_CONNECTED) and the depthwise-convolution pixel runs.
//!
//! Each entry point is a safe `pub(crate)` wrapper. It takes a token that proves the CPU has the
//! instruction set (tokens are only built after run-time detection), checks every slice bound
//! once, and then calls a `#[target_feature]` function whose inner loops use raw pointers without
//! per-element checks. The portable twins live in `kernels::gemm` and `kernels::depthwise`.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Proof that this CPU runs AVX-512F, AVX2 and FMA; built only by [`Avx512Token::new`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx512Token(());

impl Avx512Token {
    /// Returns a token when the CPU has AVX-512F, AVX2 and FMA.
    pub(crate) fn new() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
            {
                return Some(Avx512Token(()));
            }
        }
        None
    }
}

/// Proof that this CPU runs AVX2 and FMA; built only by [`Avx2Token::new`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2Token(());

impl Avx2Token {
    /// Returns a token when the CPU has AVX2 and FMA.
    pub(crate) fn new() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Some(Avx2Token(()));
            }
        }
        None
    }
}

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

/// Checks the bounds every GEMM tile relies on; panics on a caller bug.
#[allow(clippy::too_many_arguments)]
fn check_tile(
    rows: usize,
    max_rows: usize,
    cols: usize,
    nr: usize,
    kc: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    c: &[f32],
    ldc: usize,
    ep: &Epilogue,
) {
    assert!((1..=max_rows).contains(&rows), "tile rows {rows} outside 1..={max_rows}");
    assert!((1..=nr).contains(&cols), "tile cols {cols} outside 1..={nr}");
    assert!(kc == 0 || a.len() >= (rows - 1) * lda + kc, "A block too short");
    assert!(b.len() >= kc * nr, "B panel too short");
    assert!(ldc >= cols && c.len() >= (rows - 1) * ldc + cols, "C tile too short");
    if let Some(bias) = ep.bias {
        assert!(bias.len() >= cols, "bias too short");
    }
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
    let (vmin, vmax) = (_mm512_set1_ps(ep.min), _mm512_set1_ps(ep.max));
    for p in 0..panels {
        let j0 = p * nr;
        let masks: [__mmask16; NV] = std::array::from_fn(|v| lane_mask16(cols - j0, v));
        let mut acc = [[_mm512_setzero_ps(); NV]; R];
        for v in 0..NV {
            if ep.load_c {
                for (r, accr) in acc.iter_mut().enumerate() {
                    // SAFETY: row r < R of C, the panel's valid columns (masked, not read past).
                    accr[v] = unsafe { _mm512_maskz_loadu_ps(masks[v], c.add(r * ldc + j0 + 16 * v)) };
                }
            } else if let Some(bs) = ep.bias {
                // SAFETY: the bias holds `cols` values; lanes past the panel's are masked off.
                let bv = unsafe { _mm512_maskz_loadu_ps(masks[v], bs.as_ptr().add(j0 + 16 * v)) };
                acc.iter_mut().for_each(|a| a[v] = bv);
            }
        }
        for &(a, lda, boff) in segs {
            // SAFETY: the segment's block of panel p (function contract).
            let mut bk = unsafe { b.add(p * panel_stride + boff) };
            let mut ak = a;
            for _ in 0..kc {
                // SAFETY: k < kc: 16*NV values of B and A's R rows at k (function contract).
                unsafe {
                    let bv: [__m512; NV] = std::array::from_fn(|v| _mm512_loadu_ps(bk.add(16 * v)));
                    for v in 0..NV {
                        _mm_prefetch::<_MM_HINT_T0>(bk.wrapping_add(B_PREFETCH_AHEAD + 16 * v) as *const i8);
                    }
                    for (r, accr) in acc.iter_mut().enumerate() {
                        let x = _mm512_set1_ps(*ak.add(r * lda));
                        for v in 0..NV {
                            accr[v] = _mm512_fmadd_ps(x, bv[v], accr[v]);
                        }
                    }
                    ak = ak.add(1);
                    bk = bk.add(16 * NV);
                }
            }
        }
        for (r, accr) in acc.iter().enumerate() {
            for v in 0..NV {
                let mut y = accr[v];
                if ep.finish {
                    // max(min, x) then min(max, x): a NaN in x propagates, as TFLite's
                    // std::max/std::min do.
                    y = _mm512_min_ps(vmax, _mm512_max_ps(vmin, y));
                }
                // SAFETY: row r < R, the panel's valid columns (masked) of C.
                unsafe { _mm512_mask_storeu_ps(c.add(r * ldc + j0 + 16 * v), masks[v], y) };
            }
        }
    }
}

/// Lane mask of the 16-lane vector `v` of a tile row holding `cols` valid columns.
#[cfg(target_arch = "x86_64")]
fn lane_mask16(cols: usize, v: usize) -> u16 {
    match cols.saturating_sub(16 * v) {
        n if n >= 16 => 0xffff,
        n => ((1u32 << n) - 1) as u16,
    }
}

/// One AVX2 register tile, as [`gemm_tile_avx512`] with 16-column panels and `rows` ≤
/// [`MR_AVX2`].
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
    check_tile(rows, MR_AVX2, cols, NR_AVX2, kc, a, lda, b, c, ldc, ep);
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        let (a, b, c) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        macro_rules! go {
            ($r:literal) => {
                // SAFETY: the token proves AVX2/FMA; `check_tile` proved that A rows r < rows
                // hold kc values at r*lda, that B holds kc*16 values, and that C rows r < rows
                // hold `cols` values at r*ldc (lanes past `cols` are masked off).
                unsafe { tile_avx2::<$r>(kc, a, lda, b, c, ldc, cols, ep) }
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
        let _ = (t, a, b, c);
        unreachable!("an Avx2Token cannot exist off x86_64");
    }
}

/// Lane mask (all ones in lanes `< n`) for `_mm256_maskload_ps` / `_mm256_maskstore_ps`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn lane_mask8(n: usize) -> __m256i {
    let n = n.min(8) as i32;
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
}

/// # Safety
/// AVX2/FMA present; `a` readable at `r*lda + k` and `b` at `k*16 + j` for r < R, k < kc,
/// j < 16; `c` readable and writable at `r*ldc + j` for r < R, j < cols ≤ 16; `ep.bias`, when
/// present, holds at least `cols` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_avx2<const R: usize>(
    kc: usize,
    a: *const f32,
    lda: usize,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    ep: &Epilogue,
) {
    let m0 = lane_mask8(cols);
    let m1 = lane_mask8(cols.saturating_sub(8));
    let mut lo = [_mm256_setzero_ps(); R];
    let mut hi = [_mm256_setzero_ps(); R];
    for r in 0..R {
        // SAFETY: row r < R of C and the bias hold `cols` values (function contract);
        // masked-off lanes (≥ cols) are not read.
        (lo[r], hi[r]) = unsafe {
            match ep.bias {
                _ if ep.load_c => {
                    let cr = c.add(r * ldc);
                    (_mm256_maskload_ps(cr, m0), _mm256_maskload_ps(cr.add(8), m1))
                }
                Some(bias) => (_mm256_maskload_ps(bias.as_ptr(), m0), _mm256_maskload_ps(bias.as_ptr().add(8), m1)),
                None => (_mm256_setzero_ps(), _mm256_setzero_ps()),
            }
        };
    }
    let mut ak = a;
    let mut bk = b;
    for _ in 0..kc {
        // SAFETY: k < kc, so `bk` = b + 16k holds 16 readable values and `ak.add(r*lda)` =
        // a + r*lda + k is readable for r < R (function contract).
        unsafe {
            let b0 = _mm256_loadu_ps(bk);
            let b1 = _mm256_loadu_ps(bk.add(8));
            for r in 0..R {
                let x = _mm256_broadcast_ss(&*ak.add(r * lda));
                lo[r] = _mm256_fmadd_ps(x, b0, lo[r]);
                hi[r] = _mm256_fmadd_ps(x, b1, hi[r]);
            }
            ak = ak.add(1);
            bk = bk.add(16);
        }
    }
    let vmin = _mm256_set1_ps(ep.min);
    let vmax = _mm256_set1_ps(ep.max);
    for r in 0..R {
        // SAFETY: row r < R of C holds `cols` values at r*ldc; masked-off lanes (≥ cols) are
        // not written.
        unsafe {
            let cr = c.add(r * ldc);
            let (mut v0, mut v1) = (lo[r], hi[r]);
            if ep.finish {
                v0 = _mm256_min_ps(vmax, _mm256_max_ps(vmin, v0));
                v1 = _mm256_min_ps(vmax, _mm256_max_ps(vmin, v1));
            }
            _mm256_maskstore_ps(cr, m0, v0);
            _mm256_maskstore_ps(cr.add(8), m1, v1);
        }
    }
}

/// A run of depthwise-convolution output pixels (multiplier 1) that share one set of valid
/// taps: pixel `p < n_pix`, tap `(i < n_kh, j < n_kw)` and channel `ch < c` read
/// `input[in_off + p*pix_step + i*kh_step + j*kw_step + ch]` and
/// `filter[f_off + i*f_kh_step + j*c + ch]`. Sums start from the bias and take the taps
/// column by column (`j` outer, `i` inner), as XNNPACK does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DwRun<'a> {
    /// The whole NHWC input.
    pub input: &'a [f32],
    /// Input offset of pixel 0, first valid tap, channel 0.
    pub in_off: usize,
    /// Input distance between consecutive output pixels (`stride_w * c`).
    pub pix_step: usize,
    /// Input distance between consecutive filter rows (`dil_h * in_w * c`).
    pub kh_step: usize,
    /// Input distance between consecutive filter columns (`dil_w * c`).
    pub kw_step: usize,
    /// Valid filter rows.
    pub n_kh: usize,
    /// Valid filter columns.
    pub n_kw: usize,
    /// The whole filter, `[k_h, k_w, c]`.
    pub filter: &'a [f32],
    /// Filter offset of the first valid tap.
    pub f_off: usize,
    /// Filter distance between consecutive filter rows (`k_w * c`).
    pub f_kh_step: usize,
    /// Channels.
    pub c: usize,
    /// Per-channel bias (at least `c` values).
    pub bias: Option<&'a [f32]>,
    /// Lower clamp bound.
    pub min: f32,
    /// Upper clamp bound.
    pub max: f32,
}

impl DwRun<'_> {
    /// Panics unless every read of the run and the `n_pix * c` outputs are in bounds.
    fn check(&self, n_pix: usize, out: &[f32]) {
        assert!(out.len() >= n_pix * self.c, "depthwise output too short");
        if let Some(bias) = self.bias {
            assert!(bias.len() >= self.c, "depthwise bias too short");
        }
        if n_pix == 0 || self.n_kh == 0 || self.n_kw == 0 || self.c == 0 {
            return;
        }
        let last_in = self.in_off
            + (n_pix - 1) * self.pix_step
            + (self.n_kh - 1) * self.kh_step
            + (self.n_kw - 1) * self.kw_step
            + self.c;
        assert!(last_in <= self.input.len(), "depthwise input read out of bounds");
        let last_f = self.f_off + (self.n_kh - 1) * self.f_kh_step + (self.n_kw - 1) * self.c + self.c;
        assert!(last_f <= self.filter.len(), "depthwise filter read out of bounds");
    }
}

/// Writes `clamp(bias)` (or `clamp(0)`) to the `n_pix` pixels of a run with no valid tap
/// (the pixel sees only padding), without touching the input.
fn dw_bias_only(run: &DwRun, n_pix: usize, out: &mut [f32]) {
    let c = run.c;
    for o in out[..n_pix * c].chunks_exact_mut(c.max(1)) {
        for (ch, v) in o.iter_mut().enumerate() {
            let b = run.bias.map_or(0.0, |b| b[ch]);
            let y = if b < run.min { run.min } else { b };
            *v = if run.max < y { run.max } else { y };
        }
    }
}

/// Computes `n_pix` output pixels of a depthwise run with AVX-512 (see [`DwRun`]), writing
/// `out[p*c + ch]`.
pub(crate) fn dw_run_avx512(t: Avx512Token, run: &DwRun, n_pix: usize, out: &mut [f32]) {
    run.check(n_pix, out);
    if run.n_kh == 0 || run.n_kw == 0 || run.c == 0 {
        return dw_bias_only(run, n_pix, out);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        // SAFETY: the token proves AVX-512F/FMA and `check` proved every read of the run (at
        // least one tap) and the n_pix*c writes in bounds.
        unsafe { dw_avx512(run, n_pix, out.as_mut_ptr()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, out);
        unreachable!("an Avx512Token cannot exist off x86_64");
    }
}

/// Splits a run into blocks of 8, 4, 2 and 1 pixels and calls `$block::<P, V, KH, KW>` on
/// each: `P` pixels × `V` channel vectors make 8 independent accumulators (enough to hide
/// FMA latency), and the filter size is a constant for the common 3×3 and 5×5 (`0` = read it
/// from the run) so those loops unroll fully.
#[cfg(target_arch = "x86_64")]
macro_rules! dw_blocks {
    ($block:ident, $run:expr, $n_pix:expr, $out:expr) => {{
        let (run, n_pix, out) = ($run, $n_pix, $out);
        macro_rules! sized {
            ($kh:literal, $kw:literal) => {{
                let mut p = 0;
                while p + 8 <= n_pix {
                    // SAFETY: pixels p..p+8 lie inside the checked run (contract).
                    unsafe { $block::<8, 1, $kh, $kw>(run, p, out) };
                    p += 8;
                }
                if p + 4 <= n_pix {
                    // SAFETY: pixels p..p+4 lie inside the checked run (contract).
                    unsafe { $block::<4, 2, $kh, $kw>(run, p, out) };
                    p += 4;
                }
                if p + 2 <= n_pix {
                    // SAFETY: pixels p..p+2 lie inside the checked run (contract).
                    unsafe { $block::<2, 4, $kh, $kw>(run, p, out) };
                    p += 2;
                }
                if p < n_pix {
                    // SAFETY: pixel p lies inside the checked run (contract).
                    unsafe { $block::<1, 4, $kh, $kw>(run, p, out) };
                }
            }};
        }
        match (run.n_kh, run.n_kw) {
            (3, 3) => sized!(3, 3),
            (5, 5) => sized!(5, 5),
            _ => sized!(0, 0),
        }
    }};
}

/// # Safety
/// AVX-512F/FMA present, `run.check(n_pix, out)` passed for the slice behind `out`, and the
/// run has at least one tap and one channel.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn dw_avx512(run: &DwRun, n_pix: usize, out: *mut f32) {
    dw_blocks!(dw_block_avx512, run, n_pix, out)
}

/// # Safety
/// As [`dw_avx512`], with pixels `p0..p0 + P` inside the checked run; `KH`/`KW` are 0 or
/// equal to `run.n_kh`/`run.n_kw`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn dw_block_avx512<const P: usize, const V: usize, const KH: usize, const KW: usize>(
    run: &DwRun,
    p0: usize,
    out: *mut f32,
) {
    const L: usize = 16;
    let c = run.c;
    let (n_kh, n_kw) = if KH > 0 { (KH, KW) } else { (run.n_kh, run.n_kw) };
    let (ps, khs, kws, fkhs) = (run.pix_step, run.kh_step, run.kw_step, run.f_kh_step);
    let vmin = _mm512_set1_ps(run.min);
    let vmax = _mm512_set1_ps(run.max);
    // SAFETY: pixel p0, tap 0 and pixel p0's output are the first elements of regions `check`
    // proved in bounds.
    let (x0, w0, o0) = unsafe {
        (run.input.as_ptr().add(run.in_off + p0 * ps), run.filter.as_ptr().add(run.f_off), out.add(p0 * c))
    };
    let mut ch = 0;
    // Full steps of V vectors: no masks.
    while ch + V * L <= c {
        let mut acc = [[_mm512_setzero_ps(); V]; P];
        if let Some(bias) = run.bias {
            for v in 0..V {
                // SAFETY: ch + V*L ≤ c and the bias holds c values.
                let b = unsafe { _mm512_loadu_ps(bias.as_ptr().add(ch + v * L)) };
                acc.iter_mut().for_each(|a| a[v] = b);
            }
        }
        for j in 0..n_kw {
            for i in 0..n_kh {
                // SAFETY: tap (i, j) < (n_kh, n_kw) of pixels p0..p0+P, channels
                // ch..ch+V*L ≤ c: `check` bounded the last tap of the last pixel of the run.
                unsafe {
                    let wp = w0.add(i * fkhs + j * c + ch);
                    let x = x0.add(i * khs + j * kws + ch);
                    let w: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(wp.add(v * L)));
                    for (q, a) in acc.iter_mut().enumerate() {
                        for v in 0..V {
                            a[v] = _mm512_fmadd_ps(_mm512_loadu_ps(x.add(q * ps + v * L)), w[v], a[v]);
                        }
                    }
                }
            }
        }
        for (q, a) in acc.iter().enumerate() {
            for (v, a) in a.iter().enumerate() {
                let y = _mm512_min_ps(vmax, _mm512_max_ps(vmin, *a));
                // SAFETY: pixel p0 + q < n_pix and ch + v*L + L ≤ c: inside out[..n_pix*c].
                unsafe { _mm512_storeu_ps(o0.add(q * c + ch + v * L), y) };
            }
        }
        ch += V * L;
    }
    // Remaining channels one vector at a time, the last one masked.
    while ch < c {
        let m: __mmask16 = if c - ch >= L { 0xffff } else { (1u32 << (c - ch)) as u16 - 1 };
        let init = match run.bias {
            // SAFETY: the bias holds c values; lanes ≥ c - ch are masked off (not read).
            Some(bias) => unsafe { _mm512_maskz_loadu_ps(m, bias.as_ptr().add(ch)) },
            None => _mm512_setzero_ps(),
        };
        let mut acc = [init; P];
        for j in 0..n_kw {
            for i in 0..n_kh {
                // SAFETY: as above, with lanes ≥ c - ch masked off (neither read nor faulting).
                unsafe {
                    let w = _mm512_maskz_loadu_ps(m, w0.add(i * fkhs + j * c + ch));
                    let x = x0.add(i * khs + j * kws + ch);
                    for (q, a) in acc.iter_mut().enumerate() {
                        *a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x.add(q * ps)), w, *a);
                    }
                }
            }
        }
        for (q, a) in acc.iter().enumerate() {
            let y = _mm512_min_ps(vmax, _mm512_max_ps(vmin, *a));
            // SAFETY: pixel p0 + q < n_pix and lanes ≥ c - ch are masked: inside out[..n_pix*c].
            unsafe { _mm512_mask_storeu_ps(o0.add(q * c + ch), m, y) };
        }
        ch += L;
    }
}

/// Computes `n_pix` output pixels of a depthwise run with AVX2 (see [`DwRun`]).
pub(crate) fn dw_run_avx2(t: Avx2Token, run: &DwRun, n_pix: usize, out: &mut [f32]) {
    run.check(n_pix, out);
    if run.n_kh == 0 || run.n_kw == 0 || run.c == 0 {
        return dw_bias_only(run, n_pix, out);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        // SAFETY: the token proves AVX2/FMA and `check` proved every read of the run (at least
        // one tap) and the n_pix*c writes in bounds.
        unsafe { dw_avx2(run, n_pix, out.as_mut_ptr()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, out);
        unreachable!("an Avx2Token cannot exist off x86_64");
    }
}

/// # Safety
/// AVX2/FMA present, `run.check(n_pix, out)` passed for the slice behind `out`, and the run
/// has at least one tap and one channel.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dw_avx2(run: &DwRun, n_pix: usize, out: *mut f32) {
    dw_blocks!(dw_block_avx2, run, n_pix, out)
}

/// # Safety
/// As [`dw_avx2`], with pixels `p0..p0 + P` inside the checked run; `KH`/`KW` are 0 or equal
/// to `run.n_kh`/`run.n_kw`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dw_block_avx2<const P: usize, const V: usize, const KH: usize, const KW: usize>(
    run: &DwRun,
    p0: usize,
    out: *mut f32,
) {
    const L: usize = 8;
    let c = run.c;
    let (n_kh, n_kw) = if KH > 0 { (KH, KW) } else { (run.n_kh, run.n_kw) };
    let (ps, khs, kws, fkhs) = (run.pix_step, run.kh_step, run.kw_step, run.f_kh_step);
    let vmin = _mm256_set1_ps(run.min);
    let vmax = _mm256_set1_ps(run.max);
    // SAFETY: pixel p0, tap 0 and pixel p0's output are the first elements of regions `check`
    // proved in bounds.
    let (x0, w0, o0) = unsafe {
        (run.input.as_ptr().add(run.in_off + p0 * ps), run.filter.as_ptr().add(run.f_off), out.add(p0 * c))
    };
    let mut ch = 0;
    // Full steps of V vectors: no masks.
    while ch + V * L <= c {
        let mut acc = [[_mm256_setzero_ps(); V]; P];
        if let Some(bias) = run.bias {
            for v in 0..V {
                // SAFETY: ch + V*L ≤ c and the bias holds c values.
                let b = unsafe { _mm256_loadu_ps(bias.as_ptr().add(ch + v * L)) };
                acc.iter_mut().for_each(|a| a[v] = b);
            }
        }
        for j in 0..n_kw {
            for i in 0..n_kh {
                // SAFETY: tap (i, j) < (n_kh, n_kw) of pixels p0..p0+P, channels
                // ch..ch+V*L ≤ c: `check` bounded the last tap of the last pixel of the run.
                unsafe {
                    let wp = w0.add(i * fkhs + j * c + ch);
                    let x = x0.add(i * khs + j * kws + ch);
                    let w: [__m256; V] = std::array::from_fn(|v| _mm256_loadu_ps(wp.add(v * L)));
                    for (q, a) in acc.iter_mut().enumerate() {
                        for v in 0..V {
                            a[v] = _mm256_fmadd_ps(_mm256_loadu_ps(x.add(q * ps + v * L)), w[v], a[v]);
                        }
                    }
                }
            }
        }
        for (q, a) in acc.iter().enumerate() {
            for (v, a) in a.iter().enumerate() {
                let y = _mm256_min_ps(vmax, _mm256_max_ps(vmin, *a));
                // SAFETY: pixel p0 + q < n_pix and ch + v*L + L ≤ c: inside out[..n_pix*c].
                unsafe { _mm256_storeu_ps(o0.add(q * c + ch + v * L), y) };
            }
        }
        ch += V * L;
    }
    // Remaining channels one vector at a time, the last one masked.
    while ch < c {
        let m = lane_mask8(c - ch);
        let init = match run.bias {
            // SAFETY: the bias holds c values; lanes ≥ c - ch are masked off (not read).
            Some(bias) => unsafe { _mm256_maskload_ps(bias.as_ptr().add(ch), m) },
            None => _mm256_setzero_ps(),
        };
        let mut acc = [init; P];
        for j in 0..n_kw {
            for i in 0..n_kh {
                // SAFETY: as above, with lanes ≥ c - ch masked off (neither read nor faulting).
                unsafe {
                    let w = _mm256_maskload_ps(w0.add(i * fkhs + j * c + ch), m);
                    let x = x0.add(i * khs + j * kws + ch);
                    for (q, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_fmadd_ps(_mm256_maskload_ps(x.add(q * ps), m), w, *a);
                    }
                }
            }
        }
        for (q, a) in acc.iter().enumerate() {
            let y = _mm256_min_ps(vmax, _mm256_max_ps(vmin, *a));
            // SAFETY: pixel p0 + q < n_pix and lanes ≥ c - ch are masked: inside out[..n_pix*c].
            unsafe { _mm256_maskstore_ps(o0.add(q * c + ch), m, y) };
        }
        ch += L;
    }
}
