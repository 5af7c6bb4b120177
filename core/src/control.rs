//! Control flow: IF and WHILE call other subgraphs of the model. Each called subgraph is
//! prepared once (its own kernels and arena); at run time tensors are passed by value: inputs are
//! copied into the callee's arena and its outputs copied back, as TFLite's spec requires.

use std::sync::Arc;

use crate::shape::fmt_dims;
use crate::{infer_graph_with, Backend, CompileError, Inferred, InputSource, Model, OpId, OpIo, OpKind, RunError, SubgraphId, TensorArena};

/// How deep IF/WHILE may nest (a subgraph calling itself would otherwise recurse forever).
pub const MAX_DEPTH: usize = 16;

fn depth_error(op: OpId, kind: &str) -> CompileError {
    CompileError::InvalidOp { op, kind: kind.into(), reason: format!("control flow nests deeper than {MAX_DEPTH} subgraphs (a subgraph that calls itself?)") }
}

/// Infers every operand's dims of subgraph `sub`, following IF/WHILE into the subgraphs they call
/// and asking `backends` ([`Backend::output_shapes`]) for the outputs of custom ops. Shapes that
/// depend on values computed at run time are marked dynamic.
pub fn infer_model(model: &Model, sub: SubgraphId, input_dims: &[Vec<usize>], depth: usize, backends: &[Box<dyn Backend>]) -> Result<Inferred, CompileError> {
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
        // The callee's output dims, `None` for those known only at run time.
        let outputs_of = |callee: SubgraphId, dims: &[Vec<usize>]| -> Result<Vec<Option<Vec<usize>>>, CompileError> {
            if depth >= MAX_DEPTH {
                return Err(depth_error(id, op.kind.name()));
            }
            let inner = infer_model(model, callee, dims, depth + 1, backends)?;
            let cg = model.subgraph(callee).expect("validated");
            Ok(cg.outputs.iter().map(|o| (!inner.dynamic[o.index()]).then(|| inner.dims[o.index()].clone())).collect())
        };
        match &op.kind {
            OpKind::If { then_branch, else_branch } => Some((|| {
                let dims = dims_of(1)?;
                let then_out = outputs_of(*then_branch, &dims)?;
                let else_out = outputs_of(*else_branch, &dims)?;
                // Where the branches disagree, the output's shape depends on the condition.
                Ok(then_out.into_iter().zip(else_out).map(|(t, e)| if t == e { t } else { None }).collect())
            })()),
            OpKind::While { body, .. } => Some((|| {
                let dims = dims_of(0)?;
                let out = outputs_of(*body, &dims)?;
                // A body output known only at run time is checked against the carried shape when
                // the loop runs.
                let changed: Vec<String> = out.iter().zip(&dims).filter_map(|(o, d)| o.as_ref().filter(|o| *o != d).map(|o| fmt_dims(o))).collect();
                if !changed.is_empty() {
                    return Err(CompileError::InvalidOp {
                        op: id,
                        kind: "While".into(),
                        reason: format!("the body changes loop-carried shapes (to {}); loops whose shapes change are not supported yet", changed.join(", ")),
                    });
                }
                Ok(dims.into_iter().map(Some).collect())
            })()),
            OpKind::Custom { .. } => backends.iter().find_map(|b| b.output_shapes(g, id, shapes)).map(|r| r.map(|v| v.into_iter().map(Some).collect())),
            _ => None,
        }
    })
}

/// One IF or WHILE op, with the subgraphs it calls prepared.
pub(crate) enum ControlStep {
    /// `dynamic[k]`: output k's shape depends on the branch taken or on run-time values, and is
    /// set from the branch's output at each run.
    If { io: OpIo, then_branch: Box<crate::Prepared>, else_branch: Box<crate::Prepared>, dynamic: Vec<bool> },
    /// `check[k]`: the body's output k is known only at run time and is checked against the
    /// carried shape after each iteration.
    While { io: OpIo, cond: Box<crate::Prepared>, body: Box<crate::Prepared>, state: Vec<Vec<u8>>, check: Vec<bool> },
}

/// Prepares the subgraphs op `id` calls, for the dims its inputs have; `dynamic` marks the
/// operands of `g` whose shapes are known only at run time.
pub(crate) fn prepare_step(
    model: &Model,
    g: &crate::Subgraph,
    id: OpId,
    dims: &[Vec<usize>],
    dynamic: &[bool],
    env: &crate::prepared::Env,
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
            let dynamic = op.outputs.iter().map(|o| dynamic[o.index()]).collect();
            Ok(ControlStep::If { io, then_branch: sub(*then_branch, &d)?, else_branch: sub(*else_branch, &d)?, dynamic })
        }
        OpKind::While { cond, body } => {
            let d = in_dims(0);
            let body = sub(*body, &d)?;
            let check = (0..op.outputs.len()).map(|k| body.output_is_dynamic(k)).collect();
            Ok(ControlStep::While { io, cond: sub(*cond, &d)?, body, state: Vec::new(), check })
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
            ControlStep::If { io, then_branch, else_branch, dynamic } => {
                let (ins, mut outs) = io.views(arena)?;
                let cond = ins.first().and_then(|c| c.bytes.first()).copied().unwrap_or(0) != 0;
                let branch = if cond { then_branch } else { else_branch };
                let args: Vec<&[u8]> = ins[1..].iter().map(|t| t.bytes).collect();
                call(branch, &args, io.op, "If")?;
                if dynamic.iter().any(|&d| d) {
                    // Outputs whose shape is the branch's: size them, then borrow them again.
                    drop((ins, outs));
                    for (k, &o) in io.outputs.iter().enumerate() {
                        if dynamic[k] {
                            arena.resize(io.op, o, branch.output_dims(k)?)?;
                        }
                    }
                    outs = io.views(arena)?.1;
                }
                for (k, o) in outs.iter_mut().enumerate() {
                    let src = branch.output(k)?;
                    if src.len() != o.bytes.len() {
                        return Err(RunError::Kernel {
                            op: io.op,
                            kind: "If".into(),
                            reason: format!("the branch's output {k} has shape {}, the op's output {}", fmt_dims(branch.output_dims(k)?), fmt_dims(o.dims)),
                        });
                    }
                    o.bytes.copy_from_slice(src);
                }
                Ok(())
            }
            ControlStep::While { io, cond, body, state, check } => {
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
                        let out = body.output(k)?;
                        if out.len() != s.len() || (check[k] && body.output_dims(k)? != ins[k].dims) {
                            return Err(RunError::Kernel {
                                op: io.op,
                                kind: "While".into(),
                                reason: format!(
                                    "the body changed loop-carried tensor {k} from {} to {}; loops whose shapes change are not supported yet",
                                    fmt_dims(ins[k].dims),
                                    fmt_dims(body.output_dims(k)?)
                                ),
                            });
                        }
                        s.copy_from_slice(out);
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
