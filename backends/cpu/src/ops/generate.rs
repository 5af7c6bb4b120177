//! Ops that create tensors: FILL, RANGE, SHAPE, RANK, ZEROS_LIKE, ONES_LIKE, ONE_HOT. Shapes
//! (and RANGE's values) are known at compile, so most kernels write precomputed bytes.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind};

use super::movement::by_size;
use super::util::{source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::movement::one_hot;

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(o).quant.is_quantized() && !matches!(op.kind, OpKind::Shape | OpKind::Rank) {
            return Err(format!("operand {o} is quantized; this CPU kernel handles plain values"));
        }
    }
    Ok(())
}

/// A kernel writing the same bytes on every run.
fn constant(bytes: Vec<u8>) -> Built {
    built(vec![], move |_, outs| {
        outs[0].bytes.copy_from_slice(&bytes);
        Ok(())
    })
}

/// The little-endian bytes of 1 in `dtype`.
fn one(dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F32 => 1f32.to_le_bytes().to_vec(),
        DType::F16 => half::f16::ONE.to_le_bytes().to_vec(),
        DType::I16 => 1i16.to_le_bytes().to_vec(),
        DType::I32 => 1i32.to_le_bytes().to_vec(),
        DType::I64 => 1i64.to_le_bytes().to_vec(),
        DType::I8 | DType::U8 | DType::Bool => vec![1],
        DType::C64 => [1f32.to_le_bytes(), 0f32.to_le_bytes()].concat(),
    }
}

/// RANGE's values, accumulated `value += delta` as TFLite does (for floats this differs from
/// `start + i * delta` in the last bits).
fn range_bytes(ctx: &CompileCtx, id: OpId, n: usize) -> Result<Vec<u8>, String> {
    let op = ctx.graph.op(id);
    let dtype = ctx.graph.operand(op.outputs[0]).dtype;
    let scalar = |i: usize| -> Result<Vec<u8>, String> {
        let o = ctx.graph.operand(op.input(i).ok_or("a RANGE input is absent")?);
        Ok(o.data.as_ref().ok_or("RANGE inputs must be constant")?.bytes().to_vec())
    };
    let (s, d) = (scalar(0)?, scalar(2)?);
    let mut out = Vec::with_capacity(n * dtype.size());
    match dtype {
        DType::F32 => {
            let (mut v, d) = (f32::from_le_bytes(s[..4].try_into().map_err(|_| "bad start")?), f32::from_le_bytes(d[..4].try_into().map_err(|_| "bad delta")?));
            for _ in 0..n {
                out.extend_from_slice(&v.to_le_bytes());
                v += d;
            }
        }
        DType::I32 => {
            let (mut v, d) = (i32::from_le_bytes(s[..4].try_into().map_err(|_| "bad start")?), i32::from_le_bytes(d[..4].try_into().map_err(|_| "bad delta")?));
            for _ in 0..n {
                out.extend_from_slice(&v.to_le_bytes());
                v = v.wrapping_add(d);
            }
        }
        DType::I64 => {
            let (mut v, d) = (i64::from_le_bytes(s[..8].try_into().map_err(|_| "bad start")?), i64::from_le_bytes(d[..8].try_into().map_err(|_| "bad delta")?));
            for _ in 0..n {
                out.extend_from_slice(&v.to_le_bytes());
                v = v.wrapping_add(d);
            }
        }
        other => return Err(format!("RANGE of {other} is not supported")),
    }
    Ok(out)
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let out = ctx.graph.operand(op.outputs[0]);
    let (dtype, od) = (out.dtype, ctx.dims(op.outputs[0]).to_vec());
    let input = |i: usize| op.input(i).ok_or_else(|| format!("input {i} is absent"));
    match &op.kind {
        OpKind::Fill => Ok(built(vec![source(ctx, input(1)?)], move |ins, outs| {
            let v = ins[0].bytes.to_vec();
            for chunk in outs[0].bytes.chunks_exact_mut(v.len().max(1)) {
                chunk.copy_from_slice(&v);
            }
            Ok(())
        })),
        OpKind::Range => Ok(constant(range_bytes(ctx, id, od.first().copied().unwrap_or(0))?)),
        OpKind::Shape => {
            let dims = ctx.dims(input(0)?);
            let bytes = match dtype {
                DType::I64 => dims.iter().flat_map(|&d| (d as i64).to_le_bytes()).collect(),
                _ => dims.iter().flat_map(|&d| (d as i32).to_le_bytes()).collect(),
            };
            Ok(constant(bytes))
        }
        OpKind::Rank => Ok(constant((ctx.dims(input(0)?).len() as i32).to_le_bytes().to_vec())),
        OpKind::ZerosLike => Ok(built(vec![], |_, outs| {
            outs[0].bytes.fill(0);
            Ok(())
        })),
        OpKind::OnesLike => {
            let one = one(dtype);
            let n = od.iter().product::<usize>();
            Ok(constant(one.repeat(n)))
        }
        OpKind::OneHot { axis } => {
            let idx = input(0)?;
            let id_dims = ctx.dims(idx).to_vec();
            let a = if *axis < 0 { id_dims.len() } else { *axis as usize };
            let outer: usize = id_dims[..a].iter().product();
            let inner: usize = id_dims[a..].iter().product();
            let depth = od[a];
            let sources = vec![source(ctx, idx), source(ctx, input(2)?), source(ctx, input(3)?)];
            Ok(built(sources, move |ins, outs| {
                let indices: Vec<i64> = match ins[0].dtype {
                    DType::I64 => cast::<i64>(ins[0].bytes)?.to_vec(),
                    DType::I32 => cast::<i32>(ins[0].bytes)?.iter().map(|&v| v as i64).collect(),
                    DType::U8 => ins[0].bytes.iter().map(|&v| v as i64).collect(),
                    DType::I8 => ins[0].bytes.iter().map(|&v| v as i8 as i64).collect(),
                    other => return Err(format!("one_hot indices of type {other} are not supported")),
                };
                by_size!(dtype, |T| {
                    let (on, off) = (cast::<T>(ins[1].bytes)?[0], cast::<T>(ins[2].bytes)?[0]);
                    one_hot(&indices, outer, depth, inner, on, off, cast_mut::<T>(outs[0].bytes)?);
                });
                Ok(())
            }))
        }
        _ => Err("not a generating op".into()),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Fill", "Range", "Shape", "Rank", "ZerosLike", "OnesLike", "OneHot"], supports, build);
}
