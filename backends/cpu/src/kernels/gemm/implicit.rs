//! Implicit GEMM: a convolution's A read in place, one K segment (filter row) at a time, so
//! only the pixels whose taps reach into the padding are gathered (no im2col of the tile).
#![forbid(unsafe_code)]

use super::{then_band_rows, with_scratch, Act, ASource, Micro, PackedB, Plan, Then, PAR_MIN_MACS};
use crate::simd::gemm::{self as sc, Epilogue};
use crate::simd::Avx2Token;
use std::cell::RefCell;

/// Most filter rows (segments) an AVX2 tile read through row pointers takes in one pass (a table
/// of 16 showed as a memset in the 3×3 convolutions' profile).
const ROW_SEGS: usize = 8;

thread_local! {
    /// Zeros that a tile's row pointers read where a pixel's filter row lies in the padding and
    /// another pixel's of the same tile does not (never written but to grow it).
    static ZEROS: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Whether the AVX2 row-pointer tiles run on across output rows ([`run_cross_avx2`]): when the
/// rows cut into tiles of fewer than 5 rows on average (an 8-pixel row into tiles of 4, a
/// 7-pixel one into 4 and 3: 8 and 6 FMA chains where the core needs 10-12 to hide their
/// latency). Measured (one-op models, one thread): 8×8×64 → 64 3×3 0.080 → 0.068 ms, at two
/// threads 0.051 → 0.039; 16- and 32-pixel rows (tiles of 5-6) gain nothing, and a 32-pixel
/// stride-2 stem with K = 27 lost (0.040 → 0.047: per-tile pointer set-up at small K).
fn cross_tiles<S: SegmentSource>(p: &Plan, src: &S) -> bool {
    let row_len = src.row_len();
    pointer_tiles(p, src).is_some() && row_len < 5 * row_len.div_ceil(p.mr)
}

/// The AVX2 token when tiles can read `src` through row pointers ([`pointer_tile_avx2`]).
fn pointer_tiles<S: SegmentSource>(p: &Plan, src: &S) -> Option<Avx2Token> {
    match p.micro {
        Micro::Avx2(t) if src.segments() <= ROW_SEGS => Some(t),
        _ => None,
    }
}

/// Rows `m0..m1` of [`gemm_segmented`] in AVX2 register tiles of up to [`sc::MR_AVX2`]
/// consecutive pixels that may span several output rows ([`pointer_tile_avx2`]).
#[allow(clippy::too_many_arguments)]
fn run_cross_avx2<S: SegmentSource>(p: &Plan, t: Avx2Token, src: &S, m0: usize, m1: usize, c: &mut [f32], ldc: usize, scratch: &mut Vec<f32>, zeros: &[f32]) {
    let interior = src.interior();
    let len = m1 - m0;
    let tiles = len.div_ceil(p.mr);
    for pb in (0..p.panels).step_by(p.nc_panels) {
        let pe = (pb + p.nc_panels).min(p.panels);
        for i in 0..tiles {
            // Tile i of `tiles` covers [i·len / tiles, (i+1)·len / tiles): 5 or 6 rows each.
            let (ir, end) = (m0 + i * len / tiles, m0 + (i + 1) * len / tiles);
            pointer_tile_avx2(p, t, src, ir, end - ir, interior, pb, pe, &mut c[(ir - m0) * ldc..], ldc, scratch, zeros);
        }
    }
}

/// One AVX2 register tile of GEMM rows `ir..ir + rows` (consecutive pixels, possibly of several
/// output rows) against panels `pb..pe`, into `c` (its row 0 is GEMM row `ir`), every pixel's
/// filter rows read through its own row pointer: in place where its taps lie inside the input
/// (`interior`, [`SegmentSource::interior`]), a gathered im2col row where they reach the left
/// or right padding (the tile's such pixels gathered as one run), zeros where the filter row
/// lies in the top or bottom padding. A filter row in the padding for every pixel of the tile
/// is skipped, as the in-place tiles skip it; one in the padding for some pixels only adds
/// their zero products (the sums differ from a gathered tile's at most in the sign of a zero).
/// At most [`ROW_SEGS`] filter rows; `zeros` holds `segment_len()` zeros.
#[allow(clippy::too_many_arguments)]
fn pointer_tile_avx2<S: SegmentSource>(
    p: &Plan,
    t: Avx2Token,
    src: &S,
    ir: usize,
    rows: usize,
    (lo, hi): (usize, usize),
    pb: usize,
    pe: usize,
    c: &mut [f32],
    ldc: usize,
    scratch: &mut Vec<f32>,
    zeros: &[f32],
) {
    let row_len = src.row_len();
    let (nseg, seg_len) = (src.segments(), src.segment_len());
    // Output row and position of the tile's first pixel (the others follow without dividing).
    let (y0, x0) = (ir / row_len, ir % row_len);
    // The tile's pixels that reach the left or right padding, gathered as one run.
    let (mut g0, mut g1) = (rows, 0);
    let mut x = x0;
    for r in 0..rows {
        if x < lo || x >= hi {
            g0 = g0.min(r);
            g1 = r + 1;
        }
        x = if x + 1 == row_len { 0 } else { x + 1 };
    }
    let gathered = if g0 < g1 { Some(src.block(ir + g0, g1 - g0, 0, p.b.k, scratch)) } else { None };
    let mut segs = [sc::RowSeg::EMPTY; ROW_SEGS];
    let mut used = [false; ROW_SEGS];
    for (s, e) in segs.iter_mut().enumerate().take(nseg) {
        e.k0 = s * seg_len;
    }
    // Runs of the tile's pixels within one output row, cut where they cross the gathered run.
    let (mut r, mut y, mut x) = (0, y0, x0);
    let mut row = src.row(y);
    while r < rows {
        let mut run_end = rows.min(r + row_len - x);
        if r < g0 {
            run_end = run_end.min(g0);
        } else if r < g1 {
            run_end = run_end.min(g1);
        }
        let in_gather = (g0..g1).contains(&r);
        for s in 0..nseg {
            match src.segment(row, x, run_end - r, s) {
                Some(Segment::Zero) => segs[s].rows[r..run_end].fill(zeros),
                Some(Segment::Rows(a, lda)) if !in_gather => {
                    for q in r..run_end {
                        segs[s].rows[q] = &a[(q - r) * lda..];
                    }
                    used[s] = true;
                }
                _ => {
                    let (ga, glda) = gathered.expect("a pixel outside the in-place range is gathered");
                    for q in r..run_end {
                        segs[s].rows[q] = &ga[(q - g0) * glda + s * seg_len..];
                    }
                    used[s] = true;
                }
            }
        }
        x += run_end - r;
        r = run_end;
        if x == row_len && r < rows {
            (x, y) = (0, y + 1);
            row = src.row(y);
        }
    }
    let mut n = 0;
    for s in 0..nseg {
        if used[s] {
            segs[n] = segs[s];
            n += 1;
        }
    }
    let j0 = pb * p.nr;
    let cols = (pe * p.nr).min(p.n) - j0;
    let ep = Epilogue { load_c: false, finish: true, bias: p.bias.map(|b| &b[j0..j0 + cols]), min: p.act.min, max: p.act.max };
    sc::gemm_panels_rows_avx2(t, rows, cols, seg_len, &segs[..n], p.b.panels_from(pb), p.b.k * p.nr, &mut c[j0..], ldc, &ep);
}

/// Rows of `A` for one K segment of a register tile, read in place (implicit GEMM).
pub(crate) enum Segment<'a> {
    /// `a[r * lda + kk]` is `A[row0 + r][k0 + kk]` for the segment's `kk`.
    Rows(&'a [f32], usize),
    /// The segment is zero for every row of the tile (taps in the padding): skipped.
    Zero,
}

/// An `A` whose K range splits into `segments()` runs of `segment_len()` columns that can often
/// be read in place: a convolution's filter rows (the taps of one `kh` over one output row are
/// `k_w * in_c` consecutive input values, pixel `r` starting `stride_w * in_c` after pixel
/// `r - 1`). Tiles never cross a `row_len` boundary; a tile for which `segment` answers `None`
/// goes through [`ASource::block`].
pub(crate) trait SegmentSource: ASource {
    /// What `segment` needs to know about one row of `row_len` GEMM rows, computed once per row.
    type Row: Copy;
    fn segments(&self) -> usize;
    fn segment_len(&self) -> usize;
    fn row_len(&self) -> usize;
    /// Row `y` (GEMM rows `y * row_len ..`).
    fn row(&self, y: usize) -> Self::Row;
    /// Segment `s` of the tile of GEMM rows `col0..col0 + rows` within `row`.
    fn segment<'s>(&'s self, row: Self::Row, col0: usize, rows: usize, s: usize) -> Option<Segment<'s>>;
    /// The positions `lo..hi` within every row (`lo ≤ hi ≤ row_len`) whose segments can all be
    /// read in place (`segment` answers `None` only for tiles reaching outside them). Tiles are
    /// cut at `lo` and `hi`, so only the pixels outside are gathered.
    fn interior(&self) -> (usize, usize);
}

/// [`gemm_with`] reading `A` in place segment by segment where `src` allows (no im2col): each
/// tile runs the micro-kernel once per non-zero segment, the first from the bias, the others
/// from C, the last with the activation — the same FMA chain in the same K order as one pass.
pub(crate) fn gemm_segmented<S: SegmentSource>(
    m: usize,
    src: &S,
    b: &PackedB,
    bias: Option<&[f32]>,
    act: Act,
    c: &mut [f32],
    ldc: usize,
) {
    gemm_segmented_then(m, src, b, bias, act, c, ldc, None);
}

/// [`gemm_segmented`], then `then` on each band of rows as [`gemm_with_then`] does.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_segmented_then<S: SegmentSource>(
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
    assert_eq!(src.segments() * src.segment_len(), b.k, "segments do not cover K");
    assert!(src.row_len() > 0 && m.is_multiple_of(src.row_len()), "M is not whole rows");
    let n = b.n;
    let row_len = src.row_len();
    let rows = m / row_len;
    let threads = nnrt_threads::kernel_threads();
    if threads <= 1 || m * n * b.k.max(1) < PAR_MIN_MACS || (rows < 2 && m < 2 * plan.mr) {
        match then {
            None => with_scratch(|s| run_segmented(&plan, src, 0, m, c, ldc, s)),
            Some(then) => {
                // Band by band of whole output rows, as `gemm_with_then` does.
                let band = then_band_rows(n, row_len).div_ceil(row_len).max(1);
                for (i, cc) in c.chunks_mut(band * row_len * ldc).enumerate() {
                    let (y0, y1) = (i * band, (i * band + band).min(rows));
                    with_scratch(|s| run_segmented(&plan, src, y0 * row_len, y1 * row_len, cc, ldc, s));
                    then(y0 * row_len, y1 * row_len, cc);
                }
            }
        }
    } else {
        // A few tasks per thread: whole output rows where there are enough of them (or too few
        // pixels for two register tiles: an SSD head's 3x3 map), else pieces of rows in whole
        // register tiles (a CONV_1D's single output row).
        let tasks = 16 * threads;
        let whole_rows = !cross_tiles(&plan, src) && (rows >= 4 * threads || m < 2 * plan.mr);
        let per_task = if whole_rows { rows.div_ceil(tasks) * row_len } else { m.div_ceil(tasks).div_ceil(plan.mr).max(1) * plan.mr };
        nnrt_threads::par_chunks_mut(c, per_task * ldc, |t, cc| {
            let (r0, r1) = (t * per_task, ((t + 1) * per_task).min(m));
            with_scratch(|s| run_segmented(&plan, src, r0, r1, cc, ldc, s));
            if let Some(then) = then {
                then(r0, r1, cc);
            }
        });
    }
}

/// GEMM rows `m0..m1` of [`gemm_segmented`] (any cut, not only whole output rows) into `c`
/// (whose row 0 is GEMM row `m0`).
fn run_segmented<S: SegmentSource>(p: &Plan, src: &S, m0: usize, m1: usize, c: &mut [f32], ldc: usize, scratch: &mut Vec<f32>) {
    match pointer_tiles(p, src) {
        // Row-pointer tiles for the tiles that need gathering, and for every tile where the
        // output rows are short.
        Some(t) => ZEROS.with(|z| {
            let mut z = z.borrow_mut();
            if z.len() < src.segment_len() {
                z.resize(src.segment_len(), 0.0);
            }
            match cross_tiles(p, src) {
                true => run_cross_avx2(p, t, src, m0, m1, c, ldc, scratch, &z),
                false => run_row_tiles(p, src, m0, m1, c, ldc, scratch, Some((t, &z))),
            }
        }),
        None => run_row_tiles(p, src, m0, m1, c, ldc, scratch, None),
    }
}

/// [`run_segmented`] in tiles within output rows; `pointers` (AVX2, with its zeros) runs the
/// tiles that need gathering as [`pointer_tile_avx2`], gathering only their edge pixels.
#[allow(clippy::too_many_arguments)]
fn run_row_tiles<S: SegmentSource>(p: &Plan, src: &S, m0: usize, m1: usize, c: &mut [f32], ldc: usize, scratch: &mut Vec<f32>, pointers: Option<(Avx2Token, &[f32])>) {
    let row_len = src.row_len();
    let (segs, seg_len) = (src.segments(), src.segment_len());
    // The in-place segments of one tile, filled anew per tile (set up once: a per-tile fill of
    // all MAX_SEGS entries showed in the stem convolution's profile).
    let mut tile_segs: [(&[f32], usize, usize); sc::MAX_SEGS] = [(&[], 0, 0); sc::MAX_SEGS];
    // Tiles stop at the in-place range's ends, so a tile reaching the padding gathers only
    // its edge pixels (a 32-pixel row in 16-row tiles, 3×3 with padding 1, had both tiles
    // gathered), where the interior fills at least one whole tile; otherwise one tile
    // gathering the row beats three that each stream B.
    let (lo, hi) = src.interior();
    let (lo, hi) = (lo.min(row_len), hi.clamp(lo.min(row_len), row_len));
    let interior = (lo, hi);
    let (lo, hi) = if hi - lo >= p.mr { (lo, hi) } else { (0, row_len) };
    // Tiles of at most 6 rows (AVX2) are cut evenly instead, a tile with an edge pixel
    // gathered whole: a one- or two-row tile has too few FMA chains to hide their latency
    // (two rows of 16 columns: 4 chains, half the core's rate), and the gather costs less.
    // Rows read wholly in place are cut evenly too (a 16-pixel row into 5, 5, 6, not 6, 6, 4).
    let balanced = (p.mr <= 6).then(|| row_len.div_ceil(p.mr));
    // Tile i of `tiles` covers [i·row_len / tiles, (i+1)·row_len / tiles): the bounds of up to
    // 64 tiles computed once (a division per tile was a sixth of a stem convolution's driver).
    let mut bounds = [0usize; 65];
    if let Some(tiles) = balanced.filter(|&t| t < bounds.len()) {
        for (i, b) in bounds.iter_mut().enumerate().take(tiles + 1) {
            *b = i * row_len / tiles;
        }
    }
    let simd = matches!(p.micro, Micro::Avx512(_) | Micro::Avx2(_));
    for pb in (0..p.panels).step_by(p.nc_panels) {
        let pe = (pb + p.nc_panels).min(p.panels);
        let j0 = pb * p.nr;
        let cols = (pe * p.nr).min(p.n) - j0;
        let (stride, panels) = (p.b.k * p.nr, p.b.panels_from(pb));
        let bias = p.bias.map(|b| &b[j0..j0 + cols]);
        for y in m0 / row_len..m1.div_ceil(row_len) {
            let row = src.row(y);
            let mut ir = m0.max(y * row_len);
            let row_end = m1.min((y + 1) * row_len);
            // The balanced tile holding `ir` (found once per row; tiles then follow in order).
            let mut ti = balanced.map_or(0, |tiles| ((ir - y * row_len) * tiles + tiles) / row_len);
            while ir < row_end {
                let pos = ir - y * row_len;
                let end = match balanced {
                    Some(tiles) if tiles < bounds.len() => {
                        while ti < tiles && bounds[ti] <= pos {
                            ti += 1;
                        }
                        bounds[ti]
                    }
                    Some(tiles) => ((pos * tiles + tiles) / row_len..=tiles).map(|i| i * row_len / tiles).find(|&e| e > pos).unwrap_or(row_len),
                    None if pos < lo => lo,
                    None if pos < hi => hi,
                    None => row_len,
                };
                let ct0 = (ir - m0) * ldc;
                // AVX2: the balanced tiles from here on that lie wholly in the in-place range go
                // to the micro-kernel as one strip (one call and one set of checks for the run:
                // per-tile calls had been a third of a K = 27 stem convolution's time).
                if let (Micro::Avx2(t), Some(tiles)) = (p.micro, balanced) {
                    let lim = interior.1.min(row_end - y * row_len);
                    if tiles < bounds.len() && pos >= interior.0 && end <= lim {
                        let mut tj = ti;
                        while tj < tiles && bounds[tj + 1] <= lim {
                            tj += 1;
                        }
                        let len = bounds[tj] - pos;
                        let mut n = 0;
                        let mut in_place = true;
                        for s in 0..segs {
                            match src.segment(row, pos, len, s) {
                                Some(Segment::Rows(a, lda)) if n < sc::MAX_SEGS => {
                                    tile_segs[n] = (a, lda, s * seg_len);
                                    n += 1;
                                }
                                Some(Segment::Zero) => {}
                                _ => {
                                    in_place = false;
                                    break;
                                }
                            }
                        }
                        if in_place {
                            let ep = Epilogue { load_c: false, finish: true, bias, min: p.act.min, max: p.act.max };
                            sc::gemm_strip_segs_avx2(t, pos, &bounds[ti..=tj], cols, seg_len, &tile_segs[..n], panels, stride, &mut c[ct0 + j0..], ldc, &ep);
                            ir += len;
                            continue;
                        }
                    }
                }
                let rows = p.mr.min(end - pos).min(row_end - ir);
                // The last segment read in place; `Err` when some segment needs gathering. The
                // SIMD kernels' in-place segments are collected on the way (up to MAX_SEGS).
                let mut last = Ok(None);
                let mut n_segs = 0;
                for s in 0..segs {
                    match src.segment(row, pos, rows, s) {
                        None => {
                            last = Err(());
                            break;
                        }
                        Some(Segment::Rows(a, lda)) => {
                            last = Ok(Some(s));
                            if simd && n_segs < sc::MAX_SEGS {
                                tile_segs[n_segs] = (a, lda, s * seg_len);
                            }
                            n_segs += 1;
                        }
                        Some(Segment::Zero) => {}
                    }
                }
                let Ok(last) = last else {
                    if let Some((t, zeros)) = pointers {
                        pointer_tile_avx2(p, t, src, ir, rows, interior, pb, pe, &mut c[ct0..], ldc, scratch, zeros);
                        ir += rows;
                        continue;
                    }
                    // Gather this tile's A (all K blocks) as the plain GEMM does.
                    for kb in 0..p.nkb {
                        let (k0, kc, _) = p.kblock(kb, 0, 0);
                        let (a, lda) = src.block(ir, rows, k0, kc, scratch);
                        p.kblock_tiles(kb, rows, a, lda, pb, pe, &mut c[ct0 + j0..], ldc);
                    }
                    ir += rows;
                    continue;
                };
                if simd {
                    // The row of tiles at once, its non-zero segments accumulated in registers
                    // (up to MAX_SEGS per pass; a pass after the first continues from C).
                    let run = |segs: &[(&[f32], usize, usize)], ct: &mut [f32], ep: &Epilogue| match p.micro {
                        Micro::Avx512(t) => sc::gemm_panels_segs_avx512(t, rows, cols, seg_len, segs, panels, stride, p.nr, ct, ldc, ep),
                        Micro::Avx2(t) => sc::gemm_panels_segs_avx2(t, rows, cols, seg_len, segs, panels, stride, ct, ldc, ep),
                        Micro::Portable => unreachable!("SIMD tiles only"),
                    };
                    let ct = &mut c[ct0 + j0..];
                    let mut ep = Epilogue { load_c: false, finish: true, bias, min: p.act.min, max: p.act.max };
                    if n_segs <= sc::MAX_SEGS {
                        run(&tile_segs[..n_segs], ct, &ep);
                        ir += rows;
                        continue;
                    }
                    ep.finish = false;
                    n_segs = 0;
                    for s in last.map_or(0..0, |last| 0..last + 1) {
                        let Some(Segment::Rows(a, lda)) = src.segment(row, pos, rows, s) else { continue };
                        if n_segs == sc::MAX_SEGS {
                            run(&tile_segs, ct, &ep);
                            (ep.load_c, n_segs) = (true, 0);
                        }
                        tile_segs[n_segs] = (a, lda, s * seg_len);
                        n_segs += 1;
                    }
                    ep.finish = true;
                    run(&tile_segs[..n_segs], ct, &ep);
                    ir += rows;
                    continue;
                }
                for pi in pb..pe {
                    let j0 = pi * p.nr;
                    let cols = p.nr.min(p.n - j0);
                    let panel = p.b.panel(pi);
                    let ct = &mut c[ct0 + j0..];
                    let mut ep = Epilogue {
                        load_c: false,
                        finish: false,
                        bias: p.bias.map(|b| &b[j0..j0 + cols]),
                        min: p.act.min,
                        max: p.act.max,
                    };
                    match last {
                        // Every tap in the padding: the bias through the activation.
                        None => {
                            ep.finish = true;
                            p.micro.tile(rows, cols, 0, &[], 0, &panel[..0], p.nr, ct, ldc, &ep);
                        }
                        Some(last) => {
                            for s in 0..=last {
                                let Some(Segment::Rows(a, lda)) = src.segment(row, ir - y * row_len, rows, s) else { continue };
                                ep.finish = s == last;
                                let k0 = s * seg_len;
                                let bp = &panel[k0 * p.nr..(k0 + seg_len) * p.nr];
                                p.micro.tile(rows, cols, seg_len, a, lda, bp, p.nr, ct, ldc, &ep);
                                ep.load_c = true;
                            }
                        }
                    }
                }
                ir += rows;
            }
        }
    }
}
