//! The CPU backend: decides support per op, builds one kernel per op at compile (weights packed
//! there), and runs them in order over the arena.

use nnrt_core::{Backend, CompileCtx, CompileError, Executable, OpId, OpIo, OpKind, OperandId, PlanHints, RunError, Subgraph, Support, TensorArena};

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

/// The steps of the ops `ids` in order: one kernel per op, or one per run of ops the backend
/// fuses. Ahead-of-time artifacts build theirs here too (`crate::aot`), so their fusions are the
/// runtime's.
pub(crate) fn compile_steps(ctx: &CompileCtx, ids: &[OpId]) -> Result<Vec<Step>, CompileError> {
    {
        let mut steps = Vec::with_capacity(ids.len());
        let mut k = 0;
        while k < ids.len() {
            let id = ids[k];
            k += 1;
            // Fused kernels run as one step at the last op's turn; the earlier ops' outputs are
            // never written. TOSA's CONV2D / DEPTHWISE_CONV2D + RESCALE (+ CLAMP) chains
            // (`ops::fuse_rescale_chain`), then pairs (`ops::fuse_pair`).
            let fused = ops::fuse_rescale_chain(ctx, &ids[k - 1..])
                .or_else(|| ids.get(k).and_then(|&next| ops::fuse_pair(ctx, id, next, ids.get(k + 1).copied())).map(|b| (b, 2)));
            if let Some((built, n)) = fused {
                steps.push(fused_step(ctx, &ids[k - 1..k - 2 + n], ids[k - 2 + n], built));
                k += n - 1;
                continue;
            }
            let op = ctx.graph.op(id);
            let kind = op.kind.name().to_string();
            let built = ops::build(ctx, id).map_err(|reason| CompileError::InvalidOp { op: id, kind: kind.clone(), reason })?;
            let outputs = op.outputs.iter().chain(&built.state).copied().collect();
            steps.push(Step { kind, kernel: built.kernel, io: OpIo::new(id, built.inputs, outputs), fused: None });
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
        let (ins, mut outs) = self.io.views(arena)?;
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

/// The step of a fused kernel for the ops `before` then `last` (each op before with one output
/// that the next alone reads), timed and planned at `last`.
fn fused_step(ctx: &CompileCtx, before: &[OpId], last: OpId, built: crate::kernel::Built) -> Step {
    let kind = before.iter().chain([&last]).map(|&i| ctx.graph.op(i).kind.name()).collect::<Vec<_>>().join("+");
    let fused = Fused {
        first: before.to_vec(),
        late: before.iter().flat_map(|&i| ctx.graph.op(i).inputs.iter().flatten().copied()).collect(),
        mid: before.iter().map(|&i| ctx.graph.op(i).outputs[0]).collect(),
    };
    Step { kind, kernel: built.kernel, io: OpIo::new(last, built.inputs, ctx.graph.op(last).outputs.clone()), fused: Some(fused) }
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
