//! RFFT2D, COMPLEX_ABS, REAL, IMAG (complex64 as f32 pairs); FFT2D (real and imaginary parts
//! as two float32 tensors).

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind};

use super::util::{source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::fft::{complex_part, Fft2d, Part, Rfft2d};

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let (tx, to) = (ctx.graph.operand(x).dtype, ctx.graph.operand(op.outputs[0]).dtype);
    if matches!(op.kind, OpKind::Fft2d { .. }) {
        let all = op.inputs.iter().flatten().chain(&op.outputs);
        return match all.map(|&t| ctx.graph.operand(t).dtype).find(|&t| t != DType::F32) {
            Some(t) => Err(format!("FFT2D takes and writes float32 real and imaginary parts, got {t}")),
            None => Ok(()),
        };
    }
    let want = if matches!(op.kind, OpKind::Rfft2d) { (DType::F32, DType::C64) } else { (DType::C64, DType::F32) };
    if (tx, to) != want {
        return Err(format!("{} maps {} to {}, got {tx} to {to}", op.kind.name(), want.0, want.1));
    }
    if matches!(op.kind, OpKind::Rfft2d) && !op.input(1).is_some_and(|l| ctx.graph.operand(l).is_const()) {
        return Err("fft_length must be a constant tensor".into());
    }
    Ok(())
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    if let OpKind::Fft2d { inverse } = op.kind {
        let im = op.input(1).ok_or("input 1 is absent")?;
        let d = ctx.dims(x);
        let r = d.len().checked_sub(2).ok_or("FFT2D input has rank < 2")?;
        if !d[r].is_power_of_two() || !d[r + 1].is_power_of_two() {
            return Err(format!("FFT2D input {d:?} does not end in two powers of two"));
        }
        let mut f = Fft2d::new(d[r], d[r + 1], inverse);
        return Ok(built(vec![source(ctx, x), source(ctx, im)], move |ins, outs| {
            let (o0, o1) = outs.split_at_mut(1);
            f.run(cast::<f32>(ins[0].bytes)?, cast::<f32>(ins[1].bytes)?, cast_mut::<f32>(o0[0].bytes)?, cast_mut::<f32>(o1[0].bytes)?);
            Ok(())
        }));
    }
    let part = match op.kind {
        OpKind::ComplexAbs => Part::Abs,
        OpKind::Real => Part::Real,
        OpKind::Imag => Part::Imag,
        _ => {
            let (xd, od) = (ctx.dims(x), ctx.dims(op.outputs[0]));
            let (r, c) = (xd.len().checked_sub(2).ok_or("RFFT2D input has rank < 2")?, od.len() - 2);
            let (fh, fw) = (od[c], od[c + 1].saturating_sub(1) * 2);
            if !fh.is_power_of_two() || !fw.is_power_of_two() {
                return Err(format!("output {od:?} does not come from power-of-two fft lengths"));
            }
            let mut f = Rfft2d::new(xd[r], xd[r + 1], fh, fw);
            return Ok(built(vec![source(ctx, x)], move |ins, outs| {
                f.run(cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }));
        }
    };
    Ok(built(vec![source(ctx, x)], move |ins, outs| {
        complex_part(part, cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Rfft2d", "Fft2d", "ComplexAbs", "Real", "Imag"], supports, build);
}
