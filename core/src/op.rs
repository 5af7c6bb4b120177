//! Operations: an op kind with typed parameters, and its input and output operands.
//!
//! [`OpKind`] is one flat enum that every consumer matches on. Each variant belongs to a
//! [`Family`] ([`OpKind::family`], the one list of that mapping); the family's module in
//! [`crate::ops`] holds the op's parameter types, name, arity, input slots and shape rule.

use std::fmt;

pub use crate::ops::arith::{BitwiseOp, IntBitsOp};
pub use crate::ops::conv::{Conv2D, Conv3D, DepthwiseConv2D, Padding, TransposeConv, TransposeConvPadded};
pub use crate::ops::convert::{DynamicQuantize, QParamsRule, Rescale};
pub use crate::ops::data::MirrorMode;
pub use crate::ops::elementwise::{BinaryOp, UnaryOp};
pub use crate::ops::logic::{CompareOp, LogicalOp};
pub use crate::ops::lstm::{BidirectionalLstm, SequenceLstm};
pub use crate::ops::matmul::FullyConnected;
pub use crate::ops::normalize::LocalResponseNorm;
pub use crate::ops::pool::{Pool2D, PoolKind};
pub use crate::ops::reduce::ReduceOp;
pub use crate::ops::rnn::{Rnn, Svdf};
pub use crate::ops::scatter::SegmentOp;
pub use crate::ops::slice::StridedSlice;
pub use crate::ops::spatial::{Resize, ResizeMode, ResizeScaled};
pub use crate::ops::{Activation, Family};
use crate::{OperandId, SubgraphId};

/// What an operation computes, with its typed parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// 2-D convolution: input NHWC, filter OHWI, optional bias; inputs 3 and 4, when present,
    /// are int8 zero points of the plain-integer form (int32 sums, TOSA).
    Conv2D(Conv2D),
    /// 3-D convolution; inputs: input, filter, optional bias.
    Conv3D(Conv3D),
    /// Transposed 3-D convolution (CONV_3D_TRANSPOSE); inputs: int32 output shape, filter
    /// `[k_d, k_h, k_w, out_c, in_c]`, input, optional bias. The padding is that of a
    /// convolution from the output back to the input.
    Conv3DTranspose(Conv3D),
    /// Depthwise 2-D convolution: input NHWC, filter [1, H, W, C*multiplier], optional bias;
    /// optional int8 zero points as inputs 3 and 4 (the plain-integer form, as for Conv2D).
    DepthwiseConv2D(DepthwiseConv2D),
    /// Fully connected: input `[.., K]`, weights `[N, K]`, optional bias `[N]`.
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
    /// Reads a variable (TOSA's VARIABLE_READ): input 0 the variable tensor (an operand with
    /// `is_variable`, state kept across runs), input 1 its bool `[1]` written flag (also a
    /// variable), input 2 (optional) a constant initial value. Output 0 gets the variable's value
    /// once it has been written, before that the initial value; a variable read before any write
    /// and without an initial value fails at run time.
    VariableRead,
    /// Writes a variable (TOSA's VARIABLE_WRITE): input 0 the value, input 1 the variable tensor,
    /// input 2 its written flag; no outputs. The kernel updates both variables in place, in
    /// the op's place in the graph's order.
    VariableWrite,
    /// Converts to float: from f16, or from a quantized integer type.
    Dequantize,
    /// Converts float (or another quantized type) to a quantized integer type.
    Quantize,
    /// Transposed convolution: input 0 output shape (int), 1 filter OHWI, 2 input NHWC, 3 bias.
    TransposeConv(TransposeConv),
    /// TOSA TRANSPOSE_CONV2D: input NHWC, filter OHWI, bias, and int8 / int16 zero points as
    /// inputs 3 and 4 in the plain-integer form; the output size follows from `out_pad`.
    TransposeConvPadded(TransposeConvPadded),
    /// Batched matrix product `x @ y` with broadcast batch dims; inputs 2 and 3, when present,
    /// are int8 zero points of the plain-integer form (int8 x int8 to int32, TOSA MATMUL).
    BatchMatMul {
        /// Transpose the last two dims of x.
        adj_x: bool,
        /// Transpose the last two dims of y.
        adj_y: bool,
    },
    /// Element-wise comparison producing bools.
    Compare(CompareOp),
    /// Element-wise logical and / or.
    Logical(LogicalOp),
    /// x >= 0 ? x : alpha * x, alpha (input 1) broadcast against x.
    Prelu,
    /// Index of the maximum (`max`) or minimum along the axis in input 1.
    ArgMinMax {
        /// ARG_MAX when true, ARG_MIN otherwise.
        max: bool,
    },
    /// log(softmax(x)) over the last axis.
    LogSoftmax,
    /// x / ‖x‖₂ over the last axis.
    L2Normalization {
        /// Fused activation.
        act: Activation,
    },
    /// Splits input 1 into `num_splits` equal parts along the axis in input 0.
    Split {
        /// Number of outputs.
        num_splits: usize,
    },
    /// Splits input 0 along the axis in input 2 into parts of the sizes in input 1.
    SplitV {
        /// Number of outputs.
        num_splits: usize,
    },
    /// Stacks the inputs along a new `axis`.
    Pack {
        /// Position of the new dim (negative counts from the end of the output).
        axis: i32,
        /// Number of inputs.
        count: usize,
    },
    /// Unstacks input 0 along `axis` into `num` outputs.
    Unpack {
        /// The dim removed.
        axis: i32,
        /// Number of outputs.
        num: usize,
    },
    /// Removes dims of size 1 (those in `axes`, or all when empty).
    Squeeze {
        /// Dims to remove.
        axes: Vec<i32>,
    },
    /// Inserts a dim of size 1 at the axis in input 1.
    ExpandDims,
    /// Extracts `size` (input 2) elements from `begin` (input 1) per dim; size -1 means to the end.
    Slice,
    /// NumPy-style strided slice: inputs begin, end, strides.
    StridedSlice(StridedSlice),
    /// Gathers slices of input 0 along `axis` at the indices in input 1.
    Gather {
        /// The dim indexed.
        axis: i32,
        /// Leading dims shared by params and indices.
        batch_dims: i32,
    },
    /// Gathers slices of input 0 at the index tuples in input 1's last dim.
    GatherNd,
    /// Resizes NHWC images to the size in input 1.
    Resize(Resize),
    /// TOSA RESIZE: NHWC images sampled at rational positions (scale, offset, border).
    ResizeScaled(ResizeScaled),
    /// Repeats input 0 the number of times in input 1 along each dim.
    Tile,
    /// DILATE: the input's elements spread apart by a dilation per dim, the gaps holding a
    /// padding value (inputs: data, int32 dilations, padding value).
    Dilate,
    /// Moves `block`×`block` spatial blocks into channels.
    SpaceToDepth {
        /// Block edge.
        block: usize,
    },
    /// Moves channels into `block`×`block` spatial blocks.
    DepthToSpace {
        /// Block edge.
        block: usize,
    },
    /// Inverse of SpaceToBatchNd: input 1 block shape, input 2 crops.
    BatchToSpaceNd,
    /// Pads spatial dims (input 2) and moves blocks (input 1) into the batch dim.
    SpaceToBatchNd,
    /// Cumulative sum along the axis in input 1.
    Cumsum {
        /// Exclude the current element.
        exclusive: bool,
        /// Sum from the end.
        reverse: bool,
    },
    /// Reverses input 0 along the axes in input 1.
    ReverseV2,
    /// Converts each element to the output's type.
    Cast,
    /// TOSA MUL on plain integers (inputs a, b, shift; a and b broadcast): int8 / int16
    /// operands give their int32 products; int32 operands give `(a * b + 2^(shift-1)) >> shift`
    /// computed in 64 bits, or the low 32 bits of the product when the shift is 0. The shift
    /// is one constant int8 in 0..=63 (0 unless int32).
    IntMul,
    /// TOSA's integer bit ops on plain int8 / int16 / int32 (one type in and out):
    /// LOGICAL_LEFT_SHIFT, ARITHMETIC_RIGHT_SHIFT (with its optional rounding) on two
    /// broadcast inputs, CLZ (int32) on one.
    IntBits(IntBitsOp),
    /// TOSA TABLE (inputs x, constant table): int8 x reads `table[x + 128]` of 256 int8
    /// entries; int16 x gives an int32 interpolated between two of 513 int16 entries
    /// (`(table[i] << 7) + (table[i + 1] - table[i]) * (x & 0x7f)`, `i = (x + 32768) >> 7`).
    Table,
    /// Integer rescaling with TOSA RESCALE's exact arithmetic (`apply_scale_32` /
    /// `apply_scale_16`): inputs x, multiplier (int32, or int16 without `scale32`), shift (int8),
    /// input zero point, output zero point; the last four are constants, one value each or one
    /// per channel of x's last dim.
    Rescale(Rescale),
    /// `cond ? x : y` element-wise (inputs cond, x, y). V1 also accepts a rank-1 condition that
    /// selects whole rows; V2 broadcasts all three.
    Select {
        /// SELECT_V2 (broadcasting).
        v2: bool,
    },
    /// A tensor of the dims in input 0 filled with the scalar input 1.
    Fill,
    /// start, start + delta, … below limit (inputs start, limit, delta).
    Range,
    /// The dims of input 0, as int32 or int64.
    Shape,
    /// The rank of input 0, as an int32 scalar.
    Rank,
    /// Zeros shaped like input 0.
    ZerosLike,
    /// Ones shaped like input 0.
    OnesLike,
    /// One-hot encoding: inputs indices, depth, on value, off value.
    OneHot {
        /// Where the new dim goes (-1: last).
        axis: i32,
    },
    /// The `k` (input 1) largest values of the last dim and their indices.
    TopKV2,
    /// A float LSTM layer over a sequence; see [`SequenceLstm`].
    UnidirectionalSequenceLstm(SequenceLstm),
    /// Element-wise sum of all inputs (same shapes).
    AddN,
    /// Input 0 broadcast to the shape in input 1.
    BroadcastTo,
    /// The broadcast of the two shapes in inputs 0 and 1.
    BroadcastArgs,
    /// Rows of input 1 at the int32 indices in input 0 (dequantized when the output is float).
    EmbeddingLookup,
    /// Local response normalization over the last dim.
    LocalResponseNorm(LocalResponseNorm),
    /// atan2(y, x) element-wise (inputs y, x of one shape).
    Atan2,
    /// Bitwise XOR or right shift, with broadcasting.
    Bitwise(BitwiseOp),
    /// A zero tensor of the shape in input 2 with input 1's updates added at the index tuples
    /// in input 0.
    ScatterNd,
    /// TOSA SCATTER: input 0 `[N, K, C]` with rows `input1[n, w]` of each batch replaced by
    /// input 2's `[n, w, :]`.
    ScatterRows,
    /// The int64 coordinates of the true (non-zero) elements of input 0, one row each.
    Where,
    /// Sums of the rows of input 0 per sorted segment id in input 1.
    SegmentSum,
    /// Combines the slices of input 0 per segment id in input 1 into `num_segments` (input 2) rows.
    UnsortedSegment(SegmentOp),
    /// A batch of diagonal matrices from the last dim of input 0.
    MatrixDiag,
    /// Input 0 with the main diagonal of its innermost matrices replaced by input 1.
    MatrixSetDiag,
    /// Reverses the first `seq_lengths[b]` (input 1) elements along `seq_dim` of each batch `b`.
    ReverseSequence {
        /// The dim partially reversed.
        seq_dim: i32,
        /// The dim indexing `seq_lengths`.
        batch_dim: i32,
    },
    /// A dense tensor (shape input 1) of the default value (input 3) with values (input 2) at
    /// the indices in input 0.
    SparseToDense {
        /// Check that indices are sorted and unique.
        validate_indices: bool,
    },
    /// Input 0 with input 1 written at the start indices in input 2 (clamped to fit).
    DynamicUpdateSlice,
    /// Greedy non-max suppression of boxes (input 0) by score (input 1): inputs 2 max outputs,
    /// 3 IoU threshold, 4 score threshold, and for V5 5 soft-NMS sigma.
    NonMaxSuppression {
        /// V5: soft-NMS sigma input and a selected-scores output.
        v5: bool,
    },
    /// One step of a basic RNN cell; see [`Rnn`].
    Rnn(Rnn),
    /// A basic RNN over a sequence; see [`Rnn`].
    SequenceRnn(Rnn),
    /// Singular value decomposition filter; see [`Svdf`].
    Svdf(Svdf),
    /// A bidirectional float LSTM over a sequence; see [`BidirectionalLstm`].
    BidirectionalSequenceLstm(BidirectionalLstm),
    /// The distinct values of 1-D input 0 in order of appearance, and each element's index into them.
    Unique,
    /// The index of the bucket each element falls in.
    Bucketize {
        /// Sorted bucket boundaries.
        boundaries: Vec<f32>,
    },
    /// FAKE_QUANT: float32 values rounded to the grid of `num_bits`-bit quantization over the
    /// nudged `[min, max]` range (TensorFlow's FakeQuantWithMinMaxArgs), still float32.
    FakeQuant {
        /// Range minimum.
        min: f32,
        /// Range maximum.
        max: f32,
        /// Bits of the grid (2^num_bits levels, one less when `narrow_range`).
        num_bits: u32,
        /// The lowest level is 1 instead of 0.
        narrow_range: bool,
    },
    /// Dynamic quantization: float32 quantized with a scale and zero point chosen at run time
    /// from the values (per tensor or per row, by ExecuTorch's or XNNPACK's rule) and returned
    /// dequantized, still float32 — what ExecuTorch's `choose_qparams` → `quantize` →
    /// `dequantize` chain and XNNPACK's f32 → qdint8 convert hand to the op that reads them.
    DynamicQuantize(DynamicQuantize),
    /// RFFT2D: the 2-D discrete Fourier transform of the last two dims of float32 input 0,
    /// zero-padded or cropped to the int32 `[fft_h, fft_w]` of input 1, keeping the
    /// `fft_w / 2 + 1` non-negative frequencies of the last dim (complex64 output).
    Rfft2d,
    /// TOSA FFT2D: the 2-D discrete Fourier transform of the last two dims (powers of two) of
    /// a complex signal given as float32 real and imaginary parts (inputs 0, 1), written as
    /// real and imaginary parts (outputs 0, 1); `inverse` flips the exponent's sign (no 1/N
    /// scaling).
    Fft2d {
        /// `e^(+2πi …)` instead of `e^(−2πi …)`.
        inverse: bool,
    },
    /// COMPLEX_ABS: the magnitude of each complex64 element (float32 output).
    ComplexAbs,
    /// REAL: the real part of each complex64 element.
    Real,
    /// IMAG: the imaginary part of each complex64 element.
    Imag,
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
    /// The family whose module in [`crate::ops`] holds this op's facts.
    pub fn family(&self) -> Family {
        match self {
            OpKind::Conv2D(_) | OpKind::Conv3D(_) | OpKind::Conv3DTranspose(_) | OpKind::DepthwiseConv2D(_) | OpKind::TransposeConv(_) | OpKind::TransposeConvPadded(_) => {
                Family::Conv
            }
            OpKind::Pool2D(_) => Family::Pool,
            OpKind::Resize(_) | OpKind::ResizeScaled(_) | OpKind::SpaceToDepth { .. } | OpKind::DepthToSpace { .. } | OpKind::BatchToSpaceNd | OpKind::SpaceToBatchNd => {
                Family::Spatial
            }
            OpKind::FullyConnected(_) | OpKind::BatchMatMul { .. } => Family::MatMul,
            OpKind::Binary { .. } | OpKind::Unary(_) | OpKind::Prelu => Family::Elementwise,
            OpKind::Compare(_) | OpKind::Logical(_) | OpKind::Select { .. } => Family::Logic,
            OpKind::Cast | OpKind::Quantize | OpKind::Dequantize | OpKind::FakeQuant { .. } | OpKind::DynamicQuantize(_) | OpKind::Rescale(_) => Family::Convert,
            OpKind::Softmax { .. } | OpKind::LogSoftmax | OpKind::L2Normalization { .. } | OpKind::LocalResponseNorm(_) => Family::Normalize,
            OpKind::Reduce { .. } | OpKind::ArgMinMax { .. } | OpKind::Cumsum { .. } | OpKind::TopKV2 => Family::Reduce,
            OpKind::Concatenation { .. } | OpKind::Reshape { .. } | OpKind::Transpose | OpKind::Pad | OpKind::MirrorPad(_) | OpKind::VariableRead | OpKind::VariableWrite => Family::Data,
            OpKind::Split { .. } | OpKind::SplitV { .. } | OpKind::Pack { .. } | OpKind::Unpack { .. } | OpKind::Squeeze { .. } => Family::Movement,
            OpKind::ExpandDims | OpKind::Gather { .. } | OpKind::GatherNd | OpKind::Tile | OpKind::Dilate | OpKind::ReverseV2 => Family::Movement,
            OpKind::Slice | OpKind::StridedSlice(_) => Family::Slice,
            OpKind::Fill | OpKind::Range | OpKind::Shape | OpKind::Rank | OpKind::ZerosLike | OpKind::OnesLike | OpKind::OneHot { .. } => {
                Family::Generate
            }
            OpKind::AddN | OpKind::IntMul | OpKind::IntBits(_) | OpKind::Table | OpKind::Atan2 | OpKind::Bitwise(_) | OpKind::Bucketize { .. } | OpKind::BroadcastTo | OpKind::BroadcastArgs => {
                Family::Arith
            }
            OpKind::ScatterNd | OpKind::ScatterRows | OpKind::SparseToDense { .. } | OpKind::DynamicUpdateSlice => Family::Scatter,
            OpKind::EmbeddingLookup | OpKind::SegmentSum | OpKind::UnsortedSegment(_) => Family::Scatter,
            OpKind::Where | OpKind::Unique | OpKind::NonMaxSuppression { .. } => Family::Select,
            OpKind::MatrixDiag | OpKind::MatrixSetDiag | OpKind::ReverseSequence { .. } => Family::Matrix,
            OpKind::UnidirectionalSequenceLstm(_) | OpKind::BidirectionalSequenceLstm(_) => Family::Lstm,
            OpKind::Rnn(_) | OpKind::SequenceRnn(_) | OpKind::Svdf(_) => Family::Rnn,
            OpKind::Rfft2d | OpKind::Fft2d { .. } | OpKind::ComplexAbs | OpKind::Real | OpKind::Imag => Family::Fft,
            OpKind::If { .. } | OpKind::While { .. } => Family::Control,
            OpKind::Custom { .. } => Family::Custom,
        }
    }

    /// The op's name as users spell it in `OP_BACKEND_<Name>` and as errors print it.
    pub fn name(&self) -> &str {
        self.spec().map_or(crate::ops::UNLISTED, |s| s.name)
    }

    /// The op's name, arity and shape rule, from its family's list (`None` only if that list
    /// and [`OpKind::family`] disagree, a bug inside nnrt).
    pub(crate) fn spec(&self) -> Option<crate::ops::Spec<'_>> {
        (self.family().ops())(self)
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
