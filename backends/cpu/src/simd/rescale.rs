//! TOSA RESCALE over 64-bit lanes, 8 at a time with AVX-512F and 4 with AVX2: the input's
//! (unsigned or sign-extended) view minus its zero point, `apply_scale_32` / `apply_scale_16` as
//! one signed 32×32→64-bit multiply, the rounding term (DOUBLE_ROUND's ±2^30 by the value's
//! sign), an arithmetic right shift, the int32 clip, the output zero point, the output type's
//! clip, and the result kept as the output type keeps it (sign-extended low bits). The
//! baseline build (x86-64 without AVX2) does not vectorize the 64-bit multiply and shift.
//! The scalar twin is [`Rescale::one`]; the tests compare them bit for bit.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{isa, Avx2Token, Avx512Token, Isa};
use crate::quant::tosa::Rescale;

/// The widest vector: constants are laid out in multiples of it.
const W: usize = 8;
/// Constants of a per-channel RESCALE repeat every `lcm(channels, W)` lanes; up to this many
/// they are laid out once per repetition, above it per row of channels.
const MAX_PERIOD: usize = 512;

#[derive(Clone, Copy, Debug)]
enum Path {
    Avx512(Avx512Token),
    Avx2(Avx2Token),
}

/// A RESCALE's constants laid out lane by lane for the vector kernels, and the kernel this CPU
/// runs. Built by [`LaneRescale::new`] only where the vector arithmetic is exactly the scalar
/// one.
#[derive(Clone, Debug)]
pub(crate) struct LaneRescale {
    path: Path,
    /// Lanes after which the constants repeat (a multiple of the channel count).
    period: usize,
    /// Per lane of a period (padded to a multiple of [`W`]): multiplier, shift, rounding term
    /// for a value `>= 0` and for a negative one.
    mult: Vec<i64>,
    shift: Vec<i64>,
    round_pos: Vec<i64>,
    round_neg: Vec<i64>,
    /// The input's view: `x & in_mask` when unsigned, else the low `in_bits` sign-extended.
    in_unsigned: bool,
    in_bits: u32,
    input_zp: i64,
    output_zp: i64,
    /// The output type's range.
    lo: i64,
    hi: i64,
    out_bits: u32,
}

/// `(min, max)` of a `bits`-bit lane, unsigned or signed.
fn range(bits: u32, unsigned: bool) -> (i64, i64) {
    match (bits, unsigned) {
        (32, _) => (i64::from(i32::MIN), i64::from(i32::MAX)),
        (b, true) => (0, (1 << b) - 1),
        (b, false) => (-(1 << (b - 1)), (1 << (b - 1)) - 1),
    }
}

impl LaneRescale {
    /// The vector form of `r` for `in_bits`-bit input lanes and `out_bits`-bit outputs (8, 16
    /// or 32 each), or `None` where this CPU has neither AVX-512F nor AVX2 (or `NNRT_ISA`
    /// keeps them off), or where the input minus its zero point may leave int32 (an int32 input
    /// with a zero point: the scalar path's 128-bit product), or a shift is outside 1..=62.
    pub(crate) fn new(r: &Rescale, in_bits: u32, out_bits: u32) -> Option<LaneRescale> {
        let path = match isa() {
            Isa::Avx512 => Avx512Token::new().map(Path::Avx512).or_else(|| Avx2Token::new().map(Path::Avx2))?,
            Isa::Avx2Fma => Avx2Token::new().map(Path::Avx2)?,
            Isa::Scalar | Isa::Neon => return None,
        };
        Self::with_path(r, in_bits, out_bits, path)
    }

    fn with_path(r: &Rescale, in_bits: u32, out_bits: u32, path: Path) -> Option<LaneRescale> {
        if ![8, 16, 32].contains(&in_bits) || ![8, 16, 32].contains(&out_bits) {
            return None;
        }
        let in_unsigned = r.input_unsigned && in_bits < 32;
        let (xlo, xhi) = range(in_bits, in_unsigned);
        let fits = |v: i64| i32::try_from(v).is_ok();
        if !fits(xlo - r.input_zp) || !fits(xhi - r.input_zp) || !fits(r.output_zp) {
            return None;
        }
        let ch = r.multiplier.len();
        if ch == 0 || ch != r.shift.len() || r.shift.iter().any(|s| !(1..=62).contains(s)) {
            return None;
        }
        let lcm = ch / gcd(ch, W) * W;
        let mut period = if lcm <= MAX_PERIOD { lcm } else { ch };
        // Per tensor and few channels: a longer block, fewer trips round the outer loop.
        while period < 64 && period * 2 <= MAX_PERIOD {
            period *= 2;
        }
        let padded = period.div_ceil(W) * W;
        let (mut mult, mut shift, mut round_pos, mut round_neg) = (vec![0; padded], vec![0; padded], vec![0; padded], vec![0; padded]);
        for i in 0..period {
            let c = i % ch;
            let s = r.shift[c];
            let half = 1i64 << (s - 1);
            let dr = if r.scale32 && r.double_round && s > 31 { 1i64 << 30 } else { 0 };
            mult[i] = if r.scale32 { i64::from(r.multiplier[c]) } else { i64::from(r.multiplier[c] as i16) };
            shift[i] = i64::from(s);
            round_pos[i] = half + dr;
            round_neg[i] = half - dr;
        }
        let (lo, hi) = range(out_bits, r.output_unsigned);
        Some(LaneRescale { path, period, mult, shift, round_pos, round_neg, in_unsigned, in_bits, input_zp: r.input_zp, output_zp: r.output_zp, lo, hi, out_bits })
    }

    /// The same constants for the AVX2 kernel (tests: both kernels on a CPU that has both).
    #[cfg(test)]
    fn avx2(&self) -> Option<LaneRescale> {
        Avx2Token::new().map(|t| LaneRescale { path: Path::Avx2(t), ..self.clone() })
    }

    /// A count of lanes that starts every block of constants afresh (a multiple of the period,
    /// about 512 lanes): a caller running a long tensor through [`LaneRescale::run`] in pieces
    /// cuts it into pieces of this length.
    pub(crate) fn chunk(&self) -> usize {
        self.period * (512 / self.period).max(1)
    }

    /// `out[i]` = RESCALE of lane `a[i]` (channel `i` modulo the channel count), as
    /// [`Rescale::one`] computes it, widened back to 64 bits.
    pub(crate) fn run(&self, a: &[i64], out: &mut [i64]) {
        let n = a.len().min(out.len());
        let mut b = 0;
        while b < n {
            let len = self.period.min(n - b);
            // SAFETY: lanes `b .. b + len <= n` of `a` and `out`; the vector at offset `j < len`
            // reads and writes `min(len - j, width)` of them, and constants `j .. j + width`
            // of the padded arrays (`j` and their length are multiples of the width, `j <
            // period <= length`). The token proves the CPU's features.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                match self.path {
                    Path::Avx512(_) => self.block_avx512(a.as_ptr().add(b), out.as_mut_ptr().add(b), len),
                    Path::Avx2(_) => self.block_avx2(a.as_ptr().add(b), out.as_mut_ptr().add(b), len),
                }
            }
            b += len;
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn block_avx512(&self, a: *const i64, out: *mut i64, len: usize) {
        let set = _mm512_set1_epi64;
        let (izp, ozp, lo, hi) = (set(self.input_zp), set(self.output_zp), set(self.lo), set(self.hi));
        let (i32lo, i32hi) = (set(i64::from(i32::MIN)), set(i64::from(i32::MAX)));
        let in_mask = set((1i64 << self.in_bits.min(63)) - 1);
        let (in_ext, out_ext) = (set(i64::from(64 - self.in_bits)), set(i64::from(64 - self.out_bits)));
        let mut j = 0;
        while j < len {
            let k = (len - j).min(8);
            let m: __mmask8 = if k == 8 { 0xff } else { (1u8 << k) - 1 };
            // SAFETY: see `run`: lanes `j .. j + k` of the block, constants `j .. j + 8`.
            unsafe {
                let x = _mm512_maskz_loadu_epi64(m, a.add(j));
                let x = if self.in_unsigned { _mm512_and_si512(x, in_mask) } else { _mm512_srav_epi64(_mm512_sllv_epi64(x, in_ext), in_ext) };
                let v = _mm512_sub_epi64(x, izp);
                let neg = _mm512_cmplt_epi64_mask(v, _mm512_setzero_si512());
                let rnd = _mm512_mask_blend_epi64(neg, _mm512_loadu_si512(self.round_pos.as_ptr().add(j).cast()), _mm512_loadu_si512(self.round_neg.as_ptr().add(j).cast()));
                let p = _mm512_mul_epi32(v, _mm512_loadu_si512(self.mult.as_ptr().add(j).cast()));
                let r = _mm512_srav_epi64(_mm512_add_epi64(p, rnd), _mm512_loadu_si512(self.shift.as_ptr().add(j).cast()));
                let r = _mm512_add_epi64(_mm512_min_epi64(_mm512_max_epi64(r, i32lo), i32hi), ozp);
                let r = _mm512_min_epi64(_mm512_max_epi64(r, lo), hi);
                let r = _mm512_srav_epi64(_mm512_sllv_epi64(r, out_ext), out_ext);
                _mm512_mask_storeu_epi64(out.add(j), m, r);
            }
            j += 8;
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn block_avx2(&self, a: *const i64, out: *mut i64, len: usize) {
        let set = _mm256_set1_epi64x;
        let zero = _mm256_setzero_si256();
        let (izp, ozp, lo, hi) = (set(self.input_zp), set(self.output_zp), set(self.lo), set(self.hi));
        let (i32lo, i32hi) = (set(i64::from(i32::MIN)), set(i64::from(i32::MAX)));
        // The low `bits` sign-extended: ((x & low) ^ sign) - sign.
        let (in_low, in_sign) = (set((1i64 << self.in_bits) - 1), set(1i64 << (self.in_bits - 1)));
        let (out_low, out_sign) = (set((1i64 << self.out_bits) - 1), set(1i64 << (self.out_bits - 1)));
        let mut j = 0;
        while j < len {
            let k = (len - j).min(4);
            // A short last vector goes through a buffer of 4 lanes.
            let mut buf = [0i64; 4];
            // SAFETY: see `run`: lanes `j .. j + k` of the block, constants `j .. j + 4`.
            unsafe {
                let x = if k == 4 {
                    _mm256_loadu_si256(a.add(j).cast())
                } else {
                    std::ptr::copy_nonoverlapping(a.add(j), buf.as_mut_ptr(), k);
                    _mm256_loadu_si256(buf.as_ptr().cast())
                };
                let x = if self.in_unsigned { _mm256_and_si256(x, in_low) } else { ext(x, in_low, in_sign) };
                let v = _mm256_sub_epi64(x, izp);
                let neg = _mm256_cmpgt_epi64(zero, v);
                let rnd = _mm256_blendv_epi8(_mm256_loadu_si256(self.round_pos.as_ptr().add(j).cast()), _mm256_loadu_si256(self.round_neg.as_ptr().add(j).cast()), neg);
                let p = _mm256_add_epi64(_mm256_mul_epi32(v, _mm256_loadu_si256(self.mult.as_ptr().add(j).cast())), rnd);
                // Arithmetic shift of a 64-bit lane: the logical shift of its complement when
                // negative, complemented back.
                let sign = _mm256_cmpgt_epi64(zero, p);
                let r = _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(p, sign), _mm256_loadu_si256(self.shift.as_ptr().add(j).cast())), sign);
                let r = _mm256_add_epi64(min(max(r, i32lo), i32hi), ozp);
                let r = ext(min(max(r, lo), hi), out_low, out_sign);
                if k == 4 {
                    _mm256_storeu_si256(out.add(j).cast(), r);
                } else {
                    _mm256_storeu_si256(buf.as_mut_ptr().cast(), r);
                    std::ptr::copy_nonoverlapping(buf.as_ptr(), out.add(j), k);
                }
            }
            j += 4;
        }
    }
}

/// The low bits of `x` under `low`, sign-extended from the bit `sign`: `((x & low) ^ sign) - sign`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn ext(x: __m256i, low: __m256i, sign: __m256i) -> __m256i {
    _mm256_sub_epi64(_mm256_xor_si256(_mm256_and_si256(x, low), sign), sign)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn max(a: __m256i, b: __m256i) -> __m256i {
    _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(b, a))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn min(a: __m256i, b: __m256i) -> __m256i {
    _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b))
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{LaneRescale, Path};
    use crate::quant::tosa::Rescale;

    /// The scalar path's result for lane `x` of channel `c`, as the int chain keeps it.
    fn scalar(r: &Rescale, x: i64, c: usize, in_bits: u32, out_bits: u32) -> i64 {
        macro_rules! to {
            ($ti:ty) => {
                match out_bits {
                    8 => i64::from(r.one::<$ti, i8>(x as $ti, c)),
                    16 => i64::from(r.one::<$ti, i16>(x as $ti, c)),
                    _ => i64::from(r.one::<$ti, i32>(x as $ti, c)),
                }
            };
        }
        match in_bits {
            8 => to!(i8),
            16 => to!(i16),
            _ => to!(i32),
        }
    }

    fn bits() -> impl Strategy<Value = u32> {
        prop_oneof![Just(8u32), Just(16), Just(32)]
    }

    #[allow(clippy::type_complexity)]
    fn case() -> impl Strategy<Value = (Rescale, u32, u32, Vec<i64>)> {
        (1usize..40, bits(), bits(), any::<(bool, bool, bool, bool)>(), 0usize..300, any::<u64>()).prop_map(|(ch, ib, ob, (scale32, dr, iu, ou), rows, seed)| {
            let mut rng = crate::testdata::xorshift(seed | 1);
            let mut next = move || rng.next().unwrap_or(1);
            // Multipliers over the whole int32 (int16) range, shifts over 2..=62 with the usual
            // ones (around 30-40) weighted in.
            let multiplier = (0..ch).map(|_| if scale32 { next() as i32 } else { next() as i16 as i32 }).collect();
            let shift = (0..ch).map(|_| if next() % 2 == 0 { 2 + (next() % 61) as u32 } else { 28 + (next() % 16) as u32 }).collect();
            let zp = |bits: u32, unsigned: bool, r: u64| -> i64 {
                let (lo, hi) = super::range(bits.min(16), unsigned);
                if bits == 32 { 0 } else { lo + (r % (hi - lo + 1) as u64) as i64 }
            };
            let (input_zp, output_zp) = (zp(ib, iu, next()), zp(ob, ou, next()));
            let r = Rescale { multiplier, shift, scale32, double_round: dr, input_zp, output_zp, input_unsigned: iu, output_unsigned: ou };
            // Lanes as the int chain holds them: any value of the input type, and its extremes.
            let (lo, hi) = super::range(ib, false);
            let n = ch * rows + (next() % 3) as usize;
            let xs = (0..n).map(|i| match next() % 8 {
                0 => lo,
                1 => hi,
                2 => (i % 5) as i64 - 2,
                _ => lo + (next() % (hi - lo + 1) as u64) as i64,
            }).collect();
            (r, ib, ob, xs)
        })
    }

    fn check(k: &LaneRescale, r: &Rescale, ib: u32, ob: u32, xs: &[i64]) {
        let mut got = vec![i64::MIN; xs.len()];
        k.run(xs, &mut got);
        let ch = r.multiplier.len();
        for (i, (&x, &g)) in xs.iter().zip(&got).enumerate() {
            let want = scalar(r, x, i % ch, ib, ob);
            assert_eq!(g, want, "{:?} lane {i} = {x} ({ib} -> {ob} bits)", k.path);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Both kernels (where the CPU has them) give the scalar path's integers, per tensor and
        /// per channel, scale32 and 16-bit, every rounding mode, signed and unsigned sides.
        #[test]
        fn lanes_match_the_scalar_rescale((r, ib, ob, xs) in case()) {
            let k = LaneRescale::new(&r, ib, ob);
            // Every case with a zero point inside the input's range is built where AVX2 runs.
            prop_assert!(k.is_some() || super::Avx2Token::new().is_none() || super::isa() < super::Isa::Avx2Fma);
            let Some(k) = k else { return Ok(()) };
            check(&k, &r, ib, ob, &xs);
            if let (Path::Avx512(_), Some(k2)) = (k.path, k.avx2()) {
                check(&k2, &r, ib, ob, &xs);
            }
        }
    }

    /// Where the vector form would not be exact it is not built.
    #[test]
    fn an_int32_input_with_a_zero_point_stays_scalar() {
        let r = Rescale { multiplier: vec![1 << 30], shift: vec![31], scale32: true, double_round: true, input_zp: 5, output_zp: 0, input_unsigned: false, output_unsigned: false };
        assert!(LaneRescale::new(&r, 32, 8).is_none());
        let bad_shift = Rescale { shift: vec![63], input_zp: 0, ..r };
        assert!(LaneRescale::new(&bad_shift, 32, 8).is_none());
    }

    /// Values at the edges of the int32 product (the largest multiplier and input, the
    /// smallest ones) through every shift, both rounding modes.
    #[test]
    fn extremes_match_the_scalar_rescale() {
        let xs: Vec<i64> = [i64::from(i32::MIN), i64::from(i32::MAX), -1, 0, 1, -(1 << 30), 1 << 30].repeat(3);
        for m in [i32::MIN, i32::MAX, -1, 1, 1 << 30] {
            for s in 1..=62u32 {
                for dr in [false, true] {
                    let r = Rescale { multiplier: vec![m], shift: vec![s], scale32: true, double_round: dr, input_zp: 0, output_zp: -7, input_unsigned: false, output_unsigned: false };
                    let Some(k) = LaneRescale::new(&r, 32, 32) else { return };
                    check(&k, &r, 32, 32, &xs);
                    if let Some(k2) = k.avx2() {
                        check(&k2, &r, 32, 32, &xs);
                    }
                }
            }
        }
    }
}
