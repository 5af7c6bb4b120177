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
use crate::quant::Requant;

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
            Padding::Same => return Err("plain-integer pooling takes explicit padding".into()),
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
        Padding::Same => return Err("the plain-integer form takes explicit padding".into()),
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
        if let Some(k) = fast_int8(ctx, id, &xd, &wd, &od, g) {
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

/// The plain-integer CONV3D: VALID only (the TOSA reader pads the image with its zero point).
fn conv3d(ctx: &CompileCtx, id: OpId, p: nnrt_core::Conv3D, wide: bool) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    if p.padding != Padding::Valid || p.act != nnrt_core::Activation::None {
        return Err("the plain-integer 3-D convolution takes VALID padding and no activation".into());
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

/// The int8 CONV2D / DEPTHWISE_CONV2D int32 sums through [`QConv`] / [`QDepthwise`], when the
/// filter and the bias are constants.
fn fast_int8(ctx: &CompileCtx, id: OpId, xd: &[usize], wd: &[usize], od: &[usize], g: IntConv) -> Option<Built> {
    let op = ctx.graph.op(id);
    let x = op.input(0)?;
    let w = ctx.graph.operand(op.input(1)?);
    let filter: Vec<i8> = w.data.as_ref()?.bytes().iter().map(|&b| b as i8).collect();
    if w.dtype != DType::I8 {
        return None;
    }
    let oc = od[3];
    let bias = match op.input(2) {
        Some(b) => {
            let v = super::util::const_ints(ctx, b).ok()?;
            Some(match v.len() {
                1 => vec![v[0]; oc],
                n if n == oc => v,
                _ => return None,
            })
        }
        None => None,
    };
    let q = ConvQuant {
        in_zp: g.x_zp,
        w_zp: vec![g.w_zp; oc],
        out_zp: 0,
        requant: vec![Requant::Tosa { multiplier: 2, shift: 1, double_round: false }; oc],
        act: (i32::MIN, i32::MAX),
        bias,
        wide: false,
    };
    if !(-128..=127).contains(&g.x_zp) {
        return None;
    }
    enum K {
        Conv(QConv),
        Dw(QDepthwise),
    }
    let k = match op.kind {
        OpKind::Conv2D(p) => K::Conv(QConv::new::<i8, i8>(super::conv::conv_geom(xd, wd, od, &p).ok()?, q, &filter)),
        OpKind::DepthwiseConv2D(p) if wd[0] == 1 && wd[3] == oc => K::Dw(QDepthwise::new::<i8, i8>(super::conv::depthwise_geom(xd, wd, od, &p).ok()?, q, &filter)),
        _ => return None,
    };
    Some(built(vec![source(ctx, x)], move |ins, outs| {
        let (x, out) = (cast::<i8>(ins[0].bytes)?, cast_mut::<i32>(outs[0].bytes)?);
        match &k {
            K::Conv(c) => c.run::<i8, i32>(x, out),
            K::Dw(d) => d.run::<i8, i32>(x, out),
        }
        Ok(())
    }))
}
