//! UNIDIRECTIONAL_SEQUENCE_LSTM (float32). The output and cell states (inputs 18 and 19) are
//! variable tensors: the kernel reads them from the arena, where they start at zero and keep
//! the last step's values between runs, as TFLite's variable tensors do. A state that is not a
//! variable (a constant or a graph input) is copied and left unchanged.

use nnrt_core::infer::lstm_dims;
use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, OpId, OpKind};

use super::{built, check_act, source};
use crate::backend::Built;
use crate::kernels::lstm::{lstm_step, LstmAct, LstmConfig, LstmScratch, LstmWeights};

const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;

pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let OpKind::UnidirectionalSequenceLstm(p) = &op.kind else { return Err("not an LSTM".into()) };
    check_act(p.act)?;
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(o).dtype != DType::F32 {
            return Err(format!("operand {o} is {}; only float32 LSTMs are implemented", ctx.graph.operand(o).dtype));
        }
    }
    Ok(())
}

fn lstm_act(a: Activation) -> LstmAct {
    match a {
        Activation::None | Activation::SignBit => LstmAct::None,
        Activation::Relu => LstmAct::Relu,
        Activation::ReluN1To1 => LstmAct::ReluN1To1,
        Activation::Relu6 => LstmAct::Relu6,
        Activation::Tanh => LstmAct::Tanh,
    }
}

pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let OpKind::UnidirectionalSequenceLstm(p) = op.kind else { return Err("not an LSTM".into()) };
    let shape = |i: usize| op.input(i).map(|o| ctx.dims(o).to_vec());
    let d = lstm_dims(&shape, &p).map_err(|(_, r)| r)?;
    let cfg = LstmConfig {
        batch: d.batch,
        input: d.input,
        cell: d.cell,
        output: d.output,
        act: lstm_act(p.act),
        cell_clip: p.cell_clip,
        proj_clip: p.proj_clip,
        diagonal_recurrent: p.diagonal_recurrent,
    };
    // Run-time inputs: every present input but the variable states, in index order.
    let mut pos = [None; 24];
    let mut inputs = Vec::new();
    let mut state = Vec::new();
    let mut state_is_var = [false; 2];
    for (i, slot) in pos.iter_mut().enumerate() {
        let Some(o) = op.input(i) else { continue };
        let operand = ctx.graph.operand(o);
        if (i == OUTPUT_STATE || i == CELL_STATE) && operand.is_variable && !operand.is_const() {
            state_is_var[i - OUTPUT_STATE] = true;
            state.push(o);
            continue;
        }
        *slot = Some(inputs.len());
        inputs.push(source(ctx, o));
    }
    let (time, time_major) = (d.time, p.time_major);
    let mut scratch = LstmScratch::default();
    let (mut x_t, mut out_t) = (Vec::new(), Vec::new());
    let (mut h_local, mut c_local) = (Vec::new(), Vec::new());
    let mut b = built(inputs, move |ins, outs| {
        let get = |i: usize| -> Result<Option<&[f32]>, String> { pos[i].map(|k| cast::<f32>(ins[k].bytes)).transpose() };
        let w = LstmWeights {
            input: [get(1)?, get(2)?, get(3)?, get(4)?],
            recurrent: [get(5)?, get(6)?, get(7)?, get(8)?],
            peephole: [get(9)?, get(10)?, get(11)?],
            bias: [get(12)?, get(13)?, get(14)?, get(15)?],
            projection: get(16)?,
            projection_bias: get(17)?,
            layer_norm: [get(20)?, get(21)?, get(22)?, get(23)?],
        };
        let x = get(0)?.ok_or("the LSTM input is absent")?;
        let (out, rest) = outs.split_first_mut().ok_or("the LSTM output is missing")?;
        let out = cast_mut::<f32>(out.bytes)?;
        // Output and cell state: in the arena when variable, else local copies.
        let mut rest = rest.iter_mut();
        let state_of = |k: usize, local: &mut Vec<f32>| -> Result<(), String> {
            if !state_is_var[k] {
                local.clear();
                local.extend_from_slice(get(OUTPUT_STATE + k)?.ok_or("an LSTM state is absent")?);
            }
            Ok(())
        };
        state_of(0, &mut h_local)?;
        state_of(1, &mut c_local)?;
        let h: &mut [f32] = if state_is_var[0] { cast_mut::<f32>(rest.next().ok_or("output state missing")?.bytes)? } else { &mut h_local };
        let c: &mut [f32] = if state_is_var[1] { cast_mut::<f32>(rest.next().ok_or("cell state missing")?.bytes)? } else { &mut c_local };
        let (nb, ni, no) = (cfg.batch, cfg.input, cfg.output);
        for t in 0..time {
            if time_major {
                let xs = &x[t * nb * ni..(t + 1) * nb * ni];
                lstm_step(&cfg, &w, xs, h, c, &mut out[t * nb * no..(t + 1) * nb * no], &mut scratch);
            } else {
                // Batch-major: gather step t of every sequence, then scatter the outputs back.
                x_t.clear();
                for b in 0..nb {
                    x_t.extend_from_slice(&x[(b * time + t) * ni..(b * time + t + 1) * ni]);
                }
                out_t.resize(nb * no, 0.0);
                lstm_step(&cfg, &w, &x_t, h, c, &mut out_t, &mut scratch);
                for b in 0..nb {
                    out[(b * time + t) * no..(b * time + t + 1) * no].copy_from_slice(&out_t[b * no..(b + 1) * no]);
                }
            }
        }
        Ok(())
    });
    b.state = state;
    Ok(b)
}
