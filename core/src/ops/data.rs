//! Ops that rearrange a whole tensor: CONCATENATION, RESHAPE, TRANSPOSE, PAD, MIRROR_PAD; and
//! the ops that copy a whole tensor from or into a variable (TOSA's VARIABLE_READ / _WRITE).

use super::Shapes::{Many, One};
use super::{fixed, spec, Spec};
use crate::infer::Cx;
use crate::shape::{fmt_dims, num_elements};
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the data (the first of CONCATENATION's inputs).", SHAPE = 1: "Input slot of RESHAPE's optional 1-D target shape.",
    PERM = 1: "Input slot of TRANSPOSE's permutation.", PADDINGS = 1: "Input slot of PAD's and MIRROR_PAD's `[rank, 2]` paddings.",
    PAD_VALUE = 2: "Input slot of PAD's optional pad value."
);

slots! {
    /// Input slots of `VariableRead`.
    mod variable_read: VARIABLE = 0: "The variable tensor.", WRITTEN = 1: "Its bool `[1]` written flag.", INITIAL = 2: "Its constant initial value (optional).";
    /// Input slots of `VariableWrite`.
    mod variable_write: VALUE = 0: "The value written.", VARIABLE = 1: "The variable tensor.", WRITTEN = 2: "Its bool `[1]` written flag.";
}

/// How MIRROR_PAD mirrors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MirrorMode {
    /// Mirror without repeating the edge.
    Reflect,
    /// Mirror repeating the edge.
    Symmetric,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Concatenation { .. } => spec("Concatenation", 1, None, Some(1), One(concat)),
        OpKind::Reshape { .. } => spec("Reshape", 1, Some(2), Some(1), One(reshape)),
        OpKind::Transpose => fixed("Transpose", 2, 1, One(transpose)),
        OpKind::Pad => spec("Pad", 2, Some(3), Some(1), One(pad)),
        OpKind::MirrorPad(_) => fixed("MirrorPad", 2, 1, One(pad)),
        OpKind::VariableRead => spec("VariableRead", 2, Some(3), Some(1), One(variable_read)),
        OpKind::VariableWrite => fixed("VariableWrite", 3, 0, Many(variable_write)),
        _ => return None,
    })
}

/// Checks that input `var` is a variable and input `flag` a bool `[1]` variable.
fn variable_and_flag(cx: &Cx, var: usize, flag: usize) -> Result<(), CompileError> {
    for i in [var, flag] {
        let id = cx.input_id(i)?;
        if !cx.g.operand(id).is_variable || cx.g.operand(id).is_const() {
            return Err(cx.input_err(i, "must be a variable tensor (state kept across runs)"));
        }
    }
    cx.expect_dtype(flag, &[DType::Bool])?;
    if crate::shape::num_elements(cx.input(flag)?) != Some(1) {
        return Err(cx.input_err(flag, format!("shape {} must hold one flag", fmt_dims(cx.input(flag)?))));
    }
    Ok(())
}

/// VariableRead: the variable's shape; the initial value, when given, has its type and shape.
fn variable_read(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use variable_read::*;
    variable_and_flag(cx, VARIABLE, WRITTEN)?;
    let (v, t) = (cx.input(VARIABLE)?, cx.dtype(VARIABLE)?);
    if let Some(init) = cx.opt_input(INITIAL)? {
        if init != v || cx.dtype(INITIAL)? != t || !cx.is_const(INITIAL) {
            return Err(cx.input_err(INITIAL, format!("must be a constant {t} {} (the variable's), got {} {}", fmt_dims(v), cx.dtype(INITIAL)?, fmt_dims(init))));
        }
    }
    cx.expect_out_dtype(0, t)?;
    Ok(v.to_vec())
}

/// VariableWrite: a value of the variable's type and shape; no outputs.
fn variable_write(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    use variable_write::*;
    variable_and_flag(cx, VARIABLE, WRITTEN)?;
    let (v, t) = (cx.input(VARIABLE)?, cx.dtype(VARIABLE)?);
    if cx.input(VALUE)? != v || cx.dtype(VALUE)? != t {
        return Err(cx.input_err(VALUE, format!("is {} {}; the variable is {t} {}", cx.dtype(VALUE)?, fmt_dims(cx.input(VALUE)?), fmt_dims(v))));
    }
    Ok(Vec::new())
}

/// CONCATENATION joins inputs of one type that agree outside the axis.
fn concat(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Concatenation { axis, .. } = cx.op.kind else { return Err(cx.unlisted()) };
    let first = cx.input(INPUT)?;
    let t0 = cx.dtype(INPUT)?;
    let axis = cx.dim_axis(axis as i64, first.len())?;
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

/// RESHAPE keeps the element count; one target dim may be -1.
fn reshape(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Reshape { new_shape } = &cx.op.kind else { return Err(cx.unlisted()) };
    let new_shape = new_shape.as_deref();
    let x = cx.input(INPUT)?;
    let total = num_elements(x).ok_or_else(|| cx.input_err(INPUT, "too many elements"))?;
    // TFLite takes the target from the 1-D shape input when there is one, else from the options.
    // A computed shape input is read at run time only when neither the options nor a static
    // declared output give the shape, so graphs that are static today stay static.
    let shape_input = cx.op.input(SHAPE).filter(|&id| cx.g.operand(id).shape.rank() == 1);
    let target: Vec<i64> = match (shape_input, new_shape) {
        (Some(id), _) if cx.g.operand(id).is_const() => cx.const_ints(SHAPE)?,
        (_, Some(t)) => t.iter().map(|&v| v as i64).collect(),
        (computed, None) => {
            let declared = cx.g.operand(cx.op.outputs[0]).shape.concrete().filter(|o| num_elements(o) == Some(total));
            match (declared, computed) {
                (Some(out), _) => return Ok(out),
                (None, Some(_)) => cx.const_ints(SHAPE)?,
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

/// TRANSPOSE permutes the dims.
fn transpose(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    let perm = cx.const_ints(PERM)?;
    let mut seen = vec![false; x.len()];
    let mut out = Vec::with_capacity(x.len());
    if perm.len() != x.len() {
        return Err(cx.input_err(PERM, format!("permutation {perm:?} must have {} entries", x.len())));
    }
    for &p in &perm {
        let a = cx.axis(p, x.len())?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(cx.input_err(PERM, format!("{perm:?} is not a permutation")));
        }
        out.push(x[a]);
    }
    Ok(out)
}

/// PAD and MIRROR_PAD (a mirror `mode`) add the paddings to each dim; a mirror reaches at most the
/// dim's size (less one for REFLECT).
fn pad(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let mode = match cx.op.kind {
        OpKind::Pad => None,
        OpKind::MirrorPad(m) => Some(m),
        _ => return Err(cx.unlisted()),
    };
    let x = cx.input(INPUT)?;
    let pads = cx.const_ints(PADDINGS)?;
    let ps = cx.input(PADDINGS)?;
    if ps.len() != 2 || ps[0] != x.len() || ps[1] != 2 {
        return Err(cx.input_err(PADDINGS, format!("paddings {} must be [{}, 2]", fmt_dims(ps), x.len())));
    }
    if let (None, Some(v)) = (mode, cx.op.input(PAD_VALUE)) {
        let c = cx.g.operand(v);
        if c.dtype != cx.dtype(INPUT)? || num_elements(&c.shape.concrete().unwrap_or_default()) != Some(1) {
            return Err(cx.input_err(PAD_VALUE, format!("the pad value must be one {} element", cx.dtype(INPUT)?)));
        }
    }
    let mut out = Vec::with_capacity(x.len());
    for (d, &n) in x.iter().enumerate() {
        let (b, a) = (pads[2 * d], pads[2 * d + 1]);
        if b < 0 || a < 0 {
            return Err(cx.input_err(PADDINGS, format!("paddings {pads:?} hold a negative value")));
        }
        let (b, a) = (b as usize, a as usize);
        let limit = match mode {
            Some(MirrorMode::Reflect) => Some(n.saturating_sub(1)),
            Some(MirrorMode::Symmetric) => Some(n),
            None => None,
        };
        if let Some(l) = limit {
            if b > l || a > l {
                return Err(cx.input_err(PADDINGS, format!("mirror padding ({b}, {a}) of dim {d} exceeds {l} for size {n}")));
            }
        }
        out.push(n + b + a);
    }
    Ok(out)
}
