//! FFT2D and RFFT2D (the FFT extension, fp32): `[N, H, W]` signals with H and W powers of two.
//!
//! FFT2D becomes nnrt's `Fft2d` (real and imaginary parts in, real and imaginary parts out).
//! RFFT2D becomes the complex64 `Rfft2d` with fft lengths `[H, W]` (no padding or cropping),
//! whose `W / 2 + 1` non-negative frequencies `Real` and `Imag` split into TOSA's two outputs.

use nnrt_core::{DType, LoadError, OpKind};

use super::{BlockBuilder, Op};
use crate::generated::tosa;

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let inputs = if o.kind == tosa::Op::FFT2D { 2 } else { 1 };
    for i in 0..inputs {
        if o.input_type(b, i)? != tosa::DType::FP32 {
            return Err(o.unsupported(b, "only fp32 signals are mapped"));
        }
    }
    let x = o.input(b, 0)?;
    let d = b.dims(x);
    if d.len() != 3 || !d[1].is_power_of_two() || !d[2].is_power_of_two() {
        return Err(b.err(format!("input '{}' has dims {d:?}; [N, H, W] with H and W powers of two expected", o.inputs[0])));
    }
    let (n, h, w) = (d[0], d[1], d[2]);
    let want = if o.kind == tosa::Op::FFT2D { vec![n, h, w] } else { vec![n, h, w / 2 + 1] };
    if o.outputs.len() != 2 {
        return Err(b.err(format!("has {} outputs; the real and imaginary parts (2) expected", o.outputs.len())));
    }
    let (re, im) = (o.output(b, 0)?, o.output(b, 1)?);
    for (k, id) in [re, im].into_iter().enumerate() {
        if b.dims(id) != want || b.dtype(id) != DType::F32 {
            return Err(b.err(format!("output '{}' is {} {:?}; FP32 {want:?} expected", o.outputs[k], b.dtype(id), b.dims(id))));
        }
    }
    if o.kind == tosa::Op::FFT2D {
        let a = o.attr(b, o.t.attribute_as_fft2d_attribute(), "FFT2dAttribute")?;
        let imag = o.input(b, 1)?;
        if b.dims(imag) != d {
            return Err(b.err(format!("input '{}' has dims {:?}; the real parts' {d:?} expected", o.inputs[1], b.dims(imag))));
        }
        b.emit_all(OpKind::Fft2d { inverse: a.inverse() }, &[x, imag], vec![re, im]);
    } else {
        o.attr(b, o.t.attribute_as_rfft2d_attribute(), "RFFT2dAttribute")?;
        let len = b.const_i32(&[h as i32, w as i32]);
        let z = b.temp(DType::C64, &want);
        b.emit_all(OpKind::Rfft2d, &[x, len], vec![z]);
        b.emit_all(OpKind::Real, &[z], vec![re]);
        b.emit_all(OpKind::Imag, &[z], vec![im]);
    }
    Ok(())
}
