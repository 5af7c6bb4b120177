//! SIMD routines for the element-wise kernel families: binary ops with a fused clamp, unary math
//! (exp, tanh, logistic, erfc, …), row reductions and accumulations, and f16 → f32 conversion.
//!
//! Each routine has a safe entry point taking slices; it asks [`isa`] (run-time detection, never
//! more than the CPU has) which path to take, so no caller can select an instruction set the CPU
//! lacks. It returns `false` (or `None`) when there is no vector path, and the caller in `kernels`
//! runs its portable loop instead. The vector routines themselves are in [`vector`], written once
//! over each instruction set's primitives.
//!
//! Comparison semantics follow TFLite's scalar code, which x86's `max`/`min` instructions
//! reproduce exactly: `max(a, b)` is `a > b ? a : b` (so a NaN in `a` yields `b`) and the clamp
//! `min(hi, max(lo, x))` lets a NaN `x` through, like `std::min(std::max(x, lo), hi)`.

use super::{isa, Isa};

/// Binary op codes, used as const generic parameters of the vector routines.
pub(crate) mod op {
    /// `a + b`.
    pub const ADD: u8 = 0;
    /// `a - b`.
    pub const SUB: u8 = 1;
    /// `a * b`.
    pub const MUL: u8 = 2;
    /// `a / b`.
    pub const DIV: u8 = 3;
    /// `a > b ? a : b`.
    pub const MAX: u8 = 4;
    /// `a < b ? a : b`.
    pub const MIN: u8 = 5;
    /// `(a - b)²`.
    pub const SQDIFF: u8 = 6;
}

/// Unary op codes, used as const generic parameters of the vector routines.
mod un {
    pub const CLAMP: u8 = 0;
    pub const HARDSWISH: u8 = 1;
    pub const LEAKY: u8 = 2;
    pub const ABS: u8 = 3;
    pub const NEG: u8 = 4;
    pub const SQUARE: u8 = 5;
    pub const EXP: u8 = 6;
    pub const TANH: u8 = 7;
    pub const LOGISTIC: u8 = 8;
    pub const ELU: u8 = 9;
    pub const GELU_TANH: u8 = 10;
    pub const GELU_ERF: u8 = 11;
    pub const SQRT: u8 = 12;
    pub const RSQRT: u8 = 13;
    pub const FLOOR: u8 = 14;
    pub const CEIL: u8 = 15;
    pub const ROUND: u8 = 16;
    pub const SIGN: u8 = 17;
}

/// A binary op with a vector implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VBin {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    SqDiff,
}

/// A unary op with a vector implementation (parameters inline).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum VUnary {
    /// `min(hi, max(lo, x))`, NaN passes through.
    Clamp(f32, f32),
    HardSwish,
    /// `x > 0 ? x : alpha * x`.
    LeakyRelu(f32),
    Abs,
    Neg,
    Square,
    Exp,
    Tanh,
    Logistic,
    /// `x < 0 ? expm1(x) : x`.
    Elu,
    /// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    GeluTanh,
    /// `0.5 x erfc(-x/√2)`.
    GeluErf,
    Sqrt,
    Rsqrt,
    Floor,
    Ceil,
    /// Round half to even.
    Round,
    Sign,
}

// Constants the vector routines share with the scalar code in `kernels`.
/// √(2/π), as TFLite computes it (`M_2_SQRTPI * M_SQRT1_2` rounded to float).
pub(crate) const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The Gelu tanh approximation's cubic coefficient.
pub(crate) const GELU_CUBIC: f32 = 0.044_715;
/// erf(z) ≈ z·P(z²)/Q(z²) for |z| ≤ [`GELU_ERF_Z`], highest degree first: a (5, 5) rational
/// fitted by weighted least squares to erf on [0, 4] (`tools/fit_gelu_erf.py`; 2e-8 absolute
/// there, 2 ulp + 1.9e-7·|x| for GELU evaluated in f32). XNNPACK's GELU (LiteRT's default float
/// path) is of this kind: 0.5·x·(1 + erf(x/√2)), accurate to a few ulp of |x|.
#[allow(clippy::excessive_precision, clippy::approx_constant)] // the fitted digits, as printed (the last is near 2/√π, fitted, not that constant)
pub(crate) const GELU_ERF_P: [f32; 6] = [1.974_833_1e-6, 2.880_417_2e-4, 4.003_646_8e-3, 5.346_748_2e-2, 1.962_489_6e-1, 1.128_379_0];
/// The denominator of [`GELU_ERF_P`]'s rational, highest degree first (its constant term is 1).
#[allow(clippy::excessive_precision)]
pub(crate) const GELU_ERF_Q: [f32; 6] = [3.748_091e-5, 1.216_360_6e-3, 1.544_442_3e-2, 1.164_764_2e-1, 5.072_522_8e-1, 1.0];
/// Where erf rounds to ±1 in f32 (erfc(4) = 1.5e-8 is below half an ulp of 1): the rational's
/// argument is clamped here.
pub(crate) const GELU_ERF_Z: f32 = 4.0;
#[cfg(target_arch = "x86_64")]
mod vector;
#[cfg(target_arch = "x86_64")]
use vector::{avx2, avx512};

/// Calls `$m::$f::<{ op code of $op }>($args)` for a [`VBin`].
macro_rules! with_bin {
    ($m:ident :: $f:ident, $op:expr, ($($arg:expr),*)) => {
        match $op {
            VBin::Add => $m::$f::<{ op::ADD }>($($arg),*),
            VBin::Sub => $m::$f::<{ op::SUB }>($($arg),*),
            VBin::Mul => $m::$f::<{ op::MUL }>($($arg),*),
            VBin::Div => $m::$f::<{ op::DIV }>($($arg),*),
            VBin::Max => $m::$f::<{ op::MAX }>($($arg),*),
            VBin::Min => $m::$f::<{ op::MIN }>($($arg),*),
            VBin::SqDiff => $m::$f::<{ op::SQDIFF }>($($arg),*),
        }
    };
}

/// Calls `$m::unary::<{ op code }>(x, out, n, p0, p1)` for a [`VUnary`].
macro_rules! with_unary {
    ($m:ident, $op:expr, $x:expr, $out:expr, $n:expr) => {{
        let (x, out, n) = ($x, $out, $n);
        match $op {
            VUnary::Clamp(lo, hi) => $m::unary::<{ un::CLAMP }>(x, out, n, lo, hi),
            VUnary::HardSwish => $m::unary::<{ un::HARDSWISH }>(x, out, n, 0.0, 0.0),
            VUnary::LeakyRelu(a) => $m::unary::<{ un::LEAKY }>(x, out, n, a, 0.0),
            VUnary::Abs => $m::unary::<{ un::ABS }>(x, out, n, 0.0, 0.0),
            VUnary::Neg => $m::unary::<{ un::NEG }>(x, out, n, 0.0, 0.0),
            VUnary::Square => $m::unary::<{ un::SQUARE }>(x, out, n, 0.0, 0.0),
            VUnary::Exp => $m::unary::<{ un::EXP }>(x, out, n, 0.0, 0.0),
            VUnary::Tanh => $m::unary::<{ un::TANH }>(x, out, n, 0.0, 0.0),
            VUnary::Logistic => $m::unary::<{ un::LOGISTIC }>(x, out, n, 0.0, 0.0),
            VUnary::Elu => $m::unary::<{ un::ELU }>(x, out, n, 0.0, 0.0),
            VUnary::GeluTanh => $m::unary::<{ un::GELU_TANH }>(x, out, n, 0.0, 0.0),
            VUnary::GeluErf => $m::unary::<{ un::GELU_ERF }>(x, out, n, 0.0, 0.0),
            VUnary::Sqrt => $m::unary::<{ un::SQRT }>(x, out, n, 0.0, 0.0),
            VUnary::Rsqrt => $m::unary::<{ un::RSQRT }>(x, out, n, 0.0, 0.0),
            VUnary::Floor => $m::unary::<{ un::FLOOR }>(x, out, n, 0.0, 0.0),
            VUnary::Ceil => $m::unary::<{ un::CEIL }>(x, out, n, 0.0, 0.0),
            VUnary::Round => $m::unary::<{ un::ROUND }>(x, out, n, 0.0, 0.0),
            VUnary::Sign => $m::unary::<{ un::SIGN }>(x, out, n, 0.0, 0.0),
        }
    }};
}

/// `out[i] = clamp(op(a[i], b[i]), lo, hi)`. Returns `false` (nothing written) without SIMD.
pub(crate) fn bin_vv(op: VBin, a: &[f32], b: &[f32], out: &mut [f32], lo: f32, hi: f32) -> bool {
    let n = out.len();
    assert!(
        a.len() == n && b.len() == n,
        "bin_vv: operand lengths differ"
    );
    let (a, b, o) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `isa` comes from `simd::isa()`, which reported AVX-512F+AVX2+FMA on this CPU;
        // the routine touches exactly n elements of a, b and out, which the assert above checked.
        Isa::Avx512 => unsafe { with_bin!(avx512::bin_vv, op, (a, b, o, n, lo, hi)) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; n elements of each slice, checked above.
        Isa::Avx2Fma => unsafe { with_bin!(avx2::bin_vv, op, (a, b, o, n, lo, hi)) },
        _ => return false,
    }
    true
}

/// Most outer dims a [`RowWalk`] holds.
pub(crate) const MAX_WALK: usize = 8;

/// The outer dims of a coalesced broadcast (`kernels::binary`'s plan): their sizes and each
/// operand's stride along them (0 where it is broadcast), in floats, outermost first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowWalk {
    k: usize,
    dims: [usize; MAX_WALK],
    sa: [usize; MAX_WALK],
    sb: [usize; MAX_WALK],
}

impl RowWalk {
    /// The walk over `dims` with strides `sa` (of `a`) and `sb` (of `b`), or `None` when the
    /// lengths differ or there are more than [`MAX_WALK`] dims.
    pub(crate) fn new(dims: &[usize], sa: &[usize], sb: &[usize]) -> Option<RowWalk> {
        let k = dims.len();
        if k > MAX_WALK || sa.len() != k || sb.len() != k {
            return None;
        }
        let mut w = RowWalk { k, dims: [1; MAX_WALK], sa: [0; MAX_WALK], sb: [0; MAX_WALK] };
        w.dims[..k].copy_from_slice(dims);
        w.sa[..k].copy_from_slice(sa);
        w.sb[..k].copy_from_slice(sb);
        Some(w)
    }

    /// How many rows the walk has.
    fn rows(&self) -> Option<usize> {
        self.dims[..self.k].iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// One past the furthest float a row of `n` (`n` when contiguous, else 1) reads at strides
    /// `s`.
    fn reach(&self, s: &[usize; MAX_WALK], row: usize) -> Option<usize> {
        (0..self.k).try_fold(row, |acc, d| self.dims[d].checked_sub(1)?.checked_mul(s[d])?.checked_add(acc))
    }
}

/// The offsets in `a` and `b` of row `r` of a walk over the outer `dims` (outermost first, strides
/// `sa` and `sb`), its mixed-radix index left in `idx`.
#[inline(always)]
pub(crate) fn row_start(r: usize, dims: &[usize], sa: &[usize], sb: &[usize], idx: &mut [usize]) -> (usize, usize) {
    let (mut oa, mut ob, mut rem) = (0, 0, r);
    for d in (0..dims.len()).rev() {
        idx[d] = rem % dims[d];
        rem /= dims[d];
        oa += idx[d] * sa[d];
        ob += idx[d] * sb[d];
    }
    (oa, ob)
}

/// Moves `idx` and the offsets `oa`, `ob` of [`row_start`]'s walk on to the next row.
#[inline(always)]
pub(crate) fn next_row(idx: &mut [usize], dims: &[usize], sa: &[usize], sb: &[usize], oa: &mut usize, ob: &mut usize) {
    for d in (0..dims.len()).rev() {
        idx[d] += 1;
        *oa += sa[d];
        *ob += sb[d];
        if idx[d] < dims[d] {
            break;
        }
        *oa -= sa[d] * dims[d];
        *ob -= sb[d] * dims[d];
        idx[d] = 0;
    }
}

/// Whether [`bin_rows`] has a vector path on this CPU.
pub(crate) fn has_bin_rows() -> bool {
    matches!(isa(), Isa::Avx512 | Isa::Avx2Fma)
}

/// Rows of a broadcast binary op in one vector routine: `out` holds `out.len() / n` rows of
/// `n`, from row `r0` of `walk`; row `r` reads `a` at `walk`'s offset of `r` (`n` values when
/// `a_row`, else one repeated) and likewise `b`, and writes `clamp(op(a_r[i], b_r[i]), lo,
/// hi)`, the arithmetic of [`bin_vv`] / [`bin_vs`]. Returns `false` (nothing written) without
/// SIMD.
///
/// # Panics
/// When `n` is 0, `out` is not whole rows, the rows run past `walk`, or a row reads past its
/// operand.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bin_rows(op: VBin, a: &[f32], a_row: bool, b: &[f32], b_row: bool, walk: &RowWalk, r0: usize, n: usize, out: &mut [f32], lo: f32, hi: f32) -> bool {
    assert!(n > 0 && out.len().is_multiple_of(n), "bin_rows: {} outputs are not rows of {n}", out.len());
    let rows = out.len() / n;
    assert!(walk.rows().and_then(|t| t.checked_sub(r0)).is_some_and(|left| rows <= left), "bin_rows: rows {r0}+{rows} past the walk");
    let fits = |len: usize, s: &[usize; MAX_WALK], row: bool| walk.reach(s, if row { n } else { 1 }).is_some_and(|r| r <= len);
    assert!(fits(a.len(), &walk.sa, a_row) && fits(b.len(), &walk.sb, b_row), "bin_rows: a row reads past an operand");
    if rows == 0 {
        return true;
    }
    let (a, b, o) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512F+AVX2+FMA detected; `walk.k <= MAX_WALK` (its constructor); rows
        // r0..r0+rows exist in the walk, every offset of the walk plus a row is inside its
        // operand (`reach`, asserted) and out holds rows·n floats (asserted).
        Isa::Avx512 => unsafe { with_bin!(avx512::bin_rows, op, (a, a_row, b, b_row, walk, r0, rows, n, o, lo, hi)) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; the same bounds as above.
        Isa::Avx2Fma => unsafe { with_bin!(avx2::bin_rows, op, (a, a_row, b, b_row, walk, r0, rows, n, o, lo, hi)) },
        _ => return false,
    }
    true
}

/// `acc[i] = op(x[i], acc[i])`: accumulation for pooling and reductions (op: Add, Mul, Max, Min,
/// with TFLite's `in > current ? in : current` for Max). Returns `false` without SIMD.
pub(crate) fn accumulate(op: VBin, acc: &mut [f32], x: &[f32]) -> bool {
    accumulate_clamped(op, acc, x, f32::NEG_INFINITY, f32::INFINITY)
}

/// `acc[i] = x[r][i] + acc[i]` for each row `r` of `x` in turn (`x` holds whole rows of
/// `acc.len()` values): [`accumulate`] with `VBin::Add` row by row, bit for bit, with each
/// vector of `acc` held in a register across the rows. Returns `false` without AVX-512 or AVX2.
pub(crate) fn accumulate_rows_add(acc: &mut [f32], x: &[f32]) -> bool {
    let n = acc.len();
    assert!(n == 0 || x.len() % n == 0, "accumulate_rows: not whole rows");
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; x holds x.len()/n rows of n values and acc n (checked).
        Isa::Avx512 if n > 0 => unsafe { avx512::accumulate_rows_add(acc.as_mut_ptr(), n, x.as_ptr(), x.len() / n) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 detected; as above.
        Isa::Avx2Fma if n > 0 => unsafe { avx2::accumulate_rows_add(acc.as_mut_ptr(), n, x.as_ptr(), x.len() / n) },
        _ => return false,
    }
    true
}

/// [`accumulate`] then a clamp to `[lo, hi]` (a fused activation), in the same pass.
pub(crate) fn accumulate_clamped(op: VBin, acc: &mut [f32], x: &[f32], lo: f32, hi: f32) -> bool {
    accumulate_in_place(op, acc, x, lo, hi, false)
}

/// In place, `acc` as the first operand: `acc[i] = clamp(op(acc[i], x[i]), lo, hi)` (the
/// operand order of [`bin_vv`] with `a = acc`). Returns `false` without SIMD.
pub(crate) fn accumulate_first_clamped(op: VBin, acc: &mut [f32], x: &[f32], lo: f32, hi: f32) -> bool {
    accumulate_in_place(op, acc, x, lo, hi, true)
}

/// `acc[i] = clamp(op(x[i], acc[i]), lo, hi)`, or with `acc_first` `op(acc[i], x[i])`.
fn accumulate_in_place(op: VBin, acc: &mut [f32], x: &[f32], lo: f32, hi: f32, acc_first: bool) -> bool {
    let n = acc.len();
    assert!(x.len() == n, "accumulate: lengths differ");
    let (xp, ap) = (x.as_ptr(), acc.as_mut_ptr());
    let (a, b) = if acc_first { (ap as *const f32, xp) } else { (xp, ap as *const f32) };
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; x and acc hold n elements (checked); the routine reads each
        // lane of acc before it writes that same lane, so passing acc as input and output is sound.
        Isa::Avx512 => unsafe { with_bin!(avx512::bin_vv, op, (a, b, ap, n, lo, hi)) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; same bounds and in-place argument as above.
        Isa::Avx2Fma => unsafe { with_bin!(avx2::bin_vv, op, (a, b, ap, n, lo, hi)) },
        _ => return false,
    }
    true
}

/// `out[i] = clamp(op(a[i], s))`, or `clamp(op(s, a[i]))` when `scalar_first`. Returns `false`
/// without SIMD.
pub(crate) fn bin_vs(
    op: VBin,
    a: &[f32],
    s: f32,
    scalar_first: bool,
    out: &mut [f32],
    lo: f32,
    hi: f32,
) -> bool {
    let n = out.len();
    assert!(a.len() == n, "bin_vs: lengths differ");
    let (a, o) = (a.as_ptr(), out.as_mut_ptr());
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; a and out hold n elements (checked).
        Isa::Avx512 => unsafe { with_bin!(avx512::bin_vs, op, (a, s, scalar_first, o, n, lo, hi)) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; a and out hold n elements (checked).
        Isa::Avx2Fma => unsafe { with_bin!(avx2::bin_vs, op, (a, s, scalar_first, o, n, lo, hi)) },
        _ => return false,
    }
    true
}

/// In place: `x[i] = clamp(op(x[i], s))`. Returns `false` without SIMD.
pub(crate) fn bin_vs_inplace(op: VBin, x: &mut [f32], s: f32, lo: f32, hi: f32) -> bool {
    let n = x.len();
    let p = x.as_mut_ptr();
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; x holds n elements; each lane is read before it is written.
        Isa::Avx512 => unsafe {
            with_bin!(
                avx512::bin_vs,
                op,
                (p as *const f32, s, false, p, n, lo, hi)
            )
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; same bounds and in-place argument as above.
        Isa::Avx2Fma => unsafe {
            with_bin!(avx2::bin_vs, op, (p as *const f32, s, false, p, n, lo, hi))
        },
        _ => return false,
    }
    true
}

/// `out[i] = op(x[i])`. Returns `false` without SIMD.
pub(crate) fn unary(op: VUnary, x: &[f32], out: &mut [f32]) -> bool {
    let n = out.len();
    assert!(x.len() == n, "unary: lengths differ");
    let (xp, o) = (x.as_ptr(), out.as_mut_ptr());
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; x and out hold n elements (checked).
        Isa::Avx512 => unsafe { with_unary!(avx512, op, xp, o, n) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; x and out hold n elements (checked).
        Isa::Avx2Fma => unsafe { with_unary!(avx2, op, xp, o, n) },
        _ => return false,
    }
    true
}

/// Folds a row with op (Add, Mul, Max, Min) from its identity (0, 1, lowest, max).
/// `None` without SIMD.
pub(crate) fn reduce_row(op: VBin, x: &[f32]) -> Option<f32> {
    let (p, n) = (x.as_ptr(), x.len());
    let r = match (isa(), op) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; the routine reads x[..n] only.
        (Isa::Avx512, VBin::Add | VBin::Mul | VBin::Max | VBin::Min) => unsafe {
            with_bin!(avx512::hreduce, op, (p, n))
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; the routine reads x[..n] only.
        (Isa::Avx2Fma, VBin::Add | VBin::Mul | VBin::Max | VBin::Min) => unsafe {
            with_bin!(avx2::hreduce, op, (p, n))
        },
        _ => return None,
    };
    Some(r)
}

/// Σ x². `None` without SIMD.
pub(crate) fn sum_sq(x: &[f32]) -> Option<f32> {
    let (p, n) = (x.as_ptr(), x.len());
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; reads x[..n] only.
        Isa::Avx512 => Some(unsafe { avx512::sum_sq(p, n) }),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; reads x[..n] only.
        Isa::Avx2Fma => Some(unsafe { avx2::sum_sq(p, n) }),
        _ => None,
    }
}

/// `out[i] = exp((x[i] - shift) * scale)`, returning the sum. `None` without SIMD.
pub(crate) fn exp_sum(x: &[f32], out: &mut [f32], shift: f32, scale: f32) -> Option<f32> {
    let n = out.len();
    assert!(x.len() == n, "exp_sum: lengths differ");
    let (xp, o) = (x.as_ptr(), out.as_mut_ptr());
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; x and out hold n elements (checked).
        Isa::Avx512 => Some(unsafe { avx512::exp_sum(xp, o, n, shift, scale) }),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2+FMA detected; x and out hold n elements (checked).
        Isa::Avx2Fma => Some(unsafe { avx2::exp_sum(xp, o, n, shift, scale) }),
        _ => None,
    }
}

/// Converts the longest prefix it can (a whole number of vectors) and returns its length; the
/// caller converts the rest. Returns 0 without a vector path.
pub(crate) fn f16_to_f32(src: &[half::f16], dst: &mut [f32]) -> usize {
    let n = src.len().min(dst.len());
    let bits: &[u16] = bytemuck::cast_slice(src);
    let (s, d) = (bits.as_ptr(), dst.as_mut_ptr());
    match isa() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            let m = n - n % 16;
            // SAFETY: AVX-512F detected; m ≤ n elements are read from src and written to dst.
            unsafe { avx512::f16_to_f32(s, d, m) };
            m
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma if std::arch::is_x86_feature_detected!("f16c") => {
            let m = n - n % 8;
            // SAFETY: AVX2+FMA and F16C detected; m ≤ n elements are read and written.
            unsafe { avx2::f16_to_f32(s, d, m) };
            m
        }
        _ => 0,
    }
}
