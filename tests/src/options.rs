//! Builtin options of an operator, as plain values the builder serializes at `finish`.

use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use nnrt_loaders::generated::tflite as t;

pub use t::{ActivationFunctionType as Act, MirrorPadMode, Padding};

/// The `builtin_options` table of one operator. Fields use TFLite's names and defaults; strides,
/// dilations and filters are `[h, w]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Options {
    /// No options table (RELU, LOGISTIC, TRANSPOSE, PAD, …, or a deliberately missing one).
    None,
    /// CONV_2D.
    Conv2D { padding: Padding, stride: [i32; 2], dilation: [i32; 2], act: Act },
    /// CONV_3D (strides and dilations `[d, h, w]`).
    Conv3D { padding: Padding, stride: [i32; 3], dilation: [i32; 3], act: Act },
    /// DEPTHWISE_CONV_2D.
    DepthwiseConv2D { padding: Padding, stride: [i32; 2], dilation: [i32; 2], depth_multiplier: i32, act: Act },
    /// FAKE_QUANT.
    FakeQuant { min: f32, max: f32, num_bits: i32, narrow_range: bool },
    /// FULLY_CONNECTED (default weights format).
    FullyConnected { act: Act, keep_num_dims: bool },
    /// AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D.
    Pool2D { padding: Padding, stride: [i32; 2], filter: [i32; 2], act: Act },
    /// ADD.
    Add { act: Act },
    /// SUB.
    Sub { act: Act },
    /// MUL.
    Mul { act: Act },
    /// DIV.
    Div { act: Act },
    /// SOFTMAX.
    Softmax { beta: f32 },
    /// CONCATENATION.
    Concatenation { axis: i32, act: Act },
    /// RESHAPE; `new_shape` is the options' copy of the target shape.
    Reshape { new_shape: Option<Vec<i32>> },
    /// MEAN, SUM, REDUCE_MAX, … (ReducerOptions).
    Reducer { keep_dims: bool },
    /// LEAKY_RELU.
    LeakyRelu { alpha: f32 },
    /// MIRROR_PAD.
    MirrorPad { mode: MirrorPadMode },
    /// An empty options table of the given union type (PadOptions, TransposeOptions, …), as the
    /// converter writes them.
    Empty(t::BuiltinOptions),
}

impl Options {
    /// CONV_2D options with dilation 1.
    pub fn conv(padding: Padding, stride: i32, act: Act) -> Options {
        Options::Conv2D { padding, stride: [stride; 2], dilation: [1, 1], act }
    }

    /// Writes the table; returns the union type and offset for `OperatorArgs`.
    pub(crate) fn write(&self, fbb: &mut FlatBufferBuilder<'_>) -> (t::BuiltinOptions, Option<WIPOffset<UnionWIPOffset>>) {
        use t::BuiltinOptions as U;
        let (ty, off) = match self {
            Options::None => return (U::NONE, None),
            Options::Conv2D { padding, stride, dilation, act } => {
                let args = t::Conv2DOptionsArgs {
                    padding: *padding,
                    stride_h: stride[0],
                    stride_w: stride[1],
                    dilation_h_factor: dilation[0],
                    dilation_w_factor: dilation[1],
                    fused_activation_function: *act,
                    ..Default::default()
                };
                (U::Conv2DOptions, t::Conv2DOptions::create(fbb, &args).as_union_value())
            }
            Options::DepthwiseConv2D { padding, stride, dilation, depth_multiplier, act } => {
                let args = t::DepthwiseConv2DOptionsArgs {
                    padding: *padding,
                    stride_h: stride[0],
                    stride_w: stride[1],
                    dilation_h_factor: dilation[0],
                    dilation_w_factor: dilation[1],
                    depth_multiplier: *depth_multiplier,
                    fused_activation_function: *act,
                };
                (U::DepthwiseConv2DOptions, t::DepthwiseConv2DOptions::create(fbb, &args).as_union_value())
            }
            Options::Conv3D { padding, stride, dilation, act } => {
                let args = t::Conv3DOptionsArgs {
                    padding: *padding,
                    stride_d: stride[0],
                    stride_h: stride[1],
                    stride_w: stride[2],
                    dilation_d_factor: dilation[0],
                    dilation_h_factor: dilation[1],
                    dilation_w_factor: dilation[2],
                    fused_activation_function: *act,
                };
                (U::Conv3DOptions, t::Conv3DOptions::create(fbb, &args).as_union_value())
            }
            Options::FakeQuant { min, max, num_bits, narrow_range } => {
                let args = t::FakeQuantOptionsArgs { min: *min, max: *max, num_bits: *num_bits, narrow_range: *narrow_range };
                (U::FakeQuantOptions, t::FakeQuantOptions::create(fbb, &args).as_union_value())
            }
            Options::FullyConnected { act, keep_num_dims } => {
                let args = t::FullyConnectedOptionsArgs { fused_activation_function: *act, keep_num_dims: *keep_num_dims, ..Default::default() };
                (U::FullyConnectedOptions, t::FullyConnectedOptions::create(fbb, &args).as_union_value())
            }
            Options::Pool2D { padding, stride, filter, act } => {
                let args = t::Pool2DOptionsArgs {
                    padding: *padding,
                    stride_h: stride[0],
                    stride_w: stride[1],
                    filter_height: filter[0],
                    filter_width: filter[1],
                    fused_activation_function: *act,
                };
                (U::Pool2DOptions, t::Pool2DOptions::create(fbb, &args).as_union_value())
            }
            Options::Add { act } => {
                let args = t::AddOptionsArgs { fused_activation_function: *act, ..Default::default() };
                (U::AddOptions, t::AddOptions::create(fbb, &args).as_union_value())
            }
            Options::Sub { act } => {
                let args = t::SubOptionsArgs { fused_activation_function: *act, ..Default::default() };
                (U::SubOptions, t::SubOptions::create(fbb, &args).as_union_value())
            }
            Options::Mul { act } => (U::MulOptions, t::MulOptions::create(fbb, &t::MulOptionsArgs { fused_activation_function: *act }).as_union_value()),
            Options::Div { act } => (U::DivOptions, t::DivOptions::create(fbb, &t::DivOptionsArgs { fused_activation_function: *act }).as_union_value()),
            Options::Softmax { beta } => (U::SoftmaxOptions, t::SoftmaxOptions::create(fbb, &t::SoftmaxOptionsArgs { beta: *beta }).as_union_value()),
            Options::Concatenation { axis, act } => {
                let args = t::ConcatenationOptionsArgs { axis: *axis, fused_activation_function: *act };
                (U::ConcatenationOptions, t::ConcatenationOptions::create(fbb, &args).as_union_value())
            }
            Options::Reshape { new_shape } => {
                let new_shape = new_shape.as_ref().map(|s| fbb.create_vector(s));
                (U::ReshapeOptions, t::ReshapeOptions::create(fbb, &t::ReshapeOptionsArgs { new_shape }).as_union_value())
            }
            Options::Reducer { keep_dims } => {
                (U::ReducerOptions, t::ReducerOptions::create(fbb, &t::ReducerOptionsArgs { keep_dims: *keep_dims }).as_union_value())
            }
            Options::LeakyRelu { alpha } => {
                (U::LeakyReluOptions, t::LeakyReluOptions::create(fbb, &t::LeakyReluOptionsArgs { alpha: *alpha }).as_union_value())
            }
            Options::MirrorPad { mode } => {
                (U::MirrorPadOptions, t::MirrorPadOptions::create(fbb, &t::MirrorPadOptionsArgs { mode: *mode }).as_union_value())
            }
            Options::Empty(ty) => {
                // Every options table of the schema reads an empty table as "all defaults".
                let start = fbb.start_table();
                (*ty, fbb.end_table(start).as_union_value())
            }
        };
        (ty, Some(off))
    }
}
