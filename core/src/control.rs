//! Control flow: IF and WHILE call other subgraphs of the model. Each called subgraph is
//! prepared once (its own kernels and arena); at run time tensors are passed by value: inputs are
//! copied into the callee's arena and its outputs copied back, as TFLite's spec requires.

use std::sync::Arc;

use crate::shape::fmt_dims;
use crate::{infer_graph_with, Backend, CompileError, InputSource, Model, OpId, OpIo, OpKind, RunError, SubgraphId, TensorArena};

/// How deep IF/WHILE may nest (a subgraph calling itself would otherwise recurse forever).
pub const MAX_DEPTH: usize = 16;

fn depth_error(op: OpId, kind: &str) -> CompileError {
    CompileError::InvalidOp { op, kind: kind.into(), reason: format!("control flow nests deeper than {MAX_DEPTH} subgraphs (a subgraph that calls itself?)") }
}

/// Infers every operand's dims of subgraph `sub`, following IF/WHILE into the subgraphs they call
/// and asking `backends` ([`Backend::output_shapes`]) for the outputs of custom ops.
pub fn infer_model(
    model: &Model,
    sub: SubgraphId,
    input_dims: &[Vec<usize>],
    depth: usize,
    backends: &[Box<dyn Backend>],
) -> Result<Vec<Vec<usize>>, CompileError> {
    let g = model.subgraph(sub).ok_or_else(|| CompileError::Config {
        key: "subgraph".into(),
        value: sub.to_string(),
        reason: format!("the model has {} subgraphs", model.subgraphs.len()),
    })?;
    infer_graph_with(g, input_dims, &mut |id, shapes| {
        let op = g.op(id);
        let dims_of = |from: usize| -> Result<Vec<Vec<usize>>, CompileError> {
            op.inputs[from..]
                .iter()
                .map(|i| {
                    i.and_then(|i| shapes[i.index()].clone()).ok_or_else(|| CompileError::InvalidOp {
                        op: id,
                        kind: op.kind.name().into(),
                        reason: "an input's shape is unknown".into(),
                    })
                })
                .collect()
        };
        let outputs_of = |callee: SubgraphId, dims: &[Vec<usize>]| -> Result<Vec<Vec<usize>>, CompileError> {
            if depth >= MAX_DEPTH {
                return Err(depth_error(id, op.kind.name()));
            }
            let inner = infer_model(model, callee, dims, depth + 1, backends)?;
            let cg = model.subgraph(callee).expect("validated");
            Ok(cg.outputs.iter().map(|o| inner[o.index()].clone()).collect())
        };
        match &op.kind {
            OpKind::If { then_branch, else_branch } => Some((|| {
                let dims = dims_of(1)?;
                let then_out = outputs_of(*then_branch, &dims)?;
                let else_out = outputs_of(*else_branch, &dims)?;
                if then_out != else_out {
                    return Err(CompileError::InvalidOp {
                        op: id,
                        kind: "If".into(),
                        reason: format!("branches give different output shapes ({then_out:?} vs {else_out:?}); shapes that depend on the condition are not supported yet"),
                    });
                }
                Ok(then_out)
            })()),
            OpKind::While { body, .. } => Some((|| {
                let dims = dims_of(0)?;
                let out = outputs_of(*body, &dims)?;
                if out != dims {
                    let show: Vec<String> = out.iter().map(|d| fmt_dims(d)).collect();
                    return Err(CompileError::InvalidOp {
                        op: id,
                        kind: "While".into(),
                        reason: format!("the body changes loop-carried shapes (to {}); loops whose shapes change are not supported yet", show.join(", ")),
                    });
                }
                Ok(out)
            })()),
            OpKind::Custom { .. } => backends.iter().find_map(|b| b.output_shapes(g, id, shapes)),
            _ => None,
        }
    })
}

/// One IF or WHILE op, with the subgraphs it calls prepared.
pub(crate) enum ControlStep {
    If { io: OpIo, then_branch: Box<crate::Prepared>, else_branch: Box<crate::Prepared> },
    While { io: OpIo, cond: Box<crate::Prepared>, body: Box<crate::Prepared>, state: Vec<Vec<u8>> },
}

/// Prepares the subgraphs op `id` calls, for the dims its inputs have.
pub(crate) fn prepare_step(
    model: &Model,
    g: &crate::Subgraph,
    id: OpId,
    dims: &[Vec<usize>],
    env: &crate::prepared::Env<'_>,
    depth: usize,
) -> Result<ControlStep, CompileError> {
    let op = g.op(id);
    if depth >= MAX_DEPTH {
        return Err(depth_error(id, op.kind.name()));
    }
    let inputs: Vec<InputSource> = op.inputs.iter().flatten().map(|&i| InputSource::of(g, &dims[i.index()], i)).collect();
    let io = OpIo::new(id, inputs, op.outputs.clone());
    let in_dims = |from: usize| -> Vec<Vec<usize>> { op.inputs[from..].iter().flatten().map(|i| dims[i.index()].clone()).collect() };
    let sub = |s: SubgraphId, d: &[Vec<usize>]| crate::Prepared::build(model, s, d, env, depth + 1).map(Box::new);
    match &op.kind {
        OpKind::If { then_branch, else_branch } => {
            let d = in_dims(1);
            Ok(ControlStep::If { io, then_branch: sub(*then_branch, &d)?, else_branch: sub(*else_branch, &d)? })
        }
        OpKind::While { cond, body } => {
            let d = in_dims(0);
            Ok(ControlStep::While { io, cond: sub(*cond, &d)?, body: sub(*body, &d)?, state: Vec::new() })
        }
        other => Err(CompileError::InvalidOp { op: id, kind: other.name().into(), reason: "not a control-flow op".into() }),
    }
}

fn call(callee: &mut crate::Prepared, args: &[&[u8]], op: OpId, kind: &str) -> Result<(), RunError> {
    for (i, a) in args.iter().enumerate() {
        let dst = callee.input_mut(i)?;
        if dst.len() != a.len() {
            return Err(RunError::Kernel { op, kind: kind.into(), reason: format!("argument {i} has {} bytes, the subgraph expects {}", a.len(), dst.len()) });
        }
        dst.copy_from_slice(a);
    }
    callee.run_here()
}

impl ControlStep {
    /// Runs the op: copies its inputs into the callee(s), runs them, copies the results out.
    pub(crate) fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        match self {
            ControlStep::If { io, then_branch, else_branch } => {
                let (ins, mut outs) = io.views(arena)?;
                let cond = ins.first().and_then(|c| c.bytes.first()).copied().unwrap_or(0) != 0;
                let branch = if cond { then_branch } else { else_branch };
                let args: Vec<&[u8]> = ins[1..].iter().map(|t| t.bytes).collect();
                call(branch, &args, io.op, "If")?;
                for (k, o) in outs.iter_mut().enumerate() {
                    o.bytes.copy_from_slice(branch.output(k)?);
                }
                Ok(())
            }
            ControlStep::While { io, cond, body, state } => {
                let (ins, mut outs) = io.views(arena)?;
                state.resize(ins.len(), Vec::new());
                for (s, t) in state.iter_mut().zip(&ins) {
                    s.clear();
                    s.extend_from_slice(t.bytes);
                }
                loop {
                    let args: Vec<&[u8]> = state.iter().map(Vec::as_slice).collect();
                    call(cond, &args, io.op, "While")?;
                    if cond.output(0)?.first().copied().unwrap_or(0) == 0 {
                        break;
                    }
                    call(body, &args, io.op, "While")?;
                    for (k, s) in state.iter_mut().enumerate() {
                        s.copy_from_slice(body.output(k)?);
                    }
                }
                for (o, s) in outs.iter_mut().zip(state.iter()) {
                    o.bytes.copy_from_slice(s);
                }
                Ok(())
            }
        }
    }
}

/// Keeps the pool alive for callees sharing the caller's threads.
pub(crate) type SharedPool = Arc<crate::pool::JoinedPool>;
