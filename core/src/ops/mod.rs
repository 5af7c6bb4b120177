//! Op families: one module per family holds its parameter types, its ops' display names and
//! arity, their named input slots and their shape rules (with the checks that go with them).
//!
//! [`OpKind`] stays one flat enum; [`OpKind::family`] maps each variant to its [`Family`], and
//! `Family::ops` to the family's module, whose `ops` gives each op's name, arity and shape rule
//! in one arm. Adding an op to a family touches `op.rs` (the variant and its family arm) and the
//! family's module (its arm in `ops` and its shape rule).

/// Declares input slot numbers, as onert's `ir/operation` headers number an op's `Input` enum:
/// `slots!(NAME = 0: "doc", …)` declares `pub const NAME: usize = 0` with that doc;
/// `slots! { /// doc \n mod op: NAME = 0: "doc", …; … }` puts each list in a module of its own.
macro_rules! slots {
    ($($(#[$doc:meta])* mod $m:ident: $($name:ident = $n:literal: $d:literal),+;)+) => {
        $($(#[$doc])* pub mod $m { slots!($($name = $n: $d),+); })+
    };
    ($($name:ident = $n:literal: $d:literal),+ $(,)?) => {
        $(#[doc = $d] pub const $name: usize = $n;)+
    };
}

pub mod arith;
pub mod control;
pub mod conv;
pub mod convert;
pub mod custom;
pub mod data;
pub mod elementwise;
pub mod fft;
pub mod generate;
pub mod logic;
pub mod lstm;
pub mod matmul;
pub mod matrix;
pub mod movement;
pub mod normalize;
pub mod pool;
pub mod reduce;
pub mod rnn;
pub mod scatter;
pub mod select;
pub mod slice;
pub mod spatial;

use crate::infer::Cx;
use crate::{CompileError, DType, OpKind};

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

/// The family of an op kind: which module of [`crate::ops`] holds its facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Convolutions: CONV_2D, CONV_3D, DEPTHWISE_CONV_2D and the transposed ones ([`conv`]).
    Conv,
    /// 2-D pooling ([`pool`]).
    Pool,
    /// NHWC spatial rearrangements: RESIZE_*, SPACE_TO_DEPTH, *_TO_SPACE_ND… ([`spatial`]).
    Spatial,
    /// FULLY_CONNECTED and BATCH_MATMUL ([`matmul`]).
    MatMul,
    /// Broadcasting binary ops, unary ops and activations, PRELU ([`elementwise`]).
    Elementwise,
    /// Comparisons, logical and / or, SELECT ([`logic`]).
    Logic,
    /// Element type conversions: CAST, QUANTIZE, DEQUANTIZE, FAKE_QUANT ([`convert`]).
    Convert,
    /// Softmax, log-softmax and the normalizations ([`normalize`]).
    Normalize,
    /// Reductions and scans along axes: REDUCE_*, ARG_MIN/MAX, CUMSUM, TOPK_V2 ([`reduce`]).
    Reduce,
    /// Concatenation, reshape, transpose, padding ([`data`]).
    Data,
    /// Split, pack, squeeze, gather, tile, reverse ([`movement`]).
    Movement,
    /// SLICE and STRIDED_SLICE ([`slice`](mod@slice)).
    Slice,
    /// Ops that create or describe tensors: FILL, RANGE, SHAPE, ONE_HOT… ([`generate`]).
    Generate,
    /// ADD_N, ATAN2, bitwise ops, BUCKETIZE, BROADCAST_TO / _ARGS ([`arith`]).
    Arith,
    /// Ops that write at computed positions: SCATTER_ND, segment sums… ([`scatter`]).
    Scatter,
    /// Ops whose output length depends on values: WHERE, UNIQUE, NMS ([`select`]).
    Select,
    /// MATRIX_DIAG, MATRIX_SET_DIAG, REVERSE_SEQUENCE ([`matrix`]).
    Matrix,
    /// The sequence LSTMs ([`lstm`]).
    Lstm,
    /// RNN cells and SVDF ([`rnn`]).
    Rnn,
    /// RFFT2D and the complex parts ([`fft`]).
    Fft,
    /// IF and WHILE ([`control`]).
    Control,
    /// Custom operators ([`custom`]).
    Custom,
}

/// A family's list of its ops: the [`Spec`] of each, `None` for an op of another family.
pub(crate) type Ops = for<'a> fn(&'a OpKind) -> Option<Spec<'a>>;

impl Family {
    /// The list of this family's ops, in its module.
    pub(crate) fn ops(self) -> Ops {
        match self {
            Family::Conv => conv::ops,
            Family::Pool => pool::ops,
            Family::Spatial => spatial::ops,
            Family::MatMul => matmul::ops,
            Family::Elementwise => elementwise::ops,
            Family::Logic => logic::ops,
            Family::Convert => convert::ops,
            Family::Normalize => normalize::ops,
            Family::Reduce => reduce::ops,
            Family::Data => data::ops,
            Family::Movement => movement::ops,
            Family::Slice => slice::ops,
            Family::Generate => generate::ops,
            Family::Arith => arith::ops,
            Family::Scatter => scatter::ops,
            Family::Select => select::ops,
            Family::Matrix => matrix::ops,
            Family::Lstm => lstm::ops,
            Family::Rnn => rnn::ops,
            Family::Fft => fft::ops,
            Family::Control => control::ops,
            Family::Custom => custom::ops,
        }
    }
}

/// An op's shape rule (see [`crate::infer`]), which reads the op's parameters from `cx`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shapes {
    /// The rule of an op with one output.
    One(fn(&Cx) -> Result<Vec<usize>, CompileError>),
    /// The rule of an op with several outputs (or a number its options decide).
    Many(fn(&Cx) -> Result<Vec<Vec<usize>>, CompileError>),
}

/// An op's display name, how many inputs and outputs it takes, and its shape rule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec<'a> {
    /// The name users spell in `OP_BACKEND_<Name>` and errors print.
    pub name: &'a str,
    /// Fewest inputs (inputs below this index must be present).
    pub min_inputs: usize,
    /// Most inputs (`None`: any number).
    pub max_inputs: Option<usize>,
    /// Exact number of outputs (`None`: any number).
    pub outputs: Option<usize>,
    /// The output shapes.
    pub shapes: Shapes,
}

impl Spec<'_> {
    /// The op's output shapes, by its rule.
    pub(crate) fn infer(&self, cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
        match self.shapes {
            Shapes::One(rule) => Ok(vec![rule(cx)?]),
            Shapes::Many(rule) => rule(cx),
        }
    }
}

/// An op taking `min..=max` inputs (`max` `None`: at least `min`) and `outputs` outputs.
pub(crate) const fn spec(name: &str, min_inputs: usize, max_inputs: Option<usize>, outputs: Option<usize>, shapes: Shapes) -> Spec<'_> {
    Spec { name, min_inputs, max_inputs, outputs, shapes }
}

/// An op taking exactly `inputs` inputs and `outputs` outputs.
pub(crate) const fn fixed(name: &str, inputs: usize, outputs: usize, shapes: Shapes) -> Spec<'_> {
    spec(name, inputs, Some(inputs), Some(outputs), shapes)
}

/// Printed as the name of an op its family module does not list (an inconsistency inside nnrt).
pub(crate) const UNLISTED: &str = "UnlistedOp";

/// The integer types of axis, size and index inputs.
pub(crate) const INDEX_TYPES: &[DType] = &[DType::I32, DType::I64];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpId, Operand, Operation, Subgraph};

    /// One value of every op kind (every sub-kind of the ones that name several ops).
    pub(crate) fn samples() -> Vec<OpKind> {
        use crate::*;
        let act = Activation::None;
        let conv = Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act };
        let conv3 = Conv3D { padding: Padding::Valid, stride: [1, 1, 1], dilation: [1, 1, 1], act };
        let dw = DepthwiseConv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act };
        let fc = FullyConnected { act, keep_num_dims: false, asymmetric_quantize_inputs: false };
        let lstm = SequenceLstm { act, cell_clip: 0.0, proj_clip: 0.0, time_major: false, diagonal_recurrent: false, asymmetric_quantize_inputs: false };
        let bilstm = BidirectionalLstm { act, cell_clip: 0.0, proj_clip: 0.0, merge_outputs: false, time_major: false, asymmetric_quantize_inputs: false };
        let rnn = Rnn { act, time_major: false, asymmetric_quantize_inputs: false };
        let mut all = vec![
            OpKind::Conv2D(conv),
            OpKind::Conv3D(conv3),
            OpKind::Conv3DTranspose(conv3),
            OpKind::DepthwiseConv2D(dw),
            OpKind::TransposeConv(TransposeConv { padding: Padding::Same, stride: [1, 1], act }),
            OpKind::TransposeConvPadded(TransposeConvPadded { stride: [1, 1], out_pad: [0; 4] }),
            OpKind::FullyConnected(fc),
            OpKind::BatchMatMul { adj_x: false, adj_y: false },
            OpKind::Prelu,
            OpKind::Compare(CompareOp::Equal),
            OpKind::Compare(CompareOp::NotEqual),
            OpKind::Compare(CompareOp::Less),
            OpKind::Compare(CompareOp::LessEqual),
            OpKind::Compare(CompareOp::Greater),
            OpKind::Compare(CompareOp::GreaterEqual),
            OpKind::Logical(LogicalOp::And),
            OpKind::Logical(LogicalOp::Or),
            OpKind::Select { v2: false },
            OpKind::Select { v2: true },
            OpKind::Cast,
            OpKind::Quantize,
            OpKind::Dequantize,
            OpKind::IntMul,
            OpKind::Table,
            OpKind::IntBits(IntBitsOp::LeftShift),
            OpKind::IntBits(IntBitsOp::RightShift { round: true }),
            OpKind::IntBits(IntBitsOp::Clz),
            OpKind::IntBits(IntBitsOp::LogicalRightShift),
            OpKind::IntBits(IntBitsOp::Div),
            OpKind::IntBits(IntBitsOp::Negate),
            OpKind::Rescale(Rescale { scale32: true, double_round: true, per_channel: false, input_unsigned: false, output_unsigned: false }),
            OpKind::FakeQuant { min: 0.0, max: 1.0, num_bits: 8, narrow_range: false },
            OpKind::DynamicQuantize(DynamicQuantize { rule: QParamsRule::Xnnpack, qmin: -128, qmax: 127, row_dims: 1 }),
            OpKind::Softmax { beta: 1.0 },
            OpKind::LogSoftmax,
            OpKind::L2Normalization { act },
            OpKind::LocalResponseNorm(LocalResponseNorm { radius: 1, bias: 1.0, alpha: 1.0, beta: 0.5 }),
            OpKind::ArgMinMax { max: true },
            OpKind::ArgMinMax { max: false },
            OpKind::Cumsum { exclusive: false, reverse: false },
            OpKind::TopKV2,
            OpKind::Concatenation { axis: 0, act },
            OpKind::Reshape { new_shape: None },
            OpKind::Transpose,
            OpKind::Pad,
            OpKind::MirrorPad(MirrorMode::Reflect),
            OpKind::Split { num_splits: 2 },
            OpKind::SplitV { num_splits: 2 },
            OpKind::Pack { axis: 0, count: 2 },
            OpKind::Unpack { axis: 0, num: 2 },
            OpKind::Squeeze { axes: vec![] },
            OpKind::ExpandDims,
            OpKind::Gather { axis: 0, batch_dims: 0 },
            OpKind::GatherNd,
            OpKind::Tile,
            OpKind::ReverseV2,
            OpKind::Slice,
            OpKind::StridedSlice(StridedSlice::default()),
            OpKind::Resize(Resize { mode: ResizeMode::Bilinear, align_corners: false, half_pixel_centers: false }),
            OpKind::Resize(Resize { mode: ResizeMode::Nearest, align_corners: false, half_pixel_centers: false }),
            OpKind::ResizeScaled(ResizeScaled { mode: ResizeMode::Nearest, scale: [2, 1, 2, 1], offset: [0, 0], border: [0, 0] }),
            OpKind::SpaceToDepth { block: 2 },
            OpKind::DepthToSpace { block: 2 },
            OpKind::BatchToSpaceNd,
            OpKind::SpaceToBatchNd,
            OpKind::Fill,
            OpKind::Range,
            OpKind::Shape,
            OpKind::Rank,
            OpKind::ZerosLike,
            OpKind::OnesLike,
            OpKind::OneHot { axis: -1 },
            OpKind::AddN,
            OpKind::Atan2,
            OpKind::Bitwise(BitwiseOp::Xor),
            OpKind::Bitwise(BitwiseOp::RightShift),
            OpKind::Bitwise(BitwiseOp::And),
            OpKind::Bitwise(BitwiseOp::Or),
            OpKind::Bucketize { boundaries: vec![0.0] },
            OpKind::BroadcastTo,
            OpKind::BroadcastArgs,
            OpKind::ScatterNd,
            OpKind::ScatterRows,
            OpKind::SparseToDense { validate_indices: false },
            OpKind::DynamicUpdateSlice,
            OpKind::EmbeddingLookup,
            OpKind::SegmentSum,
            OpKind::Where,
            OpKind::Unique,
            OpKind::NonMaxSuppression { v5: false },
            OpKind::NonMaxSuppression { v5: true },
            OpKind::MatrixDiag,
            OpKind::MatrixSetDiag,
            OpKind::ReverseSequence { seq_dim: 1, batch_dim: 0 },
            OpKind::UnidirectionalSequenceLstm(lstm),
            OpKind::BidirectionalSequenceLstm(bilstm),
            OpKind::Rnn(rnn),
            OpKind::SequenceRnn(rnn),
            OpKind::Svdf(Svdf { rank: 1, act, asymmetric_quantize_inputs: false }),
            OpKind::Rfft2d,
            OpKind::Fft2d { inverse: false },
            OpKind::Fft2d { inverse: true },
            OpKind::VariableRead,
            OpKind::VariableWrite,
            OpKind::ComplexAbs,
            OpKind::Real,
            OpKind::Imag,
            OpKind::If { then_branch: SubgraphId(1), else_branch: SubgraphId(2) },
            OpKind::While { cond: SubgraphId(1), body: SubgraphId(2) },
            OpKind::Custom { name: "MyOp".into(), options: vec![] },
        ];
        for kind in [PoolKind::Average, PoolKind::Max, PoolKind::L2] {
            all.push(OpKind::Pool2D(Pool2D { kind, padding: Padding::Valid, stride: [1, 1], filter: [2, 2], act }));
        }
        use BinaryOp::*;
        for op in [Add, Sub, Mul, Div, Pow, SquaredDifference, Maximum, Minimum, FloorDiv, FloorMod] {
            all.push(OpKind::Binary { op, act });
        }
        use UnaryOp::*;
        let unary = [Relu, Relu6, ReluN1To1, Tanh, Logistic, HardSwish, LeakyRelu(0.2), Relu0To1, Elu, Gelu { approximate: false }];
        let math = [Abs, Neg, Exp, Log, Sqrt, Rsqrt, Square, Sin, Cos, Floor, Ceil, Round, Sign, LogicalNot];
        all.extend(unary.into_iter().chain(math).map(OpKind::Unary));
        for op in [ReduceOp::Mean, ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod, ReduceOp::Any, ReduceOp::All] {
            all.push(OpKind::Reduce { op, keep_dims: false });
        }
        for s in [SegmentOp::Sum, SegmentOp::Max, SegmentOp::Min, SegmentOp::Prod] {
            all.push(OpKind::UnsortedSegment(s));
        }
        all
    }

    /// A graph holding `kind` alone, its required inputs all float32 `[1]`.
    fn one_op(kind: OpKind) -> (Subgraph, Vec<Option<Vec<usize>>>) {
        let mut g = Subgraph::default();
        let spec = (kind.family().ops())(&kind).expect("listed");
        let inputs = (0..spec.min_inputs.max(1)).map(|i| Some(g.add_operand(Operand::new(format!("x{i}"), DType::F32, &[1])))).collect();
        let outputs = (0..spec.outputs.unwrap_or(1)).map(|i| g.add_operand(Operand::new(format!("y{i}"), DType::F32, &[1]))).collect();
        g.add_op(Operation { kind, inputs, outputs });
        let shapes = vec![Some(vec![1]); g.operands.len()];
        (g, shapes)
    }

    /// Every op kind's family lists it: it has a name, an arity and a shape rule. A rule given
    /// unfit operands refuses them; it never reports the op as unlisted (nor panics).
    #[test]
    fn every_op_kind_is_listed_by_its_family() {
        for kind in samples() {
            let family = kind.family();
            assert_ne!(kind.name(), UNLISTED, "{kind:?}");
            let (g, shapes) = one_op(kind.clone());
            if let Err(e) = crate::infer_op(&g, OpId(0), &shapes) {
                assert!(!e.to_string().contains("internal error"), "{family:?} {kind:?}: {e}");
            }
        }
    }

    /// Exactly one family lists each op: every other family's list answers "not mine".
    #[test]
    fn families_refuse_the_ops_of_others() {
        let samples = samples();
        for kind in &samples {
            for other in samples.iter().map(OpKind::family).filter(|&f| f != kind.family()) {
                assert!((other.ops())(kind).is_none(), "{other:?} lists {kind:?}");
            }
        }
    }
}
