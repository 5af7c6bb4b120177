//! UNIDIRECTIONAL_SEQUENCE_LSTM: which optional inputs are present, and the sizes they agree on.

use super::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, SequenceLstm};

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
    let need = |i: usize, what: &str| shape(i).ok_or((None, format!("input {i} ({what}) is required")));
    let x = need(0, "input")?;
    if x.len() != 3 {
        return Err((Some(0), format!("input must be rank 3, shape is {}", fmt_dims(&x))));
    }
    let (time, batch) = if p.time_major { (x[0], x[1]) } else { (x[1], x[0]) };
    let input = x[2];
    let wf = need(2, "input-to-forget weights")?;
    if wf.len() != 2 || wf[1] != input {
        return Err((Some(2), format!("weights {} must be [n_cell, {input}]", fmt_dims(&wf))));
    }
    let cell = wf[0];
    let cifg = shape(1).is_none();
    for i in [1, 3, 4] {
        match shape(i) {
            Some(s) if s != [cell, input] => return Err((Some(i), format!("weights {} must be [{cell}, {input}]", fmt_dims(&s)))),
            Some(_) => {}
            None if i == 1 => {}
            None => return Err((None, format!("input {i} (input weights) is required"))),
        }
    }
    if shape(5).is_some() == cifg {
        return Err((Some(5), "input-to-input and recurrent-to-input weights must be both present or both absent".into()));
    }
    let rf = need(6, "recurrent-to-forget weights")?;
    let output = if p.diagonal_recurrent { cell } else { rf.get(1).copied().unwrap_or(0) };
    for i in [5, 6, 7, 8] {
        let Some(s) = shape(i) else {
            if i == 5 {
                continue;
            }
            return Err((None, format!("input {i} (recurrent weights) is required")));
        };
        let ok = if p.diagonal_recurrent { s == [cell] } else { s == [cell, output] };
        if !ok {
            return Err((Some(i), format!("recurrent weights {} must be [{cell}, {output}] ({cell} when diagonal)", fmt_dims(&s))));
        }
    }
    let peephole = shape(11).is_some();
    for (i, wanted) in [(9, peephole && !cifg), (10, peephole), (11, peephole)] {
        match shape(i) {
            Some(s) if wanted && s == [cell] => {}
            None if !wanted => {}
            Some(s) => return Err((Some(i), format!("peephole weights {} must be [{cell}] and present with the others", fmt_dims(&s)))),
            None => return Err((None, format!("input {i} (peephole weights) is required with the other peephole inputs"))),
        }
    }
    for (i, wanted) in [(12, !cifg), (13, true), (14, true), (15, true)] {
        match shape(i) {
            Some(s) if wanted && s == [cell] => {}
            None if !wanted => {}
            Some(s) if !wanted => return Err((Some(i), format!("input gate bias {} must be absent with coupled gates (CIFG)", fmt_dims(&s)))),
            Some(s) => return Err((Some(i), format!("gate bias {} must be [{cell}]", fmt_dims(&s)))),
            None => return Err((None, format!("input {i} (gate bias) is required"))),
        }
    }
    let projection = shape(16).is_some();
    if let Some(s) = shape(16) {
        if p.diagonal_recurrent || s != [output, cell] {
            return Err((Some(16), format!("projection weights {} must be [{output}, {cell}]", fmt_dims(&s))));
        }
    } else if output != cell {
        return Err((Some(6), format!("without a projection the recurrent weights must be [{cell}, {cell}], not [{cell}, {output}]")));
    }
    if let Some(s) = shape(17) {
        if !projection || s != [output] {
            return Err((Some(17), format!("projection bias {} needs projection weights and must be [{output}]", fmt_dims(&s))));
        }
    }
    for (i, n, what) in [(18, output, "output"), (19, cell, "cell")] {
        let s = need(i, "state")?;
        if s.iter().product::<usize>() != batch * n || s.len() != 2 {
            return Err((Some(i), format!("{what} state {} must be [{batch}, {n}]", fmt_dims(&s))));
        }
    }
    let layer_norm = shape(21).is_some();
    for (i, wanted) in [(20, layer_norm && !cifg), (21, layer_norm), (22, layer_norm), (23, layer_norm)] {
        match shape(i) {
            Some(s) if wanted && s == [cell] => {}
            None if !wanted => {}
            Some(s) => return Err((Some(i), format!("layer-norm coefficients {} must be [{cell}] and present with the others", fmt_dims(&s)))),
            None => return Err((None, format!("input {i} (layer-norm coefficients) is required with the others"))),
        }
    }
    Ok(LstmDims { batch, time, input, cell, output, cifg, peephole, projection, layer_norm })
}

pub(super) struct LstmShapes {
    pub out_dims: Vec<usize>,
}

pub(super) fn sequence_lstm(cx: &Cx, p: &SequenceLstm) -> Result<LstmShapes, CompileError> {
    let shape = |i: usize| cx.op.input(i).and_then(|_| cx.input(i).ok()).map(<[usize]>::to_vec);
    let d = lstm_dims(&shape, p).map_err(|(i, r)| match i {
        Some(i) => cx.input_err(i, r),
        None => cx.err(r),
    })?;
    // The integer (8x8_16) LSTM has int8 input and output; backends check its other operands.
    let integer = cx.dtype(0)? == DType::I8;
    for i in 0..cx.op.inputs.len() {
        if !integer && cx.op.input(i).is_some() && cx.dtype(i)? != DType::F32 {
            return Err(cx.input_err(i, format!("has type {}; this LSTM is float32 (quantized LSTMs are not supported)", cx.dtype(i)?)));
        }
    }
    cx.expect_out_dtype(0, if integer { DType::I8 } else { DType::F32 })?;
    let out_dims = if p.time_major { vec![d.time, d.batch, d.output] } else { vec![d.batch, d.time, d.output] };
    Ok(LstmShapes { out_dims })
}
