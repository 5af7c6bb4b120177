//! Subgraphs and models.

use crate::{CompileError, DType, OpId, Operand, OperandId, Operation, SubgraphId};

/// A graph of operations over operands, with its inputs and outputs.
#[derive(Clone, Debug, Default)]
pub struct Subgraph {
    /// Name from the model file.
    pub name: String,
    /// Every operand, indexed by [`OperandId`].
    pub operands: Vec<Operand>,
    /// Operations in a valid execution order, indexed by [`OpId`].
    pub ops: Vec<Operation>,
    /// Graph inputs, in the order callers index them.
    pub inputs: Vec<OperandId>,
    /// Graph outputs, in the order callers index them.
    pub outputs: Vec<OperandId>,
    /// Whose arithmetic the quantized ops follow: the runtime the model was made for.
    pub numerics: Numerics,
}

/// Whose integer arithmetic a subgraph's quantized ops reproduce where runtimes differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Numerics {
    /// TFLite's reference kernels: QUANTIZE divides and rounds half away from zero; int8
    /// convolutions requantize with fixed-point multipliers (`MultiplyByQuantizedMultiplier`).
    #[default]
    TfLite,
    /// ExecuTorch's (portable `quantize_per_tensor` and XNNPACK alike): quantizing multiplies by
    /// the float reciprocal of the scale and rounds half to even; int8 convolutions and fully
    /// connected layers requantize their int32 sums in float (XNNPACK's fp32 requantization:
    /// `acc * (input_scale * weight_scale / output_scale)` rounded half to even).
    ExecuTorch,
}

impl Subgraph {
    /// The operand `id`. Panics on a bad id: ids are checked by [`crate::validate`] first.
    pub fn operand(&self, id: OperandId) -> &Operand {
        &self.operands[id.index()]
    }

    /// The operation `id`.
    pub fn op(&self, id: OpId) -> &Operation {
        &self.ops[id.index()]
    }

    /// Adds an operand and returns its id.
    pub fn add_operand(&mut self, operand: Operand) -> OperandId {
        self.operands.push(operand);
        OperandId::new(self.operands.len() - 1)
    }

    /// Adds an operation at the end and returns its id.
    pub fn add_op(&mut self, op: Operation) -> OpId {
        self.ops.push(op);
        OpId::new(self.ops.len() - 1)
    }

    /// Reads an integer constant (i32 or i64) as `i64`s; the error names `op` and the operand.
    pub fn const_ints(&self, op: OpId, id: OperandId) -> Result<Vec<i64>, CompileError> {
        let operand = self.operand(id);
        let bad = |reason: String| CompileError::InvalidOperand {
            op,
            kind: self.op(op).kind.name().to_string(),
            operand: id,
            reason,
        };
        let data = operand
            .data
            .as_ref()
            .ok_or_else(|| bad("must be a constant tensor (its values decide the output shape)".into()))?;
        let bytes = data.bytes();
        match operand.dtype {
            DType::I32 => Ok(bytes
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64)
                .collect()),
            DType::I64 => Ok(bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect()),
            other => Err(bad(format!("must hold int32 or int64 values, not {other}"))),
        }
    }
}

/// A signature: a named entry point mapping names to a subgraph's inputs and outputs.
#[derive(Clone, Debug, Default)]
pub struct Signature {
    /// The signature key (e.g. `serving_default`).
    pub key: String,
    /// The subgraph it runs.
    pub subgraph: SubgraphId,
    /// (name, operand) for each input.
    pub inputs: Vec<(String, OperandId)>,
    /// (name, operand) for each output.
    pub outputs: Vec<(String, OperandId)>,
}

/// A loaded model: subgraphs (the first is the entry) and signatures.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// All subgraphs; `^0` is the entry, control-flow ops name the others.
    pub subgraphs: Vec<Subgraph>,
    /// Named entry points, when the file declares some.
    pub signatures: Vec<Signature>,
    /// Where the model came from (a path), for error messages.
    pub source: String,
}

impl Model {
    /// The entry subgraph. Panics if the model has none (loaders reject such files).
    pub fn entry(&self) -> &Subgraph {
        &self.subgraphs[0]
    }

    /// The subgraph `id`, if it exists.
    pub fn subgraph(&self, id: SubgraphId) -> Option<&Subgraph> {
        self.subgraphs.get(id.index())
    }
}
