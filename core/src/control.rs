//! Control flow: IF and WHILE call other subgraphs of the model. Each called subgraph is
//! prepared once per input shape (its own kernels and arena; see [`crate::callee`]): at prepare
//! when the op's input shapes are static, else at run time for each shape met. Tensors are passed
//! by value: inputs are copied into the callee's arena and its outputs copied back, as TFLite's
//! spec requires.

use std::sync::Arc;

use crate::callee::Callee;
use crate::ops::control::{BRANCH_INPUTS, CONDITION, LOOP_VARS};
use crate::prepared::Env;
use crate::shape::fmt_dims;
use crate::{infer_graph_with, Backend, CompileError, Inferred, InputSource, Model, OpId, OpIo, OperandId, OpKind, RunError, SubgraphId, TensorArena};

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
                let dims = dims_of(BRANCH_INPUTS)?;
                let then_out = outputs_of(*then_branch, &dims)?;
                let else_out = outputs_of(*else_branch, &dims)?;
                // Where the branches disagree, the output's shape depends on the condition.
                Ok(then_out.into_iter().zip(else_out).map(|(t, e)| if t == e { t } else { None }).collect())
            })()),
            OpKind::While { body, .. } => Some((|| {
                let dims = dims_of(LOOP_VARS)?;
                let out = outputs_of(*body, &dims)?;
                // A body that changes a carried shape makes every output dynamic: the loop then
                // prepares its subgraphs for each carried shape it meets. A body output known only
                // at run time is checked against the carried shape when the loop runs.
                if out.iter().zip(&dims).any(|(o, d)| o.as_ref().is_some_and(|o| o != d)) {
                    return Ok(vec![None; dims.len()]);
                }
                Ok(dims.into_iter().map(Some).collect())
            })()),
            OpKind::Custom { .. } => backends.iter().find_map(|b| b.output_shapes(g, id, shapes)).map(|r| r.map(|v| v.into_iter().map(Some).collect())),
            _ => None,
        }
    })
}

/// Checks that the subgraphs control-flow op `op` (index `id`) calls take and give what the op
/// passes and expects: as many inputs and outputs, of the same types (WHILE: the condition takes
/// the carried tensors and gives one bool, the body takes and gives the carried tensors). Called
/// when the model is validated, so a mismatch is a typed error at prepare, never a run-time
/// surprise. Other ops pass.
pub(crate) fn check_signature(model: &Model, g: &crate::Subgraph, id: OpId, op: &crate::Operation) -> Result<(), CompileError> {
    let fail = |reason: String| CompileError::InvalidOp { op: id, kind: op.kind.name().into(), reason };
    // An operand for messages: `%3 'name' int32`.
    let show = |sg: &crate::Subgraph, i: OperandId| format!("{i} '{}' {}", sg.operand(i).name, sg.operand(i).dtype);
    let op_ins = |from: usize| -> Vec<OperandId> { op.inputs.iter().skip(from).flatten().copied().collect() };
    let dtypes = |sg: &crate::Subgraph, ids: &[OperandId]| -> Vec<crate::DType> { ids.iter().map(|&i| sg.operand(i).dtype).collect() };
    // The subgraph's inputs must have the types of the op's operands `ins`; its outputs those of
    // `outs`, or (`Err`) the one type given.
    let check = |role: &str, sub: SubgraphId, ins: &[OperandId], outs: Result<&[OperandId], crate::DType>| -> Result<(), CompileError> {
        let sg = model.subgraph(sub).ok_or_else(|| fail(format!("names subgraph {sub}, but the model has {}", model.subgraphs.len())))?;
        for (what, want, got) in [("input", Ok(ins), &sg.inputs), ("output", outs, &sg.outputs)] {
            let want_types = match want {
                Ok(ids) => dtypes(g, ids),
                Err(t) => vec![t],
            };
            if want_types.len() != got.len() {
                let verb = if what == "input" { "passes" } else { "expects" };
                return Err(fail(format!("the {role} subgraph {sub} has {} {what}s, the op {verb} {}", got.len(), want_types.len())));
            }
            if let Some(k) = (0..got.len()).find(|&k| want_types[k] != sg.operand(got[k]).dtype) {
                let theirs = match want {
                    Ok(ids) => format!("the op's {}", show(g, ids[k])),
                    Err(t) => format!("it must be {t}"),
                };
                return Err(fail(format!("{what} {k} of the {role} subgraph {sub} is {}, {theirs}", show(sg, got[k]))));
            }
        }
        Ok(())
    };
    match &op.kind {
        OpKind::If { then_branch, else_branch } => {
            let ins = op_ins(BRANCH_INPUTS);
            check("then", *then_branch, &ins, Ok(&op.outputs))?;
            check("else", *else_branch, &ins, Ok(&op.outputs))
        }
        OpKind::While { cond, body } => {
            let op_ins = op_ins(LOOP_VARS);
            if op_ins.len() != op.outputs.len() {
                return Err(fail(format!("it has {} loop-carried inputs but {} outputs", op_ins.len(), op.outputs.len())));
            }
            if let Some(k) = (0..op_ins.len()).find(|&k| g.operand(op_ins[k]).dtype != g.operand(op.outputs[k]).dtype) {
                return Err(fail(format!("output {k} {} is not of its loop-carried input's type ({})", show(g, op.outputs[k]), show(g, op_ins[k]))));
            }
            check("condition", *cond, &op_ins, Err(crate::DType::Bool))?;
            check("body", *body, &op_ins, Ok(&op_ins))
        }
        _ => Ok(()),
    }
}

/// One IF or WHILE op, with the subgraphs it calls.
pub(crate) enum ControlStep {
    If {
        io: OpIo,
        then_branch: Callee,
        else_branch: Callee,
        /// Some input is dynamic: branches are looked up by the input shapes of each run.
        by_shape: bool,
        /// `dynamic[k]`: output k's shape depends on the branch taken or on run-time values, and
        /// is set from the branch's output at each run.
        dynamic: Vec<bool>,
    },
    While {
        io: OpIo,
        cond: Callee,
        body: Callee,
        state: Vec<Vec<u8>>,
        /// Static loops: `cond_reads[k]`, the condition reads loop variable k (the others are not
        /// copied into it); `through[k]`, the body passes variable k on unchanged (copied into
        /// the body once per run, never back).
        cond_reads: Vec<bool>,
        through: Vec<bool>,
        /// `check[k]`: the body's output k is known only at run time and is checked against the
        /// carried shape after each iteration (loops whose carried shapes are static).
        check: Vec<bool>,
        /// The most iterations per call (`WHILE_MAX_ITERATIONS`).
        limit: u64,
        cancel: crate::CancelToken,
        /// The carried shapes may change (dynamic inputs, or a body that changes them): cond and
        /// body are looked up by the carried shapes of each iteration, and the outputs sized at
        /// the end.
        by_shape: bool,
        shapes: Vec<Vec<usize>>,
    },
}

/// Prepares the subgraphs op `id` calls, for the dims its inputs have; `dynamic` marks the
/// operands of `g` whose shapes are known only at run time.
pub(crate) fn prepare_step(
    g: &crate::Subgraph,
    id: OpId,
    dims: &[Vec<usize>],
    dynamic: &[bool],
    env: &Env<'_>,
    depth: usize,
) -> Result<ControlStep, CompileError> {
    let op = g.op(id);
    if depth >= MAX_DEPTH {
        return Err(depth_error(id, op.kind.name()));
    }
    let inputs: Vec<InputSource> = op.inputs.iter().flatten().map(|&i| InputSource::of(g, &dims[i.index()], i)).collect();
    let io = OpIo::new(id, inputs, op.outputs.clone());
    let in_dims = |from: usize| -> Vec<Vec<usize>> { op.inputs[from..].iter().flatten().map(|i| dims[i.index()].clone()).collect() };
    let in_dynamic = |from: usize| op.inputs[from..].iter().flatten().any(|i| dynamic[i.index()]);
    let out_dynamic: Vec<bool> = op.outputs.iter().map(|o| dynamic[o.index()]).collect();
    match &op.kind {
        OpKind::If { then_branch, else_branch } => {
            let by_shape = in_dynamic(BRANCH_INPUTS);
            let d = in_dims(BRANCH_INPUTS);
            let d = (!by_shape).then_some(d.as_slice());
            let then_branch = Callee::new(*then_branch, d, by_shape, env, depth + 1)?;
            let else_branch = Callee::new(*else_branch, d, by_shape, env, depth + 1)?;
            Ok(ControlStep::If { io, then_branch, else_branch, by_shape, dynamic: out_dynamic })
        }
        OpKind::While { cond, body } => {
            // Outputs are dynamic exactly when the carried shapes may change.
            let by_shape = out_dynamic.iter().any(|&d| d);
            let d = in_dims(LOOP_VARS);
            let d = (!in_dynamic(LOOP_VARS)).then_some(d.as_slice());
            let mut body = Callee::new(*body, d, by_shape, env, depth + 1)?;
            let mut cond = Callee::new(*cond, d, by_shape, env, depth + 1)?;
            let check = (0..op.outputs.len()).map(|k| !by_shape && body.output_is_dynamic(k)).collect();
            let n = op.outputs.len();
            let (cond_reads, through) = match (by_shape, cond.fixed(id, "While"), body.fixed(id, "While")) {
                (false, Ok(c), Ok(b)) => (c.inputs_read(), b.passes_through()),
                _ => (vec![true; n], vec![false; n]),
            };
            let limit = env.config.while_max_iterations().map_err(|reason| CompileError::Config {
                key: "WHILE_MAX_ITERATIONS".into(),
                value: env.config.get("WHILE_MAX_ITERATIONS").unwrap_or_default().into(),
                reason,
            })?;
            let cancel = env.cancel.clone();
            Ok(ControlStep::While { io, cond, body, state: Vec::new(), cond_reads, through, check, limit, cancel, by_shape, shapes: Vec::new() })
        }
        other => Err(CompileError::InvalidOp { op: id, kind: other.name().into(), reason: "not a control-flow op".into() }),
    }
}

fn call(callee: &mut crate::Prepared, args: &[&[u8]], op: OpId, kind: &str) -> Result<(), RunError> {
    for (i, a) in args.iter().enumerate() {
        set_input(callee, i, a, op, kind)?;
    }
    callee.run_here()
}

/// Copies `a` into input `i` of `callee` (called by op `op` of `kind`), which must have its size.
fn set_input(callee: &mut crate::Prepared, i: usize, a: &[u8], op: OpId, kind: &str) -> Result<(), RunError> {
    let dst = callee.input_mut(i)?;
    if dst.len() != a.len() {
        return Err(RunError::Kernel { op, kind: kind.into(), reason: format!("argument {i} has {} bytes, the subgraph expects {}", a.len(), dst.len()) });
    }
    dst.copy_from_slice(a);
    Ok(())
}

impl ControlStep {
    /// Runs the op: copies its inputs into the callee(s), runs them, copies the results out.
    pub(crate) fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        match self {
            ControlStep::If { io, then_branch, else_branch, by_shape, dynamic } => {
                let (ins, mut outs) = io.views(arena)?;
                let cond = ins.get(CONDITION).and_then(|c| c.bytes.first()).copied().unwrap_or(0) != 0;
                let callee = if cond { then_branch } else { else_branch };
                let branch = match by_shape {
                    true => callee.for_dims(&ins[BRANCH_INPUTS..].iter().map(|t| t.dims).collect::<Vec<_>>(), io.op, "If")?,
                    false => callee.fixed(io.op, "If")?,
                };
                let args: Vec<&[u8]> = ins[BRANCH_INPUTS..].iter().map(|t| t.bytes).collect();
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
            ControlStep::While { io, cond, body, state, cond_reads, through, check, limit, cancel, by_shape: false, .. } => {
                let (ins, mut outs) = io.views(arena)?;
                let (cond, body) = (cond.fixed(io.op, "While")?, body.fixed(io.op, "While")?);
                state.resize(ins.len(), Vec::new());
                for (s, t) in state.iter_mut().zip(&ins) {
                    s.clear();
                    s.extend_from_slice(t.bytes);
                }
                let reads = |k: usize| cond_reads.get(k).copied().unwrap_or(true);
                let passed = |k: usize| through.get(k).copied().unwrap_or(false);
                for n in 0.. {
                    next_iteration(io.op, n, *limit, cancel)?;
                    for (k, s) in state.iter().enumerate() {
                        if reads(k) {
                            set_input(cond, k, s, io.op, "While")?;
                        }
                    }
                    cond.run_here()?;
                    if cond.output(0)?.first().copied().unwrap_or(0) == 0 {
                        break;
                    }
                    // Pass-through variables stay in the body's inputs after the first iteration.
                    for (k, s) in state.iter().enumerate() {
                        if n == 0 || !passed(k) {
                            set_input(body, k, s, io.op, "While")?;
                        }
                    }
                    body.run_here()?;
                    for (k, s) in state.iter_mut().enumerate() {
                        if passed(k) {
                            continue;
                        }
                        let out = body.output(k)?;
                        if out.len() != s.len() || (check[k] && body.output_dims(k)? != ins[k].dims) {
                            return Err(RunError::Kernel {
                                op: io.op,
                                kind: "While".into(),
                                reason: format!(
                                    "the body changed loop-carried tensor {k} from {} to {}, which the loop's outputs were planned for",
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
            ControlStep::While { io, cond, body, state, shapes, limit, cancel, .. } => {
                {
                    let (ins, _) = io.views(arena)?;
                    state.resize(ins.len(), Vec::new());
                    shapes.resize(ins.len(), Vec::new());
                    for ((s, d), t) in state.iter_mut().zip(shapes.iter_mut()).zip(&ins) {
                        s.clear();
                        s.extend_from_slice(t.bytes);
                        d.clear();
                        d.extend_from_slice(t.dims);
                    }
                }
                for n in 0.. {
                    next_iteration(io.op, n, *limit, cancel)?;
                    let dims: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
                    let args: Vec<&[u8]> = state.iter().map(Vec::as_slice).collect();
                    let c = cond.for_dims(&dims, io.op, "While")?;
                    call(c, &args, io.op, "While")?;
                    if c.output(0)?.first().copied().unwrap_or(0) == 0 {
                        break;
                    }
                    let b = body.for_dims(&dims, io.op, "While")?;
                    call(b, &args, io.op, "While")?;
                    for (k, (s, d)) in state.iter_mut().zip(shapes.iter_mut()).enumerate() {
                        let out = b.output(k)?;
                        s.clear();
                        s.extend_from_slice(out);
                        d.clear();
                        d.extend_from_slice(b.output_dims(k)?);
                    }
                }
                for (k, &o) in io.outputs.iter().enumerate() {
                    if arena.is_dynamic(o) {
                        arena.resize(io.op, o, &shapes[k])?;
                    }
                }
                let (_, mut outs) = io.views(arena)?;
                for (k, (o, s)) in outs.iter_mut().zip(state.iter()).enumerate() {
                    if o.bytes.len() != s.len() {
                        return Err(RunError::Kernel {
                            op: io.op,
                            kind: "While".into(),
                            reason: format!("loop-carried tensor {k} ends as {}, its output was planned as {}", fmt_dims(&shapes[k]), fmt_dims(o.dims)),
                        });
                    }
                    o.bytes.copy_from_slice(s);
                }
                Ok(())
            }
        }
    }
}

/// Before WHILE op `op` starts iteration `n` (from 0): stops on a pending cancel, or when the
/// loop has run its `limit` of iterations.
fn next_iteration(op: OpId, n: u64, limit: u64, cancel: &crate::CancelToken) -> Result<(), RunError> {
    cancel.check(|| format!(" in op {op} (While) after {n} iterations"))?;
    if n >= limit {
        return Err(RunError::Kernel {
            op,
            kind: "While".into(),
            reason: format!("the loop ran {limit} iterations without its condition turning false (WHILE_MAX_ITERATIONS; 0 removes the limit)"),
        });
    }
    Ok(())
}

/// Keeps the pool alive for callees sharing the caller's threads.
pub(crate) type SharedPool = Arc<nnrt_threads::KernelPool>;
