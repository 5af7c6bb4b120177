//! Rust source literals of nnrt's IR values, for the graph an artifact carries as code. Every
//! `match` here is exhaustive and every struct is destructured whole, so a new op, variant or
//! field is a compile error here rather than a silently wrong artifact. Paths start at `n::`
//! (the artifact's `use nnrt_aot::core as n;`).

use nnrt_core::{
    Activation, BidirectionalLstm, BinaryOp, BitwiseOp, CompareOp, Conv2D, Conv3D, DType, DepthwiseConv2D, DynamicQuantize, FullyConnected, IntBitsOp,
    Layout, LocalResponseNorm, LogicalOp, MirrorMode, Numerics, OpKind, Padding, Pool2D, PoolKind, QParamsRule, Quantization, ReduceOp, Rescale,
    Resize, ResizeMode, ResizeScaled, Rnn, SegmentOp, SequenceLstm, StridedSlice, SubgraphId, Svdf, TransposeConv, TransposeConvPadded, UnaryOp,
};

/// A value written as a Rust expression that rebuilds it exactly.
pub trait Lit {
    /// The expression.
    fn lit(&self) -> String;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Lit for $t {
            fn lit(&self) -> String {
                format!("{self}")
            }
        }
    )*};
}
plain!(usize, u32, i32, i64, bool);

impl Lit for f32 {
    fn lit(&self) -> String {
        // Bits, so NaN payloads, -0.0 and infinities come back exactly.
        format!("f32::from_bits({:#010x})", self.to_bits())
    }
}

impl Lit for u8 {
    fn lit(&self) -> String {
        format!("{self}")
    }
}

impl<T: Lit, const N: usize> Lit for [T; N] {
    fn lit(&self) -> String {
        format!("[{}]", self.iter().map(Lit::lit).collect::<Vec<_>>().join(", "))
    }
}

impl<T: Lit> Lit for Vec<T> {
    fn lit(&self) -> String {
        format!("vec![{}]", self.iter().map(Lit::lit).collect::<Vec<_>>().join(", "))
    }
}

impl<T: Lit> Lit for Option<T> {
    fn lit(&self) -> String {
        match self {
            Some(v) => format!("Some({})", v.lit()),
            None => "None".into(),
        }
    }
}

impl Lit for String {
    fn lit(&self) -> String {
        // `{:?}` of a str is a valid Rust string literal (escapes included).
        format!("String::from({self:?})")
    }
}

impl Lit for SubgraphId {
    fn lit(&self) -> String {
        format!("n::SubgraphId({})", self.0)
    }
}

macro_rules! unit_enums {
    ($($t:ident: $($v:ident),*;)*) => {$(
        impl Lit for $t {
            fn lit(&self) -> String {
                match self {
                    $($t::$v => concat!("n::", stringify!($t), "::", stringify!($v)).to_string(),)*
                }
            }
        }
    )*};
}
unit_enums! {
    Activation: None, Relu, ReluN1To1, Relu6, Tanh, SignBit;
    BitwiseOp: Xor, And, Or, RightShift;
    MirrorMode: Reflect, Symmetric;
    BinaryOp: Add, Sub, Mul, Div, Pow, SquaredDifference, Maximum, Minimum, FloorDiv, FloorMod;
    CompareOp: Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual;
    LogicalOp: And, Or;
    PoolKind: Average, Max, L2;
    ReduceOp: Mean, Sum, Max, Min, Prod, Any, All;
    SegmentOp: Sum, Max, Min, Prod;
    ResizeMode: Bilinear, Nearest;
    QParamsRule: ExecuTorch, Xnnpack;
    DType: F32, F16, I8, U8, I16, I32, I64, Bool, C64;
    Layout: Any, Nhwc, Nchw;
    Numerics: TfLite, ExecuTorch;
}

macro_rules! structs {
    ($($t:ident { $($f:ident),* };)*) => {$(
        impl Lit for $t {
            fn lit(&self) -> String {
                let $t { $($f),* } = self;
                let mut s = format!("n::{} {{", stringify!($t));
                $(s += &format!(" {}: {},", stringify!($f), $f.lit());)*
                s + " }"
            }
        }
    )*};
}
structs! {
    Conv2D { padding, stride, dilation, act };
    Conv3D { padding, stride, dilation, act };
    DepthwiseConv2D { padding, stride, dilation, depth_multiplier, act };
    TransposeConv { padding, stride, act };
    TransposeConvPadded { stride, out_pad };
    Rescale { scale32, double_round, per_channel, input_unsigned, output_unsigned };
    DynamicQuantize { rule, qmin, qmax, row_dims };
    SequenceLstm { act, cell_clip, proj_clip, time_major, diagonal_recurrent, asymmetric_quantize_inputs };
    BidirectionalLstm { act, cell_clip, proj_clip, merge_outputs, time_major, asymmetric_quantize_inputs };
    FullyConnected { act, keep_num_dims, asymmetric_quantize_inputs };
    LocalResponseNorm { radius, bias, alpha, beta };
    Pool2D { kind, padding, stride, filter, act };
    Rnn { act, time_major, asymmetric_quantize_inputs };
    Svdf { rank, act, asymmetric_quantize_inputs };
    StridedSlice { begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask, offset };
    Resize { mode, align_corners, half_pixel_centers };
    ResizeScaled { mode, scale, offset, border };
}

impl Lit for Padding {
    fn lit(&self) -> String {
        match self {
            Padding::Same => "n::Padding::Same".into(),
            Padding::Valid => "n::Padding::Valid".into(),
            Padding::Explicit(p) => format!("n::Padding::Explicit({})", p.lit()),
            Padding::Explicit3(p) => format!("n::Padding::Explicit3({})", p.lit()),
        }
    }
}

impl Lit for IntBitsOp {
    fn lit(&self) -> String {
        match self {
            IntBitsOp::RightShift { round } => format!("n::IntBitsOp::RightShift {{ round: {round} }}"),
            IntBitsOp::LeftShift => "n::IntBitsOp::LeftShift".into(),
            IntBitsOp::Clz => "n::IntBitsOp::Clz".into(),
            IntBitsOp::LogicalRightShift => "n::IntBitsOp::LogicalRightShift".into(),
            IntBitsOp::Div => "n::IntBitsOp::Div".into(),
            IntBitsOp::Negate => "n::IntBitsOp::Negate".into(),
        }
    }
}

impl Lit for UnaryOp {
    fn lit(&self) -> String {
        use UnaryOp::*;
        let unit = |v: &str| format!("n::UnaryOp::{v}");
        match self {
            LeakyRelu(a) => format!("n::UnaryOp::LeakyRelu({})", a.lit()),
            Gelu { approximate } => format!("n::UnaryOp::Gelu {{ approximate: {approximate} }}"),
            Relu => unit("Relu"),
            Relu6 => unit("Relu6"),
            ReluN1To1 => unit("ReluN1To1"),
            Tanh => unit("Tanh"),
            Logistic => unit("Logistic"),
            HardSwish => unit("HardSwish"),
            Relu0To1 => unit("Relu0To1"),
            Elu => unit("Elu"),
            Abs => unit("Abs"),
            Neg => unit("Neg"),
            Exp => unit("Exp"),
            Log => unit("Log"),
            Sqrt => unit("Sqrt"),
            Rsqrt => unit("Rsqrt"),
            Square => unit("Square"),
            Sin => unit("Sin"),
            Cos => unit("Cos"),
            Floor => unit("Floor"),
            Ceil => unit("Ceil"),
            Round => unit("Round"),
            Sign => unit("Sign"),
            LogicalNot => unit("LogicalNot"),
            Erf => unit("Erf"),
        }
    }
}

impl Lit for Quantization {
    fn lit(&self) -> String {
        match self {
            Quantization::None => "n::Quantization::None".into(),
            Quantization::PerTensor { scale, zero_point } => format!("n::Quantization::PerTensor {{ scale: {}, zero_point: {zero_point} }}", scale.lit()),
            Quantization::PerAxis { scales, zero_points, axis } => {
                format!("n::Quantization::PerAxis {{ scales: {}, zero_points: {}, axis: {axis} }}", scales.lit(), zero_points.lit())
            }
        }
    }
}

macro_rules! op_kinds {
    ($k:expr; tuple: $($tv:ident),*; fields: $($sv:ident { $($f:ident),* }),*; unit: $($uv:ident),*;) => {
        match $k {
            $(OpKind::$tv(x) => format!("n::OpKind::{}({})", stringify!($tv), x.lit()),)*
            $(OpKind::$sv { $($f),* } => {
                let mut s = format!("n::OpKind::{} {{", stringify!($sv));
                $(s += &format!(" {}: {},", stringify!($f), $f.lit());)*
                s + " }"
            })*
            $(OpKind::$uv => concat!("n::OpKind::", stringify!($uv)).to_string(),)*
        }
    };
}

impl Lit for OpKind {
    fn lit(&self) -> String {
        op_kinds! { self;
            tuple: Conv2D, Conv3D, Conv3DTranspose, DepthwiseConv2D, FullyConnected, Pool2D, Unary, MirrorPad, TransposeConv,
                TransposeConvPadded, Compare, Logical, StridedSlice, Resize, ResizeScaled, IntBits, Rescale, UnidirectionalSequenceLstm,
                LocalResponseNorm, Bitwise, UnsortedSegment, Rnn, SequenceRnn, Svdf, BidirectionalSequenceLstm, DynamicQuantize;
            fields: Binary { op, act }, Reduce { op, keep_dims }, Softmax { beta }, Concatenation { axis, act }, Reshape { new_shape },
                BatchMatMul { adj_x, adj_y }, ArgMinMax { max }, L2Normalization { act }, Split { num_splits }, SplitV { num_splits },
                Pack { axis, count }, Unpack { axis, num }, Squeeze { axes }, Gather { axis, batch_dims }, SpaceToDepth { block },
                DepthToSpace { block }, Cumsum { exclusive, reverse }, Select { v2 }, OneHot { axis }, ReverseSequence { seq_dim, batch_dim },
                SparseToDense { validate_indices }, NonMaxSuppression { v5 }, Bucketize { boundaries },
                FakeQuant { min, max, num_bits, narrow_range }, Fft2d { inverse }, Custom { name, options },
                If { then_branch, else_branch }, While { cond, body };
            unit: Transpose, Pad, VariableRead, VariableWrite, Dequantize, Quantize, Prelu, LogSoftmax, ExpandDims, Slice, GatherNd,
                Tile, Dilate, BatchToSpaceNd, SpaceToBatchNd, ReverseV2, Cast, IntMul, Table, Fill, Range, Shape, Rank, ZerosLike,
                OnesLike, TopKV2, AddN, BroadcastTo, BroadcastArgs, EmbeddingLookup, Atan2, ScatterNd, ScatterRows, Where, SegmentSum,
                MatrixDiag, MatrixSetDiag, DynamicUpdateSlice, Unique, Rfft2d, ComplexAbs, Real, Imag;
        }
    }
}
