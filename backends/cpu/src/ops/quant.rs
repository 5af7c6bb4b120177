//! Builders of quantized ops: they read scales and zero points at compile, prepare TFLite's
//! multipliers, tables and packed weights, and return kernels from `crate::quant`.
//! `ops::supports`/`ops::build` route here every op whose data is a quantized integer tensor
//! (and the dynamic-range float ops with int8 weights), see [`is_quantized_op`].

use nnrt_core::infer::window_output;
use nnrt_core::shape::num_elements;
use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, OpId, OpKind, OperandId, PoolKind, Quantization, ResizeMode, TensorMut, TensorRef};

use super::conv::{conv_geom, depthwise_geom};
use super::{built, source, sources};
use crate::backend::Built;
use crate::quant::activation::{HardSwishQ, LeakyReluQ, Lut8, ReluQ};
use crate::quant::binary::{QBinary, QBinaryOp};
use crate::quant::conv::{QConv, QFullyConnected};
use crate::quant::misc::{self, PoolGeom, Requantize, ResizeOpts};
use crate::quant::reference::ConvQuant;
use crate::quant::softmax::{Softmax16, Softmax8};
use crate::quant::{activation_range, QInt, QParams, Requant};

pub(super) fn is_qint(d: DType) -> bool {
    matches!(d, DType::U8 | DType::I8 | DType::I16)
}

/// Whether `id` is an operand of a quantized integer type carrying quantization parameters.
pub(super) fn quantized(ctx: &CompileCtx, id: OperandId) -> bool {
    let o = ctx.graph.operand(id);
    is_qint(o.dtype) && o.quant.is_quantized()
}

/// Whether `op` belongs to the quantized kernels rather than the float ones.
pub(crate) fn is_quantized_op(ctx: &CompileCtx, id: OpId) -> bool {
    let op = ctx.graph.op(id);
    let in0 = op.input(0).is_some_and(|x| quantized(ctx, x));
    match &op.kind {
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) => {
            in0 || op.input(1).is_some_and(|w| quantized(ctx, w) && ctx.graph.operand(w).dtype != DType::I16)
        }
        OpKind::Quantize => true,
        OpKind::Dequantize => in0,
        OpKind::Concatenation { .. } => op.inputs.iter().flatten().any(|&x| quantized(ctx, x)) || quantized(ctx, op.outputs[0]),
        OpKind::Pool2D(_)
        | OpKind::Binary { .. }
        | OpKind::Unary(_)
        | OpKind::Softmax { .. }
        | OpKind::Reduce { .. }
        | OpKind::ArgMinMax { .. }
        | OpKind::Resize(_)
        | OpKind::UnidirectionalSequenceLstm(_)
        | OpKind::Prelu
        | OpKind::LogSoftmax
        | OpKind::BatchMatMul { .. } => in0,
        OpKind::TransposeConv(_) => op.input(2).is_some_and(|x| quantized(ctx, x)),
        _ => false,
    }
}

/// Scale and zero point of a per-tensor quantized operand.
pub(super) fn qp(ctx: &CompileCtx, id: OperandId) -> Result<QParams, String> {
    match &ctx.graph.operand(id).quant {
        Quantization::PerTensor { scale, zero_point } => Ok(QParams {
            scale: *scale,
            zero_point: *zero_point as i32,
        }),
        Quantization::PerAxis { .. } => Err(format!("operand {id} is quantized per channel; this op needs one scale")),
        Quantization::None => Err(format!("operand {id} has no quantization parameters")),
    }
}

pub(super) fn dtype(ctx: &CompileCtx, id: OperandId) -> DType {
    ctx.graph.operand(id).dtype
}

pub(super) fn input(ctx: &CompileCtx, id: OpId, i: usize) -> Result<OperandId, String> {
    ctx.graph.op(id).input(i).ok_or_else(|| format!("input {i} is absent"))
}

/// The integer values of a constant operand (int8/uint8/int16/int32/int64), widened.
pub(super) fn const_ints(ctx: &CompileCtx, id: OperandId) -> Result<Vec<i64>, String> {
    let o = ctx.graph.operand(id);
    let d = o.data.as_ref().ok_or_else(|| format!("operand {id} must be a constant"))?.bytes();
    Ok(match o.dtype {
        DType::U8 => d.iter().map(|&v| v as i64).collect(),
        DType::I8 => d.iter().map(|&v| v as i8 as i64).collect(),
        DType::I16 => d.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as i64).collect(),
        DType::I32 => d.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect(),
        DType::I64 => d.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
        other => return Err(format!("operand {id} is {other}, not an integer constant")),
    })
}

/// Per-channel scales and zero points of a weight operand with `n` channels along `axis`.
pub(super) fn channel_quant(ctx: &CompileCtx, id: OperandId, n: usize, axis: usize) -> Result<(Vec<f32>, Vec<i32>), String> {
    match &ctx.graph.operand(id).quant {
        Quantization::PerTensor { scale, zero_point } => Ok((vec![*scale; n], vec![*zero_point as i32; n])),
        Quantization::PerAxis { scales, zero_points, axis: a } => {
            if *a != axis || scales.len() != n {
                return Err(format!(
                    "weights {id} are quantized along dim {a} with {} scales; expected {n} along dim {axis}",
                    scales.len()
                ));
            }
            Ok((scales.clone(), zero_points.iter().map(|&z| z as i32).collect()))
        }
        Quantization::None => Err(format!("weights {id} have no quantization parameters")),
    }
}

/// The real clamp of a RELU-family op.
fn relu_bounds(u: &nnrt_core::UnaryOp) -> Option<(f32, f32)> {
    match u {
        nnrt_core::UnaryOp::Relu => Some((0.0, f32::INFINITY)),
        nnrt_core::UnaryOp::Relu6 => Some((0.0, 6.0)),
        nnrt_core::UnaryOp::ReluN1To1 => Some((-1.0, 1.0)),
        nnrt_core::UnaryOp::Relu0To1 => Some((0.0, 1.0)),
        _ => None,
    }
}

fn act_of(kind: &OpKind) -> Activation {
    match kind {
        OpKind::Conv2D(p) => p.act,
        OpKind::DepthwiseConv2D(p) => p.act,
        OpKind::FullyConnected(p) => p.act,
        OpKind::Pool2D(p) => p.act,
        OpKind::Binary { act, .. } => *act,
        OpKind::Concatenation { act, .. } => *act,
        OpKind::TransposeConv(p) => p.act,
        _ => Activation::None,
    }
}

/// Rejects scales that are not finite and positive and zero points outside their type.
pub(super) fn check_params(ctx: &CompileCtx, id: OperandId) -> Result<(), String> {
    let o = ctx.graph.operand(id);
    if !is_qint(o.dtype) {
        return Ok(());
    }
    let range = match o.dtype {
        DType::U8 => 0..=255i64,
        DType::I8 => -128..=127,
        _ => -32768..=32767,
    };
    let (scales, zps): (Vec<f32>, Vec<i64>) = match &o.quant {
        Quantization::PerTensor { scale, zero_point } => (vec![*scale], vec![*zero_point]),
        Quantization::PerAxis { scales, zero_points, .. } => (scales.clone(), zero_points.clone()),
        Quantization::None => return Ok(()),
    };
    if let Some(s) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(format!("operand {id} has scale {s}; quantized kernels need a finite positive scale"));
    }
    if let Some(z) = zps.iter().find(|z| !range.contains(z)) {
        return Err(format!("operand {id} has zero point {z}, outside the range of {}", o.dtype));
    }
    Ok(())
}

/// Why the quantized kernels cannot run `op`, or `Ok`.
pub(crate) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        check_params(ctx, o)?;
    }
    if super::quant_act::handles(ctx, id) {
        return super::quant_act::supports(ctx, id);
    }
    if matches!(op.kind, OpKind::TransposeConv(_) | OpKind::BatchMatMul { .. }) {
        return super::quant_matmul::supports(ctx, id);
    }
    let out = op.outputs.first().copied().ok_or("the op has no output")?;
    let in0 = input(ctx, id, 0)?;
    let (xt, ot) = (dtype(ctx, in0), dtype(ctx, out));
    match &op.kind {
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) => {
            let w = input(ctx, id, 1)?;
            let wt = dtype(ctx, w);
            if !ctx.graph.operand(w).is_const() {
                return Err("quantized weights must be constant (they are packed at prepare)".into());
            }
            match (xt, wt, ot) {
                (DType::U8, DType::U8, DType::U8) | (DType::I8, DType::I8, DType::I8) | (DType::I16, DType::I8, DType::I16) => {
                    qp(ctx, in0)?;
                    qp(ctx, out)?;
                    Ok(())
                }
                (DType::F32, DType::I8, DType::F32) => super::quant_hybrid::supports(ctx, id),
                _ => Err(format!(
                    "quantized {} with input {xt}, weights {wt}, output {ot} is not supported",
                    op.kind.name()
                )),
            }
        }
        OpKind::Pool2D(p) => {
            if p.kind == PoolKind::L2 || !is_qint(xt) || xt != ot {
                return Err(format!("quantized {} on {xt} -> {ot} is not supported", op.kind.name()));
            }
            Ok(())
        }
        OpKind::Binary { op: b, .. } => {
            let y = input(ctx, id, 1)?;
            if matches!(b, nnrt_core::BinaryOp::Maximum | nnrt_core::BinaryOp::Minimum) {
                return if xt == dtype(ctx, y) && xt == ot { Ok(()) } else { Err(format!("quantized {} needs one type", op.kind.name())) };
            }
            if !matches!(b, nnrt_core::BinaryOp::Add | nnrt_core::BinaryOp::Sub | nnrt_core::BinaryOp::Mul) {
                return Err(format!("quantized {} is not supported", op.kind.name()));
            }
            if xt != dtype(ctx, y) || xt != ot {
                return Err(format!(
                    "quantized {} needs one integer type, got {xt}, {}, {ot}",
                    op.kind.name(),
                    dtype(ctx, y)
                ));
            }
            qp(ctx, y)?;
            qp(ctx, out)?;
            Ok(())
        }
        OpKind::Unary(u) => match u {
            nnrt_core::UnaryOp::Logistic | nnrt_core::UnaryOp::Tanh | nnrt_core::UnaryOp::HardSwish if matches!(xt, DType::U8 | DType::I8) && xt == ot => {
                Ok(())
            }
            _ if relu_bounds(u).is_some() && xt == ot => qp(ctx, out).map(|_| ()),
            nnrt_core::UnaryOp::LeakyRelu(_) if xt == ot => qp(ctx, out).map(|_| ()),
            _ => Err(format!("quantized {} on {xt} is not supported", op.kind.name())),
        },
        OpKind::Softmax { .. } => match (xt, ot) {
            (DType::U8 | DType::I8, DType::U8 | DType::I8 | DType::I16) | (DType::I16, DType::I16) => Ok(()),
            _ => Err(format!("quantized softmax {xt} -> {ot} is not supported")),
        },
        OpKind::Reduce { op: r, .. } => {
            if *r != nnrt_core::ReduceOp::Mean || xt != ot {
                return Err(format!("quantized {} is not supported (MEAN is)", op.kind.name()));
            }
            const_ints(ctx, input(ctx, id, 1)?).map(|_| ())
        }
        OpKind::Concatenation { .. } => {
            for &x in op.inputs.iter().flatten() {
                if dtype(ctx, x) != ot {
                    return Err(format!("concatenation of {} into {ot}", dtype(ctx, x)));
                }
                if ot != DType::U8 && ctx.graph.operand(x).quant != ctx.graph.operand(out).quant {
                    return Err(format!("{ot} concatenation needs every input quantized like the output (TFLite requires it)"));
                }
            }
            Ok(())
        }
        OpKind::Quantize => match (xt, ot) {
            (DType::F32, t) if is_qint(t) && matches!(ctx.graph.operand(out).quant, Quantization::PerAxis { .. }) => Ok(()),
            (DType::F32, t) if is_qint(t) => qp(ctx, out).map(|_| ()),
            (a, b) if is_qint(a) && is_qint(b) => qp(ctx, in0).and(qp(ctx, out)).map(|_| ()),
            _ => Err(format!("quantizing {xt} to {ot} is not supported")),
        },
        OpKind::Dequantize => {
            if ot != DType::F32 {
                return Err(format!("dequantizing to {ot} is not supported"));
            }
            Ok(())
        }
        OpKind::ArgMinMax { .. } => {
            if !matches!(ot, DType::I32 | DType::I64) {
                return Err(format!("arg max/min into {ot}"));
            }
            const_ints(ctx, input(ctx, id, 1)?).map(|_| ())
        }
        OpKind::Resize(r) => {
            if r.mode != ResizeMode::Bilinear || xt != ot {
                return Err("quantized RESIZE_NEAREST_NEIGHBOR is not supported".into());
            }
            const_ints(ctx, input(ctx, id, 1)?).map(|_| ())
        }
        OpKind::UnidirectionalSequenceLstm(_) => super::quant_lstm::supports(ctx, id),
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn conv_quant<TO: QInt>(ctx: &CompileCtx, id: OpId, n: usize, w_axis: usize, float_requant: bool) -> Result<ConvQuant, String> {
    let bias = ctx.graph.op(id).input(2);
    conv_quant_of::<TO>(ctx, id, (input(ctx, id, 0)?, input(ctx, id, 1)?, bias), n, w_axis, float_requant)
}

/// [`conv_quant`] for an op whose (input, weights, bias) are the operands `(x, w, bias)`.
pub(super) fn conv_quant_of<TO: QInt>(
    ctx: &CompileCtx,
    id: OpId,
    (x, w, bias): (OperandId, OperandId, Option<OperandId>),
    n: usize,
    w_axis: usize,
    float_requant: bool,
) -> Result<ConvQuant, String> {
    let op = ctx.graph.op(id);
    let out = op.outputs[0];
    let (xq, oq) = (qp(ctx, x)?, qp(ctx, out)?);
    let (w_scales, w_zp) = channel_quant(ctx, w, n, w_axis)?;
    let uint8 = dtype(ctx, x) == DType::U8;
    let requant = w_scales
        .iter()
        .map(|&ws| {
            if float_requant {
                Requant::Float(xq.scale as f64 * ws as f64 / oq.scale as f64)
            } else if uint8 {
                // TFLite's uint8 path multiplies the two float scales in float first.
                Requant::fixed((xq.scale * ws) as f64 / oq.scale as f64)
            } else {
                Requant::fixed(xq.scale as f64 * ws as f64 / oq.scale as f64)
            }
        })
        .collect();
    let bias_values = match bias {
        Some(b) => Some(const_ints(ctx, b)?),
        None => None,
    };
    let bias_wide = bias.is_some_and(|b| dtype(ctx, b) == DType::I64);
    let sixteen = dtype(ctx, x) == DType::I16;
    let wide = sixteen && (bias_wide || matches!(op.kind, OpKind::DepthwiseConv2D(_)));
    Ok(ConvQuant {
        in_zp: xq.zero_point,
        w_zp,
        out_zp: oq.zero_point,
        requant,
        act: activation_range(act_of(&op.kind), oq, TO::MIN, TO::MAX),
        bias: bias_values,
        wide,
    })
}

/// Builds the kernel of a quantized `op`.
pub(crate) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports(ctx, id)?;
    let op = ctx.graph.op(id);
    if super::quant_act::handles(ctx, id) {
        return super::quant_act::build(ctx, id);
    }
    if matches!(op.kind, OpKind::TransposeConv(_) | OpKind::BatchMatMul { .. }) {
        return super::quant_matmul::build(ctx, id);
    }
    let out = op.outputs[0];
    let in0 = input(ctx, id, 0)?;
    let (xt, ot) = (dtype(ctx, in0), dtype(ctx, out));
    let xd = ctx.dims(in0).to_vec();
    let od = ctx.dims(out).to_vec();
    match &op.kind {
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) if xt == DType::F32 => super::quant_hybrid::build(ctx, id),
        OpKind::Conv2D(p) => {
            let w = input(ctx, id, 1)?;
            let wd = ctx.dims(w).to_vec();
            let g = conv_geom(&xd, &wd, &od, p)?;
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("filter must be constant")?.bytes().to_vec();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let q = conv_quant::<TI>(ctx, id, g.out_c, 0, false)?;
                let filter: Vec<TW> = wbytes.chunks_exact(std::mem::size_of::<TW>()).map(bytemuck::pod_read_unaligned).collect();
                let conv = QConv::new::<TI, TW>(g, q, &filter);
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    conv.run::<TI, TI>(cast::<TI>(ins[0].bytes)?, cast_mut::<TI>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        OpKind::DepthwiseConv2D(p) => {
            let w = input(ctx, id, 1)?;
            let wd = ctx.dims(w).to_vec();
            let g = depthwise_geom(&xd, &wd, &od, p)?;
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("filter must be constant")?.bytes().to_vec();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let q = conv_quant::<TI>(ctx, id, g.out_c(), 3, false)?;
                let filter: Vec<TW> = wbytes.chunks_exact(std::mem::size_of::<TW>()).map(bytemuck::pod_read_unaligned).collect();
                let dw = crate::quant::depthwise::QDepthwise::new::<TI, TW>(g, q, &filter);
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    dw.run::<TI, TI>(cast::<TI>(ins[0].bytes)?, cast_mut::<TI>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        OpKind::FullyConnected(_) => {
            let w = input(ctx, id, 1)?;
            let wd = ctx.dims(w).to_vec();
            let k = *wd.last().ok_or("weights have no dims")?;
            let n = num_elements(&wd).unwrap_or(0) / k.max(1);
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("weights must be constant")?.bytes().to_vec();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let q = conv_quant::<TI>(ctx, id, n, 0, true)?;
                let weights: Vec<TW> = wbytes.chunks_exact(std::mem::size_of::<TW>()).map(bytemuck::pod_read_unaligned).collect();
                let fc = QFullyConnected::new::<TI, TW>(n, k, q, &weights);
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    fc.run::<TI, TI>(cast::<TI>(ins[0].bytes)?, cast_mut::<TI>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        OpKind::Pool2D(p) => {
            let wh = window_output(xd[1], p.filter[0], p.stride[0], 1, p.padding, 0).ok_or("invalid window")?;
            let ww = window_output(xd[2], p.filter[1], p.stride[1], 1, p.padding, 1).ok_or("invalid window")?;
            let g = PoolGeom {
                n: xd[0],
                in_h: xd[1],
                in_w: xd[2],
                c: xd[3],
                out_h: od[1],
                out_w: od[2],
                k: p.filter,
                stride: p.stride,
                pad: [wh.pad_before, ww.pad_before],
            };
            let average = p.kind == PoolKind::Average;
            by_qtype!(xt, |T| {
                let act = activation_range(p.act, qp(ctx, out)?, <T as QInt>::MIN, <T as QInt>::MAX);
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    misc::pool::<T>(&g, average, act, cast::<T>(ins[0].bytes)?, cast_mut::<T>(outs[0].bytes)?);
                    Ok(())
                }))
            })
        }
        OpKind::Binary { op: b, .. } if matches!(b, nnrt_core::BinaryOp::Maximum | nnrt_core::BinaryOp::Minimum) => {
            // TFLite compares the raw integers (inputs and output share their quantization).
            let max = *b == nnrt_core::BinaryOp::Maximum;
            by_qtype!(xt, |T| Ok(built(sources(ctx, id), move |ins, outs| {
                let (a, b) = (cast::<T>(ins[0].bytes)?, cast::<T>(ins[1].bytes)?);
                let dims = outs[0].dims.to_vec();
                let (sa, sb) = (crate::quant::binary::broadcast_strides(ins[0].dims, &dims), crate::quant::binary::broadcast_strides(ins[1].dims, &dims));
                let out = cast_mut::<T>(outs[0].bytes)?;
                crate::quant::binary::for_each_index(&dims, |i, idx| {
                    let (ia, ib) = idx.iter().enumerate().fold((0, 0), |(p, q), (d, &v)| (p + v * sa[d], q + v * sb[d]));
                    let (x, y) = (a[ia].get(), b[ib].get());
                    out[i] = T::put(if max { x.max(y) } else { x.min(y) });
                });
                Ok(())
            })))
        }
        OpKind::Binary { op: b, act } => {
            let k = match b {
                nnrt_core::BinaryOp::Add => QBinaryOp::Add,
                nnrt_core::BinaryOp::Sub => QBinaryOp::Sub,
                _ => QBinaryOp::Mul,
            };
            let y = input(ctx, id, 1)?;
            let (aq, bq, oq) = (qp(ctx, in0)?, qp(ctx, y)?, qp(ctx, out)?);
            by_qtype!(xt, |T| {
                let p = QBinary::new::<T>(k, aq, bq, oq, *act);
                Ok(built(sources(ctx, id), move |ins, outs| {
                    let dims = outs[0].dims;
                    p.run::<T, T>(
                        cast::<T>(ins[0].bytes)?,
                        ins[0].dims,
                        cast::<T>(ins[1].bytes)?,
                        ins[1].dims,
                        cast_mut::<T>(outs[0].bytes)?,
                        dims,
                    );
                    Ok(())
                }))
            })
        }
        OpKind::Unary(u) if relu_bounds(u).is_some() => {
            let bounds = relu_bounds(u).unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
            let (iq, oq) = (qp(ctx, in0)?, qp(ctx, out)?);
            by_qtype!(xt, |T| {
                let r = ReluQ::new::<T>(iq, oq, bounds);
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    for (o, &x) in cast_mut::<T>(outs[0].bytes)?.iter_mut().zip(cast::<T>(ins[0].bytes)?) {
                        *o = r.apply(x);
                    }
                    Ok(())
                }))
            })
        }
        OpKind::Unary(nnrt_core::UnaryOp::LeakyRelu(alpha)) => {
            let r = LeakyReluQ::new(qp(ctx, in0)?, qp(ctx, out)?, *alpha);
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                for (o, &x) in cast_mut::<T>(outs[0].bytes)?.iter_mut().zip(cast::<T>(ins[0].bytes)?) {
                    *o = r.apply(x);
                }
                Ok(())
            })))
        }
        OpKind::Unary(u) => {
            let (iq, oq) = (qp(ctx, in0)?, qp(ctx, out)?);
            if *u == nnrt_core::UnaryOp::HardSwish {
                let h = HardSwishQ::new(iq, oq);
                return by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    for (o, &x) in cast_mut::<T>(outs[0].bytes)?.iter_mut().zip(cast::<T>(ins[0].bytes)?) {
                        *o = h.apply(x);
                    }
                    Ok(())
                })));
            }
            let lut = by_qtype!(xt, |T| if *u == nnrt_core::UnaryOp::Logistic {
                Lut8::logistic::<T>(iq, oq)
            } else {
                Lut8::tanh::<T>(iq, oq)
            });
            Ok(built(vec![source(ctx, in0)], move |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]| {
                lut.run(ins[0].bytes, outs[0].bytes);
                Ok(())
            }))
        }
        OpKind::Softmax { beta } => {
            let iq = qp(ctx, in0)?;
            let depth = *xd.last().unwrap_or(&1);
            if xt == DType::I16 {
                let s = Softmax16::new(*beta, iq.scale);
                return Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    s.run(cast::<i16>(ins[0].bytes)?, depth, cast_mut::<i16>(outs[0].bytes)?);
                    Ok(())
                }));
            }
            let s = Softmax8::new(*beta, iq.scale);
            by_qtype!(xt, |TI| by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                s.run::<TI, TO>(cast::<TI>(ins[0].bytes)?, depth.max(1), cast_mut::<TO>(outs[0].bytes)?);
                Ok(())
            }))))
        }
        OpKind::Reduce { .. } => {
            let rank = xd.len() as i64;
            let mut axes: Vec<usize> = const_ints(ctx, input(ctx, id, 1)?)?
                .into_iter()
                .map(|a| if a < 0 { a + rank } else { a } as usize)
                .collect();
            axes.sort_unstable();
            axes.dedup();
            let (iq, oq) = (qp(ctx, in0)?, qp(ctx, out)?);
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::mean::<T>(cast::<T>(ins[0].bytes)?, ins[0].dims, &axes, iq, oq, cast_mut::<T>(outs[0].bytes)?);
                Ok(())
            })))
        }
        OpKind::Concatenation { axis, .. } => {
            let rank = od.len() as i32;
            let axis = if *axis < 0 { axis + rank } else { *axis } as usize;
            let outer: usize = od[..axis].iter().product();
            let inner: usize = od[axis + 1..].iter().product();
            let oq = qp(ctx, out)?;
            let qs: Vec<QParams> = op.inputs.iter().flatten().map(|&x| qp(ctx, x)).collect::<Result<_, _>>()?;
            let size = ot.size();
            Ok(built(sources(ctx, id), move |ins, outs| {
                let parts: Vec<(&[u8], usize, QParams)> = ins.iter().zip(&qs).map(|(t, &q)| (t.bytes, t.dims[axis] * size, q)).collect();
                if size == 1 {
                    misc::concat_with_scaling(&parts, outer, inner, oq, outs[0].bytes);
                } else {
                    let mut o = 0;
                    for k in 0..outer {
                        for &(d, n, _) in &parts {
                            let len = n * inner;
                            outs[0].bytes[o..o + len].copy_from_slice(&d[k * len..(k + 1) * len]);
                            o += len;
                        }
                    }
                }
                Ok(())
            }))
        }
        OpKind::Quantize if xt == DType::F32 && matches!(ctx.graph.operand(out).quant, Quantization::PerAxis { .. }) => {
            let Quantization::PerAxis { scales, zero_points, axis } = ctx.graph.operand(out).quant.clone() else { return Err("per-axis".into()) };
            by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::quantize_per_channel::<TO>(cast::<f32>(ins[0].bytes)?, ins[0].dims, axis, &scales, &zero_points, cast_mut::<TO>(outs[0].bytes)?);
                Ok(())
            })))
        }
        OpKind::Quantize => {
            let oq = qp(ctx, out)?;
            if xt == DType::F32 {
                return by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    misc::quantize::<TO>(cast::<f32>(ins[0].bytes)?, oq, cast_mut::<TO>(outs[0].bytes)?);
                    Ok(())
                })));
            }
            let r = Requantize::new(qp(ctx, in0)?, oq);
            by_qtype!(xt, |TI| by_qtype!(ot, |TO| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                r.run::<TI, TO>(cast::<TI>(ins[0].bytes)?, cast_mut::<TO>(outs[0].bytes)?);
                Ok(())
            }))))
        }
        OpKind::Dequantize => match ctx.graph.operand(in0).quant.clone() {
            Quantization::PerAxis { scales, zero_points, axis } => by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::dequantize_per_channel::<T>(
                    cast::<T>(ins[0].bytes)?,
                    ins[0].dims,
                    axis,
                    &scales,
                    &zero_points,
                    cast_mut::<f32>(outs[0].bytes)?,
                );
                Ok(())
            }))),
            _ => {
                let q = qp(ctx, in0)?;
                by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    misc::dequantize::<T>(cast::<T>(ins[0].bytes)?, q, cast_mut::<f32>(outs[0].bytes)?);
                    Ok(())
                })))
            }
        },
        OpKind::ArgMinMax { max } => {
            let rank = xd.len() as i64;
            let a = *const_ints(ctx, input(ctx, id, 1)?)?.first().ok_or("the axis is empty")?;
            let axis = if a < 0 { a + rank } else { a } as usize;
            let max = *max;
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                let x = cast::<T>(ins[0].bytes)?;
                if ot == DType::I64 {
                    misc::arg_extreme::<T, i64>(x, ins[0].dims, axis, max, cast_mut::<i64>(outs[0].bytes)?, |i| i as i64);
                } else {
                    misc::arg_extreme::<T, i32>(x, ins[0].dims, axis, max, cast_mut::<i32>(outs[0].bytes)?, |i| i as i32);
                }
                Ok(())
            })))
        }
        OpKind::Resize(r) => {
            let opts = ResizeOpts {
                align_corners: r.align_corners,
                half_pixel_centers: r.half_pixel_centers,
            };
            let in_dims = [xd[0], xd[1], xd[2], xd[3]];
            let (oh, ow) = (od[1], od[2]);
            if xt == DType::U8 {
                return Ok(built(vec![source(ctx, in0)], move |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]| {
                    misc::resize_bilinear_u8(ins[0].bytes, in_dims, oh, ow, opts, outs[0].bytes);
                    Ok(())
                }));
            }
            by_qtype!(xt, |T| Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                misc::resize_bilinear_int::<T>(cast::<T>(ins[0].bytes)?, in_dims, oh, ow, opts, cast_mut::<T>(outs[0].bytes)?);
                Ok(())
            })))
        }
        OpKind::UnidirectionalSequenceLstm(_) => super::quant_lstm::build(ctx, id),
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}
