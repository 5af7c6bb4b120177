//! UNIDIRECTIONAL_SEQUENCE_LSTM: every optional part (CIFG, peephole, projection with clipping,
//! layer norm, time-major) against a plain LSTM, the state carried into a second run, and
//! missing or inconsistent inputs refused at prepare.

use nnrt_core::{Activation, DType, OpKind, OperandId, Rnn, SequenceLstm, Svdf};
use nnrt_tests::Arg;
use nnrt_tests::{f, rand, Case};
use nnrt_tests::Graph;

use crate::{zero_input as z, F, SUMS};

nnrt_tests::replay_on_every_target!(lstm_cases, later_builtin_neg_cases);

/// Which optional parts an LSTM case has.
#[derive(Clone, Copy, Debug)]
struct LstmCase {
    batch: usize,
    time: usize,
    input: usize,
    cell: usize,
    proj: Option<usize>,
    cifg: bool,
    peephole: bool,
    layer_norm: bool,
    time_major: bool,
    cell_clip: f32,
    proj_clip: f32,
}

/// The parameter tensors of a case, by TFLite input index.
fn lstm_params(c: &LstmCase, seed: u64) -> Vec<Option<(Vec<usize>, Vec<f32>)>> {
    let out = c.proj.unwrap_or(c.cell);
    let mut p: Vec<Option<(Vec<usize>, Vec<f32>)>> = vec![None; 24];
    let mut k = seed;
    let mut t = |dims: Vec<usize>| {
        k += 1;
        let n = dims.iter().product();
        Some((dims, rand(n, k, -0.6, 0.6)))
    };
    for g in 0..4 {
        if g == 0 && c.cifg {
            continue;
        }
        p[1 + g] = t(vec![c.cell, c.input]);
        p[5 + g] = t(vec![c.cell, out]);
        p[12 + g] = t(vec![c.cell]);
        if c.layer_norm {
            p[20 + g] = t(vec![c.cell]);
        }
    }
    if c.peephole {
        for g in 0..3 {
            if g == 0 && c.cifg {
                continue;
            }
            p[9 + g] = t(vec![c.cell]);
        }
    }
    if let Some(o) = c.proj {
        p[16] = t(vec![o, c.cell]);
        p[17] = t(vec![o]);
    }
    p
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

/// A plain LSTM over the sequence (batch-major input); returns the outputs and final states.
fn lstm_ref(c: &LstmCase, p: &[Option<(Vec<usize>, Vec<f32>)>], x: &[f32], h0: &[f32], c0: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let out = c.proj.unwrap_or(c.cell);
    let w = |i: usize| p[i].as_ref().map(|t| t.1.as_slice());
    let (mut h, mut cs) = (h0.to_vec(), c0.to_vec());
    let mut y = vec![0.0; c.batch * c.time * out];
    for bi in 0..c.batch {
        for t in 0..c.time {
            let xt = &x[(bi * c.time + t) * c.input..][..c.input];
            let hb = h[bi * out..(bi + 1) * out].to_vec();
            let mut gates = vec![vec![0.0f32; c.cell]; 4];
            for (g, gate) in gates.iter_mut().enumerate() {
                let Some(wx) = w(1 + g) else { continue };
                let wh = w(5 + g).unwrap();
                for r in 0..c.cell {
                    let mut v: f32 = (0..c.input).map(|k| wx[r * c.input + k] * xt[k]).sum::<f32>();
                    v += (0..out).map(|k| wh[r * out + k] * hb[k]).sum::<f32>();
                    if !c.layer_norm {
                        v += w(12 + g).unwrap()[r];
                    }
                    gate[r] = v;
                }
            }
            let cell_prev: Vec<f32> = cs[bi * c.cell..(bi + 1) * c.cell].to_vec();
            let norm = |g: usize, v: &mut Vec<f32>| {
                if c.layer_norm {
                    let mean = v.iter().sum::<f32>() / c.cell as f32;
                    let var = v.iter().map(|a| (a - mean) * (a - mean)).sum::<f32>() / c.cell as f32;
                    for (r, a) in v.iter_mut().enumerate() {
                        *a = (*a - mean) / (var + 1e-8).sqrt() * w(20 + g).unwrap()[r] + w(12 + g).unwrap()[r];
                    }
                }
            };
            for (g, peep) in [(0usize, 9usize), (1, 10)] {
                if g == 0 && c.cifg {
                    continue;
                }
                if let Some(pw) = w(peep) {
                    for r in 0..c.cell {
                        gates[g][r] += pw[r] * cell_prev[r];
                    }
                }
                norm(g, &mut gates[g]);
                gates[g].iter_mut().for_each(|a| *a = sigmoid(*a));
            }
            norm(2, &mut gates[2]);
            for r in 0..c.cell {
                let fg = gates[1][r];
                let ig = if c.cifg { 1.0 - fg } else { gates[0][r] };
                let mut v = fg * cell_prev[r] + ig * gates[2][r].tanh();
                if c.cell_clip > 0.0 {
                    v = v.clamp(-c.cell_clip, c.cell_clip);
                }
                cs[bi * c.cell + r] = v;
            }
            if let Some(pw) = w(11) {
                for r in 0..c.cell {
                    gates[3][r] += pw[r] * cs[bi * c.cell + r];
                }
            }
            norm(3, &mut gates[3]);
            let hidden: Vec<f32> = (0..c.cell).map(|r| sigmoid(gates[3][r]) * cs[bi * c.cell + r].tanh()).collect();
            let yt: Vec<f32> = match c.proj {
                Some(o) => (0..o)
                    .map(|r| {
                        let v = w(17).unwrap()[r] + (0..c.cell).map(|k| w(16).unwrap()[r * c.cell + k] * hidden[k]).sum::<f32>();
                        if c.proj_clip > 0.0 {
                            v.clamp(-c.proj_clip, c.proj_clip)
                        } else {
                            v
                        }
                    })
                    .collect(),
                None => hidden,
            };
            h[bi * out..(bi + 1) * out].copy_from_slice(&yt);
            y[(bi * c.time + t) * out..][..out].copy_from_slice(&yt);
        }
    }
    (y, h, cs)
}

/// The case as a model: constants for the parameters, variable tensors for the states.
fn lstm_model(c: &LstmCase, p: &[Option<(Vec<usize>, Vec<f32>)>], x: &[f32]) -> Graph {
    let out = c.proj.unwrap_or(c.cell);
    let mut g = Graph::new();
    let xd = if c.time_major { vec![c.time, c.batch, c.input] } else { vec![c.batch, c.time, c.input] };
    let x_fed: Vec<f32> = if c.time_major {
        (0..c.time).flat_map(|t| (0..c.batch).flat_map(move |bi| (0..c.input).map(move |k| (bi, t, k)))).map(|(bi, t, k)| x[(bi * c.time + t) * c.input + k]).collect()
    } else {
        x.to_vec()
    };
    let mut inputs: Vec<Option<OperandId>> = vec![None; 24];
    inputs[0] = Some(g.input(&xd, f(&x_fed)));
    for (k, t) in p.iter().enumerate() {
        if let Some((dims, v)) = t {
            inputs[k] = Some(g.konst(dims, f(v)));
        }
    }
    for (k, n) in [(18, out), (19, c.cell)] {
        inputs[k] = Some(g.variable(DType::F32, &[c.batch, n]));
    }
    let od = if c.time_major { vec![c.time, c.batch, out] } else { vec![c.batch, c.time, out] };
    let y = g.out(DType::F32, &od);
    let p = SequenceLstm { act: Activation::Tanh, cell_clip: c.cell_clip, proj_clip: c.proj_clip, time_major: c.time_major, diagonal_recurrent: false, asymmetric_quantize_inputs: false };
    g.op(OpKind::UnidirectionalSequenceLstm(p), &inputs, &[y]);
    g
}

fn to_time_major(c: &LstmCase, y: &[f32], out: usize) -> Vec<f32> {
    (0..c.time).flat_map(|t| (0..c.batch).flat_map(move |bi| (0..out).map(move |k| (bi, t, k)))).map(|(bi, t, k)| y[(bi * c.time + t) * out + k]).collect()
}

fn lstm_cases() -> Vec<Case> {
    let base = LstmCase { batch: 2, time: 5, input: 3, cell: 4, proj: None, cifg: false, peephole: false, layer_norm: false, time_major: false, cell_clip: 0.0, proj_clip: 0.0 };
    let variants = [
        base,
        LstmCase { time_major: true, ..base },
        LstmCase { cifg: true, peephole: true, ..base },
        LstmCase { peephole: true, proj: Some(3), proj_clip: 0.3, cell_clip: 0.5, ..base },
        LstmCase { layer_norm: true, ..base },
        LstmCase { layer_norm: true, cifg: true, peephole: true, proj: Some(2), time_major: true, batch: 1, ..base },
    ];
    let mut cases = Vec::new();
    for (seed, c) in variants.iter().enumerate() {
        let out = c.proj.unwrap_or(c.cell);
        let p = lstm_params(c, 100 * seed as u64);
        let x = rand(c.batch * c.time * c.input, seed as u64 + 7, -1.0, 1.0);
        let (y, h, cs) = lstm_ref(c, &p, &x, &vec![0.0; c.batch * out], &vec![0.0; c.batch * c.cell]);
        let g = lstm_model(c, &p, &x);
        let want = if c.time_major { to_time_major(c, &y, out) } else { y };
        cases.push(Case::new(format!("lstm {c:?}"), &g).out_close(0, f(&want), SUMS));
        // The state is kept between runs: a second run continues from the final state.
        let (y2, _, _) = lstm_ref(c, &p, &x, &h, &cs);
        let want2 = if c.time_major { to_time_major(c, &y2, out) } else { y2 };
        cases.push(Case::new(format!("lstm second run {c:?}"), &g).runs(2).out_close(0, f(&want2), SUMS));
    }
    let c = LstmCase { batch: 1, time: 2, input: 3, cell: 4, ..base };
    let x = rand(6, 1, -1.0, 1.0);
    let mut p = lstm_params(&c, 1);
    p[14] = None; // cell gate bias is required
    cases.push(Case::new("neg_lstm_missing_cell_gate_bias", &lstm_model(&c, &p, &x)).prepare_error(&["UnidirectionalSequenceLstm", "input 14"]));
    let mut p = lstm_params(&c, 1);
    p[3] = Some((vec![4, 5], vec![0.0; 20])); // input weights of the wrong width
    cases.push(Case::new("neg_lstm_input_weights_of_the_wrong_width", &lstm_model(&c, &p, &x)).prepare_error(&["UnidirectionalSequenceLstm", "[4, 3]"]));
    let mut p = lstm_params(&c, 1);
    p[5] = None; // recurrent-to-input without input-to-input
    cases.push(Case::new("neg_lstm_recurrent_without_input_weights", &lstm_model(&c, &p, &x)).prepare_error(&["both present or both absent"]));
    cases.into_iter().map(|c| c.no_gpu("no UnidirectionalSequenceLstm kernel")).collect()
}

/// `neg_` cases of the builtins added after the first op set (their values are checked against
/// LiteRT by `tests/builtin_oneop.rs`): bad options, shapes or types fail at prepare naming the
/// op and the rule.
fn later_builtin_neg_cases() -> Vec<Case> {
    let svdf = OpKind::Svdf(Svdf { rank: 2, act: Activation::None, asymmetric_quantize_inputs: false });
    let g = Graph::one_op(svdf, &[z(F, &[1, 3]), z(F, &[5, 3]), z(F, &[5, 2]), Arg::Absent, z(F, &[1, 10])], &[(F, &[1, 2])]);
    let svdf = Case::new("neg_svdf_rank_not_dividing_the_filters", &g).prepare_error(&["Svdf", "divide"]);
    let rnn = OpKind::Rnn(Rnn { act: Activation::Tanh, time_major: false, asymmetric_quantize_inputs: false });
    let g = Graph::one_op(rnn, &[z(F, &[2, 3]), z(F, &[4, 3]), z(F, &[4, 3]), z(F, &[4]), z(F, &[2, 4])], &[(F, &[2, 4])]);
    vec![svdf, Case::new("neg_rnn_recurrent_weights_of_the_wrong_size", &g).prepare_error(&["Rnn", "recurrent weights"])]
}
