//! Quantized SOFTMAX: the 8-bit reference (gemmlowp fixed point: `exp_on_negative_values` on a
//! Q5.26 scaled difference, a Q12.19 sum, its reciprocal) and the int16 one (exp and 1/(1+x)
//! lookup tables with 9-bit index and 7-bit interpolation).

use super::fixedpoint::{calculate_input_radius, fx, mbqm, mbqm_greater_than_one, preprocess_softmax_scaling, quantize_multiplier, rdbp};
use super::activation::lut16;
use super::QInt;

const SCALED_DIFF_INTEGER_BITS: i32 = 5;
const ACCUMULATION_INTEGER_BITS: i32 = 12;

/// Prepared 8-bit softmax (uint8 or int8 input, uint8/int8/int16 output).
#[derive(Clone, Copy, Debug)]
pub struct Softmax8 {
    input_multiplier: i32,
    input_left_shift: i32,
    diff_min: i32,
    /// `exp(scaled(−d))` for `d` in 0..256: every difference `x − max` an 8-bit row can have.
    exp_table: [i32; 256],
}

impl Softmax8 {
    /// TFLite's reference Prepare for `beta` and the input scale.
    pub fn new(beta: f32, input_scale: f32) -> Softmax8 {
        let (input_multiplier, input_left_shift) = preprocess_softmax_scaling(beta as f64, input_scale as f64, SCALED_DIFF_INTEGER_BITS);
        let diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, input_left_shift, 31);
        let exp_table = std::array::from_fn(|d| exp_of_diff(-(d as i32), input_multiplier, input_left_shift));
        Softmax8 {
            input_multiplier,
            input_left_shift,
            diff_min,
            exp_table,
        }
    }

    /// Softmax over rows of `depth` values.
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], depth: usize, out: &mut [TO]) {
        let out_bits = (std::mem::size_of::<TO>() * 8) as i32;
        // `exp(scaled(x - max))` depends only on `x - max`, which for 8-bit inputs is one of the
        // 256 differences tabulated at prepare.
        let exp = |diff: i32| {
            if std::mem::size_of::<TI>() == 1 {
                self.exp_table[(-diff) as usize]
            } else {
                exp_of_diff(diff, self.input_multiplier, self.input_left_shift)
            }
        };
        if depth == 0 {
            return;
        }
        let rows = (input.len() / depth).min(out.len() / depth);
        let (input, out) = (&input[..rows * depth], &mut out[..rows * depth]);
        // Rows are independent: split across the kernel pool when there is enough of them.
        match crate::kernels::binary::par_chunk(rows, depth) {
            Some(c) => nnrt_threads::par_chunks_mut(out, c * depth, |i, o| self.rows(&input[i * c * depth..i * c * depth + o.len()], depth, o, &exp, out_bits)),
            None => self.rows(input, depth, out, &exp, out_bits),
        }
    }

    /// [`Softmax8::run`] on whole rows, on the calling thread.
    fn rows<TI: QInt, TO: QInt>(&self, input: &[TI], depth: usize, out: &mut [TO], exp: &(impl Fn(i32) -> i32 + Sync), out_bits: i32) {
        for (row, orow) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
            let max = row.iter().map(|v| v.get()).max().unwrap_or(0).max(TI::MIN);
            let mut sum_of_exps: i32 = 0;
            for v in row {
                let diff = v.get() - max;
                if diff >= self.diff_min {
                    let e = exp(diff);
                    sum_of_exps = sum_of_exps.wrapping_add(fx::rescale(e, 0, ACCUMULATION_INTEGER_BITS));
                }
            }
            let (shifted_scale, num_bits_over_unit) = fx::get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS);
            let exponent = num_bits_over_unit + 31 - out_bits;
            for (o, v) in orow.iter_mut().zip(row) {
                let diff = v.get() - max;
                *o = if diff >= self.diff_min {
                    let e = exp(diff);
                    let unsat = rdbp(super::fixedpoint::srdhm(shifted_scale, e), exponent.clamp(0, 31));
                    TO::sat(unsat + TO::MIN)
                } else {
                    TO::put(TO::MIN)
                };
            }
        }
    }
}

/// The 8-bit softmax's fixed-point `exp` of a (non-positive) input difference.
fn exp_of_diff(diff: i32, input_multiplier: i32, input_left_shift: i32) -> i32 {
    fx::exp_on_negative_values(mbqm_greater_than_one(diff, input_multiplier, input_left_shift), SCALED_DIFF_INTEGER_BITS)
}

/// TFLite's `LUTLookup` for int16: 9-bit index, 7-bit linear interpolation.
#[inline]
pub fn lut16_lookup(value: i16, lut: &[i16]) -> i16 {
    let index = (256 + (value >> 7) as i32) as usize;
    let offset = (value & 0x7f) as i32;
    let base = lut[index] as i32;
    let slope = lut[index + 1] as i32 - lut[index] as i32;
    let delta = (slope * offset + 64) >> 7;
    (base + delta) as i16
}

/// Prepared int16 softmax.
#[derive(Clone, Debug)]
pub struct Softmax16 {
    exp_lut: Vec<i16>,
    recip_lut: Vec<i16>,
    multiplier: i32,
    shift: i32,
}

impl Softmax16 {
    /// TFLite's Prepare for int16 input and output.
    pub fn new(beta: f32, input_scale: f32) -> Softmax16 {
        let range = (i16::MAX as i32 - i16::MIN as i32) as f64;
        let exp_lut = lut16::<f64>(10.0 / range, i16::MAX as i32, 2.0 / range, 0, f64::exp);
        let recip_lut = lut16::<f64>(1.0 / range, i16::MIN as i32, 2.0 / range, 0, |x| 1.0 / (1.0 + x));
        let real = (input_scale * beta) as f64 / (10.0 / 65535.0);
        let (multiplier, shift) = quantize_multiplier(real);
        Softmax16 {
            exp_lut,
            recip_lut,
            multiplier,
            shift,
        }
    }

    /// Softmax over rows of `depth` values.
    pub fn run(&self, input: &[i16], depth: usize, out: &mut [i16]) {
        for (row, orow) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
            let max = row.iter().copied().max().unwrap_or(i16::MIN) as i32;
            let mut sum: i32 = 0;
            for (o, &v) in orow.iter_mut().zip(row) {
                let scaled = mbqm(v as i32 - max, self.multiplier, self.shift);
                let sym = (scaled + 32767).clamp(-32768, 32767) as i16;
                *o = lut16_lookup(sym, &self.exp_lut);
                sum = sum.wrapping_add(*o as i32);
            }
            let headroom_plus_one = (sum as u32).leading_zeros() as i32;
            let shifted_sum = ((((sum as i64) << (headroom_plus_one - 1)) + (1 << 13)) >> 14) as i32;
            let sym_shifted_sum = shifted_sum + (-((1 << 15) + (1 << 16)));
            let sat = sym_shifted_sum.clamp(-32768, 32767) as i16;
            let recip = lut16_lookup(sat, &self.recip_lut) as i64;
            let right_shift = 31 - headroom_plus_one;
            let round = 1i64 << (right_shift - 1);
            for o in orow.iter_mut() {
                let r = ((*o as i64 * recip + round) >> right_shift) as i32;
                *o = r.clamp(0, 32767) as i16;
            }
        }
    }
}
