//! Typed errors, one per stage. Each names the file, op or tensor involved and what was expected.

use thiserror::Error;

use crate::{OpId, OperandId};

/// A model or package could not be loaded.
#[derive(Debug, Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The path involved.
        path: String,
        /// The OS error. Its text is part of this error's message, so it is not also the
        /// error's `source()`: a printer of error chains (`anyhow`'s `{:#}`) would repeat it.
        error: std::io::Error,
    },
    /// The file is not a well-formed model of its format.
    #[error("{path}: not a valid {format} model: {reason}")]
    Malformed {
        /// The path involved.
        path: String,
        /// The format expected (`TFLite`, `Circle`, …).
        format: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A well-formed model uses an operator nnrt does not implement.
    #[error("{path}: operator {op} (subgraph {subgraph}, op {index}) is not supported by nnrt{detail}")]
    UnsupportedOp {
        /// The path involved.
        path: String,
        /// Subgraph index.
        subgraph: usize,
        /// Op index within the subgraph.
        index: usize,
        /// The operator's name.
        op: String,
        /// Extra detail (an option value nnrt cannot honour, …), starting with ": " when present.
        detail: String,
    },
    /// A tensor type nnrt does not support.
    #[error("{path}: tensor {tensor} ('{name}') has type {dtype}, which nnrt does not support")]
    UnsupportedType {
        /// The path involved.
        path: String,
        /// Tensor index.
        tensor: usize,
        /// Tensor name.
        name: String,
        /// The type's name in the file's format.
        dtype: String,
    },
    /// An nnpackage is malformed (MANIFEST missing or invalid, model missing, unknown type).
    #[error("{path}: {reason}")]
    Package {
        /// The package path (or the file inside it).
        path: String,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// The path's format is not recognised.
    #[error("{path}: unknown model format ({reason}); expected {expected}")]
    UnknownFormat {
        /// The path involved.
        path: String,
        /// What was found.
        reason: String,
        /// What nnrt recognises (packages and each model format the loaders know).
        expected: String,
    },
    /// The file is of a format nnrt recognises but has no reader for yet.
    #[error("{path}: {format}: not supported yet")]
    UnsupportedFormat {
        /// The path involved.
        path: String,
        /// The format, with its file identifier (e.g. `TOSA flatbuffer (TOSA)`).
        format: String,
    },
}

/// A loaded model could not be prepared (validation, partitioning, kernel compilation).
#[derive(Debug, Error)]
pub enum CompileError {
    /// An op refers to an operand that does not exist.
    #[error("op {op} ({kind}): refers to operand {operand}, but the subgraph has {count} operands")]
    BadOperandIndex {
        /// The op.
        op: OpId,
        /// Its kind.
        kind: String,
        /// The bad index.
        operand: OperandId,
        /// How many operands exist.
        count: usize,
    },
    /// A graph input or output refers to an operand that does not exist.
    #[error("graph {what} {operand} does not exist (the subgraph has {count} operands)")]
    BadGraphIo {
        /// "input" or "output".
        what: &'static str,
        /// The bad index.
        operand: OperandId,
        /// How many operands exist.
        count: usize,
    },
    /// An operand of an op is unfit for it (type, rank, arity, missing constant, …).
    #[error("op {op} ({kind}): operand {operand}: {reason}")]
    InvalidOperand {
        /// The op.
        op: OpId,
        /// Its kind.
        kind: String,
        /// The operand.
        operand: OperandId,
        /// What is wrong and what was expected.
        reason: String,
    },
    /// An op's shape or options are inconsistent.
    #[error("op {op} ({kind}): {reason}")]
    InvalidOp {
        /// The op.
        op: OpId,
        /// Its kind.
        kind: String,
        /// What is wrong and what was expected.
        reason: String,
    },
    /// An op's output shape depends on the values of a tensor computed at run time, where such
    /// shapes are not allowed (shape inference outside a prepared session; a prepared session
    /// makes the outputs dynamic instead).
    #[error("op {op} ({kind}): operand {operand}: its values decide the output shape and are known only at run time")]
    ValueDependent {
        /// The op.
        op: OpId,
        /// Its kind.
        kind: String,
        /// The operand whose values are needed.
        operand: OperandId,
    },
    /// The shape computed for an output disagrees with the one the model declares.
    #[error("op {op} ({kind}): output {operand} has shape {got} but the model declares {declared}")]
    ShapeMismatch {
        /// The op.
        op: OpId,
        /// Its kind.
        kind: String,
        /// The output operand.
        operand: OperandId,
        /// The shape inferred.
        got: String,
        /// The shape the model declares.
        declared: String,
    },
    /// A constant operand's data does not match its type and shape.
    #[error("operand {operand} ('{name}'): constant data has {got} bytes, expected {expected} for {dtype} {shape}")]
    BadConstant {
        /// The operand.
        operand: OperandId,
        /// Its name.
        name: String,
        /// Bytes present.
        got: usize,
        /// Bytes expected.
        expected: usize,
        /// Its type.
        dtype: String,
        /// Its shape.
        shape: String,
    },
    /// An operand is read before any op writes it and is neither an input nor a constant.
    #[error("operand {operand} ('{name}') is read by op {op} but never written: not an input, a constant or an earlier op's output")]
    Unwritten {
        /// The operand.
        operand: OperandId,
        /// Its name.
        name: String,
        /// The first op that reads it.
        op: OpId,
    },
    /// No available backend can run an op.
    #[error("op {op} ({kind}): no backend can run it: {reasons}")]
    Unsupported {
        /// The op.
        op: OpId,
        /// Its kind.
        kind: String,
        /// Each backend's reason, `backend: reason; …`.
        reasons: String,
    },
    /// A custom op has no registered kernel.
    #[error("op {op}: custom operator '{name}' has no kernel; register one or load a plugin that provides it")]
    CustomOpNotFound {
        /// The op.
        op: OpId,
        /// The custom op's name.
        name: String,
    },
    /// An operand's quantization parameters are unusable.
    #[error("operand {operand} ('{name}'): invalid quantization: {reason}")]
    InvalidQuantization {
        /// The operand.
        operand: OperandId,
        /// Its name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A configuration value is invalid.
    #[error("configuration {key}={value}: {reason}")]
    Config {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is expected.
        reason: String,
    },
    /// Preparing would need more memory than the session may use (`MEMORY_LIMIT`) or than the
    /// host could give.
    #[error("{what}: needs {bytes} bytes, {reason}")]
    OutOfMemory {
        /// What needed the memory (a tensor with its shape, or the arena).
        what: String,
        /// How many bytes (saturated at `u64::MAX` when the size overflows).
        bytes: u64,
        /// Over the limit, or the allocation failed.
        reason: String,
    },
    /// An input shape set by the caller does not fit the model.
    #[error("input {index} ('{name}'): shape {got} does not fit the model's {expected}")]
    InputShape {
        /// Input index.
        index: usize,
        /// Its name.
        name: String,
        /// The shape given.
        got: String,
        /// The declared shape.
        expected: String,
    },
}

/// A prepared model failed while running.
#[derive(Debug, Error)]
pub enum RunError {
    /// A caller's buffer has the wrong size.
    #[error("{what} {index} ('{name}'): buffer has {got} bytes, expected {expected} ({dtype} {shape})")]
    BufferSize {
        /// "input" or "output".
        what: &'static str,
        /// The I/O index.
        index: usize,
        /// The tensor's name.
        name: String,
        /// Bytes given.
        got: usize,
        /// Bytes expected.
        expected: usize,
        /// The tensor's type.
        dtype: String,
        /// The tensor's shape.
        shape: String,
    },
    /// An I/O index is out of range.
    #[error("{what} index {index} is out of range: the model has {count}")]
    BadIndex {
        /// "input" or "output".
        what: &'static str,
        /// The index given.
        index: usize,
        /// How many exist.
        count: usize,
    },
    /// A tensor sized at run time would need more memory than the session may use
    /// (`MEMORY_LIMIT`) or than the host could give.
    #[error("op {op}: output {operand} of shape {shape} needs {bytes} bytes, {reason}")]
    OutOfMemory {
        /// The op whose output it is.
        op: OpId,
        /// The tensor.
        operand: crate::OperandId,
        /// Its shape.
        shape: String,
        /// How many bytes (saturated at `u64::MAX` when the size overflows).
        bytes: u64,
        /// Over the limit, or the allocation failed.
        reason: String,
    },
    /// A run was cancelled from another thread ([`crate::CancelToken::cancel`]).
    #[error("run cancelled{detail}")]
    Cancelled {
        /// Where it stopped (e.g. " in op @3 (While) after 12 iterations"), or empty.
        detail: String,
    },
    /// A kernel failed.
    #[error("op {op} ({kind}): {reason}")]
    Kernel {
        /// The op.
        op: OpId,
        /// Its kind.
        kind: String,
        /// What failed.
        reason: String,
    },
}
