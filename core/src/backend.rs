//! The backend trait: what every backend (cpu, gpu, custom-op plugins) implements.

use crate::{CompileError, Config, Layout, OpId, RunError, Subgraph, TensorArena};

/// Whether a backend can run an op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// It can.
    Yes,
    /// It cannot, and why (printed by the partitioner and in errors).
    No(String),
}

/// What a backend sees when it decides support and compiles: the graph with every operand's
/// concrete dims for this preparation.
pub struct CompileCtx<'a> {
    /// The subgraph being prepared.
    pub graph: &'a Subgraph,
    /// Concrete dims of every operand, indexed by operand id.
    pub shapes: &'a [Vec<usize>],
    /// The session's thread count.
    pub threads: usize,
    /// The session's configuration.
    pub config: &'a Config,
    /// For each op of `graph`, its index in the model as loaded (before constant folding); the
    /// index `OP_BACKEND_MAP` refers to.
    pub origin: &'a [OpId],
}

impl CompileCtx<'_> {
    /// Concrete dims of operand `id`.
    pub fn dims(&self, id: crate::OperandId) -> &[usize] {
        &self.shapes[id.index()]
    }
}

/// A backend: decides which ops it supports and compiles a partition into an [`Executable`].
pub trait Backend: Send + Sync {
    /// Short id users name in `BACKENDS` (`cpu`, `gpu`, …).
    fn id(&self) -> &str;

    /// Called by the partitioner for every op before assignment. The default says no, so a
    /// backend supports only what it claims.
    fn supports(&self, ctx: &CompileCtx, op: OpId) -> Support {
        let _ = (ctx, op);
        Support::No(format!("backend {} implements no ops", self.id()))
    }

    /// The activation layout this backend wants for image tensors; lowering inserts permutes
    /// where producer and consumer disagree.
    fn preferred_layout(&self) -> Layout {
        Layout::Nhwc
    }

    /// Called during shape inference, before assignment, for ops whose output shapes core cannot
    /// derive (custom ops): the output dims of op `op` of `graph` given the dims known so far
    /// (`shapes[operand]`), or `None` when this backend has no rule for the op (the model's
    /// declared shapes are then used). The default has none.
    fn output_shapes(&self, graph: &Subgraph, op: OpId, shapes: &[Option<Vec<usize>>]) -> Option<Result<Vec<Vec<usize>>, CompileError>> {
        let _ = (graph, op, shapes);
        None
    }

    /// Called once per partition at prepare: packs weights, builds kernels. `ops` is a contiguous
    /// run of ops, in execution order, that [`Backend::supports`] accepted.
    fn compile(&self, ctx: &CompileCtx, ops: &[OpId]) -> Result<Box<dyn Executable>, CompileError>;
}

/// A compiled partition. `run` is called once per inference, with the arena holding every
/// non-constant tensor; it reads its inputs there and writes its outputs there.
pub trait Executable: Send {
    /// Runs the partition's ops in order.
    fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError>;

    /// Switches per-op timing on (clearing what was measured) or off. Backends that cannot time
    /// single ops ignore it, and their partition is timed as a whole.
    fn set_profiling(&mut self, on: bool) {
        let _ = on;
    }

    /// Wall time spent in each op since profiling was switched on; empty when not measured.
    fn op_times(&self) -> Vec<(OpId, std::time::Duration)> {
        Vec::new()
    }

    /// What the memory planner must know about steps that fuse ops: operands read later than
    /// the graph says (`(operand, op)`: kept in memory through `op`, whose step reads it), and
    /// operands no step reads or writes any more (they get no memory). Empty by default.
    fn plan_hints(&self) -> PlanHints {
        PlanHints::default()
    }
}

/// See [`Executable::plan_hints`].
#[derive(Clone, Debug, Default)]
pub struct PlanHints {
    /// `(operand, op)`: the operand must stay in memory up to and including op `op`.
    pub keep_alive: Vec<(crate::OperandId, OpId)>,
    /// Operands that are never materialized (an intermediate inside a fused step).
    pub elided: Vec<crate::OperandId>,
}
