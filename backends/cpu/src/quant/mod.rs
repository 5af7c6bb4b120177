//! Integer kernels with TFLite's exact numerics: every quantized op computes the same integers
//! as TFLite's reference kernels (`tensorflow/lite/kernels/internal/reference/…`), rule for rule.
//!
//! `fixedpoint` holds the arithmetic (Q31 multipliers, gemmlowp fixed point); the other files are
//! one op family each. Each optimized kernel (`gemm`, `depthwise`) has a plain reference twin in
//! `reference` that transcribes TFLite's loops, and property tests compare them bit for bit.
#![forbid(unsafe_code)]

pub mod activation;
pub mod binary;
pub mod conv;
pub mod depthwise;
pub mod dynamic;
pub mod fixedpoint;
pub mod gemm;
pub mod hybrid;
pub mod log_softmax;
pub mod lstm;
pub mod matmul;
pub mod misc;
pub mod reference;
pub mod requant;
pub mod sigmoid16;
pub mod softmax;
pub mod tosa;
pub mod unary;

use nnrt_core::Activation;

/// The integer element types of quantized tensors, widened to `i32` for arithmetic.
pub trait QInt: Copy + Send + Sync + bytemuck::Pod + Default + 'static {
    /// Smallest value.
    const MIN: i32;
    /// Largest value.
    const MAX: i32;
    /// Widens to `i32`.
    fn get(self) -> i32;
    /// Narrows an `i32` already clamped to `MIN..=MAX`.
    fn put(v: i32) -> Self;
    /// Clamps to `MIN..=MAX` and narrows.
    #[inline(always)]
    fn sat(v: i32) -> Self {
        Self::put(v.clamp(Self::MIN, Self::MAX))
    }
}

macro_rules! qint {
    ($t:ty) => {
        impl QInt for $t {
            const MIN: i32 = <$t>::MIN as i32;
            const MAX: i32 = <$t>::MAX as i32;
            #[inline(always)]
            fn get(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn put(v: i32) -> Self {
                v as $t
            }
        }
    };
}
qint!(u8);
qint!(i8);
qint!(i16);
qint!(i32);

/// Scale and zero point of a per-tensor quantized operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QParams {
    /// Real value of one step.
    pub scale: f32,
    /// Integer that represents real zero.
    pub zero_point: i32,
}

/// TFLite's `CalculateActivationRangeQuantized`: the clamp of a fused activation in the output's
/// integer domain (`zero_point + round(bound / scale)`, computed in float as TFLite does),
/// intersected with `qmin..=qmax`. TANH and SIGN_BIT clamp nothing (TFLite ignores them here).
pub fn activation_range(act: Activation, out: QParams, qmin: i32, qmax: i32) -> (i32, i32) {
    let q = |f: f32| out.zero_point.saturating_add((f / out.scale).round() as i32);
    let (lo, hi) = match act {
        Activation::Relu => (qmin.max(q(0.0)), qmax),
        Activation::Relu6 => (qmin.max(q(0.0)), qmax.min(q(6.0))),
        Activation::ReluN1To1 => (qmin.max(q(-1.0)), qmax.min(q(1.0))),
        _ => (qmin, qmax),
    };
    // Parameters are checked at prepare; keep the clamp well-formed whatever they are.
    (lo.min(hi), hi)
}

/// How an integer accumulator becomes an output value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Requant {
    /// `MultiplyByQuantizedMultiplier(acc, multiplier, shift)` (conv, depthwise, most ops).
    Fixed {
        /// Q31 significand.
        multiplier: i32,
        /// Exponent (positive: left).
        shift: i32,
    },
    /// `round(double(acc) * scale)` (TFLite's reference FULLY_CONNECTED requantizes in double).
    Float(f64),
    /// `rint(float(acc) * scale)`, half to even, in single precision: XNNPACK's fp32
    /// requantization (ExecuTorch's int8 convolutions and fully connected layers).
    Single(f32),
    /// TOSA's `apply_scale_32(acc, multiplier, shift, double_round)`: one 64-bit multiply and
    /// one rounding right shift (a TOSA CONV2D / DEPTHWISE_CONV2D with the RESCALE after it,
    /// fused). The result saturates to int32 (the specification requires it to fit).
    Tosa {
        /// 32-bit multiplier.
        multiplier: i32,
        /// Right shift, 2..=62.
        shift: u32,
        /// DOUBLE_ROUND: with a shift over 31, round once more at bit 30.
        double_round: bool,
    },
}

impl Requant {
    /// The `(multiplier, shift)` of every one of `rs`, when all are [`Requant::Fixed`].
    pub fn fixed_pairs(rs: &[Requant]) -> Option<Vec<(i32, i32)>> {
        rs.iter().map(|r| if let Requant::Fixed { multiplier, shift } = *r { Some((multiplier, shift)) } else { None }).collect()
    }

    /// A fixed-point requantization of `real`.
    pub fn fixed(real: f64) -> Requant {
        let (multiplier, shift) = fixedpoint::quantize_multiplier(real);
        Requant::Fixed { multiplier, shift }
    }

    /// Applies it to a 32-bit accumulator.
    #[inline(always)]
    pub fn apply(self, acc: i32) -> i32 {
        match self {
            Requant::Fixed { multiplier, shift } => fixedpoint::mbqm(acc, multiplier, shift),
            Requant::Float(s) => round_to_i32(acc as f64 * s),
            Requant::Single(s) => rint_to_i32(acc as f32 * s),
            Requant::Tosa { multiplier, shift, double_round } => tosa::apply_scale_32_i32(acc, multiplier, shift, double_round),
        }
    }

    /// Applies it to a 64-bit accumulator (16x8 kernels).
    #[inline(always)]
    pub fn apply64(self, acc: i64) -> i32 {
        match self {
            Requant::Fixed { multiplier, shift } => fixedpoint::mbqm64(acc, multiplier, shift),
            Requant::Float(s) => round_to_i32(acc as f64 * s),
            Requant::Single(s) => rint_to_i32(acc as f32 * s),
            Requant::Tosa { multiplier, shift, double_round } => tosa::apply_scale_32(acc, multiplier, shift, double_round) as i32,
        }
    }
}

/// `lrintf(x)` (round half to even), held within ±2^30 so that adding a zero point cannot wrap
/// before the output range clamps it.
#[inline(always)]
pub fn rint_to_i32(x: f32) -> i32 {
    x.clamp(-1_073_741_824.0, 1_073_741_824.0).round_ties_even() as i32
}

/// C's `static_cast<int32_t>(round(x))` for values in range (saturating outside it).
#[inline(always)]
pub fn round_to_i32(x: f64) -> i32 {
    x.round() as i32
}

#[cfg(test)]
mod tests;
