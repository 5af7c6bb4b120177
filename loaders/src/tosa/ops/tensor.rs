//! Tensor operators: CONV2D, CONV3D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, MATMUL, MAX_POOL2D,
//! AVG_POOL2D.
//!
//! TOSA is channels-last like nnrt: CONV2D weights are OHWI `[O, KH, KW, I]` as nnrt's Conv2D
//! takes them; DEPTHWISE_CONV2D weights `[KH, KW, C, M]` hold the same bytes as nnrt's
//! `[1, KH, KW, C*M]` (output channel `c*M + m` in both). Padding is explicit,
//! `[top, bottom, left, right]`.

use nnrt_core::{Activation, Conv2D, Conv3D, DepthwiseConv2D, LoadError, OperandId, OpKind, Padding, Pool2D, PoolKind, TransposeConvPadded};

use super::{is_float, usizes, BlockBuilder, Op};
use crate::generated::tosa;

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let ty = o.input_type(b, 0)?;
    let out_ty = b.tosa_type(o.outputs.first().copied().unwrap_or_default())?;
    // Integer forms: int8 with zero points to int32 sums and int16 to int48 ones (held in
    // int64; the IR's plain-integer form), and integer pooling (MAX_POOL2D; AVG_POOL2D with
    // zero points).
    let sums = matches!((ty, out_ty), (tosa::DType::INT8, tosa::DType::INT32) | (tosa::DType::INT16, tosa::DType::INT48));
    let int8_sums = sums && matches!(o.kind, tosa::Op::CONV2D | tosa::Op::DEPTHWISE_CONV2D | tosa::Op::MATMUL | tosa::Op::CONV3D | tosa::Op::TRANSPOSE_CONV2D);
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
        tosa::Op::CONV3D => {
            let a = o.attr(b, o.t.attribute_as_conv_3d_attribute(), "Conv3dAttribute")?;
            let (pad, stride, dilation) = (usizes(b, a.pad(), 6, "pad")?, usizes(b, a.stride(), 3, "stride")?, usizes(b, a.dilation(), 3, "dilation")?);
            let (x, w) = (o.input(b, 0)?, o.input(b, 1)?);
            let (xd, wd) = (b.dims(x), b.dims(w));
            if xd.len() != 5 || wd.len() != 5 {
                return Err(b.err(format!("CONV3D input {xd:?} and weight {wd:?}: NDHWC and [OC, KD, KH, KW, IC] expected")));
            }
            let [xz, wz] = zps(b, 3)?;
            let w = dhwio(b, o, w, &wd)?;
            let bias = bias(b, o, wd[0])?;
            // Padding taps add nothing to the sum (skipped, as the pseudo-code does: no padded
            // copy, so a zero point known only at run time and a non-finite weight both work).
            let padding = Padding::Explicit3([pad[0], pad[1], pad[2], pad[3], pad[4], pad[5]]);
            let kind = OpKind::Conv3D(Conv3D { padding, stride: [stride[0], stride[1], stride[2]], dilation: [dilation[0], dilation[1], dilation[2]], act: Activation::None });
            let out = o.output(b, 0)?;
            let ins: Vec<Option<OperandId>> = if int8_sums { vec![Some(x), Some(w), bias, xz, wz] } else { vec![Some(x), Some(w), bias] };
            b.emit(kind, &ins, vec![out]);
        }
        tosa::Op::TRANSPOSE_CONV2D => {
            let a = o.attr(b, o.t.attribute_as_transpose_conv_2d_attribute(), "TransposeConv2dAttribute")?;
            let stride = usizes(b, a.stride(), 2, "stride")?;
            let out_pad: Vec<i32> = a.out_pad().map(|v| v.iter().collect()).unwrap_or_default();
            let [t, bo, l, r] = out_pad[..] else {
                return Err(b.err(format!("out_pad is {out_pad:?}; 4 values [top, bottom, left, right] are needed")));
            };
            let (x, w) = (o.input(b, 0)?, o.input(b, 1)?);
            let wd = b.dims(w);
            if wd.len() != 4 {
                return Err(b.err(format!("TRANSPOSE_CONV2D weight has dims {wd:?}; [O, KH, KW, I] expected")));
            }
            let bias = bias(b, o, wd[0])?;
            let kind = OpKind::TransposeConvPadded(TransposeConvPadded { stride: [stride[0], stride[1]], out_pad: [t, bo, l, r] });
            let out = o.output(b, 0)?;
            let [xz, wz] = zps(b, 3)?;
            let ins: Vec<Option<OperandId>> = if int8_sums { vec![Some(x), Some(w), bias, xz, wz] } else { vec![Some(x), Some(w), bias] };
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

/// CONV3D's weight `[OC, KD, KH, KW, IC]` as nnrt's `[KD, KH, KW, IC, OC]`: a constant's bytes
/// are reordered here, a computed weight goes through a TRANSPOSE.
fn dhwio(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>, w: OperandId, wd: &[usize]) -> Result<OperandId, LoadError> {
    let (oc, inner) = (wd[0], wd[1..].iter().product::<usize>());
    let dims = [wd[1], wd[2], wd[3], wd[4], wd[0]];
    let t = b.dtype(w);
    let size = t.size();
    if let Some(bytes) = b.const_bytes(w) {
        if bytes.len() != oc * inner * size {
            return Err(b.err(format!("CONV3D weight '{}' holds {} bytes; {wd:?} of {t} need {}", o.inputs[1], bytes.len(), oc * inner * size)));
        }
        let mut out = vec![0u8; bytes.len()];
        for c in 0..oc {
            for i in 0..inner {
                out[(i * oc + c) * size..][..size].copy_from_slice(&bytes[(c * inner + i) * size..][..size]);
            }
        }
        return Ok(b.constant(t, &dims, out));
    }
    let perm = b.const_i32(&[1, 2, 3, 4, 0]);
    let y = b.temp(t, &dims);
    b.emit_all(OpKind::Transpose, &[w, perm], vec![y]);
    Ok(y)
}
