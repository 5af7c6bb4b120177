//! The integer GEMM behind quantized CONV_2D and FULLY_CONNECTED: `C = A · Bᵀ` with `A` the
//! activations (`m × k`, one row per output pixel) and `B` the weights (`n × k`, packed once at
//! prepare), accumulated exactly in 32 bits and requantized per output channel.
//!
//! Both operands are moved to the domain the dot-product instructions want: activations as
//! unsigned bytes `x' = x + ax` (`ax` = 128 for int8, 0 for uint8) and weights as signed bytes
//! `w' = w + aw` (`aw` = −128 for uint8, 0 for int8). Since
//! `Σ (x − zx)(w − zw) = Σ x'w' − zw'·Σx' − zx'·Σw' + k·zx'·zw'` with `zx' = zx + ax`,
//! `zw' = zw + aw`, the exact TFLite accumulator is the raw dot product plus a per-row and a
//! per-column correction (the column part folds into the bias at prepare). The arithmetic wraps
//! in `i32` like TFLite's accumulator, so intermediate overflow cannot change the result.
//!
//! Micro-kernels: AVX-512 VNNI (`vpdpbusd`, 4 byte products per lane), AVX2 (`vpmaddwd` on
//! bytes widened to 16 bits — exact, unlike `vpmaddubsw`, which saturates), and a portable
//! loop; all three must agree bit for bit with `reference::conv`.

use super::reference::ConvQuant;
use super::requant::{requant_row_simd, ChannelRequant};
use super::{QInt, Requant};
use crate::lines::Lines;
use crate::prepack;
use crate::simd::quant as sq;

/// How the weights are packed (which micro-kernel runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QLayout {
    /// Panels of 32 columns × groups of 4 bytes along `k` (the VNNI kernel, and the portable
    /// kernel on CPUs without vector support).
    Quad,
    /// Panels of 16 columns × pairs of int8 values along `k` (the AVX2 kernel, which widens
    /// them to 16 bits as it loads them; `k` padded to a multiple of 4, the step of its loop).
    Pair,
}

/// Columns per packed panel.
pub const NR: usize = 32;
/// Columns per packed panel of the AVX2 layout.
pub const NR_PAIR: usize = 16;

/// Weights packed for the micro-kernels, with the column sums and zero points the corrections
/// need.
#[derive(Clone, Debug)]
pub struct QPackedB {
    layout: QLayout,
    n: usize,
    k: usize,
    kp: usize,
    bytes: Lines<i8>,
    pairs: Lines<i8>,
    /// `Σ_k w'` of each column.
    col_sum: Lines<i32>,
    /// `zw'` of each column.
    zw: Lines<i32>,
}

/// `value(j)` for the `n` columns, then zeros to a whole number of `NR`-column panels.
pub fn lanes<T: Copy + Default>(n: usize, value: impl Fn(usize) -> T) -> Vec<T> {
    (0..n.div_ceil(NR) * NR).map(|j| if j < n { value(j) } else { T::default() }).collect()
}

/// The layout the fastest available micro-kernel wants.
pub fn best_layout() -> QLayout {
    if sq::VnniToken::new().is_some() {
        QLayout::Quad
    } else if sq::Avx2Token::new().is_some() {
        QLayout::Pair
    } else {
        QLayout::Quad
    }
}

/// The shift that moves weights of type `TW` to signed bytes.
fn weight_shift<TW: QInt>() -> i32 {
    if TW::MIN == 0 {
        -128
    } else {
        0
    }
}

/// The shift that moves activations of type `TI` to unsigned bytes.
pub fn input_shift<TI: QInt>() -> i32 {
    if TI::MIN == 0 {
        0
    } else {
        128
    }
}

impl QPackedB {
    /// Packs `n × k` weights (row `j` = output channel `j`) with zero points `w_zp` (per
    /// column) for `layout`.
    pub fn pack<TW: QInt>(layout: QLayout, n: usize, k: usize, w: &[TW], w_zp: &[i32]) -> QPackedB {
        let aw = weight_shift::<TW>();
        // What the packed layout depends on, beside the weights: the weights' type (its shift).
        let facts = |layout: u64| [layout, n as u64, k as u64, aw as u64 & 0xff];
        let rows = || w.chunks_exact(k.max(1)).take(if k == 0 { 0 } else { n });
        let col_sum = prepack::lines(prepack::tag::Q_COL_SUM, facts(0), n, |dst: &mut [i32]| {
            for (d, row) in dst.iter_mut().zip(rows()) {
                *d = row.iter().map(|v| v.get() + aw).sum();
            }
        });
        let zw = prepack::lines(prepack::tag::Q_ZW, facts(0), n, |dst: &mut [i32]| {
            for (d, &z) in dst.iter_mut().zip(w_zp) {
                *d = z + aw;
            }
        });
        // Panels of `nr` columns, each holding `G` consecutive `k` values per column: value
        // `kk` of column `j` goes to panel `j / nr`, group `kk / G`, slot `j % nr`. Written
        // row by row into the zeroed storage, so columns past `n` and values past `k` stay 0.
        fn panels<'a, TW: QInt + 'a, T, const G: usize>(dst: &mut [T], rows: impl Iterator<Item = (usize, &'a [TW])>, kp: usize, nr: usize, put: impl Fn(&TW) -> T) {
            for (j, row) in rows {
                let base = (j / nr) * kp * nr + (j % nr) * G;
                let groups = row.chunks_exact(G);
                let (whole, tail) = (groups.len(), groups.remainder());
                for (q, vals) in groups.enumerate() {
                    // A constant-length group: moved in registers, not by a call to memcpy.
                    let at = base + q * nr * G;
                    for (d, v) in dst[at..at + G].iter_mut().zip(vals) {
                        *d = put(v);
                    }
                }
                if !tail.is_empty() {
                    // The last group of the row, part-filled (`k` is not a multiple of `G`).
                    let at = base + whole * nr * G;
                    for (d, v) in dst[at..at + tail.len()].iter_mut().zip(tail) {
                        *d = put(v);
                    }
                }
            }
        }
        let (kp, bytes, pairs) = match layout {
            QLayout::Quad => {
                let kp = k.div_ceil(4) * 4;
                let len = n.div_ceil(NR) * kp * NR;
                let bytes = prepack::lines(prepack::tag::Q_QUADS, facts(1), len, |dst: &mut [i8]| {
                    if std::mem::size_of::<TW>() == 1 && k % 4 == 0 && k > 0 {
                        // Whole quads: a transpose of 4-byte words (`simd::pack`); `+ aw` on a
                        // byte is `^ 0x80` for uint8 weights (-128) and nothing for int8 (0).
                        let xor = if aw == 0 { 0 } else { 0x8080_8080 };
                        let src: &[u8] = bytemuck::cast_slice(&w[..n * k]);
                        for (p, panel) in bytemuck::cast_slice_mut::<i8, u8>(dst).chunks_exact_mut(kp * NR).enumerate() {
                            let j0 = p * NR;
                            crate::simd::pack::pack_words(src, k, k / 4, j0, NR.min(n - j0), NR, xor, panel);
                        }
                    } else {
                        panels::<TW, i8, 4>(dst, rows().enumerate(), kp, NR, |v| (v.get() + aw) as i8)
                    }
                });
                (kp, bytes, Lines::default())
            }
            QLayout::Pair => {
                let kp = k.div_ceil(4) * 4;
                let len = n.div_ceil(NR_PAIR) * kp * NR_PAIR;
                let pairs = prepack::lines(prepack::tag::Q_PAIRS, facts(2), len, |dst: &mut [i8]| {
                    if std::mem::size_of::<TW>() == 1 && k % 4 == 0 && k > 0 {
                        // Whole quads, each split into its two pairs (`simd::pack`); `+ aw` on a
                        // byte is `^ 0x80` for uint8 weights (-128) and nothing for int8.
                        let src: &[u8] = bytemuck::cast_slice(&w[..n * k]);
                        for (p, panel) in bytemuck::cast_slice_mut::<i8, u8>(dst).chunks_exact_mut(kp * NR_PAIR).enumerate() {
                            let j0 = p * NR_PAIR;
                            crate::simd::pack::pack_pairs(src, k, k / 4, j0, NR_PAIR.min(n - j0), NR_PAIR, if aw == 0 { 0 } else { 0x80 }, panel);
                        }
                    } else {
                        panels::<TW, i8, 2>(dst, rows().enumerate(), kp, NR_PAIR, |v| (v.get() + aw) as i8)
                    }
                });
                (kp, Lines::default(), pairs)
            }
        };
        QPackedB { layout, n, k, kp, bytes, pairs, col_sum, zw }
    }

    /// Output channels.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Reduction length.
    pub fn k(&self) -> usize {
        self.k
    }

    /// `Σ_k w'` of each column, then zeros to a whole number of 32-column panels (the lanes
    /// of `simd::quant::FloatLanes`).
    pub fn col_sum_lanes(&self) -> Vec<i32> {
        lanes(self.n, |j| self.col_sum[j])
    }

    /// Row length of the `A` blocks this packing reads (`k` rounded up to the kernel's step).
    pub fn kp(&self) -> usize {
        self.kp
    }

    fn nr(&self) -> usize {
        match self.layout {
            QLayout::Quad => NR,
            QLayout::Pair => NR_PAIR,
        }
    }
}

/// Per-column epilogue: bias with the column corrections folded in, requantization, output
/// zero point and clamp.
#[derive(Clone, Debug)]
pub struct QEpilogue {
    /// Bias with the column corrections folded in, and `zw'` per column, for
    /// [`QEpilogue::finish_row`]; empty when `lanes` holds them (its `bias` and `zw`).
    cbias: Vec<i32>,
    zw: Vec<i32>,
    requant: Vec<Requant>,
    /// The same multipliers split for the vectorized row requantization (all `Fixed`); built
    /// at construction without lanes, else on the first row that needs it (an output wider
    /// than a byte or the AVX2 layout: the lanes' 8-bit GEMMs never do).
    fixed: std::sync::OnceLock<Option<ChannelRequant>>,
    out_zp: i32,
    act: (i32, i32),
    need_row_sums: bool,
    /// The fused VNNI epilogue's lanes (all `Fixed`, AVX-512 VNNI present).
    lanes: Option<(sq::VnniToken, sq::LaneRequant)>,
    /// The fused AVX2 epilogue's lanes (the pair layout, all `Fixed`, AVX2 present).
    pair: Option<(sq::Avx2Token, crate::simd::qpair::PairRequant)>,
    /// Every column requantized in double (`Requant::Float`, TFLite's int8 FULLY_CONNECTED)
    /// with an output range well inside int32: the scales, for the vectorized rounding.
    float_scales: Option<Vec<f64>>,
}

impl QEpilogue {
    /// Folds `q` (bias, zero points, requantization) and the packing's column sums together;
    /// `zx_shifted` is the input zero point in the unsigned-byte domain (`zx + ax`).
    pub fn new(b: &QPackedB, q: &ConvQuant, zx_shifted: i32) -> QEpilogue {
        let k = b.k as i32;
        let cbias: Vec<i32> = (0..b.n)
            .map(|j| {
                let bias = q.bias.as_ref().map_or(0, |v| v[j] as i32);
                bias.wrapping_sub(zx_shifted.wrapping_mul(b.col_sum[j]))
                    .wrapping_add(k.wrapping_mul(zx_shifted).wrapping_mul(b.zw[j]))
            })
            .collect();
        // |(x − zx)(w − zw)| ≤ 255² per product (8-bit operands), plus the bias.
        let bound = |j: usize| (b.k as i64).saturating_mul(255 * 255).saturating_add(q.bias.as_ref().map_or(0, |v| v[j].saturating_abs()));
        let consts: Option<Vec<sq::LaneConst>> = q.requant.iter().enumerate().map(|(j, &r)| sq::LaneConst::of(r, bound(j))).collect();
        let lanes = match (&consts, sq::VnniToken::new()) {
            (Some(c), Some(t)) => {
                let cols = cbias.iter().zip(b.zw.iter()).zip(c).map(|((&bias, &zw), &lc)| (bias, zw, lc));
                Some((t, sq::LaneRequant::with(cols, b.n.div_ceil(NR) * NR, (q.out_zp, q.act.0, q.act.1))))
            }
            _ => None,
        };
        // Every column requantized in double, with an output range the lanes hold exactly.
        let inside = q.act.0 > -(1 << 29) && q.act.1 < 1 << 29 && q.out_zp.abs() < 1 << 28;
        let float_scales = inside.then(|| q.requant.iter().map(|r| if let Requant::Float(s) = *r { Some(s) } else { None }).collect::<Option<Vec<f64>>>()).flatten();
        let out = (q.out_zp, q.act.0, q.act.1);
        let pair = match (b.layout, sq::Avx2Token::new(), Requant::fixed_pairs(&q.requant), float_scales.clone()) {
            (QLayout::Pair, Some(t), Some(ms), _) => {
                let cols = cbias.iter().zip(b.zw.iter()).zip(ms).map(|((&bias, &zw), m)| (bias, zw, m));
                Some((t, crate::simd::qpair::PairRequant::new(cols, b.n, out)))
            }
            (QLayout::Pair, Some(t), None, Some(scales)) => {
                let cols = cbias.iter().zip(b.zw.iter()).zip(scales).map(|((&bias, &zw), s)| (bias, zw, s));
                Some((t, crate::simd::qpair::PairRequant::float(cols, b.n, out)))
            }
            _ => None,
        };
        let fixed = std::sync::OnceLock::new();
        let (cbias, zw) = match &lanes {
            Some(_) => (Vec::new(), Vec::new()),
            None => {
                let _ = fixed.set(ChannelRequant::of(&q.requant));
                (cbias, b.zw.to_vec())
            }
        };
        QEpilogue {
            lanes,
            pair,
            cbias,
            zw,
            requant: q.requant.clone(),
            fixed,
            out_zp: q.out_zp,
            act: q.act,
            need_row_sums: b.zw.iter().any(|&z| z != 0),
            float_scales,
        }
    }

    /// Finishes one tile row: `acc` holds the raw dot products of columns `c0 ..`.
    #[inline(always)]
    fn finish_row<TO: QInt>(&self, acc: &mut [i32], c0: usize, row_sum: i32, out: &mut [TO]) {
        let (cbias, zw) = match &self.lanes {
            Some((_, l)) => (&l.bias[..], &l.zw[..]),
            None => (&self.cbias[..], &self.zw[..]),
        };
        if self.need_row_sums {
            let n = acc.len();
            for (v, &z) in acc.iter_mut().zip(&zw[c0..c0 + n]) {
                *v = v.wrapping_sub(z.wrapping_mul(row_sum));
            }
        }
        match self.fixed.get_or_init(|| ChannelRequant::of(&self.requant)) {
            Some(r) => requant_row_simd(acc, cbias, r, c0, self.out_zp, self.act.0, self.act.1),
            None => {
                let done = match &self.float_scales {
                    Some(s) => sq::requant_float_prefix(acc, &cbias[c0..], &s[c0..], self.out_zp, self.act.0, self.act.1),
                    None => 0,
                };
                for (j, v) in acc.iter_mut().enumerate().skip(done) {
                    let x = v.wrapping_add(cbias[c0 + j]);
                    *v = self.requant[c0 + j].apply(x).saturating_add(self.out_zp).clamp(self.act.0, self.act.1);
                }
            }
        }
        for (o, &v) in out.iter_mut().zip(acc.iter()) {
            *o = TO::put(v);
        }
    }
}

/// A source of `A` rows in the unsigned-byte domain.
pub trait QASource: Sync {
    /// Writes rows `row0 .. row0 + rows` into `dst` (`rows × kp`), each zero-padded past `k`.
    fn fill(&self, row0: usize, rows: usize, kp: usize, dst: &mut [u8]);

    /// The `len` bytes of rows `row0 ..` (`kp` each) as they already are in memory, when the
    /// source holds exactly that (unsigned bytes, rows `kp` apart): no copy needed.
    fn direct(&self, row0: usize, kp: usize, len: usize) -> Option<&[u8]> {
        let _ = (row0, kp, len);
        None
    }
}

/// Rows taken straight from a `m × k` matrix (FULLY_CONNECTED, 1×1 convolutions).
pub struct RowsSource<'a, TI> {
    /// The matrix.
    pub data: &'a [TI],
    /// Row length.
    pub k: usize,
}

impl<TI: QInt> QASource for RowsSource<'_, TI> {
    fn fill(&self, row0: usize, rows: usize, kp: usize, dst: &mut [u8]) {
        if kp == self.k {
            // Rows are contiguous on both sides: one pass over the block.
            to_unsigned(&self.data[row0 * kp..(row0 + rows) * kp], &mut dst[..rows * kp]);
            return;
        }
        for (r, d) in dst.chunks_exact_mut(kp).take(rows).enumerate() {
            let src = &self.data[(row0 + r) * self.k..(row0 + r + 1) * self.k];
            to_unsigned(src, &mut d[..self.k]);
            d[self.k..].fill(0);
        }
    }

    fn direct(&self, row0: usize, kp: usize, len: usize) -> Option<&[u8]> {
        if std::mem::size_of::<TI>() != 1 || TI::MIN != 0 || kp != self.k {
            return None;
        }
        let bytes: &[u8] = bytemuck::cast_slice(self.data);
        bytes.get(row0 * kp..row0 * kp + len)
    }
}

/// `dst[i] = src[i] + ax` as unsigned bytes (see [`input_shift`]): a copy for `u8`, a flip of
/// the sign bit for `i8` (both vectorize), the arithmetic for anything else.
#[inline]
pub(crate) fn to_unsigned<TI: QInt>(src: &[TI], dst: &mut [u8]) {
    if std::mem::size_of::<TI>() == 1 {
        let bytes: &[u8] = bytemuck::cast_slice(src);
        if TI::MIN == 0 {
            dst.copy_from_slice(bytes);
        } else {
            for (o, &x) in dst.iter_mut().zip(bytes) {
                *o = x ^ 0x80;
            }
        }
        return;
    }
    let ax = input_shift::<TI>();
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = (x.get() + ax) as u8;
    }
}

thread_local! {
    /// Per-thread A block and row sums of [`task_body`], kept for the next task.
    static A_SCRATCH: std::cell::Cell<(Vec<u8>, Vec<i32>)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
    /// Per-thread A block widened to 16 bits for the AVX2 blocks.
    static A_WIDE: std::cell::Cell<Vec<i16>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Rows per block of work (a multiple of every micro-kernel's row count).
const ROWS_PER_TASK: usize = 48;
/// Work (multiply-adds, see [`qgemm`]) below which a GEMM runs on the calling thread.
const PAR_MIN_WORK: usize = 1 << 17;
/// Work per task at least.
const TASK_WORK: usize = 1 << 16;
/// Rows of the micro-kernel tiles (the largest of the kernels; smaller kernels loop).
const MR: usize = sq::MR_QUAD;

/// `out[i * ldc + col0 + j] = requant(Σ_k (a[i][k] − zx)(w[j][k] − zw[j]))` for `i < m`,
/// `j < n`, parallel over row blocks on the current run's kernel pool.
#[allow(clippy::too_many_arguments)]
pub fn qgemm<TO: QInt>(m: usize, a: &dyn QASource, b: &QPackedB, ep: &QEpilogue, out: &mut [TO], ldc: usize, col0: usize) {
    for_blocks(m, b, out, ldc, |bm, (blk, chunk)| sq::with_avx512(&Task { a, b, ep, row0: blk * bm, ldc, col0 }, chunk));
}

/// The dynamic-range GEMM: `out[i * ldc + j] = clamp((Σ_k a'[i][k] w'[j][k] − zx'ᵢ·Σw'[j]) ·
/// scale[j] · input_scaleᵢ + bias[j])` for `i < m`, `j < n` (see `simd::quant::FloatLanes`;
/// `f`'s lanes padded to whole 32-column panels, its row parameters one or `m`), parallel
/// over row blocks on the current run's kernel pool. Weights must have zero points 0 (hybrid
/// weights are symmetric).
pub(crate) fn qgemm_f32(m: usize, a: &dyn QASource, b: &QPackedB, f: &sq::FloatLanes, out: &mut [f32], ldc: usize) {
    debug_assert!(b.zw.iter().all(|&z| z == 0));
    assert!(f.zx.len() == f.input_scale.len() && (f.zx.len() == 1 || f.zx.len() >= m));
    let (nr, panels) = (b.nr(), b.n.div_ceil(b.nr()));
    let threads = nnrt_threads::kernel_threads();
    if m == 0 || b.n == 0 {
        return;
    }
    if threads > 1 && m <= MR && panels > 1 && m * b.n * (b.k + 16) >= PAR_MIN_WORK {
        // One row tile (a fully connected layer's few rows): each thread takes a band of
        // output channels (its share of the weights) into a buffer with the band's own row
        // stride, copied into the output's rows.
        let grid = nnrt_threads::Grid { rows: m, cols: b.n, row_unit: MR, col_unit: NR.max(nr), row_blocks: 1, col_blocks: threads };
        nnrt_threads::par_blocks_mut(out, ldc, grid, |_, mut block| {
            let (c0, w) = (block.col0(), block.cols());
            let mut band = F32_BAND.with(|t| t.take());
            band.clear();
            band.resize(m * w, 0.0);
            let task = FloatTask { a, b, f, row0: 0, ldc: w, panels: (c0 / nr, (c0 + w).div_ceil(nr)) };
            sq::with_avx512(&task, &mut band);
            for (r, row) in band.chunks_exact(w).enumerate() {
                block.row_mut(r).copy_from_slice(row);
            }
            F32_BAND.with(|t| t.set(band));
        });
        return;
    }
    for_blocks(m, b, out, ldc, |bm, (blk, chunk)| sq::with_avx512(&FloatTask { a, b, f, row0: blk * bm, ldc, panels: (0, panels) }, chunk));
}

/// Runs `task(bm, (block, chunk))` on the blocks of `bm` rows of an `m`-row GEMM against `b`
/// (`chunk`: the block's rows of `out`, `ldc` apart), parallel over blocks on the current
/// run's kernel pool when the work is worth it.
fn for_blocks<T: Send>(m: usize, b: &QPackedB, out: &mut [T], ldc: usize, task: impl Fn(usize, (usize, &mut [T])) + Sync) {
    if m == 0 || b.n == 0 {
        return;
    }
    let threads = nnrt_threads::kernel_threads();
    // Blocks of ROWS_PER_TASK rows, or fewer (whole tiles) when that would leave fewer than
    // about eight per thread: 14x14 and 7x7 layers (196 and 49 rows) otherwise split 3:2 or
    // not at all.
    let bm = if threads > 1 { (m.div_ceil(8 * threads).div_ceil(MR) * MR).clamp(MR, ROWS_PER_TASK) } else { ROWS_PER_TASK };
    let task = |bc: (usize, &mut [T])| task(bm, bc);
    let chunk_len = bm * ldc;
    let total = m * ldc;
    // A block costs its multiply-adds plus about one im2col/epilogue pass per output value;
    // small GEMMs lose more to waking threads than they gain.
    let block_work = bm * b.n * (b.k + 16);
    let blocks = m.div_ceil(bm);
    if blocks > 1 && threads > 1 && blocks * block_work >= PAR_MIN_WORK {
        let per = TASK_WORK.div_ceil(block_work).max(blocks.div_ceil(8 * threads));
        nnrt_threads::par_chunks_mut(&mut out[..total], per * chunk_len, |t, group| {
            group.chunks_mut(chunk_len).enumerate().for_each(|(i, chunk)| task((t * per + i, chunk)))
        });
    } else {
        out[..total].chunks_mut(chunk_len).enumerate().for_each(task);
    }
}

/// One task of [`qgemm`] (rows from `row0`, into its chunk of the output), run through
/// `simd::quant::with_avx512`.
struct Task<'a> {
    a: &'a dyn QASource,
    b: &'a QPackedB,
    ep: &'a QEpilogue,
    row0: usize,
    ldc: usize,
    col0: usize,
}

impl<TO: QInt> sq::Avx512Body<TO> for Task<'_> {
    #[inline(always)]
    fn run(&self, chunk: &mut [TO]) {
        task_body(self.a, self.b, self.ep, self.row0, chunk, self.ldc, self.col0)
    }
}

/// Rows `row0 .. row0 + rows` of `a` as a block of whole tiles (`rows` rounded up to `MR` rows
/// of `kp` bytes): in place where the source holds them so, else filled into `buf` (grown as
/// needed; rows past `rows` are never stored, so whatever they hold is harmless).
#[inline(always)]
fn a_block<'s>(a: &'s dyn QASource, row0: usize, rows: usize, kp: usize, buf: &'s mut Vec<u8>) -> &'s [u8] {
    let len = rows.div_ceil(MR) * MR * kp;
    if let Some(d) = a.direct(row0, kp, len) {
        return d;
    }
    if buf.len() < len {
        buf.resize(len, 0);
    }
    a.fill(row0, rows, kp, &mut buf[..len]);
    &buf[..len]
}

/// One task of [`qgemm_f32`]: rows from `row0` into its chunk of the output, columns of
/// panels `p0 .. p1` (the chunk's column 0 is the first of panel `p0`).
struct FloatTask<'a> {
    a: &'a dyn QASource,
    b: &'a QPackedB,
    f: &'a sq::FloatLanes<'a>,
    row0: usize,
    ldc: usize,
    panels: (usize, usize),
}

impl sq::Avx512Body<f32> for FloatTask<'_> {
    #[inline(always)]
    fn run(&self, chunk: &mut [f32]) {
        let (b, ldc) = (self.b, self.ldc);
        let rows = chunk.len() / ldc;
        let kp = b.kp;
        let mut scratch = A_SCRATCH.with(|s| s.take());
        let ablock = a_block(self.a, self.row0, rows, kp, &mut scratch.0);
        let nr = b.nr();
        let (p0, p1) = self.panels;
        let (c0, n) = (p0 * nr, (p1 * nr).min(b.n) - p0 * nr);
        // The lanes from column c0 on (c0 is a multiple of every panel width, and of 32 where
        // the VNNI kernel reads whole 32-lane panels).
        let f = sq::FloatLanes { col_sum: &self.f.col_sum[c0..], scale: &self.f.scale[c0..], bias: self.f.bias.map(|v| &v[c0..]), ..*self.f };
        match (b.layout, sq::VnniToken::new(), sq::Avx2Token::new()) {
            (QLayout::Quad, Some(tok), _) => sq::block_quad_f32(tok, kp, ablock, rows, self.row0, &b.bytes[c0 * kp..], n, &f, chunk, ldc),
            (QLayout::Pair, _, Some(tok)) => {
                let mut wide = A_WIDE.with(|w| w.take());
                crate::simd::qpair::widen(ablock, &mut wide);
                crate::simd::qpair::block_pair_f32(tok, kp, &wide, rows, self.row0, &b.pairs[c0 * kp..], n, &f, chunk, ldc);
                A_WIDE.with(|w| w.set(wide));
            }
            _ => {
                let mut acc = [0i32; MR * NR];
                for p in 0..p1 - p0 {
                    let cols = (n - p * nr).min(nr);
                    for r0 in (0..rows).step_by(MR) {
                        let a_tile = &ablock[r0 * kp..(r0 + MR) * kp];
                        match b.layout {
                            QLayout::Quad => sq::tile_quad(kp, a_tile, &b.bytes[(p0 + p) * kp * NR..(p0 + p + 1) * kp * NR], &mut acc),
                            QLayout::Pair => sq::tile_pair(kp, a_tile, &b.pairs[(p0 + p) * kp * NR_PAIR..(p0 + p + 1) * kp * NR_PAIR], &mut acc),
                        }
                        for r in 0..(rows - r0).min(MR) {
                            let at = (r0 + r) * ldc + p * nr;
                            let (zx, s) = f.row(self.row0 + r0 + r);
                            for (j, o) in chunk[at..at + cols].iter_mut().enumerate() {
                                *o = f.finish(acc[r * nr + j], p * nr + j, zx, s);
                            }
                        }
                    }
                }
            }
        }
        A_SCRATCH.with(|s| s.set(scratch));
    }
}

thread_local! {
    /// Per-thread band of [`qgemm_f32`]'s column split, kept for the next task.
    static F32_BAND: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// One task of [`qgemm`]: rows `row0 ..` into `chunk` (`rows × ldc` values, at most
/// `ROWS_PER_TASK` rows). Inlined into the SIMD module's AVX-512 trampoline so its safe loops
/// (row sums, epilogue) vectorize.
#[inline(always)]
pub(crate) fn task_body<TO: QInt>(a: &dyn QASource, b: &QPackedB, ep: &QEpilogue, row0: usize, chunk: &mut [TO], ldc: usize, col0: usize) {
    let rows = chunk.len() / ldc;
    let kp = b.kp;
    // The A block and row sums live in this thread's scratch (no allocation per task).
    let mut scratch = A_SCRATCH.with(|s| s.take());
    let ablock = a_block(a, row0, rows, kp, &mut scratch.0);
    let row_sums = &mut scratch.1;
    row_sums.clear();
    if ep.need_row_sums {
        row_sums.extend(ablock.chunks_exact(kp).map(|r| r.iter().map(|&v| v as i32).sum::<i32>()));
    }
    let row_sums = &scratch.1;
    let nr = b.nr();
    if let (QLayout::Quad, Some((tok, lanes)), 1) = (b.layout, &ep.lanes, std::mem::size_of::<TO>()) {
        // 8-bit output: the VNNI tiles requantize in registers and store bytes.
        let out: &mut [u8] = bytemuck::cast_slice_mut(chunk);
        let sums = ep.need_row_sums.then_some(&row_sums[..]);
        sq::block_quad_out(*tok, kp, ablock, rows, &b.bytes, b.n, lanes, sums, &mut out[col0..], ldc, TO::MIN < 0);
        A_SCRATCH.with(|s| s.set(scratch));
        return;
    }
    if let (QLayout::Pair, Some((tok, lanes)), 1) = (b.layout, &ep.pair, std::mem::size_of::<TO>()) {
        if TO::MIN <= ep.act.0 && ep.act.1 <= TO::MAX {
            // 8-bit output: the AVX2 tiles requantize in registers and store bytes.
            let out: &mut [u8] = bytemuck::cast_slice_mut(chunk);
            let sums = ep.need_row_sums.then_some(&row_sums[..]);
            let mut wide = A_WIDE.with(|w| w.take());
            crate::simd::qpair::widen(ablock, &mut wide);
            crate::simd::qpair::block_pair_out(*tok, kp, &wide, rows, &b.pairs, b.n, lanes, sums, &mut out[col0..], ldc, TO::MIN < 0);
            A_WIDE.with(|w| w.set(wide));
            A_SCRATCH.with(|s| s.set(scratch));
            return;
        }
    }
    let mut acc = [0i32; MR * NR];
    for p in 0..b.n.div_ceil(nr) {
        let cols = (b.n - p * nr).min(nr);
        for r0 in (0..rows).step_by(MR) {
            let tile_rows = (rows - r0).min(MR);
            let a_tile = &ablock[r0 * kp..(r0 + MR) * kp];
            match b.layout {
                QLayout::Quad => {
                    let panel = &b.bytes[p * kp * NR..(p + 1) * kp * NR];
                    sq::tile_quad(kp, a_tile, panel, &mut acc);
                }
                QLayout::Pair => {
                    let panel = &b.pairs[p * kp * NR_PAIR..(p + 1) * kp * NR_PAIR];
                    sq::tile_pair(kp, a_tile, panel, &mut acc);
                }
            }
            for r in 0..tile_rows {
                let rs = if ep.need_row_sums { row_sums[r0 + r] } else { 0 };
                let orow = &mut chunk[(r0 + r) * ldc + col0 + p * nr..(r0 + r) * ldc + col0 + p * nr + cols];
                ep.finish_row(&mut acc[r * nr..r * nr + cols], p * nr, rs, orow);
            }
        }
    }
    A_SCRATCH.with(|s| s.set(scratch));
}
