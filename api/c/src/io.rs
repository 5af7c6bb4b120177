//! What happens at the boundary between a caller's buffer and a model tensor: type names, sizes,
//! NCHW <-> NHWC transposes (`nnfw_set_*_layout`) and float <-> quantized conversion
//! (`nnfw_set_*_type`).

use std::borrow::Cow;

use nnrt::{DType, Quantization, TensorInfo};

use crate::abi::*;

/// How a caller's buffer for one input or output differs from the model's tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoForm {
    /// The buffer is NCHW where the (rank-4) tensor is NHWC.
    pub channels_first: bool,
    /// The buffer holds float32 where the tensor is quantized.
    pub float: bool,
}

/// The `NNFW_TYPE` of a model tensor, or why nnfw.h cannot name it.
pub fn nnfw_type(dtype: DType, quant: &Quantization) -> Result<NNFW_TYPE, String> {
    Ok(match dtype {
        DType::F32 => NNFW_TYPE_TENSOR_FLOAT32,
        DType::I32 => NNFW_TYPE_TENSOR_INT32,
        DType::U8 if quant.is_quantized() => NNFW_TYPE_TENSOR_QUANT8_ASYMM,
        DType::U8 => NNFW_TYPE_TENSOR_UINT8,
        DType::Bool => NNFW_TYPE_TENSOR_BOOL,
        DType::I64 => NNFW_TYPE_TENSOR_INT64,
        DType::I8 => NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED,
        DType::I16 => NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED,
        DType::F16 => return Err("the tensor is float16, which nnfw.h has no NNFW_TYPE for".into()),
        DType::C64 => return Err("the tensor is complex64, which nnfw.h has no NNFW_TYPE for".into()),
    })
}

/// The `NNFW_TYPE` the caller's buffer holds.
pub fn user_type(info: &TensorInfo, form: IoForm) -> Result<NNFW_TYPE, String> {
    if form.float {
        return Ok(NNFW_TYPE_TENSOR_FLOAT32);
    }
    nnfw_type(info.dtype, &info.quant)
}

/// Bytes the caller's buffer needs for the tensor's current dims.
pub fn user_size(info: &TensorInfo, form: IoForm) -> usize {
    let elements: usize = info.dims.iter().product();
    elements * if form.float { 4 } else { info.dtype.size() }
}

/// Whether `form` asks for float I/O that the tensor can have: `Ok(true)` for a quantized
/// per-tensor tensor, `Ok(false)` for a float one (nothing to convert), `Err` otherwise.
pub fn float_io_allowed(info: &TensorInfo) -> Result<bool, String> {
    match (&info.quant, info.dtype) {
        (_, DType::F32) => Ok(false),
        (Quantization::PerTensor { .. }, DType::U8 | DType::I8 | DType::I16) => Ok(true),
        (Quantization::PerAxis { .. }, _) => Err(format!("'{}' is quantized per axis; float32 I/O needs one scale", info.name)),
        _ => Err(format!("'{}' is {} and not quantized; float32 I/O is for float or quantized tensors", info.name, info.dtype)),
    }
}

/// The caller's input bytes (`user.len() == user_size`) as the tensor's bytes.
pub fn to_model<'a>(info: &TensorInfo, form: IoForm, user: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
    let mut bytes = Cow::Borrowed(user);
    if form.float {
        bytes = Cow::Owned(quantize(info, &bytes)?);
    }
    if form.channels_first && info.dims.len() == 4 {
        let [n, h, w, c] = [info.dims[0], info.dims[1], info.dims[2], info.dims[3]];
        bytes = Cow::Owned(permute4(&bytes, [n, c, h, w], [0, 2, 3, 1], info.dtype.size()));
    }
    Ok(bytes)
}

/// The tensor's bytes as the caller's output bytes.
pub fn to_user<'a>(info: &TensorInfo, form: IoForm, model: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
    let mut bytes = Cow::Borrowed(model);
    if form.channels_first && info.dims.len() == 4 {
        bytes = Cow::Owned(permute4(&bytes, [info.dims[0], info.dims[1], info.dims[2], info.dims[3]], [0, 3, 1, 2], info.dtype.size()));
    }
    if form.float {
        bytes = Cow::Owned(dequantize(info, &bytes)?);
    }
    Ok(bytes)
}

/// Transposes a rank-4 tensor of `dims` (elements of `size` bytes) so that output axis `k` is
/// input axis `perm[k]`.
fn permute4(src: &[u8], dims: [usize; 4], perm: [usize; 4], size: usize) -> Vec<u8> {
    let mut strides = [0usize; 4];
    let mut s = 1;
    for k in (0..4).rev() {
        strides[k] = s;
        s *= dims[k];
    }
    let od = perm.map(|p| dims[p]);
    let os = perm.map(|p| strides[p]);
    let mut out = Vec::with_capacity(src.len());
    for a in 0..od[0] {
        for b in 0..od[1] {
            for c in 0..od[2] {
                for d in 0..od[3] {
                    let i = (a * os[0] + b * os[1] + c * os[2] + d * os[3]) * size;
                    out.extend_from_slice(&src[i..i + size]);
                }
            }
        }
    }
    out
}

fn scale_zp(info: &TensorInfo) -> Result<(f32, i64), String> {
    match info.quant {
        Quantization::PerTensor { scale, zero_point } if scale > 0.0 && scale.is_finite() => Ok((scale, zero_point)),
        _ => Err(format!("'{}' has no usable per-tensor scale for float32 I/O", info.name)),
    }
}

/// float32 -> quantized as TFLite's QUANTIZE reference: `clamp(round(x / scale) + zp)`, rounding
/// half away from zero.
fn quantize(info: &TensorInfo, user: &[u8]) -> Result<Vec<u8>, String> {
    let (scale, zp) = scale_zp(info)?;
    let q = |x: f32, lo: i64, hi: i64| ((x / scale).round() as i64).saturating_add(zp).clamp(lo, hi);
    let xs = user.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    Ok(match info.dtype {
        DType::U8 => xs.map(|x| q(x, 0, 255) as u8).collect(),
        DType::I8 => xs.map(|x| q(x, -128, 127) as i8 as u8).collect(),
        DType::I16 => xs.flat_map(|x| (q(x, -32768, 32767) as i16).to_ne_bytes()).collect(),
        other => return Err(format!("'{}' is {other}; cannot quantize to it", info.name)),
    })
}

/// quantized -> float32: `(q - zp) * scale`, as TFLite's DEQUANTIZE reference.
fn dequantize(info: &TensorInfo, model: &[u8]) -> Result<Vec<u8>, String> {
    let (scale, zp) = scale_zp(info)?;
    let f = |q: i64| ((q - zp) as f32 * scale).to_ne_bytes();
    Ok(match info.dtype {
        DType::U8 => model.iter().flat_map(|&q| f(q as i64)).collect(),
        DType::I8 => model.iter().flat_map(|&q| f(q as i8 as i64)).collect(),
        DType::I16 => model.chunks_exact(2).flat_map(|b| f(i16::from_ne_bytes([b[0], b[1]]) as i64)).collect(),
        other => return Err(format!("'{}' is {other}; cannot dequantize it", info.name)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(dtype: DType, dims: &[usize], quant: Quantization) -> TensorInfo {
        TensorInfo { name: "t".into(), dtype, dims: dims.to_vec(), signature: dims.iter().map(|&d| Some(d)).collect(), quant }
    }

    #[test]
    fn nchw_round_trips_through_nhwc() {
        let t = info(DType::F32, &[2, 3, 4, 5], Quantization::None);
        let form = IoForm { channels_first: true, float: false };
        let nchw: Vec<u8> = (0..120u32).flat_map(|v| (v as f32).to_ne_bytes()).collect();
        let nhwc = to_model(&t, form, &nchw).unwrap().into_owned();
        // Model dims NHWC [2, 3, 4, 5]: element (n, h, w, c) is the caller's NCHW element (n, c, h, w).
        let (h_, w_, c_) = (3, 4, 5);
        let at = |b: &[u8], i: usize| f32::from_ne_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
        for (n, h, w, c) in [(0, 0, 0, 1), (1, 2, 3, 1), (1, 0, 2, 4)] {
            assert_eq!(at(&nhwc, ((n * h_ + h) * w_ + w) * c_ + c), at(&nchw, ((n * c_ + c) * h_ + h) * w_ + w));
        }
        assert_eq!(to_user(&t, form, &nhwc).unwrap().as_ref(), nchw.as_slice());
    }

    #[test]
    fn quantize_rounds_half_away_and_clamps() {
        let t = info(DType::U8, &[5], Quantization::PerTensor { scale: 0.5, zero_point: 10 });
        let xs: Vec<u8> = [0.25f32, -0.25, 1.0, 1000.0, -1000.0].iter().flat_map(|x| x.to_ne_bytes()).collect();
        let q = to_model(&t, IoForm { channels_first: false, float: true }, &xs).unwrap();
        assert_eq!(q.as_ref(), &[11, 9, 12, 255, 0]);
        let back = to_user(&t, IoForm { channels_first: false, float: true }, &q).unwrap();
        assert_eq!(f32::from_ne_bytes(back[8..12].try_into().unwrap()), 1.0);
    }

    #[test]
    fn types_map_like_onert() {
        let q = Quantization::PerTensor { scale: 1.0, zero_point: 0 };
        assert_eq!(nnfw_type(DType::U8, &q), Ok(NNFW_TYPE_TENSOR_QUANT8_ASYMM));
        assert_eq!(nnfw_type(DType::U8, &Quantization::None), Ok(NNFW_TYPE_TENSOR_UINT8));
        assert_eq!(nnfw_type(DType::I8, &q), Ok(NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED));
        assert!(nnfw_type(DType::F16, &Quantization::None).is_err());
    }
}
