//! TOSA operators onto IR ops, one file per family: [`tensor`] (convolutions, pooling, MATMUL),
//! [`elementwise`] (activations, element-wise binary/unary ops, comparisons, reductions, CAST),
//! [`data`] (layout and gather), [`control`] (COND_IF, WHILE_LOOP), [`integer`] (RESCALE, TABLE),
//! [`fft`] (FFT2D, RFFT2D), [`variable`] (VARIABLE, VARIABLE_READ, VARIABLE_WRITE).
//!
//! A converter returns [`LoadError::UnsupportedOp`] (through [`Op::unsupported`]) for an
//! operator or a type combination nnrt does not map; the reader collects those so that one
//! error lists every missing operator of the graph.

mod control;
mod data;
mod elementwise;
mod fft;
mod integer;
mod tensor;
mod variable;

use nnrt_core::{LoadError, OperandId};

use super::block::{dtype_name, BlockBuilder};
use crate::generated::tosa;

/// TOSA's name of an operator, for errors.
pub(crate) fn op_name(op: tosa::Op) -> String {
    op.variant_name().map(str::to_string).unwrap_or_else(|| format!("operator {}", op.0))
}

/// One operator being converted: its kind, attribute table and the names it reads and writes.
pub(crate) struct Op<'a> {
    pub kind: tosa::Op,
    pub t: tosa::TosaOperator<'a>,
    pub inputs: Vec<&'a str>,
    pub outputs: Vec<&'a str>,
}

impl<'a> Op<'a> {
    pub fn new(t: tosa::TosaOperator<'a>) -> Self {
        let inputs = t.inputs().map(|v| v.iter().collect()).unwrap_or_default();
        let outputs = t.outputs().map(|v| v.iter().collect()).unwrap_or_default();
        Self { kind: t.op(), t, inputs, outputs }
    }

    pub fn name(&self) -> String {
        op_name(self.kind)
    }

    /// The error for an operator (or a type combination) nnrt does not map, naming the
    /// element types of its tensors.
    pub fn unsupported(&self, b: &BlockBuilder<'_, '_>, why: &str) -> LoadError {
        let types = |names: &[&str]| names.iter().map(|n| b.tosa_type(n).map_or_else(|_| "shape".to_string(), dtype_name)).collect::<Vec<_>>().join(", ");
        let detail = format!(" ({} -> {}; region '{}', operator {}){}", types(&self.inputs), types(&self.outputs), b.region.1, b.at.0, if why.is_empty() { String::new() } else { format!(": {why}") });
        LoadError::UnsupportedOp { path: b.c.path.to_string(), subgraph: b.region.0, index: b.at.0, op: self.name(), detail }
    }

    /// Input `i`'s name.
    pub fn input_name(&self, b: &BlockBuilder<'_, '_>, i: usize) -> Result<&'a str, LoadError> {
        self.inputs.get(i).copied().ok_or_else(|| b.err(format!("has {} inputs; input {i} is needed", self.inputs.len())))
    }

    /// Input `i`'s operand.
    pub fn input(&self, b: &BlockBuilder<'_, '_>, i: usize) -> Result<OperandId, LoadError> {
        b.tensor_id(self.input_name(b, i)?)
    }

    /// Input `i`'s TOSA element type.
    pub fn input_type(&self, b: &BlockBuilder<'_, '_>, i: usize) -> Result<tosa::DType, LoadError> {
        b.tosa_type(self.input_name(b, i)?)
    }

    /// Input `i` as a shape (a CONST_SHAPE result).
    pub fn shape_input(&self, b: &BlockBuilder<'_, '_>, i: usize) -> Result<Vec<i64>, LoadError> {
        b.shape(self.input_name(b, i)?).map(<[i64]>::to_vec)
    }

    /// Output `i`'s operand.
    pub fn output(&self, b: &BlockBuilder<'_, '_>, i: usize) -> Result<OperandId, LoadError> {
        let name = self.outputs.get(i).copied().ok_or_else(|| b.err(format!("has {} outputs; output {i} is needed", self.outputs.len())))?;
        b.tensor_id(name)
    }

    /// Every output's operand.
    pub fn all_outputs(&self, b: &BlockBuilder<'_, '_>) -> Result<Vec<OperandId>, LoadError> {
        self.outputs.iter().map(|n| b.tensor_id(n)).collect()
    }

    /// The attribute table, or an error naming what was expected.
    pub fn attr<T>(&self, b: &BlockBuilder<'_, '_>, got: Option<T>, what: &str) -> Result<T, LoadError> {
        got.ok_or_else(|| b.err(format!("has attribute {}, {what} expected", self.t.attribute_type().variant_name().unwrap_or("NONE"))))
    }
}

/// Whether `t` is a floating-point type.
pub(crate) fn is_float(t: tosa::DType) -> bool {
    matches!(t, tosa::DType::FP32 | tosa::DType::FP16 | tosa::DType::BF16)
}

/// Reads a list attribute of exactly `n` non-negative entries.
pub(crate) fn usizes(b: &BlockBuilder<'_, '_>, v: Option<flatbuffers::Vector<'_, i32>>, n: usize, what: &str) -> Result<Vec<usize>, LoadError> {
    let vals: Vec<i32> = v.map(|v| v.iter().collect()).unwrap_or_default();
    if vals.len() != n || vals.iter().any(|&x| x < 0) {
        return Err(b.err(format!("{what} is {vals:?}; {n} non-negative values are needed")));
    }
    Ok(vals.into_iter().map(|x| x as usize).collect())
}

/// Converts one operator into IR ops.
pub(crate) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    use tosa::Op as T;
    if variable::is_variable_op(o) {
        return variable::map(b, o);
    }
    variable::check_not_variable(b, o)?;
    match o.kind {
        // Constants live on their output tensor (CONST) or in the block's shapes (CONST_SHAPE).
        T::CONST => {
            let out = o.output(b, 0)?;
            if b.g.operand(out).data.is_none() {
                return Err(b.err(format!("CONST's output '{}' holds no data", o.outputs[0])));
            }
            Ok(())
        }
        T::CONST_SHAPE => o.outputs.iter().try_for_each(|n| b.shape(n).map(|_| ())),
        T::CONV2D | T::CONV3D | T::DEPTHWISE_CONV2D | T::TRANSPOSE_CONV2D | T::MATMUL | T::MAX_POOL2D | T::AVG_POOL2D => tensor::map(b, o),
        T::COND_IF | T::WHILE_LOOP => control::map(b, o),
        T::FFT2D | T::RFFT2D => fft::map(b, o),
        T::RESCALE | T::TABLE | T::LOGICAL_LEFT_SHIFT | T::LOGICAL_RIGHT_SHIFT | T::ARITHMETIC_RIGHT_SHIFT | T::CLZ | T::INTDIV => integer::map(b, o),
        T::BITWISE_AND | T::BITWISE_OR | T::BITWISE_XOR | T::BITWISE_NOT => integer::bitwise(b, o),
        T::CONCAT | T::PAD | T::RESHAPE | T::REVERSE | T::SLICE | T::TILE | T::TRANSPOSE | T::GATHER | T::SCATTER | T::RESIZE | T::IDENTITY => data::map(b, o),
        _ => elementwise::map(b, o),
    }
}
