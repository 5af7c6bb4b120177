//! Quantized LOGISTIC, TANH (8-bit: a 256-entry table built like TFLite's `LUTPopulate`) and
//! HARD_SWISH (TFLite's 16-bit fixed-point reference).

use super::fixedpoint::{quantize_multiplier, rdbp16, srdhm16};
use super::{QInt, QParams};

/// A 256-entry lookup table indexed by the raw input byte.
#[derive(Clone, Debug)]
pub struct Lut8(pub [u8; 256]);

impl Lut8 {
    /// TFLite's `LUTPopulateInt8`: dequantize in float, apply `f`, requantize with
    /// `round(y * (1 / out_scale)) + zero_point`, clamp.
    pub fn new<T: QInt>(input: QParams, output: QParams, f: impl Fn(f32) -> f32) -> Lut8 {
        let mut lut = [0u8; 256];
        let inverse_scale = 1.0f32 / output.scale;
        for v in T::MIN..=T::MAX {
            let dequantized = input.scale * (v - input.zero_point) as f32;
            let transformed = f(dequantized);
            let rescaled = (transformed * inverse_scale).round();
            let q = (rescaled + output.zero_point as f32) as i32;
            lut[(v as u8) as usize] = T::sat(q).get() as u8;
        }
        Lut8(lut)
    }

    /// Logistic: `1 / (1 + exp(-x))` in float, as TFLite's table.
    pub fn logistic<T: QInt>(input: QParams, output: QParams) -> Lut8 {
        Lut8::new::<T>(input, output, |x| 1.0 / (1.0 + (-x).exp()))
    }

    /// Tanh in float, as TFLite's table.
    pub fn tanh<T: QInt>(input: QParams, output: QParams) -> Lut8 {
        Lut8::new::<T>(input, output, |x| x.tanh())
    }

    /// Maps every byte of `input` through the table.
    pub fn run(&self, input: &[u8], out: &mut [u8]) {
        for (o, &x) in out.iter_mut().zip(input) {
            *o = self.0[x as usize];
        }
    }
}

/// The float type an int16 table is computed in: TFLite's `LUTPopulateInt16<FloatT>` runs in
/// `double` for softmax's tables and in `float` for the element-wise ops' (`LUTPopulate`).
pub trait LutFloat: Copy + PartialOrd + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> {
    /// The value of an integer.
    fn of(v: i32) -> Self;
    /// Rounds half away from zero (`TfLiteRound`).
    fn round_away(self) -> Self;
    /// Truncates to int16 (the caller has clamped).
    fn to_i16(self) -> i16;
}

macro_rules! lut_float {
    ($t:ty) => {
        impl LutFloat for $t {
            fn of(v: i32) -> Self {
                v as $t
            }
            fn round_away(self) -> Self {
                self.round()
            }
            fn to_i16(self) -> i16 {
                self as i16
            }
        }
    };
}
lut_float!(f32);
lut_float!(f64);

/// A 513-entry int16 table (TFLite's `LUTPopulateInt16<F>`): 512 steps over the input range,
/// each sample biased by half the interpolation error at its step's midpoint.
pub fn lut16<F: LutFloat>(input_scale: F, input_zp: i32, output_scale: F, output_zp: i32, f: impl Fn(F) -> F) -> Vec<i16> {
    let (lo, hi) = (i16::MIN as i32, i16::MAX as i32);
    let input_min = input_scale * F::of(lo - input_zp);
    let input_max = input_scale * F::of(hi - input_zp);
    let output_min = output_scale * F::of(lo - output_zp);
    let output_max = output_scale * F::of(hi - output_zp);
    let nb_steps = 512;
    let step = (input_max - input_min) / F::of(nb_steps);
    let half_step = step / F::of(2);
    let output_scaling_inv = F::of(65536) / (output_max - output_min);
    let (table_min, table_max) = (F::of(lo), F::of(hi));
    let clamp = |v: F| if v < table_min { table_min } else if v > table_max { table_max } else { v };
    let mut lut = vec![0i16; nb_steps as usize + 1];
    for (i, slot) in lut.iter_mut().take(nb_steps as usize).enumerate() {
        let i = i as i32;
        let val = f(input_min + F::of(i) * step);
        let val_midpoint = f(input_min + F::of(i) * step + half_step);
        let val_next = f(input_min + F::of(i + 1) * step);
        let sample_val = (val * output_scaling_inv).round_away();
        let midpoint_interp_val = ((val_next * output_scaling_inv + (val * output_scaling_inv).round_away()) / F::of(2)).round_away();
        let midpoint_val = (val_midpoint * output_scaling_inv).round_away();
        let midpoint_err = midpoint_interp_val - midpoint_val;
        let bias = (midpoint_err / F::of(2)).round_away();
        *slot = clamp(sample_val - bias).to_i16();
    }
    lut[nb_steps as usize] = clamp((f(input_max) * output_scaling_inv).round_away()).to_i16();
    lut
}

/// Prepared quantized HARD_SWISH.
#[derive(Clone, Copy, Debug)]
pub struct HardSwishQ {
    in_zp: i32,
    out_zp: i32,
    out_mult16: i16,
    out_exp: i32,
    relu_mult16: i16,
    relu_exp: i32,
}

fn downscale_to_i16(m: i32) -> i16 {
    if m >= i32::MAX - (1 << 15) {
        i16::MAX
    } else {
        ((m + (1 << 15)) >> 16) as i16
    }
}

fn saturating_left_shift(v: i16, amount: i32) -> i16 {
    (v as i64 * (1i64 << amount)).clamp(i16::MIN as i64, i16::MAX as i64) as i16
}

fn saturating_doubling_high_mul(a: i16, b: i16) -> i16 {
    if a == b && a == i16::MIN {
        return i16::MAX;
    }
    ((a as i32 * b as i32) / (1 << 15)) as i16
}

impl HardSwishQ {
    /// TFLite's `HardSwishPrepare` (multipliers computed in float, then narrowed to 16 bits).
    pub fn new(input: QParams, output: QParams) -> HardSwishQ {
        let hires_input_scale = (1.0f32 / 128.0) * input.scale;
        let reluish_scale = 3.0f32 / 32768.0;
        let (om, out_exp) = quantize_multiplier((hires_input_scale / output.scale) as f64);
        let (rm, relu_exp) = quantize_multiplier((hires_input_scale / reluish_scale) as f64);
        HardSwishQ {
            in_zp: input.zero_point,
            out_zp: output.zero_point,
            out_mult16: downscale_to_i16(om),
            out_exp,
            relu_mult16: downscale_to_i16(rm),
            relu_exp,
        }
    }

    /// One value.
    pub fn apply<T: QInt>(&self, x: T) -> T {
        let input_value = (x.get() - self.in_zp) as i16;
        let hires = input_value.wrapping_mul(1 << 7);
        let preshift_out = srdhm16(hires, self.out_mult16);
        let mut reluish = hires;
        if self.relu_exp > 0 {
            reluish = saturating_left_shift(reluish, self.relu_exp - 1);
        }
        reluish = srdhm16(reluish, self.relu_mult16);
        if self.relu_exp > 0 {
            reluish = saturating_left_shift(reluish, 1);
        }
        if self.relu_exp < 0 {
            reluish = rdbp16(reluish, -self.relu_exp);
        }
        let reluish = ((reluish as i32 + (1 << 15)) >> 1) as i16;
        let preshift_output = saturating_doubling_high_mul(reluish, preshift_out);
        let out = rdbp16(preshift_output, -self.out_exp).wrapping_add(self.out_zp as i16);
        T::sat(out as i32)
    }
}

/// Prepared quantized RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 (TFLite's `ReluX`): rescale by
/// `in_scale / out_scale`, then clamp to the activation's bounds in the output domain.
#[derive(Clone, Copy, Debug)]
pub struct ReluQ {
    mult: (i32, i32),
    in_zp: i32,
    out_zp: i32,
    lo: i32,
    hi: i32,
}

impl ReluQ {
    /// `bounds` are the real clamp (`f32::INFINITY` for none above); `T` the integer type.
    pub fn new<T: QInt>(input: QParams, output: QParams, bounds: (f32, f32)) -> ReluQ {
        let q = |f: f32| output.zero_point.saturating_add((f / output.scale).round() as i32);
        let lo = T::MIN.max(q(bounds.0));
        let hi = if bounds.1 == f32::INFINITY { T::MAX } else { T::MAX.min(q(bounds.1)) };
        ReluQ { mult: quantize_multiplier((input.scale / output.scale) as f64), in_zp: input.zero_point, out_zp: output.zero_point, lo: lo.min(hi), hi }
    }

    /// One value.
    #[inline]
    pub fn apply<T: QInt>(&self, x: T) -> T {
        let v = self.out_zp.wrapping_add(super::fixedpoint::mbqm(x.get() - self.in_zp, self.mult.0, self.mult.1));
        T::put(v.clamp(self.lo, self.hi))
    }
}

/// Prepared quantized LEAKY_RELU (`QuantizeLeakyRelu`): identity and alpha multipliers.
#[derive(Clone, Copy, Debug)]
pub struct LeakyReluQ {
    identity: (i32, i32),
    alpha: (i32, i32),
    negative_alpha: bool,
    in_zp: i32,
    out_zp: i32,
}

impl LeakyReluQ {
    /// Multipliers computed in float as TFLite's Prepare does.
    pub fn new(input: QParams, output: QParams, alpha: f32) -> LeakyReluQ {
        let (am, ashift) = quantize_multiplier((input.scale * alpha / output.scale) as f64);
        LeakyReluQ {
            identity: quantize_multiplier((input.scale / output.scale) as f64),
            alpha: (am.wrapping_abs(), ashift),
            negative_alpha: am < 0,
            in_zp: input.zero_point,
            out_zp: output.zero_point,
        }
    }

    /// One value.
    #[inline]
    pub fn apply<T: QInt>(&self, x: T) -> T {
        let v = x.get() - self.in_zp;
        let mut out = self.out_zp;
        if v >= 0 {
            out = out.wrapping_add(super::fixedpoint::mbqm(v, self.identity.0, self.identity.1));
        } else {
            let a = super::fixedpoint::mbqm(v, self.alpha.0, self.alpha.1);
            out = out.wrapping_add(if self.negative_alpha { a.wrapping_neg() } else { a });
        }
        T::sat(out)
    }
}

/// Prepared quantized PRELU (TFLite's `reference_ops::Prelu` / `BroadcastPrelu4DSlow`):
/// non-negative inputs are rescaled by `in_scale / out_scale`, negative ones multiplied by the
/// offset alpha and rescaled by `in_scale · alpha_scale / out_scale` (both products and
/// quotients in float, as `PreluPrepare` computes them).
#[derive(Clone, Copy, Debug)]
pub struct PreluQ {
    identity: (i32, i32),
    alpha: (i32, i32),
    in_zp: i32,
    alpha_zp: i32,
    out_zp: i32,
}

impl PreluQ {
    /// Multipliers from the three quantizations.
    pub fn new(input: QParams, alpha: QParams, output: QParams) -> PreluQ {
        PreluQ {
            identity: quantize_multiplier((input.scale / output.scale) as f64),
            alpha: quantize_multiplier((input.scale * alpha.scale / output.scale) as f64),
            in_zp: input.zero_point,
            alpha_zp: alpha.zero_point,
            out_zp: output.zero_point,
        }
    }

    /// One value of type `T` with its alpha of type `A` (int16 inputs take int8 alphas).
    #[inline]
    pub fn apply<T: QInt, A: QInt>(&self, x: T, a: A) -> T {
        let v = x.get() - self.in_zp;
        let scaled = if v >= 0 {
            super::fixedpoint::mbqm(v, self.identity.0, self.identity.1)
        } else {
            super::fixedpoint::mbqm(v.wrapping_mul(a.get() - self.alpha_zp), self.alpha.0, self.alpha.1)
        };
        T::sat(scaled.wrapping_add(self.out_zp))
    }
}
