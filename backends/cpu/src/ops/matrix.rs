//! Builders of MATRIX_DIAG, MATRIX_SET_DIAG and REVERSE_SEQUENCE (data movement for every type).

use nnrt_core::{cast, cast_mut, CompileCtx, OpId, OpKind};

use super::arith::ints;
use super::movement::by_size;
use super::util::{sources};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::matrix::{matrix_diag, matrix_set_diag, reverse_sequence};

fn supports(_ctx: &CompileCtx, _id: OpId) -> Result<(), String> {
    Ok(())
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let ins = sources(ctx, id);
    let dtype = ctx.graph.operand(op.outputs[0]).dtype;
    match &op.kind {
        OpKind::MatrixDiag => Ok(built(ins, move |ins, outs| {
            let n = ins[0].dims.last().copied().unwrap_or(0);
            by_size!(dtype, |T| matrix_diag::<T>(cast(ins[0].bytes)?, n, cast_mut(outs[0].bytes)?));
            Ok(())
        })),
        OpKind::MatrixSetDiag => Ok(built(ins, move |ins, outs| {
            let d = ins[0].dims;
            let (rows, cols) = (d[d.len() - 2], d[d.len() - 1]);
            by_size!(dtype, |T| matrix_set_diag::<T>(cast(ins[0].bytes)?, cast(ins[1].bytes)?, rows, cols, cast_mut(outs[0].bytes)?));
            Ok(())
        })),
        OpKind::ReverseSequence { seq_dim, batch_dim } => {
            let (sd, bd) = (*seq_dim as usize, *batch_dim as usize);
            Ok(built(ins, move |ins, outs| {
                let n = ins[0].dims[sd] as i64;
                let lengths = ints(&ins[1])?;
                if let Some(v) = lengths.iter().find(|&&v| v < 0 || v > n) {
                    return Err(format!("sequence length {v} is outside [0, {n}]"));
                }
                let lengths: Vec<usize> = lengths.iter().map(|&v| v as usize).collect();
                by_size!(dtype, |T| reverse_sequence::<T>(cast(ins[0].bytes)?, ins[0].dims, sd, bd, &lengths, cast_mut(outs[0].bytes)?));
                Ok(())
            }))
        }
        _ => Err("not a matrix op".into()),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["MatrixDiag", "MatrixSetDiag", "ReverseSequence"], supports, build);
}
