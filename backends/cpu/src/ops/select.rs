//! Builders of WHERE, UNIQUE and NON_MAX_SUPPRESSION_V4/V5. Their output lengths come from
//! values; when those are computed at run time the op runs as a dynamic step, compiled for
//! the dims its inputs give.

use nnrt_core::infer::unique_keys;
use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind};

use super::movement::by_size;
use super::util::{sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::select::{non_max_suppression, unique, where_coords};

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    if matches!(op.kind, OpKind::NonMaxSuppression { .. }) {
        for &o in op.inputs.iter().flatten() {
            if ctx.graph.operand(o).quant.is_quantized() {
                return Err(format!("operand {o} is quantized; non-max suppression takes float32 boxes and scores"));
            }
        }
    }
    Ok(())
}

/// The one float of a scalar tensor.
fn scalar_f32(b: &[u8]) -> Result<f32, String> {
    cast::<f32>(b)?.first().copied().ok_or_else(|| "a scalar input is empty".to_string())
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let ins = sources(ctx, id);
    let dtype = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?).dtype;
    match &op.kind {
        OpKind::Where => Ok(built(ins, move |ins, outs| {
            let out = cast_mut::<i64>(outs[0].bytes)?;
            let (b, dims) = (ins[0].bytes, ins[0].dims);
            match dtype {
                DType::F32 => where_coords(cast::<f32>(b)?.iter().map(|&v| v != 0.0), dims, out),
                _ => where_coords(b.chunks_exact(dtype.size()).map(|c| c.iter().any(|&x| x != 0)), dims, out),
            }
            Ok(())
        })),
        OpKind::Unique => {
            let idx_type = ctx.graph.operand(op.outputs[1]).dtype;
            Ok(built(ins, move |ins, outs| {
                let (first, idx) = unique(&unique_keys(dtype, ins[0].bytes));
                let (vals, rest) = outs.split_at_mut(1);
                by_size!(dtype, |T| {
                    let x = cast::<T>(ins[0].bytes)?;
                    let out = cast_mut::<T>(vals[0].bytes)?;
                    if out.len() != first.len() {
                        return Err(format!("UNIQUE found {} values but its output holds {}", first.len(), out.len()));
                    }
                    out.iter_mut().zip(&first).for_each(|(o, &i)| *o = x[i]);
                });
                match idx_type {
                    DType::I64 => cast_mut::<i64>(rest[0].bytes)?.copy_from_slice(&idx),
                    _ => cast_mut::<i32>(rest[0].bytes)?.iter_mut().zip(&idx).for_each(|(o, &v)| *o = v as i32),
                }
                Ok(())
            }))
        }
        OpKind::NonMaxSuppression { v5 } => {
            let v5 = *v5;
            Ok(built(ins, move |ins, outs| {
                let boxes = cast::<f32>(ins[0].bytes)?;
                let scores = cast::<f32>(ins[1].bytes)?;
                let max_out = *cast::<i32>(ins[2].bytes)?.first().ok_or("max_output_size is empty")?;
                if max_out < 0 {
                    return Err(format!("max_output_size {max_out} must be >= 0"));
                }
                let (iou, thr) = (scalar_f32(ins[3].bytes)?, scalar_f32(ins[4].bytes)?);
                let sigma = if v5 { scalar_f32(ins[5].bytes)? } else { 0.0 };
                let sel = non_max_suppression(boxes, scores, max_out as usize, iou, thr, sigma);
                let (first, rest) = outs.split_at_mut(1);
                let indices = cast_mut::<i32>(first[0].bytes)?;
                indices.fill(0);
                indices.iter_mut().zip(&sel).for_each(|(o, s)| *o = s.0 as i32);
                let count = if v5 {
                    let (sc, cnt) = rest.split_at_mut(1);
                    let sc = cast_mut::<f32>(sc[0].bytes)?;
                    sc.fill(0.0);
                    sc.iter_mut().zip(&sel).for_each(|(o, s)| *o = s.1);
                    &mut cnt[0]
                } else {
                    &mut rest[0]
                };
                cast_mut::<i32>(count.bytes)?[0] = sel.len() as i32;
                Ok(())
            }))
        }
        _ => Err("not a selection op".into()),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Where", "Unique", "NonMaxSuppressionV4", "NonMaxSuppressionV5"], supports, build);
}
