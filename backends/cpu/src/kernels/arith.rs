//! Kernels of ADD_N, ATAN2, BITWISE_XOR / RIGHT_SHIFT, BUCKETIZE and
//! LOCAL_RESPONSE_NORMALIZATION: plain loops (these ops are rare and memory-bound).
#![forbid(unsafe_code)]

use nnrt_core::BitwiseOp;
use super::binary::{broadcast_rows, map_row};

/// `out = Σ inputs`, element-wise, summed in input order (wrapping for integers, as TFLite's
/// int32 ADD_N does in practice).
pub fn add_n<T: Copy + std::ops::Add<Output = T>>(inputs: &[&[T]], out: &mut [T]) {
    let Some((first, rest)) = inputs.split_first() else { return };
    out.copy_from_slice(first);
    for x in rest {
        for (o, &v) in out.iter_mut().zip(x.iter()) {
            *o = *o + v;
        }
    }
}

/// `out = atan2(y, x)` element-wise.
pub fn atan2(y: &[f32], x: &[f32], out: &mut [f32]) {
    for ((o, &a), &b) in out.iter_mut().zip(y).zip(x) {
        *o = a.atan2(b);
    }
}

/// An integer type the bitwise ops work on.
pub trait BitInt: Copy + Sync + Send + std::ops::BitXor<Output = Self> + std::ops::BitAnd<Output = Self> + std::ops::BitOr<Output = Self> + std::ops::Shr<u32, Output = Self> {
    /// Bits in the type.
    const BITS: u32;
    /// The value as i64 (to clamp a shift amount).
    fn to_i64(self) -> i64;
}

macro_rules! bit_int {
    ($($t:ty),*) => {$(
        impl BitInt for $t {
            const BITS: u32 = <$t>::BITS;
            fn to_i64(self) -> i64 {
                self as i64
            }
        }
    )*};
}
bit_int!(u8, i8, i16, i32, i64);

/// `x >> y` with `y` clamped to `[0, bits - 1]` (arithmetic for signed types), as TFLite.
#[inline(always)]
pub fn right_shift<T: BitInt>(x: T, y: T) -> T {
    x >> (y.to_i64().clamp(0, T::BITS as i64 - 1) as u32)
}

/// `out = a ^ b`, `a & b`, `a | b` or `a >> b`, broadcasting `a` and `b` to `out_shape`.
pub fn bitwise<T: BitInt>(op: BitwiseOp, a: &[T], a_shape: &[usize], b: &[T], b_shape: &[usize], out: &mut [T], out_shape: &[usize]) {
    match op {
        BitwiseOp::Xor => broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| map_row(ra, rb, o, |x: T, y: T| x ^ y)),
        BitwiseOp::And => broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| map_row(ra, rb, o, |x: T, y: T| x & y)),
        BitwiseOp::Or => broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| map_row(ra, rb, o, |x: T, y: T| x | y)),
        BitwiseOp::RightShift => broadcast_rows(a, a_shape, b, b_shape, out, out_shape, |ra, rb, o| map_row(ra, rb, o, right_shift::<T>)),
    }
}

/// The index of the first boundary greater than `v` (`upper_bound`), for each value.
pub fn bucketize(values: impl Iterator<Item = f64>, boundaries: &[f32], out: &mut [i32]) {
    for (o, v) in out.iter_mut().zip(values) {
        *o = boundaries.partition_point(|&b| b as f64 <= v) as i32;
    }
}

/// Local response normalization over the last dim (`depth` values per row):
/// `out[c] = in[c] * (bias + alpha * Σ_{|k-c| <= radius} in[k]²)^-beta`.
pub fn local_response_norm(input: &[f32], depth: usize, radius: usize, bias: f32, alpha: f32, beta: f32, out: &mut [f32]) {
    if depth == 0 {
        return;
    }
    for (x, o) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
        for c in 0..depth {
            let lo = c.saturating_sub(radius);
            let hi = (c + radius).min(depth - 1);
            let sum: f32 = x[lo..=hi].iter().map(|v| v * v).sum();
            o[c] = x[c] * (bias + alpha * sum).powf(-beta);
        }
    }
}

/// FAKE_QUANT with TFLite's reference arithmetic: the range nudged so that 0 is a level
/// (`NudgeQuantizationRange`), then each value clamped to it and rounded (half away from zero) to
/// the nearest level.
pub fn fake_quant(min: f32, max: f32, num_bits: u32, narrow_range: bool, x: &[f32], out: &mut [f32]) {
    let quant_min = if narrow_range { 1 } else { 0 };
    let quant_max = (1u32 << num_bits) - 1;
    let (qmin, qmax) = (quant_min as f32, quant_max as f32);
    let scale = (max - min) / (qmax - qmin);
    let zero_from_min = qmin - min / scale;
    let zero = if zero_from_min < qmin {
        quant_min as f32
    } else if zero_from_min > qmax {
        quant_max as f32
    } else {
        // TFLite stores the rounded zero point in a uint16.
        (zero_from_min.round() as u32 & 0xffff) as f32
    };
    let (nudged_min, nudged_max) = ((qmin - zero) * scale, (qmax - zero) * scale);
    let inv = 1.0 / scale;
    for (o, &v) in out.iter_mut().zip(x) {
        let shifted = nudged_max.min(nudged_min.max(v)) - nudged_min;
        *o = (shifted * inv).round() * scale + nudged_min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn right_shift_clamps_the_amount_and_keeps_the_sign() {
        assert_eq!(right_shift(-16i8, 2), -4);
        assert_eq!(right_shift(-16i8, 100), -1, "shifts past the width clamp to width - 1");
        assert_eq!(right_shift(-100i16, -3), -100, "negative shifts clamp to 0");
        assert_eq!(right_shift(200u8, 3), 25);
        assert_eq!(right_shift(1i32 << 30, 31), 0);
    }

    #[test]
    fn bucketize_is_upper_bound() {
        let mut out = [0; 5];
        bucketize([-1.0, 0.0, 0.5, 10.0, 11.0].into_iter(), &[0.0, 10.0], &mut out);
        assert_eq!(out, [0, 1, 1, 2, 2]);
    }

    #[test]
    fn fake_quant_clamps_and_rounds_half_away() {
        // [0, 2.55] over 8 bits: levels 0.01 apart from 0 (no nudge).
        let mut o = [0.0; 4];
        fake_quant(0.0, 2.55, 8, false, &[-1.0, 3.0, 0.005, 1.234], &mut o);
        for (got, want) in o.iter().zip([0.0, 2.55, 0.01, 1.23]) {
            assert!((got - want).abs() < 1e-6, "{o:?}");
        }
        // [-0.3, 2.25]: the zero point (-(-0.3) / 0.01 = 30) is a level; -0.35 clamps to -0.3.
        fake_quant(-0.3, 2.25, 8, false, &[0.0, -0.35, 0.004, 2.5], &mut o);
        for (got, want) in o.iter().zip([0.0, -0.3, 0.0, 2.25]) {
            assert!((got - want).abs() < 1e-6, "{o:?}");
        }
        // Narrow range: 254 steps over [-1.27, 1.27].
        fake_quant(-1.27, 1.27, 8, true, &[1.0, -2.0, 0.0, 0.015], &mut o);
        for (got, want) in o.iter().zip([1.0, -1.27, 0.0, 0.02]) {
            assert!((got - want).abs() < 1e-6, "{o:?}");
        }
    }
}
