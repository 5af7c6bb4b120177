//! # nnrt-core
//!
//! The heart of nnrt: the graph IR every loader produces ([`Model`], [`Subgraph`], [`Operand`],
//! [`Operation`] with typed [`OpKind`] parameters and typed ids), the op families ([`ops`]: one
//! module per family with its parameter types, names, arity, input slots and shape rules), shape
//! inference, validation, the [`Backend`] trait, the partitioner, the memory planner, the executor
//! ([`Prepared`]) and the typed errors of each stage.
//!
//! Shapes are inferred and memory planned at prepare. Tensors whose shapes depend on values
//! computed at run time are dynamic: the executor infers their shapes when the op producing them
//! runs, gives them storage of their own outside the static arena, and compiles that op for the
//! shapes met (see `dynamic.rs`); models without such tensors run exactly as planned.
//!
//! This crate knows nothing of file formats, SIMD or wgpu: loaders and backends depend on it,
//! never the reverse.

#![forbid(unsafe_code)]

mod arena;
mod cancel;
mod backend;
mod callee;
mod config;
pub mod control;
mod dtype;
mod dynamic;
mod error;
mod graph;
mod ids;
pub mod infer;
mod op;
mod operand;
pub mod ops;
pub mod partition;
pub mod passes;
mod plan;
mod prepared;
mod quant;
mod registry;
mod seq;
pub mod shape;
mod validate;

pub use cancel::CancelToken;
pub use arena::{cast, cast_mut, AlignedConst, InputSource, InputViews, OpIo, OutputViews, TensorArena, TensorMut, TensorRef};
pub use seq::Seq;
pub use backend::{Backend, CompileCtx, Executable, PlanHints, Support};
pub use config::{default_memory_limit, parse_bytes, parse_threads, Config, MAX_THREADS};
pub use dtype::DType;
pub use error::{CompileError, LoadError, RunError};
pub use graph::{Model, Numerics, Signature, Subgraph};
pub use ids::{OpId, OperandId, SubgraphId};
pub use infer::{infer_graph, infer_graph_with, infer_op, infer_op_at_run, Inferred};
pub use op::*;
pub use operand::{Blob, ConstData, Layout, Operand};
pub use plan::{plan, plan_for_threads, plan_static, MemoryPlan};
pub use nnrt_threads::{kernel_threads, par_blocks_mut, par_chunks_mut, par_for, par_map, par_rows_mut, BlockMut, Grid, KernelPool};
pub use prepared::Prepared;
pub use quant::Quantization;
pub use registry::OpRegistry;
pub use shape::{Dim, Shape};
pub use validate::{validate, validate_model};
