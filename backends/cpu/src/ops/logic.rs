//! Comparisons, LOGICAL_AND / LOGICAL_OR, SELECT / SELECT_V2 and CAST.

use nnrt_core::{cast, cast_mut, CompareOp, CompileCtx, DType, LogicalOp, OpId, OpKind};

use super::movement::by_size;
use super::util::{sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::cast::cast as cast_kernel;
use crate::kernels::compare::{compare, logical, select, select_rows, CompareOp as K};

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let operand = |i: usize| op.input(i).map(|o| ctx.graph.operand(o)).ok_or_else(|| format!("input {i} is absent"));
    match &op.kind {
        OpKind::Compare(_) => {
            let (a, b) = (operand(0)?, operand(1)?);
            if a.quant.is_quantized() || b.quant.is_quantized() {
                return Err("comparing quantized tensors is not implemented (the scales would need aligning)".into());
            }
            if a.dtype == DType::F16 {
                return Err("comparing float16 tensors is not supported".into());
            }
            Ok(())
        }
        OpKind::Logical(_) => Ok(()),
        OpKind::Select { .. } => {
            let (x, out) = (operand(1)?, ctx.graph.operand(op.outputs[0]));
            if x.quant != out.quant || operand(2)?.quant != out.quant {
                return Err("SELECT between differently quantized tensors is not implemented".into());
            }
            Ok(())
        }
        OpKind::Cast => {
            if operand(0)?.quant.is_quantized() || ctx.graph.operand(op.outputs[0]).quant.is_quantized() {
                return Err("CAST of quantized tensors is not supported (use DEQUANTIZE / QUANTIZE)".into());
            }
            let out_t = ctx.graph.operand(op.outputs[0]).dtype;
            if operand(0)?.dtype == nnrt_core::DType::C64 && out_t != nnrt_core::DType::C64 {
                return Err(format!("CAST from complex64 to {out_t} is not defined (take REAL, IMAG or COMPLEX_ABS)"));
            }
            Ok(())
        }
        _ => Err("not a logic op".into()),
    }
}

fn kind(c: CompareOp) -> K {
    match c {
        CompareOp::Equal => K::Equal,
        CompareOp::NotEqual => K::NotEqual,
        CompareOp::Less => K::Less,
        CompareOp::LessEqual => K::LessEqual,
        CompareOp::Greater => K::Greater,
        CompareOp::GreaterEqual => K::GreaterEqual,
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let inputs = sources(ctx, id);
    let out_dtype = ctx.graph.operand(op.outputs[0]).dtype;
    match &op.kind {
        OpKind::Compare(c) => {
            let (k, dtype) = (kind(*c), ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?).dtype);
            Ok(built(inputs, move |ins, outs| {
                let (a, b, dims) = (&ins[0], &ins[1], outs[0].dims);
                let out = &mut *outs[0].bytes;
                macro_rules! go {
                    ($t:ty) => {
                        compare(k, cast::<$t>(a.bytes)?, a.dims, cast::<$t>(b.bytes)?, b.dims, out, dims)
                    };
                }
                match dtype {
                    DType::F32 => go!(f32),
                    DType::I32 => go!(i32),
                    DType::I64 => go!(i64),
                    DType::I16 => go!(i16),
                    DType::I8 => go!(i8),
                    DType::U8 | DType::Bool => go!(u8),
                    other => return Err(format!("comparing {other} is not supported")),
                }
                Ok(())
            }))
        }
        OpKind::Logical(l) => {
            let and = *l == LogicalOp::And;
            Ok(built(inputs, move |ins, outs| {
                let dims = outs[0].dims;
                logical(and, ins[0].bytes, ins[0].dims, ins[1].bytes, ins[1].dims, outs[0].bytes, dims);
                Ok(())
            }))
        }
        OpKind::Select { v2 } => {
            let v1 = !*v2;
            Ok(built(inputs, move |ins, outs| {
            let (c, x, y) = (&ins[0], &ins[1], &ins[2]);
            let dims = outs[0].dims;
            by_size!(out_dtype, |T| {
                let (xs, ys, out) = (cast::<T>(x.bytes)?, cast::<T>(y.bytes)?, cast_mut::<T>(outs[0].bytes)?);
                if v1 && c.dims.len() == 1 && x.dims.len() > 1 {
                    // SELECT's rank-1 condition picks whole rows.
                    let row = xs.len() / c.dims[0].max(1);
                    select_rows(c.bytes, xs, ys, row, out);
                } else {
                    select(c.bytes, c.dims, xs, x.dims, ys, y.dims, out, dims);
                }
            });
            Ok(())
        }))
        }
        OpKind::Cast => {
            let from = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?).dtype;
            Ok(built(inputs, move |ins, outs| {
                cast_kernel(from, ins[0].bytes, out_dtype, outs[0].bytes);
                Ok(())
            }))
        }
        _ => Err("not a logic op".into()),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"], supports, build);
    r.ops(&["LogicalAnd", "LogicalOr", "Select", "SelectV2", "Cast"], supports, build);
}
