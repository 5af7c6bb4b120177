//! Data movement for every dtype: concatenation, reshape, transpose, pad, mirror pad. Elements
//! are moved as unsigned words of the dtype's size, so one kernel serves all types. Variable
//! reads and writes copy whole tensors from or into variable state, bytes as they are.

use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, MirrorMode, OpId, OpKind, Quantization, TensorMut, TensorRef};

use super::util::{QuantIo, dtype, qp, quantized, source, sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::quant::misc;
use crate::quant::QParams;

use crate::kernels::data::{concat, mirror_pad, pad, transpose, MirrorMode as M};

/// A CONCATENATION with a quantized input or output takes the integer kernel (which rescales
/// uint8 inputs); the other ops move quantized values as they are.
fn quantized_op(ctx: &CompileCtx, id: OpId) -> bool {
    let op = ctx.graph.op(id);
    matches!(op.kind, OpKind::Concatenation { .. }) && (op.inputs.iter().flatten().any(|&x| quantized(ctx, x)) || quantized(ctx, op.outputs[0]))
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let out = ctx.graph.operand(op.outputs[0]);
    let x = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?);
    if x.dtype != out.dtype {
        return Err(format!("input is {} but output is {}", x.dtype, out.dtype));
    }
    if x.quant != out.quant && x.quant.is_quantized() {
        return Err("requantizing data movement is not implemented yet".into());
    }
    match &op.kind {
        OpKind::Concatenation { act, .. } if *act != Activation::None => Err("fused activation on concatenation is not supported".into()),
        // A computed permutation / paddings decides the output shape, so the op is compiled at
        // run time with its values as constants; `build` reads them there.
        _ => Ok(()),
    }
}

/// Runs `f` with the input and output viewed as words of the dtype's size.
macro_rules! by_size {
    ($dtype:expr, |$t:ident| $body:expr) => {
        match $dtype.size() {
            1 => { type $t = u8; $body }
            2 => { type $t = u16; $body }
            4 => { type $t = u32; $body }
            _ => { type $t = u64; $body }
        }
    };
}

fn pads_of(ctx: &CompileCtx, id: OpId) -> Result<Vec<(usize, usize)>, String> {
    let op = ctx.graph.op(id);
    let v = ctx.graph.const_ints(id, op.input(1).ok_or("input 1 (paddings) is absent")?).map_err(|e| e.to_string())?;
    Ok(v.chunks_exact(2).map(|c| (c[0].max(0) as usize, c[1].max(0) as usize)).collect())
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let QuantIo { out, ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Concatenation { .. } => {
            for &x in op.inputs.iter().flatten() {
                if dtype(ctx, x) != ot {
                    return Err(format!("concatenation of {} into {ot}", dtype(ctx, x)));
                }
                if ot != DType::U8 && ctx.graph.operand(x).quant != ctx.graph.operand(out).quant {
                    return Err(format!("{ot} concatenation needs every input quantized like the output (TFLite requires it)"));
                }
            }
            Ok(())
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let dtype = ctx.graph.operand(op.outputs[0]).dtype;
    let mut inputs = sources(ctx, id);
    match &op.kind {
        OpKind::Concatenation { axis, .. } => {
            let out_dims = ctx.dims(op.outputs[0]).to_vec();
            let rank = out_dims.len() as i32;
            let axis = if *axis < 0 { axis + rank } else { *axis } as usize;
            let outer: usize = out_dims[..axis].iter().product();
            let inner: usize = out_dims[axis + 1..].iter().product();
            Ok(built(inputs, move |ins, outs| {
                let sizes: Vec<usize> = ins.iter().map(|t| t.dims[axis]).collect();
                by_size!(dtype, |T| {
                    let parts: Vec<&[T]> = ins.iter().map(|t| cast::<T>(t.bytes)).collect::<Result<_, _>>()?;
                    concat(&parts, &sizes, outer, inner, cast_mut::<T>(outs[0].bytes)?);
                });
                Ok(())
            }))
        }
        OpKind::Reshape { .. } => {
            inputs.truncate(1);
            Ok(built(inputs, |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]| {
                outs[0].bytes.copy_from_slice(ins[0].bytes);
                Ok(())
            }))
        }
        OpKind::Transpose => {
            let x = op.input(0).ok_or("input 0 is absent")?;
            let rank = ctx.dims(x).len() as i64;
            let perm: Vec<usize> = ctx
                .graph
                .const_ints(id, op.input(1).ok_or("input 1 (perm) is absent")?)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|p| if p < 0 { (p + rank) as usize } else { p as usize })
                .collect();
            inputs.truncate(1);
            Ok(built(inputs, move |ins, outs| {
                by_size!(dtype, |T| transpose(cast::<T>(ins[0].bytes)?, ins[0].dims, &perm, cast_mut::<T>(outs[0].bytes)?));
                Ok(())
            }))
        }
        OpKind::Pad => {
            let pads = pads_of(ctx, id)?;
            // PADV2's value, else zero; quantized tensors pad with their zero point (TFLite).
            let value: Option<Vec<u8>> = match op.input(2) {
                Some(v) => Some(ctx.graph.operand(v).data.as_ref().ok_or("the pad value must be a constant")?.bytes().to_vec()),
                None => match ctx.graph.operand(op.outputs[0]).quant {
                    Quantization::PerTensor { zero_point, .. } => Some(match dtype {
                        DType::U8 => vec![zero_point as u8],
                        DType::I8 => vec![zero_point as i8 as u8],
                        DType::I16 => (zero_point as i16).to_le_bytes().to_vec(),
                        _ => vec![0; dtype.size()],
                    }),
                    _ => None,
                },
            };
            inputs.truncate(1);
            Ok(built(inputs, move |ins, outs| {
                by_size!(dtype, |T| {
                    let v: T = match &value {
                        Some(b) if b.len() == std::mem::size_of::<T>() => bytemuck::pod_read_unaligned(b),
                        Some(_) => return Err("the pad value has the wrong size".into()),
                        None => 0,
                    };
                    pad(cast::<T>(ins[0].bytes)?, ins[0].dims, &pads, v, cast_mut::<T>(outs[0].bytes)?);
                });
                Ok(())
            }))
        }
        OpKind::MirrorPad(mode) => {
            let pads = pads_of(ctx, id)?;
            let m = match mode {
                MirrorMode::Reflect => M::Reflect,
                MirrorMode::Symmetric => M::Symmetric,
            };
            inputs.truncate(1);
            Ok(built(inputs, move |ins, outs| {
                by_size!(dtype, |T| mirror_pad(cast::<T>(ins[0].bytes)?, ins[0].dims, &pads, m, cast_mut::<T>(outs[0].bytes)?));
                Ok(())
            }))
        }
        _ => Err("not a data movement op".into()),
    }
}

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { out, ot, od, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::Concatenation { axis, .. } => {
            let rank = od.len() as i32;
            let axis = if *axis < 0 { axis + rank } else { *axis } as usize;
            let outer: usize = od[..axis].iter().product();
            let inner: usize = od[axis + 1..].iter().product();
            let oq = qp(ctx, out)?;
            let qs: Vec<QParams> = op.inputs.iter().flatten().map(|&x| qp(ctx, x)).collect::<Result<_, _>>()?;
            let size = ot.size();
            Ok(built(sources(ctx, id), move |ins, outs| {
                let parts: Vec<(&[u8], usize, QParams)> = ins.iter().zip(&qs).map(|(t, &q)| (t.bytes, t.dims[axis] * size, q)).collect();
                if size == 1 {
                    misc::concat_with_scaling(&parts, outer, inner, oq, outs[0].bytes);
                } else {
                    let mut o = 0;
                    for k in 0..outer {
                        for &(d, n, _) in &parts {
                            let len = n * inner;
                            outs[0].bytes[o..o + len].copy_from_slice(&d[k * len..(k + 1) * len]);
                            o += len;
                        }
                    }
                }
                Ok(())
            }))
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
/// Variable reads and writes copy bytes: every type, quantized or not, as long as the types
/// agree (shape inference checked that).
fn supports_variable(_: &CompileCtx, _: OpId) -> Result<(), String> {
    Ok(())
}

fn build_variable(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let name = |i: usize| op.input(i).map_or_else(String::new, |v| ctx.graph.operand(v).name.clone());
    if matches!(op.kind, OpKind::VariableWrite) {
        let [value, var, flag] = [0, 1, 2].map(|i| op.input(i));
        let (Some(value), Some(var), Some(flag)) = (value, var, flag) else { return Err("VariableWrite needs a value, a variable and its flag".into()) };
        let mut b = built(vec![source(ctx, value)], move |ins, outs| {
            let [v, w] = outs else { return Err("VariableWrite: the variable and its flag are missing".into()) };
            if v.bytes.len() != ins[0].bytes.len() {
                return Err(format!("VariableWrite: {} bytes into a variable of {}", ins[0].bytes.len(), v.bytes.len()));
            }
            v.bytes.copy_from_slice(ins[0].bytes);
            w.bytes.fill(1);
            Ok(())
        });
        b.state = vec![var, flag];
        return Ok(b);
    }
    let variable = name(0);
    let has_init = op.input(2).is_some();
    Ok(built(sources(ctx, id), move |ins, outs| {
        let from = match (ins[1].bytes.first().copied().unwrap_or(0) != 0, has_init) {
            (true, _) => ins[0].bytes,
            (false, true) => ins[2].bytes,
            (false, false) => return Err(format!("variable '{variable}' is read before anything is written to it and has no initial value")),
        };
        let out = &mut outs[0].bytes;
        if out.len() != from.len() {
            return Err(format!("VariableRead: a variable of {} bytes into an output of {}", from.len(), out.len()));
        }
        out.copy_from_slice(from);
        Ok(())
    }))
}

pub(super) fn register(r: &mut Registry) {
    r.ops(&["VariableRead", "VariableWrite"], supports_variable, build_variable);
    r.ops_with_int(&["Concatenation", "Reshape", "Transpose", "Pad", "MirrorPad"], supports, build, (quantized_op, supports_quantized, build_quantized));
}
