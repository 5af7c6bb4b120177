//! Tensor operators: CONV2D, DEPTHWISE_CONV2D, MATMUL, MAX_POOL2D, AVG_POOL2D.
//!
//! TOSA is channels-last like nnrt: CONV2D weights are OHWI `[O, KH, KW, I]` as nnrt's Conv2D
//! takes them; DEPTHWISE_CONV2D weights `[KH, KW, C, M]` hold the same bytes as nnrt's
//! `[1, KH, KW, C*M]` (output channel `c*M + m` in both). Padding is explicit,
//! `[top, bottom, left, right]`.

use nnrt_core::{Activation, Conv2D, DepthwiseConv2D, LoadError, OperandId, OpKind, Padding, Pool2D, PoolKind};

use super::{is_float, usizes, BlockBuilder, Op};
use crate::generated::tosa;

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let ty = o.input_type(b, 0)?;
    let out_ty = b.tosa_type(o.outputs.first().copied().unwrap_or_default())?;
    // Integer forms: int8 with zero points to int32 sums and int16 to int48 ones (held in
    // int64; the IR's plain-integer form), and integer pooling (MAX_POOL2D; AVG_POOL2D with
    // zero points).
    let sums = matches!((ty, out_ty), (tosa::DType::INT8, tosa::DType::INT32) | (tosa::DType::INT16, tosa::DType::INT48));
    let int8_sums = sums && matches!(o.kind, tosa::Op::CONV2D | tosa::Op::DEPTHWISE_CONV2D | tosa::Op::MATMUL);
    let int_max = o.kind == tosa::Op::MAX_POOL2D && matches!(ty, tosa::DType::INT8 | tosa::DType::INT16);
    let int_avg = o.kind == tosa::Op::AVG_POOL2D && matches!(ty, tosa::DType::INT8 | tosa::DType::INT16);
    if !is_float(ty) && !int8_sums && !int_max && !int_avg {
        return Err(o.unsupported(b, "this integer form is not mapped (int8 to int32 and int16 to int48 sums are)"));
    }
    let zps = |b: &BlockBuilder<'_, '_>, first: usize| -> Result<[Option<OperandId>; 2], LoadError> {
        Ok(if int8_sums { [Some(o.input(b, first)?), Some(o.input(b, first + 1)?)] } else { [None, None] })
    };
    match o.kind {
        tosa::Op::CONV2D => {
            let a = o.attr(b, o.t.attribute_as_conv_2d_attribute(), "Conv2dAttribute")?;
            let (pad, stride, dilation) = (usizes(b, a.pad(), 4, "pad")?, usizes(b, a.stride(), 2, "stride")?, usizes(b, a.dilation(), 2, "dilation")?);
            let (x, w) = (o.input(b, 0)?, o.input(b, 1)?);
            let wd = b.dims(w);
            if wd.len() != 4 {
                return Err(b.err(format!("CONV2D weight has dims {wd:?}; [O, KH, KW, I] expected")));
            }
            let bias = bias(b, o, wd[0])?;
            let kind = OpKind::Conv2D(Conv2D { padding: Padding::Explicit([pad[0], pad[1], pad[2], pad[3]]), stride: [stride[0], stride[1]], dilation: [dilation[0], dilation[1]], act: Activation::None });
            let out = o.output(b, 0)?;
            let [xz, wz] = zps(b, 3)?;
            let ins: Vec<Option<OperandId>> = if int8_sums { vec![Some(x), Some(w), bias, xz, wz] } else { vec![Some(x), Some(w), bias] };
            b.emit(kind, &ins, vec![out]);
        }
        tosa::Op::DEPTHWISE_CONV2D => {
            let a = o.attr(b, o.t.attribute_as_depthwise_conv_2d_attribute(), "DepthwiseConv2dAttribute")?;
            let (pad, stride, dilation) = (usizes(b, a.pad(), 4, "pad")?, usizes(b, a.stride(), 2, "stride")?, usizes(b, a.dilation(), 2, "dilation")?);
            let (x, w) = (o.input(b, 0)?, o.input(b, 1)?);
            let wd = b.dims(w);
            if wd.len() != 4 {
                return Err(b.err(format!("DEPTHWISE_CONV2D weight has dims {wd:?}; [KH, KW, C, M] expected")));
            }
            let flat = [1, wd[0], wd[1], wd[2] * wd[3]];
            let w2 = match b.g.operand(w).data.clone() {
                Some(data) => {
                    let id = b.temp(b.dtype(w), &flat);
                    b.g.operands[id.index()].data = Some(data);
                    id
                }
                None => {
                    let id = b.temp(b.dtype(w), &flat);
                    b.emit_all(OpKind::Reshape { new_shape: Some(flat.iter().map(|&d| d as i32).collect()) }, &[w], vec![id]);
                    id
                }
            };
            let bias = bias(b, o, wd[2] * wd[3])?;
            let kind = OpKind::DepthwiseConv2D(DepthwiseConv2D {
                padding: Padding::Explicit([pad[0], pad[1], pad[2], pad[3]]),
                stride: [stride[0], stride[1]],
                dilation: [dilation[0], dilation[1]],
                depth_multiplier: wd[3],
                act: Activation::None,
            });
            let out = o.output(b, 0)?;
            let [xz, wz] = zps(b, 3)?;
            let ins: Vec<Option<OperandId>> = if int8_sums { vec![Some(x), Some(w2), bias, xz, wz] } else { vec![Some(x), Some(w2), bias] };
            b.emit(kind, &ins, vec![out]);
        }
        tosa::Op::MATMUL => {
            let (x, y, out) = (o.input(b, 0)?, o.input(b, 1)?, o.output(b, 0)?);
            let [xz, yz] = zps(b, 2)?;
            let ins: Vec<Option<OperandId>> = if int8_sums { vec![Some(x), Some(y), xz, yz] } else { vec![Some(x), Some(y)] };
            b.emit(OpKind::BatchMatMul { adj_x: false, adj_y: false }, &ins, vec![out]);
        }
        tosa::Op::MAX_POOL2D | tosa::Op::AVG_POOL2D => {
            let (kernel, stride, pad, kind) = if o.kind == tosa::Op::MAX_POOL2D {
                let a = o.attr(b, o.t.attribute_as_max_pool_2d_attribute(), "MaxPool2dAttribute")?;
                (a.kernel(), a.stride(), a.pad(), PoolKind::Max)
            } else {
                let a = o.attr(b, o.t.attribute_as_avg_pool_2d_attribute(), "AvgPool2dAttribute")?;
                (a.kernel(), a.stride(), a.pad(), PoolKind::Average)
            };
            let (k, s, p) = (usizes(b, kernel, 2, "kernel")?, usizes(b, stride, 2, "stride")?, usizes(b, pad, 4, "pad")?);
            // Both exclude padding: MAX_POOL2D never picks a pad cell, AVG_POOL2D divides by the
            // count of in-bounds cells (the spec's `count`), as nnrt's Average does.
            let kind = OpKind::Pool2D(Pool2D { kind, padding: Padding::Explicit([p[0], p[1], p[2], p[3]]), stride: [s[0], s[1]], filter: [k[0], k[1]], act: Activation::None });
            let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
            if int_avg {
                // Zero points as inputs 1 and 2: the IR's plain-integer average.
                let (iz, oz) = (o.input(b, 1)?, o.input(b, 2)?);
                b.emit_all(kind, &[x, iz, oz], vec![out]);
            } else {
                b.emit_all(kind, &[x], vec![out]);
            }
        }
        _ => return Err(o.unsupported(b, "")),
    }
    Ok(())
}

/// The bias operand, as `[channels]`: TOSA allows a one-element bias broadcast to every
/// output channel, which is expanded here.
fn bias(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>, channels: usize) -> Result<Option<OperandId>, LoadError> {
    let id = o.input(b, 2)?;
    let dims = b.dims(id);
    let n: usize = dims.iter().product();
    if n == channels {
        if dims.len() == 1 {
            return Ok(Some(id));
        }
        let t = b.temp(b.dtype(id), &[channels]);
        b.emit_all(OpKind::Reshape { new_shape: Some(vec![channels as i32]) }, &[id], vec![t]);
        return Ok(Some(t));
    }
    if n != 1 {
        return Err(b.err(format!("bias has dims {dims:?}; [{channels}] or [1] expected")));
    }
    let size = b.dtype(id).size();
    let Some(one) = b.const_bytes(id).map(<[u8]>::to_vec) else {
        return Err(o.unsupported(b, "a one-element bias that is not a constant"));
    };
    let bytes: Vec<u8> = one.iter().take(size).copied().cycle().take(size * channels).collect();
    Ok(Some(b.constant(b.dtype(id), &[channels], bytes)))
}
