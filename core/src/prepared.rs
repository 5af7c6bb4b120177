//! A prepared subgraph: shapes inferred, ops assigned and compiled, memory planned. `run` only
//! moves data through the compiled partitions.

use std::cell::OnceCell;
use std::sync::Arc;

use crate::callee::RunEnv;
use crate::control::{self, ControlStep, SharedPool};
use crate::dynamic::{DynamicStep, Runtime};
use crate::partition::{assign, partitions, Assignment, Partition, CONTROL};
use crate::plan::plan_for_threads;
use crate::shape::fmt_dims;
use crate::{
    passes, validate, Backend, CompileCtx, CompileError, Config, Executable, Inferred, MemoryPlan, Model, OpId, OperandId, RunError,
    CancelToken, Subgraph, SubgraphId, TensorArena,
};

/// Everything `prepare` computed for one subgraph.
pub struct Prepared {
    graph: Subgraph,
    origin: Vec<OpId>,
    assignments: Vec<Assignment>,
    partitions: Vec<Partition>,
    backend_ids: Vec<String>,
    exes: Vec<Exe>,
    /// The partition each entry of `exes` runs (a control-flow or dynamic op is one of its own).
    exe_parts: Vec<Partition>,
    arena: TensorArena,
    /// Present when some operand's shape is known only at run time.
    runtime: Option<Box<Runtime>>,
    pool: SharedPool,
    threads: usize,
    profiling: bool,
    exe_times: Vec<std::time::Duration>,
    /// Checked before each step of the entry subgraph (callees are checked by the WHILE loops
    /// that call them, at each iteration).
    cancel: Option<CancelToken>,
}

/// A compiled partition, a control-flow op, or an op compiled at run time.
enum Exe {
    Backend(Box<dyn Executable>),
    Control(Box<ControlStep>),
    Dynamic(DynamicStep),
}

/// What every subgraph of one preparation shares: the model, backends, configuration, thread
/// pool.
pub(crate) struct Env<'a> {
    pub model: &'a Model,
    /// The model as owned by steps that prepare callees at run time, cloned on first need.
    shared_model: OnceCell<Arc<Model>>,
    pub backends: Arc<[Box<dyn Backend>]>,
    pub config: Arc<Config>,
    pub pool: SharedPool,
    pub threads: usize,
    /// Shared by the entry subgraph and every callee.
    pub cancel: CancelToken,
}

impl Env<'_> {
    /// An owned copy, for preparing callees at run time.
    pub fn to_run_env(&self) -> RunEnv {
        RunEnv {
            model: self.shared_model.get_or_init(|| Arc::new(self.model.clone())).clone(),
            backends: self.backends.clone(),
            config: self.config.clone(),
            pool: self.pool.clone(),
            threads: self.threads,
            cancel: self.cancel.clone(),
        }
    }
}

impl RunEnv {
    /// The environment of a preparation at run time.
    pub(crate) fn env(&self) -> Env<'_> {
        Env {
            model: &self.model,
            shared_model: OnceCell::from(self.model.clone()),
            backends: self.backends.clone(),
            config: self.config.clone(),
            pool: self.pool.clone(),
            threads: self.threads,
            cancel: self.cancel.clone(),
        }
    }
}

impl Prepared {
    /// Validates, infers shapes for `input_dims`, folds constants, partitions over `backends`
    /// (in preference order), compiles each partition and plans memory. The prepared model keeps
    /// the backends: ops whose shapes are known only at run time are compiled when they run.
    pub fn new(
        model: &Model,
        subgraph: SubgraphId,
        input_dims: &[Vec<usize>],
        backends: impl Into<Arc<[Box<dyn Backend>]>>,
        config: &Config,
        threads: usize,
    ) -> Result<Prepared, CompileError> {
        Prepared::with_cancel(model, subgraph, input_dims, backends, config, threads, CancelToken::default())
    }

    /// [`Prepared::new`] whose runs `cancel` stops (the caller keeps a clone to cancel with).
    pub fn with_cancel(
        model: &Model,
        subgraph: SubgraphId,
        input_dims: &[Vec<usize>],
        backends: impl Into<Arc<[Box<dyn Backend>]>>,
        config: &Config,
        threads: usize,
        cancel: CancelToken,
    ) -> Result<Prepared, CompileError> {
        let threads = threads.max(1);
        let pool = nnrt_threads::KernelPool::new(threads)
            .map_err(|e| CompileError::Config { key: "NUM_THREADS".into(), value: threads.to_string(), reason: e.to_string() })?;
        let env = Env {
            model,
            shared_model: OnceCell::new(),
            backends: backends.into(),
            config: Arc::new(config.clone()),
            pool: Arc::new(pool),
            threads,
            cancel,
        };
        Prepared::build(subgraph, input_dims, &env, 0)
    }

    /// Prepares subgraph `subgraph` of `env.model`; `depth` counts the control-flow calls above
    /// it.
    pub(crate) fn build(subgraph: SubgraphId, input_dims: &[Vec<usize>], env: &Env<'_>, depth: usize) -> Result<Prepared, CompileError> {
        let model = env.model;
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
        let Inferred { dims, dynamic } = control::infer_model(model, subgraph, input_dims, depth, &env.backends)?;
        let limit = env.config.memory_limit().map_err(|reason| CompileError::Config {
            key: "MEMORY_LIMIT".into(),
            value: env.config.get("MEMORY_LIMIT").unwrap_or_default().into(),
            reason,
        })?;
        let dtypes: Vec<crate::DType> = g0.operands.iter().map(|o| o.dtype).collect();
        crate::arena::check_tensor_sizes(&dims, &dtypes, limit)?;
        let (graph, origin) = passes::fold_constants(g0);
        let (graph, origin) = passes::fuse_activations(graph, origin);
        let (graph, origin) = passes::fold_pads(graph, origin, &dims, &dynamic);
        let ctx = CompileCtx { graph: &graph, shapes: &dims, threads: env.threads, config: &env.config, origin: &origin };
        let assignments = assign(&ctx, &env.backends)?;
        let partitions = partitions(&assignments);
        let touches_dynamic = |id: OpId| {
            let op = graph.op(id);
            op.inputs.iter().flatten().chain(&op.outputs).any(|o| dynamic[o.index()])
        };
        let mut exes = Vec::with_capacity(partitions.len());
        let mut exe_parts = Vec::with_capacity(partitions.len());
        for p in &partitions {
            if p.backend == CONTROL {
                for &op in &p.ops {
                    exes.push(Exe::Control(Box::new(control::prepare_step(&graph, op, &dims, &dynamic, env, depth)?)));
                    exe_parts.push(Partition { backend: CONTROL, ops: vec![op] });
                }
                continue;
            }
            // Runs of static ops compile now; an op touching a dynamic operand compiles when it
            // runs. Without dynamic operands this is one compile per partition.
            let mut runs: Vec<(Vec<OpId>, bool)> = Vec::new();
            for &op in &p.ops {
                match (touches_dynamic(op), runs.last_mut()) {
                    (false, Some((run, false))) => run.push(op),
                    (is_dynamic, _) => runs.push((vec![op], is_dynamic)),
                }
            }
            for (ops, is_dynamic) in runs {
                exes.push(match is_dynamic {
                    true => Exe::Dynamic(DynamicStep::new(ops[0], p.backend)),
                    false => Exe::Backend(env.backends[p.backend].compile(&ctx, &ops)?),
                });
                exe_parts.push(Partition { backend: p.backend, ops });
            }
        }
        let mut hints = crate::PlanHints::default();
        for e in &exes {
            if let Exe::Backend(e) = e {
                let h = e.plan_hints();
                hints.keep_alive.extend(h.keep_alive);
                hints.elided.extend(h.elided);
            }
        }
        let MemoryPlan { slots, size } = plan_for_threads(&graph, &dims, &dynamic, &hints, env.threads)?;
        let dtypes = graph.operands.iter().map(|o| o.dtype).collect();
        let mut arena = TensorArena::try_new(size, slots, dims, dtypes, limit)?;
        let mut runtime = None;
        if dynamic.iter().any(|&d| d) {
            for (i, _) in dynamic.iter().enumerate().filter(|(_, &d)| d) {
                arena.make_dynamic(OperandId::new(i));
            }
            let (backends, config, threads, origin) = (env.backends.clone(), env.config.clone(), env.threads, origin.clone());
            runtime = Some(Box::new(Runtime { backends, config, threads, origin, graph: graph.clone() }));
        }
        let n_dynamic = dynamic.iter().filter(|&&d| d).count();
        log::debug!(
            "prepared {subgraph}: {} ops in {} partitions, arena {} bytes, {n_dynamic} dynamic tensors, {} threads",
            graph.ops.len(),
            partitions.len(),
            size,
            env.threads
        );
        Ok(Prepared {
            graph,
            origin,
            assignments,
            partitions,
            backend_ids: env.backends.iter().map(|b| b.id().to_string()).collect(),
            exes,
            exe_parts,
            arena,
            runtime,
            pool: env.pool.clone(),
            threads: env.threads,
            profiling: false,
            exe_times: Vec::new(),
            cancel: (depth == 0).then(|| env.cancel.clone()),
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

    /// Concrete dims of operand `id`: as planned, or for a dynamic operand as of the last run.
    pub fn dims(&self, id: OperandId) -> &[usize] {
        self.arena.dims(id)
    }

    /// Whether operand `id`'s shape is known only at run time.
    pub fn is_dynamic(&self, id: OperandId) -> bool {
        self.arena.is_dynamic(id)
    }

    /// Dims of graph output `i` (as of the last run for a dynamic one).
    pub fn output_dims(&self, i: usize) -> Result<&[usize], RunError> {
        let count = self.graph.outputs.len();
        let id = *self.graph.outputs.get(i).ok_or(RunError::BadIndex { what: "output", index: i, count })?;
        Ok(self.arena.dims(id))
    }

    /// Whether graph output `i`'s shape is known only at run time.
    pub fn output_is_dynamic(&self, i: usize) -> bool {
        self.graph.outputs.get(i).is_some_and(|&id| self.arena.is_dynamic(id))
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

    /// `read[i]`: graph input `i` is read by some op or is a graph output (a WHILE condition
    /// typically reads only its counters: the other loop variables need not be copied in).
    pub(crate) fn inputs_read(&self) -> Vec<bool> {
        let g = &self.graph;
        let read = |id: OperandId| g.outputs.contains(&id) || g.ops.iter().any(|o| o.inputs.iter().flatten().any(|&i| i == id));
        g.inputs.iter().map(|&id| read(id)).collect()
    }

    /// `through[k]`: graph output `k` is graph input `k` itself (a loop variable a WHILE body
    /// passes on unchanged). Such an input is live to the end of the run (it is an output), so
    /// no op writes over it and its bytes stay in place between runs.
    pub(crate) fn passes_through(&self) -> Vec<bool> {
        let g = &self.graph;
        (0..g.outputs.len()).map(|k| g.inputs.get(k).is_some_and(|&i| i == g.outputs[k])).collect()
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
            if let Some(c) = &self.cancel {
                c.check(|| format!(" before op {}", self.exe_parts[k].ops[0]))?;
            }
            let start = self.profiling.then(std::time::Instant::now);
            match exe {
                Exe::Backend(e) => e.run(&mut self.arena)?,
                Exe::Control(c) => c.run(&mut self.arena)?,
                Exe::Dynamic(d) => match self.runtime.as_deref_mut() {
                    Some(rt) => d.run(rt, &mut self.arena)?,
                    None => return Err(RunError::Kernel { op: OpId(u32::MAX), kind: "dynamic".into(), reason: "no run-time compiler was prepared".into() }),
                },
            }
            if let Some(t) = start {
                self.exe_times[k] += t.elapsed();
            }
        }
        Ok(())
    }

    /// The handle that cancels this model's runs from another thread.
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone().unwrap_or_default()
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
        for ((exe, p), total) in self.exes.iter().zip(&self.exe_parts).zip(&self.exe_times) {
            let backend = self.backend_ids.get(p.backend).map_or("core", String::as_str).to_string();
            let times = match exe {
                Exe::Backend(e) => e.op_times(),
                Exe::Control(_) | Exe::Dynamic(_) => Vec::new(),
            };
            let times = if times.is_empty() { vec![(p.ops[0], *total)] } else { times };
            for (op, t) in times {
                out.push((self.origin[op.index()], self.graph.op(op).kind.name().to_string(), backend.clone(), t));
            }
        }
        out
    }
}
