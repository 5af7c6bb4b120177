//! Builders of SCATTER_ND, SPARSE_TO_DENSE, DYNAMIC_UPDATE_SLICE, EMBEDDING_LOOKUP,
//! SEGMENT_SUM and UNSORTED_SEGMENT_*. Index tensors are read at run time and checked there.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, Quantization, SegmentOp};

use super::arith::ints;
use super::movement::by_size;
use super::util::{sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::scatter::{dynamic_update_slice, embedding_lookup, embedding_lookup_dequant, scatter_nd, segment_reduce, sparse_to_dense, Combine};

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let data_movement = matches!(op.kind, OpKind::DynamicUpdateSlice | OpKind::EmbeddingLookup);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(o).quant.is_quantized() && !data_movement {
            return Err(format!("operand {o} is quantized; the CPU kernel of {} handles plain values", op.kind.name()));
        }
    }
    Ok(())
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let ins = sources(ctx, id);
    let in_type = |i: usize| op.input(i).map(|o| ctx.graph.operand(o).dtype).ok_or_else(|| format!("input {i} is absent"));
    let out_type = ctx.graph.operand(op.outputs[0]).dtype;
    match &op.kind {
        OpKind::ScatterNd => Ok(built(ins, move |ins, outs| {
            let ix = ints(&ins[0])?;
            let k = ins[0].dims.last().copied().unwrap_or(0);
            let od = outs[0].dims;
            macro_rules! go {
                ($t:ty, $add:expr) => {
                    scatter_nd::<$t>(&ix, k, cast(ins[1].bytes)?, od, cast_mut(outs[0].bytes)?, $add)?
                };
            }
            match out_type {
                DType::F32 => go!(f32, |a, b| a + b),
                DType::I32 => go!(i32, |a: i32, b| a.wrapping_add(b)),
                DType::I64 => go!(i64, |a: i64, b| a.wrapping_add(b)),
                DType::I8 => go!(i8, |a: i8, b| a.wrapping_add(b)),
                DType::U8 => go!(u8, |a: u8, b| a.wrapping_add(b)),
                DType::Bool => go!(u8, |a: u8, b| (a != 0 || b != 0) as u8),
                other => return Err(format!("SCATTER_ND of {other} is not supported")),
            }
            Ok(())
        })),
        OpKind::ScatterRows => Ok(built(ins, move |ins, outs| {
            let v = ins[0].dims;
            let (n, k, c, w) = (v[0], v[1], v[2], ins[1].dims[1]);
            let rows = cast::<i32>(ins[1].bytes)?;
            by_size!(out_type, |T| {
                let (vals, ups, out) = (cast::<T>(ins[0].bytes)?, cast::<T>(ins[2].bytes)?, cast_mut::<T>(outs[0].bytes)?);
                out.copy_from_slice(vals);
                let mut written = vec![false; n * k];
                for b in 0..n {
                    for j in 0..w {
                        let r = rows[b * w + j];
                        // The specification REQUIREs each row in range and written once.
                        let Some(r) = usize::try_from(r).ok().filter(|&r| r < k) else {
                            return Err(format!("SCATTER row {r} at [{b}, {j}] is outside 0..{k}"));
                        };
                        if std::mem::replace(&mut written[b * k + r], true) {
                            return Err(format!("SCATTER writes row {r} of batch {b} twice"));
                        }
                        out[(b * k + r) * c..][..c].copy_from_slice(&ups[(b * w + j) * c..][..c]);
                    }
                }
            });
            Ok(())
        })),
        OpKind::SparseToDense { .. } => Ok(built(ins, move |ins, outs| {
            let ix = ints(&ins[0])?;
            let k = if ins[0].dims.len() == 2 { ins[0].dims[1] } else { 1 };
            let scalar = ins[2].dims.is_empty();
            let od = outs[0].dims;
            by_size!(out_type, |T| {
                let default = *cast::<T>(ins[3].bytes)?.first().ok_or("the default value is empty")?;
                sparse_to_dense::<T>(&ix, k, cast(ins[2].bytes)?, scalar, default, od, cast_mut(outs[0].bytes)?)?
            });
            Ok(())
        })),
        OpKind::DynamicUpdateSlice => Ok(built(ins, move |ins, outs| {
            let start = ints(&ins[2])?;
            by_size!(out_type, |T| dynamic_update_slice::<T>(cast(ins[0].bytes)?, ins[0].dims, cast(ins[1].bytes)?, ins[1].dims, &start, cast_mut(outs[0].bytes)?));
            Ok(())
        })),
        OpKind::EmbeddingLookup => {
            let table = ctx.graph.operand(op.input(1).ok_or("input 1 is absent")?);
            let hybrid = matches!(table.dtype, DType::U8 | DType::I8) && out_type == DType::F32;
            let scales = match &table.quant {
                Quantization::PerTensor { scale, .. } => vec![*scale],
                Quantization::PerAxis { scales, .. } => scales.clone(),
                Quantization::None => vec![1.0],
            };
            Ok(built(ins, move |ins, outs| {
                let lookup = cast::<i32>(ins[0].bytes)?;
                let rows = ins[1].dims.first().copied().unwrap_or(0);
                let row: usize = ins[1].dims[1..].iter().product();
                if hybrid {
                    return embedding_lookup_dequant(lookup, ins[1].bytes, rows, row, &scales, cast_mut::<f32>(outs[0].bytes)?);
                }
                by_size!(out_type, |T| embedding_lookup::<T>(lookup, cast(ins[1].bytes)?, rows, row, cast_mut(outs[0].bytes)?)?);
                Ok(())
            }))
        }
        OpKind::SegmentSum | OpKind::UnsortedSegment(_) => {
            let how = match op.kind {
                OpKind::UnsortedSegment(SegmentOp::Max) => Combine::Max,
                OpKind::UnsortedSegment(SegmentOp::Min) => Combine::Min,
                OpKind::UnsortedSegment(SegmentOp::Prod) => Combine::Prod,
                _ => Combine::Sum,
            };
            let t = in_type(0)?;
            Ok(built(ins, move |ins, outs| {
                let ids = cast::<i32>(ins[1].bytes)?;
                let inner: usize = ins[0].dims[ins[1].dims.len().min(ins[0].dims.len())..].iter().product();
                match t {
                    DType::F32 => segment_reduce(cast::<f32>(ins[0].bytes)?, ids, inner, how, cast_mut(outs[0].bytes)?),
                    DType::I32 => segment_reduce(cast::<i32>(ins[0].bytes)?, ids, inner, how, cast_mut(outs[0].bytes)?),
                    other => Err(format!("segment reductions of {other} are not supported")),
                }
            }))
        }
        _ => Err("not a scatter op".into()),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["ScatterNd", "ScatterRows", "SparseToDense", "DynamicUpdateSlice", "EmbeddingLookup", "SegmentSum"], supports, build);
    r.ops(&["UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"], supports, build);
}
