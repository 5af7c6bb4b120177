//! CAST between f32, f16, i8, u8, i16, i32, i64 and bool with TFLite's conversions, including
//! what its C++ casts do on x86 where the standard leaves them undefined:
//!
//! - f32 → i32 saturates, NaN gives `i32::MAX` (TFLite clamps explicitly);
//! - f32 → i16 / u8 clamp to the type's range first (NaN gives 0);
//! - other float → integer casts truncate toward zero; out of range or NaN gives the x86
//!   "integer indefinite" (`0x80…0`, low bits kept for the narrow types, so 0 for i8);
//! - integer → integer wraps (two's complement), integer → float rounds to nearest;
//! - anything → bool is `x != 0` (NaN is true), bool → number is 0 or 1;
//! - a real number → complex64 is `(x as f32, 0)`, complex64 → complex64 a copy (TFLite casts
//!   complex values to no other type; the CPU backend refuses those at prepare).
#![forbid(unsafe_code)]

use half::f16;
use nnrt_core::DType;

/// One source element, as the conversion needs it.
#[derive(Clone, Copy, Debug)]
enum Num {
    /// A float32 value (TFLite has special overloads for float32 sources).
    F32(f32),
    /// A float16 value, widened exactly.
    F16(f32),
    /// An integer or bool, widened exactly.
    Int(i64),
}

/// x86 `cvttss2si` (32-bit): truncation, with `i32::MIN` for NaN and out-of-range values.
fn x86_i32(a: f32) -> i32 {
    if !(-2147483648.0..2147483648.0).contains(&a) {
        i32::MIN
    } else {
        a as i32
    }
}

/// x86 `cvttss2si` (64-bit).
fn x86_i64(a: f32) -> i64 {
    if !(-9.223372e18..9.223372e18).contains(&a) {
        i64::MIN
    } else {
        a as i64
    }
}

/// [`x86_i32`] in a form that vectorizes (the compiler turns a float-to-int `as` into one
/// scalar conversion per lane): the truncated value plus 1.5·2^52 in double holds its two's
/// complement in the low 32 bits of the mantissa.
#[inline(always)]
fn x86_i32_vec(a: f32) -> i32 {
    let t = a.trunc();
    let i = ((t as f64 + 6_755_399_441_055_744.0).to_bits() as i64) as i32;
    if (-2_147_483_648.0..2_147_483_648.0).contains(&a) {
        i
    } else {
        i32::MIN
    }
}

/// `std::max(std::min(a, hi), lo)`: a NaN stays NaN, as in [`Num::to_i32`].
#[inline(always)]
fn clamp_keep_nan(a: f32, lo: f32, hi: f32) -> f32 {
    let c = if hi < a { hi } else { a };
    if c < lo {
        lo
    } else {
        c
    }
}

impl Num {
    fn to_f32(self) -> f32 {
        match self {
            Num::F32(v) | Num::F16(v) => v,
            Num::Int(i) => i as f32,
        }
    }

    /// The value as an integer of a type no wider than 32 bits, before narrowing.
    fn to_i32(self, clamp: Option<(f32, f32)>) -> i32 {
        match self {
            Num::F32(v) => match clamp {
                Some((lo, hi)) => {
                    // std::max(std::min(a, hi), lo) keeps NaN, which then converts to 0.
                    let c = if hi < v { hi } else { v };
                    let c = if c < lo { lo } else { c };
                    x86_i32(c)
                }
                None => x86_i32(v),
            },
            Num::F16(v) => x86_i32(v),
            Num::Int(i) => i as i32,
        }
    }

    fn to_i64(self) -> i64 {
        match self {
            Num::F32(v) | Num::F16(v) => x86_i64(v),
            Num::Int(i) => i,
        }
    }

    fn is_nonzero(self) -> bool {
        match self {
            Num::F32(v) | Num::F16(v) => v != 0.0,
            Num::Int(i) => i != 0,
        }
    }
}

fn read(dtype: DType, b: &[u8], i: usize) -> Num {
    let w = dtype.size();
    let c = &b[i * w..(i + 1) * w];
    match dtype {
        DType::F32 => Num::F32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        DType::F16 => Num::F16(f16::from_le_bytes([c[0], c[1]]).to_f32()),
        DType::I8 => Num::Int(c[0] as i8 as i64),
        DType::U8 => Num::Int(c[0] as i64),
        DType::Bool => Num::Int((c[0] != 0) as i64),
        DType::I16 => Num::Int(i16::from_le_bytes([c[0], c[1]]) as i64),
        DType::I32 => Num::Int(i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64),
        DType::I64 => Num::Int(i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
        // The real part (complex sources are only copied; see `cast`).
        DType::C64 => Num::F32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    }
}

fn write(dtype: DType, n: Num, out: &mut [u8]) {
    match dtype {
        DType::F32 => out.copy_from_slice(&n.to_f32().to_le_bytes()),
        DType::F16 => out.copy_from_slice(&f16::from_f32(n.to_f32()).to_le_bytes()),
        DType::I8 => out[0] = n.to_i32(None) as i8 as u8,
        DType::U8 => out[0] = n.to_i32(Some((0.0, 255.0))) as u8,
        DType::Bool => out[0] = n.is_nonzero() as u8,
        DType::I16 => out.copy_from_slice(&(n.to_i32(Some((-32768.0, 32767.0))) as i16).to_le_bytes()),
        DType::I32 => {
            let v = match n {
                // TFLite: a <= nextafter(2^31 - 1 as float, 0) ? (int)max(a, INT_MIN) : INT_MAX.
                Num::F32(v) if v.is_nan() || v > 2147483520.0 => i32::MAX,
                Num::F32(v) => (if v < -2147483648.0 { -2147483648.0 } else { v }) as i32,
                other => other.to_i32(None),
            };
            out.copy_from_slice(&v.to_le_bytes())
        }
        DType::I64 => out.copy_from_slice(&n.to_i64().to_le_bytes()),
        DType::C64 => {
            out[..4].copy_from_slice(&n.to_f32().to_le_bytes());
            out[4..].copy_from_slice(&0f32.to_le_bytes());
        }
    }
}

/// Converts every element of `input` (type `from`) into `out` (type `to`).
///
/// # Panics
/// When the byte lengths do not hold the same number of elements.
pub fn cast(from: DType, input: &[u8], to: DType, out: &mut [u8]) {
    let n = input.len() / from.size();
    assert_eq!(out.len(), n * to.size(), "cast: output length");
    if from == to {
        out.copy_from_slice(input);
        return;
    }
    if cast_fast(from, input, to, out) {
        return;
    }
    let w = to.size();
    for (i, o) in out.chunks_exact_mut(w).enumerate() {
        write(to, read(from, input, i), o);
    }
}

/// float32 → int8 as [`cast`] converts it (x86 truncation, the low byte kept), in a form that
/// vectorizes.
#[inline(always)]
pub(crate) fn f32_to_i8(v: f32) -> i8 {
    x86_i32_vec(v) as i8
}

/// float32 → uint8 as [`cast`] converts it (clamped to 0..=255 first; NaN gives 0).
#[inline(always)]
pub(crate) fn f32_to_u8(v: f32) -> u8 {
    x86_i32_vec(clamp_keep_nan(v, 0.0, 255.0)) as u8
}

/// float32 → int16 as [`cast`] converts it (clamped to int16's range first; NaN gives 0).
#[inline(always)]
pub(crate) fn f32_to_i16(v: f32) -> i16 {
    x86_i32_vec(clamp_keep_nan(v, -32768.0, 32767.0)) as i16
}

/// float32 → int32 as [`cast`] converts it (TFLite's): NaN and values above the largest float
/// below 2^31 give `i32::MAX`, values below -2^31 give `i32::MIN`, the others truncate.
#[inline(always)]
pub(crate) fn f32_to_i32(v: f32) -> i32 {
    // `x86_i32_vec` truncates what lies in [-2^31, 2^31) and gives `i32::MIN` for the rest,
    // which is right below -2^31; above 2147483520 (the largest float below 2^31) and NaN
    // give `i32::MAX`.
    let t = x86_i32_vec(v);
    if v.is_nan() || v > 2147483520.0 {
        i32::MAX
    } else {
        t
    }
}

/// The casts of models' input and output ends (integers to float32, float32 to uint8, int8
/// and int16) and between the integer types, over typed slices: the same per-element
/// conversions as [`cast`]'s, in loops that vectorize, split across the kernel pool. False (nothing written) for other pairs, or
/// where the bytes are not aligned for their type.
fn cast_fast(from: DType, input: &[u8], to: DType, out: &mut [u8]) -> bool {
    fn go<I: bytemuck::Pod + Sync, O: bytemuck::Pod + Send>(input: &[u8], out: &mut [u8], f: impl Fn(I) -> O + Sync) -> bool {
        let (Ok(x), Ok(o)) = (bytemuck::try_cast_slice::<u8, I>(input), bytemuck::try_cast_slice_mut::<u8, O>(out)) else { return false };
        super::binary::map_chunks(x, o, 1, |x, o| {
            for (o, &v) in o.iter_mut().zip(x) {
                *o = f(v);
            }
        });
        true
    }
    match (from, to) {
        (DType::U8, DType::F32) => go(input, out, |v: u8| Num::Int(v as i64).to_f32()),
        (DType::I8, DType::F32) => go(input, out, |v: i8| Num::Int(v as i64).to_f32()),
        (DType::I16, DType::F32) => go(input, out, |v: i16| Num::Int(v as i64).to_f32()),
        (DType::I32, DType::F32) => go(input, out, |v: i32| Num::Int(v as i64).to_f32()),
        (DType::F32, DType::U8) => go(input, out, f32_to_u8),
        (DType::F32, DType::I8) => go(input, out, f32_to_i8),
        (DType::F32, DType::I16) => go(input, out, f32_to_i16),
        (DType::F32, DType::I32) => go(input, out, f32_to_i32),
        // Integer to integer: sign-extended, or the low bits kept (`Num::to_i32` ignores the
        // float clamp for integers).
        (DType::U8, DType::I8) => go(input, out, |v: u8| v as i8),
        (DType::I8, DType::U8) => go(input, out, |v: i8| v as u8),
        (DType::U8, DType::I16) => go(input, out, |v: u8| i16::from(v)),
        (DType::I8, DType::I16) => go(input, out, |v: i8| i16::from(v)),
        (DType::I16, DType::U8) => go(input, out, |v: i16| v as u8),
        (DType::I16, DType::I8) => go(input, out, |v: i16| v as i8),
        (DType::U8, DType::I32) => go(input, out, |v: u8| i32::from(v)),
        (DType::I8, DType::I32) => go(input, out, |v: i8| i32::from(v)),
        (DType::I16, DType::I32) => go(input, out, |v: i16| i32::from(v)),
        (DType::I32, DType::I8) => go(input, out, |v: i32| v as i8),
        (DType::I32, DType::U8) => go(input, out, |v: i32| v as u8),
        (DType::I32, DType::I16) => go(input, out, |v: i32| v as i16),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_to(to: DType, v: f32) -> Vec<u8> {
        let mut o = vec![0; to.size()];
        cast(DType::F32, &v.to_le_bytes(), to, &mut o);
        o
    }

    #[test]
    fn float_to_int_follows_tflite() {
        let i32v = |v| i32::from_le_bytes(f32_to(DType::I32, v).try_into().unwrap());
        assert_eq!(i32v(-3.7), -3);
        assert_eq!(i32v(3e9), i32::MAX);
        assert_eq!(i32v(-3e9), i32::MIN);
        assert_eq!(i32v(f32::NAN), i32::MAX);
        assert_eq!(f32_to(DType::U8, -5.5), vec![0]);
        assert_eq!(f32_to(DType::U8, 300.0), vec![255]);
        assert_eq!(f32_to(DType::U8, 254.9), vec![254]);
        assert_eq!(f32_to(DType::I8, -3.9), vec![(-3i8) as u8]);
        assert_eq!(f32_to(DType::Bool, f32::NAN), vec![1]);
        assert_eq!(f32_to(DType::Bool, -0.0), vec![0]);
    }

    /// The typed loops of `cast_fast` against the per-element conversion, edges included
    /// (NaN, infinities, out of range, halves), over lengths that leave vector tails.
    #[test]
    fn fast_casts_match_per_element() {
        let floats: Vec<f32> = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.5, -0.5, 127.5, 128.0, -128.9, -129.0, 255.4, 255.9, 256.0, -1.0, 3e9, -3e9, 32767.9, -32768.7, 40000.0, 1e-30, 2_147_483_520.0, -2_147_483_648.0, 2_147_483_648.0, -2_147_483_904.0, 8_388_607.5, -0.999]
            .iter()
            .copied()
            .chain((0..1000).map(|i| (i as f32 - 500.0) * 77.31))
            .collect();
        let ints: Vec<i32> = (0..1037i32).map(|i| (i - 518).wrapping_mul(2_654_435)).collect();
        let sources: [(DType, Vec<u8>); 5] = [
            (DType::F32, floats.iter().flat_map(|v| v.to_le_bytes()).collect()),
            (DType::U8, ints.iter().map(|&v| v as u8).collect()),
            (DType::I8, ints.iter().map(|&v| v as i8 as u8).collect()),
            (DType::I16, ints.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect()),
            (DType::I32, ints.iter().flat_map(|&v| v.to_le_bytes()).collect()),
        ];
        for (from, bytes) in &sources {
            for to in [DType::F32, DType::U8, DType::I8, DType::I16, DType::I32] {
                let n = bytes.len() / from.size();
                let mut fast = vec![0u8; n * to.size()];
                let mut want = vec![0u8; n * to.size()];
                cast(*from, bytes, to, &mut fast);
                for (i, o) in want.chunks_exact_mut(to.size()).enumerate() {
                    write(to, read(*from, bytes, i), o);
                }
                assert_eq!(fast, want, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn ints_wrap_and_round() {
        let mut o = [0u8; 1];
        cast(DType::I32, &300i32.to_le_bytes(), DType::U8, &mut o);
        assert_eq!(o, [44]);
        let mut f = [0u8; 4];
        cast(DType::I64, &16777217i64.to_le_bytes(), DType::F32, &mut f);
        assert_eq!(f32::from_le_bytes(f), 16777216.0);
        cast(DType::Bool, &[1], DType::F32, &mut f);
        assert_eq!(f32::from_le_bytes(f), 1.0);
    }
}
