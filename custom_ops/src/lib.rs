//! # nnrt-custom-ops
//!
//! Custom operators: kernels registered by name (through the API today; dynamic plugins loaded
//! with libloading build on the same registry) and the `custom` backend that runs them. A custom
//! op the model uses but nobody registered fails at prepare, naming the op.
//!
//! Depends on `nnrt-core` only.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use nnrt_core::{Backend, CompileCtx, CompileError, Executable, InputSource, OpId, OpIo, OpKind, RunError, Support, TensorArena, TensorMut, TensorRef};

/// A custom op's kernel: reads the inputs, writes the (preallocated) outputs, given the op's
/// option bytes from the model. An `Err` becomes a typed run error naming the op.
pub type EvalFn = Arc<dyn Fn(&[TensorRef<'_>], &mut [TensorMut<'_>], &[u8]) -> Result<(), String> + Send + Sync>;

/// Custom op kernels by name.
#[derive(Clone, Default)]
pub struct Registry {
    ops: BTreeMap<String, EvalFn>,
}

impl Registry {
    /// Registers (or replaces) the kernel of custom op `name`.
    pub fn register(&mut self, name: impl Into<String>, eval: EvalFn) {
        self.ops.insert(name.into(), eval);
    }

    /// Whether `name` has a kernel.
    pub fn contains(&self, name: &str) -> bool {
        self.ops.contains_key(name)
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.ops.keys().map(String::as_str)
    }
}

/// The backend (id `custom`) that runs registered custom ops.
pub struct CustomOpBackend {
    registry: Registry,
}

impl CustomOpBackend {
    /// A backend over a snapshot of `registry`.
    pub fn new(registry: Registry) -> CustomOpBackend {
        CustomOpBackend { registry }
    }
}

impl Backend for CustomOpBackend {
    fn id(&self) -> &str {
        "custom"
    }

    fn supports(&self, ctx: &CompileCtx, op: OpId) -> Support {
        match &ctx.graph.op(op).kind {
            OpKind::Custom { name, .. } if self.registry.contains(name) => Support::Yes,
            OpKind::Custom { name, .. } => Support::No(format!("no kernel is registered for custom op '{name}'")),
            other => Support::No(format!("{} is a builtin op", other.name())),
        }
    }

    fn compile(&self, ctx: &CompileCtx, ops: &[OpId]) -> Result<Box<dyn Executable>, CompileError> {
        let mut steps = Vec::with_capacity(ops.len());
        for &id in ops {
            let op = ctx.graph.op(id);
            let OpKind::Custom { name, options } = &op.kind else {
                return Err(CompileError::InvalidOp { op: id, kind: op.kind.name().to_string(), reason: "not a custom op".into() });
            };
            let eval = self.registry.ops.get(name).cloned().ok_or_else(|| CompileError::CustomOpNotFound { op: id, name: name.clone() })?;
            let inputs = op.inputs.iter().flatten().map(|&i| InputSource::of(ctx.graph, ctx.dims(i), i)).collect();
            steps.push(Step { name: name.clone(), options: options.clone(), eval, io: OpIo::new(id, inputs, op.outputs.clone()) });
        }
        Ok(Box::new(CustomExecutable { steps }))
    }
}

struct Step {
    name: String,
    options: Vec<u8>,
    eval: EvalFn,
    io: OpIo,
}

struct CustomExecutable {
    steps: Vec<Step>,
}

impl Executable for CustomExecutable {
    fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        for s in &self.steps {
            let (ins, mut outs) = s.io.views(arena)?;
            (s.eval)(&ins, &mut outs, &s.options).map_err(|reason| RunError::Kernel { op: s.io.op, kind: s.name.clone(), reason })?;
        }
        Ok(())
    }
}
