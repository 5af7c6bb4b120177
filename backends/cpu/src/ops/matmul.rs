//! TRANSPOSE_CONV, CONV_3D_TRANSPOSE and BATCH_MATMUL (float32): right-hand sides packed at
//! compile when constant. Quantized TRANSPOSE_CONV (uint8, int8, int16 activations with int8
//! weights) and BATCH_MATMUL (int8, int16, int16 × int8), with the dtype and zero-point rules
//! of TFLite's Prepare.

use nnrt_core::infer::window_output;
use nnrt_core::{cast, cast_mut, CompileCtx, Conv3D as Conv3DParams, DType, OpId, OpKind, TransposeConv as TransposeConvParams};

use super::conv::{conv3d_geom, conv_quant_of};
use super::util::{all_f32, check_act, check_all_params, check_params, const_f32, const_values, dtype, float_kernel, fused, input, nhwc, qp, quantized_input, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::quant::matmul::{QBatchMatMul, QTransposeConv};
use crate::quant::reference::ConvQuant;
use crate::quant::{QInt, Requant};
use crate::kernels::batch_matmul::{batch_matmul, MatMulGeom, PackedY, Rhs};
use crate::kernels::conv3d::Conv3dTranspose;
use crate::kernels::transpose_conv::{TransposeConv, TransposeConvGeom};

/// TRANSPOSE_CONV takes the integer kernels on a quantized input (its input 2), BATCH_MATMUL on
/// a quantized first input; CONV_3D_TRANSPOSE is float only.
fn quantized_op(ctx: &CompileCtx, id: OpId) -> bool {
    match ctx.graph.op(id).kind {
        OpKind::TransposeConv(_) => quantized_input(ctx, id, 2),
        OpKind::BatchMatMul { .. } => quantized_input(ctx, id, 0),
        _ => false,
    }
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    if super::int_forms::is_int_form(ctx, id) {
        return super::int_forms::supports(ctx, id);
    }
    let op = ctx.graph.op(id);
    if matches!(op.kind, OpKind::TransposeConv(_)) {
        nhwc(ctx, id)?;
    }
    match &op.kind {
        OpKind::TransposeConv(TransposeConvParams { act, .. }) | OpKind::Conv3DTranspose(Conv3DParams { act, .. }) => {
            check_act(*act)?;
            for &o in op.inputs.iter().skip(1).flatten().chain(&op.outputs) {
                let t = ctx.graph.operand(o).dtype;
                if t != nnrt_core::DType::F32 {
                    return Err(format!("operand {o} is {t}; this CPU kernel handles float32"));
                }
            }
            let w = op.input(1).ok_or("input 1 (filter) is absent")?;
            if !ctx.graph.operand(w).is_const() {
                return Err("the filter must be a constant tensor (it is packed at prepare)".into());
            }
            if op.input(3).is_some_and(|b| !ctx.graph.operand(b).is_const()) {
                return Err("the bias must be a constant tensor".into());
            }
            Ok(())
        }
        _ => all_f32(ctx, id),
    }
}

/// The geometry of TRANSPOSE_CONV `id` (float or quantized), its shapes checked.
pub(super) fn transpose_conv_geom(ctx: &CompileCtx, id: OpId) -> Result<TransposeConvGeom, String> {
    let op = ctx.graph.op(id);
    let OpKind::TransposeConv(p) = &op.kind else { return Err("not a TransposeConv".into()) };
    let (w, x) = (op.input(1).ok_or("input 1 (filter) is absent")?, op.input(2).ok_or("input 2 (input) is absent")?);
    let (wd, xd, od) = (ctx.dims(w), ctx.dims(x), ctx.dims(op.outputs[0]));
    if wd.len() != 4 || xd.len() != 4 || od.len() != 4 || wd[3] != xd[3] || wd[0] != od[3] || xd[0] != od[0] {
        return Err(format!("TransposeConv shapes do not fit: input {xd:?}, filter {wd:?}, output {od:?}"));
    }
    // The padding of the convolution that maps the output back onto the input.
    let wh = window_output(od[1], wd[1], p.stride[0], 1, p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(od[2], wd[2], p.stride[1], 1, p.padding, 1).ok_or("invalid window")?;
    Ok(TransposeConvGeom::nhwc(xd, wd, od, p.stride, [wh.pad_before, ww.pad_before]))
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    if super::int_forms::is_int_form(ctx, id) {
        return super::int_forms::build(ctx, id);
    }
    let op = ctx.graph.op(id);
    match &op.kind {
        OpKind::TransposeConv(p) => {
            let g = transpose_conv_geom(ctx, id)?;
            let (w, x) = (op.input(1).ok_or("input 1 (filter) is absent")?, op.input(2).ok_or("input 2 (input) is absent")?);
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            let bias = match op.input(3) {
                Some(b) => Some(const_f32(ctx, b).ok_or("the bias must be a float32 constant")?),
                None => None,
            };
            if filter.len() != g.out_c * g.k_h * g.k_w * g.in_c || bias.as_ref().is_some_and(|b| b.len() != g.out_c) {
                return Err(format!("the filter ({} values) or bias does not fit {} output channels", filter.len(), g.out_c));
            }
            let (act, tanh) = fused(p.act);
            let mut conv = TransposeConv::new(g, &filter, bias.as_deref(), act);
            Ok(float_kernel(source(ctx, x), tanh, move |x, out| conv.run(x, out)))
        }
        OpKind::Conv3DTranspose(p) => {
            let (w, x) = (op.input(1).ok_or("input 1 (filter) is absent")?, op.input(2).ok_or("input 2 (input) is absent")?);
            let (wd, xd, od) = (ctx.dims(w), ctx.dims(x), ctx.dims(op.outputs[0]));
            if wd.len() != 5 || xd.len() != 5 || od.len() != 5 || wd[3] != od[4] || wd[4] != xd[4] || xd[0] != od[0] {
                return Err(format!("CONV_3D_TRANSPOSE shapes do not fit: input {xd:?}, filter {wd:?}, output {od:?}"));
            }
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            let bias = match op.input(3) {
                Some(b) => Some(const_f32(ctx, b).ok_or("the bias must be a float32 constant")?),
                None => None,
            };
            if filter.len() != wd.iter().product::<usize>() || bias.as_ref().is_some_and(|b| b.len() != od[4]) {
                return Err(format!("the filter ({} values) or bias does not fit {wd:?}", filter.len()));
            }
            // The convolution from this op's output back to its input.
            let g = conv3d_geom(od, wd, xd, p)?;
            let (act, tanh) = fused(p.act);
            let mut conv = Conv3dTranspose::new(g, &filter, bias.as_deref(), act);
            Ok(float_kernel(source(ctx, x), tanh, move |x, out| conv.run(x, out)))
        }
        OpKind::BatchMatMul { adj_x, adj_y } => {
            let (x, y) = (op.input(0).ok_or("input 0 is absent")?, op.input(1).ok_or("input 1 is absent")?);
            let g = MatMulGeom::new(ctx.dims(x), ctx.dims(y), *adj_x, *adj_y)?;
            match const_f32(ctx, y) {
                Some(yv) => {
                    let packed = PackedY::pack(&g, &yv);
                    Ok(built(vec![source(ctx, x)], move |ins, outs| {
                        batch_matmul(&g, cast::<f32>(ins[0].bytes)?, Rhs::Packed(&packed), cast_mut::<f32>(outs[0].bytes)?);
                        Ok(())
                    }))
                }
                None => Ok(built(vec![source(ctx, x), source(ctx, y)], move |ins, outs| {
                    batch_matmul(&g, cast::<f32>(ins[0].bytes)?, Rhs::Raw(cast::<f32>(ins[1].bytes)?), cast_mut::<f32>(outs[0].bytes)?);
                    Ok(())
                })),
            }
        }
        _ => Err("not a matmul op".into()),
    }
}

/// Why the integer kernels cannot run `op`, or `Ok`.
fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    check_all_params(ctx, id)?;
    let op = ctx.graph.op(id);
    let out = op.outputs[0];
    match &op.kind {
        OpKind::TransposeConv(_) => {
            let (w, x) = (input(ctx, id, 1)?, input(ctx, id, 2)?);
            let (xt, wt, ot) = (dtype(ctx, x), dtype(ctx, w), dtype(ctx, out));
            match (xt, wt, ot) {
                (DType::U8, DType::U8, DType::U8) | (DType::I8, DType::I8, DType::I8) | (DType::I16, DType::I8, DType::I16) => {}
                _ => return Err(format!("quantized TransposeConv with input {xt}, filter {wt}, output {ot} is not supported")),
            }
            if !ctx.graph.operand(w).is_const() {
                return Err("the quantized filter must be constant (it is packed at prepare)".into());
            }
            if let Some(b) = op.input(3) {
                let want: &[DType] = if xt == DType::I16 { &[DType::I32, DType::I64] } else { &[DType::I32] };
                if !want.contains(&dtype(ctx, b)) || !ctx.graph.operand(b).is_const() {
                    return Err(format!("the bias {b} must be a constant of type {want:?}, got {}", dtype(ctx, b)));
                }
            }
            if xt == DType::I16 && (qp(ctx, x)?.zero_point != 0 || qp(ctx, out)?.zero_point != 0) {
                return Err("int16 TransposeConv needs input and output zero points 0".into());
            }
            transpose_conv_geom(ctx, id).map(|_| ())
        }
        OpKind::BatchMatMul { adj_x, adj_y } => {
            let (x, y) = (input(ctx, id, 0)?, input(ctx, id, 1)?);
            let (xt, yt, ot) = (dtype(ctx, x), dtype(ctx, y), dtype(ctx, out));
            match (xt, yt, ot) {
                (DType::I8, DType::I8, DType::I8) | (DType::I16, DType::I16, DType::I16) | (DType::I16, DType::I8, DType::I16) => {}
                _ => return Err(format!("quantized BatchMatMul with inputs {xt}, {yt} and output {ot} is not supported")),
            }
            check_params(ctx, y)?;
            let (xq, yq, oq) = (qp(ctx, x)?, qp(ctx, y)?, qp(ctx, out)?);
            if xt == DType::I16 && (xq.zero_point != 0 || yq.zero_point != 0 || oq.zero_point != 0) {
                return Err("int16 BatchMatMul needs zero points 0".into());
            }
            MatMulGeom::new(ctx.dims(x), ctx.dims(y), *adj_x, *adj_y).map(|_| ())
        }
        _ => Err(format!("{} has no quantized matmul kernel", op.kind.name())),
    }
}

/// Builds the integer kernel of `op`.
fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports_quantized(ctx, id)?;
    let op = ctx.graph.op(id);
    let out = op.outputs[0];
    match &op.kind {
        OpKind::TransposeConv(_) => {
            let (w, x, bias) = (input(ctx, id, 1)?, input(ctx, id, 2)?, op.input(3));
            let g = transpose_conv_geom(ctx, id)?;
            let xt = dtype(ctx, x);
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("the filter must be constant")?.bytes();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let mut q = conv_quant_of::<TI>(ctx, id, (x, w, bias), g.out_c, 0, false)?;
                // The int8 and 16x8 reference kernels ignore the filter zero point; int16
                // accumulates in 64 bits unless the bias is int32.
                if xt != DType::U8 {
                    q.w_zp.iter_mut().for_each(|z| *z = 0);
                }
                q.wide = xt == DType::I16 && bias.is_none_or(|b| dtype(ctx, b) == DType::I64);
                let tc = QTransposeConv::new::<TW>(g, q, &const_values::<TW>(wbytes));
                Ok(built(vec![source(ctx, x)], move |ins, outs| {
                    tc.run::<TI, TI>(cast::<TI>(ins[0].bytes)?, cast_mut::<TI>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        OpKind::BatchMatMul { adj_x, adj_y } => {
            let (x, y) = (input(ctx, id, 0)?, input(ctx, id, 1)?);
            let g = MatMulGeom::new(ctx.dims(x), ctx.dims(y), *adj_x, *adj_y)?;
            let (xq, yq, oq) = (qp(ctx, x)?, qp(ctx, y)?, qp(ctx, out)?);
            let (xt, yt) = (dtype(ctx, x), dtype(ctx, y));
            // `GetQuantizedConvolutionMultipler`: the scale product in float, then widened.
            let requant = Requant::fixed((xq.scale * yq.scale) as f64 / oq.scale as f64);
            let y_const = ctx.graph.operand(y).data.as_ref().map(|d| d.bytes());
            by_qtype!(xt, |TX| by_qtype!(yt, |TY| {
                let q = ConvQuant {
                    in_zp: xq.zero_point,
                    w_zp: vec![yq.zero_point; g.n],
                    out_zp: oq.zero_point,
                    requant: vec![requant; g.n],
                    act: (<TX as QInt>::MIN, <TX as QInt>::MAX),
                    bias: None,
                    wide: xt == DType::I16,
                };
                let yv = y_const.map(const_values::<TY>);
                let constant = yv.is_some();
                let mm = QBatchMatMul::new::<TX, TY>(g, q, yv.as_deref());
                let inputs = if constant { vec![source(ctx, x)] } else { vec![source(ctx, x), source(ctx, y)] };
                Ok(built(inputs, move |ins, outs| {
                    let y: &[TY] = if constant { &[] } else { cast::<TY>(ins[1].bytes)? };
                    mm.run::<TX, TY, TX>(cast::<TX>(ins[0].bytes)?, y, cast_mut::<TX>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        _ => Err(format!("{} has no quantized matmul kernel", op.kind.name())),
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["TransposeConv", "Conv3DTranspose", "BatchMatMul"], supports, build, (quantized_op, supports_quantized, build_quantized));
}
