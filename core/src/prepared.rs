//! A prepared subgraph: shapes inferred, ops assigned and compiled, memory planned. `run` only
//! moves data through the compiled partitions.

use std::sync::Arc;

use crate::control::{self, ControlStep, SharedPool};
use crate::partition::{assign, partitions, Assignment, Partition, CONTROL};
use crate::shape::fmt_dims;
use crate::{
    passes, plan, validate, Backend, CompileCtx, CompileError, Config, Executable, MemoryPlan, Model, OpId,
    OperandId, RunError, Subgraph, SubgraphId, TensorArena,
};

/// Everything `prepare` computed for one subgraph.
pub struct Prepared {
    graph: Subgraph,
    origin: Vec<OpId>,
    dims: Vec<Vec<usize>>,
    assignments: Vec<Assignment>,
    partitions: Vec<Partition>,
    backend_ids: Vec<String>,
    exes: Vec<Exe>,
    arena: TensorArena,
    pool: SharedPool,
    threads: usize,
    profiling: bool,
    exe_times: Vec<std::time::Duration>,
}

/// A compiled partition or a control-flow op.
enum Exe {
    Backend(Box<dyn Executable>),
    Control(ControlStep),
}

/// What every subgraph of one preparation shares: backends, configuration, thread pool.
pub(crate) struct Env<'a> {
    pub backends: &'a [Box<dyn Backend>],
    pub config: &'a Config,
    pub pool: SharedPool,
    pub threads: usize,
}

impl Prepared {
    /// Validates, infers shapes for `input_dims`, folds constants, partitions over `backends`
    /// (in preference order), compiles each partition and plans memory.
    pub fn new(
        model: &Model,
        subgraph: SubgraphId,
        input_dims: &[Vec<usize>],
        backends: &[Box<dyn Backend>],
        config: &Config,
        threads: usize,
    ) -> Result<Prepared, CompileError> {
        let threads = threads.max(1);
        let pool = crate::pool::JoinedPool::new(threads)?;
        let env = Env { backends, config, pool: Arc::new(pool), threads };
        Prepared::build(model, subgraph, input_dims, &env, 0)
    }

    /// Prepares subgraph `subgraph`; `depth` counts the control-flow calls above it.
    pub(crate) fn build(model: &Model, subgraph: SubgraphId, input_dims: &[Vec<usize>], env: &Env<'_>, depth: usize) -> Result<Prepared, CompileError> {
        let g0 = model.subgraph(subgraph).ok_or_else(|| CompileError::Config {
            key: "subgraph".into(),
            value: subgraph.to_string(),
            reason: format!("the model has {} subgraphs", model.subgraphs.len()),
        })?;
        validate(g0)?;
        for (k, (&id, dims)) in g0.inputs.iter().zip(input_dims).enumerate() {
            let operand = g0.operand(id);
            if !operand.shape.admits(dims) {
                return Err(CompileError::InputShape {
                    index: k,
                    name: operand.name.clone(),
                    got: fmt_dims(dims),
                    expected: operand.shape.to_string(),
                });
            }
        }
        // Folding turns ops into constants of the same dims, so shapes are inferred on the model
        // as loaded (which also follows IF/WHILE into their subgraphs).
        let dims = control::infer_model(model, subgraph, input_dims, depth, env.backends)?;
        let (graph, origin) = passes::fold_constants(g0);
        let ctx = CompileCtx { graph: &graph, shapes: &dims, threads: env.threads, config: env.config, origin: &origin };
        let assignments = assign(&ctx, env.backends)?;
        let partitions = partitions(&assignments);
        let mut exes = Vec::with_capacity(partitions.len());
        for p in &partitions {
            if p.backend == CONTROL {
                for &op in &p.ops {
                    exes.push(Exe::Control(control::prepare_step(model, &graph, op, &dims, env, depth)?));
                }
            } else {
                exes.push(Exe::Backend(env.backends[p.backend].compile(&ctx, &p.ops)?));
            }
        }
        let MemoryPlan { slots, size } = plan(&graph, &dims)?;
        let dtypes = graph.operands.iter().map(|o| o.dtype).collect();
        let arena = TensorArena::new(size, slots, dims.clone(), dtypes);
        log::debug!("prepared {subgraph}: {} ops in {} partitions, arena {} bytes, {} threads", graph.ops.len(), partitions.len(), size, env.threads);
        Ok(Prepared {
            graph,
            origin,
            dims,
            assignments,
            partitions,
            backend_ids: env.backends.iter().map(|b| b.id().to_string()).collect(),
            exes,
            arena,
            pool: env.pool.clone(),
            threads: env.threads,
            profiling: false,
            exe_times: Vec::new(),
        })
    }

    /// The graph as prepared (after constant folding).
    pub fn graph(&self) -> &Subgraph {
        &self.graph
    }

    /// For each op of [`Prepared::graph`], its index in the model.
    pub fn origin(&self) -> &[OpId] {
        &self.origin
    }

    /// Concrete dims of every operand.
    pub fn dims(&self, id: OperandId) -> &[usize] {
        &self.dims[id.index()]
    }

    /// Backend id and fallback reason of each op of [`Prepared::graph`].
    pub fn assignments(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.assignments.iter().map(|a| (self.backend_ids.get(a.backend).map_or("core", String::as_str), a.fallback_reason.as_deref()))
    }

    /// The partitions, in execution order.
    pub fn partitions(&self) -> &[Partition] {
        &self.partitions
    }

    /// Arena size in bytes.
    pub fn arena_size(&self) -> usize {
        self.arena.size()
    }

    /// Thread count of the pool kernels run on.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Bytes of graph input `i`, to be filled by the caller before [`Prepared::run`].
    pub fn input_mut(&mut self, i: usize) -> Result<&mut [u8], RunError> {
        let count = self.graph.inputs.len();
        let id = *self.graph.inputs.get(i).ok_or(RunError::BadIndex { what: "input", index: i, count })?;
        self.arena.bytes_mut(id).ok_or(RunError::BadIndex { what: "input", index: i, count })
    }

    /// Bytes of graph output `i` after [`Prepared::run`].
    pub fn output(&self, i: usize) -> Result<&[u8], RunError> {
        let count = self.graph.outputs.len();
        let id = *self.graph.outputs.get(i).ok_or(RunError::BadIndex { what: "output", index: i, count })?;
        match self.arena.bytes(id) {
            Some(b) => Ok(b),
            None => self.graph.operand(id).data.as_ref().map(|d| d.bytes()).ok_or(RunError::BadIndex { what: "output", index: i, count }),
        }
    }

    /// Runs every partition in order on the session's thread pool.
    pub fn run(&mut self) -> Result<(), RunError> {
        let pool = self.pool.clone();
        pool.install(|| self.run_here())
    }

    /// Runs on the current thread (already inside the pool: control-flow callees).
    pub(crate) fn run_here(&mut self) -> Result<(), RunError> {
        for (k, exe) in self.exes.iter_mut().enumerate() {
            let start = self.profiling.then(std::time::Instant::now);
            match exe {
                Exe::Backend(e) => e.run(&mut self.arena)?,
                Exe::Control(c) => c.run(&mut self.arena)?,
            }
            if let Some(t) = start {
                self.exe_times[k] += t.elapsed();
            }
        }
        Ok(())
    }

    /// Switches per-op timing on (clearing earlier measurements) or off.
    pub fn set_profiling(&mut self, on: bool) {
        self.profiling = on;
        self.exe_times = vec![std::time::Duration::ZERO; self.exes.len()];
        for e in &mut self.exes {
            if let Exe::Backend(e) = e {
                e.set_profiling(on);
            }
        }
    }

    /// Time spent per op (index in the model, kind, backend) since profiling was switched on.
    /// Ops of a backend that does not time single ops share their partition's time, reported on
    /// the partition's first op; control-flow ops include the subgraphs they call.
    pub fn op_times(&self) -> Vec<(OpId, String, String, std::time::Duration)> {
        let mut out = Vec::new();
        for ((exe, p), total) in self.exes.iter().zip(self.exe_partitions()).zip(&self.exe_times) {
            let backend = self.backend_ids.get(p.backend).map_or("core", String::as_str).to_string();
            let times = match exe {
                Exe::Backend(e) => e.op_times(),
                Exe::Control(_) => Vec::new(),
            };
            let times = if times.is_empty() { vec![(p.ops[0], *total)] } else { times };
            for (op, t) in times {
                out.push((self.origin[op.index()], self.graph.op(op).kind.name().to_string(), backend.clone(), t));
            }
        }
        out
    }

    /// The partition each entry of `exes` came from (a control partition gives one exe per op).
    fn exe_partitions(&self) -> Vec<Partition> {
        let mut out = Vec::new();
        for p in &self.partitions {
            if p.backend == CONTROL {
                out.extend(p.ops.iter().map(|&op| Partition { backend: CONTROL, ops: vec![op] }));
            } else {
                out.push(p.clone());
            }
        }
        out
    }
}
