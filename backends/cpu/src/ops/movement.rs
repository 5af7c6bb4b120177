//! Data movement for every element type: SPLIT, SPLIT_V, PACK, UNPACK, SQUEEZE, EXPAND_DIMS,
//! SLICE, STRIDED_SLICE, GATHER, GATHER_ND, TILE, DILATE, REVERSE_V2, SPACE_TO_DEPTH, DEPTH_TO_SPACE,
//! SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND. Elements move as unsigned words of the dtype's size;
//! index-valued parameters were checked constant by shape inference and are read here once.

use nnrt_core::infer::strided_slice_plan;
use nnrt_core::{cast, cast_mut, CompileCtx, DType, InputSource, OpId, OpKind, Quantization, TensorMut, TensorRef};

use super::util::{nhwc, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::data::{concat, transpose};
use crate::kernels::movement::{batch_to_space, gather, gather_nd, reverse, space_to_batch, split, strided_copy, tile, BlockGeom};
use crate::kernels::small::Small;

/// Runs `$body` with `$t` the unsigned word type of `$dtype`'s size.
macro_rules! by_size {
    ($dtype:expr, |$t:ident| $body:expr) => {
        match $dtype.size() {
            1 => {
                type $t = u8;
                $body
            }
            2 => {
                type $t = u16;
                $body
            }
            4 => {
                type $t = u32;
                $body
            }
            _ => {
                type $t = u64;
                $body
            }
        }
    };
}
pub(crate) use by_size;

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    if matches!(op.kind, OpKind::SpaceToDepth { .. } | OpKind::DepthToSpace { .. } | OpKind::SpaceToBatchNd | OpKind::BatchToSpaceNd) {
        nhwc(ctx, id)?;
    }
    let data = match op.kind {
        OpKind::Split { .. } => 1,
        _ => 0,
    };
    let x = ctx.graph.operand(op.input(data).ok_or("the data input is absent")?);
    for (k, &o) in op.outputs.iter().enumerate() {
        let out = ctx.graph.operand(o);
        if out.dtype != x.dtype {
            return Err(format!("input is {} but output {k} is {}", x.dtype, out.dtype));
        }
        if out.quant != x.quant && x.quant.is_quantized() {
            return Err("requantizing data movement is not implemented yet".into());
        }
    }
    if let OpKind::Pack { .. } = op.kind {
        for &i in op.inputs.iter().flatten() {
            if ctx.graph.operand(i).quant != x.quant {
                return Err(format!("input {i} is quantized differently from input 0 (requantizing PACK is not implemented)"));
            }
        }
    }
    Ok(())
}

fn ints(ctx: &CompileCtx, id: OpId, i: usize) -> Result<Vec<i64>, String> {
    let op = ctx.graph.op(id);
    ctx.graph.const_ints(id, op.input(i).ok_or_else(|| format!("input {i} is absent"))?).map_err(|e| e.to_string())
}

fn axis(a: i64, rank: usize) -> usize {
    if a < 0 {
        (a + rank as i64) as usize
    } else {
        a as usize
    }
}

/// Integer indices of a run-time tensor (int16, int32 or int64) as i64; a few (a recurrent
/// loop's GATHER of one time step) without a heap allocation.
fn index_values(t: &TensorRef<'_>) -> Result<Small<i64>, String> {
    Ok(match t.dtype {
        DType::I16 => cast::<i16>(t.bytes)?.iter().map(|&v| v as i64).collect(),
        DType::I32 => cast::<i32>(t.bytes)?.iter().map(|&v| v as i64).collect(),
        DType::I64 => cast::<i64>(t.bytes)?.iter().copied().collect(),
        other => return Err(format!("indices of type {other} are not supported")),
    })
}

/// A kernel that copies input 0 unchanged (SQUEEZE, EXPAND_DIMS).
fn copy(inputs: Vec<InputSource>) -> Built {
    built(inputs, |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]| {
        outs[0].bytes.copy_from_slice(ins[0].bytes);
        Ok(())
    })
}

/// `[outer, sizes…, inner]` cut along `axis` of `dims` into the outputs.
fn split_kernel(x: InputSource, dims: &[usize], axis: usize, sizes: Vec<usize>, dtype: DType) -> Built {
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis + 1..].iter().product();
    built(vec![x], move |ins, outs| {
        by_size!(dtype, |T| {
            let mut parts: Vec<&mut [T]> = outs.iter_mut().map(|o| cast_mut::<T>(o.bytes)).collect::<Result<_, _>>()?;
            split(cast::<T>(ins[0].bytes)?, outer, &sizes, inner, &mut parts);
        });
        Ok(())
    })
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let dtype = ctx.graph.operand(op.outputs[0]).dtype;
    let input = |i: usize| op.input(i).ok_or_else(|| format!("input {i} is absent"));
    let out_dims = |k: usize| ctx.dims(op.outputs[k]).to_vec();
    match &op.kind {
        OpKind::Split { .. } => {
            let x = input(1)?;
            let dims = ctx.dims(x).to_vec();
            let a = axis(ctx.graph.const_ints(id, input(0)?).map_err(|e| e.to_string())?[0], dims.len());
            let sizes = (0..op.outputs.len()).map(|k| ctx.dims(op.outputs[k])[a]).collect();
            Ok(split_kernel(source(ctx, x), &dims, a, sizes, dtype))
        }
        OpKind::SplitV { .. } => {
            let x = input(0)?;
            let dims = ctx.dims(x).to_vec();
            let a = axis(ints(ctx, id, 2)?[0], dims.len());
            let sizes = (0..op.outputs.len()).map(|k| ctx.dims(op.outputs[k])[a]).collect();
            Ok(split_kernel(source(ctx, x), &dims, a, sizes, dtype))
        }
        OpKind::Unpack { axis: ax, .. } => {
            let x = input(0)?;
            let dims = ctx.dims(x).to_vec();
            let a = axis(*ax as i64, dims.len());
            Ok(split_kernel(source(ctx, x), &dims, a, vec![1; op.outputs.len()], dtype))
        }
        OpKind::Pack { axis: ax, .. } => {
            let od = out_dims(0);
            let a = axis(*ax as i64, od.len());
            let outer: usize = od[..a].iter().product();
            let inner: usize = od[a + 1..].iter().product();
            let inputs = op.inputs.iter().flatten().map(|&i| source(ctx, i)).collect::<Vec<_>>();
            Ok(built(inputs, move |ins, outs| {
                let sizes = vec![1; ins.len()];
                by_size!(dtype, |T| {
                    let parts: Vec<&[T]> = ins.iter().map(|t| cast::<T>(t.bytes)).collect::<Result<_, _>>()?;
                    concat(&parts, &sizes, outer, inner, cast_mut::<T>(outs[0].bytes)?);
                });
                Ok(())
            }))
        }
        OpKind::Squeeze { .. } | OpKind::ExpandDims => Ok(copy(vec![source(ctx, input(0)?)])),
        OpKind::Slice => {
            let x = input(0)?;
            let count = out_dims(0);
            let dims = ctx.dims(x).to_vec();
            let stride = vec![1; dims.len()];
            let begin = input(1)?;
            if ctx.graph.operand(begin).is_const() {
                let start = ints(ctx, id, 1)?;
                return Ok(built(vec![source(ctx, x)], move |ins, outs| {
                    by_size!(dtype, |T| strided_copy(cast::<T>(ins[0].bytes)?, &dims, &start, &stride, &count, cast_mut::<T>(outs[0].bytes)?));
                    Ok(())
                }));
            }
            // Begin known only at run time (sizes are constant, so the output shape is static).
            let begin_type = ctx.graph.operand(begin).dtype;
            Ok(built(vec![source(ctx, x), source(ctx, begin)], move |ins, outs| {
                let start: Vec<i64> = match begin_type {
                    DType::I64 => cast::<i64>(ins[1].bytes)?.to_vec(),
                    _ => cast::<i32>(ins[1].bytes)?.iter().map(|&v| v as i64).collect(),
                };
                if start.len() != dims.len() {
                    return Err(format!("begin has {} entries for a rank-{} input", start.len(), dims.len()));
                }
                for d in 0..dims.len() {
                    if start[d] < 0 || start[d] as usize + count[d] > dims[d] {
                        return Err(format!("begin {} with size {} is outside dim {d} (size {})", start[d], count[d], dims[d]));
                    }
                }
                by_size!(dtype, |T| strided_copy(cast::<T>(ins[0].bytes)?, &dims, &start, &stride, &count, cast_mut::<T>(outs[0].bytes)?));
                Ok(())
            }))
        }
        OpKind::StridedSlice(p) => {
            let x = input(0)?;
            let plan = strided_slice_plan(ctx.dims(x), &ints(ctx, id, 1)?, &ints(ctx, id, 2)?, &ints(ctx, id, 3)?, p)?;
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                by_size!(dtype, |T| strided_copy(
                    cast::<T>(ins[0].bytes)?,
                    &plan.in_dims,
                    &plan.start,
                    &plan.stride,
                    &plan.count,
                    cast_mut::<T>(outs[0].bytes)?
                ));
                Ok(())
            }))
        }
        OpKind::Gather { axis: ax, batch_dims } => {
            let (x, idx) = (input(0)?, input(1)?);
            let (xd, id_dims) = (ctx.dims(x).to_vec(), ctx.dims(idx).to_vec());
            let a = axis(*ax as i64, xd.len());
            let bd = axis(*batch_dims as i64, id_dims.len());
            let batch: usize = xd[..bd].iter().product();
            let outer: usize = xd[bd..a].iter().product();
            let inner: usize = xd[a + 1..].iter().product();
            let n = xd[a];
            Ok(built(vec![source(ctx, x), source(ctx, idx)], move |ins, outs| {
                let indices = index_values(&ins[1])?;
                by_size!(dtype, |T| gather(cast::<T>(ins[0].bytes)?, batch, outer, n, inner, &indices, cast_mut::<T>(outs[0].bytes)?))
            }))
        }
        OpKind::GatherNd => {
            let (x, idx) = (input(0)?, input(1)?);
            let xd = ctx.dims(x).to_vec();
            let k = ctx.dims(idx).last().copied().unwrap_or(0);
            Ok(built(vec![source(ctx, x), source(ctx, idx)], move |ins, outs| {
                let indices = index_values(&ins[1])?;
                by_size!(dtype, |T| gather_nd(cast::<T>(ins[0].bytes)?, &xd, &indices, k, cast_mut::<T>(outs[0].bytes)?))
            }))
        }
        OpKind::Tile => {
            let x = input(0)?;
            let dims = ctx.dims(x).to_vec();
            let m: Vec<usize> = ints(ctx, id, 1)?.iter().map(|&v| v.max(0) as usize).collect();
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                by_size!(dtype, |T| tile(cast::<T>(ins[0].bytes)?, &dims, &m, cast_mut::<T>(outs[0].bytes)?));
                Ok(())
            }))
        }
        OpKind::Dilate => {
            let (x, pad) = (input(0)?, input(2)?);
            let dims = ctx.dims(x).to_vec();
            let d: Vec<usize> = ints(ctx, id, 1)?.iter().map(|&v| v.max(1) as usize).collect();
            Ok(built(vec![source(ctx, x), source(ctx, pad)], move |ins, outs| {
                by_size!(dtype, |T| {
                    let pad = *cast::<T>(ins[1].bytes)?.first().ok_or("the padding value is empty")?;
                    dilate(cast::<T>(ins[0].bytes)?, &dims, &d, pad, cast_mut::<T>(outs[0].bytes)?)
                });
                Ok(())
            }))
        }
        OpKind::ReverseV2 => {
            let x = input(0)?;
            let dims = ctx.dims(x).to_vec();
            let axes: Vec<usize> = ints(ctx, id, 1)?.iter().map(|&a| axis(a, dims.len())).collect();
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                by_size!(dtype, |T| reverse(cast::<T>(ins[0].bytes)?, &dims, &axes, cast_mut::<T>(outs[0].bytes)?));
                Ok(())
            }))
        }
        OpKind::SpaceToDepth { block } | OpKind::DepthToSpace { block } => {
            // Both are one transpose of a 6-D view: [N, H', b, W', b, C] <-> [N, H', W', b, b, C].
            let x = input(0)?;
            let (xd, b) = (ctx.dims(x).to_vec(), *block);
            let view = if matches!(op.kind, OpKind::SpaceToDepth { .. }) {
                vec![xd[0], xd[1] / b, b, xd[2] / b, b, xd[3]]
            } else {
                vec![xd[0], xd[1], xd[2], b, b, xd[3] / (b * b)]
            };
            let perm = [0usize, 1, 3, 2, 4, 5];
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                by_size!(dtype, |T| transpose(cast::<T>(ins[0].bytes)?, &view, &perm, cast_mut::<T>(outs[0].bytes)?));
                Ok(())
            }))
        }
        OpKind::SpaceToBatchNd | OpKind::BatchToSpaceNd => {
            let x = input(0)?;
            let to_batch = matches!(op.kind, OpKind::SpaceToBatchNd);
            let (space, batch_side) = if to_batch { (ctx.dims(x).to_vec(), out_dims(0)) } else { (out_dims(0), ctx.dims(x).to_vec()) };
            let block: Vec<usize> = ints(ctx, id, 1)?.iter().map(|&v| v as usize).collect();
            let pads = ints(ctx, id, 2)?;
            let m = block.len();
            let g = BlockGeom {
                batch: space[0],
                spatial: (0..m).map(|d| batch_side[1 + d] * block[d]).collect(),
                before: (0..m).map(|d| pads[2 * d] as usize).collect(),
                real: space[1..1 + m].to_vec(),
                depth: space[1 + m..].iter().product(),
                block,
            };
            let zp = match ctx.graph.operand(x).quant {
                Quantization::PerTensor { zero_point, .. } => zero_point,
                _ => 0,
            };
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                by_size!(dtype, |T| {
                    let (src, dst) = (cast::<T>(ins[0].bytes)?, cast_mut::<T>(outs[0].bytes)?);
                    if to_batch {
                        space_to_batch(&g, src, zp as T, dst);
                    } else {
                        batch_to_space(&g, src, dst);
                    }
                });
                Ok(())
            }))
        }
        _ => Err("not a data movement op".into()),
    }
}

/// DILATE (TFLite's kernel): `out`, of dims `(n - 1) * d + 1`, holds `pad` but at the multiples
/// of the dilations, which hold `x` in order. Shape inference checked the dims.
fn dilate<T: Copy>(x: &[T], dims: &[usize], d: &[usize], pad: T, out: &mut [T]) {
    out.fill(pad);
    let Some((&inner, outer)) = dims.split_last() else { return };
    if x.is_empty() {
        return;
    }
    // step[k]: how far one input index along dim k moves in the output.
    let (mut step, mut size) = (vec![0; dims.len()], 1);
    for k in (0..dims.len()).rev() {
        step[k] = size * d[k];
        size *= (dims[k] - 1) * d[k] + 1;
    }
    let mut idx = vec![0usize; outer.len()];
    for row in x.chunks_exact(inner) {
        let base: usize = idx.iter().zip(&step).map(|(i, s)| i * s).sum();
        for (j, &v) in row.iter().enumerate() {
            out[base + j * step[outer.len()]] = v;
        }
        for k in (0..outer.len()).rev() {
            idx[k] += 1;
            if idx[k] < outer[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Split", "SplitV", "Pack", "Unpack", "Squeeze", "ExpandDims", "Slice", "StridedSlice", "Gather", "GatherNd", "Tile", "Dilate", "ReverseV2"], supports, build);
    r.ops(&["SpaceToDepth", "DepthToSpace", "SpaceToBatchNd", "BatchToSpaceNd"], supports, build);
}
