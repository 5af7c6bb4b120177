//! Packed-weight GEMM shared by CONV_2D (after im2col, or directly for 1×1) and FULLY_CONNECTED.
//!
//! The weights (`B`, the `N×K` filter seen column-wise) are packed once at prepare time into
//! panels of `NR` output channels, `k`-major, zero padded, 64-byte aligned ([`PackedB`]). At run
//! time [`gemm`] walks `C` in register tiles of `MR` rows × `NR` columns; each tile reads `A`
//! rows in place (row stride `lda`, no A packing) and a contiguous slice of one B panel, and
//! fuses bias and activation into its store. Loops are blocked so that a tile's A rows stay in
//! L1 across panels (`KC`) and a block of B panels stays in L2 across row tiles (`NC`).
//! Rows are split across the current run's kernel pool; when `M` is too small for that (FC with a
//! batch of 1), panel ranges are split instead.
#![forbid(unsafe_code)]

use std::cell::RefCell;


use super::Act;
use crate::simd::gemm::{self as sc, Epilogue};
use crate::simd::{Avx2Token, Avx512Token};
use crate::simd::elementwise::{self as ew, VBin};
use crate::simd::residual::PaddedRows;
use crate::simd::{self, Isa};
use crate::lines::Lines;
use crate::prepack;

mod implicit;
pub(crate) use implicit::{gemm_segmented, gemm_segmented_then, Segment, SegmentSource};

/// Rows of the portable register tile.
const MR_PORTABLE: usize = 4;
/// Columns of the portable register tile (two SSE vectors, one NEON pair).
const NR_PORTABLE: usize = 8;
/// Most rows any register tile has (size of stack arrays of row views).
const MAX_MR: usize = 16;
/// Widest panel of any micro-kernel (size of the column-split tile buffer).
const MAX_NR: usize = 32;
const _: () = assert!(MAX_MR >= sc::MR_AVX512 && MAX_MR >= sc::MR_AVX512_NARROW && MAX_MR >= sc::MR_AVX2 && MAX_MR >= MR_PORTABLE);
const _: () = assert!(MAX_NR >= sc::NR_AVX512 && MAX_NR >= sc::NR_AVX2 && MAX_NR >= NR_PORTABLE);
/// Largest K block: A rows of one tile (`MR × KC` floats) stay in L1 across panels.
const KC_MAX: usize = 512;
/// Bytes of packed B kept hot in L2 across the row tiles of one task.
const B_BLOCK_BYTES: usize = 512 * 1024;
/// Below this many multiply-adds a GEMM runs on the calling thread.
const PAR_MIN_MACS: usize = 1 << 16;
/// On one thread, a GEMM with a `then` (an epilogue over its output) runs in bands of rows whose
/// C holds about this many bytes, each band's `then` run while it is still in L2.
const THEN_BAND_BYTES: usize = 128 * 1024;
/// Fewest rows of such a band: each band streams all of B again, which these rows amortize.
const THEN_BAND_MIN_ROWS: usize = 64;

/// Rows per band of a one-thread GEMM with a `then` over `n` columns: a multiple of `unit`.
fn then_band_rows(n: usize, unit: usize) -> usize {
    let rows = (THEN_BAND_BYTES / (4 * n.max(1))).max(THEN_BAND_MIN_ROWS);
    rows.div_ceil(unit.max(1)) * unit.max(1)
}

/// The weights of a GEMM, `B[k][j] = w[j*k + k]`, packed for the micro-kernel of one
/// instruction set. Built once at prepare time by [`PackedB::pack`].
#[derive(Debug)]
pub struct PackedB {
    n: usize,
    k: usize,
    nr: usize,
    isa: Isa,
    /// Panels of `k × nr` floats, 64-byte aligned (packed here, or mapped from an artifact's
    /// parameters: `crate::prepack`).
    data: Lines<f32>,
}

impl PackedB {
    /// Packs `w`, an `N×K` row-major matrix whose row `j` holds the `K` weights of output
    /// channel `j` (TFLite FULLY_CONNECTED `[N, K]`, or CONV_2D `[O, KH, KW, I]` flattened),
    /// for the instruction set this CPU runs (detected once per process).
    ///
    /// # Panics
    /// If `w.len() < n * k`.
    pub fn pack(n: usize, k: usize, w: &[f32]) -> PackedB {
        Self::pack_with_isa(simd::isa(), n, k, w)
    }

    /// As [`PackedB::pack`], for the micro-kernel of `isa` (tests compare instruction sets).
    pub(crate) fn pack_with_isa(isa: Isa, n: usize, k: usize, w: &[f32]) -> PackedB {
        assert!(w.len() >= n * k, "weights hold {} values, N×K = {n}×{k} needs {}", w.len(), n * k);
        Self::panels(isa, n, k, |j0, cols, nr, dst| simd::pack::pack_panel(w, k, j0, cols, nr, dst))
    }

    /// Packs `b`, a `K×N` row-major matrix (row `kk` holds `B[kk][0..N]`: a BATCH_MATMUL's
    /// right-hand side as stored), the same panels as [`PackedB::pack`] of its transpose: each
    /// panel row is a copy of part of one row of `b`, no transpose.
    ///
    /// # Panics
    /// If `b.len() < k * n`.
    pub fn pack_kn(n: usize, k: usize, b: &[f32]) -> PackedB {
        assert!(b.len() >= n * k, "matrix holds {} values, K×N = {k}×{n} needs {}", b.len(), n * k);
        Self::panels(simd::isa(), n, k, |j0, cols, nr, dst| {
            for (kk, row) in dst.chunks_exact_mut(nr).enumerate() {
                row[..cols].copy_from_slice(&b[kk * n + j0..kk * n + j0 + cols]);
                row[cols..].fill(0.0);
            }
        })
    }

    /// The panels of an `N×K` product for `isa`'s micro-kernel, `fill(j0, cols, nr, panel)`
    /// writing each (`k × nr` floats: columns `j0 .. j0 + cols`, the rest zero).
    fn panels(isa: Isa, n: usize, k: usize, fill: impl Fn(usize, usize, usize, &mut [f32])) -> PackedB {
        let nr = nr_for(isa, n);
        let panel = k * nr;
        let len = n.div_ceil(nr) * panel;
        let facts = [isa as u64, n as u64, k as u64, nr as u64];
        // Every 32-float row of a panel is one or two whole cache lines.
        let data = prepack::lines(prepack::tag::F32_PANELS, facts, len, |data: &mut [f32]| {
            if panel == 0 {
                return;
            }
            for (p, dst) in data.chunks_exact_mut(panel).enumerate() {
                let j0 = p * nr;
                fill(j0, nr.min(n - j0), nr, dst);
            }
        });
        PackedB { n, k, nr, isa, data }
    }

    /// Output channels (`N`).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Reduction length (`K`).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Panels `p..` (each `k × nr` floats) as one slice.
    fn panels_from(&self, p: usize) -> &[f32] {
        &self.data[p * self.k * self.nr..self.n.div_ceil(self.nr) * self.k * self.nr]
    }

    /// Panel `p`: `k × nr` floats, row `kk` holding `B[kk][p*nr .. p*nr + nr]`.
    fn panel(&self, p: usize) -> &[f32] {
        let size = self.k * self.nr;
        &self.data[p * size..(p + 1) * size]
    }
}

/// Panel width of the micro-kernel of `isa` for `n` output channels.
fn nr_for(isa: Isa, n: usize) -> usize {
    match isa {
        Isa::Avx512 if n <= sc::NR_AVX512_NARROW => sc::NR_AVX512_NARROW,
        Isa::Avx512 => sc::NR_AVX512,
        Isa::Avx2Fma => sc::NR_AVX2,
        Isa::Scalar | Isa::Neon => NR_PORTABLE,
    }
}

/// The micro-kernel a [`PackedB`] runs with.
#[derive(Clone, Copy, Debug)]
enum Micro {
    Avx512(Avx512Token),
    Avx2(Avx2Token),
    Portable,
}

impl Micro {
    /// The kernel matching `b`'s packing, falling back to portable code (which handles any
    /// panel width) when the CPU lacks the instruction set.
    fn for_packed(b: &PackedB) -> (Micro, usize) {
        match b.isa {
            Isa::Avx512 => match Avx512Token::new() {
                Some(t) if b.nr == sc::NR_AVX512_NARROW => (Micro::Avx512(t), sc::MR_AVX512_NARROW),
                Some(t) => (Micro::Avx512(t), sc::MR_AVX512),
                None => (Micro::Portable, MR_PORTABLE),
            },
            Isa::Avx2Fma => match Avx2Token::new() {
                Some(t) => (Micro::Avx2(t), sc::MR_AVX2),
                None => (Micro::Portable, MR_PORTABLE),
            },
            Isa::Scalar | Isa::Neon => (Micro::Portable, MR_PORTABLE),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn tile(
        self,
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
        match self {
            Micro::Avx512(t) => sc::gemm_tile_avx512(t, rows, cols, kc, a, lda, b, nr, c, ldc, ep),
            Micro::Avx2(t) => sc::gemm_tile_avx2(t, rows, cols, kc, a, lda, b, c, ldc, ep),
            Micro::Portable => match nr {
                8 => tile_portable::<8>(rows, cols, kc, a, lda, b, c, ldc, ep),
                16 => tile_portable::<16>(rows, cols, kc, a, lda, b, c, ldc, ep),
                _ => tile_portable::<32>(rows, cols, kc, a, lda, b, c, ldc, ep),
            },
        }
    }
}

/// Portable register tile with the semantics of `simd::gemm::gemm_tile_avx512`, written so
/// LLVM keeps the accumulators in vector registers (fixed-size arrays, bounds proven once).
#[allow(clippy::too_many_arguments)]
fn tile_portable<const NR: usize>(
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
    match rows {
        1 => tile_portable_r::<1, NR>(cols, kc, a, lda, b, c, ldc, ep),
        2 => tile_portable_r::<2, NR>(cols, kc, a, lda, b, c, ldc, ep),
        3 => tile_portable_r::<3, NR>(cols, kc, a, lda, b, c, ldc, ep),
        _ => tile_portable_r::<4, NR>(cols, kc, a, lda, b, c, ldc, ep),
    }
}

#[allow(clippy::too_many_arguments)]
fn tile_portable_r<const R: usize, const NR: usize>(
    cols: usize,
    kc: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    let arows: [&[f32]; R] = std::array::from_fn(|r| &a[r * lda..r * lda + kc]);
    // Each sum starts from C (later K blocks) or the bias (the first), as the SIMD tiles do;
    // this twin multiplies and adds separately (no FMA), so it may differ from them by rounding.
    let mut acc = [[0.0f32; NR]; R];
    for (r, accr) in acc.iter_mut().enumerate() {
        let start = if ep.load_c { Some(&c[r * ldc..r * ldc + cols]) } else { ep.bias.map(|b| &b[..cols]) };
        if let Some(start) = start {
            accr[..cols].copy_from_slice(start);
        }
    }
    for (kk, brow) in b[..kc * NR].chunks_exact(NR).enumerate() {
        for r in 0..R {
            let x = arows[r][kk];
            for (s, &w) in acc[r].iter_mut().zip(brow) {
                *s += x * w;
            }
        }
    }
    for (r, accr) in acc.iter().enumerate() {
        let crow = &mut c[r * ldc..r * ldc + cols];
        for (dst, &s) in crow.iter_mut().zip(accr) {
            *dst = if ep.finish { clamp(s, ep.min, ep.max) } else { s };
        }
    }
}

/// TFLite's activation clamp, `min(max(x, lo), hi)` with std::max/min semantics: a NaN input
/// stays NaN (unlike `f32::max`).
#[inline(always)]
pub(crate) fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let y = if x < lo { lo } else { x };
    if hi < y {
        hi
    } else {
        y
    }
}

/// Where the rows of `A` come from: a matrix in memory, or an im2col view built tile by tile.
pub(crate) trait ASource: Sync {
    /// Returns `(s, lda)` such that `s[r*lda + kk]` = `A[row0 + r][k0 + kk]` for `r < rows`,
    /// `kk < kc`. Implementations may fill `scratch` (grown as needed, reused across calls).
    fn block<'s>(
        &'s self,
        row0: usize,
        rows: usize,
        k0: usize,
        kc: usize,
        scratch: &'s mut Vec<f32>,
    ) -> (&'s [f32], usize);

    /// Whether `block` reads A in place (no copy), so one block may cover a strip of tiles.
    fn in_place(&self) -> bool {
        false
    }
}

/// A row-major `A` in memory.
struct Dense<'a> {
    a: &'a [f32],
    lda: usize,
}

impl ASource for Dense<'_> {
    fn block<'s>(&'s self, row0: usize, _: usize, k0: usize, _: usize, _: &'s mut Vec<f32>) -> (&'s [f32], usize) {
        // `get` keeps K = 0 (an empty A) from indexing past the end.
        (self.a.get(row0 * self.lda + k0..).unwrap_or(&[]), self.lda)
    }

    fn in_place(&self) -> bool {
        true
    }
}

thread_local! {
    /// Per-thread scratch for A blocks built on the fly (im2col), reused across calls.
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// The column-split GEMM's band of C (see [`gemm_with`]), kept for the next call.
    static COL_TILES: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's scratch buffer (a fresh one if it is somehow already in use).
fn with_scratch<R>(f: impl FnOnce(&mut Vec<f32>) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Vec::new()),
    })
}

/// `C[i][j] = act(sum_k A[i][k] * B[k][j] + bias[j])` for `i < m`, `j < b.n()`.
///
/// `A` is `m × b.k()` row-major with row stride `lda`; `C` has row stride `ldc`. Work is split
/// across the current run's kernel pool (install one with `nnrt_threads::KernelPool::install`); with one thread, or
/// for tiny products, it runs on the calling thread. Allocates nothing per call.
///
/// # Panics
/// If `a`, `c` or `bias` are too short for the shapes, or `lda < k`, `ldc < n`.
#[allow(clippy::too_many_arguments)]
pub fn gemm(m: usize, a: &[f32], lda: usize, b: &PackedB, bias: Option<&[f32]>, act: Act, c: &mut [f32], ldc: usize) {
    if m > 0 && b.k > 0 {
        assert!(lda >= b.k && a.len() >= (m - 1) * lda + b.k, "A too short for {m}×{} (lda {lda})", b.k);
    }
    gemm_with(m, &Dense { a, lda }, b, bias, act, c, ldc);
}

/// Block sizes and kernel of one GEMM call.
struct Plan<'b> {
    micro: Micro,
    mr: usize,
    nr: usize,
    n: usize,
    panels: usize,
    /// K blocks: `nkb` blocks of `kc` (the last one shorter).
    kc: usize,
    nkb: usize,
    /// Panels per L2-resident block of B.
    nc_panels: usize,
    b: &'b PackedB,
    bias: Option<&'b [f32]>,
    act: Act,
}

impl<'b> Plan<'b> {
    fn new(b: &'b PackedB, bias: Option<&'b [f32]>, act: Act) -> Self {
        let (micro, mr) = Micro::for_packed(b);
        let nkb = b.k.div_ceil(KC_MAX).max(1);
        let kc = b.k.div_ceil(nkb);
        let nc_panels = (B_BLOCK_BYTES / 4 / (kc.max(1) * b.nr)).max(1);
        Plan { micro, mr, nr: b.nr, n: b.n, panels: b.n.div_ceil(b.nr), kc, nkb, nc_panels, b, bias, act }
    }

    /// The plan of an `m`-row product into `c` (row stride `ldc`), with `c` cut to the rows it
    /// writes; `None` when there is nothing to compute.
    ///
    /// # Panics
    /// If `c` or `bias` are too short, or `ldc < n`.
    fn checked<'c>(m: usize, b: &'b PackedB, bias: Option<&'b [f32]>, act: Act, c: &'c mut [f32], ldc: usize) -> Option<(Self, &'c mut [f32])> {
        let n = b.n;
        if m == 0 || n == 0 {
            return None;
        }
        assert!(ldc >= n && c.len() >= (m - 1) * ldc + n, "C too short for {m}×{n} (ldc {ldc})");
        if let Some(bias) = bias {
            assert!(bias.len() >= n, "bias holds {} values, N = {n}", bias.len());
        }
        Some((Plan::new(b, bias, act), &mut c[..(m - 1) * ldc + n]))
    }

    /// Panels `pb..pe` of the `rows`-row tile whose C starts at `c` (column 0 of `c` is panel
    /// `pb`'s first column), for K block `kb`, from the A block `a` (row stride `lda`) holding
    /// that K block.
    #[allow(clippy::too_many_arguments)]
    fn kblock_tiles(&self, kb: usize, rows: usize, a: &[f32], lda: usize, pb: usize, pe: usize, c: &mut [f32], ldc: usize) {
        let (k0, kc, _) = self.kblock(kb, 0, 0);
        if let Micro::Avx512(_) | Micro::Avx2(_) = self.micro {
            let j0 = pb * self.nr;
            let cols = (pe * self.nr).min(self.n) - j0;
            let (_, _, ep) = self.kblock(kb, j0, cols);
            let stride = self.b.k * self.nr;
            let b = &self.b.panels_from(pb)[k0 * self.nr..];
            match self.micro {
                Micro::Avx512(t) => sc::gemm_panels_avx512(t, rows, cols, kc, a, lda, b, stride, self.nr, c, ldc, &ep),
                Micro::Avx2(t) => sc::gemm_panels_segs_avx2(t, rows, cols, kc, &[(a, lda, 0)], b, stride, c, ldc, &ep),
                Micro::Portable => {}
            }
            return;
        }
        for pi in pb..pe {
            let j0 = pi * self.nr;
            let cols = self.nr.min(self.n - j0);
            let (_, _, ep) = self.kblock(kb, j0, cols);
            let bp = &self.b.panel(pi)[k0 * self.nr..(k0 + kc) * self.nr];
            self.micro.tile(rows, cols, kc, a, lda, bp, self.nr, &mut c[(pi - pb) * self.nr..], ldc, &ep);
        }
    }

    /// K range and epilogue of K block `i`, for the columns starting at `j0`.
    fn kblock(&self, i: usize, j0: usize, cols: usize) -> (usize, usize, Epilogue<'b>) {
        let k0 = i * self.kc;
        let kc = self.kc.min(self.b.k - k0.min(self.b.k));
        let ep = Epilogue {
            load_c: i > 0,
            finish: i + 1 == self.nkb,
            bias: self.bias.map(|b| &b[j0..j0 + cols]),
            min: self.act.min,
            max: self.act.max,
        };
        (k0, kc, ep)
    }
}

/// [`gemm`] followed by a residual ADD: `C = clamp(act(A·Bᵀ + bias) + X, add_act)`, `X` shaped
/// like C (row stride `ldc`). Each task adds `X` to the rows it has just computed, still in its
/// cache, instead of an ADD op reading C back; C holds the GEMM's values and then their sums,
/// rounded as the two ops round them.
///
/// # Panics
/// As [`gemm`], or if `x` is shorter than C.
#[allow(clippy::too_many_arguments)]
pub fn gemm_add(m: usize, a: &[f32], lda: usize, b: &PackedB, bias: Option<&[f32]>, act: Act, x: &[f32], add_act: Act, c: &mut [f32], ldc: usize) {
    let n = b.n;
    if m == 0 || n == 0 {
        return;
    }
    gemm_add_residual(m, a, lda, b, bias, act, Residual::dense(x, ldc), add_act, c, ldc)
}

/// [`gemm_add`] with any [`Residual`] (a channel-padded one included).
///
/// # Panics
/// As [`gemm`], or if `res` is too short for C or does not fit its rows.
#[allow(clippy::too_many_arguments)]
pub fn gemm_add_residual(m: usize, a: &[f32], lda: usize, b: &PackedB, bias: Option<&[f32]>, act: Act, res: Residual<'_>, add_act: Act, c: &mut [f32], ldc: usize) {
    let n = b.n;
    if m == 0 || n == 0 {
        return;
    }
    assert!(res.x.len() >= res.needs(m, n, ldc), "residual too short for {m}×{n} (stride {ldc})");
    if b.k > 0 {
        assert!(lda >= b.k && a.len() >= (m - 1) * lda + b.k, "A too short for {m}×{} (lda {lda})", b.k);
    }
    gemm_with_then(m, &Dense { a, lda }, b, bias, act, c, ldc, Some(&residual_adder(res, add_act, n, ldc)));
}

/// [`gemm`], then `then(r0, r1, c_rows)` on each band of rows once computed (see
/// [`gemm_with_then`]): a convolution's fused output activation.
///
/// # Panics
/// As [`gemm`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_then(m: usize, a: &[f32], lda: usize, b: &PackedB, bias: Option<&[f32]>, act: Act, then: &(dyn Fn(usize, usize, &mut [f32]) + Sync), c: &mut [f32], ldc: usize) {
    if m > 0 && b.k > 0 {
        assert!(lda >= b.k && a.len() >= (m - 1) * lda + b.k, "A too short for {m}×{} (lda {lda})", b.k);
    }
    gemm_with_then(m, &Dense { a, lda }, b, bias, act, c, ldc, Some(then));
}

/// The tensor a fused residual ADD adds to each row of a GEMM's output (`n` columns): row `r`
/// gets `x[r * channels..][..channels]` at columns `first..first + channels` and `fill` at the
/// others. That is the ADD of a channel PAD of `x` (MediaPipe's BlazeFace blocks widen their
/// shortcut so) with the PAD folded in; `channels == n` is a plain residual.
#[derive(Clone, Copy, Debug)]
pub struct Residual<'a> {
    /// The residual, `channels` values per row.
    pub x: &'a [f32],
    /// Values per row of `x`.
    pub channels: usize,
    /// Column of the row's first value of `x`.
    pub first: usize,
    /// The value at the other columns (the PAD's constant).
    pub fill: f32,
}

impl<'a> Residual<'a> {
    /// A residual of the output's own shape, row stride `ld`.
    pub fn dense(x: &'a [f32], ld: usize) -> Residual<'a> {
        Residual { x, channels: ld, first: 0, fill: 0.0 }
    }

    /// Whether the residual fills no column: `x` holds whole rows of `n` values, stride `ld`.
    fn is_dense(&self, n: usize, ld: usize) -> bool {
        self.first == 0 && self.channels == ld && ld >= n
    }

    /// Values `x` must hold for `m` rows of `n` columns, stride `ld`.
    pub(crate) fn needs(&self, m: usize, n: usize, ld: usize) -> usize {
        match m {
            0 => 0,
            _ if self.is_dense(n, ld) => (m - 1) * ld + n,
            _ => m * self.channels,
        }
    }

    /// Whether the padded columns fit the row: `first + channels ≤ n`.
    pub(crate) fn fits(&self, n: usize) -> bool {
        self.first.checked_add(self.channels).is_some_and(|end| end <= n)
    }
}

/// The `then` of a GEMM followed by a residual ADD: rows `r0..r1` of C (`cc` starting at row
/// `r0`, `n` values per row, stride `ldc`) += the same rows of `res`, clamped to `add_act`.
///
/// # Panics
/// When `res` does not fit rows of `n` columns.
pub(crate) fn residual_adder(res: Residual<'_>, add_act: Act, n: usize, ldc: usize) -> impl Fn(usize, usize, &mut [f32]) + Sync + '_ {
    assert!(res.fits(n), "a residual of {} channels from column {} does not fit {n} columns", res.channels, res.first);
    let add_rows = move |row: &mut [f32], xr: &[f32]| {
        if !ew::accumulate_clamped(VBin::Add, row, xr, add_act.min, add_act.max) {
            for (o, &v) in row.iter_mut().zip(xr) {
                *o = clamp(*o + v, add_act.min, add_act.max);
            }
        }
    };
    let dense = res.is_dense(n, ldc);
    let x = res.x;
    let wide = simd::avx512();
    move |r0: usize, r1: usize, cc: &mut [f32]| {
        if r1 <= r0 {
            return;
        }
        if !dense {
            let len = ((r1 - r0 - 1) * ldc + n).min(cc.len());
            let band = &mut cc[..len];
            let xs = &x[(r0 * res.channels).min(x.len())..];
            PaddedRows { x: xs, channels: res.channels, first: res.first, fill: res.fill, n, ldc, lo: add_act.min, hi: add_act.max }.add_to(wide, band);
        } else if ldc == n {
            // Dense rows: one pass over the band.
            let len = (r1 - r0) * n;
            add_rows(&mut cc[..len], &x[r0 * n..r0 * n + len]);
        } else {
            for r in 0..r1 - r0 {
                add_rows(&mut cc[r * ldc..r * ldc + n], &x[(r0 + r) * ldc..(r0 + r) * ldc + n]);
            }
        }
    }
}

/// [`gemm`] over any [`ASource`] (conv feeds an im2col view).
pub(crate) fn gemm_with<S: ASource>(
    m: usize,
    src: &S,
    b: &PackedB,
    bias: Option<&[f32]>,
    act: Act,
    c: &mut [f32],
    ldc: usize,
) {
    gemm_with_then(m, src, b, bias, act, c, ldc, None);
}

/// Work run on each band of C's rows once computed: `(r0, r1, c_rows)`, `c_rows` starting at
/// row `r0` (see [`gemm_with_then`]).
pub(crate) type Then<'a> = Option<&'a (dyn Fn(usize, usize, &mut [f32]) + Sync)>;

/// [`gemm_with`], then `then(r0, r1, c_rows)` on each band of rows `r0..r1` once computed
/// (`c_rows` starts at C's row `r0`), by the thread that computed it, while the band is still
/// in its cache (on one thread, or for a small product, once over all rows).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_with_then<S: ASource>(
    m: usize,
    src: &S,
    b: &PackedB,
    bias: Option<&[f32]>,
    act: Act,
    c: &mut [f32],
    ldc: usize,
    then: Then<'_>,
) {
    let Some((plan, c)) = Plan::checked(m, b, bias, act, c, ldc) else { return };
    let n = b.n;
    let threads = nnrt_threads::kernel_threads();
    if threads <= 1 || m * n * b.k.max(1) < PAR_MIN_MACS {
        match then {
            None => with_scratch(|s| run_rows(&plan, src, 0, m, 0, plan.panels, c, ldc, s)),
            Some(then) => {
                // Band by band, each band's `then` while its rows are in cache (every value is
                // the same however the rows are cut).
                let band = then_band_rows(n, plan.mr);
                for (i, cc) in c.chunks_mut(band * ldc).enumerate() {
                    let (r0, r1) = (i * band, (i * band + band).min(m));
                    with_scratch(|s| run_rows(&plan, src, r0, r1, 0, plan.panels, cc, ldc, s));
                    then(r0, r1, cc);
                }
            }
        }
    } else if let Some(grid) = column_grid(&plan, m, threads) {
        // One row tile: each thread takes a band of output channels (its share of B),
        // computed into a per-thread buffer with the band's own row stride and copied into
        // C's rows.
        nnrt_threads::par_blocks_mut(c, ldc, grid, |_, mut block| {
            let (p0, w) = (block.col0() / plan.nr, block.cols());
            let p1 = (block.col0() + w).div_ceil(plan.nr);
            let (r0, r1) = (block.row0(), block.row0() + block.rows());
            let mut band = COL_TILES.with(|t| t.take());
            band.clear();
            band.resize((r1 - r0) * w, 0.0);
            with_scratch(|s| run_rows(&plan, src, r0, r1, p0, p1, &mut band, w, s));
            for (r, row) in band.chunks_exact(w).enumerate() {
                block.row_mut(r).copy_from_slice(row);
            }
            COL_TILES.with(|t| t.set(band));
        });
        if let Some(then) = then {
            then(0, m, c);
        }
    } else {
        // A few tasks per thread for balance, each a whole number of register tiles.
        let tasks = 16 * threads;
        let rows_per_task = m.div_ceil(tasks).div_ceil(plan.mr).max(1) * plan.mr;
        nnrt_threads::par_chunks_mut(c, rows_per_task * ldc, |t, cc| {
            let r0 = t * rows_per_task;
            let r1 = (r0 + rows_per_task).min(m);
            with_scratch(|s| run_rows(&plan, src, r0, r1, 0, plan.panels, cc, ldc, s));
            if let Some(then) = then {
                then(r0, r1, cc);
            }
        });
    }
}

/// The grid of a GEMM split by output channels ([`gemm_with`]) when one register tile holds
/// every row (FULLY_CONNECTED on a batch of one: splitting rows would leave one thread alone).
/// Bands are whole panels, up to four per thread for balance. (Splitting columns for any GEMM
/// whose weights outweigh its rows — 7×7 pixels, 960 → 160 channels — halves each thread's
/// share of weights streamed from L3, but measured slower in MobileNetV2 at two threads: each
/// thread then reads all of A, half of it from the other core, and the next op reads rows
/// that both cores wrote.)
fn column_grid(p: &Plan, m: usize, threads: usize) -> Option<nnrt_threads::Grid> {
    if p.panels < 2 || m > p.mr {
        return None;
    }
    let col_blocks = if p.panels > 4 * threads { 4 * threads } else { p.panels };
    Some(nnrt_threads::Grid { rows: m, cols: p.n, row_unit: p.mr, col_unit: p.nr, row_blocks: 1, col_blocks })
}

/// Computes rows `r0..r1` × panels `p0..p1` of C into `c` (whose row 0 is C's row `r0` and
/// column 0 panel `p0`'s first column).
#[allow(clippy::too_many_arguments)]
fn run_rows<S: ASource>(p: &Plan, src: &S, r0: usize, r1: usize, p0: usize, p1: usize, c: &mut [f32], ldc: usize, scratch: &mut Vec<f32>) {
    if let (Micro::Avx2(t), true) = (p.micro, src.in_place()) {
        return strips_avx2(p, t, src, r0, r1, p0, p1, c, ldc, scratch);
    }
    for pb in (p0..p1).step_by(p.nc_panels) {
        let pe = (pb + p.nc_panels).min(p1);
        for kb in 0..p.nkb {
            let mut ir = r0;
            while ir < r1 {
                let rows = p.mr.min(r1 - ir);
                let (k0, kc, _) = p.kblock(kb, 0, 0);
                let (a, lda) = src.block(ir, rows, k0, kc, scratch);
                p.kblock_tiles(kb, rows, a, lda, pb, pe, &mut c[(ir - r0) * ldc + (pb - p0) * p.nr..], ldc);
                ir += rows;
            }
        }
    }
}

/// [`run_rows`] on AVX2 for an `A` read in place: the rows cut evenly into tiles of at most
/// `p.mr` (a remainder of one or two rows has too few FMA chains to hide their latency), up to
/// 64 tiles a call of the micro-kernel's strip ([`sc::gemm_strip_segs_avx2`]: one call and one
/// set of checks, where a call per tile cost a tenth of a small-K product's time).
#[allow(clippy::too_many_arguments)]
fn strips_avx2<S: ASource>(p: &Plan, t: Avx2Token, src: &S, r0: usize, r1: usize, p0: usize, p1: usize, c: &mut [f32], ldc: usize, scratch: &mut Vec<f32>) {
    let len = r1 - r0;
    let tiles = len.div_ceil(p.mr);
    let mut ends = [0usize; 64];
    for pb in (p0..p1).step_by(p.nc_panels) {
        let pe = (pb + p.nc_panels).min(p1);
        let j0 = pb * p.nr;
        let cols = (pe * p.nr).min(p.n) - j0;
        for kb in 0..p.nkb {
            let (k0, kc, ep) = p.kblock(kb, j0, cols);
            let (a, lda) = src.block(r0, len, k0, kc, scratch);
            let b = &p.b.panels_from(pb)[k0 * p.nr..];
            let mut i = 0;
            while i < tiles {
                let n = (tiles - i).min(ends.len());
                for (q, e) in ends[..n].iter_mut().enumerate() {
                    *e = (i + q + 1) * len / tiles;
                }
                let start = i * len / tiles;
                let seg = (a.get(start * lda..).unwrap_or(&[]), lda, 0);
                let cc = &mut c[start * ldc + (pb - p0) * p.nr..];
                sc::gemm_strip_segs_avx2(t, start, &ends[..n], cols, kc, &[seg], b, p.b.k * p.nr, cc, ldc, &ep);
                i += n;
            }
        }
    }
}

/// Reference twin of [`gemm`]: a plain triple loop over the unpacked `w` (`n × k` row-major,
/// as [`PackedB::pack`] takes it).
#[allow(clippy::too_many_arguments)]
pub fn gemm_ref(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    w: &[f32],
    bias: Option<&[f32]>,
    act: Act,
    c: &mut [f32],
    ldc: usize,
) {
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0f32;
            for kk in 0..k {
                s += a[i * lda + kk] * w[j * k + kk];
            }
            if let Some(bias) = bias {
                s += bias[j];
            }
            c[i * ldc + j] = clamp(s, act.min, act.max);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Instruction sets this CPU can run, the portable one first.
    pub(crate) fn isas() -> Vec<Isa> {
        [Isa::Scalar, Isa::Avx2Fma, Isa::Avx512].into_iter().filter(|&i| i <= simd::isa()).collect()
    }

    /// Deterministic values in [-1, 1] (xorshift), so failures reproduce from the seed.
    pub(crate) fn values(len: usize, seed: u64) -> Vec<f32> {
        crate::testdata::xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .take(len)
            .map(|s| ((s >> 40) as f32 / (1u64 << 23) as f32) * 2.0 - 1.0)
            .collect()
    }

    /// `reference` run on the absolute values of the input, filter and bias: the magnitudes
    /// that scale [`assert_close`]'s tolerance, `len` outputs.
    pub(crate) fn magnitudes(input: &[f32], filter: &[f32], bias: Option<&[f32]>, len: usize, reference: impl Fn(&[f32], &[f32], Option<&[f32]>, &mut [f32])) -> Vec<f32> {
        let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
        let mut mag = vec![0.0; len];
        reference(&abs(input), &abs(filter), bias.map(abs).as_deref(), &mut mag);
        mag
    }

    /// Asserts `got` matches `want` within `terms · ε · mag` per element, where `mag` is the
    /// same computation on absolute values (Σ|a·b| + |bias|). Two summation orders of `terms`
    /// products each err by at most (terms−1)·u·Σ|a·b| (u = ε/2, first order; FMA only
    /// tightens it), and clamping is 1-Lipschitz, so this bound is rigorous, not tuned.
    pub(crate) fn assert_close(got: &[f32], want: &[f32], mag: &[f32], terms: usize, what: &str) {
        for (i, ((&g, &w), &mg)) in got.iter().zip(want).zip(mag).enumerate() {
            let tol = (terms as f32 + 2.0) * f32::EPSILON * mg + 1e-30;
            assert!((g - w).abs() <= tol, "{what}: element {i}: got {g}, want {w} (tol {tol})");
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn check(m: usize, n: usize, k: usize, lda_pad: usize, ldc_pad: usize, with_bias: bool, act: Act, seed: u64) {
        let lda = k + lda_pad;
        let ldc = n + ldc_pad;
        let a = values(m * lda, seed);
        let w = values(n * k, seed + 1);
        let bias = with_bias.then(|| values(n, seed + 2));
        let mut want = vec![7.0; m * ldc];
        gemm_ref(m, n, k, &a, lda, &w, bias.as_deref(), act, &mut want, ldc);
        let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
        let mut mag = vec![0.0; m * ldc];
        let absb = bias.as_deref().map(abs);
        gemm_ref(m, n, k, &abs(&a), lda, &abs(&w), absb.as_deref(), Act::NONE, &mut mag, ldc);
        for isa in isas() {
            let pb = PackedB::pack_with_isa(isa, n, k, &w);
            let mut got = vec![7.0; m * ldc];
            gemm(m, &a, lda, &pb, bias.as_deref(), act, &mut got, ldc);
            assert_close(&got, &want, &mag, k, &format!("{isa:?} m={m} n={n} k={k}"));
            // Padding columns between rows are left alone.
            for i in 0..m {
                assert!(got[i * ldc + n..(i + 1) * ldc].iter().all(|&v| v == 7.0), "{isa:?} wrote padding");
            }
        }
    }

    fn act_strategy() -> impl Strategy<Value = Act> {
        prop_oneof![Just(Act::NONE), Just(Act::RELU), Just(Act::RELU6), Just(Act::RELU_N1_TO_1)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn gemm_matches_ref(
            m in prop_oneof![Just(1usize), 1usize..40],
            n in prop_oneof![Just(1usize), 1usize..80],
            k in prop_oneof![Just(1usize), 1usize..70, 500usize..600],
            lda_pad in 0usize..3, ldc_pad in 0usize..3,
            with_bias: bool, act in act_strategy(), seed: u64,
        ) {
            check(m, n, k, lda_pad, ldc_pad, with_bias, act, seed);
        }
    }

    #[test]
    fn large_and_threaded_shapes() {
        // Big enough to take the parallel row split, the column split (m ≤ MR) and K blocking.
        let pool = nnrt_threads::KernelPool::new(3).unwrap();
        pool.install(|| {
            check(200, 70, 1100, 1, 0, true, Act::RELU6, 1);
            check(1, 1001, 300, 0, 0, true, Act::NONE, 2);
            check(5, 300, 700, 0, 3, false, Act::RELU, 3);
            check(3, 64, 0, 0, 0, true, Act::RELU, 4);
        });
    }

    #[test]
    fn long_strips_on_one_thread() {
        // More tiles than one strip call takes (64), rows not a multiple of MR, K blocked, K = 0.
        let pool = nnrt_threads::KernelPool::new(1).unwrap();
        pool.install(|| {
            check(500, 20, 30, 1, 2, true, Act::RELU, 5);
            check(389, 33, 600, 0, 1, false, Act::NONE, 6);
            check(400, 20, 0, 0, 0, true, Act::RELU6, 7);
        });
    }

    #[test]
    fn gemm_add_equals_gemm_then_add_bit_for_bit() {
        // Row split, column split (m ≤ MR), one thread; with and without the ADD's clamp.
        let pool = nnrt_threads::KernelPool::new(2).unwrap();
        for (i, &(m, n, k, act, add_act)) in [
            (3136usize, 24usize, 144usize, Act::NONE, Act::NONE),
            (49, 160, 960, Act::RELU6, Act::RELU),
            (4, 300, 70, Act::NONE, Act::RELU6),
            (7, 5, 3, Act::RELU, Act::NONE),
        ]
        .iter()
        .enumerate()
        {
            let (a, w, bias, x) = (values(m * k, 10 + i as u64), values(n * k, 20 + i as u64), values(n, 30 + i as u64), values(m * n, 40 + i as u64));
            let b = PackedB::pack(n, k, &w);
            let mut want = vec![0.0; m * n];
            gemm(m, &a, k, &b, Some(&bias), act, &mut want, n);
            for (o, &v) in want.iter_mut().zip(&x) {
                *o = clamp(*o + v, add_act.min, add_act.max);
            }
            for threads in [1, 2] {
                let mut got = vec![f32::NAN; m * n];
                let run = |got: &mut [f32]| gemm_add(m, &a, k, &b, Some(&bias), act, &x, add_act, got, n);
                if threads == 1 {
                    run(&mut got);
                } else {
                    pool.install(|| run(&mut got));
                }
                assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()), "case {i}, {threads} threads");
            }
        }
    }

    /// Best and median GFLOP/s of 15 timed batches (each ~0.1 s) on a pool of `threads`.
    fn gflops(m: usize, n: usize, k: usize, threads: usize) -> (f64, f64) {
        let a = values(m * k, 1);
        let w = values(n * k, 2);
        let bias = values(n, 3);
        let pb = PackedB::pack(n, k, &w);
        let mut c = vec![0.0; m * n];
        let pool = nnrt_threads::KernelPool::new(threads).unwrap();
        let flop = 2.0 * (m * n * k) as f64;
        let reps = (1e9 / flop).ceil() as usize;
        let mut rates = Vec::new();
        pool.install(|| {
            gemm(m, &a, k, &pb, Some(&bias), Act::RELU, &mut c, n);
            for _ in 0..15 {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    gemm(m, &a, k, &pb, Some(&bias), Act::RELU, &mut c, n);
                }
                rates.push(flop * reps as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
        });
        rates.sort_by(f64::total_cmp);
        (rates[14], rates[7])
    }

    /// `cargo test --release -p nnrt-backend-cpu -- --ignored --nocapture gemm_speed`
    #[test]
    #[ignore]
    fn gemm_speed() {
        let threads: Vec<usize> = match std::env::var("GEMM_SPEED_THREADS") {
            Ok(t) => t.split(',').filter_map(|t| t.parse().ok()).collect(),
            Err(_) => vec![1, 2],
        };
        for &(m, k, n) in &[(512, 512, 512), (3136, 288, 64), (3136, 2304, 256), (12544, 32, 64), (1, 1024, 1001)] {
            for &threads in &threads {
                let (best, median) = gflops(m, n, k, threads);
                println!("{:?} M×K×N {m}×{k}×{n} threads {threads}: best {best:.1} median {median:.1} GFLOP/s", simd::isa());
            }
        }
    }
}
