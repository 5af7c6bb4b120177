//! Quantized LOG_SOFTMAX (uint8 and int8) as TFLite's reference kernels compute it
//! (`reference_ops::LogSoftmax` for uint8, `reference_integer_ops::LogSoftmax` for int8, prepared
//! by `LogSoftmaxPrepare` with beta 1): differences to the row maximum are scaled to Q5.26, their
//! exponentials summed in Q12.19, the log of the sum taken with gemmlowp-style fixed point
//! (`log_x_for_x_greater_than_or_equal_to_1`) and subtracted; the output has scale 16/256 and
//! its largest value at zero.

use super::fixedpoint::{
    calculate_input_radius, clz32, fx, mbqm, mbqm_smaller_than_one, preprocess_softmax_scaling, quantize_multiplier_smaller_than_one, rdbp, srdhm,
};
use super::QInt;

const SCALED_DIFF_INTEGER_BITS: i32 = 5;
const ACCUMULATION_INTEGER_BITS: i32 = 12;
const OUTPUT_INTEGER_BITS: i32 = 4;

/// `a + b` saturated to `i32`.
fn saturating_add(a: i32, b: i32) -> i32 {
    a.saturating_add(b)
}

/// log(x) for a Q`in_bits` value `x >= 1`, as a Q`out_bits` value: TFLite's
/// `log_x_for_x_greater_than_or_equal_to_1_impl`. The input is normalized to `r · 2^z` with `r`
/// in `[sqrt(1/2), 1)` two ways (with and without a `sqrt(1/2)` premultiplication) and the closer
/// one kept; `log(r)` comes from a rational approximation around `sqrt(sqrt(1/2))`, and
/// `z · log 2` is added with one extra integer bit of headroom.
pub fn log_x_ge_1(x: i32, in_bits: i32, out_bits: i32) -> i32 {
    // Q0.31 constants (gemmlowp's checked fixed-point constants).
    const LOG_2: i32 = 1488522236; // log(2)
    const SQRT_SQRT_HALF: i32 = 1805811301; // sqrt(sqrt(1/2))
    const SQRT_HALF: i32 = 1518500250; // sqrt(1/2)
    const ONE_QUARTER: i32 = 536870912;
    const ALPHA_N: i32 = 117049297; // 11/240 · 2^(1/4)
    const ALPHA_D: i32 = 127690142; // 1/20 · 2^(1/4)
    const ALPHA_I: i32 = 1057819769; // 2 / 2^(1/4) − 2^(1/4)
    const ALPHA_F: i32 = 638450708; // 1/4 · 2^(1/4)
    let accum_bits = out_bits + 1;
    let shifted_quarter = fx::rescale(ONE_QUARTER, 0, accum_bits);

    let z_a_headroom_plus_1 = clz32(x as u32);
    let r_a_tmp = fx::sat_mul_pot(x, z_a_headroom_plus_1 - 1);
    let r_a = fx::sat_mul_pot(srdhm(r_a_tmp, SQRT_HALF), 1);
    let z_a_pow_2_adj = saturating_add(fx::sat_mul_pot(in_bits - z_a_headroom_plus_1, 31 - accum_bits), shifted_quarter);

    let z_b = srdhm(x, SQRT_HALF);
    let z_b_headroom = clz32(z_b as u32) - 1;
    let r_b = fx::sat_mul_pot(x, z_b_headroom);
    let z_b_pow_2_adj = fx::sat_mul_pot(in_bits - z_b_headroom, 31 - accum_bits).saturating_sub(shifted_quarter);

    let r = r_a.min(r_b);
    let z_pow_2_adj = z_a_pow_2_adj.max(z_b_pow_2_adj);

    let p = fx::rounding_half_sum(r, SQRT_SQRT_HALF);
    let q = r.wrapping_sub(SQRT_SQRT_HALF);
    let q = q.wrapping_add(q);
    let common_sq = srdhm(q, q);
    let num = srdhm(q, r).wrapping_add(srdhm(srdhm(q, common_sq), ALPHA_N));
    let denom_minus_one = srdhm(p, ALPHA_I.wrapping_add(q).wrapping_add(srdhm(ALPHA_D, common_sq))).wrapping_add(srdhm(ALPHA_F, q));
    let recip_denom = fx::one_over_one_plus_x_for_x_in_0_1(denom_minus_one);
    let num_scaled = fx::rescale(num, 0, accum_bits);
    fx::rescale(srdhm(z_pow_2_adj, LOG_2).wrapping_add(srdhm(num_scaled, recip_denom)), accum_bits, out_bits)
}

/// Prepared quantized LOG_SOFTMAX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSoftmaxQ {
    input_multiplier: i32,
    input_left_shift: i32,
    reverse_multiplier: i32,
    reverse_shift: i32,
    diff_min: i32,
}

impl LogSoftmaxQ {
    /// `LogSoftmaxPrepare` (reference kernel) for the input scale.
    pub fn new(input_scale: f32) -> LogSoftmaxQ {
        let (input_multiplier, input_left_shift) = preprocess_softmax_scaling(1.0, input_scale as f64, SCALED_DIFF_INTEGER_BITS);
        // `PreprocessLogSoftmaxScalingExp`: the reverse of the input scaling, from an `int`
        // `1 << (31 - left_shift)` (which wraps to INT_MIN for a zero shift, as in C++).
        let numerator = 1i32.wrapping_shl((31 - input_left_shift) as u32) as f64;
        let (reverse_multiplier, reverse_shift) = quantize_multiplier_smaller_than_one(numerator / input_multiplier as f64);
        let diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, input_left_shift, 31);
        LogSoftmaxQ { input_multiplier, input_left_shift, reverse_multiplier, reverse_shift, diff_min }
    }

    /// Log-softmax over rows of `depth` values; the output's zero point is `T::MAX` (255 or 127).
    pub fn run<T: QInt>(&self, input: &[T], depth: usize, out: &mut [T]) {
        for (row, orow) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
            let max = row.iter().map(|v| v.get()).fold(T::MIN, i32::max);
            let mut sum = 0i32;
            for v in row {
                let diff = v.get() - max;
                if diff >= self.diff_min {
                    let scaled = mbqm(diff, self.input_multiplier, self.input_left_shift);
                    let e = fx::exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS);
                    sum = sum.wrapping_add(fx::rescale(e, 0, ACCUMULATION_INTEGER_BITS));
                }
            }
            let log_sum = log_x_ge_1(sum, ACCUMULATION_INTEGER_BITS, SCALED_DIFF_INTEGER_BITS);
            // Differences whose scaled value minus the log would leave Q5.26 give the minimum.
            let shifted_log_sum = log_sum.wrapping_add(i32::MIN);
            let adjusted_diff_min = (self.diff_min - 1).max(mbqm_smaller_than_one(shifted_log_sum, self.reverse_multiplier, self.reverse_shift));
            for (o, v) in orow.iter_mut().zip(row) {
                let diff = v.get() - max;
                *o = if diff > adjusted_diff_min {
                    let scaled = mbqm(diff, self.input_multiplier, self.input_left_shift);
                    let r = rdbp(scaled.wrapping_sub(log_sum), 31 - SCALED_DIFF_INTEGER_BITS - OUTPUT_INTEGER_BITS);
                    T::sat(r + T::MAX)
                } else {
                    T::put(T::MIN)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_matches_the_real_log() {
        // Q12.19 inputs from 1 to 4000; output Q5.26.
        for i in (1..4000).step_by(3) {
            for frac in [0.0, 0.25, 0.6] {
                let real = i as f64 + frac;
                let x = (real * (1u64 << 19) as f64) as i32;
                let got = log_x_ge_1(x, 12, 5) as f64 / (1u64 << 26) as f64;
                assert!((got - real.ln()).abs() < 1e-6 * 64.0, "log({real}) = {got}");
            }
        }
    }

    #[test]
    fn rows_follow_the_real_log_softmax() {
        let scale = 0.1f32;
        let q = LogSoftmaxQ::new(scale);
        let input: Vec<i8> = (0..40).map(|i| (i * 7 % 61 - 30) as i8).collect();
        let mut out = vec![0i8; 40];
        q.run(&input, 20, &mut out);
        for (row, orow) in input.chunks(20).zip(out.chunks(20)) {
            let xs: Vec<f64> = row.iter().map(|&v| v as f64 * scale as f64).collect();
            let m = xs.iter().cloned().fold(f64::MIN, f64::max);
            let lse = xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln() + m;
            for (x, &o) in xs.iter().zip(orow) {
                let want = ((x - lse) / 0.0625 + 127.0).round().clamp(-128.0, 127.0);
                assert!((o as f64 - want).abs() <= 1.0, "log_softmax({x}) = {o}, want {want}");
            }
        }
    }
}
