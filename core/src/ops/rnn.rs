//! Recurrent cells besides the LSTMs: RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF (float32).

use super::Shapes::One;
use super::{fixed, spec, Activation, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots! {
    /// Input slots of RNN and UNIDIRECTIONAL_SEQUENCE_RNN.
    mod cell: INPUT = 0: "The input `[batch, input]` (sequence: `[batch, time, input]`).", WEIGHTS = 1: "Weights `[units, input]`.",
        RECURRENT_WEIGHTS = 2: "Recurrent weights `[units, units]`.", BIAS = 3: "Bias `[units]`.",
        HIDDEN_STATE = 4: "Hidden state `[batch, units]` (a variable tensor).";
    /// Input slots of SVDF.
    mod svdf: INPUT = 0: "The input `[batch, input]`.", FEATURE_WEIGHTS = 1: "Feature weights `[filters, input]`.",
        TIME_WEIGHTS = 2: "Time weights `[filters, memory]`.", BIAS = 3: "Optional bias `[units]`.",
        ACTIVATION_STATE = 4: "Activation state `[batch, memory * filters]` (a variable tensor).";
}

/// Parameters of a basic RNN cell (RNN, UNIDIRECTIONAL_SEQUENCE_RNN):
/// `h = act(x W^T + h R^T + b)`. Inputs: 0 input, 1 weights `[units, in]`, 2 recurrent weights
/// `[units, units]`, 3 bias `[units]`, 4 hidden state (a variable tensor).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rnn {
    /// Activation of the new state.
    pub act: Activation,
    /// Sequence input is `[time, batch, features]` (UNIDIRECTIONAL_SEQUENCE_RNN only).
    pub time_major: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// Parameters of SVDF. Inputs: 0 input `[batch, in]`, 1 feature weights `[filters, in]`, 2 time
/// weights `[filters, memory]`, 3 bias `[units]` (optional), 4 activation state (a variable
/// tensor `[batch, memory * filters]`). `filters = units * rank`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Svdf {
    /// Filters per unit.
    pub rank: i32,
    /// Fused activation of the output.
    pub act: Activation,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        // The hidden state and SVDF's activation state are variables; SVDF's bias is optional.
        OpKind::Rnn(_) => fixed("Rnn", 5, 1, One(rnn)),
        OpKind::SequenceRnn(_) => fixed("UnidirectionalSequenceRnn", 5, 1, One(sequence_rnn)),
        OpKind::Svdf(_) => spec("Svdf", 3, Some(5), Some(1), One(svdf)),
        _ => return None,
    })
}

/// Checks that every present input and every output is float32.
pub(super) fn all_f32(cx: &Cx, what: &str) -> Result<(), CompileError> {
    for i in 0..cx.op.inputs.len() {
        if cx.op.input(i).is_some() && cx.dtype(i)? != DType::F32 {
            return Err(cx.input_err(i, format!("has type {}; {what} is implemented for float32 only", cx.dtype(i)?)));
        }
    }
    for k in 0..cx.op.outputs.len() {
        cx.expect_out_dtype(k, DType::F32)?;
    }
    Ok(())
}

/// Requires input `i` to be `want`.
fn expect_dims(cx: &Cx, i: usize, want: &[usize], what: &str) -> Result<(), CompileError> {
    let s = cx.input(i)?;
    if s != want {
        return Err(cx.input_err(i, format!("{what} {} must be {}", fmt_dims(s), fmt_dims(want))));
    }
    Ok(())
}

/// Sizes of an RNN cell: input 0 holds `[.., input]`; returns (units, input).
fn rnn_cell(cx: &Cx, batch: usize, input: usize) -> Result<usize, CompileError> {
    use cell::{BIAS, HIDDEN_STATE, RECURRENT_WEIGHTS, WEIGHTS};
    let w = cx.expect_rank(WEIGHTS, 2)?;
    if w[1] != input {
        return Err(cx.input_err(WEIGHTS, format!("weights {} must be [units, {input}]", fmt_dims(w))));
    }
    let units = w[0];
    expect_dims(cx, RECURRENT_WEIGHTS, &[units, units], "recurrent weights")?;
    expect_dims(cx, BIAS, &[units], "bias")?;
    expect_dims(cx, HIDDEN_STATE, &[batch, units], "hidden state")?;
    Ok(units)
}

/// RNN: input `[batch, input]`, output `[batch, units]`.
fn rnn(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Rnn(p) = cx.op.kind else { return Err(cx.unlisted()) };
    all_f32(cx, "RNN")?;
    check_act(cx, p.act)?;
    let x = cx.expect_rank(cell::INPUT, 2)?;
    let units = rnn_cell(cx, x[0], x[1])?;
    Ok(vec![x[0], units])
}

/// UNIDIRECTIONAL_SEQUENCE_RNN: input `[batch, time, input]` (time-major: `[time, batch, input]`).
fn sequence_rnn(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::SequenceRnn(p) = cx.op.kind else { return Err(cx.unlisted()) };
    all_f32(cx, "UNIDIRECTIONAL_SEQUENCE_RNN")?;
    check_act(cx, p.act)?;
    let x = cx.expect_rank(cell::INPUT, 3)?;
    let batch = if p.time_major { x[1] } else { x[0] };
    let units = rnn_cell(cx, batch, x[2])?;
    Ok(vec![x[0], x[1], units])
}

/// Refuses the SIGN_BIT activation, which no kernel implements.
pub(super) fn check_act(cx: &Cx, a: Activation) -> Result<(), CompileError> {
    if a == Activation::SignBit {
        return Err(cx.err("fused activation SIGN_BIT is not supported"));
    }
    Ok(())
}

/// SVDF sizes: (batch, input, filters, units, memory).
pub struct SvdfDims {
    /// Rows of the input.
    pub batch: usize,
    /// Features per row.
    pub input: usize,
    /// Feature filters (`units * rank`).
    pub filters: usize,
    /// Output units.
    pub units: usize,
    /// Time steps each filter remembers.
    pub memory: usize,
}

/// Resolves SVDF's sizes from its input shapes (`shape(i)`, `None` when absent).
pub fn svdf_dims(shape: &dyn Fn(usize) -> Option<Vec<usize>>, p: &Svdf) -> Result<SvdfDims, (Option<usize>, String)> {
    use svdf::*;
    let need = |i: usize| shape(i).ok_or((None, format!("input {i} is required")));
    let x = need(INPUT)?;
    let wf = need(FEATURE_WEIGHTS)?;
    let wt = need(TIME_WEIGHTS)?;
    if x.len() != 2 || wf.len() != 2 || wf[1] != x[1] {
        return Err((Some(FEATURE_WEIGHTS), format!("input {} must be [batch, n] and feature weights {} [filters, n]", fmt_dims(&x), fmt_dims(&wf))));
    }
    let filters = wf[0];
    if p.rank <= 0 || filters % p.rank as usize != 0 {
        return Err((None, format!("rank {} must be > 0 and divide the {filters} filters", p.rank)));
    }
    let units = filters / p.rank as usize;
    if wt.len() != 2 || wt[0] != filters {
        return Err((Some(TIME_WEIGHTS), format!("time weights {} must be [{filters}, memory]", fmt_dims(&wt))));
    }
    let memory = wt[1];
    if let Some(b) = shape(BIAS) {
        if b != [units] {
            return Err((Some(BIAS), format!("bias {} must be [{units}]", fmt_dims(&b))));
        }
    }
    let s = need(ACTIVATION_STATE)?;
    if s != [x[0], memory * filters] {
        return Err((Some(ACTIVATION_STATE), format!("activation state {} must be [{}, {}]", fmt_dims(&s), x[0], memory * filters)));
    }
    Ok(SvdfDims { batch: x[0], input: x[1], filters, units, memory })
}

/// SVDF: output `[batch, units]`.
fn svdf(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Svdf(p) = &cx.op.kind else { return Err(cx.unlisted()) };
    all_f32(cx, "SVDF")?;
    check_act(cx, p.act)?;
    let shape = |i: usize| cx.op.input(i).and_then(|_| cx.input(i).ok()).map(<[usize]>::to_vec);
    let d = svdf_dims(&shape, p).map_err(|(i, r)| match i {
        Some(i) => cx.input_err(i, r),
        None => cx.err(r),
    })?;
    Ok(vec![d.batch, d.units])
}
