//! Operands: typed, shaped tensors of a subgraph, some of them constant.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::{DType, Quantization, Shape};

/// The memory layout of a 4-D activation tensor. Layout is data on the operand: lowering inserts
/// permutes where producer and consumer disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// Not an image tensor, or the layout does not matter.
    #[default]
    Any,
    /// Channels last (TFLite's and Circle's default).
    Nhwc,
    /// Channels first (PyTorch, some Circle graphs).
    Nchw,
}

/// Owner of the bytes behind constant operands: a memory-mapped model file, a buffer read from a
/// zip, or data computed at prepare (folded constants).
pub type Blob = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Constant data of an operand: a byte range borrowed from a shared [`Blob`] (never copied at load).
#[derive(Clone)]
pub struct ConstData {
    blob: Blob,
    offset: usize,
    len: usize,
    /// Set when the bytes are float16 values widened to float32 on first read (`blob` is the
    /// same allocation).
    widened: Option<Arc<WidenedF16>>,
}

impl ConstData {
    /// Borrows `len` bytes at `offset` of `blob`; `None` if the range is outside it.
    pub fn borrowed(blob: Blob, offset: usize, len: usize) -> Option<ConstData> {
        let end = offset.checked_add(len)?;
        if end > (*blob).as_ref().len() {
            return None;
        }
        Some(ConstData { blob, offset, len, widened: None })
    }

    /// Owns freshly computed bytes.
    pub fn owned(bytes: Vec<u8>) -> ConstData {
        let len = bytes.len();
        ConstData { blob: Arc::new(bytes), offset: 0, len, widened: None }
    }

    /// The float32 values of little-endian float16 `half` (an odd last byte is dropped),
    /// computed when first read through [`ConstData::bytes`] and then kept. Kernels that only
    /// pack the values take them through [`ConstData::widen_unkept`] instead, so a float16
    /// model's weights never sit in memory as a whole float32 copy beside their packed form.
    pub fn widened_f16(half: ConstData) -> ConstData {
        let len = half.len() / 2 * 4;
        #[cfg(target_endian = "little")]
        {
            let w = Arc::new(WidenedF16 { half, values: OnceLock::new() });
            ConstData { blob: w.clone(), offset: 0, len, widened: Some(w) }
        }
        #[cfg(not(target_endian = "little"))]
        {
            let _ = len;
            ConstData::owned_f32(f16_to_f32(half.bytes()))
        }
    }

    /// For data made by [`ConstData::widened_f16`] and not read as bytes yet: its values,
    /// widened afresh into a vector the caller owns (nothing is kept). `None` for other data,
    /// or once the widened values exist (borrow them through [`ConstData::bytes`]).
    pub fn widen_unkept(&self) -> Option<Vec<f32>> {
        let w = self.widened.as_ref()?;
        match w.values.get() {
            Some(_) => None,
            None => Some(f16_to_f32(w.half.bytes())),
        }
    }

    /// Owns freshly computed `f32` values, as their little-endian bytes (on a little-endian
    /// host the values themselves, without a copy, 4-byte aligned so kernels can borrow them).
    pub fn owned_f32(values: Vec<f32>) -> ConstData {
        #[cfg(target_endian = "little")]
        {
            let len = values.len() * 4;
            ConstData { blob: Arc::new(F32Bytes(values)), offset: 0, len, widened: None }
        }
        #[cfg(not(target_endian = "little"))]
        ConstData::owned(values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// The bytes. For [`ConstData::widened_f16`] data this widens the float16 values and keeps
    /// the float32 copy for the data's life (kernels that only pack weights read
    /// [`ConstData::widen_unkept`] instead).
    pub fn bytes(&self) -> &[u8] {
        &(*self.blob).as_ref()[self.offset..self.offset + self.len]
    }

    /// Whether the data is float16 widened to float32 ([`ConstData::widened_f16`]).
    pub fn is_widened_f16(&self) -> bool {
        self.widened.is_some()
    }

    /// Whether every value, read as little-endian float32, is finite; for float16 data not yet
    /// widened, checked on the float16 values (a float16 value is finite exactly when its
    /// float32 widening is), so nothing is widened.
    pub fn f32_all_finite(&self) -> bool {
        if let Some(w) = self.widened.as_ref().filter(|w| w.values.get().is_none()) {
            return w.half.bytes().chunks_exact(2).all(|c| half::f16::from_le_bytes([c[0], c[1]]).is_finite());
        }
        self.bytes().chunks_exact(4).all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite())
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes live inside `other`'s blob (used by tests to show weights are not copied;
    /// widened float16 data is widened and kept by the check).
    pub fn shares_blob_with(&self, other: &Blob) -> bool {
        let mine = (*self.blob).as_ref().as_ptr_range();
        let theirs = (**other).as_ref().as_ptr_range();
        mine.start >= theirs.start && mine.end <= theirs.end
    }
}

/// `f32` values seen as their bytes (little-endian hosts: [`ConstData::owned_f32`]).
#[cfg(target_endian = "little")]
struct F32Bytes(Vec<f32>);

#[cfg(target_endian = "little")]
impl AsRef<[u8]> for F32Bytes {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}

/// Float16 values widened to float32 when first read ([`ConstData::widened_f16`]); big-endian
/// hosts widen at once instead.
#[cfg_attr(not(target_endian = "little"), allow(dead_code))]
struct WidenedF16 {
    half: ConstData,
    values: OnceLock<Vec<f32>>,
}

#[cfg_attr(not(target_endian = "little"), allow(dead_code))]
impl AsRef<[u8]> for WidenedF16 {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(self.values.get_or_init(|| f16_to_f32(self.half.bytes())))
    }
}

/// Little-endian float16 values as float32: a vectorized conversion (F16C where the CPU has it)
/// when the bytes are aligned, else one value at a time.
pub(crate) fn f16_to_f32(bytes: &[u8]) -> Vec<f32> {
    use half::slice::HalfFloatSliceExt;
    let mut values = vec![0f32; bytes.len() / 2];
    #[cfg(target_endian = "little")]
    if let Ok(halves) = bytemuck::try_cast_slice::<u8, half::f16>(&bytes[..bytes.len() / 2 * 2]) {
        halves.convert_to_f32_slice(&mut values);
        return values;
    }
    for (v, c) in values.iter_mut().zip(bytes.chunks_exact(2)) {
        *v = half::f16::from_le_bytes([c[0], c[1]]).to_f32();
    }
    values
}

impl fmt::Debug for ConstData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConstData({} bytes at +{})", self.len, self.offset)
    }
}

/// A tensor of a subgraph.
#[derive(Clone, Debug)]
pub struct Operand {
    /// Name from the model file (may be empty).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Declared shape (unknown dims allowed).
    pub shape: Shape,
    /// Concrete dims the model stores for this tensor (TFLite's `shape`, with 1 where the
    /// signature says -1); the default for inputs whose shape the caller does not set.
    pub default_dims: Vec<usize>,
    /// Memory layout.
    pub layout: Layout,
    /// Quantization parameters.
    pub quant: Quantization,
    /// Constant contents, if the operand is a constant.
    pub data: Option<ConstData>,
    /// A variable tensor (state kept across runs, e.g. LSTM state in older models).
    pub is_variable: bool,
}

impl Operand {
    /// A non-constant operand with a fully known shape.
    pub fn new(name: impl Into<String>, dtype: DType, dims: &[usize]) -> Operand {
        Operand {
            name: name.into(),
            dtype,
            shape: Shape::fixed(dims),
            default_dims: dims.to_vec(),
            layout: Layout::Any,
            quant: Quantization::None,
            data: None,
            is_variable: false,
        }
    }

    /// Whether the operand holds constant data.
    pub fn is_const(&self) -> bool {
        self.data.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widened_f16_is_widened_for_each_packing_caller_until_read_as_bytes() {
        let values = [1.5f32, -0.099975586, 65504.0, 0.0];
        let half: Vec<u8> = values.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
        let d = ConstData::widened_f16(ConstData::owned(half));
        assert_eq!(d.len(), 16);
        // Nothing is kept: each caller widens afresh.
        assert_eq!(d.widen_unkept().as_deref(), Some(&values[..]));
        assert_eq!(d.widen_unkept().as_deref(), Some(&values[..]));
        // Read as bytes, the widened values are kept and borrowed from then on.
        let bytes: Vec<f32> = d.bytes().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(bytes, values);
        assert!(d.widen_unkept().is_none());
        // A clone shares the widened values.
        assert!(d.clone().widen_unkept().is_none());
        assert!(d.is_widened_f16() && d.f32_all_finite());
    }

    #[test]
    fn finiteness_of_widened_f16_is_read_without_widening() {
        for (v, finite) in [(1.0f32, true), (f32::INFINITY, false), (f32::NAN, false), (65504.0, true)] {
            let half: Vec<u8> = [0.5f32, v].iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect();
            let d = ConstData::widened_f16(ConstData::owned(half));
            assert_eq!(d.f32_all_finite(), finite, "{v}");
            assert!(d.widen_unkept().is_some(), "checking finiteness widened {v}");
            let _ = d.bytes();
            assert_eq!(d.f32_all_finite(), finite, "{v} once widened");
        }
    }
}
