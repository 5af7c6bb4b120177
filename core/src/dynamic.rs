//! Ops whose tensors' shapes are known only at run time (onert's dynamic tensors).
//!
//! At prepare, shape inference marks an operand dynamic when its shape depends on the values of a
//! tensor computed at run time (a SLICE size, a RESHAPE or FILL shape, a RANGE limit, a TOP_K
//! `k`, …) or on another dynamic operand. Ops touching only static operands are compiled and
//! planned as usual. Each op touching a dynamic operand becomes a [`DynamicStep`]: before it runs,
//! its output shapes are inferred from the actual dims and values, the outputs' storage is
//! resized ([`TensorArena::resize`], outside the static arena), and the op is compiled for those
//! dims, with the values that decided them as constants. Compiled kernels are cached by dims and
//! values, so a loop that revisits the same shapes compiles each once.

use std::sync::Arc;

use crate::{infer_op_at_run, Backend, CompileCtx, Config, ConstData, Executable, OpId, OpKind, OperandId, RunError, Subgraph, TensorArena};

/// How many compiled variants one dynamic op keeps (most recently used last).
const CACHE: usize = 16;

/// What dynamic steps of one prepared subgraph share to compile at run time.
pub(crate) struct Runtime {
    pub backends: Arc<[Box<dyn Backend>]>,
    pub config: Arc<Config>,
    pub threads: usize,
    pub origin: Vec<OpId>,
    /// The prepared graph. While a kernel compiles, the operands whose values decided its shapes
    /// hold those values as constant data (and are reset right after).
    pub graph: Subgraph,
}

/// One op touching a dynamic operand, compiled at run time for the shapes it meets.
pub(crate) struct DynamicStep {
    op: OpId,
    backend: usize,
    cache: Vec<Compiled>,
}

/// A kernel compiled for one set of dims (of the op's inputs then outputs) and values.
struct Compiled {
    dims: Vec<Vec<usize>>,
    values: Vec<(OperandId, Vec<u8>)>,
    exe: Box<dyn Executable>,
}

impl DynamicStep {
    /// Op `op`, to run on backend `backend` (an index into [`Runtime::backends`]).
    pub fn new(op: OpId, backend: usize) -> DynamicStep {
        DynamicStep { op, backend, cache: Vec::new() }
    }

    /// Infers the op's output shapes from the tensors in `arena`, resizes the outputs, compiles
    /// the op for those shapes unless a cached kernel fits, and runs it.
    pub fn run(&mut self, rt: &mut Runtime, arena: &mut TensorArena) -> Result<(), RunError> {
        let op = rt.graph.op(self.op);
        let fail = |reason: String| RunError::Kernel { op: self.op, kind: op.kind.name().into(), reason };
        let (out_dims, reads) = match &op.kind {
            OpKind::Custom { .. } => (custom_shapes(rt, self.op, arena).map_err(fail)?, Vec::new()),
            _ => infer_op_at_run(&rt.graph, self.op, arena).map_err(|e| fail(format!("shape inference at run time failed: {e}")))?,
        };
        for (&o, d) in op.outputs.iter().zip(&out_dims) {
            if arena.is_dynamic(o) {
                arena.resize(self.op, o, d)?;
            } else if arena.dims(o) != d.as_slice() {
                let (want, got) = (crate::shape::fmt_dims(arena.dims(o)), crate::shape::fmt_dims(d));
                return Err(fail(format!("output {o} was planned as {want} but the op computes {got}")));
            }
        }
        let operands = || op.inputs.iter().flatten().chain(&op.outputs);
        let fits = |c: &Compiled| {
            c.dims.len() == operands().count()
                && operands().zip(&c.dims).all(|(&i, d)| arena.dims(i) == d.as_slice())
                && c.values.len() == reads.len()
                && reads.iter().zip(&c.values).all(|(&r, (id, v))| r == *id && arena.bytes(r) == Some(v.as_slice()))
        };
        match self.cache.iter().rposition(fits) {
            Some(k) if k + 1 == self.cache.len() => {}
            Some(k) => {
                let hit = self.cache.remove(k);
                self.cache.push(hit);
            }
            None => {
                let dims: Vec<Vec<usize>> = operands().map(|&i| arena.dims(i).to_vec()).collect();
                let values: Vec<(OperandId, Vec<u8>)> = reads.iter().map(|&r| (r, arena.bytes(r).unwrap_or_default().to_vec())).collect();
                let exe = self.compile(rt, arena, &values)?;
                if self.cache.len() >= CACHE {
                    self.cache.remove(0);
                }
                self.cache.push(Compiled { dims, values, exe });
            }
        }
        match self.cache.last_mut() {
            Some(c) => c.exe.run(arena),
            None => Err(RunError::Kernel { op: self.op, kind: "dynamic".into(), reason: "no compiled kernel".into() }),
        }
    }

    fn compile(&self, rt: &mut Runtime, arena: &TensorArena, values: &[(OperandId, Vec<u8>)]) -> Result<Box<dyn Executable>, RunError> {
        for (id, v) in values {
            rt.graph.operands[id.index()].data = Some(ConstData::owned(v.clone()));
        }
        let ctx = CompileCtx { graph: &rt.graph, shapes: arena.all_dims(), threads: rt.threads, config: &rt.config, origin: &rt.origin };
        let exe = rt.backends.get(self.backend).map(|b| b.compile(&ctx, &[self.op]));
        for (id, _) in values {
            rt.graph.operands[id.index()].data = None;
        }
        let kind = rt.graph.op(self.op).kind.name().to_string();
        match exe {
            Some(Ok(exe)) => {
                log::debug!("compiled {} ({kind}) for shapes known at run time", self.op);
                Ok(exe)
            }
            Some(Err(e)) => Err(RunError::Kernel { op: self.op, kind, reason: format!("compiling for the shapes met at run time failed: {e}") }),
            None => Err(RunError::Kernel { op: self.op, kind, reason: format!("backend {} does not exist", self.backend) }),
        }
    }
}

/// Output shapes of a custom op from the backends' rules, given the current dims.
fn custom_shapes(rt: &Runtime, op: OpId, arena: &TensorArena) -> Result<Vec<Vec<usize>>, String> {
    let shapes: Vec<Option<Vec<usize>>> = arena.all_dims().iter().cloned().map(Some).collect();
    match rt.backends.iter().find_map(|b| b.output_shapes(&rt.graph, op, &shapes)) {
        Some(r) => r.map_err(|e| e.to_string()),
        None => Err("no backend can infer this custom op's output shapes from shapes known only at run time".into()),
    }
}
