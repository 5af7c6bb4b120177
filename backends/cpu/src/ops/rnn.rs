//! Builders of RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF (float32). Their state (input 4) is a
//! variable tensor updated in place between runs, like the LSTM's; a state that is not a
//! variable (a constant or a graph input) is copied and left unchanged.

use nnrt_core::infer::svdf_dims;
use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, OpId, OpKind};

use super::util::{check_act, fused, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::rnn::{rnn_step, svdf_step, CellAct, SvdfGeom};

const STATE: usize = 4;

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(o).dtype != DType::F32 {
            return Err(format!("operand {o} is {}; only float32 {} is implemented", ctx.graph.operand(o).dtype, op.kind.name()));
        }
    }
    Ok(())
}

fn cell_act(a: Activation) -> Result<CellAct, String> {
    check_act(a)?;
    let (clamp, tanh) = fused(a);
    Ok(CellAct { clamp, tanh })
}

/// Run-time inputs (every present input but a variable state) with each input's position
/// among them, and the state operand when it is a variable.
fn wire(ctx: &CompileCtx, id: OpId) -> (Vec<nnrt_core::InputSource>, [Option<usize>; 5], Vec<nnrt_core::OperandId>) {
    let op = ctx.graph.op(id);
    let (mut inputs, mut pos, mut state) = (Vec::new(), [None; 5], Vec::new());
    for (i, slot) in pos.iter_mut().enumerate() {
        let Some(o) = op.input(i) else { continue };
        let operand = ctx.graph.operand(o);
        if i == STATE && operand.is_variable && !operand.is_const() {
            state.push(o);
            continue;
        }
        *slot = Some(inputs.len());
        inputs.push(source(ctx, o));
    }
    (inputs, pos, state)
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let dims = |i: usize| op.input(i).map(|o| ctx.dims(o).to_vec());
    let (inputs, pos, state) = wire(ctx, id);
    let var = !state.is_empty();
    let mut local = Vec::new();
    let mut b = match &op.kind {
        OpKind::Rnn(p) | OpKind::SequenceRnn(p) => {
            let act = cell_act(p.act)?;
            let x = dims(0).ok_or("input 0 is absent")?;
            let units = dims(1).and_then(|w| w.first().copied()).ok_or("weights are absent")?;
            let (time, batch, input) = match (&op.kind, p.time_major) {
                (OpKind::Rnn(_), _) => (1, x[0], x[1]),
                (_, true) => (x[0], x[1], x[2]),
                (_, false) => (x[1], x[0], x[2]),
            };
            let time_major = p.time_major || matches!(op.kind, OpKind::Rnn(_));
            let (mut x_t, mut out_t) = (Vec::new(), vec![0f32; batch * units]);
            built(inputs, move |ins, outs| {
                let get = |i: usize| -> Result<&[f32], String> { cast::<f32>(ins[pos[i].ok_or_else(|| format!("input {i} is absent"))?].bytes) };
                let (x, w, r, bias) = (get(0)?, get(1)?, get(2)?, get(3)?);
                let (out, rest) = outs.split_first_mut().ok_or("the output is missing")?;
                let out = cast_mut::<f32>(out.bytes)?;
                if !var {
                    local.clear();
                    local.extend_from_slice(get(STATE)?);
                }
                let h: &mut [f32] = if var { cast_mut::<f32>(rest.first_mut().ok_or("the state is missing")?.bytes)? } else { &mut local };
                for t in 0..time {
                    if time_major {
                        let o = &mut out[t * batch * units..(t + 1) * batch * units];
                        rnn_step(&x[t * batch * input..(t + 1) * batch * input], w, r, bias, input, units, act, h, o);
                    } else {
                        x_t.clear();
                        for b in 0..batch {
                            x_t.extend_from_slice(&x[(b * time + t) * input..(b * time + t + 1) * input]);
                        }
                        rnn_step(&x_t, w, r, bias, input, units, act, h, &mut out_t);
                        for b in 0..batch {
                            out[(b * time + t) * units..(b * time + t + 1) * units].copy_from_slice(&out_t[b * units..(b + 1) * units]);
                        }
                    }
                }
                Ok(())
            })
        }
        OpKind::Svdf(p) => {
            let act = cell_act(p.act)?;
            let d = svdf_dims(&dims, p).map_err(|(_, r)| r)?;
            let g = SvdfGeom { batch: d.batch, input: d.input, filters: d.filters, rank: p.rank as usize, memory: d.memory };
            built(inputs, move |ins, outs| {
                let get = |i: usize| -> Result<Option<&[f32]>, String> { pos[i].map(|k| cast::<f32>(ins[k].bytes)).transpose() };
                let need = |i: usize| get(i)?.ok_or_else(|| format!("input {i} is absent"));
                let (x, wf, wt, bias) = (need(0)?, need(1)?, need(2)?, get(3)?);
                let (out, rest) = outs.split_first_mut().ok_or("the output is missing")?;
                if !var {
                    local.clear();
                    local.extend_from_slice(need(STATE)?);
                }
                let s: &mut [f32] = if var { cast_mut::<f32>(rest.first_mut().ok_or("the state is missing")?.bytes)? } else { &mut local };
                svdf_step(&g, x, wf, wt, bias, act, s, cast_mut::<f32>(out.bytes)?);
                Ok(())
            })
        }
        _ => return Err("not a recurrent op".into()),
    };
    b.state = state;
    Ok(b)
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Rnn", "UnidirectionalSequenceRnn", "Svdf"], supports, build);
}
