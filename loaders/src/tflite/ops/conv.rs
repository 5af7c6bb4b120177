//! Convolutions, pooling, FULLY_CONNECTED and BATCH_MATMUL: the ops with filters, windows or weights.

use nnrt_core::{Conv2D, Conv3D, DepthwiseConv2D, FullyConnected, LoadError, OpKind, Padding, Pool2D, PoolKind, TransposeConv};

use super::{act, padding, pos, OpRef, B};
use crate::generated::tflite as t;

/// Padding (VALID when absent), `[stride_h, stride_w]`, `[dilation_h, dilation_w]` and the fused
/// activation of Conv2DOptions or DepthwiseConv2DOptions, which both have them.
macro_rules! window {
    ($options:expr) => {{
        let o = $options;
        (
            o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
            [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
            [pos(o.map_or(1, |o| o.dilation_h_factor())), pos(o.map_or(1, |o| o.dilation_w_factor()))],
            o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
        )
    }};
}

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let (si, oi, op) = (m.si, m.oi, m.op);
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
    Ok(Some(match B(m.code.code) {
        B::CONV_2D => {
            let (padding, stride, dilation, act) = window!(op.builtin_options_as_conv_2_doptions());
            OpKind::Conv2D(Conv2D { padding, stride, dilation, act })
        }
        B::CONV_3D => OpKind::Conv3D(conv3d_options(op)),
        B::CONV_3D_TRANSPOSE => OpKind::Conv3DTranspose(conv3d_options(op)),
        B::DEPTHWISE_CONV_2D => {
            let o = op.builtin_options_as_depthwise_conv_2_doptions();
            let (padding, stride, dilation, act) = window!(o);
            let depth_multiplier = o.map_or(0, |o| o.depth_multiplier()).max(0) as usize;
            OpKind::DepthwiseConv2D(DepthwiseConv2D { padding, stride, dilation, depth_multiplier, act })
        }
        B::FULLY_CONNECTED => {
            let o = op.builtin_options_as_fully_connected_options();
            if let Some(f) = o.map(|o| o.weights_format()).filter(|f| *f != t::FullyConnectedOptionsWeightsFormat::DEFAULT) {
                return Err(m.unsupported(format!(": weights format {} is not supported", f.variant_name().unwrap_or("unknown"))));
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
        B::TRANSPOSE_CONV => {
            let o = op.builtin_options_as_transpose_conv_options();
            OpKind::TransposeConv(TransposeConv {
                padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Same),
                stride: [pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
            })
        }
        B::BATCH_MATMUL => {
            let o = op.builtin_options_as_batch_mat_mul_options();
            if o.is_some_and(|o| o.asymmetric_quantize_inputs()) {
                log::debug!("subgraph {si} op {oi}: BATCH_MATMUL asymmetric_quantize_inputs only matters for hybrid models");
            }
            OpKind::BatchMatMul { adj_x: o.is_some_and(|o| o.adj_x()), adj_y: o.is_some_and(|o| o.adj_y()) }
        }
        _ => return Ok(None),
    }))
}

/// CONV_3D's and CONV_3D_TRANSPOSE's options (both use Conv3DOptions).
fn conv3d_options(op: &t::Operator<'_>) -> Conv3D {
    let o = op.builtin_options_as_conv_3_doptions();
    Conv3D {
        padding: o.map(|o| padding(o.padding())).unwrap_or(Padding::Valid),
        stride: [pos(o.map_or(1, |o| o.stride_d())), pos(o.map_or(1, |o| o.stride_h())), pos(o.map_or(1, |o| o.stride_w()))],
        dilation: [pos(o.map_or(1, |o| o.dilation_d_factor())), pos(o.map_or(1, |o| o.dilation_h_factor())), pos(o.map_or(1, |o| o.dilation_w_factor()))],
        act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
    }
}
