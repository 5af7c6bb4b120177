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

/// Parameters of 3-D convolution (CONV_3D: NDHWC input, `[k_d, k_h, k_w, in_c, out_c]` filter).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv3D {
    /// Padding scheme (SAME or VALID).
    pub padding: Padding,
    /// Stride along depth, height, width.
    pub stride: [usize; 3],
    /// Dilation along depth, height, width.
    pub dilation: [usize; 3],
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
    /// a ^ b
    Pow,
    /// (a - b)²
    SquaredDifference,
    /// max(a, b)
    Maximum,
    /// min(a, b)
    Minimum,
    /// floor(a / b)
    FloorDiv,
    /// a - floor(a / b) * b (the remainder takes the divisor's sign)
    FloorMod,
}

/// Element-wise comparisons (NumPy broadcasting), producing bools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// a == b
    Equal,
    /// a != b
    NotEqual,
    /// a < b
    Less,
    /// a <= b
    LessEqual,
    /// a > b
    Greater,
    /// a >= b
    GreaterEqual,
}

/// Element-wise logical ops on bools (NumPy broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogicalOp {
    /// a && b
    And,
    /// a || b
    Or,
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
    /// clamp(x, 0, 1)
    Relu0To1,
    /// x if x >= 0 else exp(x) - 1
    Elu,
    /// x * Φ(x); with `approximate`, the tanh form.
    Gelu {
        /// Use the tanh approximation.
        approximate: bool,
    },
    /// |x|
    Abs,
    /// -x
    Neg,
    /// e^x
    Exp,
    /// ln x
    Log,
    /// √x
    Sqrt,
    /// 1 / √x
    Rsqrt,
    /// x²
    Square,
    /// sin x
    Sin,
    /// cos x
    Cos,
    /// Round toward -∞.
    Floor,
    /// Round toward +∞.
    Ceil,
    /// Round half to even.
    Round,
    /// -1, 0 or 1.
    Sign,
    /// !x on bools.
    LogicalNot,
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
    /// Logical or (bools).
    Any,
    /// Logical and (bools).
    All,
}

/// How MIRROR_PAD mirrors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MirrorMode {
    /// Mirror without repeating the edge.
    Reflect,
    /// Mirror repeating the edge.
    Symmetric,
}

/// Parameters of a transposed 2-D convolution (TFLite TRANSPOSE_CONV).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransposeConv {
    /// Padding scheme, applied to the output as a convolution would pad its input.
    pub padding: Padding,
    /// Stride along height, width.
    pub stride: [usize; 2],
    /// Fused activation.
    pub act: Activation,
}

/// Parameters of STRIDED_SLICE: bit `i` of a mask refers to entry `i` of begin/end/strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct StridedSlice {
    /// Ignore `begin[i]`: start at the first (last, for a negative stride) element.
    pub begin_mask: i32,
    /// Ignore `end[i]`: run to the end.
    pub end_mask: i32,
    /// Entry `i` stands for as many full dims as needed.
    pub ellipsis_mask: i32,
    /// Entry `i` inserts a new dim of size 1.
    pub new_axis_mask: i32,
    /// Entry `i` takes one element and drops the dim.
    pub shrink_axis_mask: i32,
    /// `end` holds sizes relative to `begin` rather than absolute positions.
    pub offset: bool,
}

/// How RESIZE_* interpolates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResizeMode {
    /// Bilinear interpolation.
    Bilinear,
    /// Nearest neighbour.
    Nearest,
}

/// Parameters of RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (NHWC; size in input 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resize {
    /// Interpolation.
    pub mode: ResizeMode,
    /// Map corner pixels onto corner pixels (scale `(in-1)/(out-1)`).
    pub align_corners: bool,
    /// Sample at pixel centres (`(x + 0.5) * scale - 0.5`).
    pub half_pixel_centers: bool,
}

/// Parameters of a float LSTM layer over a sequence (TFLite UNIDIRECTIONAL_SEQUENCE_LSTM).
///
/// Inputs (24, optional ones may be absent): 0 input; 1-4 input-to-{input,forget,cell,output}
/// weights; 5-8 recurrent-to-{…} weights; 9-11 peephole cell-to-{input,forget,output}; 12-15
/// gate biases; 16 projection weights; 17 projection bias; 18 output state and 19 cell state
/// (variable tensors); 20-23 layer-norm coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SequenceLstm {
    /// Activation of the cell input and of the cell state on output (usually tanh).
    pub act: Activation,
    /// Clip the cell state to `[-cell_clip, cell_clip]` when positive.
    pub cell_clip: f32,
    /// Clip the projected output to `[-proj_clip, proj_clip]` when positive.
    pub proj_clip: f32,
    /// Input is `[time, batch, features]` rather than `[batch, time, features]`.
    pub time_major: bool,
    /// Recurrent weights are diagonal (`[n_cell]` vectors).
    pub diagonal_recurrent: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// Bitwise binary ops on integers (NumPy broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BitwiseOp {
    /// a ^ b
    Xor,
    /// a >> b, arithmetic for signed types; the shift is clamped to `[0, bits - 1]`.
    RightShift,
}

/// How UNSORTED_SEGMENT_* combines the rows of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentOp {
    /// Sum (0 for an empty segment).
    Sum,
    /// Maximum (the type's lowest value for an empty segment).
    Max,
    /// Minimum (the type's highest value for an empty segment).
    Min,
    /// Product (1 for an empty segment).
    Prod,
}

/// Parameters of LOCAL_RESPONSE_NORMALIZATION over the last dim:
/// `out = in * (bias + alpha * Σ in²)^-beta`, the sum over `radius` channels either side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalResponseNorm {
    /// Channels either side included in the sum.
    pub radius: i32,
    /// Added to the scaled sum.
    pub bias: f32,
    /// Scale of the sum of squares.
    pub alpha: f32,
    /// Exponent.
    pub beta: f32,
}

/// Parameters of a basic RNN cell (RNN, UNIDIRECTIONAL_SEQUENCE_RNN):
/// `h = act(x W^T + h R^T + b)`. Inputs: 0 input, 1 weights [units, in], 2 recurrent weights
/// [units, units], 3 bias [units], 4 hidden state (a variable tensor).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rnn {
    /// Activation of the new state.
    pub act: Activation,
    /// Sequence input is `[time, batch, features]` (UNIDIRECTIONAL_SEQUENCE_RNN only).
    pub time_major: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// Parameters of SVDF. Inputs: 0 input [batch, in], 1 feature weights [filters, in], 2 time
/// weights [filters, memory], 3 bias [units] (optional), 4 activation state (a variable tensor
/// [batch, memory * filters]). `filters = units * rank`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Svdf {
    /// Filters per unit.
    pub rank: i32,
    /// Fused activation of the output.
    pub act: Activation,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// Parameters of BIDIRECTIONAL_SEQUENCE_LSTM: a forward and a backward float LSTM over one
/// sequence. Inputs (48, TFLite's order): 0 input; 1-17 forward weights, peepholes, biases and
/// projection (as inputs 1-17 of [`SequenceLstm`]); 18-34 the same for the backward cell; 35-38
/// forward then backward output and cell states (variable tensors); 39 auxiliary input; 40-47
/// auxiliary input weights (forward, backward).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BidirectionalLstm {
    /// Activation of the cell input and of the cell state on output.
    pub act: Activation,
    /// Clip the cell state to `[-cell_clip, cell_clip]` when positive.
    pub cell_clip: f32,
    /// Clip the projected output to `[-proj_clip, proj_clip]` when positive.
    pub proj_clip: f32,
    /// Concatenate both directions into output 0 instead of writing two outputs.
    pub merge_outputs: bool,
    /// Input is `[time, batch, features]` rather than `[batch, time, features]`.
    pub time_major: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// What an operation computes, with its typed parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// 2-D convolution: input NHWC, filter OHWI, optional bias.
    Conv2D(Conv2D),
    /// 3-D convolution; inputs: input, filter, optional bias.
    Conv3D(Conv3D),
    /// Transposed 3-D convolution (CONV_3D_TRANSPOSE); inputs: int32 output shape, filter
    /// `[k_d, k_h, k_w, out_c, in_c]`, input, optional bias. The padding is that of a
    /// convolution from the output back to the input.
    Conv3DTranspose(Conv3D),
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
    /// Transposed convolution: input 0 output shape (int), 1 filter OHWI, 2 input NHWC, 3 bias.
    TransposeConv(TransposeConv),
    /// Batched matrix product `x @ y` with broadcast batch dims.
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
    /// Repeats input 0 the number of times in input 1 along each dim.
    Tile,
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
    /// RFFT2D: the 2-D discrete Fourier transform of the last two dims of float32 input 0,
    /// zero-padded or cropped to the int32 `[fft_h, fft_w]` of input 1, keeping the
    /// `fft_w / 2 + 1` non-negative frequencies of the last dim (complex64 output).
    Rfft2d,
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
    /// The op's name as users spell it in `OP_BACKEND_<Name>` and as errors print it.
    pub fn name(&self) -> &str {
        match self {
            OpKind::Conv2D(_) => "Conv2D",
            OpKind::Conv3D(_) => "Conv3D",
            OpKind::Conv3DTranspose(_) => "Conv3DTranspose",
            OpKind::Rfft2d => "Rfft2d",
            OpKind::FakeQuant { .. } => "FakeQuant",
            OpKind::ComplexAbs => "ComplexAbs",
            OpKind::Real => "Real",
            OpKind::Imag => "Imag",
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
                BinaryOp::Pow => "Pow",
                BinaryOp::SquaredDifference => "SquaredDifference",
                BinaryOp::Maximum => "Maximum",
                BinaryOp::Minimum => "Minimum",
                BinaryOp::FloorDiv => "FloorDiv",
                BinaryOp::FloorMod => "FloorMod",
            },
            OpKind::Unary(u) => match u {
                UnaryOp::Relu => "Relu",
                UnaryOp::Relu6 => "Relu6",
                UnaryOp::ReluN1To1 => "ReluN1To1",
                UnaryOp::Tanh => "Tanh",
                UnaryOp::Logistic => "Logistic",
                UnaryOp::HardSwish => "HardSwish",
                UnaryOp::LeakyRelu(_) => "LeakyRelu",
                UnaryOp::Relu0To1 => "Relu0To1",
                UnaryOp::Elu => "Elu",
                UnaryOp::Gelu { .. } => "Gelu",
                UnaryOp::Abs => "Abs",
                UnaryOp::Neg => "Neg",
                UnaryOp::Exp => "Exp",
                UnaryOp::Log => "Log",
                UnaryOp::Sqrt => "Sqrt",
                UnaryOp::Rsqrt => "Rsqrt",
                UnaryOp::Square => "Square",
                UnaryOp::Sin => "Sin",
                UnaryOp::Cos => "Cos",
                UnaryOp::Floor => "Floor",
                UnaryOp::Ceil => "Ceil",
                UnaryOp::Round => "Round",
                UnaryOp::Sign => "Sign",
                UnaryOp::LogicalNot => "LogicalNot",
            },
            OpKind::Reduce { op, .. } => match op {
                ReduceOp::Mean => "Mean",
                ReduceOp::Sum => "Sum",
                ReduceOp::Max => "ReduceMax",
                ReduceOp::Min => "ReduceMin",
                ReduceOp::Prod => "ReduceProd",
                ReduceOp::Any => "ReduceAny",
                ReduceOp::All => "ReduceAll",
            },
            OpKind::Softmax { .. } => "Softmax",
            OpKind::Concatenation { .. } => "Concatenation",
            OpKind::Reshape { .. } => "Reshape",
            OpKind::Transpose => "Transpose",
            OpKind::Pad => "Pad",
            OpKind::MirrorPad(_) => "MirrorPad",
            OpKind::Dequantize => "Dequantize",
            OpKind::Quantize => "Quantize",
            OpKind::TransposeConv(_) => "TransposeConv",
            OpKind::BatchMatMul { .. } => "BatchMatMul",
            OpKind::Compare(c) => match c {
                CompareOp::Equal => "Equal",
                CompareOp::NotEqual => "NotEqual",
                CompareOp::Less => "Less",
                CompareOp::LessEqual => "LessEqual",
                CompareOp::Greater => "Greater",
                CompareOp::GreaterEqual => "GreaterEqual",
            },
            OpKind::Logical(LogicalOp::And) => "LogicalAnd",
            OpKind::Logical(LogicalOp::Or) => "LogicalOr",
            OpKind::Prelu => "Prelu",
            OpKind::ArgMinMax { max: true } => "ArgMax",
            OpKind::ArgMinMax { max: false } => "ArgMin",
            OpKind::LogSoftmax => "LogSoftmax",
            OpKind::L2Normalization { .. } => "L2Normalization",
            OpKind::Split { .. } => "Split",
            OpKind::SplitV { .. } => "SplitV",
            OpKind::Pack { .. } => "Pack",
            OpKind::Unpack { .. } => "Unpack",
            OpKind::Squeeze { .. } => "Squeeze",
            OpKind::ExpandDims => "ExpandDims",
            OpKind::Slice => "Slice",
            OpKind::StridedSlice(_) => "StridedSlice",
            OpKind::Gather { .. } => "Gather",
            OpKind::GatherNd => "GatherNd",
            OpKind::Resize(r) => match r.mode {
                ResizeMode::Bilinear => "ResizeBilinear",
                ResizeMode::Nearest => "ResizeNearestNeighbor",
            },
            OpKind::Tile => "Tile",
            OpKind::SpaceToDepth { .. } => "SpaceToDepth",
            OpKind::DepthToSpace { .. } => "DepthToSpace",
            OpKind::BatchToSpaceNd => "BatchToSpaceNd",
            OpKind::SpaceToBatchNd => "SpaceToBatchNd",
            OpKind::Cumsum { .. } => "Cumsum",
            OpKind::ReverseV2 => "ReverseV2",
            OpKind::Cast => "Cast",
            OpKind::Select { v2: false } => "Select",
            OpKind::Select { v2: true } => "SelectV2",
            OpKind::Fill => "Fill",
            OpKind::Range => "Range",
            OpKind::Shape => "Shape",
            OpKind::Rank => "Rank",
            OpKind::ZerosLike => "ZerosLike",
            OpKind::OnesLike => "OnesLike",
            OpKind::OneHot { .. } => "OneHot",
            OpKind::TopKV2 => "TopKV2",
            OpKind::UnidirectionalSequenceLstm(_) => "UnidirectionalSequenceLstm",
            OpKind::AddN => "AddN",
            OpKind::BroadcastTo => "BroadcastTo",
            OpKind::BroadcastArgs => "BroadcastArgs",
            OpKind::EmbeddingLookup => "EmbeddingLookup",
            OpKind::LocalResponseNorm(_) => "LocalResponseNormalization",
            OpKind::Atan2 => "Atan2",
            OpKind::Bitwise(BitwiseOp::Xor) => "BitwiseXor",
            OpKind::Bitwise(BitwiseOp::RightShift) => "RightShift",
            OpKind::ScatterNd => "ScatterNd",
            OpKind::Where => "Where",
            OpKind::SegmentSum => "SegmentSum",
            OpKind::UnsortedSegment(s) => match s {
                SegmentOp::Sum => "UnsortedSegmentSum",
                SegmentOp::Max => "UnsortedSegmentMax",
                SegmentOp::Min => "UnsortedSegmentMin",
                SegmentOp::Prod => "UnsortedSegmentProd",
            },
            OpKind::MatrixDiag => "MatrixDiag",
            OpKind::MatrixSetDiag => "MatrixSetDiag",
            OpKind::ReverseSequence { .. } => "ReverseSequence",
            OpKind::SparseToDense { .. } => "SparseToDense",
            OpKind::DynamicUpdateSlice => "DynamicUpdateSlice",
            OpKind::NonMaxSuppression { v5: false } => "NonMaxSuppressionV4",
            OpKind::NonMaxSuppression { v5: true } => "NonMaxSuppressionV5",
            OpKind::Rnn(_) => "Rnn",
            OpKind::SequenceRnn(_) => "UnidirectionalSequenceRnn",
            OpKind::Svdf(_) => "Svdf",
            OpKind::BidirectionalSequenceLstm(_) => "BidirectionalSequenceLstm",
            OpKind::Unique => "Unique",
            OpKind::Bucketize { .. } => "Bucketize",
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
