//! Quantized 8-bit ADD, SUB and MUL with TFLite's reference arithmetic
//! (`quant::binary::QBinary::apply`) over 16 int32 lanes with AVX-512 F/BW/VL, or 8 with AVX2
//! ([`avx2`]: the same steps and integers).
//!
//! Each `MultiplyByQuantizedMultiplier` step (the two input rescales and the output rescale of
//! add/sub, the one of mul) runs as one exact 32×32→64-bit multiply on the even lanes and one
//! on the odd lanes (`vpmuldq`), one 64-bit shift, and one 32-bit rounding shift:
//!
//! `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(y, m), r)` for `m > 0` (or 0), no
//! saturation (`m ≠ i32::MIN`) and `r ≥ 1` equals `⌊(⌊(y·m + 2³⁰ + 2³⁰⁺ʳ) / 2³¹⌋ − n) / 2ʳ⌋`,
//! `n = [y·m < −2³⁰]`: the high multiply is `⌊(y·m + 2³⁰) / 2³¹⌋` (gemmlowp's nudge then
//! truncation equals that floor), round-half-away-from-zero by `2ʳ` is `⌊(q + 2ʳ⁻¹ − [q < 0]) /
//! 2ʳ⌋`, and `⌊(⌊a / b⌋ + c) / d⌋ = ⌊(a + c·b) / (b·d)⌋` for integers moves the `2ʳ⁻¹` into the
//! 64-bit sum. With `m ≥ 2³⁰`, `y·m < −2³⁰` is `y < 0` (or `y < −1` when `m = 2³⁰`), read from
//! `y` itself. A step whose multiplier is exactly ½ with no right shift (the larger input of an
//! add: `y·2³⁰ / 2³¹` of an even `y`) is a plain left shift.
//!
//! A step on a small value `x` shifted left by `pre` (add/sub's inputs: a byte less its zero
//! point, `pre = 20`) needs no 64-bit product ([`Split`]): with `K = 31 − pre` and `m = mh·2ᴷ +
//! ml`, `⌊(x·2^pre·m + c) / 2³¹⌋ = x·mh + ⌊(x·ml + c / 2^pre) / 2ᴷ⌋`, two 32-bit multiplies
//! (`vpmulld`, `vpmaddwd`). Where both inputs' steps are plain shifts (equal input scales) the
//! sum is taken without their common power of two and the output step is split the same way.
//! [`QLanes::new`] builds the lanes only where every intermediate value stays in the range
//! this needs (the caller falls back to its portable paths otherwise, and on CPUs without
//! AVX2); the tests compare them with `apply` over every pair of input bytes.
//!
//! The loop is compiled once per second operand's mode (contiguous, a tiled row, a value per
//! row, a scalar): whole blocks of 64 values with plain loads and stores, then one masked
//! block. (Looking the input steps up in 256-entry tables with `vpermi2b` on byte planes was
//! tried: on Zen 4 the eight two-source byte permutes per input and block cost more than the
//! arithmetic.)
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Calls an instruction set's `kernel_g::<MUL, SIGNED, SH1, SH2, OS, MODE>(k, first, second,
/// start, out, n)` with the const parameters `k`'s lanes and `second`'s mode select: the
/// dispatch of every `kernel` (AVX-512 here, AVX2 in [`avx2`]), inside an `unsafe fn` whose
/// contract is the kernel's.
macro_rules! dispatch_lanes {
    ($kg:ident, $k:ident, $first:ident, $second:ident, $start:ident, $out:ident, $n:ident) => {{
        let mul = $k.kind == Kind::Mul;
        let (sh1, sh2) = (!mul && $k.input[0].shift_only.is_some(), !mul && $k.input[1].shift_only.is_some());
        macro_rules! by_mode {
            ($mul:literal, $signed:literal, $sh1:literal, $sh2:literal, $os:literal) => {
                // SAFETY: the caller's guarantees, passed on.
                unsafe {
                    match $second {
                        Second::Contig(_) => $kg::<$mul, $signed, $sh1, $sh2, $os, CONTIG>($k, $first, $second, $start, $out, $n),
                        Second::Tiled(..) => $kg::<$mul, $signed, $sh1, $sh2, $os, TILED>($k, $first, $second, $start, $out, $n),
                        Second::PerRow(..) => $kg::<$mul, $signed, $sh1, $sh2, $os, PER_ROW>($k, $first, $second, $start, $out, $n),
                        Second::Splat(_) => $kg::<$mul, $signed, $sh1, $sh2, $os, SPLAT>($k, $first, $second, $start, $out, $n),
                    }
                }
            };
        }
        macro_rules! go {
            ($signed:literal) => {
                match (sh1, sh2) {
                    (false, false) => by_mode!(false, $signed, false, false, false),
                    (true, false) => by_mode!(false, $signed, true, false, false),
                    (false, true) => by_mode!(false, $signed, false, true, false),
                    (true, true) if $k.out_split => by_mode!(false, $signed, true, true, true),
                    (true, true) => by_mode!(false, $signed, true, true, false),
                }
            };
        }
        match (mul, $k.signed) {
            (true, true) => by_mode!(true, true, false, false, false),
            (true, false) => by_mode!(true, false, false, false, false),
            (false, true) => go!(true),
            (false, false) => go!(false),
        }
    }};
}

#[cfg(target_arch = "x86_64")]
mod avx2;

cpu_token!(
    /// Proof that this CPU runs AVX-512 F/BW/VL (and `NNRT_ISA` allows AVX-512).
    QLaneToken: "avx512f", "avx512bw", "avx512vl"; isa >= super::Isa::Avx512
);

/// The instruction set a [`QLanes`] runs on, with the proof that this CPU has it.
#[derive(Clone, Copy, Debug)]
enum LaneIsa {
    Avx512(QLaneToken),
    Avx2(super::Avx2Token),
}

impl LaneIsa {
    /// AVX-512 where this CPU (and `NNRT_ISA`) allows it, else AVX2 (with FMA, as the other
    /// AVX2 kernels require, and `NNRT_ISA` at least AVX2).
    fn detect() -> Option<LaneIsa> {
        QLaneToken::new().map(LaneIsa::Avx512).or_else(|| super::Avx2Token::allowed().map(LaneIsa::Avx2))
    }
}

/// The longest period of a [`Second::Tiled`] operand.
pub(crate) const MAX_TILE: usize = 512;

/// One `MultiplyByQuantizedMultiplier` of a lane value `x` (already offset by its zero point).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    /// `x << pre` before the multiply (add/sub's 20-bit input shift, a positive output shift).
    pre: u32,
    /// `Some(k)`: the step is `x << k` exactly (multiplier ½, no right shift, even product).
    shift_only: Option<u32>,
    /// The Q31 multiplier (0 or in `[2³⁰, 2³¹)`).
    m: i32,
    /// The rounding right shift (0..=30).
    r: u32,
    /// `2³⁰ + 2³⁰⁺ʳ` (`2³⁰` when `r = 0`).
    c: i64,
    /// Added to `y = x << pre` before its sign is taken as `[q < 0]`: 0, 1 where `m = 2³⁰`,
    /// `2³⁰` where the correction must not apply (`r = 0` or `m = 0`).
    u: i32,
    /// The step as 32-bit multiplies, where exact for the lane values ([`Split`]).
    split: Option<Split>,
}

/// An input step in 32-bit lanes (see the module's notes): with `K = 31 − pre`, `m = mh·2ᴷ +
/// ml`, `q = x·mh + ⌊(x·ml + bias) / 2ᴷ⌋` and the step `⌊(q − n) / 2ʳ⌋`, `n = [x < 0]` where
/// the sign correction applies (`neg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    mh: i32,
    ml: i32,
    bias: i32,
    k: u32,
    neg: bool,
}

impl Step {
    /// The step for `(multiplier, shift)` as TFLite stores them (`shift > 0` a left shift),
    /// after an extra left shift `pre0`, for lane values in `lo..=hi`; `None` where the lanes
    /// would not be exact (a value `y` outside `±2³⁰`, a right shift above 30, a multiplier
    /// outside `{0} ∪ [2³⁰, 2³¹)`).
    fn new(mult: i32, shift: i32, pre0: u32, lo: i64, hi: i64) -> Option<Step> {
        let pre = pre0 + shift.max(0) as u32;
        let r = (-shift).max(0) as u32;
        if pre > 30 || r > 30 || !(mult == 0 || mult >= 1 << 30) {
            return None;
        }
        let bound = 1i64 << 30;
        if lo.checked_shl(pre)? < -bound || hi << pre > bound || (lo << pre) >> pre != lo || (hi << pre) >> pre != hi {
            return None;
        }
        let shift_only = (mult == 1 << 30 && r == 0 && pre >= 1).then_some(pre - 1);
        let c = (1i64 << 30) + if r > 0 { 1i64 << (30 + r) } else { 0 };
        let u = if r == 0 || mult == 0 {
            1 << 30
        } else if mult == 1 << 30 {
            1
        } else {
            0
        };
        let split = if shift_only.is_none() && mult != 0 && pre >= 1 { Split::new(mult, pre, r, u, lo.abs().max(hi.abs())) } else { None };
        Some(Step { pre, shift_only, m: mult, r, c, u, split })
    }

    /// The step on one value, as the lanes compute it (for bounds at build time).
    fn one(&self, x: i64) -> i64 {
        let y = x << self.pre;
        if let Some(k) = self.shift_only {
            return x << k;
        }
        if let Some(s) = self.split {
            let q = x * i64::from(s.mh) + ((x * i64::from(s.ml) + i64::from(s.bias)) >> s.k);
            let n = if s.neg && x < 0 { 1 } else { 0 };
            return (q - n) >> self.r;
        }
        let q = (y * i64::from(self.m) + self.c) >> 31;
        let n = if y + i64::from(self.u) < 0 { 1 } else { 0 };
        (q - n) >> self.r
    }
}

impl Split {
    /// The split of a step with multiplier `m` (in `[2³⁰, 2³¹)`), left shift `pre` (1..=30),
    /// right shift `r` and sign offset `u` ([`Step`]) for values of magnitude at most `vmax`;
    /// `None` where a 32-bit lane would overflow. `y·m + c = 2^pre·(x·m + c / 2^pre)` and
    /// `c / 2^pre = 2ᴷ⁻¹ + [r ≥ 1]·2ᴷ⁻¹⁺ʳ` is an integer, so `⌊(y·m + c) / 2³¹⌋ = ⌊(x·m + c /
    /// 2^pre) / 2ᴷ⌋ = x·mh + ⌊(x·ml + c / 2^pre) / 2ᴷ⌋` (`x·mh·2ᴷ` is a whole multiple); and
    /// `y + u < 0` is `x < 0` for `u` of 0 or 1 (`y` is even) and never for `u = 2³⁰` (`y ≥
    /// −2³⁰`).
    fn new(m: i32, pre: u32, r: u32, u: i32, vmax: i64) -> Option<Split> {
        let k = 31 - pre;
        let (mh, ml) = (i64::from(m) >> k, i64::from(m) & ((1i64 << k) - 1));
        let bias = (1i64 << (k - 1)) + if r >= 1 { 1i64 << (k - 1 + r) } else { 0 };
        let lim = i64::from(i32::MAX);
        let low = vmax * ml + bias;
        // `x·ml` in `vpmaddwd` (16-bit signed factors), the sums in int32.
        if ml >= 1 << 15 || vmax >= 1 << 15 || low > lim || vmax * mh + (low >> k) + 1 > lim {
            return None;
        }
        Some(Split { mh: mh as i32, ml: ml as i32, bias: bias as i32, k, neg: u != 1 << 30 })
    }
}

/// What the lanes compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `t1 + t2`, `t1 − t2` (`neg2`) or `t2 − t1` (`neg1`), then the output step.
    AddSub { neg1: bool, neg2: bool },
    /// `(x1 − z1)(x2 − z2)`, then the output step.
    Mul,
}

/// A quantized 8-bit add/sub/mul in lane form ([`QLanes::new`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct QLanes {
    isa: LaneIsa,
    kind: Kind,
    signed: bool,
    /// The two inputs' zero points.
    z: [i32; 2],
    /// The two inputs' steps (add/sub).
    input: [Step; 2],
    out: Step,
    /// The output step runs split ([`in_step`]): both input steps are shifts and the sum is
    /// taken without their common power of two.
    out_split: bool,
    out_zp: i32,
    lo: i32,
    hi: i32,
}

/// The parameters of one side of a [`QLanes`] op: zero point and, for add/sub, the rescale's
/// `(multiplier, shift)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SideParams {
    pub zp: i32,
    pub mult: (i32, i32),
}

/// The second operand of [`QLanes::run`], by position `i` of the segment being computed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Second<'a> {
    /// `s[i - start]`, like the first operand.
    Contig(&'a [u8]),
    /// `s[i % len]` where `s` holds `len + 16` bytes (at most [`MAX_TILE`] + 16) of period
    /// `len >= 16` (a row repeated).
    Tiled(&'a [u8], usize),
    /// `s[i / p]`: one value per row of `p` (a multiple of 16) positions.
    PerRow(&'a [u8], usize),
    /// One value everywhere.
    Splat(u8),
}

#[cfg(target_arch = "x86_64")]
impl Second<'_> {
    /// The operand's bytes (null for a splat) and the period of a tiled row or the length of a
    /// row (0 otherwise), as the kernels walk them.
    fn bytes_and_period(&self) -> (*const u8, usize) {
        match *self {
            Second::Contig(s) => (s.as_ptr(), 0),
            Second::Tiled(s, period) => (s.as_ptr(), period),
            Second::PerRow(s, p) => (s.as_ptr(), p),
            Second::Splat(_) => (std::ptr::null(), 0),
        }
    }
}

impl QLanes {
    /// The lanes of an 8-bit (`signed`: int8, else uint8) add/sub (`mul == false`, `sub`) or
    /// mul with TFLite's parameters: `left_shift` (20), each input's zero point and rescale,
    /// the output's rescale, zero point and activation range. `None` where this CPU lacks
    /// AVX2 (and AVX-512 F/BW/VL) or a step would not be exact in the lanes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(signed: bool, mul: bool, sub: bool, left_shift: u32, a: SideParams, b: SideParams, out_mult: (i32, i32), out_zp: i32, act: (i32, i32)) -> Option<QLanes> {
        let isa = LaneIsa::detect()?;
        let (tmin, tmax) = if signed { (-128i64, 127i64) } else { (0, 255) };
        let range = |zp: i32| (tmin - i64::from(zp), tmax - i64::from(zp));
        let (ra, rb) = (range(a.zp), range(b.zp));
        let (lo, hi) = (act.0.max(tmin as i32), act.1.min(tmax as i32));
        // The output's zero point is added to int16 lanes (saturating: exact for outputs that
        // end inside the 8-bit range).
        if lo > hi || out_zp.unsigned_abs() > 1024 {
            return None;
        }
        let dummy = Step { pre: 0, shift_only: Some(0), m: 0, r: 0, c: 0, u: 0, split: None };
        let (kind, input, (slo, shi)) = if mul {
            let ends = [ra.0 * rb.0, ra.0 * rb.1, ra.1 * rb.0, ra.1 * rb.1];
            (Kind::Mul, [dummy; 2], (*ends.iter().min()?, *ends.iter().max()?))
        } else {
            let sa = Step::new(a.mult.0, a.mult.1, left_shift, ra.0, ra.1)?;
            let sb = Step::new(b.mult.0, b.mult.1, left_shift, rb.0, rb.1)?;
            // The input steps run as a shift or split ([`in_step`]).
            if [sa, sb].iter().any(|s| s.shift_only.is_none() && s.split.is_none()) {
                return None;
            }
            // Each step is monotonic: its range is that of the ends of its input's.
            let sum = |sa: &Step, sb: &Step| {
                let (ta, tb) = ((sa.one(ra.0), sa.one(ra.1)), (sb.one(rb.0), sb.one(rb.1)));
                if sub { (ta.0 - tb.1, ta.1 - tb.0) } else { (ta.0 + tb.0, ta.1 + tb.1) }
            };
            let kind = Kind::AddSub { neg1: false, neg2: sub };
            // Two plain shifts (`k1`, `k2`): the sum is `2^g` times that of the inputs shifted
            // by `k1 − g` and `k2 − g` (`g` the smaller), and the output step of `s·2^g` is
            // that step with `g` more of left shift, which splits ([`Split`]) for such small
            // sums.
            if let (Some(k1), Some(k2)) = (sa.shift_only, sb.shift_only) {
                let g = k1.min(k2);
                let (na, nb) = (Step { shift_only: Some(k1 - g), ..sa }, Step { shift_only: Some(k2 - g), ..sb });
                let (slo, shi) = sum(&na, &nb);
                if let Some(out) = Step::new(out_mult.0, out_mult.1, g, slo, shi).filter(|o| o.split.is_some()) {
                    return Some(QLanes { isa, kind, signed, z: [a.zp, b.zp], input: [na, nb], out, out_split: true, out_zp, lo, hi });
                }
            }
            (kind, [sa, sb], sum(&sa, &sb))
        };
        let out = Step::new(out_mult.0, out_mult.1, 0, slo, shi)?;
        Some(QLanes { isa, kind, signed, z: [a.zp, b.zp], input, out, out_split: false, out_zp, lo, hi })
    }

    /// Add/sub's signs: `t2 − t1` (`neg1`), `t1 − t2` (`neg2`); neither for mul.
    #[cfg(target_arch = "x86_64")]
    fn negs(&self) -> (bool, bool) {
        match self.kind {
            Kind::AddSub { neg1, neg2 } => (neg1, neg2),
            Kind::Mul => (false, false),
        }
    }

    /// The same op with its operands swapped: `run(y, x)` computes what `run(x, y)` did.
    pub(crate) fn swapped(&self) -> QLanes {
        let kind = match self.kind {
            Kind::AddSub { neg1, neg2 } => Kind::AddSub { neg1: neg2, neg2: neg1 },
            Kind::Mul => Kind::Mul,
        };
        QLanes { kind, z: [self.z[1], self.z[0]], input: [self.input[1], self.input[0]], ..*self }
    }

    /// `out[j]` = the op on `first[j]` and the second operand at position `start + j` of a
    /// segment (see [`Second`]); `first` holds at least `out.len()` bytes, a `Contig` second
    /// operand too. `PerRow` needs `start` to be a multiple of 16.
    ///
    /// # Panics
    /// When an operand is shorter than that, or `PerRow`'s conditions do not hold.
    pub(crate) fn run(&self, first: &[u8], second: Second<'_>, start: usize, out: &mut [u8]) {
        let n = out.len();
        assert!(first.len() >= n, "qbinary lanes: first operand shorter than the output");
        match second {
            Second::Contig(s) => assert!(s.len() >= n, "qbinary lanes: second operand shorter than the output"),
            Second::Tiled(s, len) => assert!(len >= 16 && s.len() >= len + 16 && s.len() <= MAX_TILE + 16, "qbinary lanes: tiled row"),
            Second::PerRow(s, p) => assert!(p > 0 && p.is_multiple_of(16) && start.is_multiple_of(16) && (start + n).div_ceil(p) <= s.len(), "qbinary lanes: rows"),
            Second::Splat(_) => {}
        }
        if n == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the tokens (built only after run-time detection) prove AVX-512 F/BW/VL or
        // AVX2; the asserts above bound every read (see `kernel`).
        unsafe {
            match self.isa {
                LaneIsa::Avx512(_) => kernel(self, first.as_ptr(), second, start, out.as_mut_ptr(), n),
                LaneIsa::Avx2(_) => avx2::kernel(self, first.as_ptr(), second, start, out.as_mut_ptr(), n),
            }
        }
    }

    /// The same lanes on AVX2 where this CPU has it (tests run the AVX2 kernel on AVX-512
    /// machines too).
    #[cfg(test)]
    pub(crate) fn on_avx2(self) -> Option<QLanes> {
        super::Avx2Token::new().map(|t| QLanes { isa: LaneIsa::Avx2(t), ..self })
    }
}

/// Lane constants of a [`Step`].
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct StepV {
    pre: __m512i,
    shift_only: Option<__m512i>,
    m: __m512i,
    r: __m512i,
    c: __m512i,
    u: __m512i,
    /// [`Split`]'s `mh`, `ml`, `bias`, `k` and the mask of `n` (all ones where `neg`).
    split: [__m512i; 5],
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn step_v(s: &Step) -> StepV {
    StepV {
        pre: _mm512_set1_epi32(s.pre as i32),
        shift_only: s.shift_only.map(|k| _mm512_set1_epi32(k as i32)),
        m: _mm512_set1_epi64(i64::from(s.m)),
        r: _mm512_set1_epi32(s.r as i32),
        c: _mm512_set1_epi64(s.c),
        u: _mm512_set1_epi32(s.u),
        split: match s.split {
            Some(p) => [p.mh, p.ml, p.bias, p.k as i32, if p.neg { -1 } else { 0 }].map(|v| _mm512_set1_epi32(v)),
            None => [_mm512_setzero_si512(); 5],
        },
    }
}

/// The step on 16 lanes with 64-bit products (see the module's notes).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn step(x: __m512i, s: &StepV) -> __m512i {
    let y = _mm512_sllv_epi32(x, s.pre);
    let pe = _mm512_mul_epi32(y, s.m);
    let po = _mm512_mul_epi32(_mm512_srli_epi64::<32>(y), s.m);
    // Bits 31..63 of each 64-bit sum: the even lanes' shifted down into their low dword, the
    // odd lanes' shifted up by one into their high dword, then one blend.
    let qe = _mm512_srli_epi64::<31>(_mm512_add_epi64(pe, s.c));
    let qo = _mm512_slli_epi64::<1>(_mm512_add_epi64(po, s.c));
    let q = _mm512_mask_blend_epi32(0xAAAA, qe, qo);
    let n = _mm512_srai_epi32::<31>(_mm512_add_epi32(y, s.u));
    _mm512_srav_epi32(_mm512_add_epi32(q, n), s.r)
}

/// An input step on 16 lanes: its plain shift (`SHIFT`) or its [`Split`] (the other input
/// steps make no lanes).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn in_step<const SHIFT: bool>(x: __m512i, s: &StepV) -> __m512i {
    if SHIFT {
        return _mm512_sllv_epi32(x, s.shift_only.unwrap_or(s.pre));
    }
    let [mh, ml, bias, k, neg] = s.split;
    let hi = _mm512_mullo_epi32(x, mh);
    // |x| < 2¹⁵ and 0 <= ml < 2¹⁵: the low 16-bit halves' product is x·ml, the high halves'
    // (x's sign, ml's zero) nothing.
    let lo = _mm512_srav_epi32(_mm512_add_epi32(_mm512_madd_epi16(x, ml), bias), k);
    let n = _mm512_and_si512(_mm512_srai_epi32::<31>(x), neg);
    _mm512_srav_epi32(_mm512_add_epi32(_mm512_add_epi32(hi, lo), n), s.r)
}

/// The constants of one run of the kernel.
#[cfg(target_arch = "x86_64")]
struct Consts {
    neg1: bool,
    neg2: bool,
    z1: __m512i,
    z2: __m512i,
    s1: StepV,
    s2: StepV,
    so: StepV,
}

#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn widen<const SIGNED: bool>(b: __m128i) -> __m512i {
    if SIGNED { _mm512_cvtepi8_epi32(b) } else { _mm512_cvtepu8_epi32(b) }
}

/// The second operand's contribution from its 16 widened bytes: add/sub's rescaled value,
/// mul's offset value.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn side2<const MUL: bool, const SH2: bool>(c: &Consts, x2: __m512i) -> __m512i {
    let v = _mm512_sub_epi32(x2, c.z2);
    if MUL { v } else { in_step::<SH2>(v, &c.s2) }
}

/// 16 raw outputs (before the zero point) from the first operand's widened bytes and the
/// second's contribution.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn finish<const MUL: bool, const SH1: bool, const OS: bool>(c: &Consts, x1: __m512i, t2: __m512i) -> __m512i {
    let v1 = _mm512_sub_epi32(x1, c.z1);
    let s = if MUL {
        _mm512_mullo_epi32(v1, t2)
    } else {
        let t1 = in_step::<SH1>(v1, &c.s1);
        if c.neg2 {
            _mm512_sub_epi32(t1, t2)
        } else if c.neg1 {
            _mm512_sub_epi32(t2, t1)
        } else {
            _mm512_add_epi32(t1, t2)
        }
    };
    if OS { in_step::<false>(s, &c.so) } else { step(s, &c.so) }
}

/// The second operand's mode as a `const` parameter of [`kernel_g`] (one loop per mode, no
/// match per vector).
const CONTIG: u8 = 0;
const TILED: u8 = 1;
const PER_ROW: u8 = 2;
const SPLAT: u8 = 3;

/// The loop of [`QLanes::run`] for this op's kind, signedness, plain-shift steps and second
/// operand's mode.
///
/// # Safety
/// `first` and `out` valid for `n` bytes; the second operand as [`QLanes::run`] checks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn kernel(k: &QLanes, first: *const u8, second: Second<'_>, start: usize, out: *mut u8, n: usize) {
    dispatch_lanes!(kernel_g, k, first, second, start, out, n)
}

/// Four vectors of 16 raw outputs to 64 bytes: int16 with saturation (a raw value beyond
/// int16 stays beyond the 8-bit range after the zero point), the zero point added saturating,
/// bytes with saturation, then the activation range (inside the type's) where `CLAMP` (without
/// it, the range must be the whole type's, which the byte packs' saturation already gives).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn pack<const SIGNED: bool, const CLAMP: bool>(r: [__m512i; 4], order: __m512i, ozp: __m512i, lo8: __m512i, hi8: __m512i) -> __m512i {
    let w01 = _mm512_adds_epi16(_mm512_packs_epi32(r[0], r[1]), ozp);
    let w23 = _mm512_adds_epi16(_mm512_packs_epi32(r[2], r[3]), ozp);
    if SIGNED {
        let b = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(w01, w23));
        if CLAMP { _mm512_min_epi8(_mm512_max_epi8(b, lo8), hi8) } else { b }
    } else {
        let b = _mm512_permutexvar_epi32(order, _mm512_packus_epi16(w01, w23));
        if CLAMP { _mm512_min_epu8(_mm512_max_epu8(b, lo8), hi8) } else { b }
    }
}

/// [`kernel`] for one op kind, signedness, pair of plain-shift input steps, output step
/// (`OS`: split) and second operand's mode (`MODE`, which must be `second`'s): whole blocks of 64 values with plain
/// loads and stores, then one masked block for the tail.
///
/// # Safety
/// As [`kernel`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn kernel_g<const MUL: bool, const SIGNED: bool, const SH1: bool, const SH2: bool, const OS: bool, const MODE: u8>(k: &QLanes, first: *const u8, second: Second<'_>, start: usize, out: *mut u8, n: usize) {
    let (neg1, neg2) = k.negs();
    let c = Consts {
        neg1,
        neg2,
        z1: _mm512_set1_epi32(k.z[0]),
        z2: _mm512_set1_epi32(k.z[1]),
        s1: step_v(&k.input[0]),
        s2: step_v(&k.input[1]),
        so: step_v(&k.out),
    };
    // The second operand's bytes (contiguous, a tiled row, one per row) and the period of a
    // tiled row or the length of a row.
    let (sp, period) = second.bytes_and_period();
    let splat = match second {
        Second::Splat(b) => side2::<MUL, SH2>(&c, widen::<SIGNED>(_mm_set1_epi8(b as i8))),
        _ => _mm512_setzero_si512(),
    };
    // A tiled row's contributions, worked out once; a per-row operand's, by byte.
    let mut tiled = [0i32; MAX_TILE + 16];
    if let Second::Tiled(s, _) = second {
        for (q, t) in tiled[..s.len()].chunks_mut(16).enumerate() {
            let mask: __mmask16 = if t.len() == 16 { 0xffff } else { (1u16 << t.len()) - 1 };
            // SAFETY: bytes 16q .. 16q + t.len() of `s`, and as many values of `t`.
            unsafe {
                let v = side2::<MUL, SH2>(&c, widen::<SIGNED>(_mm_maskz_loadu_epi8(mask, s.as_ptr().add(16 * q).cast())));
                _mm512_mask_storeu_epi32(t.as_mut_ptr().cast(), mask, v);
            }
        }
    }
    if MODE == PER_ROW {
        let bytes: [u8; 256] = std::array::from_fn(|i| i as u8);
        for (q, t) in tiled[..256].chunks_exact_mut(16).enumerate() {
            // SAFETY: bytes 16q .. 16q + 16 of `bytes`, and 16 values of `t`.
            unsafe {
                let v = side2::<MUL, SH2>(&c, widen::<SIGNED>(_mm_loadu_si128(bytes.as_ptr().add(16 * q).cast())));
                _mm512_storeu_si512(t.as_mut_ptr().cast(), v);
            }
        }
    }
    // The tiled row's offset of position `start + j` (kept below its period), or its offset
    // in its row.
    let mut phase = if MODE == TILED || MODE == PER_ROW { start % period } else { 0 };
    // The per-row operand's row at position `start + j`, and its contribution.
    let mut row = if MODE == PER_ROW { start / period } else { 0 };
    let mut row_t = _mm512_setzero_si512();
    if MODE == PER_ROW && phase != 0 {
        // SAFETY: n > 0 (checked by `run`) and `(start + n).div_ceil(p)` rows, so row
        // `start / p` is one.
        row_t = _mm512_set1_epi32(tiled[usize::from(unsafe { *sp.add(row) })]);
    }
    // The second operand's contribution at `at .. at + 16` (of which `mask` are output
    // positions), positions taken in order.
    macro_rules! second16 {
        ($at:expr, $mask:expr) => {
            match MODE {
                // SAFETY: lanes at .. at + 16 (masked) of the contiguous operand, as `first`.
                CONTIG => side2::<MUL, SH2>(&c, widen::<SIGNED>(unsafe { _mm_maskz_loadu_epi8($mask, sp.add($at).cast()) })),
                TILED => {
                    // SAFETY: `tiled` holds `period + 16` values and `phase < period`.
                    let v = unsafe { _mm512_loadu_si512(tiled.as_ptr().add(phase).cast()) };
                    phase += 16;
                    if phase >= period {
                        phase -= period;
                    }
                    v
                }
                PER_ROW => {
                    if phase == 0 {
                        // SAFETY: position `start + at` (an output position: the tail asks
                        // only for those) lies in row `row` < `(start + n).div_ceil(p)`; the
                        // 16 positions from a multiple of 16 lie in one row (p is a multiple
                        // of 16).
                        row_t = _mm512_set1_epi32(tiled[usize::from(unsafe { *sp.add(row) })]);
                    }
                    phase += 16;
                    if phase == period {
                        phase = 0;
                        row += 1;
                    }
                    row_t
                }
                _ => splat,
            }
        };
    }
    // Bytes `k` of the packed vector (in-lane packs of four vectors) come from vector
    // `k / 4 % 4`, lane `4 · (k / 16) + k % 4`: dword `d` of the result is dword `4 · (d % 4)
    // + d / 4` of the packs.
    let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let (ozp, lo8, hi8) = (_mm512_set1_epi16(k.out_zp.clamp(-32768, 32767) as i16), _mm512_set1_epi8(k.lo as i8), _mm512_set1_epi8(k.hi as i8));
    let whole = n - n % 64;
    let mut j = 0;
    // The whole blocks, with the activation's clamp only where its range is narrower than the
    // type's (one loop each).
    macro_rules! blocks {
        ($clamp:literal) => {
            while j < whole {
                let mut r = [_mm512_setzero_si512(); 4];
                for (q, r) in r.iter_mut().enumerate() {
                    let at = j + 16 * q;
                    // SAFETY: bytes at .. at + 16 <= n of `first`.
                    let x1 = widen::<SIGNED>(unsafe { _mm_loadu_si128(first.add(at).cast()) });
                    let t2 = second16!(at, 0xffff);
                    *r = finish::<MUL, SH1, OS>(&c, x1, t2);
                }
                // SAFETY: bytes j .. j + 64 <= n of `out`.
                unsafe { _mm512_storeu_si512(out.add(j).cast(), pack::<SIGNED, $clamp>(r, order, ozp, lo8, hi8)) };
                j += 64;
            }
        };
    }
    let (type_lo, type_hi) = if SIGNED { (-128, 127) } else { (0, 255) };
    if k.lo <= type_lo && k.hi >= type_hi {
        blocks!(false);
    } else {
        blocks!(true);
    }
    if j < n {
        let mut r = [_mm512_setzero_si512(); 4];
        for (q, r) in r.iter_mut().enumerate() {
            let at = j + 16 * q;
            if at >= n {
                break;
            }
            let len = (n - at).min(16);
            let mask: __mmask16 = if len == 16 { 0xffff } else { (1u16 << len) - 1 };
            // SAFETY: bytes at .. at + len <= n of `first` (a masked load reads no others).
            let x1 = widen::<SIGNED>(unsafe { _mm_maskz_loadu_epi8(mask, first.add(at).cast()) });
            let t2 = second16!(at, mask);
            *r = finish::<MUL, SH1, OS>(&c, x1, t2);
        }
        let len = n - j;
        let mask: __mmask64 = (1u64 << len) - 1;
        // SAFETY: bytes j .. j + len <= n of `out` (len < 64).
        unsafe { _mm512_mask_storeu_epi8(out.add(j).cast(), mask, pack::<SIGNED, true>(r, order, ozp, lo8, hi8)) };
    }
}

#[cfg(test)]
mod tests {
    use super::{QLanes, SideParams, Step};

    /// `Step::one` (the lanes' arithmetic) is TFLite's `MultiplyByQuantizedMultiplier` for
    /// every multiplier class and shift over the values it admits.
    #[test]
    fn step_is_the_reference_requant() {
        use crate::quant::fixedpoint::mbqm_smaller_than_one;
        let mults = [0, 1 << 30, (1 << 30) + 1, 1_500_000_000, i32::MAX];
        let mut splits = 0;
        for &m in &mults {
            for shift in -30..=3 {
                // 20: add/sub's input steps; 18, 19: output steps of a sum of two shifted
                // inputs without their common power of two (both split where they can).
                for pre0 in [0u32, 18, 19, 20] {
                    let (lo, hi) = match pre0 {
                        0 => (-(1i64 << 26), 1 << 26),
                        20 => (-255i64, 255),
                        _ => (-1020, 1020),
                    };
                    let Some(s) = Step::new(m, shift, pre0, lo, hi) else { continue };
                    splits += usize::from(s.split.is_some());
                    let xs = (lo..=hi).step_by(((hi - lo) / 4000).max(1) as usize).chain([lo, hi, -1, 0, 1, -2, 2]);
                    for x in xs {
                        let want = mbqm_smaller_than_one((x as i32).wrapping_mul(1 << pre0), m, shift);
                        assert_eq!(s.one(x), i64::from(want), "m {m} shift {shift} pre {pre0} x {x}");
                    }
                }
            }
        }
        assert!(splits > 100, "only {splits} steps split");
    }

    /// Equal input scales (both steps the shift by 19 of TFLite's ½ after `<< 20`) take the
    /// split output step on the sum without its `2¹⁹`; the pair tests in `quant::tests` check
    /// the lanes' values.
    #[test]
    fn equal_scales_split_the_output_step() {
        use crate::quant::fixedpoint::quantize_multiplier_smaller_than_one;
        let half = SideParams { zp: 3, mult: (1 << 30, 0) };
        // 2·0.05 / (2²⁰·0.08), as TFLite's add prepares it.
        let out = quantize_multiplier_smaller_than_one(2.0 * 0.05 / (1048576.0 * 0.08));
        let Some(l) = QLanes::new(true, false, false, 20, half, half, out, -2, (-128, 127)) else { return };
        assert!(l.out_split);
        assert_eq!([l.input[0].shift_only, l.input[1].shift_only], [Some(0), Some(0)]);
        assert!(l.swapped().out_split);
    }
}
