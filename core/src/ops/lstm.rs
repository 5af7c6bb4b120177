//! Sequence LSTMs: UNIDIRECTIONAL_SEQUENCE_LSTM (which optional inputs are present, and the
//! sizes they agree on) and BIDIRECTIONAL_SEQUENCE_LSTM (two of them over one sequence).

use super::rnn::{all_f32, check_act};
use super::Shapes::{Many, One};
use super::{spec, Activation, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots! {
    /// Input slots of UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite's order; optional ones may be absent).
    mod sequence: INPUT = 0: "The input sequence `[batch, time, features]` (time-major: `[time, batch, features]`).",
        INPUT_TO_INPUT_WEIGHTS = 1: "Input-to-input-gate weights (absent with coupled input and forget gates).",
        INPUT_TO_FORGET_WEIGHTS = 2: "Input-to-forget-gate weights.", INPUT_TO_CELL_WEIGHTS = 3: "Input-to-cell weights.",
        INPUT_TO_OUTPUT_WEIGHTS = 4: "Input-to-output-gate weights.",
        RECURRENT_TO_INPUT_WEIGHTS = 5: "Recurrent-to-input-gate weights (absent with coupled gates).",
        RECURRENT_TO_FORGET_WEIGHTS = 6: "Recurrent-to-forget-gate weights.", RECURRENT_TO_CELL_WEIGHTS = 7: "Recurrent-to-cell weights.",
        RECURRENT_TO_OUTPUT_WEIGHTS = 8: "Recurrent-to-output-gate weights.",
        CELL_TO_INPUT_WEIGHTS = 9: "Peephole weights from the cell to the input gate.",
        CELL_TO_FORGET_WEIGHTS = 10: "Peephole weights from the cell to the forget gate.",
        CELL_TO_OUTPUT_WEIGHTS = 11: "Peephole weights from the cell to the output gate.", INPUT_GATE_BIAS = 12: "Input gate bias.",
        FORGET_GATE_BIAS = 13: "Forget gate bias.", CELL_BIAS = 14: "Cell bias.", OUTPUT_GATE_BIAS = 15: "Output gate bias.",
        PROJECTION_WEIGHTS = 16: "Projection weights.", PROJECTION_BIAS = 17: "Projection bias.",
        OUTPUT_STATE = 18: "Output state (a variable tensor).", CELL_STATE = 19: "Cell state (a variable tensor).",
        INPUT_LAYER_NORM_WEIGHTS = 20: "Layer-norm coefficients of the input gate.",
        FORGET_LAYER_NORM_WEIGHTS = 21: "Layer-norm coefficients of the forget gate.",
        CELL_LAYER_NORM_WEIGHTS = 22: "Layer-norm coefficients of the cell.",
        OUTPUT_LAYER_NORM_WEIGHTS = 23: "Layer-norm coefficients of the output gate.", COUNT = 24: "Number of input slots.";
    /// Input slots of BIDIRECTIONAL_SEQUENCE_LSTM (TFLite's order).
    mod bidirectional: INPUT = 0: "The input sequence.",
        FW_WEIGHTS = 1: "First of the forward cell's 17 weights, peepholes, biases and projection (in the order of [`super::sequence`]'s slots 1 to 17).",
        BW_WEIGHTS = 18: "First of the backward cell's 17.", FW_OUTPUT_STATE = 35: "Forward output state (a variable tensor).",
        FW_CELL_STATE = 36: "Forward cell state.", BW_OUTPUT_STATE = 37: "Backward output state.",
        BW_CELL_STATE = 38: "Backward cell state.",
        AUX_INPUT = 39: "The auxiliary input (not supported), followed by its forward and backward weights.",
        COUNT = 48: "Number of input slots.";
}

/// Parameters of a float LSTM layer over a sequence (TFLite UNIDIRECTIONAL_SEQUENCE_LSTM).
///
/// Inputs (24, optional ones may be absent): 0 input; 1-4 input-to-{input,forget,cell,output}
/// weights; 5-8 recurrent-to-{…} weights; 9-11 peephole cell-to-{input,forget,output}; 12-15
/// gate biases; 16 projection weights; 17 projection bias; 18 output state and 19 cell state
/// (variable tensors); 20-23 layer-norm coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SequenceLstm {
    /// Activation of the cell input and of the cell state on output (usually tanh).
    pub act: Activation,
    /// Clip the cell state to `[-cell_clip, cell_clip]` when positive.
    pub cell_clip: f32,
    /// Clip the projected output to `[-proj_clip, proj_clip]` when positive.
    pub proj_clip: f32,
    /// Input is `[time, batch, features]` rather than `[batch, time, features]`.
    pub time_major: bool,
    /// Recurrent weights are diagonal (`[n_cell]` vectors).
    pub diagonal_recurrent: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// Parameters of BIDIRECTIONAL_SEQUENCE_LSTM: a forward and a backward float LSTM over one
/// sequence. Inputs (48, TFLite's order): 0 input; 1-17 forward weights, peepholes, biases and
/// projection (as inputs 1-17 of [`SequenceLstm`]); 18-34 the same for the backward cell; 35-38
/// forward then backward output and cell states (variable tensors); 39 auxiliary input; 40-47
/// auxiliary input weights (forward, backward).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BidirectionalLstm {
    /// Activation of the cell input and of the cell state on output.
    pub act: Activation,
    /// Clip the cell state to `[-cell_clip, cell_clip]` when positive.
    pub cell_clip: f32,
    /// Clip the projected output to `[-proj_clip, proj_clip]` when positive.
    pub proj_clip: f32,
    /// Concatenate both directions into output 0 instead of writing two outputs.
    pub merge_outputs: bool,
    /// Input is `[time, batch, features]` rather than `[batch, time, features]`.
    pub time_major: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        // Most inputs are optional; which ones must be present is checked by inference.
        OpKind::UnidirectionalSequenceLstm(_) => spec("UnidirectionalSequenceLstm", 1, Some(sequence::COUNT), Some(1), One(sequence_lstm)),
        // merge_outputs decides between one and two outputs.
        OpKind::BidirectionalSequenceLstm(_) => spec("BidirectionalSequenceLstm", 1, Some(bidirectional::COUNT), None, Many(bidirectional_lstm)),
        _ => return None,
    })
}

/// Sizes and variant of a sequence LSTM, resolved from its operands' shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LstmDims {
    /// Sequences processed together.
    pub batch: usize,
    /// Time steps.
    pub time: usize,
    /// Features per input step.
    pub input: usize,
    /// Cell units.
    pub cell: usize,
    /// Output features (the projection's size when there is one, else `cell`).
    pub output: usize,
    /// Coupled input and forget gates (no input gate weights): `i = 1 - f`.
    pub cifg: bool,
    /// Peephole connections from the cell state to the gates.
    pub peephole: bool,
    /// A projection layer (input 16) after the output gate.
    pub projection: bool,
    /// Layer normalization of the gate pre-activations (inputs 20-23).
    pub layer_norm: bool,
}

/// Resolves an LSTM from `shape(i)`, the dims of input `i` when it is present. Errors carry the
/// input they concern (`None` for the op as a whole).
pub fn lstm_dims(shape: &dyn Fn(usize) -> Option<Vec<usize>>, p: &SequenceLstm) -> Result<LstmDims, (Option<usize>, String)> {
    use sequence::*;
    let need = |i: usize, what: &str| shape(i).ok_or((None, format!("input {i} ({what}) is required")));
    let x = need(INPUT, "input")?;
    if x.len() != 3 {
        return Err((Some(INPUT), format!("input must be rank 3, shape is {}", fmt_dims(&x))));
    }
    let (time, batch) = if p.time_major { (x[0], x[1]) } else { (x[1], x[0]) };
    let input = x[2];
    let wf = need(INPUT_TO_FORGET_WEIGHTS, "input-to-forget weights")?;
    if wf.len() != 2 || wf[1] != input {
        return Err((Some(INPUT_TO_FORGET_WEIGHTS), format!("weights {} must be [n_cell, {input}]", fmt_dims(&wf))));
    }
    let cell = wf[0];
    let cifg = shape(INPUT_TO_INPUT_WEIGHTS).is_none();
    for i in [INPUT_TO_INPUT_WEIGHTS, INPUT_TO_CELL_WEIGHTS, INPUT_TO_OUTPUT_WEIGHTS] {
        match shape(i) {
            Some(s) if s != [cell, input] => return Err((Some(i), format!("weights {} must be [{cell}, {input}]", fmt_dims(&s)))),
            Some(_) => {}
            None if i == INPUT_TO_INPUT_WEIGHTS => {}
            None => return Err((None, format!("input {i} (input weights) is required"))),
        }
    }
    if shape(RECURRENT_TO_INPUT_WEIGHTS).is_some() == cifg {
        return Err((Some(RECURRENT_TO_INPUT_WEIGHTS), "input-to-input and recurrent-to-input weights must be both present or both absent".into()));
    }
    let rf = need(RECURRENT_TO_FORGET_WEIGHTS, "recurrent-to-forget weights")?;
    let output = if p.diagonal_recurrent { cell } else { rf.get(1).copied().unwrap_or(0) };
    for i in [RECURRENT_TO_INPUT_WEIGHTS, RECURRENT_TO_FORGET_WEIGHTS, RECURRENT_TO_CELL_WEIGHTS, RECURRENT_TO_OUTPUT_WEIGHTS] {
        let Some(s) = shape(i) else {
            if i == RECURRENT_TO_INPUT_WEIGHTS {
                continue;
            }
            return Err((None, format!("input {i} (recurrent weights) is required")));
        };
        let ok = if p.diagonal_recurrent { s == [cell] } else { s == [cell, output] };
        if !ok {
            return Err((Some(i), format!("recurrent weights {} must be [{cell}, {output}] ({cell} when diagonal)", fmt_dims(&s))));
        }
    }
    let peephole = shape(CELL_TO_OUTPUT_WEIGHTS).is_some();
    for (i, wanted) in [(CELL_TO_INPUT_WEIGHTS, peephole && !cifg), (CELL_TO_FORGET_WEIGHTS, peephole), (CELL_TO_OUTPUT_WEIGHTS, peephole)] {
        match shape(i) {
            Some(s) if wanted && s == [cell] => {}
            None if !wanted => {}
            Some(s) => return Err((Some(i), format!("peephole weights {} must be [{cell}] and present with the others", fmt_dims(&s)))),
            None => return Err((None, format!("input {i} (peephole weights) is required with the other peephole inputs"))),
        }
    }
    for (i, wanted) in [(INPUT_GATE_BIAS, !cifg), (FORGET_GATE_BIAS, true), (CELL_BIAS, true), (OUTPUT_GATE_BIAS, true)] {
        match shape(i) {
            Some(s) if wanted && s == [cell] => {}
            None if !wanted => {}
            Some(s) if !wanted => return Err((Some(i), format!("input gate bias {} must be absent with coupled gates (CIFG)", fmt_dims(&s)))),
            Some(s) => return Err((Some(i), format!("gate bias {} must be [{cell}]", fmt_dims(&s)))),
            None => return Err((None, format!("input {i} (gate bias) is required"))),
        }
    }
    let projection = shape(PROJECTION_WEIGHTS).is_some();
    if let Some(s) = shape(PROJECTION_WEIGHTS) {
        if p.diagonal_recurrent || s != [output, cell] {
            return Err((Some(PROJECTION_WEIGHTS), format!("projection weights {} must be [{output}, {cell}]", fmt_dims(&s))));
        }
    } else if output != cell {
        return Err((Some(RECURRENT_TO_FORGET_WEIGHTS), format!("without a projection the recurrent weights must be [{cell}, {cell}], not [{cell}, {output}]")));
    }
    if let Some(s) = shape(PROJECTION_BIAS) {
        if !projection || s != [output] {
            return Err((Some(PROJECTION_BIAS), format!("projection bias {} needs projection weights and must be [{output}]", fmt_dims(&s))));
        }
    }
    for (i, n, what) in [(OUTPUT_STATE, output, "output"), (CELL_STATE, cell, "cell")] {
        let s = need(i, "state")?;
        if s.iter().product::<usize>() != batch * n || s.len() != 2 {
            return Err((Some(i), format!("{what} state {} must be [{batch}, {n}]", fmt_dims(&s))));
        }
    }
    let layer_norm = shape(FORGET_LAYER_NORM_WEIGHTS).is_some();
    let norms = [
        (INPUT_LAYER_NORM_WEIGHTS, layer_norm && !cifg),
        (FORGET_LAYER_NORM_WEIGHTS, layer_norm),
        (CELL_LAYER_NORM_WEIGHTS, layer_norm),
        (OUTPUT_LAYER_NORM_WEIGHTS, layer_norm),
    ];
    for (i, wanted) in norms {
        match shape(i) {
            Some(s) if wanted && s == [cell] => {}
            None if !wanted => {}
            Some(s) => return Err((Some(i), format!("layer-norm coefficients {} must be [{cell}] and present with the others", fmt_dims(&s)))),
            None => return Err((None, format!("input {i} (layer-norm coefficients) is required with the others"))),
        }
    }
    Ok(LstmDims { batch, time, input, cell, output, cifg, peephole, projection, layer_norm })
}

/// The output of a UNIDIRECTIONAL_SEQUENCE_LSTM: float32, or int8 for the integer (8x8_16) LSTM.
fn sequence_lstm(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::UnidirectionalSequenceLstm(p) = &cx.op.kind else { return Err(cx.unlisted()) };
    let shape = |i: usize| cx.op.input(i).and_then(|_| cx.input(i).ok()).map(<[usize]>::to_vec);
    let d = lstm_dims(&shape, p).map_err(|(i, r)| match i {
        Some(i) => cx.input_err(i, r),
        None => cx.err(r),
    })?;
    // The integer (8x8_16) LSTM has int8 input and output; backends check its other operands.
    let integer = cx.dtype(sequence::INPUT)? == DType::I8;
    for i in 0..cx.op.inputs.len() {
        if !integer && cx.op.input(i).is_some() && cx.dtype(i)? != DType::F32 {
            return Err(cx.input_err(i, format!("has type {}; this LSTM is float32 (quantized LSTMs are not supported)", cx.dtype(i)?)));
        }
    }
    cx.expect_out_dtype(0, if integer { DType::I8 } else { DType::F32 })?;
    Ok(if p.time_major { vec![d.time, d.batch, d.output] } else { vec![d.batch, d.time, d.output] })
}

/// Where one direction of a BIDIRECTIONAL_SEQUENCE_LSTM finds the inputs of a
/// UNIDIRECTIONAL_SEQUENCE_LSTM: `map[k]` is the bidirectional input for LSTM input `k`.
pub fn bilstm_inputs(backward: bool) -> [Option<usize>; sequence::COUNT] {
    use bidirectional::*;
    let mut m = [None; sequence::COUNT];
    m[sequence::INPUT] = Some(INPUT);
    let base = if backward { BW_WEIGHTS } else { FW_WEIGHTS };
    for (k, slot) in m.iter_mut().enumerate().take(sequence::OUTPUT_STATE).skip(sequence::INPUT_TO_INPUT_WEIGHTS) {
        *slot = Some(base + k - sequence::INPUT_TO_INPUT_WEIGHTS);
    }
    m[sequence::OUTPUT_STATE] = Some(if backward { BW_OUTPUT_STATE } else { FW_OUTPUT_STATE });
    m[sequence::CELL_STATE] = Some(if backward { BW_CELL_STATE } else { FW_CELL_STATE });
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
fn bidirectional_lstm(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let OpKind::BidirectionalSequenceLstm(p) = &cx.op.kind else { return Err(cx.unlisted()) };
    all_f32(cx, "BIDIRECTIONAL_SEQUENCE_LSTM")?;
    check_act(cx, p.act)?;
    if let Some(i) = (bidirectional::AUX_INPUT..bidirectional::COUNT).find(|&i| cx.op.input(i).is_some()) {
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
