//! Ops that move or reshape data, fully connected, and reductions.

use super::Cx;
use crate::shape::{fmt_dims, num_elements};
use crate::{CompileError, DType, FullyConnected, MirrorMode, OpKind, ReduceOp};

pub(super) fn fully_connected(cx: &Cx, p: &FullyConnected) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let w = cx.expect_rank(1, 2)?;
    let (n, k) = (w[0], w[1]);
    let total = num_elements(x).ok_or_else(|| cx.input_err(0, "too many elements"))?;
    if k == 0 || total % k != 0 || x.is_empty() {
        return Err(cx.input_err(0, format!("shape {} cannot be flattened into rows of {k} (the weights' {})", fmt_dims(x), fmt_dims(w))));
    }
    if let Some(b) = cx.opt_input(2)? {
        if num_elements(b) != Some(n) {
            return Err(cx.input_err(2, format!("bias {} must have {n} elements", fmt_dims(b))));
        }
    }
    if p.keep_num_dims {
        if x[x.len() - 1] != k {
            return Err(cx.input_err(0, format!("last dim of {} must equal the weights' {k} with keep_num_dims", fmt_dims(x))));
        }
        let mut out = x.to_vec();
        *out.last_mut().expect("rank >= 1 checked") = n;
        Ok(out)
    } else {
        Ok(vec![total / k, n])
    }
}

/// BATCH_MATMUL: `[..., m, k] @ [..., k, n]` (last two dims swapped by `adj_x` / `adj_y`), the
/// leading dims broadcast NumPy-style.
pub(super) fn batch_matmul(cx: &Cx, adj_x: bool, adj_y: bool) -> Result<Vec<usize>, CompileError> {
    let (x, y) = (cx.input(0)?, cx.input(1)?);
    for (i, s) in [(0, x), (1, y)] {
        if s.len() < 2 || s.len() > 5 {
            return Err(cx.input_err(i, format!("rank must be 2 to 5, shape is {}", fmt_dims(s))));
        }
    }
    let (tx, ty) = (cx.dtype(0)?, cx.dtype(1)?);
    // Besides one type, TFLite takes hybrid float x int8 and quantized int16 x int8.
    if tx != ty && !(matches!(tx, DType::F32 | DType::I16) && ty == DType::I8) {
        return Err(cx.input_err(1, format!("has type {ty} but input 0 has {tx}")));
    }
    let (xr, yr) = (x.len(), y.len());
    let (m, kx) = if adj_x { (x[xr - 1], x[xr - 2]) } else { (x[xr - 2], x[xr - 1]) };
    let (ky, n) = if adj_y { (y[yr - 1], y[yr - 2]) } else { (y[yr - 2], y[yr - 1]) };
    if kx != ky {
        return Err(cx.err(format!(
            "inner dims differ: {} (adj_x {adj_x}) has {kx}, {} (adj_y {adj_y}) has {ky}",
            fmt_dims(x),
            fmt_dims(y)
        )));
    }
    let mut out = super::broadcast_shapes(&x[..xr - 2], &y[..yr - 2]).ok_or_else(|| {
        cx.err(format!("batch dims of {} and {} cannot be broadcast together", fmt_dims(x), fmt_dims(y)))
    })?;
    out.extend_from_slice(&[m, n]);
    Ok(out)
}

/// ARG_MAX / ARG_MIN: the axis (a constant scalar or one-element tensor) is removed.
pub(super) fn arg_min_max(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    cx.expect_dtype(1, &[DType::I32, DType::I64])?;
    let axis = cx.axis(cx.const_scalar(1)?, x.len())?;
    let t = cx.out_dtype(0)?;
    if t != DType::I32 && t != DType::I64 {
        return Err(cx.out_err(0, format!("has type {t}; the index output must be int32 or int64")));
    }
    let mut out = x.to_vec();
    out.remove(axis);
    Ok(out)
}

/// Normalized, deduplicated, sorted axes from constant input `i`.
fn axes(cx: &Cx, i: usize, rank: usize) -> Result<Vec<usize>, CompileError> {
    let mut out = Vec::new();
    for a in cx.const_ints(i)? {
        let a = cx.axis(a, rank)?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub(super) fn reduce(cx: &Cx, keep_dims: bool) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let t = cx.dtype(0)?;
    if let OpKind::Reduce { op: ReduceOp::Any | ReduceOp::All, .. } = cx.op.kind {
        cx.expect_dtype(0, &[DType::Bool])?;
    }
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but the input has {t}", cx.out_dtype(0)?)));
    }
    let axes = axes(cx, 1, x.len())?;
    let mut out = Vec::with_capacity(x.len());
    for (d, &n) in x.iter().enumerate() {
        if axes.contains(&d) {
            if keep_dims {
                out.push(1);
            }
        } else {
            out.push(n);
        }
    }
    Ok(out)
}

pub(super) fn concat(cx: &Cx, axis: i32) -> Result<Vec<usize>, CompileError> {
    let first = cx.input(0)?;
    let t0 = cx.dtype(0)?;
    let axis = cx.axis(axis as i64, first.len())?;
    let mut out = first.to_vec();
    out[axis] = 0;
    for i in 0..cx.op.inputs.len() {
        let s = cx.input(i)?;
        if cx.dtype(i)? != t0 {
            return Err(cx.input_err(i, format!("has type {} but input 0 has {t0}", cx.dtype(i)?)));
        }
        let compatible = s.len() == first.len() && s.iter().zip(first).enumerate().all(|(d, (a, b))| d == axis || a == b);
        if !compatible {
            return Err(cx.input_err(
                i,
                format!("shape {} does not match input 0's {} outside axis {axis}", fmt_dims(s), fmt_dims(first)),
            ));
        }
        out[axis] += s[axis];
    }
    Ok(out)
}

pub(super) fn reshape(cx: &Cx, new_shape: Option<&[i32]>) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let total = num_elements(x).ok_or_else(|| cx.input_err(0, "too many elements"))?;
    // TFLite takes the target from the 1-D shape input when there is one, else from the options.
    // A computed shape input is read at run time only when neither the options nor a static
    // declared output give the shape, so graphs that are static today stay static.
    let shape_input = cx.op.input(1).filter(|&id| cx.g.operand(id).shape.rank() == 1);
    let target: Vec<i64> = match (shape_input, new_shape) {
        (Some(id), _) if cx.g.operand(id).is_const() => cx.const_ints(1)?,
        (_, Some(t)) => t.iter().map(|&v| v as i64).collect(),
        (computed, None) => {
            let declared = cx.g.operand(cx.op.outputs[0]).shape.concrete().filter(|o| num_elements(o) == Some(total));
            match (declared, computed) {
                (Some(out), _) => return Ok(out),
                (None, Some(_)) => cx.const_ints(1)?,
                (None, None) => return Err(cx.err("the target shape is neither an input nor an option, and the output shape is not static")),
            }
        }
    };
    let mut unknown = None;
    let mut known = 1usize;
    let mut out = Vec::with_capacity(target.len());
    for (i, &d) in target.iter().enumerate() {
        if d == -1 {
            if unknown.replace(i).is_some() {
                return Err(cx.err(format!("target shape {target:?} has more than one -1")));
            }
            out.push(0);
        } else if d < 0 {
            return Err(cx.err(format!("target shape {target:?} has a negative dim")));
        } else {
            known = known.checked_mul(d as usize).ok_or_else(|| cx.err("target shape overflows"))?;
            out.push(d as usize);
        }
    }
    match unknown {
        Some(i) if known != 0 && total % known == 0 => out[i] = total / known,
        None if known == total => {}
        _ => {
            return Err(cx.err(format!("cannot reshape {} ({total} elements) to {target:?}", fmt_dims(x))));
        }
    }
    Ok(out)
}

pub(super) fn transpose(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let perm = cx.const_ints(1)?;
    let mut seen = vec![false; x.len()];
    let mut out = Vec::with_capacity(x.len());
    if perm.len() != x.len() {
        return Err(cx.input_err(1, format!("permutation {perm:?} must have {} entries", x.len())));
    }
    for &p in &perm {
        let a = cx.axis(p, x.len())?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(cx.input_err(1, format!("{perm:?} is not a permutation")));
        }
        out.push(x[a]);
    }
    Ok(out)
}

pub(super) fn pad(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(0)?;
    let pads = cx.const_ints(1)?;
    let ps = cx.input(1)?;
    if ps.len() != 2 || ps[0] != x.len() || ps[1] != 2 {
        return Err(cx.input_err(1, format!("paddings {} must be [{}, 2]", fmt_dims(ps), x.len())));
    }
    let mode = match cx.op.kind {
        OpKind::MirrorPad(m) => Some(m),
        _ => None,
    };
    if let (OpKind::Pad, Some(v)) = (&cx.op.kind, cx.op.input(2)) {
        let c = cx.g.operand(v);
        if c.dtype != cx.dtype(0)? || num_elements(&c.shape.concrete().unwrap_or_default()) != Some(1) {
            return Err(cx.input_err(2, format!("the pad value must be one {} element", cx.dtype(0)?)));
        }
    }
    let mut out = Vec::with_capacity(x.len());
    for (d, &n) in x.iter().enumerate() {
        let (b, a) = (pads[2 * d], pads[2 * d + 1]);
        if b < 0 || a < 0 {
            return Err(cx.input_err(1, format!("paddings {pads:?} hold a negative value")));
        }
        let (b, a) = (b as usize, a as usize);
        let limit = match mode {
            Some(MirrorMode::Reflect) => Some(n.saturating_sub(1)),
            Some(MirrorMode::Symmetric) => Some(n),
            None => None,
        };
        if let Some(l) = limit {
            if b > l || a > l {
                return Err(cx.input_err(1, format!("mirror padding ({b}, {a}) of dim {d} exceeds {l} for size {n}")));
            }
        }
        out.push(n + b + a);
    }
    Ok(out)
}
