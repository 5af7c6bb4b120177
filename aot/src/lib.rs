//! The runtime of ahead-of-time artifacts made by `nnrt-compile`.
//!
//! An artifact is a generated crate: its code builds the graph nnrt prepared (operands, ops and
//! their parameters as literals, constants borrowed from the memory-mapped parameters file),
//! builds the CPU kernels of the steps nnrt's runtime chose, in order, and runs them over one
//! arena whose offsets were planned ahead. This crate holds what every artifact shares: the
//! parameters file ([`Params`]), the typed [`Error`], the [`Artifact`] that runs the steps, and
//! the checks behind the generated C interface ([`ffi`]).

#![deny(unsafe_code)] // allowed only in `params` (the memory map) and `ffi` (the C interface)

#[allow(unsafe_code)]
pub mod ffi;
#[allow(unsafe_code)]
mod params;

use std::ops::Range;

pub use nnrt_backend_cpu::aot::AotStep;
pub use nnrt_backend_cpu::prepack::{fnv, FNV_OFFSET};
pub use nnrt_core as core;
use nnrt_core::{CompileCtx, CompileError, Config, DType, OpId, OperandId, RunError, Subgraph, TensorArena};
pub use params::{write as write_params, Params, ALIGN, FORMAT_VERSION, MAGIC};

/// The kernel ABI this runtime was built with: a hash of nnrt's version and of the form the
/// parameters file gives the kernels (IR constants, little-endian, 64-byte aligned). A generated
/// crate and its parameters file both record the ABI they were made for; a mismatch is refused.
/// The packers' source is part of it (`nnrt_backend_cpu::prepack::PACK_ABI`): packed blocks from
/// another packing code are never read.
pub const KERNEL_ABI: u64 = fnv(
    fnv(FNV_OFFSET, concat!("nnrt ", env!("CARGO_PKG_VERSION"), "; params: IR constants then packed blocks, le, 64-aligned").as_bytes()),
    &nnrt_backend_cpu::prepack::PACK_ABI.to_le_bytes(),
);

/// What can go wrong with an artifact: at create (its parameters file, its kernels) or when it
/// runs (its inputs, a kernel).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The parameters file could not be opened or mapped.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The parameters file is not one this artifact can use.
    #[error("{path}: {reason}")]
    Params {
        /// The file.
        path: String,
        /// What is wrong and what was expected.
        reason: String,
    },
    /// Building the kernels failed (nnrt's CPU backend refused an op).
    #[error("artifact {artifact}: {error}")]
    Compile {
        /// The artifact's name.
        artifact: String,
        /// The backend's error.
        error: Box<CompileError>,
    },
    /// The kernels nnrt builds now are not the steps the artifact was generated with.
    #[error("artifact {artifact}: step {step} was generated as {expected} but nnrt's CPU backend builds {found}; regenerate the artifact with this nnrt")]
    Steps {
        /// The artifact's name.
        artifact: String,
        /// Step index.
        step: usize,
        /// The ops of the step as generated.
        expected: String,
        /// The ops of the step as built.
        found: String,
    },
    /// A bad argument: an input or output index, a buffer of the wrong size.
    #[error("artifact {artifact}: {reason}")]
    Argument {
        /// The artifact's name.
        artifact: String,
        /// What is wrong and what was expected.
        reason: String,
    },
    /// A kernel failed at run time.
    #[error("artifact {artifact}: {error}")]
    Run {
        /// The artifact's name.
        artifact: String,
        /// The error.
        error: Box<RunError>,
    },
}

/// An operand of an artifact's graph, with its concrete dims (what the generated `graph()` calls).
pub fn operand(
    name: &str,
    dtype: DType,
    dims: &[usize],
    layout: nnrt_core::Layout,
    quant: nnrt_core::Quantization,
    data: Option<nnrt_core::ConstData>,
    is_variable: bool,
) -> nnrt_core::Operand {
    let mut o = nnrt_core::Operand::new(name, dtype, dims);
    o.is_variable = is_variable;
    o.layout = layout;
    o.quant = quant;
    o.data = data;
    o
}

/// An op of an artifact's graph.
pub fn op(kind: nnrt_core::OpKind, inputs: &[Option<u32>], outputs: &[u32]) -> nnrt_core::Operation {
    nnrt_core::Operation { kind, inputs: inputs.iter().map(|i| i.map(OperandId)).collect(), outputs: ids(outputs) }
}

/// Operand ids from their indices.
pub fn ids(list: &[u32]) -> Vec<OperandId> {
    list.iter().map(|&i| OperandId(i)).collect()
}

/// The bytes of a typed input (what the generated `set_<input>` functions pass on).
pub fn bytes_of<T: bytemuck::Pod>(data: &[T]) -> &[u8] {
    bytemuck::cast_slice(data)
}

/// The values of an output's bytes, copied out (any alignment).
pub fn values_of<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(std::mem::size_of::<T>()).map(bytemuck::pod_read_unaligned).collect()
}

/// A graph input or output as the artifact exposes it.
#[derive(Clone, Copy, Debug)]
pub struct Port {
    /// The tensor's name in the model.
    pub name: &'static str,
    /// Its operand in the artifact's graph.
    pub operand: u32,
    /// Element type.
    pub dtype: DType,
    /// Dims.
    pub dims: &'static [usize],
}

impl Port {
    /// Bytes of the tensor.
    pub fn byte_size(&self) -> usize {
        self.dims.iter().product::<usize>() * self.dtype.size()
    }
}

/// A block of weights packed when the artifact was compiled (in the parameters file after the
/// graph's constants): which packer made it, the facts its layout depends on, its size.
#[derive(Clone, Copy, Debug)]
pub struct Packed {
    /// The packer (`nnrt_backend_cpu::prepack::tag`).
    pub tag: u32,
    /// Instruction set or layout and dims.
    pub facts: [u64; 4],
    /// Bytes per element.
    pub elem: u32,
    /// Bytes of the block.
    pub bytes: usize,
}

/// What the generated code gives [`Artifact::new`]: everything nnrt decided at compile time.
pub struct Plan {
    /// The artifact's name (C prefix).
    pub name: &'static str,
    /// Threads of the kernel pool.
    pub threads: usize,
    /// Every operand's dims.
    pub dims: Vec<Vec<usize>>,
    /// For each op, its index in the model as loaded (errors name it).
    pub origin: Vec<OpId>,
    /// The ops of each step, in order, as nnrt's runtime grouped them.
    pub steps: &'static [&'static [u32]],
    /// The arena's size in bytes.
    pub arena_size: usize,
    /// Each operand's byte range in the arena (`None`: a constant, or fused away).
    pub slots: &'static [Option<(usize, usize)>],
    /// Graph inputs.
    pub inputs: &'static [Port],
    /// Graph outputs.
    pub outputs: &'static [Port],
    /// The packed weight blocks, in the order the steps' packers ask for them.
    pub packed: &'static [Packed],
    /// Index of the first packed block among the parameters file's constants.
    pub first_packed: usize,
}

/// A created artifact: its graph, its built steps and its arena.
pub struct Artifact {
    name: &'static str,
    graph: Subgraph,
    steps: Vec<AotStep>,
    arena: TensorArena,
    pool: nnrt_core::KernelPool,
    inputs: &'static [Port],
    outputs: &'static [Port],
    arena_size: usize,
    ran: bool,
    prepacked: nnrt_backend_cpu::prepack::ReplayStats,
    /// Keeps the parameters file mapped for the graph's constants.
    _params: Params,
}

impl Artifact {
    /// Builds the kernels of `plan.steps` over `graph` (whose constants borrow from `params`)
    /// with nnrt's CPU backend, checks they are the steps the artifact was generated with, and
    /// makes the arena.
    pub fn new(params: Params, graph: Subgraph, plan: Plan) -> Result<Artifact, Error> {
        let artifact = plan.name.to_string();
        let compile = |error| Error::Compile { artifact: artifact.clone(), error: Box::new(error) };
        let ids: Vec<OpId> = plan.steps.iter().flat_map(|s| s.iter().map(|&i| OpId(i))).collect();
        let config = Config::default();
        let ctx = CompileCtx { graph: &graph, shapes: &plan.dims, threads: plan.threads, config: &config, origin: &plan.origin };
        let pool = nnrt_core::KernelPool::new(plan.threads).map_err(|e| {
            compile(CompileError::Config { key: "threads".into(), value: plan.threads.to_string(), reason: e.to_string() })
        })?;
        let mut blocks = Vec::with_capacity(plan.packed.len());
        for (i, p) in plan.packed.iter().enumerate() {
            let key = nnrt_backend_cpu::prepack::BlockKey { tag: p.tag, facts: p.facts, elem: p.elem };
            blocks.push((key, params.constant(plan.first_packed + i, p.bytes)?));
        }
        let (steps, prepacked) = nnrt_backend_cpu::prepack::replay(blocks, || nnrt_backend_cpu::aot::steps(&ctx, &ids));
        let steps = steps.map_err(compile)?;
        let show = |ops: &[u32]| ops.iter().map(|&i| graph.ops.get(i as usize).map_or("?", |o| o.kind.name())).collect::<Vec<_>>().join("+");
        for (k, (built, want)) in steps.iter().zip(plan.steps).enumerate() {
            let got: Vec<u32> = built.ops().iter().map(|o| o.0).collect();
            if got != *want {
                return Err(Error::Steps { artifact, step: k, expected: show(want), found: show(&got) });
            }
        }
        if steps.len() != plan.steps.len() {
            let k = steps.len().min(plan.steps.len());
            return Err(Error::Steps { artifact, step: k, expected: format!("{} steps", plan.steps.len()), found: format!("{} steps", steps.len()) });
        }
        let slots: Vec<Option<Range<usize>>> = plan.slots.iter().map(|s| s.map(|(a, b)| a..b)).collect();
        let dtypes = graph.operands.iter().map(|o| o.dtype).collect();
        let arena = TensorArena::try_new(plan.arena_size, slots, plan.dims, dtypes, u64::MAX).map_err(compile)?;
        let (arena_size, name, inputs, outputs) = (plan.arena_size, plan.name, plan.inputs, plan.outputs);
        Ok(Artifact { name, graph, steps, arena, pool, inputs, outputs, arena_size, ran: false, prepacked, _params: params })
    }

    fn argument(&self, reason: String) -> Error {
        Error::Argument { artifact: self.name.to_string(), reason }
    }

    /// The graph inputs.
    pub fn inputs(&self) -> &'static [Port] {
        self.inputs
    }

    /// The graph outputs.
    pub fn outputs(&self) -> &'static [Port] {
        self.outputs
    }

    /// Copies `bytes` into input `index`; the length must be the input's byte size.
    pub fn set_input(&mut self, index: usize, bytes: &[u8]) -> Result<(), Error> {
        let port = *self.inputs.get(index).ok_or_else(|| self.argument(format!("input index {index} is out of range (the model has {} inputs)", self.inputs.len())))?;
        if bytes.len() != port.byte_size() {
            return Err(self.argument(format!("input {index} ('{}') takes {} bytes ({} {:?}), got {}", port.name, port.byte_size(), port.dtype, port.dims, bytes.len())));
        }
        let artifact = self.name;
        let dst = self.arena.bytes_mut(OperandId(port.operand));
        let dst = dst.ok_or_else(|| Error::Argument { artifact: artifact.into(), reason: format!("input {index} ('{}') has no arena slot", port.name) })?;
        dst.copy_from_slice(bytes);
        Ok(())
    }

    /// Runs every step in order on the artifact's thread pool.
    pub fn run(&mut self) -> Result<(), Error> {
        let Artifact { steps, arena, pool, name, .. } = self;
        pool.install(|| {
            for s in steps.iter_mut() {
                s.run(arena).map_err(|error| Error::Run { artifact: name.to_string(), error: Box::new(error) })?;
            }
            Ok::<(), Error>(())
        })?;
        self.ran = true;
        Ok(())
    }

    /// Of the weight blocks packed at compile time: how many this CPU took as they are (mapped),
    /// and how many were packed again at create (another instruction set).
    pub fn prepacked(&self) -> (usize, usize) {
        (self.prepacked.mapped, self.prepacked.mapped + self.prepacked.packed)
    }

    /// Whether [`Artifact::run`] has completed at least once.
    pub fn has_run(&self) -> bool {
        self.ran
    }

    /// The bytes of output `index` after [`Artifact::run`].
    pub fn output(&self, index: usize) -> Result<&[u8], Error> {
        if !self.ran {
            return Err(self.argument("no output yet: run the artifact first".into()));
        }
        let port = self.outputs.get(index).ok_or_else(|| self.argument(format!("output index {index} is out of range (the model has {} outputs)", self.outputs.len())))?;
        let id = OperandId(port.operand);
        match self.arena.bytes(id) {
            Some(b) => Ok(b),
            None => self.graph.operand(id).data.as_ref().map(|d| d.bytes()).ok_or_else(|| self.argument(format!("output {index} ('{}') has no storage", port.name))),
        }
    }

    /// The arena's size in bytes as planned (the runtime's plan for the same model).
    pub fn arena_size(&self) -> usize {
        self.arena_size
    }

    /// The steps, in order, with the ops each runs.
    pub fn steps(&self) -> impl Iterator<Item = (&str, Vec<OpId>)> {
        self.steps.iter().map(|s| (s.kind(), s.ops()))
    }
}
