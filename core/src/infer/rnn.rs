//! Shape rules of the recurrent cells besides the unidirectional LSTM: RNN,
//! UNIDIRECTIONAL_SEQUENCE_RNN, SVDF and BIDIRECTIONAL_SEQUENCE_LSTM (float32).

use super::lstm::lstm_dims;
use super::Cx;
use crate::shape::fmt_dims;
use crate::{Activation, BidirectionalLstm, CompileError, DType, Rnn, SequenceLstm, Svdf};

/// Checks that every present input and every output is float32.
fn all_f32(cx: &Cx, what: &str) -> Result<(), CompileError> {
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
    let w = cx.expect_rank(1, 2)?;
    if w[1] != input {
        return Err(cx.input_err(1, format!("weights {} must be [units, {input}]", fmt_dims(w))));
    }
    let units = w[0];
    expect_dims(cx, 2, &[units, units], "recurrent weights")?;
    expect_dims(cx, 3, &[units], "bias")?;
    expect_dims(cx, 4, &[batch, units], "hidden state")?;
    Ok(units)
}

/// RNN: input `[batch, input]`, output `[batch, units]`.
pub(super) fn rnn(cx: &Cx, p: &Rnn) -> Result<Vec<usize>, CompileError> {
    all_f32(cx, "RNN")?;
    check_act(cx, p.act)?;
    let x = cx.expect_rank(0, 2)?;
    let units = rnn_cell(cx, x[0], x[1])?;
    Ok(vec![x[0], units])
}

/// UNIDIRECTIONAL_SEQUENCE_RNN: input `[batch, time, input]` (time-major: `[time, batch, input]`).
pub(super) fn sequence_rnn(cx: &Cx, p: &Rnn) -> Result<Vec<usize>, CompileError> {
    all_f32(cx, "UNIDIRECTIONAL_SEQUENCE_RNN")?;
    check_act(cx, p.act)?;
    let x = cx.expect_rank(0, 3)?;
    let batch = if p.time_major { x[1] } else { x[0] };
    let units = rnn_cell(cx, batch, x[2])?;
    Ok(vec![x[0], x[1], units])
}

fn check_act(cx: &Cx, a: Activation) -> Result<(), CompileError> {
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
    let need = |i: usize| shape(i).ok_or((None, format!("input {i} is required")));
    let x = need(0)?;
    let wf = need(1)?;
    let wt = need(2)?;
    if x.len() != 2 || wf.len() != 2 || wf[1] != x[1] {
        return Err((Some(1), format!("input {} must be [batch, n] and feature weights {} [filters, n]", fmt_dims(&x), fmt_dims(&wf))));
    }
    let filters = wf[0];
    if p.rank <= 0 || filters % p.rank as usize != 0 {
        return Err((None, format!("rank {} must be > 0 and divide the {filters} filters", p.rank)));
    }
    let units = filters / p.rank as usize;
    if wt.len() != 2 || wt[0] != filters {
        return Err((Some(2), format!("time weights {} must be [{filters}, memory]", fmt_dims(&wt))));
    }
    let memory = wt[1];
    if let Some(b) = shape(3) {
        if b != [units] {
            return Err((Some(3), format!("bias {} must be [{units}]", fmt_dims(&b))));
        }
    }
    let s = need(4)?;
    if s != [x[0], memory * filters] {
        return Err((Some(4), format!("activation state {} must be [{}, {}]", fmt_dims(&s), x[0], memory * filters)));
    }
    Ok(SvdfDims { batch: x[0], input: x[1], filters, units, memory })
}

/// SVDF: output `[batch, units]`.
pub(super) fn svdf(cx: &Cx, p: &Svdf) -> Result<Vec<usize>, CompileError> {
    all_f32(cx, "SVDF")?;
    check_act(cx, p.act)?;
    let shape = |i: usize| cx.op.input(i).and_then(|_| cx.input(i).ok()).map(<[usize]>::to_vec);
    let d = svdf_dims(&shape, p).map_err(|(i, r)| match i {
        Some(i) => cx.input_err(i, r),
        None => cx.err(r),
    })?;
    Ok(vec![d.batch, d.units])
}

/// Where one direction of a BIDIRECTIONAL_SEQUENCE_LSTM finds the inputs of a
/// UNIDIRECTIONAL_SEQUENCE_LSTM: `map[k]` is the bidirectional input for LSTM input `k`.
pub fn bilstm_inputs(backward: bool) -> [Option<usize>; 24] {
    let mut m = [None; 24];
    m[0] = Some(0);
    let base = if backward { 18 } else { 1 };
    for (k, slot) in m.iter_mut().enumerate().take(18).skip(1) {
        *slot = Some(base + k - 1);
    }
    m[18] = Some(if backward { 37 } else { 35 });
    m[19] = Some(if backward { 38 } else { 36 });
    m
}

/// The LSTM parameters of one direction.
pub fn bilstm_params(p: &BidirectionalLstm) -> SequenceLstm {
    SequenceLstm {
        act: p.act,
        cell_clip: p.cell_clip,
        proj_clip: p.proj_clip,
        time_major: p.time_major,
        diagonal_recurrent: false,
        asymmetric_quantize_inputs: p.asymmetric_quantize_inputs,
    }
}

/// BIDIRECTIONAL_SEQUENCE_LSTM: forward output `[.., fw_out]` and backward output `[.., bw_out]`,
/// or one merged output `[.., fw_out + bw_out]`. The auxiliary input (39-47) is not supported.
pub(super) fn bidirectional_lstm(cx: &Cx, p: &BidirectionalLstm) -> Result<Vec<Vec<usize>>, CompileError> {
    all_f32(cx, "BIDIRECTIONAL_SEQUENCE_LSTM")?;
    check_act(cx, p.act)?;
    if let Some(i) = (39..48).find(|&i| cx.op.input(i).is_some()) {
        return Err(cx.input_err(i, "auxiliary inputs of BIDIRECTIONAL_SEQUENCE_LSTM are not supported"));
    }
    let lp = bilstm_params(p);
    let mut outs = Vec::new();
    for backward in [false, true] {
        let map = bilstm_inputs(backward);
        let shape = |k: usize| map[k].and_then(|i| cx.op.input(i).and_then(|_| cx.input(i).ok())).map(<[usize]>::to_vec);
        let d = lstm_dims(&shape, &lp).map_err(|(k, r)| match k.and_then(|k| map[k]) {
            Some(i) => cx.input_err(i, r),
            None => cx.err(r),
        })?;
        if d.layer_norm {
            return Err(cx.err("layer normalization is not part of BIDIRECTIONAL_SEQUENCE_LSTM"));
        }
        outs.push(if p.time_major { vec![d.time, d.batch, d.output] } else { vec![d.batch, d.time, d.output] });
    }
    let want = if p.merge_outputs { 1 } else { 2 };
    cx.expect_outputs(want)?;
    if p.merge_outputs {
        let mut m = outs[0].clone();
        m[2] += outs[1][2];
        return Ok(vec![m]);
    }
    Ok(outs)
}
