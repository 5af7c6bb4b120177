//! Reductions over axes (SUM, MEAN, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY,
//! REDUCE_ALL) for f32, i32, i64 and bool, and ARG_MAX / ARG_MIN.
//!
//! Dims are coalesced into alternating kept / reduced runs; the input is then walked once in
//! memory order, one contiguous row of the innermost run at a time. When that run is kept (NHWC
//! MEAN over H, W → `[N, C]`) a row is accumulated into a row of the output, vectorized over C;
//! when it is reduced, a row is folded to one value. The output's data order is the same whether
//! or not the caller keeps the reduced dims.
#![forbid(unsafe_code)]


use super::binary::{par_chunk, PAR_MIN};
use super::small::Small;
use crate::simd::elementwise::{self as ew, VBin};

/// A reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Σ (wrapping for integers).
    Sum,
    /// Σ / count, accumulated in the element type for f32 and divided once (0 for an empty
    /// reduction, as TFLite leaves it); integers accumulate exactly and truncate toward zero.
    Mean,
    /// Maximum, starting from the type's lowest value (so an all -inf f32 row gives `f32::MIN`,
    /// and NaN inputs are skipped, as in TFLite's `in > current ? in : current`).
    Max,
    /// Minimum, starting from the type's largest value.
    Min,
    /// Π (wrapping for integers).
    Prod,
    /// Logical or of `x != 0`, as 1 or 0.
    Any,
    /// Logical and of `x != 0`, as 1 or 0.
    All,
}

/// The coalesced dims of a reduction: runs of kept or reduced dims, size-1 dims dropped.
#[derive(Clone, Debug)]
struct Layout {
    dims: Small<usize>,
    reduced: Small<bool>,
}

impl Layout {
    fn new(in_shape: &[usize], axes: &[usize]) -> Layout {
        assert!(
            axes.windows(2).all(|w| w[0] < w[1]) && axes.iter().all(|&a| a < in_shape.len()),
            "reduce: axes {axes:?} must be sorted, unique and below rank {}",
            in_shape.len()
        );
        let mut l = Layout {
            dims: Small::new(),
            reduced: Small::new(),
        };
        for (i, &d) in in_shape.iter().enumerate() {
            let red = axes.binary_search(&i).is_ok();
            if d == 1 {
                continue;
            }
            match (l.dims.last_mut(), l.reduced.last()) {
                (Some(last), Some(&r)) if r == red => *last *= d,
                _ => {
                    l.dims.push(d);
                    l.reduced.push(red);
                }
            }
        }
        if l.dims.is_empty() {
            l.dims.push(1);
            l.reduced.push(false);
        }
        l
    }

    fn in_len(&self) -> usize {
        self.dims.iter().product()
    }

    fn out_len(&self) -> usize {
        self.dims
            .iter()
            .zip(self.reduced.iter())
            .filter(|(_, &r)| !r)
            .map(|(d, _)| d)
            .product()
    }
}

/// Folds a block of whole rows, in order, into one output row (as `kept` row by row would).
type KeptRows<'a, A, I> = Option<&'a (dyn Fn(&mut [A], &[I]) + Sync)>;

/// Walks `input` in memory order: for each row of the innermost run, `kept(out_row, row)` when
/// the run is kept, `out[o] = red(out[o], row)` when it is reduced. `out` starts at the identity.
/// With `kept_rows`, the rows of a reduced dim just outside a kept innermost run (a spatial
/// mean's pixels) go to it as one block: per row, a call had cost more than its 16 values.
fn walk<I: Copy, A: Copy>(
    input: &[I],
    l: &Layout,
    out: &mut [A],
    kept: &impl Fn(&mut [A], &[I]),
    red: &impl Fn(A, &[I]) -> A,
    kept_rows: KeptRows<'_, A, I>,
) {
    let k = l.dims.len();
    let n = l.dims[k - 1];
    let last_red = l.reduced[k - 1];
    // Dims [.., reduced R, kept n] with `kept_rows`: the walk's unit is a block of R rows,
    // folded into one output row, and the R dim is not walked.
    let rows = kept_rows.filter(|_| !last_red && k >= 2 && l.reduced[k - 2]);
    let (walked, unit) = if rows.is_some() { (k - 2, n * l.dims[k - 2]) } else { (k - 1, n) };
    // Output strides of the walked dims: 0 along reduced ones.
    let mut ostride = Small::filled(k, 0);
    let mut acc = if last_red { 1 } else { n };
    for d in (0..walked).rev() {
        if !l.reduced[d] {
            ostride[d] = acc;
            acc *= l.dims[d];
        }
    }
    let mut idx = Small::filled(k, 0);
    let mut off = 0;
    for u in input.chunks_exact(unit.max(1)) {
        match rows {
            Some(rows) => rows(&mut out[off..off + n], u),
            None if last_red => out[off] = red(out[off], u),
            None => kept(&mut out[off..off + n], u),
        }
        for d in (0..walked).rev() {
            idx[d] += 1;
            off += ostride[d];
            if idx[d] < l.dims[d] {
                break;
            }
            off -= ostride[d] * l.dims[d];
            idx[d] = 0;
        }
    }
}

/// [`walk`], split across the kernel pool when large: along the outermost dim when it is kept
/// (disjoint outputs), else into partial outputs merged in order with `kept`.
fn walk_par<T: Copy + Send + Sync>(
    input: &[T],
    l: &Layout,
    out: &mut [T],
    init: T,
    kept: &(impl Fn(&mut [T], &[T]) + Sync),
    red: &(impl Fn(T, &[T]) -> T + Sync),
    kept_rows: KeptRows<'_, T, T>,
) {
    out.fill(init);
    let d0 = l.dims[0];
    let in_step = input.len() / d0.max(1);
    let chunk = if input.len() >= PAR_MIN && l.dims.len() > 1 {
        par_chunk(d0, in_step)
    } else {
        None
    };
    // Partial outputs (one per thread: each is merged on the calling thread, from the core
    // that wrote it) only pay off when they are small next to the input they summarize.
    let threads = nnrt_threads::kernel_threads();
    let chunk = chunk.map(|c| if l.reduced[0] { d0.div_ceil(threads).max(c) } else { c });
    let chunk = chunk.filter(|&c| c < d0 && (!l.reduced[0] || out.len() * d0.div_ceil(c) <= input.len() / 2));
    let Some(c) = chunk else {
        return walk(input, l, out, kept, red, kept_rows);
    };
    let sub = |g: usize| {
        let mut s = l.clone();
        s.dims[0] = g;
        s
    };
    if !l.reduced[0] {
        let out_step = out.len() / d0;
        nnrt_threads::par_chunks_mut(out, c * out_step, |t, o| {
            let i = &input[t * c * in_step..(t * c * in_step + (o.len() / out_step) * in_step).min(input.len())];
            walk(i, &sub(i.len() / in_step), o, kept, red, kept_rows)
        });
    } else {
        let parts: Vec<Vec<T>> = nnrt_threads::par_map(input.len().div_ceil(c * in_step), |t| {
            let i = &input[t * c * in_step..((t + 1) * c * in_step).min(input.len())];
            let mut part = vec![init; out.len()];
            walk(i, &sub(i.len() / in_step), &mut part, kept, red, kept_rows);
            part
        });
        for p in &parts {
            kept(out, p.as_slice());
        }
    }
}

/// `kept` and `red` closures of one f32 op.
struct F32Op(ReduceOp);

impl F32Op {
    fn kept(&self, acc: &mut [f32], x: &[f32]) {
        let v = match self.0 {
            ReduceOp::Sum | ReduceOp::Mean => Some(VBin::Add),
            ReduceOp::Prod => Some(VBin::Mul),
            ReduceOp::Max => Some(VBin::Max),
            ReduceOp::Min => Some(VBin::Min),
            ReduceOp::Any | ReduceOp::All => None,
        };
        if v.is_some_and(|v| ew::accumulate(v, acc, x)) {
            return;
        }
        for (a, &x) in acc.iter_mut().zip(x) {
            *a = f32_step(self.0, *a, x);
        }
    }

    /// [`F32Op::kept`] over each row of `x` (whole rows of `acc.len()` values) in order; sums
    /// with the accumulator held in registers across the rows.
    fn kept_rows(&self, acc: &mut [f32], x: &[f32]) {
        if matches!(self.0, ReduceOp::Sum | ReduceOp::Mean) && ew::accumulate_rows_add(acc, x) {
            return;
        }
        x.chunks_exact(acc.len().max(1)).for_each(|row| self.kept(acc, row));
    }

    fn red(&self, cur: f32, row: &[f32]) -> f32 {
        let v = match self.0 {
            ReduceOp::Sum | ReduceOp::Mean => Some(VBin::Add),
            ReduceOp::Prod => Some(VBin::Mul),
            ReduceOp::Max => Some(VBin::Max),
            ReduceOp::Min => Some(VBin::Min),
            ReduceOp::Any | ReduceOp::All => None,
        };
        match v.and_then(|v| ew::reduce_row(v, row)) {
            Some(r) => f32_step(self.0, cur, r),
            None => row.iter().fold(cur, |a, &x| f32_step(self.0, a, x)),
        }
    }
}

/// TFLite's reducer `current ∘ in` for one f32 element.
#[inline(always)]
fn f32_step(op: ReduceOp, cur: f32, x: f32) -> f32 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => cur + x,
        ReduceOp::Prod => cur * x,
        ReduceOp::Max => {
            if x > cur {
                x
            } else {
                cur
            }
        }
        ReduceOp::Min => {
            if x < cur {
                x
            } else {
                cur
            }
        }
        ReduceOp::Any => ((cur != 0.0) || (x != 0.0)) as u8 as f32,
        ReduceOp::All => ((cur != 0.0) && (x != 0.0)) as u8 as f32,
    }
}

fn f32_init(op: ReduceOp) -> f32 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Any => 0.0,
        ReduceOp::Prod | ReduceOp::All => 1.0,
        ReduceOp::Max => f32::MIN,
        ReduceOp::Min => f32::MAX,
    }
}

/// The number of elements folded into each output: the product of the reduced dims.
fn count(in_shape: &[usize], axes: &[usize]) -> usize {
    axes.iter().map(|&a| in_shape[a]).product()
}

fn check_lens(input: usize, in_shape: &[usize], out: usize, axes: &[usize]) {
    assert_eq!(
        input,
        in_shape.iter().product::<usize>(),
        "reduce: input length vs shape"
    );
    let want: usize = in_shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(i))
        .map(|(_, d)| d)
        .product();
    assert_eq!(out, want, "reduce: output length vs reduced shape");
}

/// Reduces f32 `input` (`in_shape`) over `axes` (sorted, unique, in range) into `out`, which
/// holds the shape with those dims removed (or kept as 1: the data order is the same).
/// Sums are accumulated in a different order than TFLite's element-by-element loop (row sums
/// in vector lanes), so they can differ by a few ulp of the magnitudes summed.
///
/// # Panics
/// When the axes are not sorted and unique, or a slice length does not match its shape.
pub fn reduce(op: ReduceOp, input: &[f32], in_shape: &[usize], axes: &[usize], out: &mut [f32]) {
    let l = Layout::new(in_shape, axes);
    check_lens(input.len(), in_shape, out.len(), axes);
    let f = F32Op(op);
    let kept = |a: &mut [f32], x: &[f32]| f.kept(a, x);
    let kept_rows = |a: &mut [f32], x: &[f32]| f.kept_rows(a, x);
    walk_par(input, &l, out, f32_init(op), &kept, &|c, r| f.red(c, r), Some(&kept_rows));
    if op == ReduceOp::Mean {
        let n = count(in_shape, axes);
        if n == 0 {
            out.fill(0.0);
        } else if !ew::bin_vs_inplace(VBin::Div, out, n as f32, f32::NEG_INFINITY, f32::INFINITY) {
            out.iter_mut().for_each(|v| *v /= n as f32);
        }
    }
    debug_assert_eq!(l.in_len(), input.len());
    debug_assert_eq!(l.out_len(), out.len());
}

/// Reference twin of [`reduce`]: TFLite's loop, folding each input element into its output in
/// memory order.
///
/// # Panics
/// As [`reduce`].
pub fn reduce_ref(
    op: ReduceOp,
    input: &[f32],
    in_shape: &[usize],
    axes: &[usize],
    out: &mut [f32],
) {
    check_lens(input.len(), in_shape, out.len(), axes);
    out.fill(f32_init(op));
    reduce_ref_walk(input, in_shape, axes, out, |a, x| f32_step(op, a, x));
    if op == ReduceOp::Mean {
        let n = count(in_shape, axes);
        out.iter_mut()
            .for_each(|v| *v = if n == 0 { 0.0 } else { *v / n as f32 });
    }
}

/// ExecuTorch's float reductions bit for bit: [`reduce_ref`]'s results (each output folds its
/// inputs one at a time in memory order, as ExecuTorch's portable `sum` and `mean` kernels add),
/// except a SUM over one innermost dim, which its optimized kernel adds in eight lanes
/// ([`sum_lanes8`]); at vector speed where the
/// reduced dims, size-1 dims aside, are one block: the input is `[outer, reduced, inner]` and the
/// `inner` outputs of each outer index fold side by side, each in its own order still. (A
/// MobileNetV2 program's global average pool, 7×7×1280 in NHWC, took 0.7 ms element by element.)
/// Other axis sets take [`reduce_ref`].
///
/// # Panics
/// As [`reduce`].
pub fn reduce_in_order(op: ReduceOp, input: &[f32], in_shape: &[usize], axes: &[usize], out: &mut [f32]) {
    check_lens(input.len(), in_shape, out.len(), axes);
    let Some((red, inner)) = one_block(in_shape, axes).filter(|_| !input.is_empty()) else {
        return reduce_ref(op, input, in_shape, axes, out);
    };
    fn fold(input: &[f32], red: usize, inner: usize, out: &mut [f32], init: f32, f: impl Fn(f32, f32) -> f32 + Copy) {
        for (o, acc) in out.chunks_mut(inner).enumerate() {
            acc.fill(init);
            for x in input[o * red * inner..(o + 1) * red * inner].chunks_exact(inner) {
                acc.iter_mut().zip(x).for_each(|(a, &v)| *a = f(*a, v));
            }
        }
    }
    if op == ReduceOp::Sum && axes.len() == 1 && inner == 1 {
        for (o, row) in out.iter_mut().zip(input.chunks_exact(red)) {
            *o = sum_lanes8(row);
        }
        return;
    }
    let init = f32_init(op);
    match op {
        ReduceOp::Sum | ReduceOp::Mean => fold(input, red, inner, out, init, |a, x| a + x),
        ReduceOp::Prod => fold(input, red, inner, out, init, |a, x| a * x),
        _ => fold(input, red, inner, out, init, |a, x| f32_step(op, a, x)),
    }
    if op == ReduceOp::Mean {
        let n = count(in_shape, axes) as f32;
        out.iter_mut().for_each(|v| *v /= n);
    }
}

/// ExecuTorch's optimized SUM over one innermost dim (`opt_sum_dim_out`): eight lanes, each
/// adding its elements in order, the lanes then added in lane order, then the tail elements in
/// order. (Its MEAN stays the portable element-by-element loop; both checked bit for bit
/// against ExecuTorch 1.5.1's runtime on 64 rows of 1003.)
fn sum_lanes8(row: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let blocks = row.chunks_exact(8);
    let tail = blocks.remainder();
    for b in blocks {
        acc.iter_mut().zip(b).for_each(|(a, &v)| *a += v);
    }
    let s = acc[1..].iter().fold(acc[0], |s, &a| s + a);
    tail.iter().fold(s, |s, &v| s + v)
}

/// `(reduced, inner)` element counts when the reduced dims of `in_shape`, size-1 dims aside,
/// are consecutive: the input is then `[outer, reduced, inner]`.
fn one_block(in_shape: &[usize], axes: &[usize]) -> Option<(usize, usize)> {
    let big = || in_shape.iter().enumerate().filter(|&(_, &d)| d != 1).map(|(i, &d)| (d, axes.contains(&i)));
    // Size-1 dims aside: kept dims, the reduced block, then kept dims only.
    let block = || big().skip_while(|b| !b.1);
    let red = block().take_while(|b| b.1).map(|b| b.0).product();
    let after = block().skip_while(|b| b.1);
    if after.clone().any(|b| b.1) {
        return None;
    }
    let inner = after.map(|b| b.0).product();
    Some((red, inner))
}

/// Folds every input element into the output element it reduces to.
fn reduce_ref_walk<I: Copy, A: Copy>(
    input: &[I],
    in_shape: &[usize],
    axes: &[usize],
    out: &mut [A],
    f: impl Fn(A, I) -> A,
) {
    let rank = in_shape.len();
    let mut idx = vec![0; rank];
    for &x in input {
        let o = (0..rank)
            .filter(|d| !axes.contains(d))
            .fold(0, |acc, d| acc * in_shape[d] + idx[d]);
        out[o] = f(out[o], x);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < in_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Integer element types of the integer reductions.
trait IntReduce: Copy + Ord + Send + Sync + 'static {
    const LOWEST: Self;
    const HIGHEST: Self;
    fn zero() -> Self;
    fn one() -> Self;
    fn wadd(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn to_i128(self) -> i128;
    fn from_i128(v: i128) -> Self;
}

macro_rules! int_reduce {
    ($t:ty) => {
        impl IntReduce for $t {
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn wadd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn wmul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn to_i128(self) -> i128 {
                self as i128
            }
            fn from_i128(v: i128) -> Self {
                v as $t
            }
        }
    };
}
int_reduce!(i32);
int_reduce!(i64);

#[inline(always)]
fn int_step<T: IntReduce>(op: ReduceOp, cur: T, x: T) -> T {
    let b = |v: bool| if v { T::one() } else { T::zero() };
    match op {
        ReduceOp::Sum | ReduceOp::Mean => cur.wadd(x),
        ReduceOp::Prod => cur.wmul(x),
        ReduceOp::Max => cur.max(x),
        ReduceOp::Min => cur.min(x),
        ReduceOp::Any => b(cur != T::zero() || x != T::zero()),
        ReduceOp::All => b(cur != T::zero() && x != T::zero()),
    }
}

fn int_init<T: IntReduce>(op: ReduceOp) -> T {
    match op {
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Any => T::zero(),
        ReduceOp::Prod | ReduceOp::All => T::one(),
        ReduceOp::Max => T::LOWEST,
        ReduceOp::Min => T::HIGHEST,
    }
}

fn reduce_int<T: IntReduce>(
    op: ReduceOp,
    input: &[T],
    in_shape: &[usize],
    axes: &[usize],
    out: &mut [T],
) {
    let l = Layout::new(in_shape, axes);
    check_lens(input.len(), in_shape, out.len(), axes);
    if op == ReduceOp::Mean {
        // Exact sums in i128, then truncating division (TFLite divides its wide sum likewise).
        let mut sums = vec![0i128; out.len()];
        let kept =
            |a: &mut [i128], x: &[T]| a.iter_mut().zip(x).for_each(|(a, x)| *a += x.to_i128());
        let red = |c: i128, r: &[T]| r.iter().fold(c, |c, x| c + x.to_i128());
        walk(input, &l, &mut sums, &kept, &red, None);
        let n = count(in_shape, axes) as i128;
        for (o, s) in out.iter_mut().zip(sums) {
            *o = T::from_i128(if n == 0 { 0 } else { s / n });
        }
        return;
    }
    macro_rules! go {
        ($($op:ident),*) => {
            match op {
                $(ReduceOp::$op => {
                    let kept = |a: &mut [T], x: &[T]| {
                        a.iter_mut().zip(x).for_each(|(a, &x)| *a = int_step(ReduceOp::$op, *a, x))
                    };
                    let red = |c: T, r: &[T]| r.iter().fold(c, |c, &x| int_step(ReduceOp::$op, c, x));
                    walk_par(input, &l, out, int_init(op), &kept, &red, None);
                })*
                ReduceOp::Mean => unreachable!("handled above"),
            }
        };
    }
    go!(Sum, Max, Min, Prod, Any, All);
}

/// [`reduce`] over i32: Sum/Prod wrap, Mean sums exactly and truncates toward zero, Any/All
/// give 1 or 0.
///
/// # Panics
/// As [`reduce`].
pub fn reduce_i32(
    op: ReduceOp,
    input: &[i32],
    in_shape: &[usize],
    axes: &[usize],
    out: &mut [i32],
) {
    reduce_int(op, input, in_shape, axes, out)
}

/// [`reduce_i32`] over i64.
///
/// # Panics
/// As [`reduce`].
pub fn reduce_i64(
    op: ReduceOp,
    input: &[i64],
    in_shape: &[usize],
    axes: &[usize],
    out: &mut [i64],
) {
    reduce_int(op, input, in_shape, axes, out)
}

/// REDUCE_ANY / REDUCE_ALL over bools stored as u8 (nonzero = true), writing 0 or 1.
/// `Any`, `Max` and `Sum` are a logical or; `All`, `Min`, `Prod` and `Mean` a logical and.
///
/// # Panics
/// As [`reduce`].
pub fn reduce_bool(op: ReduceOp, input: &[u8], in_shape: &[usize], axes: &[usize], out: &mut [u8]) {
    let l = Layout::new(in_shape, axes);
    check_lens(input.len(), in_shape, out.len(), axes);
    let any = matches!(op, ReduceOp::Any | ReduceOp::Max | ReduceOp::Sum);
    if any {
        let kept =
            |a: &mut [u8], x: &[u8]| a.iter_mut().zip(x).for_each(|(a, &x)| *a |= (x != 0) as u8);
        let red = |c: u8, r: &[u8]| c | r.iter().any(|&x| x != 0) as u8;
        walk_par(input, &l, out, 0, &kept, &red, None);
    } else {
        let kept =
            |a: &mut [u8], x: &[u8]| a.iter_mut().zip(x).for_each(|(a, &x)| *a &= (x != 0) as u8);
        let red = |c: u8, r: &[u8]| c & r.iter().all(|&x| x != 0) as u8;
        walk_par(input, &l, out, 1, &kept, &red, None);
    }
}

/// Index types that ARG_MAX / ARG_MIN can write.
pub trait ArgIndex: Copy + Send + Sync {
    /// The index `i` along the reduced axis in this type (TFLite's output is i32 or i64).
    fn from_index(i: usize) -> Self;
}

impl ArgIndex for i32 {
    fn from_index(i: usize) -> Self {
        i as i32
    }
}

impl ArgIndex for i64 {
    fn from_index(i: usize) -> Self {
        i as i64
    }
}

/// Whether `v` is a NaN: the only value unequal to itself.
#[allow(clippy::eq_op)]
fn is_nan<T: PartialOrd>(v: T) -> bool {
    v != v
}

fn arg_blocks<T: PartialOrd + Copy, I: ArgIndex>(
    input: &[T],
    n: usize,
    inner: usize,
    out: &mut [I],
    better: impl Fn(T, T) -> bool,
) {
    let mut best: Vec<T> = Vec::with_capacity(inner);
    for (block, o) in input
        .chunks_exact(n * inner)
        .zip(out.chunks_exact_mut(inner))
    {
        o.fill(I::from_index(0));
        best.clear();
        best.extend_from_slice(&block[..inner]);
        for i in 1..n {
            let row = &block[i * inner..(i + 1) * inner];
            for ((b, o), &v) in best.iter_mut().zip(o.iter_mut()).zip(row) {
                if better(v, *b) {
                    *b = v;
                    *o = I::from_index(i);
                }
            }
        }
    }
}

/// ARG_MAX (`is_max`) / ARG_MIN over `axis` of `input` (`in_shape`): `out` has the shape with
/// that dim removed and receives the index of the first maximum (minimum) along it, TFLite's
/// tie rule (a strict `>` / `<` comparison, so a NaN never replaces a number and a leading NaN
/// stays). An empty axis writes 0.
///
/// # Panics
/// When `axis` is out of range or a slice length does not match its shape.
pub fn arg_max_min<T: PartialOrd + Copy + Sync, I: ArgIndex>(
    input: &[T],
    in_shape: &[usize],
    axis: usize,
    is_max: bool,
    out: &mut [I],
) {
    assert!(
        axis < in_shape.len(),
        "arg_max_min: axis {axis} out of range for {in_shape:?}"
    );
    assert_eq!(
        input.len(),
        in_shape.iter().product::<usize>(),
        "arg_max_min: input length vs shape"
    );
    let n = in_shape[axis];
    let inner: usize = in_shape[axis + 1..].iter().product();
    let outer: usize = in_shape[..axis].iter().product();
    assert_eq!(
        out.len(),
        outer * inner,
        "arg_max_min: output length vs shape"
    );
    if n == 0 || inner == 0 {
        out.fill(I::from_index(0));
        return;
    }
    let run = |input: &[T], out: &mut [I]| {
        // A NaN beats any number and loses to an earlier NaN: the first NaN's index, as
        // PyTorch and TOSA's PROPAGATE mode have it.
        if is_max {
            arg_blocks(input, n, inner, out, |v, b| v > b || (is_nan(v) && !is_nan(b)))
        } else {
            arg_blocks(input, n, inner, out, |v, b| v < b || (is_nan(v) && !is_nan(b)))
        }
    };
    match par_chunk(outer, n * inner) {
        None => run(input, out),
        Some(c) => nnrt_threads::par_chunks_mut(out, c * inner, |t, o| run(&input[t * c * n * inner..(t * c * n * inner + o.len() * n).min(input.len())], o)),
    }
}

/// Reference twin of [`arg_max_min`]: one output at a time, scanning the axis.
///
/// # Panics
/// As [`arg_max_min`].
pub fn arg_max_min_ref<T: PartialOrd + Copy, I: ArgIndex>(
    input: &[T],
    in_shape: &[usize],
    axis: usize,
    is_max: bool,
    out: &mut [I],
) {
    let n = in_shape[axis];
    let inner: usize = in_shape[axis + 1..].iter().product();
    let outer: usize = in_shape[..axis].iter().product();
    for o in 0..outer {
        for j in 0..inner {
            let mut best = 0;
            for i in 1..n {
                let (v, b) = (
                    input[(o * n + i) * inner + j],
                    input[(o * n + best) * inner + j],
                );
                let nan_first = is_nan(v) && !is_nan(b);
                if (is_max && v > b) || (!is_max && v < b) || nan_first {
                    best = i;
                }
            }
            out[o * inner + j] = I::from_index(best);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OPS: [ReduceOp; 7] = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
        ReduceOp::Any,
        ReduceOp::All,
    ];

    fn case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
        prop::collection::vec(1usize..6, 1..=5)
            .prop_flat_map(|shape| {
                let r = shape.len();
                (Just(shape), prop::collection::vec(any::<bool>(), r))
            })
            .prop_map(|(shape, mask)| {
                let axes = (0..shape.len()).filter(|&i| mask[i]).collect();
                (shape, axes)
            })
    }

    /// Sums and means over a reduced dim just outside the kept innermost one (a spatial mean,
    /// whose rows go to the SIMD block fold) equal the row-by-row fold `acc = x + acc` bit for
    /// bit, for channel counts around the 8-, 16-, 32- and 64-lane steps, several kept outer dims and
    /// values over eight decades (so any other order rounds differently).
    #[test]
    fn spatial_sums_fold_rows_in_order() {
        for n in [2usize, 5, 8, 16, 17, 31, 32, 33, 64, 65, 130] {
            for (shape, axes) in [(vec![1, 7, 9, n], vec![1, 2]), (vec![3, 11, n], vec![1]), (vec![2, 3, 5, n], vec![0, 2])] {
                let input: Vec<f32> = crate::testdata::spread_values(shape.iter().product(), n as u64).collect();
                for op in [ReduceOp::Sum, ReduceOp::Mean] {
                    let mut want = vec![0.0f32; input.len() / shape.iter().enumerate().filter(|(i, _)| axes.contains(i)).map(|(_, d)| d).product::<usize>()];
                    // Memory order: each input row folds into its output row as x + acc.
                    let (d, rank) = (&shape, shape.len());
                    for (r, row) in input.chunks_exact(n).enumerate() {
                        let mut idx = vec![0; rank - 1];
                        let mut rem = r;
                        for k in (0..rank - 1).rev() {
                            idx[k] = rem % d[k];
                            rem /= d[k];
                        }
                        let o = (0..rank - 1).filter(|k| !axes.contains(k)).fold(0, |o, k| o * d[k] + idx[k]);
                        for (a, &x) in want[o * n..(o + 1) * n].iter_mut().zip(row) {
                            *a = x + *a;
                        }
                    }
                    if op == ReduceOp::Mean {
                        let count = (input.len() / want.len()) as f32;
                        want.iter_mut().for_each(|v| *v /= count);
                    }
                    let mut got = vec![f32::NAN; want.len()];
                    reduce(op, &input, &shape, &axes, &mut got);
                    assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{op:?} {shape:?} over {axes:?}");
                }
            }
        }
    }

    /// Rank 11 with every other dim reduced coalesces into 11 runs: more than `small::INLINE`, so
    /// the layout and the walk's counters spill to the heap, with the same sums.
    #[test]
    fn many_coalesced_dims_spill_to_the_heap() {
        let shape = [2, 3, 2, 2, 3, 2, 2, 3, 2, 2, 3];
        let axes: Vec<usize> = (0..shape.len()).filter(|i| i % 2 == 1).collect();
        let l = Layout::new(&shape, &axes);
        assert_eq!(&l.dims[..], &shape[..]);
        assert_eq!(l.reduced.len(), shape.len());
        let n: usize = shape.iter().product();
        let input: Vec<i32> = (0..n as i32).map(|v| v.wrapping_mul(7919) % 1000).collect();
        let mut out = vec![0; out_len(&shape, &axes)];
        reduce_i32(ReduceOp::Sum, &input, &shape, &axes, &mut out);
        assert_eq!(out, int_ref(ReduceOp::Sum, &input, &shape, &axes));
    }

    fn int_ref<T: IntReduce>(op: ReduceOp, input: &[T], shape: &[usize], axes: &[usize]) -> Vec<T> {
        let n = out_len(shape, axes);
        if op == ReduceOp::Mean {
            let mut s = vec![0i128; n];
            reduce_ref_walk(input, shape, axes, &mut s, |a, x| a + x.to_i128());
            let c = count(shape, axes) as i128;
            return s.iter().map(|&v| T::from_i128(v / c)).collect();
        }
        let mut o = vec![int_init::<T>(op); n];
        reduce_ref_walk(input, shape, axes, &mut o, |a, x| int_step(op, a, x));
        o
    }

    fn out_len(shape: &[usize], axes: &[usize]) -> usize {
        shape
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, d)| d)
            .product()
    }

    fn data(n: usize, seed: u32) -> Vec<f32> {
        // Values near 1 keep products finite; some exact zeros exercise Any/All.
        (0..n)
            .map(|i| {
                let h = (i as u32).wrapping_mul(2_654_435_761) ^ seed;
                if h.is_multiple_of(7) {
                    0.0
                } else {
                    0.75 + (h % 1000) as f32 / 2000.0
                }
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        // Max/Min/Any/All are exact. Sum/Mean/Prod fold in another order (vector lanes); for n
        // positive terms each order is within (n-1)·u of the exact result (u = 2^-24), so the
        // two differ by at most 2n·u relative.
        #[test]
        fn f32_matches_ref((shape, axes) in case(), seed in any::<u32>(), op_i in 0usize..7) {
            let op = OPS[op_i];
            let input = data(shape.iter().product(), seed);
            let n = out_len(&shape, &axes);
            let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
            reduce(op, &input, &shape, &axes, &mut o1);
            reduce_ref(op, &input, &shape, &axes, &mut o2);
            let tol = match op {
                ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod => 2.0 * count(&shape, &axes) as f32 * f32::EPSILON / 2.0,
                _ => 0.0,
            };
            for (a, b) in o1.iter().zip(&o2) {
                prop_assert!((a - b).abs() <= tol * b.abs(), "{op:?} {shape:?} {axes:?}: {a} vs {b}");
            }
        }

        // The in-order fold is the reference's, bit for bit, whatever the axes; a SUM over one
        // innermost dim is ExecuTorch's eight-lane sum of each row.
        #[test]
        fn in_order_is_the_ref_bit_for_bit((shape, axes) in case(), seed in any::<u32>(), op_i in 0usize..5, neg in any::<bool>()) {
            let op = OPS[op_i];
            let input: Vec<f32> = data(shape.iter().product(), seed).iter().enumerate().map(|(i, v)| if neg && i % 3 == 0 { -v * 7.5 } else { *v }).collect();
            let n = out_len(&shape, &axes);
            let (mut o1, mut o2) = (vec![0.0f32; n], vec![0.0f32; n]);
            reduce_in_order(op, &input, &shape, &axes, &mut o1);
            let innermost = axes.len() == 1 && shape[axes[0] + 1..].iter().product::<usize>() == 1;
            if op == ReduceOp::Sum && innermost && !input.is_empty() {
                let row = shape[axes[0]];
                o2.iter_mut().zip(input.chunks_exact(row)).for_each(|(o, r)| *o = sum_lanes8(r));
            } else {
                reduce_ref(op, &input, &shape, &axes, &mut o2);
            }
            prop_assert_eq!(o1.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), o2.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{:?} {:?} {:?}", op, shape, axes);
        }

        // Integer reductions are exact.
        #[test]
        fn int_matches_ref((shape, axes) in case(), seed in any::<u32>(), op_i in 0usize..7) {
            let op = OPS[op_i];
            let input: Vec<i64> = data(shape.iter().product(), seed).iter().map(|v| (v * 40.0) as i64 - 35).collect();
            let n = out_len(&shape, &axes);
            let mut o1 = vec![0i64; n];
            reduce_i64(op, &input, &shape, &axes, &mut o1);
            prop_assert_eq!(o1, int_ref(op, &input, &shape, &axes));
            let i32s: Vec<i32> = input.iter().map(|&v| v as i32).collect();
            let mut o2 = vec![0i32; n];
            reduce_i32(op, &i32s, &shape, &axes, &mut o2);
            prop_assert_eq!(o2, int_ref(op, &i32s, &shape, &axes));
        }

        #[test]
        fn bool_and_arg_match_ref((shape, axes) in case(), seed in any::<u32>(), axis in 0usize..5) {
            let input: Vec<u8> = data(shape.iter().product(), seed).iter().map(|&v| (v != 0.0) as u8).collect();
            let n = out_len(&shape, &axes);
            for (op, f) in [(ReduceOp::Any, (|a: u8, x: u8| a | (x != 0) as u8) as fn(u8, u8) -> u8), (ReduceOp::All, |a, x| a & (x != 0) as u8)] {
                let (mut o1, mut o2) = (vec![0u8; n], vec![(op == ReduceOp::All) as u8; n]);
                reduce_bool(op, &input, &shape, &axes, &mut o1);
                reduce_ref_walk(&input, &shape, &axes, &mut o2, f);
                prop_assert_eq!(o1, o2);
            }
            let axis = axis % shape.len();
            // Few distinct values, so ties are common and the first-index rule is exercised.
            let vals: Vec<f32> = data(shape.iter().product(), seed).iter().map(|v| (v * 4.0).floor()).collect();
            let m = shape.iter().product::<usize>() / shape[axis];
            for is_max in [true, false] {
                let (mut a1, mut a2) = (vec![0i64; m], vec![0i64; m]);
                arg_max_min(&vals, &shape, axis, is_max, &mut a1);
                arg_max_min_ref(&vals, &shape, axis, is_max, &mut a2);
                prop_assert_eq!(a1, a2);
            }
        }
    }

    #[test]
    fn nhwc_mean_and_threads() {
        // Mean over H, W of [2, 56, 56, 64] and of MobileNet's last [1, 7, 7, 1280] (reduced
        // outermost run: one partial output per thread), on one thread and on a pool of two.
        let pool = nnrt_threads::KernelPool::new(2).unwrap();
        for (shape, axes, threads) in [[2, 56, 56, 64], [1, 7, 7, 1280]]
            .into_iter()
            .flat_map(|s| [vec![1, 2], vec![0, 1, 2], vec![3], vec![0, 3]].into_iter().map(move |a| (s, a)))
            .flat_map(|(s, a)| [1, 2].map(|t| (s, a.clone(), t)))
        {
            let input = data(shape.iter().product(), 3);
            let n = out_len(&shape, &axes);
            let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
            for op in [ReduceOp::Mean, ReduceOp::Max] {
                match threads {
                    1 => reduce(op, &input, &shape, &axes, &mut o1),
                    _ => pool.install(|| reduce(op, &input, &shape, &axes, &mut o1)),
                }
                reduce_ref(op, &input, &shape, &axes, &mut o2);
                for (a, b) in o1.iter().zip(&o2) {
                    // 6272 terms near 1 summed in f32: the reference's sequential sum itself
                    // drifts by ~1e-5 relative; ours (pairwise-ish) is closer to exact.
                    assert!(
                        (a - b).abs() <= 2e-5 * b.abs(),
                        "{op:?} {shape:?} {axes:?} {threads} threads: {a} vs {b}"
                    );
                }
            }
        }
        let mut o = [0.0];
        reduce(
            ReduceOp::Max,
            &[f32::NEG_INFINITY, f32::NAN],
            &[2],
            &[0],
            &mut o,
        );
        assert_eq!(o[0], f32::MIN);
        let mut idx = [0i32; 1];
        arg_max_min(&[1.0f32, 3.0, 3.0, 2.0], &[4], 0, true, &mut idx);
        assert_eq!(idx[0], 1);
    }

    #[test]
    fn executorch_sum_adds_eight_lanes_then_the_tail() {
        // 19 values: lanes 0..8 get x[i] + x[i + 8], then the lanes in order, then x[16..19].
        // 2^24 + 1 rounds back to 2^24: the order shows in the result.
        let mut x = vec![1.0f32; 19];
        x[0] = 16_777_216.0;
        let lanes: Vec<f32> = (0..8).map(|i| x[i] + x[i + 8]).collect();
        let want = [x[16], x[17], x[18]].iter().fold(lanes[1..].iter().fold(lanes[0], |s, &a| s + a), |s, &v| s + v);
        assert_eq!(sum_lanes8(&x).to_bits(), want.to_bits());
        // In order every 1 after 2^24 is lost; in lanes, eight of them add up first.
        assert_eq!(sum_lanes8(&x), 16_777_216.0 + 18.0 - 2.0);
        let mut o = [0.0f32];
        reduce_in_order(ReduceOp::Sum, &x, &[1, 19], &[1], &mut o);
        assert_eq!(o[0], sum_lanes8(&x));
    }
}
