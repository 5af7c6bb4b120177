//! The plain-integer forms of CONV_2D, DEPTHWISE_CONV_2D and BATCH_MATMUL (TOSA's int8 and
//! int16 ops with zero points as inputs 3 and 4, or 2 and 3 for the matmul): exact int32 sums
//! for int8, int64 (TOSA's int48) for int16; and of 2-D pooling on int8/int16 without
//! quantization parameters (average with zero points as inputs 1 and 2). Kernels in [`crate::quant::tosa`]; the families' `supports`/`build` hand these forms
//! here.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, Padding, PoolKind};

use super::util::source;
use crate::kernel::{built, Built};
use crate::quant::conv::QConv;
use crate::quant::depthwise::QDepthwise;
use crate::quant::reference::ConvQuant;
use crate::quant::tosa::{matmul_int, IntConv, IntConv3d, IntPool};
use crate::quant::{QInt, Requant};

/// Whether `id` is a plain-integer form: its zero-point inputs are present.
pub(crate) fn is_int_form(ctx: &CompileCtx, id: OpId) -> bool {
    let op = ctx.graph.op(id);
    match op.kind {
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::Conv3D(_) => op.input(3).is_some() || op.input(4).is_some(),
        OpKind::BatchMatMul { adj_x: false, adj_y: false } => op.input(2).is_some() || op.input(3).is_some(),
        OpKind::Pool2D(p) => {
            let x = op.input(0).map(|x| ctx.graph.operand(x));
            matches!(p.kind, PoolKind::Max | PoolKind::Average) && x.is_some_and(|x| matches!(x.dtype, DType::I8 | DType::I16) && !x.quant.is_quantized())
        }
        _ => false,
    }
}

fn const_bytes(ctx: &CompileCtx, id: OpId, i: usize) -> Result<Vec<u8>, String> {
    let op = ctx.graph.op(id);
    let k = ctx.graph.operand(op.input(i).ok_or_else(|| format!("input {i} is absent"))?);
    k.data.as_ref().map(|d| d.bytes().to_vec()).ok_or_else(|| format!("input {i} must be a constant"))
}

/// A one-element int8 or int16 zero point.
pub(crate) fn zp(ctx: &CompileCtx, id: OpId, i: usize) -> Result<i32, String> {
    match *const_bytes(ctx, id, i)? {
        [b] => Ok(i32::from(b as i8)),
        [a, b] => Ok(i32::from(i16::from_le_bytes([a, b]))),
        _ => Err(format!("zero point {i} must be one int8 or int16")),
    }
}

/// Core checked the types; the kernels need a constant filter and an explicit or VALID padding.
pub(crate) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &i in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(i).quant.is_quantized() {
            return Err("the plain-integer form takes operands without quantization parameters".into());
        }
    }
    match op.kind {
        OpKind::BatchMatMul { .. } => Ok(()),
        OpKind::Pool2D(p) => {
            let t = ctx.graph.operand(op.input(0).ok_or("input 0 is absent")?).dtype;
            if p.kind == PoolKind::Average && !matches!(t, DType::I8 | DType::I16) {
                return Err(format!("plain-integer average pooling takes int8 or int16, not {t}"));
            }
            if p.act != nnrt_core::Activation::None {
                return Err("plain-integer pooling takes no fused activation".into());
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

pub(crate) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports(ctx, id)?;
    let op = ctx.graph.op(id);
    let x = op.input(0).ok_or("input 0 is absent")?;
    let out = op.outputs[0];
    if let OpKind::Pool2D(p) = op.kind {
        let (xd, od) = (ctx.dims(x).to_vec(), ctx.dims(out).to_vec());
        let pad = match p.padding {
            Padding::Explicit(q) => [q[0], q[2]],
            Padding::Valid => [0, 0],
            Padding::Same | Padding::Explicit3(_) => return Err("plain-integer pooling takes explicit padding".into()),
        };
        if xd.len() != 4 || od.len() != 4 {
            return Err("pooling takes NHWC".into());
        }
        let zp_or_0 = |i: usize| if op.input(i).is_some() { zp(ctx, id, i).map(i64::from) } else { Ok(0) };
        let average = if p.kind == PoolKind::Average { Some([zp_or_0(1)?, zp_or_0(2)?]) } else { None };
        let g = IntPool { input: [xd[0], xd[1], xd[2], xd[3]], output: [od[0], od[1], od[2], od[3]], kernel: p.filter, stride: p.stride, pad, average };
        let t = ctx.graph.operand(x).dtype;
        return Ok(built(vec![source(ctx, x)], move |ins, outs| {
            if t == DType::I8 {
                g.run(cast::<i8>(ins[0].bytes)?, cast_mut::<i8>(outs[0].bytes)?);
            } else {
                g.run(cast::<i16>(ins[0].bytes)?, cast_mut::<i16>(outs[0].bytes)?);
            }
            Ok(())
        }));
    }
    let wide = match ctx.graph.operand(x).dtype {
        DType::I8 => false,
        DType::I16 => true,
        other => return Err(format!("the plain-integer form takes int8 or int16, not {other}")),
    };
    if let OpKind::BatchMatMul { .. } = op.kind {
        let y = op.input(1).ok_or("input 1 is absent")?;
        let (xd, yd) = (ctx.dims(x).to_vec(), ctx.dims(y).to_vec());
        if xd.len() != 3 || yd.len() != 3 || (xd[0] != yd[0] && xd[0] != 1 && yd[0] != 1) {
            return Err(format!("the plain-integer matmul takes [b, m, k] x [b, k, n], got {xd:?} x {yd:?}"));
        }
        let zps = [zp(ctx, id, 2)?, zp(ctx, id, 3)?];
        let (m, k, n) = (xd[1], xd[2], yd[2]);
        let batches = [xd[0], yd[0]];
        return Ok(built(vec![source(ctx, x), source(ctx, y)], move |ins, outs| {
            if wide {
                matmul_int(cast::<i16>(ins[0].bytes)?, cast::<i16>(ins[1].bytes)?, batches, m, k, n, zps, cast_mut::<i64>(outs[0].bytes)?);
            } else {
                matmul_int(cast::<i8>(ins[0].bytes)?, cast::<i8>(ins[1].bytes)?, batches, m, k, n, zps, cast_mut::<i32>(outs[0].bytes)?);
            }
            Ok(())
        }));
    }
    if let OpKind::Conv3D(p) = op.kind {
        return conv3d(ctx, id, p, wide);
    }
    let (padding, stride, dilation, depthwise) = match op.kind {
        OpKind::Conv2D(p) => (p.padding, p.stride, p.dilation, false),
        OpKind::DepthwiseConv2D(p) => (p.padding, p.stride, p.dilation, true),
        _ => return Err("not a plain-integer form".into()),
    };
    let pad = match padding {
        Padding::Explicit(p) => [p[0], p[2]],
        Padding::Valid => [0, 0],
        Padding::Same | Padding::Explicit3(_) => return Err("the plain-integer form takes explicit padding".into()),
    };
    let w = op.input(1).ok_or("input 1 is absent")?;
    let (xd, wd, od) = (ctx.dims(x).to_vec(), ctx.dims(w).to_vec(), ctx.dims(out).to_vec());
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 || (!depthwise && wd[3] != xd[3]) {
        return Err(format!("the plain-integer convolution takes NHWC {xd:?} and a matching filter {wd:?} (no groups)"));
    }
    let g = IntConv {
        input: [xd[0], xd[1], xd[2], xd[3]],
        output: [od[0], od[1], od[2], od[3]],
        kernel: [wd[1], wd[2]],
        stride,
        dilation,
        pad,
        depthwise,
        x_zp: zp(ctx, id, 3)?,
        w_zp: zp(ctx, id, 4)?,
    };
    // int8 with a constant filter: the optimized quantized kernels, with an identity
    // requantization (apply_scale_32(v, 2, 1) = v) and no clamp, give the int32 sums.
    if !wide {
        if let Some(k) = fast_int8(ctx, id, g.x_zp) {
            return Ok(k);
        }
    }
    // Filter and bias are read at run time (a filter may come out of an op at run time).
    let mut srcs = vec![source(ctx, x), source(ctx, w)];
    let has_bias = match op.input(2) {
        Some(bi) => {
            if ctx.dims(bi).iter().product::<usize>() < od[3] {
                return Err("the bias needs one sum per output channel".into());
            }
            srcs.push(source(ctx, bi));
            true
        }
        None => false,
    };
    Ok(built(srcs, move |ins, outs| {
        if wide {
            let bias = if has_bias { Some(cast::<i64>(ins[2].bytes)?) } else { None };
            g.run(cast::<i16>(ins[0].bytes)?, cast::<i8>(ins[1].bytes)?, bias, cast_mut::<i64>(outs[0].bytes)?);
        } else {
            let bias = if has_bias { Some(cast::<i32>(ins[2].bytes)?) } else { None };
            g.run(cast::<i8>(ins[0].bytes)?, cast::<i8>(ins[1].bytes)?, bias, cast_mut::<i32>(outs[0].bytes)?);
        }
        Ok(())
    }))
}

/// The plain-integer CONV3D: VALID or explicit padding, whose taps add nothing.
fn conv3d(ctx: &CompileCtx, id: OpId, p: nnrt_core::Conv3D, wide: bool) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let pad = match p.padding {
        Padding::Valid => [0; 3],
        Padding::Explicit3(q) => [q[0], q[2], q[4]],
        _ => return Err("the plain-integer 3-D convolution takes VALID or 6 explicit paddings".into()),
    };
    if p.act != nnrt_core::Activation::None {
        return Err("the plain-integer 3-D convolution takes no fused activation".into());
    }
    let (x, w, out) = (op.input(0).ok_or("input 0 is absent")?, op.input(1).ok_or("input 1 is absent")?, op.outputs[0]);
    let (xd, wd, od) = (ctx.dims(x).to_vec(), ctx.dims(w).to_vec(), ctx.dims(out).to_vec());
    if xd.len() != 5 || wd.len() != 5 || od.len() != 5 || wd[3] != xd[4] || wd[4] != od[4] {
        return Err(format!("the plain-integer 3-D convolution takes NDHWC {xd:?} and a [KD, KH, KW, IC, OC] filter {wd:?}"));
    }
    let g = IntConv3d {
        input: [xd[0], xd[1], xd[2], xd[3], xd[4]],
        output: [od[0], od[1], od[2], od[3], od[4]],
        kernel: [wd[0], wd[1], wd[2]],
        stride: p.stride,
        dilation: p.dilation,
        pad,
        x_zp: zp(ctx, id, 3)?,
        w_zp: zp(ctx, id, 4)?,
    };
    let mut srcs = vec![source(ctx, x), source(ctx, w)];
    let has_bias = op.input(2).inspect(|&b| srcs.push(source(ctx, b))).is_some();
    Ok(built(srcs, move |ins, outs| {
        if wide {
            let bias = if has_bias { Some(cast::<i64>(ins[2].bytes)?) } else { None };
            g.run(cast::<i16>(ins[0].bytes)?, cast::<i8>(ins[1].bytes)?, bias, cast_mut::<i64>(outs[0].bytes)?);
        } else {
            let bias = if has_bias { Some(cast::<i32>(ins[2].bytes)?) } else { None };
            g.run(cast::<i8>(ins[0].bytes)?, cast::<i8>(ins[1].bytes)?, bias, cast_mut::<i32>(outs[0].bytes)?);
        }
        Ok(())
    }))
}

/// The optimized int8 kernel ([`QConv`] / [`QDepthwise`]) of a plain-integer CONV2D or
/// DEPTHWISE_CONV2D with a constant int8 filter and explicit or VALID padding, with the
/// epilogue given: `requant` (one, or one per output channel), output zero point and clamp.
/// With `bytes`, the kernel reads unsigned input bytes (`x_zp` in 0..=255), else int8.
pub(crate) enum Int8Conv {
    Conv(QConv),
    Dw(QDepthwise),
}

impl Int8Conv {
    pub(crate) fn new(ctx: &CompileCtx, id: OpId, x_zp: i32, requant: Vec<Requant>, (out_zp, act): (i32, (i32, i32)), bytes: bool) -> Result<Int8Conv, String> {
        let op = ctx.graph.op(id);
        let (x, w) = (op.input(0).ok_or("input 0 is absent")?, op.input(1).ok_or("input 1 is absent")?);
        let wk = ctx.graph.operand(w);
        let filter: Vec<i8> = wk.data.as_ref().ok_or("the filter must be constant")?.bytes().iter().map(|&b| b as i8).collect();
        if wk.dtype != DType::I8 {
            return Err("the filter must be int8".into());
        }
        let (xd, wd, od) = (ctx.dims(x).to_vec(), ctx.dims(w).to_vec(), ctx.dims(op.outputs[0]).to_vec());
        if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
            return Err("NHWC image and 4-D filter expected".into());
        }
        let oc = od[3];
        if !(if bytes { 0..=255 } else { -128..=127 }).contains(&x_zp) {
            return Err(format!("input zero point {x_zp} is outside the input type"));
        }
        let per_channel = |v: Vec<i64>, what: &str| match v.len() {
            1 => Ok(vec![v[0]; oc]),
            n if n == oc => Ok(v),
            n => Err(format!("{n} {what} for {oc} output channels")),
        };
        let bias = match op.input(2) {
            Some(b) => Some(per_channel(super::util::const_ints(ctx, b)?, "biases")?),
            None => None,
        };
        let requant = match requant.len() {
            1 => vec![requant[0]; oc],
            n if n == oc => requant,
            n => return Err(format!("{n} requantizations for {oc} output channels")),
        };
        let q = ConvQuant { in_zp: x_zp, w_zp: vec![zp(ctx, id, 4)?; oc], out_zp, requant, act: (act.0.min(act.1), act.1), bias, wide: false };
        let explicit = |p: Padding| matches!(p, Padding::Explicit(_) | Padding::Valid);
        match op.kind {
            OpKind::Conv2D(p) if explicit(p.padding) && wd[3] == xd[3] => {
                let g = super::conv::conv_geom(&xd, &wd, &od, &p)?;
                Ok(Int8Conv::Conv(if bytes { QConv::new::<u8, i8>(g, q, &filter) } else { QConv::new::<i8, i8>(g, q, &filter) }))
            }
            OpKind::DepthwiseConv2D(p) if explicit(p.padding) && wd[0] == 1 && wd[3] == oc && oc % xd[3].max(1) == 0 => {
                let g = super::conv::depthwise_geom(&xd, &wd, &od, &p)?;
                Ok(Int8Conv::Dw(if bytes { QDepthwise::new::<u8, i8>(g, q, &filter) } else { QDepthwise::new::<i8, i8>(g, q, &filter) }))
            }
            _ => Err("an ungrouped CONV2D or a [1, KH, KW, C*M] DEPTHWISE_CONV2D with explicit padding expected".into()),
        }
    }

    pub(crate) fn run<TI: QInt, TO: QInt>(&self, x: &[TI], out: &mut [TO]) {
        match self {
            Int8Conv::Conv(c) => c.run::<TI, TO>(x, out),
            Int8Conv::Dw(d) => d.run::<TI, TO>(x, out),
        }
    }
}

/// The int8 CONV2D / DEPTHWISE_CONV2D int32 sums through [`Int8Conv`] (an identity
/// requantization, `apply_scale_32(v, 2, 1) = v`, and no clamp), when its filter is constant.
fn fast_int8(ctx: &CompileCtx, id: OpId, x_zp: i32) -> Option<Built> {
    let identity = vec![Requant::Tosa { multiplier: 2, shift: 1, double_round: false }];
    let k = Int8Conv::new(ctx, id, x_zp, identity, (0, (i32::MIN, i32::MAX)), false).ok()?;
    Some(built(vec![source(ctx, ctx.graph.op(id).input(0)?)], move |ins, outs| {
        k.run::<i8, i32>(cast::<i8>(ins[0].bytes)?, cast_mut::<i32>(outs[0].bytes)?);
        Ok(())
    }))
}
