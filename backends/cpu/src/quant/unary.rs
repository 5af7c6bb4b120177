//! Quantized ABS, SQRT, RSQRT, LOG, EXP, GELU and ELU as TFLite computes them (`elementwise.cc`,
//! `exp.cc`, `gelu.cc`, `elu.cc`): RSQRT int8 in fixed point (gemmlowp's inverse square root),
//! ABS by a requantizing multiplier, SQRT through float with truncation, the others by tables
//! built in float (`LUTPopulate`: 256 entries for 8 bits, 513 interpolated for int16).

use nnrt_core::{DType, UnaryOp};

use super::activation::{lut16, Lut8};
use super::fixedpoint::{clz32, fx, mbqm, quantize_multiplier, srdhm};
use super::softmax::lut16_lookup;
use super::QParams;
use crate::kernels::unary::{reference_value, UnaryOp as U};

/// A prepared quantized unary op.
#[derive(Clone, Debug)]
pub enum QUnary {
    /// An 8-bit table by input byte; `invalid_below`: inputs under this value are refused
    /// (RSQRT and SQRT of a negative number), as TFLite's Eval fails on them.
    Table8 { lut: Lut8, invalid_below: Option<i32> },
    /// An int16 table with interpolation (`LUTLookup`).
    Table16 { lut: Vec<i16>, invalid_below: Option<i32> },
    /// ABS: `|x - zp_in|`, requantized when the scales differ; `wide`: int16 values.
    Abs { in_zp: i32, out_zp: i32, rescale: Option<(i32, i32)>, min: i32, max: i32, wide: bool },
    /// int16 SQRT, in float per element.
    Sqrt16 { in_q: QParams, out_q: QParams },
}

/// Which ops (and input types) have a quantized kernel here.
pub fn supported(op: UnaryOp, t: DType) -> bool {
    match op {
        UnaryOp::Abs | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Log | UnaryOp::Exp => matches!(t, DType::I8 | DType::I16),
        UnaryOp::Gelu { .. } => matches!(t, DType::U8 | DType::I8 | DType::I16),
        UnaryOp::Elu => t == DType::I8,
        _ => false,
    }
}

/// TFLite's `GetInvSqrtQuantizedMultiplierExp(input, kReverseShift = -1)`: 1/√input as a
/// multiplier and a (left) shift, by five Newton steps in gemmlowp's Q3.28.
pub fn inv_sqrt_multiplier(input: i32) -> (i32, i32) {
    if input <= 1 {
        return (i32::MAX, 0);
    }
    let mut input = input;
    let mut shift = 11;
    while input >= 1 << 29 {
        input /= 4;
        shift += 1;
    }
    let max_left_shift_bits = clz32(input as u32) - 1;
    let left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
    shift -= left_shift_bit_pairs;
    input <<= 2 * left_shift_bit_pairs;
    // Q3.28 values: raw · 2^-28.
    let x_in = input >> 1;
    let half_input = fx::sat_mul_pot(x_in, -1);
    let half_three = (1 << 28) + (1 << 27);
    let mut x = fx::one(3);
    for _ in 0..5 {
        // x·x·x is Q9.22, rescaled to Q3.28; the products with x are Q6.25, rescaled too.
        let x3 = fx::rescale(srdhm(srdhm(x, x), x), 9, 3);
        x = fx::rescale(srdhm(half_three, x).wrapping_sub(srdhm(half_input, x3)), 6, 3);
    }
    let mut raw = srdhm(x, 1_518_500_250); // √2/2 in Q0.31
    if shift < 0 {
        raw <<= -shift;
        shift = 0;
    }
    (raw, -shift)
}

impl QUnary {
    /// TFLite's Prepare of `op` on input type `t` (the output's type is the same).
    pub fn new(op: UnaryOp, t: DType, i: QParams, o: QParams) -> Result<QUnary, String> {
        if !supported(op, t) {
            return Err(format!("quantized {op:?} on {t} is not supported"));
        }
        if t == DType::I16 && (i.zero_point != 0 || o.zero_point != 0) {
            return Err(format!("int16 {op:?} needs zero points of 0, got {} and {}", i.zero_point, o.zero_point));
        }
        let (tmin, tmax) = match t {
            DType::U8 => (u8::MIN as i32, u8::MAX as i32),
            DType::I8 => (i8::MIN as i32, i8::MAX as i32),
            _ => (i16::MIN as i32, i16::MAX as i32),
        };
        // LUTPopulate of a float function: 256 entries for 8 bits, 513 interpolated for int16.
        let table = |f: &dyn Fn(f32) -> f32, invalid_below: Option<i32>| match t {
            DType::U8 => QUnary::Table8 { lut: Lut8::new::<u8>(i, o, f), invalid_below },
            DType::I8 => QUnary::Table8 { lut: Lut8::new::<i8>(i, o, f), invalid_below },
            _ => QUnary::Table16 { lut: lut16::<f32>(i.scale, i.zero_point, o.scale, o.zero_point, f), invalid_below },
        };
        Ok(match op {
            UnaryOp::Abs => {
                // `input_scale / output_scale` in float, then widened.
                let rescale = (i.scale != o.scale).then(|| quantize_multiplier((i.scale / o.scale) as f64));
                QUnary::Abs { in_zp: i.zero_point, out_zp: o.zero_point, rescale, min: tmin, max: tmax, wide: t == DType::I16 }
            }
            UnaryOp::Exp => table(&|x| x.exp(), None),
            UnaryOp::Elu => table(&|x| if x < 0.0 { x.exp_m1() } else { x }, None),
            UnaryOp::Gelu { approximate } => table(&|x| reference_value(U::Gelu { approximate }, x), None),
            UnaryOp::Log => {
                // log of a non-positive value is the output's lowest value.
                let output_min = (tmin - o.zero_point) as f32 * o.scale;
                table(&|x| if x <= 0.0 { output_min } else { x.ln() }, None)
            }
            UnaryOp::Rsqrt if t == DType::I16 => table(&|x| if x <= 0.0 { i16::MAX as f32 * o.scale } else { 1.0 / x.sqrt() }, Some(i.zero_point)),
            UnaryOp::Rsqrt => {
                // `1. / (std::sqrt(input_scale) * output_scale)`: the product in float.
                let (mult, shift) = quantize_multiplier(1.0 / (i.scale.sqrt() * o.scale) as f64);
                const K_SHIFT: i32 = 20;
                let mut lut = [0u8; 256];
                for v in tmin..=tmax {
                    let value = v - i.zero_point;
                    let q = if value <= 0 {
                        // 0 stands for the largest output (negative values are refused).
                        tmax
                    } else {
                        let (inv, inv_shift) = inv_sqrt_multiplier(value);
                        let data = mbqm(1, inv, inv_shift + K_SHIFT);
                        (mbqm(data, mult, shift - K_SHIFT) + o.zero_point).clamp(tmin, tmax)
                    };
                    lut[(v as i8 as u8) as usize] = q as i8 as u8;
                }
                QUnary::Table8 { lut: Lut8(lut), invalid_below: Some(i.zero_point) }
            }
            UnaryOp::Sqrt if t == DType::I16 => QUnary::Sqrt16 { in_q: i, out_q: o },
            UnaryOp::Sqrt => {
                let mut lut = [0u8; 256];
                for v in tmin..=tmax {
                    lut[(v as i8 as u8) as usize] = sqrt_q(v, i, o, tmin, tmax) as i8 as u8;
                }
                QUnary::Table8 { lut: Lut8(lut), invalid_below: Some(i.zero_point) }
            }
            _ => return Err(format!("quantized {op:?} on {t} is not supported")),
        })
    }

    /// Maps `input` to `out` (raw little-endian values of the op's type, same length). Fails,
    /// naming the first offending value, when RSQRT or SQRT meets a negative input.
    pub fn run(&self, input: &[u8], out: &mut [u8]) -> Result<(), String> {
        match self {
            QUnary::Table8 { lut, invalid_below } => {
                if let Some(zp) = invalid_below {
                    check_non_negative(input.iter().map(|&b| b as i8 as i32), *zp)?;
                }
                lut.run(input, out);
            }
            QUnary::Table16 { lut, invalid_below } => {
                let (x, o) = (as_i16(input)?, as_i16_mut(out)?);
                if let Some(zp) = invalid_below {
                    check_non_negative(x.iter().map(|&v| v as i32), *zp)?;
                }
                for (o, &v) in o.iter_mut().zip(x) {
                    *o = lut16_lookup(v, lut);
                }
            }
            QUnary::Abs { in_zp, out_zp, rescale, min, max, wide } => {
                let abs = |v: i32| {
                    let value = (v - in_zp).abs();
                    let r = match rescale {
                        Some((m, s)) => mbqm(value, *m, *s),
                        None => value,
                    };
                    (r + out_zp).clamp(*min, *max)
                };
                if *wide {
                    for (o, &v) in as_i16_mut(out)?.iter_mut().zip(as_i16(input)?) {
                        *o = abs(v as i32) as i16;
                    }
                } else {
                    for (o, &v) in out.iter_mut().zip(input) {
                        *o = abs(v as i8 as i32) as i8 as u8;
                    }
                }
            }
            QUnary::Sqrt16 { in_q, out_q } => {
                let x = as_i16(input)?;
                check_non_negative(x.iter().map(|&v| v as i32), in_q.zero_point)?;
                for (o, &v) in as_i16_mut(out)?.iter_mut().zip(x) {
                    *o = sqrt_q(v as i32, *in_q, *out_q, i16::MIN as i32, i16::MAX as i32) as i16;
                }
            }
        }
        Ok(())
    }
}

/// TFLite's quantized SQRT of one value: in float, the quotient truncated toward zero.
fn sqrt_q(v: i32, i: QParams, o: QParams, min: i32, max: i32) -> i32 {
    let dq = i.scale * (v - i.zero_point) as f32;
    if dq < 0.0 {
        return min;
    }
    ((dq.sqrt() / o.scale) as i32 + o.zero_point).clamp(min, max)
}

fn check_non_negative(values: impl Iterator<Item = i32>, zero_point: i32) -> Result<(), String> {
    match values.enumerate().find(|&(_, v)| v < zero_point) {
        Some((k, v)) => Err(format!("element {k} is {v}, below the zero point {zero_point}: the op is only defined for non-negative values")),
        None => Ok(()),
    }
}

fn as_i16(b: &[u8]) -> Result<&[i16], String> {
    bytemuck::try_cast_slice(b).map_err(|e| format!("int16 data: {e}"))
}

fn as_i16_mut(b: &mut [u8]) -> Result<&mut [i16], String> {
    bytemuck::try_cast_slice_mut(b).map_err(|e| format!("int16 data: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(scale: f32, zero_point: i32) -> QParams {
        QParams { scale, zero_point }
    }

    #[test]
    fn inv_sqrt_tracks_the_float_value() {
        // multiplier · 2^shift / 2^31 ≈ 1/√input: five Newton steps from 1 in Q3.28 leave a
        // relative error of about 2^-19.
        let mut worst = 0f64;
        for input in (2..5000).chain([65_535, 1 << 20, (1 << 29) + 7, i32::MAX]) {
            let (m, s) = inv_sqrt_multiplier(input);
            let got = m as f64 * 2f64.powi(s) / 2f64.powi(31);
            let want = 1.0 / (input as f64).sqrt();
            worst = worst.max((got / want - 1.0).abs());
        }
        assert!(worst < 4e-6, "relative error {worst}");
        assert_eq!(inv_sqrt_multiplier(1), (i32::MAX, 0));
    }

    #[test]
    fn rsqrt_int8_follows_the_float_function() {
        let (i, o) = (q(0.05, -128), q(0.02, -128));
        let QUnary::Table8 { lut, .. } = QUnary::new(UnaryOp::Rsqrt, DType::I8, i, o).unwrap() else { panic!("an 8-bit table") };
        for v in -127i32..=127 {
            let x = i.scale * (v - i.zero_point) as f32;
            let want = ((1.0 / x.sqrt()) / o.scale).round() as i32 + o.zero_point;
            let got = lut.0[(v as i8 as u8) as usize] as i8 as i32;
            assert!((got - want.clamp(-128, 127)).abs() <= 1, "{v}: {got} vs {want}");
        }
        // The zero point itself is the largest output.
        assert_eq!(lut.0[0x80] as i8, 127);
    }

    #[test]
    fn negative_inputs_are_refused_by_rsqrt_and_sqrt() {
        for op in [UnaryOp::Rsqrt, UnaryOp::Sqrt] {
            let k = QUnary::new(op, DType::I8, q(0.1, 3), q(0.1, 0)).unwrap();
            let mut out = [0u8; 3];
            assert!(k.run(&[5, 3, 2], &mut out).unwrap_err().contains("element 2 is 2"));
            assert!(k.run(&[5, 3, 4], &mut out).is_ok());
        }
    }

    #[test]
    fn abs_and_sqrt_int8() {
        let k = QUnary::new(UnaryOp::Abs, DType::I8, q(0.5, 10), q(0.25, -5)).unwrap();
        let mut out = [0u8; 3];
        k.run(&[(-20i8) as u8, 10, 40], &mut out).unwrap();
        // |x - 10| · 2 - 5, clamped.
        assert_eq!(out.map(|b| b as i8), [55, -5, 55]);
        let s = QUnary::new(UnaryOp::Sqrt, DType::I8, q(0.5, 0), q(0.1, 0)).unwrap();
        s.run(&[0, 8, 50], &mut out).unwrap();
        // sqrt(0), sqrt(4) = 2 → 20, sqrt(25) = 5 → 50.
        assert_eq!(out.map(|b| b as i8), [0, 20, 50]);
    }

    #[test]
    fn int16_tables_interpolate_the_function() {
        // Input and output over [-8, 8): GELU stays inside the output's range.
        let (i, o) = (q(8.0 / 32768.0, 0), q(8.0 / 32768.0, 0));
        let k = QUnary::new(UnaryOp::Gelu { approximate: false }, DType::I16, i, o).unwrap();
        let x: Vec<i16> = (-32768..=32767).step_by(97).map(|v| v as i16).collect();
        let mut out = vec![0i16; x.len()];
        k.run(bytemuck::cast_slice(&x), bytemuck::cast_slice_mut(&mut out)).unwrap();
        for (&v, &g) in x.iter().zip(&out) {
            let xf = v as f32 * i.scale;
            let want = (reference_value(U::Gelu { approximate: false }, xf) / o.scale).round().clamp(-32768.0, 32767.0);
            // The chord of a 1/32-wide step of GELU strays below one output step; the bias adds 1.
            assert!((g as f32 - want).abs() <= 2.0, "{v}: {g} vs {want}");
        }
        assert!(QUnary::new(UnaryOp::Exp, DType::I16, q(0.01, 1), o).is_err());
    }
}
