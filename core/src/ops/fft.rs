//! Fourier transforms and complex numbers: RFFT2D, FFT2D (real and imaginary parts as two
//! float32 tensors), COMPLEX_ABS, REAL, IMAG.

use super::Shapes::{Many, One};
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the values transformed (or taken apart); FFT2D's real parts.",
    FFT_LENGTH = 1: "Input slot of RFFT2D's int32 `[fft_h, fft_w]`.",
    IMAG = 1: "Input slot of FFT2D's imaginary parts.",
);

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    let part = match kind {
        OpKind::Rfft2d => return Some(fixed("Rfft2d", 2, 1, One(rfft2d))),
        OpKind::Fft2d { .. } => return Some(fixed("Fft2d", 2, 2, Many(fft2d))),
        OpKind::ComplexAbs => "ComplexAbs",
        OpKind::Real => "Real",
        OpKind::Imag => "Imag",
        _ => return None,
    };
    Some(fixed(part, 1, 1, One(complex_part)))
}

/// RFFT2D: float32 input of rank >= 2, constant int32 `[fft_h, fft_w]` (powers of two, as
/// TFLite requires); complex64 output `[..., fft_h, fft_w / 2 + 1]`.
fn rfft2d(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.expect_dtype(INPUT, &[DType::F32])?;
    cx.expect_dtype(FFT_LENGTH, &[DType::I32])?;
    if x.len() < 2 {
        return Err(cx.input_err(INPUT, format!("shape {} must have rank 2 or more", fmt_dims(x))));
    }
    let len = cx.const_ints(FFT_LENGTH)?;
    if len.len() != 2 || len.iter().any(|&v| v <= 0 || (v & (v - 1)) != 0) {
        return Err(cx.input_err(FFT_LENGTH, format!("fft_length {len:?} must be two powers of two")));
    }
    if cx.out_dtype(0)? != DType::C64 {
        return Err(cx.out_err(0, format!("has type {}; RFFT2D writes complex64", cx.out_dtype(0)?)));
    }
    let mut out = x[..x.len() - 2].to_vec();
    out.extend([len[0] as usize, len[1] as usize / 2 + 1]);
    Ok(out)
}

/// FFT2D: float32 real and imaginary parts of one shape, rank >= 2, whose last two dims are
/// powers of two; two float32 outputs of that shape.
fn fft2d(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let x = cx.input(INPUT)?;
    cx.expect_dtype(INPUT, &[DType::F32])?;
    cx.expect_dtype(IMAG, &[DType::F32])?;
    if cx.input(IMAG)? != x {
        return Err(cx.input_err(IMAG, format!("shape {} differs from the real parts' {}", fmt_dims(cx.input(IMAG)?), fmt_dims(x))));
    }
    if x.len() < 2 || !x[x.len() - 2..].iter().all(|d| d.is_power_of_two()) {
        return Err(cx.input_err(INPUT, format!("shape {} must have rank 2 or more and end in two powers of two", fmt_dims(x))));
    }
    for k in 0..2 {
        cx.expect_out_dtype(k, DType::F32)?;
    }
    Ok(vec![x.to_vec(), x.to_vec()])
}

/// COMPLEX_ABS, REAL, IMAG: complex64 input, float32 output of the same shape.
fn complex_part(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    cx.expect_dtype(INPUT, &[DType::C64])?;
    if cx.out_dtype(0)? != DType::F32 {
        return Err(cx.out_err(0, format!("has type {}; the parts of complex64 values are float32", cx.out_dtype(0)?)));
    }
    Ok(cx.input(INPUT)?.to_vec())
}
