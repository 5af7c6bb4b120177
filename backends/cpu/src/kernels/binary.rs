//! Element-wise binary ops with NumPy broadcasting: ADD, SUB, MUL, DIV, POW, SQUARED_DIFFERENCE,
//! MAXIMUM, MINIMUM, FLOOR_DIV, FLOOR_MOD, over f32 (with a fused activation clamp), i32 and i64.
//!
//! This file also holds the one broadcast iterator of the crate (`broadcast_rows`, reused by
//! PRELU) and the rule for splitting element-wise work across the kernel pool (`par_chunk`).
#![forbid(unsafe_code)]

use std::ops::Range;


use super::small::Small;
use super::Act;
use crate::simd::elementwise::{self as ew, VBin};
use crate::simd::quant::{with_avx512, Avx512Body};

/// Work size (in elements) from which kernels split across the current run's kernel pool. Low:
/// a small element-wise op after a parallel one finds half its operands in the other core's
/// cache, so running it on one thread costs more (cross-core reads) than the split (~1 µs).
pub(crate) const PAR_MIN: usize = 1 << 12;

/// How many of `n_items` items (each worth `item_cost` elements of work) one parallel chunk
/// should take, or `None` to run inline: small jobs, or a pool of one thread. Chunks are equal
/// and their count a multiple of the thread count, so that thread `t` (dealt a contiguous `1/T`
/// of the chunks) works on about the `t`-th `1/T` of the items, the part it wrote in the
/// row-split op before.
pub(crate) fn par_chunk(n_items: usize, item_cost: usize) -> Option<usize> {
    let threads = nnrt_threads::kernel_threads();
    let cost = item_cost.max(1);
    let work = n_items.saturating_mul(cost);
    if threads < 2 || n_items < 2 || work < PAR_MIN {
        return None;
    }
    // Up to four chunks per thread, each worth at least PAR_MIN / 2 elements.
    let per_thread = (work / (PAR_MIN / 2) / threads).clamp(1, 4);
    let chunk = n_items.div_ceil(per_thread * threads);
    (chunk < n_items).then_some(chunk)
}

/// A loop over slices of an input and the matching slices of an output, which
/// [`map_chunks`] compiles again for AVX-512 (`simd::quant::with_avx512`).
struct ChunkBody<'a, I, F> {
    x: &'a [I],
    f: &'a F,
}

impl<I, O, F: Fn(&[I], &mut [O])> Avx512Body<O> for ChunkBody<'_, I, F> {
    #[inline(always)]
    fn run(&self, out: &mut [O]) {
        (self.f)(self.x, out)
    }
}

/// Runs the element-wise loop `f(x_part, out_part)` over `x` and `out` (of equal lengths),
/// vectorized for AVX-512 where the CPU has it and split across the current run's kernel pool
/// when the work (`item_cost` per element) is large enough ([`par_chunk`]).
pub(crate) fn map_chunks<I: Sync, O: Send>(x: &[I], out: &mut [O], item_cost: usize, f: impl Fn(&[I], &mut [O]) + Sync) {
    let n = out.len().min(x.len());
    let (x, out) = (&x[..n], &mut out[..n]);
    match par_chunk(n, item_cost) {
        None => with_avx512(&ChunkBody { x, f: &f }, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c, |i, o| with_avx512(&ChunkBody { x: &x[i * c..i * c + o.len()], f: &f }, o)),
    }
}

/// TFLite's `ActivationFunctionWithMinMax`: `std::min(std::max(x, lo), hi)`. Unlike
/// [`Act::apply`], a NaN `x` passes through, as it does in TFLite.
#[inline(always)]
pub(crate) fn clamp(x: f32, act: Act) -> f32 {
    let y = if x < act.min { act.min } else { x };
    if act.max < y {
        act.max
    } else {
        y
    }
}

/// An element-wise binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b` (wrapping for integers).
    Add,
    /// `a - b` (wrapping for integers).
    Sub,
    /// `a * b` (wrapping for integers).
    Mul,
    /// `a / b`; integers truncate toward zero like C++ (TFLite's reference `Div`).
    Div,
    /// `a^b`: `powf` for floats; for integers a wrapping power (TFLite rejects negative
    /// exponents at run time; here `a^-k` is the truncated real result: ±1 for |a| = 1, else 0).
    Pow,
    /// `(a - b)²`.
    SquaredDifference,
    /// `a > b ? a : b` (a NaN in `a` yields `b`, as in TFLite).
    Maximum,
    /// `a < b ? a : b`.
    Minimum,
    /// `floor(a / b)`.
    FloorDiv,
    /// The remainder with the sign of the divisor: `r = fmod(a, b); r != 0 && (r < 0) != (b < 0)
    /// ? r + b : r` (TFLite FLOOR_MOD).
    FloorMod,
}

/// The NumPy broadcast of two shapes (right-aligned; each pair of dims equal or one of them 1),
/// or `None` when they are incompatible.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    (0..rank)
        .map(|i| {
            let da = padded_dim(a, rank, i);
            let db = padded_dim(b, rank, i);
            match (da, db) {
                _ if da == db => Some(da),
                (1, _) => Some(db),
                (_, 1) => Some(da),
                _ => None,
            }
        })
        .collect()
}

/// Dim `i` of `shape` left-padded with 1s to `rank`.
fn padded_dim(shape: &[usize], rank: usize, i: usize) -> usize {
    (i + shape.len()).checked_sub(rank).map_or(1, |j| shape[j])
}

/// One row of a broadcast operand: contiguous values, or one value repeated along the row.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Row<'a, T> {
    /// The operand varies along the row.
    Slice(&'a [T]),
    /// The operand is broadcast along the row.
    Splat(T),
}

/// The broadcast of two operands, coalesced: outer dims with per-operand strides (0 where
/// broadcast), and an inner row of `n` elements along which each operand is contiguous or
/// constant.
struct Plan {
    dims: Small<usize>,
    sa: Small<usize>,
    sb: Small<usize>,
    n: usize,
    a_contig: bool,
    b_contig: bool,
    total: usize,
}

impl Plan {
    fn new(a_shape: &[usize], b_shape: &[usize], out_shape: &[usize]) -> Plan {
        let rank = out_shape.len();
        assert!(
            a_shape.len() <= rank && b_shape.len() <= rank,
            "broadcast: input rank exceeds the output rank {out_shape:?}"
        );
        let total = out_shape.iter().product();
        // Row-major strides of each operand in its own layout, 0 along broadcast dims.
        let strides = |shape: &[usize]| {
            let mut s = Small::filled(rank, 0);
            let mut acc = 1;
            for i in (0..rank).rev() {
                let d = padded_dim(shape, rank, i);
                assert!(
                    d == out_shape[i] || d == 1,
                    "broadcast: {shape:?} does not broadcast to {out_shape:?}"
                );
                s[i] = if d == 1 { 0 } else { acc };
                acc *= d;
            }
            s
        };
        let (sa_full, sb_full) = (strides(a_shape), strides(b_shape));
        // Drop size-1 dims, then merge neighbours that each operand walks as one dim.
        let mut merged: Small<(usize, usize, usize)> = Small::new();
        for i in 0..rank {
            let (d, sa, sb) = (out_shape[i], sa_full[i], sb_full[i]);
            if d == 1 {
                continue;
            }
            match merged.last_mut() {
                Some(last) if last.1 == sa * d && last.2 == sb * d => *last = (last.0 * d, sa, sb),
                _ => merged.push((d, sa, sb)),
            }
        }
        let (n, a_in, b_in) = merged.pop().unwrap_or((1, 0, 0));
        Plan {
            dims: merged.iter().map(|m| m.0).collect(),
            sa: merged.iter().map(|m| m.1).collect(),
            sb: merged.iter().map(|m| m.2).collect(),
            n,
            a_contig: a_in == 1,
            b_contig: b_in == 1,
            total,
        }
    }
}

/// A small broadcast that needs no [`Plan`]: building one per call cost ~10 % of a recurrent
/// model's run, whose loop bodies are element-wise ops of a few hundred values.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Quick {
    /// Both operands have the output's shape (leading 1s aside).
    Same,
    /// `a` is one value, `b` the output's shape.
    SplatA,
    /// `b` is one value, `a` the output's shape.
    SplatB,
    /// `a` has the output's trailing dims (`n` values, repeated), `b` the output's shape.
    RepeatA(usize),
    /// `b` has the output's trailing dims (`n` values, repeated), `a` the output's shape.
    RepeatB(usize),
}

/// Repeated rows shorter than this, or more of them than [`QUICK_MAX_ROWS`], take the plan's
/// tiled path.
const QUICK_MIN_ROW: usize = 16;
const QUICK_MAX_ROWS: usize = 16;

/// The [`Quick`] form of a broadcast of `a_len` values of `a_shape` and `b_len` of `b_shape` to
/// `out_len` of `out_shape`, for fewer than [`PAR_MIN`] output values (one thread's work); `None`
/// where the plan is needed (or the shapes or lengths are inconsistent: the plan reports those).
fn quick(a_shape: &[usize], a_len: usize, b_shape: &[usize], b_len: usize, out_shape: &[usize], out_len: usize) -> Option<Quick> {
    if out_len == 0 || out_len >= PAR_MIN || a_shape.len() > out_shape.len() || b_shape.len() > out_shape.len() {
        return None;
    }
    fn lead(s: &[usize]) -> &[usize] {
        &s[s.iter().position(|&d| d != 1).unwrap_or(s.len())..]
    }
    let (o, a, b) = (lead(out_shape), lead(a_shape), lead(b_shape));
    let fits = |s: &[usize], len: usize| s.iter().product::<usize>() == len;
    if !fits(o, out_len) || !fits(a, a_len) || !fits(b, b_len) {
        return None;
    }
    let repeat = |s: &[usize], len: usize| !s.is_empty() && o.ends_with(s) && len >= QUICK_MIN_ROW && out_len / len <= QUICK_MAX_ROWS;
    match (same_dims(a, o), same_dims(b, o)) {
        (true, true) => Some(Quick::Same),
        (true, false) if b.is_empty() => Some(Quick::SplatB),
        (false, true) if a.is_empty() => Some(Quick::SplatA),
        (true, false) if repeat(b, b_len) => Some(Quick::RepeatB(b_len)),
        (false, true) if repeat(a, a_len) => Some(Quick::RepeatA(a_len)),
        _ => None,
    }
}

/// `a == b` without a `memcmp` call for empty shapes (scalars): glibc's AVX-512 `memcmp` does a
/// masked load from the empty slice's dangling address, and the fault it suppresses costs
/// hundreds of cycles (20 % of a recurrent model's run, whose counters are scalars).
fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}

/// Calls `f` over `out` in the [`Quick`] form `q` of `a` and `b`.
fn quick_rows<A: Copy, B: Copy, O>(q: Quick, a: &[A], b: &[B], out: &mut [O], mut f: impl FnMut(Row<'_, A>, Row<'_, B>, &mut [O])) {
    match q {
        Quick::Same => f(Row::Slice(a), Row::Slice(b), out),
        Quick::SplatA => f(Row::Splat(a[0]), Row::Slice(b), out),
        Quick::SplatB => f(Row::Slice(a), Row::Splat(b[0]), out),
        Quick::RepeatA(n) => out.chunks_mut(n).zip(b.chunks(n)).for_each(|(o, b)| f(Row::Slice(a), Row::Slice(b), o)),
        Quick::RepeatB(n) => out.chunks_mut(n).zip(a.chunks(n)).for_each(|(o, a)| f(Row::Slice(a), Row::Slice(b), o)),
    }
}

/// Calls `f(a_row, b_row, out_row)` for every row of the broadcast of `a` (`a_shape`) and `b`
/// (`b_shape`) to `out_shape`, covering `out` in order. Dims are coalesced first, so
/// `[N,H,W,C] op [C]` becomes rows of `C` with `b` contiguous, equal shapes become one row, and a
/// 1-element operand is a `Splat`. Large jobs are split across the current run's kernel pool (by rows,
/// or within the row when there is only one).
///
/// # Panics
/// When a shape does not broadcast to `out_shape` or a slice length does not match its shape.
pub(crate) fn broadcast_rows<A, B, O, F>(
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    out: &mut [O],
    out_shape: &[usize],
    f: F,
) where
    A: Copy + Sync,
    B: Copy + Sync,
    O: Send,
    F: Fn(Row<'_, A>, Row<'_, B>, &mut [O]) + Sync,
{
    if let Some(q) = quick(a_shape, a.len(), b_shape, b.len(), out_shape, out.len()) {
        return quick_rows(q, a, b, out, f);
    }
    broadcast_plan(&Plan::new(a_shape, b_shape, out_shape), a, a_shape, b, b_shape, out, f)
}

/// `row` repeated to `len` values: the row, then copies of what is there, doubling (a memcpy
/// each; an element-by-element `cycle` cost ~5 % of a small broadcast op's run).
fn tile<T: Copy>(row: &[T], len: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&row[..row.len().min(len)]);
    while !v.is_empty() && v.len() < len {
        let k = (len - v.len()).min(v.len());
        v.extend_from_within(..k);
    }
    v
}

/// [`broadcast_rows`] with its plan made already.
fn broadcast_plan<A, B, O, F>(p: &Plan, a: &[A], a_shape: &[usize], b: &[B], b_shape: &[usize], out: &mut [O], f: F)
where
    A: Copy + Sync,
    B: Copy + Sync,
    O: Send,
    F: Fn(Row<'_, A>, Row<'_, B>, &mut [O]) + Sync,
{
    assert_eq!(
        a.len(),
        a_shape.iter().product::<usize>(),
        "broadcast: a's length vs shape"
    );
    assert_eq!(
        b.len(),
        b_shape.iter().product::<usize>(),
        "broadcast: b's length vs shape"
    );
    assert_eq!(out.len(), p.total, "broadcast: out's length vs shape");
    if p.total == 0 {
        return;
    }
    let n = p.n;
    let rows = p.total / n;
    if rows == 1 {
        let row_a = |r: Range<usize>| {
            if p.a_contig {
                Row::Slice(&a[r])
            } else {
                Row::Splat(a[0])
            }
        };
        let row_b = |r: Range<usize>| {
            if p.b_contig {
                Row::Slice(&b[r])
            } else {
                Row::Splat(b[0])
            }
        };
        match par_chunk(n, 1) {
            None => f(row_a(0..n), row_b(0..n), out),
            Some(c) => nnrt_threads::par_chunks_mut(out, c, |i, o| {
                let r = i * c..i * c + o.len();
                f(row_a(r.clone()), row_b(r), o)
            }),
        }
        return;
    }
    // Short rows against one row repeated (`[N,H,W,C] op [C]` with small C, e.g. the channel
    // scales of a squeeze-and-excitation block): one call per row would cost more than the
    // row's arithmetic, so the repeated row is tiled into a block of several rows and the
    // full operand is taken that many rows at a time (the op is element-wise: same results).
    if n < 256 && rows > 1 {
        let full = |contig: bool, len: usize| contig && len == p.total;
        let one_row = |contig: bool, len: usize| contig && len == n;
        let reps = (2048 / n).clamp(1, rows);
        let block = n * reps;
        if full(p.a_contig, a.len()) && one_row(p.b_contig, b.len()) {
            let tiled = tile(b, block);
            let run = |i: usize, o: &mut [O]| f(Row::Slice(&a[i * block..i * block + o.len()]), Row::Slice(&tiled[..o.len()]), o);
            match par_chunk(p.total.div_ceil(block), block) {
                None => out.chunks_mut(block).enumerate().for_each(|(i, o)| run(i, o)),
                Some(c) => nnrt_threads::par_chunks_mut(out, c * block, |t, o| o.chunks_mut(block).enumerate().for_each(|(i, o)| run(t * c + i, o))),
            }
            return;
        }
        if one_row(p.a_contig, a.len()) && full(p.b_contig, b.len()) {
            let tiled = tile(a, block);
            let run = |i: usize, o: &mut [O]| f(Row::Slice(&tiled[..o.len()]), Row::Slice(&b[i * block..i * block + o.len()]), o);
            match par_chunk(p.total.div_ceil(block), block) {
                None => out.chunks_mut(block).enumerate().for_each(|(i, o)| run(i, o)),
                Some(c) => nnrt_threads::par_chunks_mut(out, c * block, |t, o| o.chunks_mut(block).enumerate().for_each(|(i, o)| run(t * c + i, o))),
            }
            return;
        }
    }
    let run = |r0: usize, out: &mut [O]| {
        let mut idx = Small::filled(p.dims.len(), 0usize);
        let (mut oa, mut ob) = ew::row_start(r0, &p.dims, &p.sa, &p.sb, &mut idx);
        for o in out.chunks_mut(n) {
            let ra = if p.a_contig {
                Row::Slice(&a[oa..oa + n])
            } else {
                Row::Splat(a[oa])
            };
            let rb = if p.b_contig {
                Row::Slice(&b[ob..ob + n])
            } else {
                Row::Splat(b[ob])
            };
            f(ra, rb, o);
            ew::next_row(&mut idx, &p.dims, &p.sa, &p.sb, &mut oa, &mut ob);
        }
    };
    match par_chunk(rows, n) {
        None => run(0, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c * n, |i, o| run(i * c, o)),
    }
}

/// Plain NumPy broadcasting, one output element at a time: the reference for
/// [`broadcast_rows`].
pub(crate) fn broadcast_ref<A: Copy, B: Copy, O>(
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    out: &mut [O],
    out_shape: &[usize],
    f: impl Fn(A, B) -> O,
) {
    let rank = out_shape.len();
    let offset = |shape: &[usize], idx: &[usize]| {
        (0..rank).fold(0, |acc, i| {
            let d = padded_dim(shape, rank, i);
            acc * d + if d == 1 { 0 } else { idx[i] }
        })
    };
    let mut idx = vec![0; rank];
    for o in out.iter_mut() {
        *o = f(a[offset(a_shape, &idx)], b[offset(b_shape, &idx)]);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// One f32 element of `op` (without the activation).
#[inline(always)]
pub(crate) fn op_f32(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::SquaredDifference => (a - b) * (a - b),
        BinaryOp::Maximum => {
            if a > b {
                a
            } else {
                b
            }
        }
        BinaryOp::Minimum => {
            if a < b {
                a
            } else {
                b
            }
        }
        BinaryOp::FloorDiv => (a / b).floor(),
        BinaryOp::FloorMod => {
            let r = a % b;
            if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                r + b
            } else {
                r
            }
        }
    }
}

fn vbin(op: BinaryOp) -> Option<VBin> {
    Some(match op {
        BinaryOp::Add => VBin::Add,
        BinaryOp::Sub => VBin::Sub,
        BinaryOp::Mul => VBin::Mul,
        BinaryOp::Div => VBin::Div,
        BinaryOp::Maximum => VBin::Max,
        BinaryOp::Minimum => VBin::Min,
        BinaryOp::SquaredDifference => VBin::SqDiff,
        _ => return None,
    })
}

/// Applies `f` along one broadcast row (a portable loop the compiler can vectorize).
#[inline(always)]
pub(crate) fn map_row<A: Copy, B: Copy, O>(
    ra: Row<'_, A>,
    rb: Row<'_, B>,
    out: &mut [O],
    f: impl Fn(A, B) -> O,
) {
    match (ra, rb) {
        (Row::Slice(x), Row::Slice(y)) => {
            for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
                *o = f(x, y);
            }
        }
        (Row::Slice(x), Row::Splat(y)) => {
            for (o, &x) in out.iter_mut().zip(x) {
                *o = f(x, y);
            }
        }
        (Row::Splat(x), Row::Slice(y)) => {
            for (o, &y) in out.iter_mut().zip(y) {
                *o = f(x, y);
            }
        }
        (Row::Splat(x), Row::Splat(y)) => {
            for o in out.iter_mut() {
                *o = f(x, y);
            }
        }
    }
}

pub(crate) fn row_f32(op: BinaryOp, ra: Row<'_, f32>, rb: Row<'_, f32>, out: &mut [f32], act: Act) {
    if let Some(v) = vbin(op) {
        let (lo, hi) = (act.min, act.max);
        let done = match (ra, rb) {
            (Row::Slice(x), Row::Slice(y)) => ew::bin_vv(v, x, y, out, lo, hi),
            (Row::Slice(x), Row::Splat(s)) => ew::bin_vs(v, x, s, false, out, lo, hi),
            (Row::Splat(s), Row::Slice(y)) => ew::bin_vs(v, y, s, true, out, lo, hi),
            (Row::Splat(_), Row::Splat(_)) => false,
        };
        if done {
            return;
        }
    }
    // One monomorphized loop per op, so the per-element `match` folds away.
    macro_rules! go {
        ($($op:ident),*) => {
            match op {
                $(BinaryOp::$op => map_row(ra, rb, out, |x, y| clamp(op_f32(BinaryOp::$op, x, y), act)),)*
            }
        };
    }
    go!(
        Add,
        Sub,
        Mul,
        Div,
        Pow,
        SquaredDifference,
        Maximum,
        Minimum,
        FloorDiv,
        FloorMod
    );
}

/// `out = act(op(a, b))` with NumPy broadcasting of `a` (`a_shape`) and `b` (`b_shape`) to
/// `out_shape` (which the caller computes, e.g. with [`broadcast_shape`]). The activation clamp
/// lets NaN through, as TFLite's does. Equal shapes, a 1-element operand and an operand broadcast
/// along the leading dims (`[N,H,W,C] op [C]`) all reach the SIMD row routines.
///
/// # Panics
/// When the shapes do not broadcast to `out_shape` or a slice length does not match its shape.
#[allow(clippy::too_many_arguments)]
pub fn binary(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &mut [f32],
    out_shape: &[usize],
    act: Act,
) {
    // Small broadcasts need no plan (see [`Quick`]).
    if let Some(q) = quick(a_shape, a.len(), b_shape, b.len(), out_shape, out.len()) {
        return quick_rows(q, a, b, out, |ra, rb, o| row_f32(op, ra, rb, o, act));
    }
    // One plan for both paths (the walk declines same shapes, scalars and short rows).
    let p = Plan::new(a_shape, b_shape, out_shape);
    if vbin(op).is_some_and(|v| binary_rows(v, &p, a, a_shape, b, b_shape, out, act)) {
        return;
    }
    broadcast_plan(&p, a, a_shape, b, b_shape, out, |ra, rb, o| row_f32(op, ra, rb, o, act));
}

/// Rows of at least this many floats take [`binary_rows`]; shorter ones the tiled or per-row
/// paths of [`broadcast_rows`].
const WALK_MIN_ROW: usize = 16;

/// [`binary`] of a broadcast with several rows (`[N,H,W,C] op [1,H,1,C]`, `op [N,H,W,1]`, `op
/// [C]`): the whole walk over the outer dims runs inside one vector routine
/// (`simd::elementwise::bin_rows`), a chunk of rows per thread, instead of one call per row.
/// Returns `false` (nothing written) for one row, short rows, or without SIMD.
#[allow(clippy::too_many_arguments)]
fn binary_rows(op: VBin, p: &Plan, a: &[f32], a_shape: &[usize], b: &[f32], b_shape: &[usize], out: &mut [f32], act: Act) -> bool {
    if !ew::has_bin_rows() {
        return false;
    }
    let n = p.n;
    let whole = |x: &[f32], shape: &[usize]| x.len() == shape.iter().product::<usize>();
    if p.total == 0 || n < WALK_MIN_ROW || p.total / n < 2 || out.len() != p.total || !whole(a, a_shape) || !whole(b, b_shape) {
        return false;
    }
    let Some(walk) = ew::RowWalk::new(&p.dims, &p.sa, &p.sb) else { return false };
    let rows = p.total / n;
    let run = |r0: usize, o: &mut [f32]| ew::bin_rows(op, a, p.a_contig, b, p.b_contig, &walk, r0, n, o, act.min, act.max);
    match par_chunk(rows, n) {
        None => run(0, out),
        Some(c) => {
            nnrt_threads::par_chunks_mut(out, c * n, |i, o| {
                run(i * c, o);
            });
            true
        }
    }
}

/// Reference twin of [`binary`]: one output element at a time.
#[allow(clippy::too_many_arguments)]
pub fn binary_ref(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &mut [f32],
    out_shape: &[usize],
    act: Act,
) {
    broadcast_ref(a, a_shape, b, b_shape, out, out_shape, |x, y| {
        clamp(op_f32(op, x, y), act)
    });
}

/// Integer element types of the integer binary ops.
pub(crate) trait IntElem: Copy + Ord + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn wrapping_add(self, b: Self) -> Self;
    fn wrapping_sub(self, b: Self) -> Self;
    fn wrapping_mul(self, b: Self) -> Self;
    fn wrapping_div(self, b: Self) -> Self;
    fn wrapping_rem(self, b: Self) -> Self;
    fn wrapping_neg(self) -> Self;
    /// `self^e` for `e ≥ 0`, wrapping; the exponent's low bits drive square-and-multiply.
    fn wrapping_pow_u64(self, e: u64) -> Self;
    fn is_odd(self) -> bool;
    fn as_u64(self) -> u64;
}

macro_rules! int_elem {
    ($t:ty) => {
        impl IntElem for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn wrapping_add(self, b: Self) -> Self {
                <$t>::wrapping_add(self, b)
            }
            fn wrapping_sub(self, b: Self) -> Self {
                <$t>::wrapping_sub(self, b)
            }
            fn wrapping_mul(self, b: Self) -> Self {
                <$t>::wrapping_mul(self, b)
            }
            fn wrapping_div(self, b: Self) -> Self {
                <$t>::wrapping_div(self, b)
            }
            fn wrapping_rem(self, b: Self) -> Self {
                <$t>::wrapping_rem(self, b)
            }
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
            fn wrapping_pow_u64(self, mut e: u64) -> Self {
                let (mut base, mut acc) = (self, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            fn is_odd(self) -> bool {
                self & 1 == 1
            }
            fn as_u64(self) -> u64 {
                self as u64
            }
        }
    };
}
int_elem!(i32);
int_elem!(i64);

/// One integer element of `op`. Division by zero (Div, FloorDiv, FloorMod) yields 0: TFLite
/// fails the op instead, so callers that must match it check the divisor first.
#[inline(always)]
fn op_int<T: IntElem>(op: BinaryOp, a: T, b: T) -> T {
    match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div => {
            if b == T::ZERO {
                T::ZERO
            } else {
                a.wrapping_div(b)
            }
        }
        BinaryOp::Pow => {
            if b >= T::ZERO {
                a.wrapping_pow_u64(b.as_u64())
            } else if a == T::ONE {
                T::ONE
            } else if a == T::ONE.wrapping_neg() {
                if b.is_odd() {
                    a
                } else {
                    T::ONE
                }
            } else {
                T::ZERO
            }
        }
        BinaryOp::SquaredDifference => {
            let d = a.wrapping_sub(b);
            d.wrapping_mul(d)
        }
        BinaryOp::Maximum => a.max(b),
        BinaryOp::Minimum => a.min(b),
        BinaryOp::FloorDiv => {
            if b == T::ZERO {
                return T::ZERO;
            }
            let q = a.wrapping_div(b);
            let r = a.wrapping_rem(b);
            if r != T::ZERO && ((r < T::ZERO) != (b < T::ZERO)) {
                q.wrapping_sub(T::ONE)
            } else {
                q
            }
        }
        BinaryOp::FloorMod => {
            if b == T::ZERO {
                return T::ZERO;
            }
            let r = a.wrapping_rem(b);
            if r != T::ZERO && ((r < T::ZERO) != (b < T::ZERO)) {
                r.wrapping_add(b)
            } else {
                r
            }
        }
    }
}

fn binary_int<T: IntElem>(
    op: BinaryOp,
    a: &[T],
    a_shape: &[usize],
    b: &[T],
    b_shape: &[usize],
    out: &mut [T],
    out_shape: &[usize],
) {
    macro_rules! go {
        ($($op:ident),*) => {
            match op {
                $(BinaryOp::$op => broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| {
                    map_row(ra, rb, o, |x, y| op_int(BinaryOp::$op, x, y))
                }),)*
            }
        };
    }
    go!(
        Add,
        Sub,
        Mul,
        Div,
        Pow,
        SquaredDifference,
        Maximum,
        Minimum,
        FloorDiv,
        FloorMod
    );
}

/// [`binary`] over i32, without an activation: wrapping arithmetic, Div truncating toward zero,
/// FloorDiv/FloorMod flooring, and 0 for a zero divisor (TFLite reports an error instead).
///
/// # Panics
/// When the shapes do not broadcast to `out_shape` or a slice length does not match its shape.
pub fn binary_i32(
    op: BinaryOp,
    a: &[i32],
    a_shape: &[usize],
    b: &[i32],
    b_shape: &[usize],
    out: &mut [i32],
    out_shape: &[usize],
) {
    binary_int(op, a, a_shape, b, b_shape, out, out_shape)
}

/// [`binary_i32`] over i64. FloorDiv is exact integer flooring (TFLite goes through `double`,
/// which differs only beyond 2^53).
///
/// # Panics
/// When the shapes do not broadcast to `out_shape` or a slice length does not match its shape.
pub fn binary_i64(
    op: BinaryOp,
    a: &[i64],
    a_shape: &[usize],
    b: &[i64],
    b_shape: &[usize],
    out: &mut [i64],
    out_shape: &[usize],
) {
    binary_int(op, a, a_shape, b, b_shape, out, out_shape)
}

#[cfg(test)]
mod tests;
