//! The CPU backend's side of ahead-of-time artifacts (`nnrt-compile`): an artifact builds its
//! kernels here, from the graph it carries as code, with the runtime's own kernel choice and
//! fusions, and runs them one step at a time.

use nnrt_core::{CompileCtx, CompileError, OpId, PlanHints, RunError, TensorArena};

use crate::backend::{compile_steps, Step};

/// One compiled step: an op's kernel, or one kernel for a run of ops the backend fuses.
pub struct AotStep(Step);

impl AotStep {
    /// The ops this step runs, in order (fused ones first).
    pub fn ops(&self) -> Vec<OpId> {
        self.0.ops()
    }

    /// The op names (`+`-joined for a fused step).
    pub fn kind(&self) -> &str {
        self.0.kind()
    }

    /// Runs the step over `arena` (inside the caller's thread pool).
    pub fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        self.0.run(arena)
    }
}

/// Builds the steps of the ops `ids` of `ctx.graph`, exactly as [`crate::CpuBackend`] compiles a
/// partition of them.
pub fn steps(ctx: &CompileCtx, ids: &[OpId]) -> Result<Vec<AotStep>, CompileError> {
    Ok(compile_steps(ctx, ids)?.into_iter().map(AotStep).collect())
}

/// What the memory plan must know of `steps` (operands fused away, inputs read late).
pub fn plan_hints(steps: &[AotStep]) -> PlanHints {
    let mut h = PlanHints::default();
    for s in steps {
        s.0.add_hints(&mut h);
    }
    h
}
