//! Operands: typed, shaped tensors of a subgraph, some of them constant.

use std::fmt;
use std::sync::Arc;

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
}

impl ConstData {
    /// Borrows `len` bytes at `offset` of `blob`; `None` if the range is outside it.
    pub fn borrowed(blob: Blob, offset: usize, len: usize) -> Option<ConstData> {
        let end = offset.checked_add(len)?;
        if end > (*blob).as_ref().len() {
            return None;
        }
        Some(ConstData { blob, offset, len })
    }

    /// Owns freshly computed bytes.
    pub fn owned(bytes: Vec<u8>) -> ConstData {
        let len = bytes.len();
        ConstData { blob: Arc::new(bytes), offset: 0, len }
    }

    /// Owns freshly computed `f32` values, as their little-endian bytes (on a little-endian
    /// host the values themselves, without a copy, 4-byte aligned so kernels can borrow them).
    pub fn owned_f32(values: Vec<f32>) -> ConstData {
        #[cfg(target_endian = "little")]
        {
            let len = values.len() * 4;
            ConstData { blob: Arc::new(F32Bytes(values)), offset: 0, len }
        }
        #[cfg(not(target_endian = "little"))]
        ConstData::owned(values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &(*self.blob).as_ref()[self.offset..self.offset + self.len]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes live inside `other`'s blob (used by tests to show weights are not copied).
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
