//! Builders of dynamic-range ("hybrid") CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: float
//! input and output, int8 weights quantized per channel or per tensor. Inputs are quantized per
//! batch at run time exactly as TFLite does (asymmetric for convolutions and for FC with
//! `asymmetric_quantize_inputs`, symmetric otherwise).

use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, OpId, OpKind, Quantization};

use super::conv::{conv_geom, depthwise_geom};
use super::{built, const_f32, source};
use crate::backend::Built;
use crate::kernels::conv::ConvGeom;
use crate::kernels::depthwise::DepthwiseGeom;
use crate::quant::hybrid::{self, FloatClamp};

/// Whether the hybrid kernels handle `op` (float input/output, constant int8 weights).
pub(crate) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    let w = op.input(1).ok_or("input 1 (weights) is absent")?;
    let wo = ctx.graph.operand(w);
    if wo.dtype != DType::I8 || !wo.is_const() {
        return Err("hybrid weights must be constant int8".into());
    }
    if let Some(b) = op.input(2) {
        if ctx.graph.operand(b).dtype != DType::F32 || !ctx.graph.operand(b).is_const() {
            return Err("the bias of a hybrid op must be a float32 constant".into());
        }
    }
    let act = match &op.kind {
        OpKind::Conv2D(p) => p.act,
        OpKind::DepthwiseConv2D(p) => p.act,
        OpKind::FullyConnected(p) => p.act,
        _ => return Err("not a hybrid op".into()),
    };
    if matches!(act, Activation::Tanh | Activation::SignBit) {
        return Err(format!("fused {act:?} on a hybrid op is not supported"));
    }
    Ok(())
}

fn clamp_of(a: Activation) -> FloatClamp {
    match a {
        Activation::Relu => FloatClamp(0.0, f32::INFINITY),
        Activation::Relu6 => FloatClamp(0.0, 6.0),
        Activation::ReluN1To1 => FloatClamp(-1.0, 1.0),
        _ => FloatClamp(f32::NEG_INFINITY, f32::INFINITY),
    }
}

/// Builds the kernel of a hybrid op.
pub(crate) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports(ctx, id)?;
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let w = op.input(1).ok_or("input 1 is absent")?;
    let wo = ctx.graph.operand(w);
    let weights: Vec<i8> = wo.data.as_ref().ok_or("weights must be constant")?.bytes().iter().map(|&b| b as i8).collect();
    let bias = op.input(2).map(|b| const_f32(ctx, b).ok_or("bias must be float32")).transpose()?;
    let xd = ctx.dims(x).to_vec();
    let od = ctx.dims(op.outputs[0]).to_vec();
    let wd = ctx.dims(w).to_vec();
    let (w_scales, per_channel) = match &wo.quant {
        Quantization::PerAxis { scales, .. } => (scales.clone(), scales.iter().any(|&s| s != scales[0])),
        Quantization::PerTensor { scale, .. } => (vec![*scale], false),
        Quantization::None => return Err("hybrid weights have no scale".into()),
    };
    match &op.kind {
        OpKind::Conv2D(p) => {
            let g = conv_geom(&xd, &wd, &od, p)?;
            let channel_scale: Vec<f32> = (0..g.out_c).map(|c| w_scales[c.min(w_scales.len() - 1)]).collect();
            let clamp = clamp_of(p.act);
            let asym = per_channel || g.groups != 1;
            let per_batch_geom = ConvGeom { batch: 1, ..g };
            let zero_q = crate::quant::reference::ConvQuant {
                in_zp: 0,
                w_zp: vec![0; g.out_c],
                out_zp: 0,
                requant: vec![crate::quant::Requant::Fixed { multiplier: 1 << 30, shift: 1 }; g.out_c],
                act: (i32::MIN, i32::MAX),
                bias: None,
                wide: false,
            };
            let conv = crate::quant::conv::QConv::new::<i8, i8>(per_batch_geom, zero_q, &weights);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let input = cast::<f32>(ins[0].bytes)?;
                let per_batch = input.len() / g.batch.max(1);
                let mut xq = vec![0i8; input.len()];
                let mut scales = vec![0f32; g.batch];
                let mut offsets = vec![0i32; g.batch];
                for b in 0..g.batch {
                    let r = b * per_batch..(b + 1) * per_batch;
                    if asym {
                        (scales[b], offsets[b]) = hybrid::asymmetric_quantize(&input[r.clone()], &mut xq[r]);
                    } else {
                        scales[b] = hybrid::symmetric_quantize(&input[r.clone()], &mut xq[r]);
                    }
                }
                let out = cast_mut::<f32>(outs[0].bytes)?;
                let per_out = out.len() / g.batch.max(1);
                let mut acc = vec![0i32; per_out];
                for b in 0..g.batch {
                    conv.run_raw(&xq[b * per_batch..(b + 1) * per_batch], offsets[b], &mut acc);
                    hybrid::finish(&acc, &channel_scale, scales[b], bias.as_deref(), clamp, false, &mut out[b * per_out..(b + 1) * per_out]);
                }
                Ok(())
            }))
        }
        OpKind::DepthwiseConv2D(p) => {
            let g = depthwise_geom(&xd, &wd, &od, p)?;
            let channel_scale: Vec<f32> = (0..g.out_c()).map(|c| w_scales[c.min(w_scales.len() - 1)]).collect();
            let clamp = clamp_of(p.act);
            let zero_q = crate::quant::reference::ConvQuant {
                in_zp: 0,
                w_zp: vec![0; g.out_c()],
                out_zp: 0,
                requant: vec![crate::quant::Requant::Fixed { multiplier: 1 << 30, shift: 1 }; g.out_c()],
                act: (i32::MIN, i32::MAX),
                bias: None,
                wide: false,
            };
            let dw = crate::quant::depthwise::QDepthwise::new::<i8, i8>(DepthwiseGeom { batch: 1, ..g }, zero_q, &weights);
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let input = cast::<f32>(ins[0].bytes)?;
                let per_batch = input.len() / g.batch.max(1);
                let mut xq = vec![0i8; input.len()];
                let mut scales = vec![0f32; g.batch];
                let mut offsets = vec![0i32; g.batch];
                for b in 0..g.batch {
                    let r = b * per_batch..(b + 1) * per_batch;
                    (scales[b], offsets[b]) = hybrid::asymmetric_quantize(&input[r.clone()], &mut xq[r]);
                }
                let out = cast_mut::<f32>(outs[0].bytes)?;
                let per_out = out.len() / g.batch.max(1);
                let mut acc = vec![0i32; per_out];
                for b in 0..g.batch {
                    dw.run_raw(&xq[b * per_batch..(b + 1) * per_batch], offsets[b], &mut acc);
                    hybrid::finish(&acc, &channel_scale, scales[b], bias.as_deref(), clamp, true, &mut out[b * per_out..(b + 1) * per_out]);
                }
                Ok(())
            }))
        }
        OpKind::FullyConnected(p) => {
            let k = *wd.last().ok_or("weights have no dims")?;
            let n = weights.len() / k.max(1);
            let asym = p.asymmetric_quantize_inputs;
            let act = p.act;
            let clamp = clamp_of(act);
            let per_channel = matches!(wo.quant, Quantization::PerAxis { .. });
            let channel_scale = w_scales.clone();
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let input = cast::<f32>(ins[0].bytes)?;
                let m = input.len() / k.max(1);
                let out = cast_mut::<f32>(outs[0].bytes)?;
                if input.iter().all(|&v| v == 0.0) {
                    // TFLite skips the product for an all-zero input: bias, then activation.
                    for (r, o) in out.iter_mut().enumerate() {
                        *o = bias.as_ref().map_or(0.0, |b| b[r % n]).max(clamp.0).min(clamp.1);
                    }
                    return Ok(());
                }
                let mut xq = vec![0i8; input.len()];
                let mut scales = vec![0f32; m];
                let mut offsets = vec![0i32; m];
                for b in 0..m {
                    let r = b * k..(b + 1) * k;
                    if asym {
                        (scales[b], offsets[b]) = hybrid::asymmetric_quantize(&input[r.clone()], &mut xq[r]);
                    } else {
                        scales[b] = hybrid::symmetric_quantize(&input[r.clone()], &mut xq[r]);
                    }
                    if !per_channel {
                        scales[b] *= channel_scale[0];
                    }
                }
                hybrid::fully_connected(m, k, n, &xq, &offsets, &scales, &weights, &channel_scale, per_channel, bias.as_deref(), out);
                for o in out.iter_mut() {
                    *o = o.max(clamp.0).min(clamp.1);
                }
                Ok(())
            }))
        }
        _ => Err("not a hybrid op".into()),
    }
}
