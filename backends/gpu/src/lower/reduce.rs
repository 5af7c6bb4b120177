//! Reductions: MEAN/SUM/REDUCE_MAX/MIN/PROD over any axes, and SOFTMAX/LOG_SOFTMAX over the last.

use nnrt_core::{OpKind, OperandId, ReduceOp};

use super::cx::{no_kernel, numel, pad6, strides, u, words, Cx, R};
use super::{Dispatch, Lowered, Registry};

/// The family's ops.
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Mean", "Sum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceAny", "ReduceAll"], reduce);
    r.ops(&["Softmax", "LogSoftmax"], softmax);
}

fn reduce(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let &OpKind::Reduce { op, .. } = kind else { return no_kernel(kind) };
    let (x, axes, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_f32(x, "the input")?;
    cx.expect_f32(o, "the output")?;
    let code = match op {
        ReduceOp::Mean => 0,
        ReduceOp::Sum => 1,
        ReduceOp::Max => 2,
        ReduceOp::Min => 3,
        ReduceOp::Prod => 4,
        ReduceOp::Any | ReduceOp::All => return Err("Any/All work on bools; gpu kernels compute in float32".into()),
    };
    let xd = cx.dims(x).to_vec();
    let rank = xd.len();
    let d6 = pad6(&xd)?;
    let mut reduced = [0u32; 6];
    for a in cx.const_ints(axes, "the axes")? {
        let a = if a < 0 { a + rank as i64 } else { a };
        if a < 0 || a >= rank as i64 {
            return Err(format!("axis {a} is out of range for rank {rank}"));
        }
        reduced[6 - rank + a as usize] = 1;
    }
    Ok(Lowered::Dispatches(vec![reduction(cx, (x, o), d6, reduced, code, 0)?]))
}

/// Reduced elements per output from which one workgroup folds each output (`reduce_wide`)
/// rather than one thread (`reduce`): a global average pool of a 64×64 image took 3.3 ms on an
/// H100 one thread per channel.
pub(super) const WIDE_MIN: usize = 256;

/// The dispatch reducing input `x` (dims `d6`, padded to 6) over the dims flagged in `reduced`
/// into `o` with op `code` (0 mean, 1 sum, 2 max, 3 min, 4 product) and fused activation `act`.
pub(super) fn reduction(cx: &mut Cx, (x, o): (OperandId, OperandId), d6: [usize; 6], reduced: [u32; 6], code: u32, act: u32) -> R<Dispatch> {
    let r: usize = (0..6).filter(|&i| reduced[i] == 1).map(|i| d6[i]).product();
    if r == 0 {
        return Err("reducing an empty axis".into());
    }
    let outs = d6.iter().product::<usize>() / r;
    let s = strides(&d6);
    let mut params = vec![u(outs)?, u(r)?];
    params.extend(words(&d6)?);
    params.extend(words(&s)?);
    params.extend(reduced);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let mut constants = vec![("OP", code)];
    if act != 0 {
        constants.push(("ACT", act));
    }
    if r >= WIDE_MIN {
        // One workgroup per output.
        let groups = cx.grid(outs * 64)?;
        return cx.dispatch("reduce_wide", constants, params, vec![xb, ob], groups);
    }
    let groups = cx.grid(outs)?;
    cx.dispatch("reduce", constants, params, vec![xb, ob], groups)
}

fn softmax(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let (beta, log) = match *kind {
        OpKind::Softmax { beta } => (beta, false),
        OpKind::LogSoftmax => (1.0, true),
        _ => return no_kernel(kind),
    };
    let (x, o) = cx.f32_in_out()?;
    let xd = cx.dims(x).to_vec();
    let len = *xd.last().ok_or("softmax of a scalar")?;
    let rows = numel(&xd) / len.max(1);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(rows)?;
    let params = vec![u(rows)?, u(len)?, beta.to_bits()];
    Ok(Lowered::Dispatches(vec![cx.dispatch("softmax", vec![("LOG", u32::from(log))], params, vec![xb, ob], groups)?]))
}
