//! One float LSTM step, as TFLite's `lstm_eval` computes it (gate order input, forget, cell,
//! output; weights `[n_cell, n_input]` row-major):
//!
//! ```text
//! g  = bias + W_x·x + W_h·h  (+ peephole ⊙ c for i and f)      one per gate
//! g  = LayerNorm(g) ⊙ ln + bias                                  when layer-normalized
//! i  = σ(g_i)                (CIFG: i = 1 - f)
//! f  = σ(g_f)
//! c  = clip(f ⊙ c + i ⊙ act(g_c), cell_clip)
//! o  = σ(g_o + peephole_o ⊙ c)
//! h  = clip(P·(o ⊙ act(c)) + p_bias, proj_clip)   or   o ⊙ act(c) without a projection
//! ```
//!
//! Dot products are accumulated from zero and then added to the gate, as TFLite's
//! `MatrixBatchVectorMultiplyAccumulate` does.
#![forbid(unsafe_code)]

use super::unary::{unary, UnaryOp};

/// The activation of the cell input and output (TFLite's `fused_activation_function`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LstmAct {
    /// Identity.
    None,
    /// max(x, 0).
    Relu,
    /// clamp(x, -1, 1).
    ReluN1To1,
    /// clamp(x, 0, 6).
    Relu6,
    /// tanh.
    Tanh,
}

/// Sizes and variant of the layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LstmConfig {
    /// Sequences stepped together.
    pub batch: usize,
    /// Input features.
    pub input: usize,
    /// Cell units.
    pub cell: usize,
    /// Output features.
    pub output: usize,
    /// Activation of the cell input and output.
    pub act: LstmAct,
    /// Cell clip (0: none).
    pub cell_clip: f32,
    /// Projection clip (0: none).
    pub proj_clip: f32,
    /// Recurrent weights are `[n_cell]` diagonals.
    pub diagonal_recurrent: bool,
}

/// The layer's parameter tensors; `None` where the model leaves an optional one out. Arrays
/// are indexed by gate: 0 input, 1 forget, 2 cell, 3 output (peepholes: input, forget, output).
#[derive(Clone, Copy, Debug, Default)]
pub struct LstmWeights<'a> {
    /// Input-to-gate weights `[n_cell, n_input]` (input gate absent with CIFG).
    pub input: [Option<&'a [f32]>; 4],
    /// Recurrent weights `[n_cell, n_output]` (or `[n_cell]` when diagonal).
    pub recurrent: [Option<&'a [f32]>; 4],
    /// Peephole weights `[n_cell]` for the input, forget and output gates.
    pub peephole: [Option<&'a [f32]>; 3],
    /// Gate biases `[n_cell]`.
    pub bias: [Option<&'a [f32]>; 4],
    /// Projection `[n_output, n_cell]`.
    pub projection: Option<&'a [f32]>,
    /// Projection bias `[n_output]`.
    pub projection_bias: Option<&'a [f32]>,
    /// Layer-norm coefficients `[n_cell]` per gate.
    pub layer_norm: [Option<&'a [f32]>; 4],
}

/// Scratch buffers reused across steps.
#[derive(Debug, Default)]
pub struct LstmScratch {
    gates: [Vec<f32>; 4],
    tmp: Vec<f32>,
}

/// `acc[b, r] += Σ_c w[r, c] · v[b, c]` for `rows` rows of `cols`.
fn mat_vec_acc(w: &[f32], rows: usize, cols: usize, v: &[f32], batch: usize, acc: &mut [f32]) {
    for b in 0..batch {
        let vb = &v[b * cols..(b + 1) * cols];
        for r in 0..rows {
            let dot: f32 = w[r * cols..(r + 1) * cols].iter().zip(vb).fold(0.0, |s, (&a, &x)| s + a * x);
            acc[b * rows + r] += dot;
        }
    }
}

/// TFLite's `MeanStddevNormalization` per row: `(x - mean) / sqrt(var + 1e-8)`.
fn layer_norm(x: &mut [f32], n: usize) {
    for row in x.chunks_exact_mut(n.max(1)) {
        let mean = row.iter().sum::<f32>() / n as f32;
        let var = row.iter().map(|&v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
        let inv = 1.0 / (var + 1e-8).sqrt();
        for v in row.iter_mut() {
            *v = (*v - mean) * inv;
        }
    }
}

fn activate(act: LstmAct, x: &mut [f32], tmp: &mut Vec<f32>) {
    let op = match act {
        LstmAct::None => return,
        LstmAct::Relu => UnaryOp::Relu,
        LstmAct::ReluN1To1 => UnaryOp::ReluN1To1,
        LstmAct::Relu6 => UnaryOp::Relu6,
        LstmAct::Tanh => UnaryOp::Tanh,
    };
    tmp.clear();
    tmp.extend_from_slice(x);
    unary(op, tmp, x);
}

fn sigmoid(x: &mut [f32], tmp: &mut Vec<f32>) {
    tmp.clear();
    tmp.extend_from_slice(x);
    unary(UnaryOp::Logistic, tmp, x);
}

fn clip(x: &mut [f32], c: f32) {
    if c > 0.0 {
        for v in x.iter_mut() {
            *v = v.clamp(-c, c);
        }
    }
}

/// One time step for `cfg.batch` sequences: reads `x` (`[batch, n_input]`), updates the output
/// state `h` (`[batch, n_output]`) and cell state `c` (`[batch, n_cell]`) in place and writes
/// the step's output rows into `out` (`[batch, n_output]`).
pub fn lstm_step(cfg: &LstmConfig, w: &LstmWeights<'_>, x: &[f32], h: &mut [f32], c: &mut [f32], out: &mut [f32], s: &mut LstmScratch) {
    let (nb, nc, ni, no) = (cfg.batch, cfg.cell, cfg.input, cfg.output);
    let cifg = w.input[0].is_none();
    let layer_normed = w.layer_norm[1].is_some();
    for g in 0..4 {
        if g == 0 && cifg {
            continue;
        }
        let acc = &mut s.gates[g];
        acc.clear();
        match (layer_normed, w.bias[g]) {
            (false, Some(b)) => (0..nb).for_each(|_| acc.extend_from_slice(b)),
            _ => acc.resize(nb * nc, 0.0),
        }
        if let Some(wx) = w.input[g] {
            mat_vec_acc(wx, nc, ni, x, nb, acc);
        }
        if let Some(wh) = w.recurrent[g] {
            if cfg.diagonal_recurrent {
                for b in 0..nb {
                    for r in 0..nc {
                        acc[b * nc + r] += wh[r] * h[b * no + r];
                    }
                }
            } else {
                mat_vec_acc(wh, nc, no, h, nb, acc);
            }
        }
    }
    // Input and forget gates see the previous cell state through the peepholes.
    let finish_gate = |g: usize, peep: Option<&[f32]>, cell: &[f32], s: &mut LstmScratch| {
        let acc = &mut s.gates[g];
        if let Some(p) = peep {
            for b in 0..nb {
                for r in 0..nc {
                    acc[b * nc + r] += p[r] * cell[b * nc + r];
                }
            }
        }
        if layer_normed {
            layer_norm(acc, nc);
            let (ln, bias) = (w.layer_norm[g].unwrap_or(&[]), w.bias[g].unwrap_or(&[]));
            for row in acc.chunks_exact_mut(nc.max(1)) {
                for r in 0..nc {
                    row[r] = row[r] * ln[r] + bias[r];
                }
            }
        }
        sigmoid(acc, &mut s.tmp);
    };
    if !cifg {
        finish_gate(0, w.peephole[0], c, s);
    }
    finish_gate(1, w.peephole[1], c, s);
    // Cell update.
    {
        let gc = &mut s.gates[2];
        if layer_normed {
            layer_norm(gc, nc);
            let (ln, bias) = (w.layer_norm[2].unwrap_or(&[]), w.bias[2].unwrap_or(&[]));
            for row in gc.chunks_exact_mut(nc.max(1)) {
                for r in 0..nc {
                    row[r] = row[r] * ln[r] + bias[r];
                }
            }
        }
    }
    let mut gc = std::mem::take(&mut s.gates[2]);
    activate(cfg.act, &mut gc, &mut s.tmp);
    for i in 0..nb * nc {
        let f = s.gates[1][i];
        let input_gate = if cifg { 1.0 - f } else { s.gates[0][i] };
        c[i] = c[i] * f + gc[i] * input_gate;
    }
    clip(c, cfg.cell_clip);
    finish_gate(3, w.peephole[2], c, s);
    // o ⊙ act(c), in gc's storage.
    gc.copy_from_slice(c);
    activate(cfg.act, &mut gc, &mut s.tmp);
    for (v, &o) in gc.iter_mut().zip(&s.gates[3]) {
        *v *= o;
    }
    match w.projection {
        Some(p) => {
            for b in 0..nb {
                let row = &mut out[b * no..(b + 1) * no];
                match w.projection_bias {
                    Some(pb) => row.copy_from_slice(pb),
                    None => row.fill(0.0),
                }
            }
            mat_vec_acc(p, no, nc, &gc, nb, out);
            clip(out, cfg.proj_clip);
        }
        None => out.copy_from_slice(&gc[..nb * no]),
    }
    h.copy_from_slice(out);
    s.gates[2] = gc;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_unit_by_hand() {
        // n_input = n_cell = 1, all weights 0.5, biases 0, zero state, x = 1.
        let cfg = LstmConfig { batch: 1, input: 1, cell: 1, output: 1, act: LstmAct::Tanh, cell_clip: 0.0, proj_clip: 0.0, diagonal_recurrent: false };
        let half = [0.5f32];
        let zero = [0.0f32];
        let w = LstmWeights {
            input: [Some(&half), Some(&half), Some(&half), Some(&half)],
            recurrent: [Some(&half), Some(&half), Some(&half), Some(&half)],
            bias: [Some(&zero), Some(&zero), Some(&zero), Some(&zero)],
            ..LstmWeights::default()
        };
        let (mut h, mut c, mut out) = ([0.0f32], [0.0f32], [0.0f32]);
        lstm_step(&cfg, &w, &[1.0], &mut h, &mut c, &mut out, &mut LstmScratch::default());
        let sig = 1.0 / (1.0 + (-0.5f32).exp());
        let want_c = sig * 0.5f32.tanh();
        assert!((c[0] - want_c).abs() < 1e-6, "{} vs {want_c}", c[0]);
        assert!((out[0] - sig * want_c.tanh()).abs() < 1e-6);
        assert_eq!(h, out);
    }
}
