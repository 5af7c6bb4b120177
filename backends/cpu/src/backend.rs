//! The CPU backend: decides support per op, builds one kernel per op at compile (weights packed
//! there), and runs them in order over the arena.

use nnrt_core::{Backend, CompileCtx, CompileError, Executable, InputSource, OpId, OpIo, OpKind, OperandId, PlanHints, RunError, Subgraph, Support, TensorArena};

use crate::kernel::Kernel;
use crate::ops;

pub(crate) struct Step {
    kind: String,
    kernel: Box<dyn Kernel>,
    io: OpIo,
    /// What this step fused ahead of `io.op`.
    fused: Option<Fused>,
}

/// An op fused into the step of the op after it.
struct Fused {
    /// The ops before the step's own (their time is reported with the step's op).
    first: Vec<OpId>,
    /// Their inputs, which the step reads at the last op's turn.
    late: Vec<OperandId>,
    /// Their outputs, which the step never writes.
    mid: Vec<OperandId>,
}

/// nnrt's CPU backend (id `cpu`).
#[derive(Debug, Default)]
pub struct CpuBackend;

impl CpuBackend {
    /// Creates the backend; SIMD support is detected once per process on first use.
    pub fn new() -> CpuBackend {
        CpuBackend
    }
}

impl Backend for CpuBackend {
    fn id(&self) -> &str {
        "cpu"
    }

    fn supports(&self, ctx: &CompileCtx, op: OpId) -> Support {
        match ops::supports(ctx, op) {
            Ok(()) => Support::Yes,
            Err(why) => Support::No(why),
        }
    }

    fn output_shapes(&self, graph: &Subgraph, op: OpId, shapes: &[Option<Vec<usize>>]) -> Option<Result<Vec<Vec<usize>>, CompileError>> {
        let operation = graph.op(op);
        let OpKind::Custom { name, options } = &operation.kind else { return None };
        if !ops::is_builtin_custom(name) {
            return None;
        }
        let fail = |reason: String| CompileError::InvalidOp { op, kind: name.clone(), reason };
        let mut ins = Vec::new();
        for (k, &i) in operation.inputs.iter().flatten().enumerate() {
            match shapes.get(i.index()).and_then(|s| s.as_deref()) {
                Some(d) => ins.push(d),
                None => return Some(Err(fail(format!("the shape of input {k} is not known when this op runs")))),
            }
        }
        Some(ops::custom_output_dims(name, options, &ins).map_err(fail))
    }

    fn compile(&self, ctx: &CompileCtx, ids: &[OpId]) -> Result<Box<dyn Executable>, CompileError> {
        Ok(Box::new(CpuExecutable { steps: compile_steps(ctx, ids)?, times: None }))
    }
}

/// The kinds of the steps the backend compiles for every op of `g` on `threads` threads (tests
/// check which fusions are taken).
#[cfg(test)]
pub(crate) fn step_kinds_of(g: &nnrt_core::Subgraph, threads: usize) -> Vec<String> {
    let shapes: Vec<Vec<usize>> = g.operands.iter().map(|o| o.shape.concrete().unwrap_or_default()).collect();
    let config = nnrt_core::Config::default();
    let ids: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
    let ctx = CompileCtx { graph: g, shapes: &shapes, threads, config: &config, origin: &ids };
    let steps = compile_steps(&ctx, &ids).expect("the graph compiles");
    steps.iter().map(|s| s.kind().to_string()).collect()
}

/// The steps of the ops `ids` in order: one kernel per op, or one per run of ops the backend
/// fuses. Ahead-of-time artifacts build theirs here too (`crate::aot`), so their fusions are the
/// runtime's.
pub(crate) fn compile_steps(ctx: &CompileCtx, ids: &[OpId]) -> Result<Vec<Step>, CompileError> {
    {
        let mut steps = Vec::with_capacity(ids.len());
        let fuse = !ops::fusion_off("reshape");
        let mut k = 0;
        while k < ids.len() {
            if let Some(chain) = ops::fuse_int_chain(ctx, &ids[k..]) {
                k += chain.ops.len();
                steps.push(int_chain_step(chain));
                continue;
            }
            // A RESHAPE whose output the next step alone reads is never run: that step reads
            // the RESHAPE's input under the reshaped dims.
            let lead = ids.get(k + 1).filter(|_| fuse).and_then(|&next| reshape_into(ctx, ids[k], next));
            let start = k + usize::from(lead.is_some());
            let (mut built, n) = step_kernel(ctx, &ids[start..])?;
            let mut before: Vec<OpId> = ids[start..start + n - 1].to_vec();
            let mut last = ids[start + n - 1];
            k = start + n;
            let mut in_dims = Vec::new();
            if let Some((r, a, b)) = lead {
                match reads_once(&built, b) {
                    Some(pos) => {
                        built.inputs[pos] = InputSource::Arena(a);
                        in_dims.push((pos, ctx.dims(b).to_vec()));
                        before.insert(0, r);
                    }
                    // The step does not read the RESHAPE's output from the arena: run it.
                    None => steps.push(plain_step(ctx, r, step_kernel(ctx, &[r])?.0)),
                }
            }
            // A RESHAPE that alone reads the step's one output: the step writes the RESHAPE's
            // output under its own dims.
            let mut out_dims = Vec::new();
            if let Some(&r) = ids.get(k).filter(|_| fuse) {
                if let Some(c) = reshape_from(ctx, last, r, &built) {
                    out_dims.push((0, ctx.dims(c).to_vec()));
                    before.push(last);
                    last = r;
                    k += 1;
                }
            }
            let step = if before.is_empty() { plain_step(ctx, last, built) } else { fused_step(ctx, &before, last, built) };
            steps.push(Step { io: step.io.with_dims(in_dims, out_dims), ..step });
        }
        Ok(steps)
    }
}

impl Step {
    /// The ops this step runs, in order (the fused ones first).
    pub(crate) fn ops(&self) -> Vec<OpId> {
        self.fused.iter().flat_map(|f| f.first.iter().copied()).chain([self.io.op]).collect()
    }

    /// The op names, `+`-joined for a fused step.
    pub(crate) fn kind(&self) -> &str {
        &self.kind
    }

    /// Runs the step over `arena`.
    pub(crate) fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        let (mut ins, mut outs) = (nnrt_core::InputViews::new(), nnrt_core::OutputViews::new());
        self.io.views_into(arena, &mut ins, &mut outs)?;
        self.kernel.run(&ins, &mut outs).map_err(|reason| RunError::Kernel { op: self.io.op, kind: self.kind.clone(), reason })
    }

    /// What the memory plan must know of this step (see [`Executable::plan_hints`]).
    pub(crate) fn add_hints(&self, h: &mut PlanHints) {
        if let Some(f) = &self.fused {
            h.keep_alive.extend(f.late.iter().map(|&o| (o, self.io.op)));
            h.elided.extend(f.mid.iter().copied());
        }
    }
}

/// The kernel of the step that starts at `ids[0]` and how many ops of `ids` it covers: a fused
/// TOSA convolution chain (`ops::fuse_rescale_chain`), a float convolution with SiLU or
/// HARD_SWISH in its epilogue (`ops::fuse_conv_act`), a whole inverted-residual block
/// (`ops::fuse_block`), a convolution + channel-padded shortcut ADD (`ops::fuse_padded_residual`),
/// a fused pair (`ops::fuse_pair`), or the op alone.
fn step_kernel(ctx: &CompileCtx, ids: &[OpId]) -> Result<(crate::kernel::Built, usize), CompileError> {
    let id = ids[0];
    let fused = ops::fuse_rescale_chain(ctx, ids)
        .or_else(|| ops::fuse_conv_act(ctx, ids))
        .or_else(|| ops::fuse_block(ctx, ids))
        .or_else(|| ops::fuse_padded_residual(ctx, ids))
        .or_else(|| ids.get(1).and_then(|&next| ops::fuse_pair(ctx, id, next)).map(|b| (b, 2)));
    if let Some(f) = fused {
        return Ok(f);
    }
    let kind = ctx.graph.op(id).kind.name().to_string();
    let built = ops::build(ctx, id).map_err(|reason| CompileError::InvalidOp { op: id, kind, reason })?;
    Ok((built, 1))
}

/// The step of a run of integer element-wise ops (`ops::fuse_int_chain`), timed and planned
/// at its last op.
fn int_chain_step(c: ops::IntChain) -> Step {
    let (last, first) = match c.ops.split_last() {
        Some((&l, f)) => (l, f.to_vec()),
        None => (OpId::new(0), Vec::new()),
    };
    let late = c.inputs.iter().filter_map(|s| if let InputSource::Arena(i) = s { Some(*i) } else { None }).collect();
    let form = match c.form {
        ops::IntChainForm::Lanes => "",
        ops::IntChainForm::Narrow => ", narrow",
        ops::IntChainForm::Quantize => ", lowered QUANTIZE",
        ops::IntChainForm::Tables => ", tables",
    };
    let kind = format!("IntChain({} ops{form})", c.ops.len());
    Step { kind, kernel: c.kernel, io: OpIo::new(last, c.inputs, c.outputs), fused: Some(Fused { first, late, mid: c.elided }) }
}

/// The step of one op's kernel.
fn plain_step(ctx: &CompileCtx, id: OpId, built: crate::kernel::Built) -> Step {
    let op = ctx.graph.op(id);
    let outputs = op.outputs.iter().chain(&built.state).copied().collect();
    Step { kind: op.kind.name().to_string(), kernel: built.kernel, io: OpIo::new(id, built.inputs, outputs), fused: None }
}

/// Whether `t` is read by `next` alone, once, and is neither a graph output nor a variable.
fn read_once_by(ctx: &CompileCtx, t: OperandId, next: OpId) -> bool {
    let g = ctx.graph;
    let reads = g.ops.iter().flat_map(|o| o.inputs.iter().flatten()).filter(|&&i| i == t).count();
    let next_reads = g.op(next).inputs.iter().flatten().filter(|&&i| i == t).count();
    reads == 1 && next_reads == 1 && !g.outputs.contains(&t) && !g.operand(t).is_variable
}

/// Where the step reads `b` from the arena, if it does so exactly once.
fn reads_once(built: &crate::kernel::Built, b: OperandId) -> Option<usize> {
    let mut at = built.inputs.iter().enumerate().filter(|(_, s)| matches!(s, InputSource::Arena(i) if *i == b)).map(|(k, _)| k);
    match (at.next(), at.next()) {
        (Some(k), None) => Some(k),
        _ => None,
    }
}

/// A RESHAPE's input and output when it only relabels bytes: one output of the input's type
/// and element count. (Its kernel copies the bytes as they are.)
fn relabel(ctx: &CompileCtx, r: OpId) -> Option<(OperandId, OperandId)> {
    let op = ctx.graph.op(r);
    let (OpKind::Reshape { .. }, Some(x), [y]) = (&op.kind, op.input(0), op.outputs.as_slice()) else { return None };
    let (xo, yo) = (ctx.graph.operand(x), ctx.graph.operand(*y));
    let count = |id: OperandId| nnrt_core::shape::num_elements(ctx.dims(id));
    (xo.dtype == yo.dtype && xo.data.is_none() && !xo.is_variable && !yo.is_variable && count(x).is_some() && count(x) == count(*y)).then_some((x, *y))
}

/// `(r, input, output)` when op `r` is a RESHAPE whose output only `next` reads.
fn reshape_into(ctx: &CompileCtx, r: OpId, next: OpId) -> Option<(OpId, OperandId, OperandId)> {
    let (a, b) = relabel(ctx, r)?;
    read_once_by(ctx, b, next).then_some((r, a, b))
}

/// The output of `last` when op `r` is a RESHAPE that alone reads it and `last`'s step writes
/// it as its one output.
fn reshape_from(ctx: &CompileCtx, last: OpId, r: OpId, built: &crate::kernel::Built) -> Option<OperandId> {
    let (c, _) = relabel(ctx, r)?;
    (ctx.graph.op(last).outputs.as_slice() == [c] && built.state.is_empty() && read_once_by(ctx, c, r)).then_some(c)
}

/// The step of a fused kernel for the ops `before` then `last` (each op before with one output
/// that the next alone reads), timed and planned at `last`.
fn fused_step(ctx: &CompileCtx, before: &[OpId], last: OpId, built: crate::kernel::Built) -> Step {
    let kind = before.iter().chain([&last]).map(|&i| ctx.graph.op(i).kind.name()).collect::<Vec<_>>().join("+");
    let fused = Fused {
        first: before.to_vec(),
        late: before.iter().flat_map(|&i| ctx.graph.op(i).inputs.iter().flatten().copied()).collect(),
        mid: before.iter().map(|&i| ctx.graph.op(i).outputs[0]).collect(),
    };
    let outputs = ctx.graph.op(last).outputs.iter().chain(&built.state).copied().collect();
    Step { kind, kernel: built.kernel, io: OpIo::new(last, built.inputs, outputs), fused: Some(fused) }
}

struct CpuExecutable {
    steps: Vec<Step>,
    /// Per-step wall time, when profiling.
    times: Option<Vec<std::time::Duration>>,
}

impl Executable for CpuExecutable {
    fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        for (k, step) in self.steps.iter_mut().enumerate() {
            let start = self.times.is_some().then(std::time::Instant::now);
            step.run(arena)?;
            if let (Some(t), Some(times)) = (start, self.times.as_mut()) {
                times[k] += t.elapsed();
            }
        }
        Ok(())
    }

    fn plan_hints(&self) -> PlanHints {
        let mut h = PlanHints::default();
        for s in &self.steps {
            s.add_hints(&mut h);
        }
        h
    }

    fn set_profiling(&mut self, on: bool) {
        self.times = on.then(|| vec![std::time::Duration::ZERO; self.steps.len()]);
    }

    fn op_times(&self) -> Vec<(OpId, std::time::Duration)> {
        match &self.times {
            Some(t) => self
                .steps
                .iter()
                .zip(t)
                .flat_map(|(s, &d)| s.fused.iter().flat_map(|f| f.first.iter().map(|&o| (o, std::time::Duration::ZERO))).chain([(s.io.op, d)]))
                .collect(),
            None => Vec::new(),
        }
    }
}
