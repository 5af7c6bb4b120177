//! The integer UNIDIRECTIONAL_SEQUENCE_LSTM of TFLite's 8x8_16 scheme (int8 input, weights and
//! output state; int16 cell state and gates): each gate is two int8 matmuls requantized to a
//! Q3.12 int16 accumulator, then gemmlowp's 16-bit sigmoid/tanh; the cell update and the hidden
//! output follow `lstm_eval.cc` (`LstmStepInteger8x8_16`). Peephole, layer norm and projection
//! are not implemented (the builder refuses them).

use super::fixedpoint::{fx16, mbqm, rdbp};

/// One gate's weights and requantization.
#[derive(Clone, Debug)]
pub struct Gate {
    /// `n_cell × n_input` input weights.
    pub w_in: Vec<i8>,
    /// `n_cell × n_output` recurrent weights.
    pub w_rec: Vec<i8>,
    /// Bias plus `input_zp · Σ w_in` per row.
    pub bias_in: Vec<i32>,
    /// `output_state_zp · Σ w_rec` per row.
    pub bias_rec: Vec<i32>,
    /// Input-to-gate multiplier (Q31, exponent).
    pub m_in: (i32, i32),
    /// Recurrent-to-gate multiplier.
    pub m_rec: (i32, i32),
}

/// A prepared integer LSTM.
#[derive(Clone, Debug)]
pub struct IntegerLstm {
    /// Input gate (absent with CIFG).
    pub input: Option<Gate>,
    /// Forget gate.
    pub forget: Gate,
    /// Cell gate.
    pub cell: Gate,
    /// Output gate.
    pub output: Gate,
    /// log2 of the cell state's scale (e.g. −11).
    pub cell_scale: i32,
    /// Hidden-state multiplier.
    pub hidden: (i32, i32),
    /// Zero point of the hidden state (= output state without projection).
    pub hidden_zp: i32,
    /// Cell clip in cell-state units (0: none).
    pub cell_clip: i16,
    /// Sizes.
    pub n_input: usize,
    /// Cells.
    pub n_cell: usize,
    /// Outputs (= cells without projection).
    pub n_output: usize,
    /// Initial output state and cell state (their zero points, as TFLite resets them).
    pub output_state_zp: i32,
}

/// `gate[r] = sat16(mbqm(bias[r] + Σ x·w[r], m) + gate[r])` (TFLite's int8 → int16
/// `MatrixBatchVectorMultiplyAccumulate`).
fn matvec_acc(x: &[i8], w: &[i8], bias: &[i32], m: (i32, i32), gate: &mut [i16]) {
    let k = x.len();
    for (r, g) in gate.iter_mut().enumerate() {
        let mut acc = bias[r];
        for (a, b) in x.iter().zip(&w[r * k..(r + 1) * k]) {
            acc = acc.wrapping_add(*a as i32 * *b as i32);
        }
        let v = mbqm(acc, m.0, m.1) + *g as i32;
        *g = v.clamp(i16::MIN as i32, i16::MAX as i32) as i16;
    }
}

impl IntegerLstm {
    fn gate(&self, g: &Gate, x: &[i8], h: &[i8], sigmoid: bool, out: &mut [i16]) {
        out.fill(0);
        matvec_acc(x, &g.w_in, &g.bias_in, g.m_in, out);
        matvec_acc(h, &g.w_rec, &g.bias_rec, g.m_rec, out);
        for v in out.iter_mut() {
            *v = if sigmoid { fx16::logistic(*v, 3) } else { fx16::tanh(*v, 3) };
        }
    }

    /// Runs `time` steps of one sequence: `input` is `time × n_input`, `out` `time × n_output`.
    /// The states start at their zero points.
    pub fn run_sequence(&self, input: &[i8], time: usize, out: &mut [i8]) {
        let mut h = vec![self.output_state_zp as i8; self.n_output];
        let mut c = vec![0i16; self.n_cell];
        self.run_sequence_from(input, time, out, &mut h, &mut c);
    }

    /// [`Self::run_sequence`] from the output state `h` (`n_output` values) and cell state `c`
    /// (`n_cell`), which are left holding the last step's states.
    pub fn run_sequence_from(&self, input: &[i8], time: usize, out: &mut [i8], h: &mut [i8], c: &mut [i16]) {
        let (nc, no) = (self.n_cell, self.n_output);
        let (mut ig, mut fg, mut cg, mut og) = (vec![0i16; nc], vec![0i16; nc], vec![0i16; nc], vec![0i16; nc]);
        for t in 0..time {
            let x = &input[t * self.n_input..(t + 1) * self.n_input];
            if let Some(gi) = &self.input {
                self.gate(gi, x, h, true, &mut ig);
            }
            self.gate(&self.forget, x, h, true, &mut fg);
            self.gate(&self.cell, x, h, false, &mut cg);
            // Cell update: c = f·c >> 15 (rounded) + i·g >> (30 + cell_scale).
            for j in 0..nc {
                let fc = rdbp(fg[j] as i32 * c[j] as i32, 15) as i16;
                let i_gate = if self.input.is_some() { ig[j] } else { (32767 - fg[j] as i32) as i16 };
                let ic = rdbp(i_gate as i32 * cg[j] as i32, 30 + self.cell_scale) as i16;
                let mut s = (fc as i32 + ic as i32).clamp(i16::MIN as i32, i16::MAX as i32) as i16;
                if self.cell_clip > 0 {
                    s = s.clamp(-self.cell_clip, self.cell_clip);
                }
                c[j] = s;
            }
            self.gate(&self.output, x, h, true, &mut og);
            for j in 0..nc {
                let tc = fx16::tanh(c[j], 15 + self.cell_scale);
                let v = mbqm(og[j] as i32 * tc as i32, self.hidden.0, self.hidden.1) + self.hidden_zp;
                h[j] = v.clamp(-128, 127) as i8;
            }
            out[t * no..(t + 1) * no].copy_from_slice(h);
        }
    }
}
