//! Builders of ADD_N, ATAN2, BITWISE_XOR / RIGHT_SHIFT, BUCKETIZE, FAKE_QUANT, LOCAL_RESPONSE_NORMALIZATION,
//! BROADCAST_TO and BROADCAST_ARGS. Kernels read the run-time dims of their tensors, so the same
//! builder serves static and dynamic shapes.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, IntBitsOp, OpId, OpKind, TensorRef};

use super::movement::by_size;
use super::util::{source, sources};
use crate::quant::tosa::{broadcast2, int_div, int_mul, left_shift, logical_right_shift, negate, right_shift, table_i16, table_i8};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::arith::{add_n, atan2, bitwise, bucketize, fake_quant, local_response_norm};
use crate::kernels::matrix::broadcast_to;

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let quantized = op.inputs.iter().flatten().chain(&op.outputs).find(|&&o| ctx.graph.operand(o).quant.is_quantized());
    if let (Some(o), false) = (quantized, matches!(op.kind, OpKind::BroadcastTo)) {
        return Err(format!("operand {o} is quantized; the CPU kernel of {} handles plain values", op.kind.name()));
    }
    Ok(())
}

/// The one-element integer constant at input `i` of `id`, sign-extended.
fn int_const(ctx: &CompileCtx, id: OpId, i: usize) -> Result<i64, String> {
    let k = ctx.graph.op(id).input(i).ok_or_else(|| format!("input {i} is absent"))?;
    let bytes = ctx.graph.operand(k).data.as_ref().map(|d| d.bytes()).ok_or_else(|| format!("input {i} must be a constant"))?;
    Ok(match *bytes {
        [a] => i64::from(a as i8),
        [a, b] => i64::from(i16::from_le_bytes([a, b])),
        [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
        _ => return Err(format!("input {i} must be one int8, int16 or int32")),
    })
}

/// Integer values of a run-time shape tensor.
pub(super) fn ints(t: &TensorRef<'_>) -> Result<Vec<i64>, String> {
    Ok(match t.dtype {
        DType::I32 => cast::<i32>(t.bytes)?.iter().map(|&v| v as i64).collect(),
        DType::I64 => cast::<i64>(t.bytes)?.to_vec(),
        other => return Err(format!("index values of type {other} are not supported")),
    })
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let ins = sources(ctx, id);
    let dtype = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?).dtype;
    match &op.kind {
        OpKind::AddN => Ok(built(ins, move |ins, outs| {
            match dtype {
                DType::F32 => {
                    let xs = ins.iter().map(|t| cast::<f32>(t.bytes)).collect::<Result<Vec<_>, _>>()?;
                    add_n(&xs, cast_mut::<f32>(outs[0].bytes)?);
                }
                DType::I32 => {
                    let xs = ins.iter().map(|t| cast::<i32>(t.bytes)).collect::<Result<Vec<_>, _>>()?;
                    let out = cast_mut::<i32>(outs[0].bytes)?;
                    out.copy_from_slice(xs.first().ok_or("ADD_N has no inputs")?);
                    for x in &xs[1..] {
                        out.iter_mut().zip(x.iter()).for_each(|(o, &v)| *o = o.wrapping_add(v));
                    }
                }
                other => return Err(format!("ADD_N of {other} is not supported")),
            }
            Ok(())
        })),
        OpKind::IntMul => {
            let shift_id = op.input(2).ok_or("input 2 (shift) is absent")?;
            let shift = ctx.graph.operand(shift_id).data.as_ref().and_then(|d| d.bytes().first().copied()).ok_or("the shift must be one constant int8")?;
            let shift = u32::from((shift as i8).clamp(0, 63) as u8);
            let (a, b) = (op.input(0).ok_or("input 0 is absent")?, op.input(1).ok_or("input 1 is absent")?);
            Ok(built(vec![source(ctx, a), source(ctx, b)], move |ins, outs| {
                let (od, out) = (outs[0].dims.to_vec(), cast_mut::<i32>(outs[0].bytes)?);
                match dtype {
                    DType::I8 => int_mul(cast::<i8>(ins[0].bytes)?, ins[0].dims, cast::<i8>(ins[1].bytes)?, ins[1].dims, shift, out, &od),
                    DType::I16 => int_mul(cast::<i16>(ins[0].bytes)?, ins[0].dims, cast::<i16>(ins[1].bytes)?, ins[1].dims, shift, out, &od),
                    DType::I32 => int_mul(cast::<i32>(ins[0].bytes)?, ins[0].dims, cast::<i32>(ins[1].bytes)?, ins[1].dims, shift, out, &od),
                    other => return Err(format!("IntMul of {other} is not supported")),
                }
                Ok(())
            }))
        }
        OpKind::IntBits(bits_op) => {
            let bits_op = *bits_op;
            // IntNegate's zero points, read once (core checked they are constants).
            let zps: Vec<i64> = if bits_op == IntBitsOp::Negate { (1..3).map(|i| int_const(ctx, id, i)).collect::<Result<_, _>>()? } else { Vec::new() };
            let srcs: Vec<_> = op.inputs.iter().flatten().map(|&i| source(ctx, i)).collect();
            Ok(built(srcs, move |ins, outs| {
                let od = outs[0].dims.to_vec();
                macro_rules! lanes {
                    ($t:ty, $bits:expr) => {{
                        let out = cast_mut::<$t>(outs[0].bytes)?;
                        let a = cast::<$t>(ins[0].bytes)?;
                        match bits_op {
                            IntBitsOp::Clz => out.iter_mut().zip(a).for_each(|(o, &v)| *o = (v as u32).leading_zeros() as $t),
                            IntBitsOp::LeftShift => {
                                broadcast2(a, ins[0].dims, cast::<$t>(ins[1].bytes)?, ins[1].dims, out, &od, |x, y| left_shift(x as i64, y as i64, $bits) as $t)
                            }
                            IntBitsOp::RightShift { round } => {
                                broadcast2(a, ins[0].dims, cast::<$t>(ins[1].bytes)?, ins[1].dims, out, &od, |x, y| right_shift(x as i64, y as i64, $bits, round) as $t)
                            }
                            IntBitsOp::LogicalRightShift => {
                                broadcast2(a, ins[0].dims, cast::<$t>(ins[1].bytes)?, ins[1].dims, out, &od, |x, y| logical_right_shift(x as i64, y as i64, $bits) as $t)
                            }
                            IntBitsOp::Negate => out.iter_mut().zip(a).for_each(|(o, &v)| *o = negate(v as i64, zps[0], zps[1], $bits) as $t),
                            IntBitsOp::Div => {
                                let mut zero = false;
                                broadcast2(a, ins[0].dims, cast::<$t>(ins[1].bytes)?, ins[1].dims, out, &od, |x, y| {
                                    int_div(x as i32, y as i32).unwrap_or_else(|| {
                                        zero = true;
                                        0
                                    }) as $t
                                });
                                if zero {
                                    return Err("IntDiv: division by zero (TOSA INTDIV requires a non-zero divisor)".into());
                                }
                            }
                        }
                    }};
                }
                match dtype {
                    DType::I8 => lanes!(i8, 8),
                    DType::I16 => lanes!(i16, 16),
                    DType::I32 => lanes!(i32, 32),
                    other => return Err(format!("integer bit ops on {other} are not supported")),
                }
                Ok(())
            }))
        }
        OpKind::Table => {
            let t = op.input(1).ok_or("input 1 (table) is absent")?;
            let x = op.input(0).ok_or("input 0 is absent")?;
            let Some(bytes) = ctx.graph.operand(t).data.as_ref().map(|d| d.bytes().to_vec()) else {
                // A table computed at run time (shape inference checked its length).
                return Ok(built(vec![source(ctx, x), source(ctx, t)], move |ins, outs| {
                    let want = if dtype == DType::I8 { 256 } else { 513 * 2 };
                    if ins[1].bytes.len() != want {
                        return Err(format!("the table has {} bytes; a {dtype} table has {want}", ins[1].bytes.len()));
                    }
                    match dtype {
                        DType::I8 => table_i8(cast::<i8>(ins[0].bytes)?, cast::<i8>(ins[1].bytes)?, cast_mut::<i8>(outs[0].bytes)?),
                        DType::I16 => table_i16(cast::<i16>(ins[0].bytes)?, cast::<i16>(ins[1].bytes)?, cast_mut::<i32>(outs[0].bytes)?),
                        other => return Err(format!("TABLE of {other} is not supported")),
                    }
                    Ok(())
                }));
            };
            let (t8, t16): (Vec<i8>, Vec<i16>) = if dtype == DType::I8 {
                (bytes.iter().map(|&b| b as i8).collect(), Vec::new())
            } else {
                (Vec::new(), bytes.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect())
            };
            if (dtype == DType::I8 && t8.len() != 256) || (dtype == DType::I16 && t16.len() != 513) {
                return Err("the table has the wrong length".into());
            }
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                match dtype {
                    DType::I8 => table_i8(cast::<i8>(ins[0].bytes)?, &t8, cast_mut::<i8>(outs[0].bytes)?),
                    DType::I16 => table_i16(cast::<i16>(ins[0].bytes)?, &t16, cast_mut::<i32>(outs[0].bytes)?),
                    other => return Err(format!("TABLE of {other} is not supported")),
                }
                Ok(())
            }))
        }
        OpKind::Atan2 => Ok(built(ins, |ins, outs| {
            atan2(cast::<f32>(ins[0].bytes)?, cast::<f32>(ins[1].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
            Ok(())
        })),
        OpKind::Bitwise(b) => {
            let op = *b;
            Ok(built(ins, move |ins, outs| {
                let (a, b) = (&ins[0], &ins[1]);
                let od = outs[0].dims;
                macro_rules! go {
                    ($t:ty) => {
                        bitwise::<$t>(op, cast(a.bytes)?, a.dims, cast(b.bytes)?, b.dims, cast_mut(outs[0].bytes)?, od)
                    };
                }
                match dtype {
                    DType::U8 => go!(u8),
                    DType::I8 => go!(i8),
                    DType::I16 => go!(i16),
                    DType::I32 => go!(i32),
                    DType::I64 => go!(i64),
                    other => return Err(format!("bitwise ops on {other} are not supported")),
                }
                Ok(())
            }))
        }
        OpKind::Bucketize { boundaries } => {
            let bounds = boundaries.clone();
            Ok(built(ins, move |ins, outs| {
                let out = cast_mut::<i32>(outs[0].bytes)?;
                match dtype {
                    DType::F32 => bucketize(cast::<f32>(ins[0].bytes)?.iter().map(|&v| v as f64), &bounds, out),
                    DType::I32 => bucketize(cast::<i32>(ins[0].bytes)?.iter().map(|&v| v as f32 as f64), &bounds, out),
                    // TFLite compares an int64 with a float boundary in float.
                    DType::I64 => bucketize(cast::<i64>(ins[0].bytes)?.iter().map(|&v| v as f32 as f64), &bounds, out),
                    other => return Err(format!("BUCKETIZE of {other} is not supported")),
                }
                Ok(())
            }))
        }
        &OpKind::FakeQuant { min, max, num_bits, narrow_range } => Ok(built(ins, move |ins, outs| {
            fake_quant(min, max, num_bits, narrow_range, cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
            Ok(())
        })),
        OpKind::LocalResponseNorm(p) => {
            let p = *p;
            Ok(built(ins, move |ins, outs| {
                let depth = ins[0].dims.last().copied().unwrap_or(1);
                local_response_norm(cast::<f32>(ins[0].bytes)?, depth, p.radius.max(0) as usize, p.bias, p.alpha, p.beta, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }))
        }
        OpKind::BroadcastTo => Ok(built(ins, move |ins, outs| {
            let od = outs[0].dims;
            by_size!(dtype, |T| broadcast_to(cast::<T>(ins[0].bytes)?, ins[0].dims, od, cast_mut::<T>(outs[0].bytes)?));
            Ok(())
        })),
        OpKind::BroadcastArgs => Ok(built(ins, move |ins, outs| {
            let (a, b) = (ints(&ins[0])?, ints(&ins[1])?);
            let n = a.len().max(b.len());
            let at = |v: &[i64], k: usize| if k + v.len() >= n { v[k + v.len() - n] } else { 1 };
            let mut r = Vec::with_capacity(n);
            for k in 0..n {
                let (x, y) = (at(&a, k), at(&b, k));
                r.push(match (x, y) {
                    _ if x == y => x,
                    (1, y) => y,
                    (x, 1) => x,
                    _ => return Err(format!("shapes {a:?} and {b:?} cannot be broadcast together")),
                });
            }
            match dtype {
                DType::I64 => cast_mut::<i64>(outs[0].bytes)?.copy_from_slice(&r),
                _ => cast_mut::<i32>(outs[0].bytes)?.iter_mut().zip(&r).for_each(|(o, &v)| *o = v as i32),
            }
            Ok(())
        })),
        _ => Err("not an arithmetic builtin".into()),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["AddN", "IntMul", "Table", "IntLeftShift", "IntRightShift", "IntLogicalRightShift", "IntDiv", "IntNegate", "Clz", "Atan2", "BitwiseXor", "BitwiseAnd", "BitwiseOr", "RightShift", "Bucketize", "FakeQuant", "LocalResponseNormalization", "BroadcastTo", "BroadcastArgs"], supports, build);
}
