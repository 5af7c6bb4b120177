//! Data layout operators: CONCAT, PAD, RESHAPE, REVERSE, SLICE, TILE, TRANSPOSE, GATHER,
//! SCATTER, RESIZE, IDENTITY. Shape operands (RESHAPE's shape, SLICE's start and size, PAD's padding, TILE's
//! multiples) are CONST_SHAPE results and become int32 constants.

use nnrt_core::{Activation, LoadError, OpKind, ResizeMode, ResizeScaled};

use super::{BlockBuilder, Op};
use crate::generated::tosa;

fn i32s(b: &BlockBuilder<'_, '_>, vals: &[i64], what: &str) -> Result<Vec<i32>, LoadError> {
    vals.iter().map(|&v| i32::try_from(v).map_err(|_| b.err(format!("{what} value {v} does not fit int32")))).collect()
}

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    use tosa::Op as T;
    let out = o.output(b, 0)?;
    let x = o.input(b, 0)?;
    let rank = b.dims(x).len();
    match o.kind {
        T::CONCAT => {
            let a = o.attr(b, o.t.attribute_as_concat_attribute(), "ConcatAttribute")?;
            let ins = (0..o.inputs.len()).map(|i| o.input(b, i)).collect::<Result<Vec<_>, _>>()?;
            b.emit_all(OpKind::Concatenation { axis: a.axis(), act: Activation::None }, &ins, vec![out]);
        }
        T::RESHAPE | T::IDENTITY => {
            if o.kind == T::RESHAPE {
                let shape = o.shape_input(b, 1)?;
                let want: Vec<i64> = b.dims(out).iter().map(|&d| d as i64).collect();
                if shape != want {
                    return Err(b.err(format!("RESHAPE's shape {shape:?} differs from its output's dims {want:?}")));
                }
            }
            let dims = b.dims(out);
            b.emit_all(OpKind::Reshape { new_shape: Some(dims.iter().map(|&d| d as i32).collect()) }, &[x], vec![out]);
        }
        T::TRANSPOSE => {
            let a = o.attr(b, o.t.attribute_as_transpose_attribute(), "TransposeAttribute")?;
            let perms: Vec<i32> = a.perms().map(|p| p.iter().collect()).unwrap_or_default();
            if perms.len() != rank {
                return Err(b.err(format!("TRANSPOSE perms {perms:?} need one entry per dim of the rank-{rank} input")));
            }
            let p = b.const_i32(&perms);
            b.emit_all(OpKind::Transpose, &[x, p], vec![out]);
        }
        T::SLICE => {
            let (start, size) = (o.shape_input(b, 1)?, o.shape_input(b, 2)?);
            if start.len() != rank || size.len() != rank {
                return Err(b.err(format!("SLICE start {start:?} and size {size:?} need {rank} entries each")));
            }
            let (s, z) = (i32s(b, &start, "start")?, i32s(b, &size, "size")?);
            let (s, z) = (b.const_i32(&s), b.const_i32(&z));
            b.emit_all(OpKind::Slice, &[x, s, z], vec![out]);
        }
        T::PAD => {
            let padding = o.shape_input(b, 1)?;
            if padding.len() != 2 * rank {
                return Err(b.err(format!("PAD padding {padding:?} needs {} entries (before and after each dim)", 2 * rank)));
            }
            let p = i32s(b, &padding, "padding")?;
            let p = b.const_i32_2d(rank, 2, &p);
            let value = o.input(b, 2)?;
            b.emit_all(OpKind::Pad, &[x, p, value], vec![out]);
        }
        T::TILE => {
            let m = o.shape_input(b, 1)?;
            if m.len() != rank {
                return Err(b.err(format!("TILE multiples {m:?} need {rank} entries")));
            }
            let m = i32s(b, &m, "multiples")?;
            let m = b.const_i32(&m);
            b.emit_all(OpKind::Tile, &[x, m], vec![out]);
        }
        T::REVERSE => {
            let a = o.attr(b, o.t.attribute_as_reverse_attribute(), "ReverseAttribute")?;
            let axis = a.axis();
            if axis < 0 || axis as usize >= rank {
                return Err(b.err(format!("REVERSE axis {axis} is outside the rank-{rank} input")));
            }
            let ax = b.const_i32(&[axis]);
            b.emit_all(OpKind::ReverseV2, &[x, ax], vec![out]);
        }
        T::SCATTER => {
            // values_in [N, K, C], indices [N, W], input [N, W, C].
            let (idx, up) = (o.input(b, 1)?, o.input(b, 2)?);
            b.emit_all(OpKind::ScatterRows, &[x, idx, up], vec![out]);
        }
        T::RESIZE => {
            let a = o.attr(b, o.t.attribute_as_resize_attribute(), "ResizeAttribute")?;
            let mode = match a.mode() {
                tosa::ResizeMode::NEAREST => ResizeMode::Nearest,
                tosa::ResizeMode::BILINEAR => ResizeMode::Bilinear,
                m => return Err(b.err(format!("RESIZE mode {} is unknown", m.0))),
            };
            let (scale, offset, border) = (o.shape_input(b, 1)?, o.shape_input(b, 2)?, o.shape_input(b, 3)?);
            if scale.len() != 4 || offset.len() != 2 || border.len() != 2 {
                return Err(b.err(format!("RESIZE scale {scale:?}, offset {offset:?}, border {border:?}: 4, 2 and 2 values expected")));
            }
            let (sc, of, bo) = (i32s(b, &scale, "scale")?, i32s(b, &offset, "offset")?, i32s(b, &border, "border")?);
            let kind = OpKind::ResizeScaled(ResizeScaled { mode, scale: [sc[0], sc[1], sc[2], sc[3]], offset: [of[0], of[1]], border: [bo[0], bo[1]] });
            b.emit_all(kind, &[x], vec![out]);
        }
        T::GATHER => {
            // values [N, K, C], indices [N, W] -> [N, W, C]: a gather on axis 1 per batch.
            let idx = o.input(b, 1)?;
            b.emit_all(OpKind::Gather { axis: 1, batch_dims: 1 }, &[x, idx], vec![out]);
        }
        _ => return Err(o.unsupported(b, "")),
    }
    Ok(())
}
