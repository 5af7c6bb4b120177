//! The vector routines of [`super`]: one macro (`simd_kernels!`) writes each routine once over
//! a small set of primitives (`load`, `add`, `select`, …) that the `avx512` and `avx2` modules each
//! define with the same `#[target_feature]`, so primitives and routines inline into one another.

use super::{next_row, op, row_start, un, RowWalk, MAX_WALK, GELU_CUBIC, GELU_ERF_P, GELU_ERF_Q, GELU_ERF_Z, SQRT_2_OVER_PI};

// Constants shared by both instruction sets.
const LOG2E: f32 = std::f32::consts::LOG2_E;
// ln 2 split so that `n * LN2_HI` is exact for |n| < 2^11 (Cody–Waite reduction).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
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
        pub(crate) unsafe fn bin_vv<const OP: u8>(
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
        pub(crate) unsafe fn bin_vs<const OP: u8>(
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
        pub(crate) unsafe fn bin_rows<const OP: u8>(
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
        pub(crate) unsafe fn unary<const OP: u8>(
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
        pub(crate) unsafe fn hreduce<const OP: u8>(x: *const f32, n: usize) -> f32 {
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
        pub(crate) unsafe fn sum_sq(x: *const f32, n: usize) -> f32 {
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
        pub(crate) unsafe fn exp_sum(
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
pub(super) mod avx512 {
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
    pub(crate) unsafe fn accumulate_rows_add(acc: *mut f32, n: usize, x: *const f32, rows: usize) {
        let mut i = 0;
        while i < n {
            let m: [M; 4] = std::array::from_fn(|v| crate::simd::lane_mask16(n, i / W + v));
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
    pub(crate) unsafe fn f16_to_f32(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        while i + W <= n {
            let h = _mm256_loadu_si256(src.add(i) as *const __m256i);
            _mm512_storeu_ps(dst.add(i), _mm512_cvtph_ps(h));
            i += W;
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
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

    /// `acc[i] = x[r·n + i] + acc[i]` for each row `r < rows` in turn and `i < n`, as the
    /// AVX-512 twin: 32 lanes of `acc` (four independent chains) held in registers across the
    /// rows, plain loads where the 32 lanes are whole, masked ones for the last block.
    ///
    /// # Safety
    /// The CPU has AVX2; `acc` is writable for `n` values and `x` readable for `rows · n`.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn accumulate_rows_add(acc: *mut f32, n: usize, x: *const f32, rows: usize) {
        let mut i = 0;
        while i + 4 * W <= n {
            // SAFETY: values i..i + 32 ≤ n of acc, and of each row r < rows of x (contract).
            unsafe {
                let mut a: [V; 4] = std::array::from_fn(|v| _mm256_loadu_ps(acc.add(i + v * W)));
                for r in 0..rows {
                    for (v, a) in a.iter_mut().enumerate() {
                        // `x + acc`: bin_vv's Add operand order.
                        *a = _mm256_add_ps(_mm256_loadu_ps(x.add(r * n + i + v * W)), *a);
                    }
                }
                for (v, a) in a.iter().enumerate() {
                    _mm256_storeu_ps(acc.add(i + v * W), *a);
                }
            }
            i += 4 * W;
        }
        if i < n {
            // SAFETY: lanes under each mask are values i + v·W.. < n of acc and of each row r <
            // rows of x (contract); masked lanes are not touched.
            unsafe {
                let m: [__m256i; 4] = std::array::from_fn(|v| tail_mask((n - i).saturating_sub(v * W).min(W)));
                let mut a: [V; 4] = std::array::from_fn(|v| _mm256_maskload_ps(acc.add(i + v * W), m[v]));
                for r in 0..rows {
                    for (v, a) in a.iter_mut().enumerate() {
                        *a = _mm256_add_ps(_mm256_maskload_ps(x.add(r * n + i + v * W), m[v]), *a);
                    }
                }
                for (v, a) in a.iter().enumerate() {
                    _mm256_maskstore_ps(acc.add(i + v * W), m[v], *a);
                }
            }
        }
    }

    /// Converts `n` halves (a multiple of 8) to floats.
    ///
    /// # Safety
    /// The CPU has F16C and AVX; `src` is readable and `dst` writable for `n` elements.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn f16_to_f32(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        while i + W <= n {
            let h = _mm_loadu_si128(src.add(i) as *const __m128i);
            _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
            i += W;
        }
    }
}
