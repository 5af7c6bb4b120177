//! QUANTIZE (float32 to uint8 / int8 / int16, per tensor or per channel, and requantizing
//! between integer types), DEQUANTIZE (from float16 and from quantized integers) and TOSA's
//! RESCALE (plain integers, the specification's rounding; [`crate::quant::tosa`]).

use nnrt_core::{cast, cast_mut, CompileCtx, DType, Numerics, OpId, OpKind, Quantization};

use super::util::{QuantIo, is_qint, qp, quantized_input, source, sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::data::f16_to_f32;
use crate::quant::dynamic;
use crate::quant::misc::{self, Requantize};
use crate::quant::tosa::{rescale_by_table, Rescale};
use super::int_chain::bits;
use crate::simd::rescale::LaneRescale;

/// QUANTIZE has integer kernels only; DEQUANTIZE takes them from a quantized input.
fn quantized_op(ctx: &CompileCtx, id: OpId) -> bool {
    matches!(ctx.graph.op(id).kind, OpKind::Quantize) || quantized_input(ctx, id, 0)
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Dequantize => {
            let src = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?);
            let dst = ctx.graph.operand(op.outputs[0]);
            if dst.dtype != DType::F32 {
                return Err(format!("dequantizing to {} is not supported (float32 only)", dst.dtype));
            }
            match (src.dtype, &src.quant) {
                (DType::F16, _) => Ok(()),
                (DType::U8 | DType::I8 | DType::I16 | DType::I32, Quantization::PerTensor { .. }) => Ok(()),
                (t, q) => Err(format!("dequantizing {t} with {q:?} is not supported")),
            }
        }
        _ => Err("not a dequantization".into()),
    }
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let QuantIo { x: in0, out, xt, ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Quantize => match (xt, ot) {
            (DType::F32, t) if is_qint(t) && matches!(ctx.graph.operand(out).quant, Quantization::PerAxis { .. }) => Ok(()),
            (DType::F32, t) if is_qint(t) => qp(ctx, out).map(|_| ()),
            (a, b) if is_qint(a) && is_qint(b) => qp(ctx, in0).and(qp(ctx, out)).map(|_| ()),
            _ => Err(format!("quantizing {xt} to {ot} is not supported")),
        },
        OpKind::Dequantize => {
            if ot != DType::F32 {
                return Err(format!("dequantizing to {ot} is not supported"));
            }
            Ok(())
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let inputs = sources(ctx, id);
    match &op.kind {
        OpKind::Dequantize => {
            let src = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?);
            let (scale, zp) = match src.quant {
                Quantization::PerTensor { scale, zero_point } => (scale, zero_point as f32),
                _ => (1.0, 0.0),
            };
            let dtype = src.dtype;
            Ok(built(inputs, move |ins, outs| {
                let out = cast_mut::<f32>(outs[0].bytes)?;
                let q = |v: f32| scale * (v - zp);
                match dtype {
                    DType::F16 => f16_to_f32(cast::<half::f16>(ins[0].bytes)?, out),
                    DType::U8 => out.iter_mut().zip(ins[0].bytes).for_each(|(o, &v)| *o = q(v as f32)),
                    DType::I8 => out.iter_mut().zip(cast::<i8>(ins[0].bytes)?).for_each(|(o, &v)| *o = q(v as f32)),
                    DType::I16 => out.iter_mut().zip(cast::<i16>(ins[0].bytes)?).for_each(|(o, &v)| *o = q(v as f32)),
                    DType::I32 => out.iter_mut().zip(cast::<i32>(ins[0].bytes)?).for_each(|(o, &v)| *o = q(v as f32)),
                    other => return Err(format!("cannot dequantize {other}")),
                }
                Ok(())
            }))
        }
        _ => Err("not a dequantization".into()),
    }
}

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { x: in0, out, xt, ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Quantize if xt == DType::F32 && matches!(ctx.graph.operand(out).quant, Quantization::PerAxis { .. }) => {
            let Quantization::PerAxis { scales, zero_points, axis } = ctx.graph.operand(out).quant.clone() else { return Err("per-axis".into()) };
            by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::quantize_per_channel::<TO>(cast::<f32>(ins[0].bytes)?, ins[0].dims, axis, &scales, &zero_points, cast_mut::<TO>(outs[0].bytes)?);
                Ok(())
            })))
        }
        OpKind::Quantize => {
            let oq = qp(ctx, out)?;
            if xt == DType::F32 && ctx.graph.numerics == Numerics::ExecuTorch {
                return by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    misc::quantize_reciprocal::<TO>(cast::<f32>(ins[0].bytes)?, oq, cast_mut::<TO>(outs[0].bytes)?);
                    Ok(())
                })));
            }
            if xt == DType::F32 {
                return by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    misc::quantize::<TO>(cast::<f32>(ins[0].bytes)?, oq, cast_mut::<TO>(outs[0].bytes)?);
                    Ok(())
                })));
            }
            let r = Requantize::new(qp(ctx, in0)?, oq);
            by_qtype!(xt, |TI| by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                r.run::<TI, TO>(cast::<TI>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?);
                Ok(())
            }))))
        }
        OpKind::Dequantize => match ctx.graph.operand(in0).quant.clone() {
            Quantization::PerAxis { scales, zero_points, axis } => by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::dequantize_per_channel::<T>(
                    cast::<T>(ins[0].bytes)?,
                    ins[0].dims,
                    axis,
                    &scales,
                    &zero_points,
                    cast_mut::<f32>(outs[0].bytes)?,
                );
                Ok(())
            }))),
            _ => {
                let q = qp(ctx, in0)?;
                by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    misc::dequantize::<T>(cast::<T>(ins[0].bytes)?, q, cast_mut::<f32>(outs[0].bytes)?);
                    Ok(())
                })))
            }
        },
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["Quantize", "Dequantize"], supports, build, (quantized_op, supports_quantized, build_quantized));
    r.ops(&["Rescale"], supports_rescale, build_rescale);
    r.ops(&["DynamicQuantize"], |_, _| Ok(()), build_dynamic);
}

/// DynamicQuantize: float32 in and out (checked by the shape rule), rows of the last `row_dims`.
fn build_dynamic(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let OpKind::DynamicQuantize(d) = ctx.graph.op(id).kind else { return Err("not a dynamic quantization".into()) };
    Ok(built(sources(ctx, id), move |ins, outs| {
        let dims = ins[0].dims;
        let row: usize = dims[dims.len() - d.row_dims.min(dims.len())..].iter().product();
        let row = if d.row_dims == 0 { 0 } else { row };
        dynamic::dynamic_quantize(d.rule, d.qmin, d.qmax, row, cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}

/// RESCALE runs on int8, int16 and int32, and from int64 (TOSA's int48; core's shape rule
/// checked the constants).
fn supports_rescale(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let (xt, ot) = (ctx.graph.operand(x).dtype, ctx.graph.operand(op.outputs[0]).dtype);
    if !matches!(xt, DType::I8 | DType::I16 | DType::I32 | DType::I64) || !matches!(ot, DType::I8 | DType::I16 | DType::I32) {
        return Err(format!("rescaling {xt} to {ot} is not supported (int8, int16, int32, and int64 (int48) input)"));
    }
    Ok(())
}

/// Integer values of constant input `i` of `id`.
fn const_ints(ctx: &CompileCtx, id: OpId, i: usize) -> Result<Vec<i64>, String> {
    let op = ctx.graph.op(id);
    let k = ctx.graph.operand(op.input(i).ok_or_else(|| format!("input {i} is absent"))?);
    let b = k.data.as_ref().map(|d| d.bytes()).ok_or_else(|| format!("input {i} must be a constant"))?;
    Ok(match k.dtype {
        DType::I8 => b.iter().map(|&v| i64::from(v as i8)).collect(),
        DType::I16 => b.chunks_exact(2).map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))).collect(),
        DType::I32 => b.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
        DType::I64 => b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
        t => return Err(format!("input {i} is {t}; an integer constant expected")),
    })
}

/// RESCALE's constants as its kernel takes them (zero points of unsigned sides as unsigned).
pub(crate) fn rescale_params(ctx: &CompileCtx, id: OpId) -> Result<Rescale, String> {
    let op = ctx.graph.op(id);
    let OpKind::Rescale(p) = op.kind else { return Err("not a rescale".into()) };
    let x = op.input(0).ok_or("input 0 is absent")?;
    let zp = |i: usize| -> Result<i64, String> { const_ints(ctx, id, i)?.first().copied().ok_or_else(|| format!("zero point {i} is empty")) };
    let (xt, ot) = (ctx.graph.operand(x).dtype, ctx.graph.operand(op.outputs[0]).dtype);
    let mut input_zp = zp(3)?;
    if p.input_unsigned {
        input_zp = if xt == DType::I8 { input_zp & 0xff } else { input_zp & 0xffff };
    }
    let mut output_zp = zp(4)?;
    if p.output_unsigned {
        output_zp = if ot == DType::I8 { output_zp & 0xff } else { output_zp & 0xffff };
    }
    let r = Rescale {
        multiplier: const_ints(ctx, id, 1)?.into_iter().map(|v| v as i32).collect(),
        shift: const_ints(ctx, id, 2)?.into_iter().map(|v| v.clamp(2, 62) as u32).collect(),
        scale32: p.scale32,
        double_round: p.double_round,
        input_zp,
        output_zp,
        input_unsigned: p.input_unsigned,
        output_unsigned: p.output_unsigned,
    };
    if r.multiplier.is_empty() || r.multiplier.len() != r.shift.len() {
        return Err(format!("{} multipliers and {} shifts", r.multiplier.len(), r.shift.len()));
    }
    Ok(r)
}

fn build_rescale(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let r = rescale_params(ctx, id)?;
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let (xt, ot) = (ctx.graph.operand(x).dtype, ctx.graph.operand(op.outputs[0]).dtype);
    macro_rules! lanes {
        ($t:ident, |$n:ident| $body:expr) => {
            match $t {
                DType::I8 => { type $n = i8; $body }
                DType::I16 => { type $n = i16; $body }
                DType::I32 => { type $n = i32; $body }
                other => Err(format!("rescaling {other} is not supported")),
            }
        };
    }
    // An int8 input has 256 values per channel: one table lookup each.
    let n = r.multiplier.len();
    if xt == DType::I8 && n <= 4096 {
        return lanes!(ot, |TO| {
            let table = r.table8::<TO>();
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                rescale_by_table(&table, n, cast::<i8>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?);
                Ok(())
            }))
        });
    }
    // int16 / int32 input: the vector kernel over 64-bit lanes, a chunk at a time.
    if let Some(v) = bits(xt).zip(bits(ot)).and_then(|(i, o)| LaneRescale::new(&r, i, o)).filter(|_| xt != DType::I8) {
        let chunk = v.chunk();
        macro_rules! typed {
            ($ti:ty) => {
                lanes!(ot, |TO| Ok(built(vec![source(ctx, x)], {
                    let (v, mut a, mut b) = (v.clone(), vec![0i64; chunk], vec![0i64; chunk]);
                    move |ins, outs| {
                        let (x, out) = (cast::<$ti>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?);
                        for (x, out) in x.chunks(chunk).zip(out.chunks_mut(chunk)) {
                            let n = x.len().min(out.len());
                            a[..n].iter_mut().zip(x).for_each(|(l, &v)| *l = i64::from(v));
                            v.run(&a[..n], &mut b[..n]);
                            // The lanes hold the output type's values (sign-extended bits).
                            out.iter_mut().zip(&b[..n]).for_each(|(o, &l)| *o = l as TO);
                        }
                        Ok(())
                    }
                })))
            };
        }
        return if xt == DType::I16 { typed!(i16) } else { typed!(i32) };
    }
    let run = |xt: DType| {
        lanes!(ot, |TO| Ok(built(vec![source(ctx, x)], {
            let r = r.clone();
            move |ins, outs| {
                match xt {
                    DType::I8 => r.run::<i8, TO>(cast::<i8>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?),
                    DType::I16 => r.run::<i16, TO>(cast::<i16>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?),
                    DType::I32 => r.run::<i32, TO>(cast::<i32>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?),
                    _ => r.run::<i64, TO>(cast::<i64>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?),
                }
                Ok(())
            }
        })))
    };
    run(xt)
}
