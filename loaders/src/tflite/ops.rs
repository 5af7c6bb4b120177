//! Builtin operator codes and options tables into typed [`OpKind`]s.

use nnrt_core::{
    Activation, BinaryOp, Conv2D, DepthwiseConv2D, FullyConnected, LoadError, MirrorMode, OpKind, Padding, Pool2D, PoolKind, ReduceOp,
    SubgraphId, UnaryOp,
};

use super::{Loader, OpCode};
use crate::generated::tflite as t;
use t::BuiltinOperator as B;

fn act(a: t::ActivationFunctionType) -> Activation {
    match a {
        t::ActivationFunctionType::RELU => Activation::Relu,
        t::ActivationFunctionType::RELU_N1_TO_1 => Activation::ReluN1To1,
        t::ActivationFunctionType::RELU6 => Activation::Relu6,
        t::ActivationFunctionType::TANH => Activation::Tanh,
        t::ActivationFunctionType::SIGN_BIT => Activation::SignBit,
        _ => Activation::None,
    }
}

fn padding(p: t::Padding) -> Padding {
    if p == t::Padding::VALID {
        Padding::Valid
    } else {
        Padding::Same
    }
}

/// Strides and dilations of 0 (absent options) mean 1, as TFLite's defaults.
fn pos(v: i32) -> usize {
    if v <= 0 {
        1
    } else {
        v as usize
    }
}

/// Maps one operator. `si`/`oi` locate it for errors.
pub(super) fn map(cx: &Loader, si: usize, oi: usize, code: &OpCode, op: &t::Operator<'_>) -> Result<OpKind, LoadError> {
    let unsupported = |detail: String| LoadError::UnsupportedOp {
        path: cx.path.to_string(),
        subgraph: si,
        index: oi,
        op: B(code.code).variant_name().map(String::from).unwrap_or_else(|| format!("builtin code {}", code.code)),
        detail,
    };
    let binary = |op: BinaryOp, a: Activation| OpKind::Binary { op, act: a };
    let reduce = |r: ReduceOp| OpKind::Reduce { op: r, keep_dims: op.builtin_options_as_reducer_options().map(|o| o.keep_dims()).unwrap_or(false) };
    let pool = |kind: PoolKind| {
        let o = op.builtin_options_as_pool_2_doptions();
        OpKind::Pool2D(Pool2D {
            kind,
            padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
            stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
            filter: [o.map_or(1, |o| o.filter_height()).max(0) as usize, o.map_or(1, |o| o.filter_width()).max(0) as usize],
            act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
        })
    };
    let kind = match B(code.code) {
        B::CONV_2D => {
            let o = op.builtin_options_as_conv_2_doptions();
            OpKind::Conv2D(Conv2D {
                padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
                stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
                dilation: [pos(o.map_or(1, |o| o.dilation_h_factor())), pos(o.map_or(1, |o| o.dilation_w_factor()))],
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
            })
        }
        B::DEPTHWISE_CONV_2D => {
            let o = op.builtin_options_as_depthwise_conv_2_doptions();
            OpKind::DepthwiseConv2D(DepthwiseConv2D {
                padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
                stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
                dilation: [pos(o.map_or(1, |o| o.dilation_h_factor())), pos(o.map_or(1, |o| o.dilation_w_factor()))],
                depth_multiplier: o.map_or(0, |o| o.depth_multiplier()).max(0) as usize,
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
            })
        }
        B::FULLY_CONNECTED => {
            let o = op.builtin_options_as_fully_connected_options();
            if let Some(f) = o.map(|o| o.weights_format()).filter(|f| *f != t::FullyConnectedOptionsWeightsFormat::DEFAULT) {
                return Err(unsupported(format!(": weights format {} is not supported", f.variant_name().unwrap_or("unknown"))));
            }
            OpKind::FullyConnected(FullyConnected {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                keep_num_dims: o.is_some_and(|o| o.keep_num_dims()),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::AVERAGE_POOL_2D => pool(PoolKind::Average),
        B::MAX_POOL_2D => pool(PoolKind::Max),
        B::L2_POOL_2D => pool(PoolKind::L2),
        B::ADD => binary(BinaryOp::Add, op.builtin_options_as_add_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::SUB => binary(BinaryOp::Sub, op.builtin_options_as_sub_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::MUL => binary(BinaryOp::Mul, op.builtin_options_as_mul_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::DIV => binary(BinaryOp::Div, op.builtin_options_as_div_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::RELU => OpKind::Unary(UnaryOp::Relu),
        B::RELU6 => OpKind::Unary(UnaryOp::Relu6),
        B::RELU_N1_TO_1 => OpKind::Unary(UnaryOp::ReluN1To1),
        B::TANH => OpKind::Unary(UnaryOp::Tanh),
        B::LOGISTIC => OpKind::Unary(UnaryOp::Logistic),
        B::HARD_SWISH => OpKind::Unary(UnaryOp::HardSwish),
        B::LEAKY_RELU => OpKind::Unary(UnaryOp::LeakyRelu(op.builtin_options_as_leaky_relu_options().map_or(0.2, |o| o.alpha()))),
        B::MEAN => reduce(ReduceOp::Mean),
        B::SUM => reduce(ReduceOp::Sum),
        B::REDUCE_MAX => reduce(ReduceOp::Max),
        B::REDUCE_MIN => reduce(ReduceOp::Min),
        B::REDUCE_PROD => reduce(ReduceOp::Prod),
        B::SOFTMAX => OpKind::Softmax { beta: op.builtin_options_as_softmax_options().map_or(1.0, |o| o.beta()) },
        B::CONCATENATION => {
            let o = op.builtin_options_as_concatenation_options();
            OpKind::Concatenation { axis: o.map_or(0, |o| o.axis()), act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default() }
        }
        B::RESHAPE => OpKind::Reshape {
            new_shape: op.builtin_options_as_reshape_options().and_then(|o| o.new_shape()).map(|v| v.iter().collect()),
        },
        B::TRANSPOSE => OpKind::Transpose,
        B::PAD | B::PADV2 => OpKind::Pad,
        B::MIRROR_PAD => OpKind::MirrorPad(match op.builtin_options_as_mirror_pad_options().map(|o| o.mode()) {
            Some(t::MirrorPadMode::SYMMETRIC) => MirrorMode::Symmetric,
            _ => MirrorMode::Reflect,
        }),
        B::DEQUANTIZE => OpKind::Dequantize,
        B::QUANTIZE => OpKind::Quantize,
        B::CUSTOM => OpKind::Custom {
            name: code.custom.clone().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} is a custom op without a custom_code name")))?,
            options: op.custom_options().map(|v| v.bytes().to_vec()).unwrap_or_default(),
        },
        B::IF => {
            let o = op.builtin_options_as_if_options().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} (IF) has no IfOptions")))?;
            OpKind::If { then_branch: sub(cx, o.then_subgraph_index())?, else_branch: sub(cx, o.else_subgraph_index())? }
        }
        B::WHILE => {
            let o = op.builtin_options_as_while_options().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} (WHILE) has no WhileOptions")))?;
            OpKind::While { cond: sub(cx, o.cond_subgraph_index())?, body: sub(cx, o.body_subgraph_index())? }
        }
        _ => return Err(unsupported(String::new())),
    };
    Ok(kind)
}

fn sub(cx: &Loader, i: i32) -> Result<SubgraphId, LoadError> {
    if i < 0 {
        return Err(cx.malformed(format!("negative subgraph index {i}")));
    }
    Ok(SubgraphId::new(i as usize))
}
