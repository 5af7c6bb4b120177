//! CONV_2D, CONV_3D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: float32 kernels (weights packed at
//! compile, bias and clamp fused), integer kernels (uint8, int8, int16 activations with 8-bit
//! weights: TFLite's multipliers prepared at compile) and dynamic-range ("hybrid") kernels:
//! float input and output, int8 weights quantized per channel or per tensor, inputs quantized
//! per batch at run time exactly as TFLite does (asymmetric for convolutions and for FC with
//! `asymmetric_quantize_inputs`, symmetric otherwise).

use std::sync::atomic::{AtomicU64, Ordering};

use nnrt_core::infer::window_output;
use nnrt_core::shape::num_elements;
use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, InputSource, Numerics, OpId, OpKind, OperandId, Quantization};

use super::util::{QuantIo, all_f32, channel_quant, check_act, const_f32, const_ints, is_const_f32, const_values, dtype, float_kernel, fused, input, nhwc, qp, quantized, quantized_input, source, tanh_in_place};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::conv::{Conv2d, ConvGeom};
use crate::kernels::conv3d::{Conv3d, Conv3dGeom};
use crate::kernels::depthwise::{depthwise_conv2d, DepthwiseGeom};
use crate::kernels::gemm::{gemm, PackedB};
use crate::kernels::sparse_conv::SparseConv1x1;
use crate::quant::conv::{HybridConv, HybridFullyConnected, QConv, QFullyConnected};
use crate::quant::depthwise::{HybridDepthwise, QDepthwise};
use crate::quant::hybrid::{self, FloatClamp};
use crate::quant::reference::ConvQuant;
use crate::quant::{activation_range, QInt, Requant};

/// Whether `op` takes the integer or hybrid kernels: a quantized input, or quantized 8-bit
/// weights (CONV_3D has float kernels only).
fn quantized_op(ctx: &CompileCtx, id: OpId) -> bool {
    let op = ctx.graph.op(id);
    !matches!(op.kind, OpKind::Conv3D(_))
        && (quantized_input(ctx, id, 0) || op.input(1).is_some_and(|w| quantized(ctx, w) && dtype(ctx, w) != DType::I16))
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    if super::int_forms::is_int_form(ctx, id) {
        return super::int_forms::supports(ctx, id);
    }
    let op = ctx.graph.op(id);
    if matches!(op.kind, OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_)) {
        nhwc(ctx, id)?;
    }
    all_f32(ctx, id)?;
    check_act(act_of(&op.kind))?;
    if op.input(1).is_none() {
        return Err("input 1 (the filter) is absent".into());
    }
    // A filter or bias computed at run time (TFLite allows both) is read, and packed, on each run.
    Ok(())
}

fn supports_quantized(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let QuantIo { x: in0, out, xt, ot, .. } = QuantIo::of(ctx, id)?;
    let op = ctx.graph.op(id);
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
        (DType::F32, DType::I8, DType::F32) => supports_hybrid(ctx, id),
        _ => Err(format!("quantized {} with input {xt}, weights {wt}, output {ot} is not supported", op.kind.name())),
    }
}

/// The fused activation of a convolution-like op (`None` for other kinds).
fn act_of(kind: &OpKind) -> Activation {
    match kind {
        OpKind::Conv2D(p) => p.act,
        OpKind::Conv3D(p) => p.act,
        OpKind::DepthwiseConv2D(p) => p.act,
        OpKind::FullyConnected(p) => p.act,
        OpKind::TransposeConv(p) => p.act,
        _ => Activation::None,
    }
}

/// The geometry of the 3-D convolution from NDHWC `big` to NDHWC `small` with filter dims `wd`
/// (their first three are the window): a CONV_3D's (input, output), or a CONV_3D_TRANSPOSE's
/// (output, input), whose padding is that of the convolution back onto its input.
pub(super) fn conv3d_geom(big: &[usize], wd: &[usize], small: &[usize], p: &nnrt_core::Conv3D) -> Result<Conv3dGeom, String> {
    let mut pad = [0; 3];
    for (a, pad) in pad.iter_mut().enumerate() {
        *pad = window_output(big[1 + a], wd[a], p.stride[a], p.dilation[a], p.padding, a).ok_or("invalid window")?.pad_before;
    }
    Ok(Conv3dGeom {
        batch: big[0],
        input: [big[1], big[2], big[3]],
        in_c: big[4],
        output: [small[1], small[2], small[3]],
        out_c: small[4],
        k: [wd[0], wd[1], wd[2]],
        stride: p.stride,
        dilation: p.dilation,
        pad,
    })
}

/// The kernel geometry of a CONV_2D from its input, filter (OHWI) and output dims: TFLite's
/// padding rule, groups from the channel ratio. Shared by the float, quantized and hybrid kernels.
pub(super) fn conv_geom(xd: &[usize], wd: &[usize], od: &[usize], p: &nnrt_core::Conv2D) -> Result<ConvGeom, String> {
    let wh = window_output(xd[1], wd[1], p.stride[0], p.dilation[0], p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], wd[2], p.stride[1], p.dilation[1], p.padding, 1).ok_or("invalid window")?;
    Ok(ConvGeom {
        batch: xd[0],
        in_h: xd[1],
        in_w: xd[2],
        in_c: xd[3],
        out_h: od[1],
        out_w: od[2],
        out_c: od[3],
        k_h: wd[1],
        k_w: wd[2],
        stride_h: p.stride[0],
        stride_w: p.stride[1],
        dil_h: p.dilation[0],
        dil_w: p.dilation[1],
        pad_top: wh.pad_before,
        pad_left: ww.pad_before,
        groups: xd[3] / wd[3].max(1),
    })
}

/// The kernel geometry of a DEPTHWISE_CONV_2D (filter [1, H, W, C*multiplier]).
pub(super) fn depthwise_geom(xd: &[usize], wd: &[usize], od: &[usize], p: &nnrt_core::DepthwiseConv2D) -> Result<DepthwiseGeom, String> {
    let wh = window_output(xd[1], wd[1], p.stride[0], p.dilation[0], p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], wd[2], p.stride[1], p.dilation[1], p.padding, 1).ok_or("invalid window")?;
    Ok(DepthwiseGeom {
        batch: xd[0],
        in_h: xd[1],
        in_w: xd[2],
        in_c: xd[3],
        multiplier: wd[3] / xd[3].max(1),
        out_h: od[1],
        out_w: od[2],
        k_h: wd[1],
        k_w: wd[2],
        stride_h: p.stride[0],
        stride_w: p.stride[1],
        dil_h: p.dilation[0],
        dil_w: p.dilation[1],
        pad_top: wh.pad_before,
        pad_left: ww.pad_before,
    })
}

/// An optional bias input: `Some(None)` when absent, `Some(Some(values))` when a float32
/// constant, `None` when it is anything else.
pub(super) fn const_bias(ctx: &CompileCtx, b: Option<nnrt_core::OperandId>) -> Option<Option<Vec<f32>>> {
    match b {
        Some(b) => const_f32(ctx, b).map(|v| Some(v.into_owned())),
        None => Some(None),
    }
}

fn build_quantized(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let QuantIo { x: in0, xt, xd, od, .. } = QuantIo::of(ctx, id)?;
    if xt == DType::F32 {
        return build_hybrid(ctx, id);
    }
    let op = ctx.graph.op(id);
    let w = input(ctx, id, 1)?;
    let wd = ctx.dims(w).to_vec();
    match &op.kind {
        OpKind::Conv2D(p) => {
            let g = conv_geom(&xd, &wd, &od, p)?;
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("filter must be constant")?.bytes();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let q = conv_quant::<TI>(ctx, id, g.out_c, 0, false)?;
                let conv = QConv::new::<TI, TW>(g, q, &const_values::<TW>(wbytes));
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    conv.run::<TI, TI>(cast::<TI>(ins[0].bytes)?, cast_mut::<TI>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        OpKind::DepthwiseConv2D(p) => {
            let g = depthwise_geom(&xd, &wd, &od, p)?;
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("filter must be constant")?.bytes();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let q = conv_quant::<TI>(ctx, id, g.out_c(), 3, false)?;
                let dw = QDepthwise::new::<TI, TW>(g, q, &const_values::<TW>(wbytes));
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    dw.run::<TI, TI>(cast::<TI>(ins[0].bytes)?, cast_mut::<TI>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        OpKind::FullyConnected(_) => {
            let k = *wd.last().ok_or("weights have no dims")?;
            let n = num_elements(&wd).unwrap_or(0) / k.max(1);
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("weights must be constant")?.bytes();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let q = conv_quant::<TI>(ctx, id, n, 0, true)?;
                let fc = QFullyConnected::new::<TI, TW>(n, k, q, &const_values::<TW>(wbytes));
                Ok(built(vec![source(ctx, in0)], move |ins, outs| {
                    fc.run::<TI, TI>(cast::<TI>(ins[0].bytes)?, cast_mut::<TI>(outs[0].bytes)?);
                    Ok(())
                }))
            }))
        }
        _ => Err(format!("{} has no quantized kernel", op.kind.name())),
    }
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    if super::int_forms::is_int_form(ctx, id) {
        return super::int_forms::build(ctx, id);
    }
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let w = op.input(1).ok_or("input 1 (weights) is absent")?;
    let bias_const = const_bias(ctx, op.input(2));
    // A bias computed at run time is read from its input on each run.
    let dyn_bias = if bias_const.is_none() { op.input(2) } else { None };
    let bias = bias_const.unwrap_or(None);
    let xd = ctx.dims(x).to_vec();
    let wd = ctx.dims(w).to_vec();
    let od = ctx.dims(op.outputs[0]).to_vec();
    if !matches!(op.kind, OpKind::FullyConnected(_)) && (!is_const_f32(ctx, w) || dyn_bias.is_some()) {
        return build_dynamic(ctx, id, (x, w, dyn_bias), bias, (&xd, &wd, &od));
    }
    match &op.kind {
        OpKind::Conv2D(p) => {
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            let geom = conv_geom(&xd, &wd, &od, p)?;
            let (act, tanh) = fused(p.act);
            if let Some(sparse) = SparseConv1x1::try_new(geom, &filter, bias.as_deref(), act) {
                log::debug!("{id}: 1x1 CONV_2D runs sparse ({} of {} weights nonzero)", sparse.nnz(), geom.filter_len());
                return Ok(float_kernel(source(ctx, x), tanh, move |x, out| sparse.run(x, out)));
            }
            let mut conv = Conv2d::new(geom, &filter, bias.as_deref(), act);
            Ok(float_kernel(source(ctx, x), tanh, move |x, out| conv.run(x, out)))
        }
        OpKind::Conv3D(p) => {
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?;
            if xd.len() != 5 || wd.len() != 5 || od.len() != 5 {
                return Err(format!("CONV_3D takes 5-D tensors: input {xd:?}, filter {wd:?}, output {od:?}"));
            }
            let geom = conv3d_geom(&xd, &wd, &od, p)?;
            if filter.len() != wd.iter().product::<usize>() || wd[3] != xd[4] || wd[4] != od[4] || bias.as_ref().is_some_and(|b| b.len() != od[4]) {
                return Err(format!("filter {wd:?} or bias does not fit input {xd:?} and output {od:?}"));
            }
            let (act, tanh) = fused(p.act);
            let conv = Conv3d::new(geom, &filter, bias.as_deref(), act);
            Ok(float_kernel(source(ctx, x), tanh, move |x, out| conv.run(x, out)))
        }
        OpKind::DepthwiseConv2D(p) => {
            let filter = const_f32(ctx, w).ok_or("the filter must be a float32 constant")?.into_owned();
            let geom = depthwise_geom(&xd, &wd, &od, p)?;
            let (act, tanh) = fused(p.act);
            Ok(float_kernel(source(ctx, x), tanh, move |x, out| depthwise_conv2d(&geom, x, &filter, bias.as_deref(), act, out)))
        }
        OpKind::FullyConnected(p) => {
            let (n, k) = (wd[0], wd[1]);
            let (act, tanh) = fused(p.act);
            if let Some(b) = dyn_bias {
                if ctx.graph.operand(b).dtype != DType::F32 || num_elements(ctx.dims(b)) != Some(n) {
                    return Err(format!("the bias must be {n} float32 values"));
                }
            }
            let weights = const_f32(ctx, w).map(|v| PackedB::pack(n, k, &v));
            let mut sources = vec![source(ctx, x)];
            if weights.is_none() {
                // Weights computed at run time: packed on every run.
                sources.push(source(ctx, w));
            }
            let bias_at = dyn_bias.map(|b| {
                sources.push(source(ctx, b));
                sources.len() - 1
            });
            Ok(built(sources, move |ins, outs| {
                let a = cast::<f32>(ins[0].bytes)?;
                let run_packed;
                let packed = match &weights {
                    Some(p) => p,
                    None => {
                        run_packed = PackedB::pack(n, k, cast::<f32>(ins[1].bytes)?);
                        &run_packed
                    }
                };
                let bias = match bias_at {
                    Some(i) => Some(cast::<f32>(ins[i].bytes)?),
                    None => bias.as_deref(),
                };
                let out = cast_mut::<f32>(outs[0].bytes)?;
                let m = a.len() / k.max(1);
                gemm(m, a, k, packed, bias, act, out, n);
                if tanh {
                    tanh_in_place(out);
                }
                Ok(())
            }))
        }
        _ => Err("not a convolution".into()),
    }
}

/// A float CONV_2D, DEPTHWISE_CONV_2D or CONV_3D whose filter, or bias, is computed at run time
/// (a DEQUANTIZE of a variable, an op's output, a graph input): both are read from their inputs
/// on each run and the filter packed then, the values exactly those of the constant-weight
/// kernels (test). `bias` is the constant bias, if any.
fn build_dynamic(ctx: &CompileCtx, id: OpId, (x, w, dyn_bias): (OperandId, OperandId, Option<OperandId>), bias: Option<Vec<f32>>, (xd, wd, od): (&[usize], &[usize], &[usize])) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    for (what, t) in [("filter", Some(w)), ("bias", dyn_bias)] {
        if let Some(t) = t {
            if ctx.graph.operand(t).dtype != DType::F32 {
                return Err(format!("the {what} must be float32"));
            }
        }
    }
    let mut sources = vec![source(ctx, x), source(ctx, w)];
    let bias_at = dyn_bias.map(|b| {
        sources.push(source(ctx, b));
        sources.len() - 1
    });
    let n_w: usize = wd.iter().product();
    let bias_dims_ok = |n: usize| dyn_bias.is_none_or(|b| num_elements(ctx.dims(b)) == Some(n)) && bias.as_ref().is_none_or(|b| b.len() == n);
    /// The kernel geometry a run packs the filter for.
    enum Geom {
        Conv(ConvGeom),
        Depthwise(DepthwiseGeom),
        Conv3(Conv3dGeom),
    }
    let (geom, out_c, act) = match &op.kind {
        OpKind::Conv2D(p) if xd.len() == 4 && wd.len() == 4 && od.len() == 4 => {
            let g = conv_geom(xd, wd, od, p)?;
            let fits = wd[0] == od[3] && wd[3] > 0 && xd[3] % wd[3] == 0 && od[3] % g.groups.max(1) == 0;
            (fits.then_some(Geom::Conv(g)), od[3], p.act)
        }
        OpKind::DepthwiseConv2D(p) if xd.len() == 4 && wd.len() == 4 && od.len() == 4 => {
            let g = depthwise_geom(xd, wd, od, p)?;
            (((wd[0] == 1 && wd[3] == od[3] && g.out_c() == od[3]).then_some(Geom::Depthwise(g))), od[3], p.act)
        }
        OpKind::Conv3D(p) if xd.len() == 5 && wd.len() == 5 && od.len() == 5 => {
            let g = conv3d_geom(xd, wd, od, p)?;
            ((wd[3] == xd[4] && wd[4] == od[4]).then_some(Geom::Conv3(g)), od[4], p.act)
        }
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::Conv3D(_) => {
            return Err(format!("{} takes {}-D tensors: input {xd:?}, filter {wd:?}, output {od:?}", op.kind.name(), if matches!(op.kind, OpKind::Conv3D(_)) { 5 } else { 4 }));
        }
        _ => return Err("not a convolution".into()),
    };
    let geom = match geom {
        Some(g) if bias_dims_ok(out_c) => g,
        _ => return Err(format!("filter {wd:?} or bias does not fit input {xd:?} and output {od:?}")),
    };
    let (act, tanh) = fused(act);
    Ok(built(sources, move |ins, outs| {
        let filter = cast::<f32>(ins[1].bytes)?;
        if filter.len() != n_w {
            return Err(format!("the filter holds {} values, its shape {n_w}", filter.len()));
        }
        let b = match bias_at {
            Some(i) => Some(cast::<f32>(ins[i].bytes)?),
            None => bias.as_deref(),
        };
        if b.is_some_and(|b| b.len() != out_c) {
            return Err(format!("the bias does not hold {out_c} values, one per output channel"));
        }
        let (x, out) = (cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
        match &geom {
            Geom::Conv(g) => Conv2d::new(*g, filter, b, act).run(x, out),
            Geom::Depthwise(g) => depthwise_conv2d(g, x, filter, b, act, out),
            Geom::Conv3(g) => Conv3d::new(*g, filter, b, act).run(x, out),
        }
        if tanh {
            tanh_in_place(out);
        }
        Ok(())
    }))
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
    let single = ctx.graph.numerics == Numerics::ExecuTorch;
    let requant = w_scales
        .iter()
        .map(|&ws| {
            if single {
                // XNNPACK: `input_scale * kernel_scale / output_scale` in float.
                Requant::Single(xq.scale * ws / oq.scale)
            } else if float_requant {
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

/// Whether the hybrid kernels handle `op` (float input/output, constant int8 weights).
fn supports_hybrid(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
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

/// Builds the kernel of a hybrid op (float input and output, int8 weights).
fn build_hybrid(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports_hybrid(ctx, id)?;
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let w = op.input(1).ok_or("input 1 is absent")?;
    let wo = ctx.graph.operand(w);
    let weights: Vec<i8> = wo.data.as_ref().ok_or("weights must be constant")?.bytes().iter().map(|&b| b as i8).collect();
    let bias = op.input(2).map(|b| const_f32(ctx, b).map(|v| v.into_owned()).ok_or("bias must be float32")).transpose()?;
    let xd = ctx.dims(x).to_vec();
    let od = ctx.dims(op.outputs[0]).to_vec();
    let wd = ctx.dims(w).to_vec();
    let (w_scales, per_channel) = match &wo.quant {
        Quantization::PerAxis { scales, .. } => (scales.clone(), scales.iter().any(|&s| s != scales[0])),
        Quantization::PerTensor { scale, .. } => (vec![*scale], false),
        Quantization::None => return Err("hybrid weights have no scale".into()),
    };
    if w_scales.is_empty() {
        return Err("hybrid weights have an empty list of scales".into());
    }
    match &op.kind {
        OpKind::Conv2D(p) => {
            let g = conv_geom(&xd, &wd, &od, p)?;
            let channel_scale: Vec<f32> = (0..g.out_c).map(|c| w_scales[c.min(w_scales.len() - 1)]).collect();
            let clamp = clamp_of(p.act);
            let asym = per_channel || g.groups != 1;
            let one = ConvGeom { batch: 1, ..g };
            if let Some(conv) = HybridConv::new(one, &weights, &channel_scale, bias.as_deref(), (clamp.0, clamp.1)) {
                return Ok(hybrid_conv(source(ctx, x), g.batch, asym, true, move |xq, zx, s, out| conv.run(xq, zx, s, out)));
            }
            // Grouped: the reference loops into int32, then the float epilogue.
            let conv = QConv::new::<i8, i8>(one, ConvQuant::raw(g.out_c), &weights);
            let f = Finish { channel_scale, bias, clamp, scales_first: false };
            Ok(hybrid_conv(source(ctx, x), g.batch, asym, false, f.after(move |xq, zx, acc| conv.run_raw(xq, zx, acc))))
        }
        OpKind::DepthwiseConv2D(p) => {
            let g = depthwise_geom(&xd, &wd, &od, p)?;
            let channel_scale: Vec<f32> = (0..g.out_c()).map(|c| w_scales[c.min(w_scales.len() - 1)]).collect();
            let clamp = clamp_of(p.act);
            let one = DepthwiseGeom { batch: 1, ..g };
            if let Some(dw) = HybridDepthwise::new(one, &weights, &channel_scale, bias.as_deref(), (clamp.0, clamp.1)) {
                return Ok(hybrid_conv(source(ctx, x), g.batch, true, true, move |xq, zx, s, out| dw.run(xq, zx, s, out)));
            }
            // No VNNI kernel: the integer loops into int32, then the float epilogue.
            let dw = QDepthwise::new::<i8, i8>(one, ConvQuant::raw(g.out_c()), &weights);
            let f = Finish { channel_scale, bias, clamp, scales_first: true };
            Ok(hybrid_conv(source(ctx, x), g.batch, true, false, f.after(move |xq, zx, acc| dw.run_raw(xq, zx, acc))))
        }
        OpKind::FullyConnected(p) => {
            let k = *wd.last().ok_or("weights have no dims")?;
            let n = weights.len() / k.max(1);
            let asym = p.asymmetric_quantize_inputs;
            let act = p.act;
            let clamp = clamp_of(act);
            let per_channel = matches!(wo.quant, Quantization::PerAxis { .. });
            let channel_scale = w_scales.clone();
            let scale_of = if per_channel { &channel_scale[..] } else { channel_scale.get(..1).unwrap_or(&[]) };
            let fc = HybridFullyConnected::new(n, k, &weights, scale_of, bias.as_deref(), (clamp.0, clamp.1))
                .ok_or_else(|| format!("{} weight scales and {} bias values for {n} output channels", scale_of.len(), bias.as_ref().map_or(n, |b| b.len())))?;
            // Per-row quantization parameters, kept across runs (a recurrent model runs its
            // small fully connected layers hundreds of times: three allocations each were 8 %
            // of a dynamic-range LSTM's run).
            let (mut meta, mut scales, mut zx): (Vec<AtomicU64>, Vec<f32>, Vec<i32>) = Default::default();
            Ok(built(vec![source(ctx, x)], move |ins, outs| {
                let input = cast::<f32>(ins[0].bytes)?;
                let m = input.len() / k.max(1);
                let out = cast_mut::<f32>(outs[0].bytes)?;
                if is_zero_vector(input) {
                    // TFLite skips the product for an all-zero input: bias, then activation.
                    for (r, o) in out.iter_mut().enumerate() {
                        *o = bias.as_ref().map_or(0.0, |b| b[r % n]).max(clamp.0).min(clamp.1);
                    }
                    return Ok(());
                }
                // Each row quantized on its own (its scale and zero point), rows split across the
                // kernel pool: (scale bits, zero point) per row through atomics.
                meta.resize_with(m, || AtomicU64::new(0));
                let meta = &meta[..m];
                let quantize_rows = |r0: usize, q: &mut [u8]| {
                    for (j, q) in q.chunks_exact_mut(k.max(1)).enumerate() {
                        let x = &input[(r0 + j) * k..(r0 + j + 1) * k];
                        let (s, z) = if asym {
                            let (s, z) = hybrid::asymmetric_quantize_unsigned(x, q);
                            (s, z + 128)
                        } else {
                            (hybrid::symmetric_quantize_unsigned(x, q), 128)
                        };
                        meta[r0 + j].store(((s.to_bits() as u64) << 32) | z as u32 as u64, Ordering::Relaxed);
                    }
                };
                with_xq(m * k, |xq| {
                    match crate::kernels::binary::par_chunk(m, k) {
                        Some(c) if k > 0 => nnrt_threads::par_chunks_mut(xq, c * k, |t, q| quantize_rows(t * c, q)),
                        _ => quantize_rows(0, xq),
                    }
                    scales.clear();
                    zx.clear();
                    for v in meta.iter().map(|v| v.load(Ordering::Relaxed)) {
                        scales.push(f32::from_bits((v >> 32) as u32));
                        zx.push(v as u32 as i32);
                    }
                    fc.run(xq, &zx, &scales, out);
                });
                Ok(())
            }))
        }
        _ => Err("not a hybrid op".into()),
    }
}


/// How a hybrid convolution scales its raw accumulators back to float (`hybrid::finish`).
struct Finish {
    channel_scale: Vec<f32>,
    bias: Option<Vec<f32>>,
    clamp: FloatClamp,
    scales_first: bool,
}

impl Finish {
    /// The image kernel of [`hybrid_conv`] for int8 bytes: `raw` (the integer convolution of
    /// one image into int32 accumulators, given its zero point), then this float epilogue.
    fn after(self, raw: impl Fn(&[i8], i32, &mut [i32]) + Send + 'static) -> impl Fn(&[u8], i32, f32, &mut [f32]) + Send + 'static {
        move |xq, zx, s, out| {
            let mut acc = vec![0i32; out.len()];
            raw(bytemuck::cast_slice(xq), zx, &mut acc);
            hybrid::finish(&acc, &self.channel_scale, s, self.bias.as_deref(), self.clamp, self.scales_first, out);
        }
    }
}

/// The kernel of a hybrid CONV_2D or DEPTHWISE_CONV_2D: quantizes each of the `batch` images
/// of the float input on its own (as TFLite does; asymmetric when `asym`, else symmetric), to
/// int8 bytes or, when `unsigned`, to the unsigned bytes `q + 128` the integer GEMM reads, and
/// runs `run(image bytes, zero point in that domain, scale, output image)`.
fn hybrid_conv(input: InputSource, batch: usize, asym: bool, unsigned: bool, run: impl Fn(&[u8], i32, f32, &mut [f32]) + Send + 'static) -> Built {
    built(vec![input], move |ins, outs| {
        let input = cast::<f32>(ins[0].bytes)?;
        let out = cast_mut::<f32>(outs[0].bytes)?;
        let (per_in, per_out) = (input.len() / batch.max(1), out.len() / batch.max(1));
        with_xq(per_in, |xq| {
            for (x, o) in input.chunks_exact(per_in.max(1)).zip(out.chunks_exact_mut(per_out.max(1))).take(batch) {
                let (scale, zx) = match (asym, unsigned) {
                    (true, true) => {
                        let (s, z) = hybrid::asymmetric_quantize_unsigned(x, xq);
                        (s, z + 128)
                    }
                    (false, true) => (hybrid::symmetric_quantize_unsigned(x, xq), 128),
                    (true, false) => hybrid::asymmetric_quantize(x, bytemuck::cast_slice_mut(xq)),
                    (false, false) => (hybrid::symmetric_quantize(x, bytemuck::cast_slice_mut(xq)), 0),
                };
                run(xq, zx, scale, o);
            }
        });
        Ok(())
    })
}

/// TFLite's `IsZeroVector`: every value is ±0 (a NaN is not). Folds the bits without an early
/// exit, which vectorizes (the `all` it replaces ran one compare and branch per value).
fn is_zero_vector(x: &[f32]) -> bool {
    x.chunks(4096).all(|c| c.iter().fold(0u32, |acc, v| acc | (v.to_bits() << 1)) == 0)
}

thread_local! {
    /// The quantized input of this thread's last hybrid op, kept for the next one (every byte
    /// is written before it is read: no allocation or zeroing per run).
    static XQ: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` on `n` bytes of this thread's hybrid scratch ([`XQ`]).
fn with_xq<R>(n: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    let mut v = XQ.with(|c| c.take());
    if v.len() < n {
        v.resize(n, 0);
    }
    let r = f(&mut v[..n]);
    XQ.with(|c| c.set(v));
    r
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.ops_with_int(&["Conv2D", "Conv3D", "DepthwiseConv2D", "FullyConnected"], supports, build, (quantized_op, supports_quantized, build_quantized));
}

#[cfg(test)]
mod tests {
    use super::is_zero_vector;

    #[test]
    fn zero_vectors_are_all_signed_zeros() {
        let mut x = vec![0.0f32; 10_000];
        x[7] = -0.0;
        assert!(is_zero_vector(&x) && is_zero_vector(&[]));
        // Any other value, in any 4096-block, makes it non-zero: the smallest subnormal, NaN, inf.
        for (at, v) in [(0, f32::from_bits(1)), (4095, f32::NAN), (4096, -f32::from_bits(1)), (9_999, f32::INFINITY), (5000, -1e-30)] {
            let mut y = x.clone();
            y[at] = v;
            assert!(!is_zero_vector(&y), "{v} at {at}");
        }
    }
}
