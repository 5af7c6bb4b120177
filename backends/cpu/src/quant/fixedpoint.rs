//! TFLite's integer arithmetic, rule for rule: `QuantizeMultiplier` (frexp into a Q31 multiplier
//! and an exponent), `MultiplyByQuantizedMultiplier` as TFLite builds it by default (the "double
//! rounding" form: `SaturatingRoundingDoublingHighMul` then `RoundingDivideByPOT`), its int64 form
//! for 16x8 accumulators, and gemmlowp's fixed-point `exp`, `logistic`, `tanh` and reciprocal used
//! by the 8-bit softmax, LSTM gates and the 16-bit activations.
//!
//! Every function here is scalar and exact; vector kernels elsewhere must agree with these bit for
//! bit (their property tests compare against them).

/// gemmlowp's `SaturatingRoundingDoublingHighMul` (ARM's `VQRDMULH`): `round(a * b / 2^31)` with
/// ties away from zero, saturating the one overflowing case `a == b == i32::MIN`.
#[inline(always)]
pub fn srdhm(a: i32, b: i32) -> i32 {
    if a == b && a == i32::MIN {
        return i32::MAX;
    }
    let ab = a as i64 * b as i64;
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // C++ integer division truncates toward zero; so does Rust's `/`.
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// The 16-bit `SaturatingRoundingDoublingHighMul`.
#[inline(always)]
pub fn srdhm16(a: i16, b: i16) -> i16 {
    if a == b && a == i16::MIN {
        return i16::MAX;
    }
    let ab = a as i32 * b as i32;
    let nudge: i32 = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^exponent` rounded to nearest, ties away from zero.
/// `exponent` is in 0..=31.
#[inline(always)]
pub fn rdbp(x: i32, exponent: i32) -> i32 {
    debug_assert!((0..=31).contains(&exponent));
    let mask = ((1i64 << exponent) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + (x < 0) as i32;
    (x >> exponent) + (remainder > threshold) as i32
}

/// The 16-bit `RoundingDivideByPOT`.
#[inline(always)]
pub fn rdbp16(x: i16, exponent: i32) -> i16 {
    let mask = ((1i32 << exponent) - 1) as i16;
    let remainder = x & mask;
    let threshold = (mask >> 1) + (x < 0) as i16;
    (x >> exponent) + (remainder > threshold) as i16
}

/// TFLite's `MultiplyByQuantizedMultiplier(int32 x, multiplier, shift)` (double rounding, the
/// default build): a positive `shift` is a left shift before the high multiply, a negative one a
/// rounding right shift after it. The left shift wraps like the C++ code does on real hardware.
#[inline(always)]
pub fn mbqm(x: i32, multiplier: i32, shift: i32) -> i32 {
    let left = shift.max(0);
    let right = (-shift).max(0);
    rdbp(srdhm(x.wrapping_mul(1 << left), multiplier), right)
}

/// TFLite's `MultiplyByQuantizedMultiplier(int64 x, multiplier, shift)`, used on the 64-bit
/// accumulators of 16x8 kernels: the multiplier is first reduced to 15 bits, then one rounding
/// shift (ties upward) brings the product back.
#[inline(always)]
pub fn mbqm64(x: i64, multiplier: i32, shift: i32) -> i32 {
    let reduced: i64 = if multiplier < 0x7FFF_0000 {
        ((multiplier as i64) + (1 << 15)) >> 16
    } else {
        0x7FFF
    };
    let total_shift = (15 - shift).clamp(1, 63);
    let y = x.wrapping_mul(reduced).wrapping_add(1i64 << (total_shift - 1));
    (y >> total_shift) as i32
}

/// `MultiplyByQuantizedMultiplierSmallerThanOneExp`: high multiply then rounding right shift by
/// `-left_shift` (add/sub's per-input scaling). A positive exponent falls back to [`mbqm`].
#[inline(always)]
pub fn mbqm_smaller_than_one(x: i32, multiplier: i32, left_shift: i32) -> i32 {
    if left_shift > 0 {
        return mbqm(x, multiplier, left_shift);
    }
    rdbp(srdhm(x, multiplier), -left_shift)
}

/// `MultiplyByQuantizedMultiplierGreaterThanOne`: left shift (wrapping) then high multiply.
#[inline(always)]
pub fn mbqm_greater_than_one(x: i32, multiplier: i32, left_shift: i32) -> i32 {
    srdhm(x.wrapping_mul(1 << left_shift), multiplier)
}

/// TFLite's `CheckedLog2`: the rounded log2 of `x` when `x` is (nearly) a power of two
/// (`|log2 x − round(log2 x)| < 1e-3`, computed in float as TFLite does).
pub fn checked_log2(x: f32) -> Option<i32> {
    let l = x.ln() * (1.0f32 / 2f32.ln());
    let r = l.round();
    ((l - r).abs() < 1e-3).then_some(r as i32)
}

/// C's `frexp`: `x = m * 2^e` with `0.5 <= |m| < 1` (`(0, 0)` for zero; no special cases for
/// NaN or infinities, which real scales never are).
pub fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * (1u64 << 54) as f64);
        return (m, e - 54);
    }
    let e = exp - 1022;
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, e)
}

/// TFLite's `QuantizeMultiplier`: a real multiplier as a Q31 significand in `[2^30, 2^31)` and an
/// exponent (positive = left shift). Multipliers below `2^-31` flush to `(0, 0)`.
pub fn quantize_multiplier(real: f64) -> (i32, i32) {
    if real == 0.0 {
        return (0, 0);
    }
    let (q, mut shift) = frexp(real);
    // TfLiteRound is std::round: half away from zero, like Rust's `round`.
    let mut q_fixed = (q * (1i64 << 31) as f64).round() as i64;
    if q_fixed == 1i64 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        shift = 0;
        q_fixed = 0;
    }
    // TFLite requires shifts of at most 30 (larger ones are undefined behaviour there); saturate
    // instead so absurd scales from a file cannot make a shift overflow here.
    if shift > 30 {
        shift = 30;
        q_fixed = (1i64 << 31) - 1;
    }
    (q_fixed as i32, shift)
}

/// `QuantizeMultiplierSmallerThanOneExp`: same as [`quantize_multiplier`] (the exponent is then
/// expected to be <= 0).
pub fn quantize_multiplier_smaller_than_one(real: f64) -> (i32, i32) {
    quantize_multiplier(real)
}

/// `QuantizeMultiplierGreaterThanOne`: the multiplier and a non-negative left shift.
pub fn quantize_multiplier_greater_than_one(real: f64) -> (i32, i32) {
    let (m, s) = quantize_multiplier(real);
    (m, s.max(0))
}

/// `PreprocessSoftmaxScaling`: the multiplier and left shift that bring `beta * scale * diff` to
/// a fixed-point number with `integer_bits` integer bits.
pub fn preprocess_softmax_scaling(beta: f64, input_scale: f64, integer_bits: i32) -> (i32, i32) {
    let max_real = ((1i64 << 31) - 1) as f64;
    let input_beta_real = (beta * input_scale * (1i64 << (31 - integer_bits)) as f64).min(max_real);
    quantize_multiplier_greater_than_one(input_beta_real)
}

/// `CalculateInputRadius`: the largest input magnitude whose rescaled value still fits.
pub fn calculate_input_radius(integer_bits: i32, left_shift: i32, total_signed_bits: i32) -> i32 {
    let max_input_rescaled = 1.0 * ((1i64 << integer_bits) - 1) as f64 * (1i64 << (total_signed_bits - integer_bits)) as f64 / (1i64 << left_shift) as f64;
    max_input_rescaled.floor() as i32
}

/// Number of leading zero bits of a `u32` (32 for zero).
#[inline]
pub fn clz32(x: u32) -> i32 {
    x.leading_zeros() as i32
}

/// A gemmlowp `FixedPoint<int32, INTEGER_BITS>` kept as its raw value; the integer bits are
/// passed where they matter. The helpers below mirror gemmlowp's templates.
pub mod fx {
    use super::{rdbp, srdhm};

    /// `SaturatingRoundingMultiplyByPOT<exponent>` on a raw 32-bit value.
    #[inline(always)]
    pub fn sat_mul_pot(x: i32, exponent: i32) -> i32 {
        if exponent == 0 {
            x
        } else if exponent > 0 {
            let threshold = ((1i64 << (31 - exponent)) - 1) as i32;
            if x > threshold {
                i32::MAX
            } else if x < -threshold {
                i32::MIN
            } else {
                x.wrapping_shl(exponent as u32)
            }
        } else {
            rdbp(x, -exponent)
        }
    }

    /// `Rescale<dst_bits>` from `src_bits`.
    #[inline(always)]
    pub fn rescale(x: i32, src_bits: i32, dst_bits: i32) -> i32 {
        sat_mul_pot(x, src_bits - dst_bits)
    }

    /// `One()` of a format with `bits` integer bits (saturated for 0 integer bits).
    #[inline(always)]
    pub fn one(bits: i32) -> i32 {
        if bits == 0 {
            i32::MAX
        } else {
            1 << (31 - bits)
        }
    }

    /// `RoundingHalfSum` on raw values.
    #[inline(always)]
    pub fn rounding_half_sum(a: i32, b: i32) -> i32 {
        let sum = a as i64 + b as i64;
        let sign: i64 = if sum >= 0 { 1 } else { -1 };
        ((sum + sign) / 2) as i32
    }

    /// exp(x) for x in [-1/4, 0), input and output Q0.31.
    #[inline]
    fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
        let constant_term: i32 = 1895147668;
        let constant_1_over_3 = 715827883;
        let x = a.wrapping_add(1 << 28);
        let x2 = srdhm(x, x);
        let x3 = srdhm(x2, x);
        let x4 = srdhm(x2, x2);
        let x4_over_4 = sat_mul_pot(x4, -2);
        let inner = srdhm(x4_over_4.wrapping_add(x3), constant_1_over_3).wrapping_add(x2);
        let x4_over_24_plus = sat_mul_pot(inner, -1);
        constant_term.wrapping_add(srdhm(constant_term, x.wrapping_add(x4_over_24_plus)))
    }

    /// gemmlowp's `exp_on_negative_values` of a Q(bits).(31-bits) input; result Q0.31.
    pub fn exp_on_negative_values(a: i32, bits: i32) -> i32 {
        let frac = 31 - bits;
        let one_quarter = if bits <= 29 { 1i32 << (frac - 2) } else { 0 };
        let mask = one_quarter.wrapping_sub(1);
        let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
        let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(a_mod_quarter_minus_one_quarter, bits, 0));
        let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
        const BARREL: [(i32, i32); 7] = [
            (-2, 1672461947),
            (-1, 1302514674),
            (0, 790015084),
            (1, 290630308),
            (2, 39332535),
            (3, 720401),
            (4, 242),
        ];
        for (exponent, multiplier) in BARREL {
            if bits > exponent {
                let shift = frac + exponent;
                if remainder & (1i32.wrapping_shl(shift as u32)) != 0 {
                    result = srdhm(result, multiplier);
                }
            }
        }
        if bits > 5 {
            let clamp = -(1i32 << (36 - bits));
            if a < clamp {
                result = 0;
            }
        }
        if a == 0 {
            result = i32::MAX;
        }
        result
    }

    /// 1 / (1 + x) for x in (0, 1), Q0.31 in and out (Newton-Raphson, three steps).
    pub fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
        let half_denominator = rounding_half_sum(a, i32::MAX);
        let c48_17: i32 = 1515870810;
        let cneg32_17 = -1010580540;
        let mut x = c48_17.wrapping_add(srdhm(half_denominator, cneg32_17));
        for _ in 0..3 {
            let hdx = srdhm(half_denominator, x);
            let one_minus = (1i32 << 29).wrapping_sub(hdx);
            x = x.wrapping_add(rescale(srdhm(x, one_minus), 4, 2));
        }
        // ExactMulByPot<-1> turns Q2 into Q1, then Rescale<0>.
        rescale(x, 1, 0)
    }

    /// (1 - x) / (1 + x) for x in (0, 1), Q0.31 in and out.
    pub fn one_minus_x_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
        let half_denominator = rounding_half_sum(a, i32::MAX);
        let c48_17: i32 = 1515870810;
        let cneg32_17 = -1010580540;
        let mut x = c48_17.wrapping_add(srdhm(half_denominator, cneg32_17));
        for _ in 0..3 {
            let hdx = srdhm(half_denominator, x);
            let one_minus = (1i32 << 29).wrapping_sub(hdx);
            x = x.wrapping_add(rescale(srdhm(x, one_minus), 4, 2));
        }
        rescale(x.wrapping_sub(1 << 29), 2, 0)
    }

    /// gemmlowp's `logistic` of a Q(bits) input; result Q0.31.
    pub fn logistic(a: i32, bits: i32) -> i32 {
        if a == 0 {
            return 1 << 30;
        }
        let abs = if a > 0 { a } else { a.wrapping_neg() };
        let pos = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(abs.wrapping_neg(), bits));
        if a > 0 {
            pos
        } else {
            i32::MAX.wrapping_sub(pos)
        }
    }

    /// gemmlowp's `tanh` of a Q(bits) input; result Q0.31.
    pub fn tanh(a: i32, bits: i32) -> i32 {
        if a == 0 {
            return 0;
        }
        let n = if a < 0 { a } else { a.wrapping_neg() };
        // ExactMulByPot<1>: the same raw value read with one more integer bit.
        let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, bits + 1));
        if a < 0 {
            t.wrapping_neg()
        } else {
            t
        }
    }

    /// TFLite's `GetReciprocal`: 1 / x for a Q(bits) `x > 0`, as a Q0.31 value and the number of
    /// bits the true reciprocal exceeds one by.
    pub fn get_reciprocal(x: i32, integer_bits: i32) -> (i32, i32) {
        let headroom_plus_one = super::clz32(x as u32);
        let num_bits_over_unit = integer_bits - headroom_plus_one;
        let shifted_sum_minus_one = ((x as u32) << headroom_plus_one).wrapping_sub(1u32 << 31) as i32;
        (one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit)
    }
}

/// 16-bit gemmlowp fixed point (`FixedPoint<int16, N>`), used by the integer LSTM's gates.
pub mod fx16 {
    use super::{rdbp16, srdhm16};

    /// `SaturatingRoundingMultiplyByPOT<exponent>` on a raw 16-bit value.
    #[inline(always)]
    pub fn sat_mul_pot(x: i16, exponent: i32) -> i16 {
        if exponent == 0 {
            x
        } else if exponent > 0 {
            let threshold = ((1i32 << (15 - exponent)) - 1) as i16;
            if x > threshold {
                i16::MAX
            } else if x < -threshold {
                i16::MIN
            } else {
                x.wrapping_shl(exponent as u32)
            }
        } else {
            rdbp16(x, -exponent)
        }
    }

    fn rescale(x: i16, src: i32, dst: i32) -> i16 {
        sat_mul_pot(x, src - dst)
    }

    fn rounding_half_sum(a: i16, b: i16) -> i16 {
        let sum = a as i32 + b as i32;
        let sign = if sum >= 0 { 1 } else { -1 };
        ((sum + sign) / 2) as i16
    }

    /// Saturating add (gemmlowp's `AddSaturatingIf16Bit` for 16-bit values).
    fn sat_add(a: i16, b: i16) -> i16 {
        (a as i32 + b as i32).clamp(i16::MIN as i32, i16::MAX as i32) as i16
    }

    /// gemmlowp's 16-bit constant: the 32-bit raw value rounding-shifted by 16.
    fn k(raw32: i32) -> i16 {
        super::rdbp(raw32, 16) as i16
    }

    fn exp_on_interval(a: i16) -> i16 {
        let constant_term = k(1895147668);
        let constant_1_over_3 = k(715827883);
        let x = a.wrapping_add(1 << 12);
        let x2 = srdhm16(x, x);
        let x3 = srdhm16(x2, x);
        let x4 = srdhm16(x2, x2);
        let x4_over_4 = sat_mul_pot(x4, -2);
        let inner = srdhm16(x4_over_4.wrapping_add(x3), constant_1_over_3).wrapping_add(x2);
        let x4_over_24_plus = sat_mul_pot(inner, -1);
        sat_add(constant_term, srdhm16(constant_term, x.wrapping_add(x4_over_24_plus)))
    }

    /// `exp_on_negative_values` for a Q(bits).(15-bits) input; result Q0.15.
    pub fn exp_on_negative_values(a: i16, bits: i32) -> i16 {
        let frac = 15 - bits;
        let one_quarter: i16 = if bits <= 13 { 1 << (frac - 2) } else { 0 };
        let mask = one_quarter.wrapping_sub(1);
        let amq = (a & mask).wrapping_sub(one_quarter);
        let mut result = exp_on_interval(rescale(amq, bits, 0));
        let remainder = amq.wrapping_sub(a);
        const BARREL: [(i32, i32); 7] = [
            (-2, 1672461947),
            (-1, 1302514674),
            (0, 790015084),
            (1, 290630308),
            (2, 39332535),
            (3, 720401),
            (4, 242),
        ];
        for (exponent, multiplier) in BARREL {
            if bits > exponent {
                let shift = frac + exponent;
                if (remainder as i32) & (1i32 << shift) != 0 {
                    result = srdhm16(result, k(multiplier));
                }
            }
        }
        if bits > 5 {
            let clamp = k(-(1i32 << (36 - bits).min(31)));
            if a < clamp {
                result = 0;
            }
        }
        if a == 0 {
            result = i16::MAX;
        }
        result
    }

    fn newton(a: i16) -> i16 {
        let half_denominator = rounding_half_sum(a, i16::MAX);
        let c48_17 = k(1515870810);
        let cneg32_17 = k(-1010580540);
        let mut x = c48_17.wrapping_add(srdhm16(half_denominator, cneg32_17));
        for _ in 0..3 {
            let hdx = srdhm16(half_denominator, x);
            let one_minus = (1i16 << 13).wrapping_sub(hdx);
            x = x.wrapping_add(rescale(srdhm16(x, one_minus), 4, 2));
        }
        x
    }

    /// `logistic` of a Q(bits) 16-bit input; Q0.15 result.
    pub fn logistic(a: i16, bits: i32) -> i16 {
        if a == 0 {
            return 1 << 14;
        }
        let abs = if a > 0 { a } else { a.wrapping_neg() };
        let pos = rescale(newton(exp_on_negative_values(abs.wrapping_neg(), bits)), 1, 0);
        if a > 0 {
            pos
        } else {
            i16::MAX.wrapping_sub(pos)
        }
    }

    /// `tanh` of a Q(bits) 16-bit input; Q0.15 result.
    pub fn tanh(a: i16, bits: i32) -> i16 {
        if a == 0 {
            return 0;
        }
        let n = if a < 0 { a } else { a.wrapping_neg() };
        let x = newton(exp_on_negative_values(n, bits + 1));
        let t = rescale(x.wrapping_sub(1 << 13), 2, 0);
        if a < 0 {
            t.wrapping_neg()
        } else {
            t
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_multiplier_matches_known_values() {
        // 0.5 = 2^30 * 2^-31 * 2^0
        assert_eq!(quantize_multiplier(0.5), (1 << 30, 0));
        assert_eq!(quantize_multiplier(1.0), (1 << 30, 1));
        assert_eq!(quantize_multiplier(0.0), (0, 0));
        let (m, s) = quantize_multiplier(0.000_123);
        let back = m as f64 * 2f64.powi(s - 31);
        assert!((back - 0.000_123).abs() < 1e-12);
    }

    #[test]
    fn rounding_divide_rounds_half_away_from_zero() {
        assert_eq!(rdbp(5, 1), 3);
        assert_eq!(rdbp(-5, 1), -3);
        assert_eq!(rdbp(4, 1), 2);
        assert_eq!(rdbp(-6, 2), -2);
        assert_eq!(rdbp(i32::MAX, 31), 1);
    }

    #[test]
    fn fixed_point_functions_track_their_float_twins() {
        for i in 0..200 {
            let x = -(i as f64) * 0.05; // [-10, 0]
            let raw = (x * (1 << 26) as f64) as i32; // Q5.26
            let e = fx::exp_on_negative_values(raw, 5) as f64 / 2f64.powi(31);
            assert!((e - x.exp()).abs() < 1e-6, "exp({x}) = {e}");
            let l = fx::logistic(raw, 5) as f64 / 2f64.powi(31);
            assert!((l - 1.0 / (1.0 + (-x).exp())).abs() < 1e-6);
            let t = fx::tanh(raw, 5) as f64 / 2f64.powi(31);
            assert!((t - x.tanh()).abs() < 1e-6);
            let raw16 = (x.max(-7.9) * (1 << 12) as f64) as i16; // Q3.12
            let l16 = fx16::logistic(raw16, 3) as f64 / 32768.0;
            // 16-bit gemmlowp functions are accurate to a few LSBs (the LSTM golden test checks exactness).
            assert!((l16 - 1.0 / (1.0 + (-(raw16 as f64 / 4096.0)).exp())).abs() < 5e-4);
            let t16 = fx16::tanh(raw16, 3) as f64 / 32768.0;
            assert!((t16 - (raw16 as f64 / 4096.0).tanh()).abs() < 5e-4, "tanh16 {raw16} {t16}");
        }
    }

    #[test]
    fn int64_multiplier_rounds_like_tflite() {
        // 1.0 as (2^30, 1): x * 0.5 * 2 with the reduced 15-bit multiplier.
        assert_eq!(mbqm64(1000, 1 << 30, 1), 1000);
        assert_eq!(mbqm64(-3, 1 << 30, 0), -1); // -1.5 rounds up to -1
    }
}
