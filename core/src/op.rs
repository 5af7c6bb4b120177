//! Operations: an op kind with typed parameters, and its input and output operands.

use std::fmt;

use crate::{OperandId, SubgraphId};

/// A fused activation applied to an op's output (TFLite's `ActivationFunctionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Activation {
    /// Identity.
    #[default]
    None,
    /// max(x, 0).
    Relu,
    /// clamp(x, -1, 1).
    ReluN1To1,
    /// clamp(x, 0, 6).
    Relu6,
    /// tanh(x).
    Tanh,
    /// sign bit (TFLite's `SIGN_BIT`, used by no known converter).
    SignBit,
}

/// How a windowed op pads its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Padding {
    /// Output size `ceil(in / stride)`, padding split with the extra cell at the end.
    Same,
    /// No padding: only windows fully inside the input.
    Valid,
    /// Explicit cells before and after each spatial dim: `[top, bottom, left, right]`.
    Explicit([usize; 4]),
}

/// Parameters of 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv2D {
    /// Padding scheme.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Dilation along height, width.
    pub dilation: [usize; 2],
    /// Fused activation.
    pub act: Activation,
}

/// Parameters of depthwise 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DepthwiseConv2D {
    /// Padding scheme.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Dilation along height, width.
    pub dilation: [usize; 2],
    /// Output channels per input channel (0 in a model means "infer from the filter").
    pub depth_multiplier: usize,
    /// Fused activation.
    pub act: Activation,
}

/// Parameters of a fully connected layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FullyConnected {
    /// Fused activation.
    pub act: Activation,
    /// Keep the input's leading dims in the output instead of flattening them to one.
    pub keep_num_dims: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// The kind of a pooling window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Average of the in-bounds cells.
    Average,
    /// Maximum of the in-bounds cells.
    Max,
    /// Square root of the mean of squares.
    L2,
}

/// Parameters of 2-D pooling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pool2D {
    /// Which reduction.
    pub kind: PoolKind,
    /// Padding scheme.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Window height, width.
    pub filter: [usize; 2],
    /// Fused activation.
    pub act: Activation,
}

/// Element-wise binary operations (NumPy broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
}

/// Element-wise unary operations and parameterless activations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// max(x, 0)
    Relu,
    /// clamp(x, 0, 6)
    Relu6,
    /// clamp(x, -1, 1)
    ReluN1To1,
    /// tanh(x)
    Tanh,
    /// 1 / (1 + exp(-x))
    Logistic,
    /// x * relu6(x + 3) / 6
    HardSwish,
    /// x if x >= 0 else alpha * x
    LeakyRelu(f32),
}

/// Reductions over axes given by the op's second input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Arithmetic mean.
    Mean,
    /// Sum.
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
}

/// How MIRROR_PAD mirrors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MirrorMode {
    /// Mirror without repeating the edge.
    Reflect,
    /// Mirror repeating the edge.
    Symmetric,
}

/// What an operation computes, with its typed parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// 2-D convolution: input NHWC, filter OHWI, optional bias.
    Conv2D(Conv2D),
    /// Depthwise 2-D convolution: input NHWC, filter [1, H, W, C*multiplier], optional bias.
    DepthwiseConv2D(DepthwiseConv2D),
    /// Fully connected: input [.., K], weights [N, K], optional bias [N].
    FullyConnected(FullyConnected),
    /// 2-D pooling over NHWC.
    Pool2D(Pool2D),
    /// Element-wise binary op with a fused activation.
    Binary {
        /// Which operation.
        op: BinaryOp,
        /// Fused activation.
        act: Activation,
    },
    /// Element-wise unary op or activation.
    Unary(UnaryOp),
    /// Reduction over the axes in input 1.
    Reduce {
        /// Which reduction.
        op: ReduceOp,
        /// Keep reduced dims as size 1.
        keep_dims: bool,
    },
    /// Softmax over the last axis: exp(beta * x) / sum.
    Softmax {
        /// Inverse temperature.
        beta: f32,
    },
    /// Concatenation along `axis` (negative counts from the end).
    Concatenation {
        /// The axis.
        axis: i32,
        /// Fused activation.
        act: Activation,
    },
    /// Reshape to the shape in input 1, or in `new_shape` when input 1 is absent.
    Reshape {
        /// The target shape from the op's options (may hold one -1).
        new_shape: Option<Vec<i32>>,
    },
    /// Permutes dims by the permutation in input 1.
    Transpose,
    /// Pads with zeros (input 1: paddings [rank, 2]) or, when input 2 is given, with that value.
    Pad,
    /// Pads by mirroring (input 1: paddings [rank, 2]).
    MirrorPad(MirrorMode),
    /// Converts to float: from f16, or from a quantized integer type.
    Dequantize,
    /// Converts float (or another quantized type) to a quantized integer type.
    Quantize,
    /// A custom operator resolved by name at prepare.
    Custom {
        /// The custom code from the model.
        name: String,
        /// Option bytes, passed to the kernel as they are.
        options: Vec<u8>,
    },
    /// Calls `then_branch` or `else_branch` on inputs 1.. depending on the bool input 0.
    If {
        /// Subgraph run when the condition is true.
        then_branch: SubgraphId,
        /// Subgraph run when the condition is false.
        else_branch: SubgraphId,
    },
    /// Runs `body` while `cond` returns true.
    While {
        /// Condition subgraph.
        cond: SubgraphId,
        /// Body subgraph.
        body: SubgraphId,
    },
}

impl OpKind {
    /// The op's name as users spell it in `OP_BACKEND_<Name>` and as errors print it.
    pub fn name(&self) -> &str {
        match self {
            OpKind::Conv2D(_) => "Conv2D",
            OpKind::DepthwiseConv2D(_) => "DepthwiseConv2D",
            OpKind::FullyConnected(_) => "FullyConnected",
            OpKind::Pool2D(p) => match p.kind {
                PoolKind::Average => "AveragePool2D",
                PoolKind::Max => "MaxPool2D",
                PoolKind::L2 => "L2Pool2D",
            },
            OpKind::Binary { op, .. } => match op {
                BinaryOp::Add => "Add",
                BinaryOp::Sub => "Sub",
                BinaryOp::Mul => "Mul",
                BinaryOp::Div => "Div",
            },
            OpKind::Unary(u) => match u {
                UnaryOp::Relu => "Relu",
                UnaryOp::Relu6 => "Relu6",
                UnaryOp::ReluN1To1 => "ReluN1To1",
                UnaryOp::Tanh => "Tanh",
                UnaryOp::Logistic => "Logistic",
                UnaryOp::HardSwish => "HardSwish",
                UnaryOp::LeakyRelu(_) => "LeakyRelu",
            },
            OpKind::Reduce { op, .. } => match op {
                ReduceOp::Mean => "Mean",
                ReduceOp::Sum => "Sum",
                ReduceOp::Max => "ReduceMax",
                ReduceOp::Min => "ReduceMin",
                ReduceOp::Prod => "ReduceProd",
            },
            OpKind::Softmax { .. } => "Softmax",
            OpKind::Concatenation { .. } => "Concatenation",
            OpKind::Reshape { .. } => "Reshape",
            OpKind::Transpose => "Transpose",
            OpKind::Pad => "Pad",
            OpKind::MirrorPad(_) => "MirrorPad",
            OpKind::Dequantize => "Dequantize",
            OpKind::Quantize => "Quantize",
            OpKind::Custom { name, .. } => name,
            OpKind::If { .. } => "If",
            OpKind::While { .. } => "While",
        }
    }
}

/// One operation of a subgraph.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// What it computes.
    pub kind: OpKind,
    /// Input operands; `None` marks an optional input the model leaves out (e.g. no bias).
    pub inputs: Vec<Option<OperandId>>,
    /// Output operands.
    pub outputs: Vec<OperandId>,
}

impl Operation {
    /// Input `i` when present.
    pub fn input(&self, i: usize) -> Option<OperandId> {
        self.inputs.get(i).copied().flatten()
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.kind.name())?;
        for (i, x) in self.inputs.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match x {
                Some(id) => write!(f, "{id}")?,
                None => f.write_str("-")?,
            }
        }
        f.write_str(") -> ")?;
        for (i, x) in self.outputs.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{x}")?;
        }
        Ok(())
    }
}
