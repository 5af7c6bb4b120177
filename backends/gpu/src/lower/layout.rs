//! Ops that move elements without arithmetic (4-byte types): CONCATENATION (with a fused
//! activation on float32), PAD, TRANSPOSE, and RESHAPE/SQUEEZE/EXPAND_DIMS as aliases (no copy).

use nnrt_core::OpKind;

use super::cx::{act_code, no_kernel, numel, pad6, strides, u, words, Cx, R};
use super::{Lowered, Registry};

/// The family's ops.
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Concatenation"], concat);
    r.ops(&["Pad"], pad);
    r.ops(&["Transpose"], transpose);
    r.ops(&["Reshape", "Squeeze", "ExpandDims"], alias);
}

fn concat(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let &OpKind::Concatenation { axis, act } = kind else { return no_kernel(kind) };
    let o = cx.output()?;
    cx.expect_word(o, "the output")?;
    let act = act_code(act)?;
    if act != 0 {
        cx.expect_f32(o, "the output (with a fused activation)")?;
    }
    let od = cx.dims(o).to_vec();
    let rank = od.len() as i64;
    let ax = if axis < 0 { i64::from(axis) + rank } else { i64::from(axis) };
    if ax < 0 || ax >= rank {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    let ax = ax as usize;
    let inner: usize = od[ax + 1..].iter().product();
    let ob = cx.buf(o)?;
    let n_in = cx.graph().op(cx.op).inputs.len();
    let mut at = 0;
    let mut out = Vec::new();
    for i in 0..n_in {
        let x = cx.input(i)?;
        if cx.dtype(x) != cx.dtype(o) {
            return Err(format!("input {i} is {}, the output {}", cx.dtype(x), cx.dtype(o)));
        }
        let xd = cx.dims(x).to_vec();
        if xd.len() != od.len() {
            return Err(format!("input {i} has rank {}, the output {}", xd.len(), od.len()));
        }
        let a = xd[ax];
        let n = numel(&xd);
        if n > 0 {
            let xb = cx.buf(x)?;
            let groups = cx.grid(n)?;
            let params = vec![u(n)?, u(a)?, u(inner)?, u(od[ax])?, u(at)?];
            out.push(cx.dispatch("copy", vec![("ACT", act)], params, vec![xb, ob], groups)?);
        }
        at += a;
    }
    if at != od[ax] {
        return Err(format!("inputs add up to {at} along axis {ax}, the output has {}", od[ax]));
    }
    Ok(Lowered::Dispatches(out))
}

fn pad(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let OpKind::Pad = kind else { return no_kernel(kind) };
    let (x, paddings, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_word(x, "the input")?;
    let (xd, od) = (cx.dims(x).to_vec(), cx.dims(o).to_vec());
    let pads = cx.const_ints(paddings, "the paddings")?;
    if pads.len() != 2 * xd.len() || pads.iter().any(|&p| p < 0) {
        return Err(format!("paddings {pads:?} do not fit rank {}", xd.len()));
    }
    let value = match cx.graph().op(cx.op).input(2) {
        Some(v) => {
            let d = cx.graph().operand(v).data.as_ref().ok_or("the pad value is not a constant")?;
            let b = d.bytes();
            if b.len() != 4 || cx.dtype(v) != cx.dtype(x) {
                return Err("the pad value must be one element of the input's type".into());
            }
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        }
        None => 0,
    };
    let (x6, o6) = (pad6(&xd)?, pad6(&od)?);
    let mut before = [0usize; 6];
    for (i, p) in pads.chunks(2).enumerate() {
        before[6 - xd.len() + i] = p[0] as usize;
    }
    let n = numel(&od);
    let mut params = vec![u(n)?];
    for arr in [o6, x6, before] {
        params.extend(words(&arr)?);
    }
    params.push(value);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("pad", vec![], params, vec![xb, ob], groups)?]))
}

fn transpose(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let OpKind::Transpose = kind else { return no_kernel(kind) };
    let (x, perm, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_word(x, "the input")?;
    let xd = cx.dims(x).to_vec();
    let perm = cx.const_ints(perm, "the permutation")?;
    let rank = xd.len();
    if perm.len() != rank || rank > 6 {
        return Err(format!("permutation {perm:?} does not fit rank {rank}"));
    }
    let s = strides(&xd);
    let mut od = [1usize; 6];
    let mut os = [0usize; 6];
    for (i, &p) in perm.iter().enumerate() {
        let p = if p < 0 { p + rank as i64 } else { p };
        if p < 0 || p >= rank as i64 {
            return Err(format!("permutation {perm:?} is out of range"));
        }
        od[6 - rank + i] = xd[p as usize];
        os[6 - rank + i] = s[p as usize];
    }
    let n = numel(&xd);
    let mut params = vec![u(n)?];
    params.extend(words(&od)?);
    params.extend(words(&os)?);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("transpose", vec![], params, vec![xb, ob], groups)?]))
}

fn alias(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let (OpKind::Reshape { .. } | OpKind::Squeeze { .. } | OpKind::ExpandDims) = kind else { return no_kernel(kind) };
    let x = cx.input(0)?;
    let o = cx.output()?;
    if cx.dtype(x) != cx.dtype(o) || numel(cx.dims(x)) != numel(cx.dims(o)) {
        return Err("input and output differ in type or element count".into());
    }
    let from = cx.buf(x)?;
    Ok(Lowered::Alias { from, to: o })
}
