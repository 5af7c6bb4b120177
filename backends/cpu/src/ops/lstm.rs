//! UNIDIRECTIONAL_SEQUENCE_LSTM (float32). The output and cell states (inputs 18 and 19) are
//! variable tensors: the kernel reads them from the arena, where they start at zero and keep
//! the last step's values between runs, as TFLite's variable tensors do. A state that is not a
//! variable (a constant or a graph input) is copied and left unchanged.
//!
//! The integer LSTM (int8 input, TFLite's 8x8_16 scheme): effective scales as
//! `PopulateQuantizedLstmParams8x8_16` computes them (in float, then Q31), zero point
//! corrections folded into the biases as `PrecomputeZeroPointTimesWeightWithBias` does.
//! TFLite reads the hidden state's scale from the op's fifth intermediate tensor, which nnrt's
//! IR does not carry; without projection the converter gives it the output state's
//! quantization, which is what is used here (models with projection are refused).

use nnrt_core::infer::lstm_dims;
use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, OpId, OpKind, OperandId, Quantization};

use super::util::{check_act, first_input_quantized, source, QuantIo};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::lstm::{lstm_step, LstmAct, LstmConfig, LstmScratch, LstmWeights};
use crate::quant::fixedpoint::quantize_multiplier;
use crate::quant::lstm::{Gate, IntegerLstm};

const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
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

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
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

fn scale_zp(ctx: &CompileCtx, id: OperandId) -> Result<(f32, i32), String> {
    match &ctx.graph.operand(id).quant {
        Quantization::PerTensor { scale, zero_point } => Ok((*scale, *zero_point as i32)),
        _ => Err(format!("operand {id} needs per-tensor quantization")),
    }
}

/// Whether the integer LSTM handles `op`.
fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
    let OpKind::UnidirectionalSequenceLstm(p) = &op.kind else {
        return Err("not an LSTM".into());
    };
    let x = op.input(0).ok_or("input 0 is absent")?;
    if ctx.graph.operand(x).dtype != DType::I8 {
        return Err("the integer LSTM needs int8 input (8x8_16)".into());
    }
    for i in [9, 10, 11, 16, 17, 20, 21, 22, 23] {
        if op.input(i).is_some() {
            return Err(format!("integer LSTM with input {i} (peephole, projection or layer norm) is not supported"));
        }
    }
    if p.time_major {
        return Err("time-major integer LSTM is not supported".into());
    }
    for i in [2, 3, 4, 6, 7, 8, 12, 13, 14] {
        let o = op.input(i).ok_or(format!("input {i} is required"))?;
        if !ctx.graph.operand(o).is_const() {
            return Err(format!("input {i} must be constant"));
        }
    }
    op.input(18).ok_or("the output state (input 18) is required")?;
    op.input(19).ok_or("the cell state (input 19) is required")?;
    Ok(())
}

fn weights(ctx: &CompileCtx, id: OperandId) -> Result<Vec<i8>, String> {
    let o = ctx.graph.operand(id);
    if o.dtype != DType::I8 {
        return Err(format!("weights {id} must be int8"));
    }
    Ok(o.data.as_ref().ok_or("weights must be constant")?.bytes().iter().map(|&b| b as i8).collect())
}

fn bias(ctx: &CompileCtx, id: Option<OperandId>, n: usize) -> Result<Vec<i32>, String> {
    match id {
        None => Ok(vec![0; n]),
        Some(b) => {
            let o = ctx.graph.operand(b);
            let d = o.data.as_ref().ok_or("bias must be constant")?.bytes();
            Ok(d.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        }
    }
}

/// Builds the kernel.
fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports_quantized(ctx, id)?;
    let op = ctx.graph.op(id);
    let OpKind::UnidirectionalSequenceLstm(p) = &op.kind else {
        return Err("not an LSTM".into());
    };
    let inp = |i: usize| op.input(i).ok_or(format!("input {i} is absent"));
    let x = inp(0)?;
    let xd = ctx.dims(x).to_vec();
    let (batch, time, n_input) = (xd[0], xd[1], xd[2]);
    let n_cell = ctx.dims(inp(2)?)[0];
    let n_output = ctx.dims(inp(6)?)[1];
    let (in_scale, in_zp) = scale_zp(ctx, x)?;
    let (os_scale, os_zp) = scale_zp(ctx, inp(18)?)?;
    let (cs_scale, _) = scale_zp(ctx, inp(19)?)?;
    let cell_scale = (cs_scale.ln() * (1.0f32 / 2f32.ln())).round() as i32;
    let (hidden_scale, hidden_zp) = (os_scale, os_zp);
    let intermediate = 2f64.powi(-12);
    let gate = |wi: usize, wr: usize, b: usize| -> Result<Gate, String> {
        let (w_in, w_rec) = (weights(ctx, inp(wi)?)?, weights(ctx, inp(wr)?)?);
        let (wi_s, _) = scale_zp(ctx, inp(wi)?)?;
        let (wr_s, _) = scale_zp(ctx, inp(wr)?)?;
        // float * float / double, stored back into a float, as TFLite's Prepare does.
        let e_in = ((wi_s * in_scale) as f64 / intermediate) as f32;
        let e_rec = ((wr_s * os_scale) as f64 / intermediate) as f32;
        let mut bias_in = bias(ctx, op.input(b), n_cell)?;
        let mut bias_rec = vec![0i32; n_cell];
        for r in 0..n_cell {
            let s_in: i32 = w_in[r * n_input..(r + 1) * n_input].iter().map(|&v| v as i32).sum();
            let s_rec: i32 = w_rec[r * n_output..(r + 1) * n_output].iter().map(|&v| v as i32).sum();
            bias_in[r] = bias_in[r].wrapping_add(s_in.wrapping_mul(-in_zp));
            bias_rec[r] = s_rec.wrapping_mul(-os_zp);
        }
        Ok(Gate {
            w_in,
            w_rec,
            bias_in,
            bias_rec,
            m_in: quantize_multiplier(e_in as f64),
            m_rec: quantize_multiplier(e_rec as f64),
        })
    };
    let input_gate = if op.input(1).is_some() { Some(gate(1, 5, 12)?) } else { None };
    let effective_hidden = (2f64.powi(-15) / hidden_scale as f64 * 2f64.powi(-15)) as f32;
    let cell_clip = if p.cell_clip > 0.0 {
        (p.cell_clip / cs_scale).clamp(-32768.0, 32767.0) as i16
    } else {
        0
    };
    let lstm = IntegerLstm {
        input: input_gate,
        forget: gate(2, 6, 13)?,
        cell: gate(3, 7, 14)?,
        output: gate(4, 8, 15)?,
        cell_scale,
        hidden: quantize_multiplier(effective_hidden as f64),
        hidden_zp,
        cell_clip,
        n_input,
        n_cell,
        n_output,
        output_state_zp: os_zp,
    };
    // The output state (input 18, int8) and cell state (input 19, int16): variable tensors stay
    // in the arena and carry the last step's values into the next run, as TFLite's do; other
    // state inputs are read afresh each run.
    let mut inputs = vec![source(ctx, x)];
    let mut state = Vec::new();
    let mut is_var = [false; 2];
    for (k, i) in [18, 19].into_iter().enumerate() {
        let o = op.input(i).ok_or(format!("the LSTM state (input {i}) is required"))?;
        let operand = ctx.graph.operand(o);
        let want = if k == 0 { DType::I8 } else { DType::I16 };
        if operand.dtype != want {
            return Err(format!("the LSTM state {o} (input {i}) must be {want}, got {}", operand.dtype));
        }
        if operand.is_variable && !operand.is_const() {
            is_var[k] = true;
            state.push(o);
        } else {
            inputs.push(source(ctx, o));
        }
    }
    let out_zp = os_zp as i8;
    // TFLite resets an int8 variable tensor to its zero point; the arena starts at zero.
    let mut fresh = true;
    let (mut h_local, mut c_local) = (Vec::new(), Vec::new());
    let mut b = built(inputs, move |ins, outs| {
        let input = cast::<i8>(ins[0].bytes)?;
        let (out, rest) = outs.split_first_mut().ok_or("the LSTM output is missing")?;
        let out = cast_mut::<i8>(out.bytes)?;
        let mut rest = rest.iter_mut();
        let mut given = ins[1..].iter();
        let h: &mut [i8] = if is_var[0] {
            cast_mut::<i8>(rest.next().ok_or("the output state is missing")?.bytes)?
        } else {
            h_local.clear();
            h_local.extend_from_slice(cast::<i8>(given.next().ok_or("the output state is missing")?.bytes)?);
            &mut h_local
        };
        let c: &mut [i16] = if is_var[1] {
            cast_mut::<i16>(rest.next().ok_or("the cell state is missing")?.bytes)?
        } else {
            c_local.clear();
            c_local.extend_from_slice(cast::<i16>(given.next().ok_or("the cell state is missing")?.bytes)?);
            &mut c_local
        };
        if h.len() != batch * n_output || c.len() != batch * n_cell {
            return Err(format!("LSTM states hold {} and {} values; expected {} and {}", h.len(), c.len(), batch * n_output, batch * n_cell));
        }
        if fresh && is_var[0] {
            h.fill(out_zp);
        }
        fresh = false;
        for b in 0..batch {
            lstm.run_sequence_from(
                &input[b * time * n_input..(b + 1) * time * n_input],
                time,
                &mut out[b * time * n_output..(b + 1) * time * n_output],
                &mut h[b * n_output..(b + 1) * n_output],
                &mut c[b * n_cell..(b + 1) * n_cell],
            );
        }
        Ok(())
    });
    b.state = state;
    Ok(b)
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["UnidirectionalSequenceLstm"], supports, build, (first_input_quantized, supports_quantized, build_quantized));
}
