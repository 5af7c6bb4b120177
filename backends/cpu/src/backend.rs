//! The CPU backend: decides support per op, builds one kernel per op at compile (weights packed
//! there), and runs them in order over the arena.

use nnrt_core::{Backend, CompileCtx, CompileError, Executable, InputSource, OpId, OpIo, RunError, Support, TensorArena, TensorMut, TensorRef};

use crate::ops;

/// A compiled op: reads its inputs (the arena's or its own constants), writes its outputs.
pub(crate) trait Kernel: Send {
    /// Runs once per inference. `ins` holds the inputs the builder asked for, in its order.
    fn run(&mut self, ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]) -> Result<(), String>;
}

/// What an op builder returns: the kernel and the inputs it reads at run time.
pub(crate) struct Built {
    pub kernel: Box<dyn Kernel>,
    pub inputs: Vec<InputSource>,
    /// Variable tensors the kernel reads and updates in place (LSTM state); they follow the
    /// op's outputs in the kernel's `outs`.
    pub state: Vec<nnrt_core::OperandId>,
}

struct Step {
    kind: String,
    kernel: Box<dyn Kernel>,
    io: OpIo,
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

    fn compile(&self, ctx: &CompileCtx, ids: &[OpId]) -> Result<Box<dyn Executable>, CompileError> {
        let mut steps = Vec::with_capacity(ids.len());
        for &id in ids {
            let op = ctx.graph.op(id);
            let kind = op.kind.name().to_string();
            let built = ops::build(ctx, id).map_err(|reason| CompileError::InvalidOp { op: id, kind: kind.clone(), reason })?;
            let outputs = op.outputs.iter().chain(&built.state).copied().collect();
            steps.push(Step { kind, kernel: built.kernel, io: OpIo::new(id, built.inputs, outputs) });
        }
        Ok(Box::new(CpuExecutable { steps, times: None }))
    }
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
            let (ins, mut outs) = step.io.views(arena)?;
            step.kernel.run(&ins, &mut outs).map_err(|reason| RunError::Kernel { op: step.io.op, kind: step.kind.clone(), reason })?;
            if let (Some(t), Some(times)) = (start, self.times.as_mut()) {
                times[k] += t.elapsed();
            }
        }
        Ok(())
    }

    fn set_profiling(&mut self, on: bool) {
        self.times = on.then(|| vec![std::time::Duration::ZERO; self.steps.len()]);
    }

    fn op_times(&self) -> Vec<(OpId, std::time::Duration)> {
        match &self.times {
            Some(t) => self.steps.iter().zip(t).map(|(s, &d)| (s.io.op, d)).collect(),
            None => Vec::new(),
        }
    }
}
