//! A prepared subgraph: shapes inferred, ops assigned and compiled, memory planned. `run` only
//! moves data through the compiled partitions.

use crate::partition::{assign, partitions, Assignment, Partition};
use crate::shape::fmt_dims;
use crate::{
    infer_graph, passes, plan, validate, Backend, CompileCtx, CompileError, Config, Executable, MemoryPlan, Model, OpId,
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
    exes: Vec<Box<dyn Executable>>,
    arena: TensorArena,
    pool: rayon::ThreadPool,
    threads: usize,
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
        let (graph, origin) = passes::fold_constants(g0);
        let dims = infer_graph(&graph, input_dims)?;
        let threads = threads.max(1);
        let ctx = CompileCtx { graph: &graph, shapes: &dims, threads, config, origin: &origin };
        let assignments = assign(&ctx, backends)?;
        let partitions = partitions(&assignments);
        let mut exes = Vec::with_capacity(partitions.len());
        for p in &partitions {
            exes.push(backends[p.backend].compile(&ctx, &p.ops)?);
        }
        let MemoryPlan { slots, size } = plan(&graph, &dims)?;
        let dtypes = graph.operands.iter().map(|o| o.dtype).collect();
        let arena = TensorArena::new(size, slots, dims.clone(), dtypes);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("nnrt-{i}"))
            .build()
            .map_err(|e| CompileError::Config { key: "NUM_THREADS".into(), value: threads.to_string(), reason: e.to_string() })?;
        log::debug!("prepared {} ops in {} partitions, arena {} bytes, {threads} threads", graph.ops.len(), partitions.len(), size);
        Ok(Prepared {
            graph,
            origin,
            dims,
            assignments,
            partitions,
            backend_ids: backends.iter().map(|b| b.id().to_string()).collect(),
            exes,
            arena,
            pool,
            threads,
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
        self.assignments.iter().map(|a| (self.backend_ids[a.backend].as_str(), a.fallback_reason.as_deref()))
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
        let (exes, arena) = (&mut self.exes, &mut self.arena);
        self.pool.install(|| {
            for exe in exes.iter_mut() {
                exe.run(arena)?;
            }
            Ok(())
        })
    }
}
