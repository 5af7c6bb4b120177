//! SIMD routines for the element-wise kernel families: binary ops with a fused clamp, unary math
//! (exp, tanh, logistic, erfc, …), row reductions and accumulations, and f16 → f32 conversion.
//!
//! Each routine has a safe entry point taking slices; it asks [`isa`] (run-time detection, never
//! more than the CPU has) which path to take, so no caller can select an instruction set the CPU
//! lacks. It returns `false` (or `None`) when there is no vector path, and the caller in `kernels`
//! runs its portable loop instead. One macro (`simd_kernels!`) writes every routine once over a small set of vector
//! primitives (`load`, `add`, `select`, …) that the `avx512` and `avx2` modules each define; the
//! primitives and routines all carry the same `#[target_feature]`, so they inline into one another.
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

// Constants shared by both instruction sets.
const LOG2E: f32 = std::f32::consts::LOG2_E;
// ln 2 split so that `n * LN2_HI` is exact for |n| < 2^11 (Cody–Waite reduction).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// √(2/π), as TFLite computes it (`M_2_SQRTPI * M_SQRT1_2` rounded to float).
pub(crate) const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The Gelu tanh approximation's cubic coefficient.
pub(crate) const GELU_CUBIC: f32 = 0.044_715;
/// erf(z) ≈ z·P(z²)/Q(z²) for |z| ≤ [`GELU_ERF_Z`], highest degree first: a (5, 5) rational
/// fitted by weighted least squares to erf on [0, 4] (`tools/fit_gelu_erf.py`; 2e-8 absolute
/// there, 2 ulp + 1.9e-7·|x| for GELU evaluated in f32). XNNPACK's GELU (LiteRT's default float
/// path) is of this kind: 0.5·x·(1 + erf(x/√2)), accurate to a few ulp of |x|.
#[allow(clippy::excessive_precision)] // the fitted digits, as printed
pub(crate) const GELU_ERF_P: [f32; 6] = [1.974_833_1e-6, 2.880_417_2e-4, 4.003_646_8e-3, 5.346_748_2e-2, 1.962_489_6e-1, 1.128_379_0];
/// The denominator of [`GELU_ERF_P`]'s rational, highest degree first (its constant term is 1).
#[allow(clippy::excessive_precision)]
pub(crate) const GELU_ERF_Q: [f32; 6] = [3.748_091e-5, 1.216_360_6e-3, 1.544_442_3e-2, 1.164_764_2e-1, 5.072_522_8e-1, 1.0];
/// Where erf rounds to ±1 in f32 (erfc(4) = 1.5e-8 is below half an ulp of 1): the rational's
/// argument is clamped here.
pub(crate) const GELU_ERF_Z: f32 = 4.0;
// Cephes tanhf: tanh(x) ≈ x + x·s·Q(s), s = x², for |x| < 0.625; highest degree first.
#[allow(clippy::excessive_precision)]
const TANH_Q: [f32; 5] = [
    -5.704_988_7e-3,
    2.063_908_9e-2,
    -5.373_971_6e-2,
    1.333_144_2e-1,
    -3.333_328_2e-1,
];
const TANH_SMALL: f32 = 0.625;

/// Writes each vector routine once over the primitives of the instruction set in scope.
/// `$feat` is the `target_feature` list every generated function carries.
macro_rules! simd_kernels {
    ($feat:literal) => {
        use super::{
            op, un, GELU_CUBIC, GELU_ERF_P, GELU_ERF_Q, GELU_ERF_Z, LN2_HI, LN2_LO, LOG2E, SQRT_2_OVER_PI, TANH_Q, TANH_SMALL,
        };

        // Rounding immediates shared by `_mm256_round_ps` and `_mm512_roundscale_ps`:
        // nearest-even / toward -inf / toward +inf, exceptions suppressed.
        const NEAREST: i32 = 0x08;
        const FLOOR: i32 = 0x09;
        const CEIL: i32 = 0x0A;

        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn clampv(x: V, lo: V, hi: V) -> V {
            min(hi, max(lo, x))
        }

        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn binop<const OP: u8>(a: V, b: V) -> V {
            match OP {
                op::ADD => add(a, b),
                op::SUB => sub(a, b),
                op::MUL => mul(a, b),
                op::DIV => div(a, b),
                op::MAX => max(a, b),
                op::MIN => min(a, b),
                _ => {
                    let d = sub(a, b);
                    mul(d, d)
                }
            }
        }

        /// The identity of a reduction op (TFLite's init values: lowest for max, max for min).
        #[inline]
        fn identity<const OP: u8>() -> f32 {
            match OP {
                op::MUL => 1.0,
                op::MAX => f32::MIN,
                op::MIN => f32::MAX,
                _ => 0.0,
            }
        }

        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn horizontal<const OP: u8>(v: V) -> f32 {
            match OP {
                op::MUL => hmul(v),
                op::MAX => hmax(v),
                op::MIN => hmin(v),
                _ => hsum(v),
            }
        }

        /// exp(x), within ~2 ulp; overflows to +inf above ~88.72, underflows through the
        /// subnormals to 0, NaN stays NaN.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn exp_v(x: V) -> V {
            // Clamp so that range reduction never sees ±inf; max(lo, NaN) keeps the NaN.
            let x = min(splat(89.0), max(splat(-104.0), x));
            let n = round::<NEAREST>(mul(x, splat(LOG2E)));
            let r = fma(n, splat(-LN2_HI), x);
            let r = fma(n, splat(-LN2_LO), r);
            // Taylor series of e^r to degree 7: truncation below 8e-9 relative for |r| ≤ 0.35.
            let mut p = splat(1.0 / 5040.0);
            p = fma(p, r, splat(1.0 / 720.0));
            p = fma(p, r, splat(1.0 / 120.0));
            p = fma(p, r, splat(1.0 / 24.0));
            p = fma(p, r, splat(1.0 / 6.0));
            p = fma(p, r, splat(0.5));
            p = fma(p, r, splat(1.0));
            p = fma(p, r, splat(1.0));
            pow2n(p, n)
        }

        /// expm1(x) for the Elu branch x < 0 (callers select x itself for x ≥ 0).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn expm1_neg_v(x: V) -> V {
            // |x| < 0.5: Taylor series to degree 8 (no cancellation); else exp(x) - 1.
            let mut p = splat(1.0 / 40320.0);
            p = fma(p, x, splat(1.0 / 5040.0));
            p = fma(p, x, splat(1.0 / 720.0));
            p = fma(p, x, splat(1.0 / 120.0));
            p = fma(p, x, splat(1.0 / 24.0));
            p = fma(p, x, splat(1.0 / 6.0));
            p = fma(p, x, splat(0.5));
            let small = fma(mul(p, x), x, x);
            let large = sub(exp_v(x), splat(1.0));
            select(gt(x, splat(-0.5)), small, large)
        }

        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn tanh_v(x: V) -> V {
            let ax = abs(x);
            let s = mul(x, x);
            let mut q = splat(TANH_Q[0]);
            for &c in &TANH_Q[1..] {
                q = fma(q, s, splat(c));
            }
            let small = fma(mul(q, s), x, x);
            // 1 - 2/(e^{2|x|} + 1): e overflows to inf for large |x|, giving exactly 1.
            let e = exp_v(add(ax, ax));
            let large = sub(splat(1.0), div(splat(2.0), add(e, splat(1.0))));
            select(lt(ax, splat(TANH_SMALL)), small, copysign(large, x))
        }

        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn logistic_v(x: V) -> V {
            // exp(-x) = inf for x < -88.7 gives 1/inf = 0, never NaN.
            div(splat(1.0), add(splat(1.0), exp_v(neg(x))))
        }

        /// Exact GELU as 0.5·x·(1 + erf(x/√2)), erf from the rational [`GELU_ERF_P`] /
        /// [`GELU_ERF_Q`]: within 2 ulp + 1.9e-7·|x| of the true value (the abs error in units
        /// of x: where erf ≈ -1 the sum cancels, as in XNNPACK's and ExecuTorch's GELU).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn gelu_erf_v(x: V) -> V {
            // The clamps keep NaN (max(lo, NaN) is NaN) and ±inf out of the rational.
            let z = clampv(mul(x, splat(std::f32::consts::FRAC_1_SQRT_2)), splat(-GELU_ERF_Z), splat(GELU_ERF_Z));
            let s = mul(z, z);
            let mut p = splat(GELU_ERF_P[0]);
            for &c in &GELU_ERF_P[1..] {
                p = fma(p, s, splat(c));
            }
            let mut q = splat(GELU_ERF_Q[0]);
            for &c in &GELU_ERF_Q[1..] {
                q = fma(q, s, splat(c));
            }
            let erf = clampv(mul(mul(z, p), recip(q)), splat(-1.0), splat(1.0));
            let hx = mul(splat(0.5), x);
            fma(hx, erf, hx)
        }

        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn unop<const OP: u8>(x: V, p0: V, p1: V) -> V {
            let zero = splat(0.0);
            match OP {
                un::CLAMP => clampv(x, p0, p1),
                // x * min(max(x/6 + 1/2, 0), 1) with x/6 + 1/2 one fused multiply-add, as
                // XNNPACK computes it (LiteRT's default float path).
                un::HARDSWISH => mul(x, min(max(fma(x, splat(1.0 / 6.0), splat(0.5)), zero), splat(1.0))),
                un::LEAKY => select(gt(x, zero), x, mul(x, p0)),
                un::ABS => abs(x),
                un::NEG => neg(x),
                un::SQUARE => mul(x, x),
                un::EXP => exp_v(x),
                un::TANH => tanh_v(x),
                un::LOGISTIC => logistic_v(x),
                un::ELU => select(lt(x, zero), expm1_neg_v(x), x),
                un::GELU_TANH => {
                    let cube = mul(mul(mul(splat(GELU_CUBIC), x), x), x);
                    let t = tanh_v(mul(splat(SQRT_2_OVER_PI), add(x, cube)));
                    mul(mul(splat(0.5), x), add(splat(1.0), t))
                }
                un::GELU_ERF => gelu_erf_v(x),
                un::SQRT => sqrt(x),
                un::RSQRT => div(splat(1.0), sqrt(x)),
                un::FLOOR => round::<FLOOR>(x),
                un::CEIL => round::<CEIL>(x),
                un::ROUND => round::<NEAREST>(x),
                _ => select(
                    gt(x, zero),
                    splat(1.0),
                    select(lt(x, zero), splat(-1.0), zero),
                ),
            }
        }

        /// `out[i] = clamp(op(a[i], b[i]))` for `i < n`. `out` may equal `a` or `b`.
        ///
        /// # Safety
        /// The CPU has `$feat`; `a`, `b` are readable and `out` writable for `n` floats.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn bin_vv<const OP: u8>(
            a: *const f32,
            b: *const f32,
            out: *mut f32,
            n: usize,
            lo: f32,
            hi: f32,
        ) {
            let (vlo, vhi) = (splat(lo), splat(hi));
            let mut i = 0;
            while i + W <= n {
                let r = binop::<OP>(load(a.add(i)), load(b.add(i)));
                store(out.add(i), clampv(r, vlo, vhi));
                i += W;
            }
            if i < n {
                let one = splat(1.0);
                let r = binop::<OP>(
                    load_tail(a.add(i), n - i, one),
                    load_tail(b.add(i), n - i, one),
                );
                store_tail(out.add(i), n - i, clampv(r, vlo, vhi));
            }
        }

        /// `out[i] = clamp(op(a[i], s))` (or `op(s, a[i])` when `scalar_first`). `out` may equal `a`.
        ///
        /// # Safety
        /// The CPU has `$feat`; `a` is readable and `out` writable for `n` floats.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn bin_vs<const OP: u8>(
            a: *const f32,
            s: f32,
            scalar_first: bool,
            out: *mut f32,
            n: usize,
            lo: f32,
            hi: f32,
        ) {
            let (vlo, vhi, vs) = (splat(lo), splat(hi), splat(s));
            let mut i = 0;
            while i + W <= n {
                let x = load(a.add(i));
                let r = if scalar_first {
                    binop::<OP>(vs, x)
                } else {
                    binop::<OP>(x, vs)
                };
                store(out.add(i), clampv(r, vlo, vhi));
                i += W;
            }
            if i < n {
                let x = load_tail(a.add(i), n - i, splat(1.0));
                let r = if scalar_first {
                    binop::<OP>(vs, x)
                } else {
                    binop::<OP>(x, vs)
                };
                store_tail(out.add(i), n - i, clampv(r, vlo, vhi));
            }
        }

        /// `rows` rows of `n` outputs of a broadcast binary op, from row `r0` of `walk`: row
        /// `r`'s operands start at `walk`'s offsets of `r` in `a` and `b`, each a contiguous row
        /// (`a_row` / `b_row`) or one value repeated along it; `out[r·n + i] =
        /// clamp(op(a_r[i], b_r[i]))`, as [`bin_vv`] / [`bin_vs`] compute each row.
        ///
        /// # Safety
        /// The CPU has `$feat`; `walk.k <= MAX_WALK`; `r0 + rows` rows are within `walk`; every
        /// row's operands are readable (`n` floats where contiguous, else one) and `out` is
        /// writable for `rows · n` floats.
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn bin_rows<const OP: u8>(
            a: *const f32,
            a_row: bool,
            b: *const f32,
            b_row: bool,
            walk: &super::RowWalk,
            r0: usize,
            rows: usize,
            n: usize,
            out: *mut f32,
            lo: f32,
            hi: f32,
        ) {
            let (vlo, vhi, one) = (splat(lo), splat(hi), splat(1.0));
            let k = walk.k;
            let (dims, wa, wb) = (&walk.dims[..k], &walk.sa[..k], &walk.sb[..k]);
            let mut idx = [0usize; super::MAX_WALK];
            let (mut oa, mut ob) = super::row_start(r0, dims, wa, wb, &mut idx[..k]);
            let mut o = out;
            for _ in 0..rows {
                let (pa, pb) = (a.add(oa), b.add(ob));
                let (sa, sb) = (splat(*pa), splat(*pb));
                let mut i = 0;
                while i + W <= n {
                    let x = if a_row { load(pa.add(i)) } else { sa };
                    let y = if b_row { load(pb.add(i)) } else { sb };
                    store(o.add(i), clampv(binop::<OP>(x, y), vlo, vhi));
                    i += W;
                }
                if i < n {
                    let x = if a_row { load_tail(pa.add(i), n - i, one) } else { sa };
                    let y = if b_row { load_tail(pb.add(i), n - i, one) } else { sb };
                    store_tail(o.add(i), n - i, clampv(binop::<OP>(x, y), vlo, vhi));
                }
                o = o.add(n);
                super::next_row(&mut idx[..k], dims, wa, wb, &mut oa, &mut ob);
            }
        }

        /// `out[i] = unary_op(x[i])`. `out` may equal `x`.
        ///
        /// # Safety
        /// The CPU has `$feat`; `x` is readable and `out` writable for `n` floats.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn unary<const OP: u8>(
            x: *const f32,
            out: *mut f32,
            n: usize,
            p0: f32,
            p1: f32,
        ) {
            let (v0, v1) = (splat(p0), splat(p1));
            let mut i = 0;
            while i + W <= n {
                store(out.add(i), unop::<OP>(load(x.add(i)), v0, v1));
                i += W;
            }
            if i < n {
                let v = load_tail(x.add(i), n - i, splat(0.0));
                store_tail(out.add(i), n - i, unop::<OP>(v, v0, v1));
            }
        }

        /// Folds `x[..n]` with op (ADD, MUL, MAX, MIN) starting from its identity.
        ///
        /// # Safety
        /// The CPU has `$feat`; `x` is readable for `n` floats.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn hreduce<const OP: u8>(x: *const f32, n: usize) -> f32 {
            let init = splat(identity::<OP>());
            let (mut a0, mut a1, mut a2, mut a3) = (init, init, init, init);
            let mut i = 0;
            while i + 4 * W <= n {
                a0 = binop::<OP>(load(x.add(i)), a0);
                a1 = binop::<OP>(load(x.add(i + W)), a1);
                a2 = binop::<OP>(load(x.add(i + 2 * W)), a2);
                a3 = binop::<OP>(load(x.add(i + 3 * W)), a3);
                i += 4 * W;
            }
            while i + W <= n {
                a0 = binop::<OP>(load(x.add(i)), a0);
                i += W;
            }
            if i < n {
                a1 = binop::<OP>(load_tail(x.add(i), n - i, init), a1);
            }
            horizontal::<OP>(binop::<OP>(binop::<OP>(a0, a1), binop::<OP>(a2, a3)))
        }

        /// Σ x[i]² over `x[..n]`.
        ///
        /// # Safety
        /// The CPU has `$feat`; `x` is readable for `n` floats.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn sum_sq(x: *const f32, n: usize) -> f32 {
            let zero = splat(0.0);
            let (mut a0, mut a1) = (zero, zero);
            let mut i = 0;
            while i + 2 * W <= n {
                let (u, v) = (load(x.add(i)), load(x.add(i + W)));
                a0 = fma(u, u, a0);
                a1 = fma(v, v, a1);
                i += 2 * W;
            }
            while i + W <= n {
                let u = load(x.add(i));
                a0 = fma(u, u, a0);
                i += W;
            }
            if i < n {
                let u = load_tail(x.add(i), n - i, zero);
                a1 = fma(u, u, a1);
            }
            hsum(add(a0, a1))
        }

        /// `out[i] = exp((x[i] - shift) * scale)`; returns Σ out[i].
        ///
        /// # Safety
        /// The CPU has `$feat`; `x` is readable and `out` writable for `n` floats.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn exp_sum(
            x: *const f32,
            out: *mut f32,
            n: usize,
            shift: f32,
            scale: f32,
        ) -> f32 {
            let (vs, vk) = (splat(shift), splat(scale));
            let mut acc = splat(0.0);
            let mut i = 0;
            while i + W <= n {
                let e = exp_v(mul(sub(load(x.add(i)), vs), vk));
                store(out.add(i), e);
                acc = add(acc, e);
                i += W;
            }
            if i < n {
                let e = exp_v(mul(sub(load_tail(x.add(i), n - i, vs), vs), vk));
                store_tail(out.add(i), n - i, e);
                acc = add(acc, zero_tail(e, n - i));
            }
            hsum(acc)
        }
    };
}

/// Declares vector primitives: each becomes an `#[inline]` `unsafe fn` carrying `$feat`, so it
/// inlines into the routines of `simd_kernels!`. Callers uphold that the CPU has `$feat` and that
/// pointer arguments are valid for the lanes touched.
macro_rules! prims {
    ($feat:literal; $($(#[$m:meta])* fn $name:ident $(<const $c:ident: $ct:ty>)? ($($a:ident: $t:ty),*) $(-> $r:ty)? $body:block)*) => {
        $(
            $(#[$m])*
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn $name $(<const $c: $ct>)? ($($a: $t),*) $(-> $r)? $body
        )*
    };
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use core::arch::x86_64::*;

    type V = __m512;
    type M = __mmask16;
    const W: usize = 16;

    prims! { "avx512f,avx2,fma";
        fn splat(x: f32) -> V { _mm512_set1_ps(x) }
        fn load(p: *const f32) -> V { _mm512_loadu_ps(p) }
        fn store(p: *mut f32, v: V) { _mm512_storeu_ps(p, v) }
        fn tail_mask(n: usize) -> M { ((1u32 << n) - 1) as M }
        /// Loads the first `n < W` lanes (masked, so nothing past them is touched); others = `fill`.
        fn load_tail(p: *const f32, n: usize, fill: V) -> V { _mm512_mask_loadu_ps(fill, tail_mask(n), p) }
        fn store_tail(p: *mut f32, n: usize, v: V) { _mm512_mask_storeu_ps(p, tail_mask(n), v) }
        fn zero_tail(v: V, n: usize) -> V { _mm512_maskz_mov_ps(tail_mask(n), v) }
        fn add(a: V, b: V) -> V { _mm512_add_ps(a, b) }
        fn sub(a: V, b: V) -> V { _mm512_sub_ps(a, b) }
        fn mul(a: V, b: V) -> V { _mm512_mul_ps(a, b) }
        fn div(a: V, b: V) -> V { _mm512_div_ps(a, b) }
        /// 1/a within ~1 ulp: the 14-bit estimate and one Newton step (a 512-bit division
        /// occupies the divider for 8+ cycles).
        fn recip(a: V) -> V {
            let r = _mm512_rcp14_ps(a);
            _mm512_fmadd_ps(r, _mm512_fnmadd_ps(a, r, _mm512_set1_ps(1.0)), r)
        }
        fn max(a: V, b: V) -> V { _mm512_max_ps(a, b) }
        fn min(a: V, b: V) -> V { _mm512_min_ps(a, b) }
        fn fma(a: V, b: V, c: V) -> V { _mm512_fmadd_ps(a, b, c) }
        fn sqrt(a: V) -> V { _mm512_sqrt_ps(a) }
        fn abs(a: V) -> V { _mm512_abs_ps(a) }
        fn neg(a: V) -> V { _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(i32::MIN))) }
        fn copysign(mag: V, sign: V) -> V {
            let m = _mm512_and_si512(_mm512_castps_si512(mag), _mm512_set1_epi32(i32::MAX));
            let s = _mm512_and_si512(_mm512_castps_si512(sign), _mm512_set1_epi32(i32::MIN));
            _mm512_castsi512_ps(_mm512_or_si512(m, s))
        }
        fn round<const IMM: i32>(a: V) -> V { _mm512_roundscale_ps::<IMM>(a) }
        fn lt(a: V, b: V) -> M { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b) }
        fn gt(a: V, b: V) -> M { _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b) }
        /// `m ? t : f` per lane.
        fn select(m: M, t: V, f: V) -> V { _mm512_mask_blend_ps(m, f, t) }
        /// `p · 2^n` for integer-valued `n`, with correct overflow and gradual underflow.
        fn pow2n(p: V, n: V) -> V { _mm512_scalef_ps(p, n) }
        fn hsum(v: V) -> f32 { _mm512_reduce_add_ps(v) }
        fn hmul(v: V) -> f32 { _mm512_reduce_mul_ps(v) }
        fn hmax(v: V) -> f32 { _mm512_reduce_max_ps(v) }
        fn hmin(v: V) -> f32 { _mm512_reduce_min_ps(v) }
    }

    simd_kernels!("avx512f,avx2,fma");

    /// `acc[i] = x[r·n + i] + acc[i]` for each row `r < rows` in turn and `i < n`, 64 lanes of
    /// `acc` (four independent chains) held in registers across the rows.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `acc` is writable for `n` values and `x` readable for `rows · n`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn accumulate_rows_add(acc: *mut f32, n: usize, x: *const f32, rows: usize) {
        let mut i = 0;
        while i < n {
            let m: [M; 4] = std::array::from_fn(|v| super::super::lane_mask16(n, i / W + v));
            // SAFETY: lanes under each mask are values i + v·W.. < n of acc (contract).
            let mut a: [V; 4] = std::array::from_fn(|v| unsafe { _mm512_maskz_loadu_ps(m[v], acc.add(i + v * W)) });
            for r in 0..rows {
                for v in 0..4 {
                    // SAFETY: as above, in row r < rows of x; `x + acc` is bin_vv's Add operand order.
                    a[v] = _mm512_add_ps(unsafe { _mm512_maskz_loadu_ps(m[v], x.add(r * n + i + v * W)) }, a[v]);
                }
            }
            for v in 0..4 {
                // SAFETY: as above.
                unsafe { _mm512_mask_storeu_ps(acc.add(i + v * W), m[v], a[v]) };
            }
            i += 4 * W;
        }
    }

    /// Converts `n` halves (a multiple of 16) to floats.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `src` is readable and `dst` writable for `n` elements.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn f16_to_f32(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        while i + W <= n {
            let h = _mm256_loadu_si256(src.add(i) as *const __m256i);
            _mm512_storeu_ps(dst.add(i), _mm512_cvtph_ps(h));
            i += W;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    type V = __m256;
    type M = __m256;
    const W: usize = 8;

    prims! { "avx2,fma";
        fn splat(x: f32) -> V { _mm256_set1_ps(x) }
        fn load(p: *const f32) -> V { _mm256_loadu_ps(p) }
        fn store(p: *mut f32, v: V) { _mm256_storeu_ps(p, v) }
        fn tail_mask(n: usize) -> __m256i { _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)) }
        /// Loads the first `n < W` lanes (masked, so nothing past them is touched); others = `fill`.
        fn load_tail(p: *const f32, n: usize, fill: V) -> V {
            let m = tail_mask(n);
            _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m))
        }
        fn store_tail(p: *mut f32, n: usize, v: V) { _mm256_maskstore_ps(p, tail_mask(n), v) }
        fn zero_tail(v: V, n: usize) -> V { _mm256_and_ps(v, _mm256_castsi256_ps(tail_mask(n))) }
        fn add(a: V, b: V) -> V { _mm256_add_ps(a, b) }
        fn sub(a: V, b: V) -> V { _mm256_sub_ps(a, b) }
        fn mul(a: V, b: V) -> V { _mm256_mul_ps(a, b) }
        fn div(a: V, b: V) -> V { _mm256_div_ps(a, b) }
        /// 1/a (AVX2's 12-bit estimate would need two Newton steps: the division it is).
        fn recip(a: V) -> V { _mm256_div_ps(_mm256_set1_ps(1.0), a) }
        fn max(a: V, b: V) -> V { _mm256_max_ps(a, b) }
        fn min(a: V, b: V) -> V { _mm256_min_ps(a, b) }
        fn fma(a: V, b: V, c: V) -> V { _mm256_fmadd_ps(a, b, c) }
        fn sqrt(a: V) -> V { _mm256_sqrt_ps(a) }
        fn abs(a: V) -> V { _mm256_andnot_ps(_mm256_set1_ps(-0.0), a) }
        fn neg(a: V) -> V { _mm256_xor_ps(a, _mm256_set1_ps(-0.0)) }
        fn copysign(mag: V, sign: V) -> V {
            let s = _mm256_set1_ps(-0.0);
            _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sign))
        }
        fn round<const IMM: i32>(a: V) -> V { _mm256_round_ps::<IMM>(a) }
        fn lt(a: V, b: V) -> M { _mm256_cmp_ps::<_CMP_LT_OQ>(a, b) }
        fn gt(a: V, b: V) -> M { _mm256_cmp_ps::<_CMP_GT_OQ>(a, b) }
        /// `m ? t : f` per lane.
        fn select(m: M, t: V, f: V) -> V { _mm256_blendv_ps(f, t, m) }
        /// `p · 2^n` for integer-valued `n` in [-150, 128]: two factors 2^(n/2) keep each exponent
        /// normal, so overflow gives inf and small results go through the subnormals.
        fn pow2n(p: V, n: V) -> V {
            let ni = _mm256_cvtps_epi32(n);
            let n1 = _mm256_srai_epi32::<1>(ni);
            let n2 = _mm256_sub_epi32(ni, n1);
            let bias = _mm256_set1_epi32(127);
            let s1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n1, bias)));
            let s2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n2, bias)));
            _mm256_mul_ps(_mm256_mul_ps(p, s1), s2)
        }
        fn hsum(v: V) -> f32 {
            let lo = _mm256_castps256_ps128(v);
            let s = _mm_add_ps(lo, _mm256_extractf128_ps::<1>(v));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }
        fn hmul(v: V) -> f32 {
            let lo = _mm256_castps256_ps128(v);
            let s = _mm_mul_ps(lo, _mm256_extractf128_ps::<1>(v));
            let s = _mm_mul_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_mul_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }
        fn hmax(v: V) -> f32 {
            let lo = _mm256_castps256_ps128(v);
            let s = _mm_max_ps(lo, _mm256_extractf128_ps::<1>(v));
            let s = _mm_max_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_max_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }
        fn hmin(v: V) -> f32 {
            let lo = _mm256_castps256_ps128(v);
            let s = _mm_min_ps(lo, _mm256_extractf128_ps::<1>(v));
            let s = _mm_min_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_min_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }
    }

    simd_kernels!("avx2,fma");

    /// Converts `n` halves (a multiple of 8) to floats.
    ///
    /// # Safety
    /// The CPU has F16C and AVX; `src` is readable and `dst` writable for `n` elements.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn f16_to_f32(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        while i + W <= n {
            let h = _mm_loadu_si128(src.add(i) as *const __m128i);
            _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
            i += W;
        }
    }
}

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
/// 16-lane stretch of `acc` held in a register across the rows. Returns `false` without AVX-512.
pub(crate) fn accumulate_rows_add(acc: &mut [f32], x: &[f32]) -> bool {
    let n = acc.len();
    assert!(n == 0 || x.len() % n == 0, "accumulate_rows: not whole rows");
    match isa() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 detected; x holds x.len()/n rows of n values and acc n (checked).
        Isa::Avx512 if n > 0 => unsafe { avx512::accumulate_rows_add(acc.as_mut_ptr(), n, x.as_ptr(), x.len() / n) },
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
