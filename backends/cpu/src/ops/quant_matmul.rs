//! Builders of quantized TRANSPOSE_CONV (uint8, int8, int16 activations with int8 weights) and
//! BATCH_MATMUL (int8, int16, int16 × int8), with the dtype and zero-point rules of TFLite's
//! Prepare.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind};

use super::quant::{check_params, conv_quant_of, dtype, input, qp};
use super::matmul::transpose_conv_geom;
use super::{built, source};
use crate::backend::Built;
use crate::kernels::batch_matmul::MatMulGeom;
use crate::quant::matmul::{QBatchMatMul, QTransposeConv};
use crate::quant::reference::ConvQuant;
use crate::quant::{QInt, Requant};

/// Why these kernels cannot run `op`, or `Ok`.
pub(super) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
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

/// Builds the kernel of `op`.
pub(super) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports(ctx, id)?;
    let op = ctx.graph.op(id);
    let out = op.outputs[0];
    match &op.kind {
        OpKind::TransposeConv(_) => {
            let (w, x, bias) = (input(ctx, id, 1)?, input(ctx, id, 2)?, op.input(3));
            let g = transpose_conv_geom(ctx, id)?;
            let xt = dtype(ctx, x);
            let wbytes = ctx.graph.operand(w).data.as_ref().ok_or("the filter must be constant")?.bytes().to_vec();
            by_qtype!(xt, |TI| by_qtype!(dtype(ctx, w), |TW| {
                let mut q = conv_quant_of::<TI>(ctx, id, (x, w, bias), g.out_c, 0, false)?;
                // The int8 and 16x8 reference kernels ignore the filter zero point; int16
                // accumulates in 64 bits unless the bias is int32.
                if xt != DType::U8 {
                    q.w_zp.iter_mut().for_each(|z| *z = 0);
                }
                q.wide = xt == DType::I16 && bias.is_none_or(|b| dtype(ctx, b) == DType::I64);
                let filter: Vec<TW> = wbytes.chunks_exact(std::mem::size_of::<TW>()).map(bytemuck::pod_read_unaligned).collect();
                let tc = QTransposeConv::new::<TW>(g, q, &filter);
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
            let y_const = ctx.graph.operand(y).data.as_ref().map(|d| d.bytes().to_vec());
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
                let yv: Option<Vec<TY>> = y_const.as_ref().map(|b| b.chunks_exact(std::mem::size_of::<TY>()).map(bytemuck::pod_read_unaligned).collect());
                let constant = yv.is_some();
                let mm = QBatchMatMul::new::<TY>(g, q, yv.as_deref());
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
