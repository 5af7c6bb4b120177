//! [`V`]: a tensor's values of any element type, with short constructors and seeded data.

use nnrt_core::DType;

/// A tensor's values, in the element type they are stored as.
#[derive(Clone, Debug, PartialEq)]
pub enum V {
    /// float32.
    F32(Vec<f32>),
    /// int32.
    I32(Vec<i32>),
    /// int64.
    I64(Vec<i64>),
    /// bool (one byte each).
    Bool(Vec<bool>),
    /// uint8.
    U8(Vec<u8>),
    /// int8.
    I8(Vec<i8>),
    /// int16.
    I16(Vec<i16>),
    /// float16, held as the f32 values they round to.
    F16(Vec<f32>),
}

impl V {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            V::F32(_) => DType::F32,
            V::I32(_) => DType::I32,
            V::I64(_) => DType::I64,
            V::Bool(_) => DType::Bool,
            V::U8(_) => DType::U8,
            V::I8(_) => DType::I8,
            V::I16(_) => DType::I16,
            V::F16(_) => DType::F16,
        }
    }

    /// How many elements.
    pub fn len(&self) -> usize {
        self.bytes().len() / self.dtype().size()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Little-endian bytes, as a tensor buffer holds them.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            V::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::Bool(v) => v.iter().map(|&x| x as u8).collect(),
            V::U8(v) => v.clone(),
            V::I8(v) => v.iter().map(|&x| x as u8).collect(),
            V::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::F16(v) => v.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect(),
        }
    }

    /// Values of `dtype` from a tensor buffer; `None` for complex64 (checked in `tests/fft.rs`).
    pub fn from_bytes(dtype: DType, b: &[u8]) -> Option<V> {
        Some(match dtype {
            DType::F32 => V::F32(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            DType::I32 => V::I32(b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            DType::I64 => V::I64(b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()),
            DType::Bool => V::Bool(b.iter().map(|&x| x != 0).collect()),
            DType::U8 => V::U8(b.to_vec()),
            DType::I8 => V::I8(b.iter().map(|&x| x as i8).collect()),
            DType::I16 => V::I16(b.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect()),
            DType::F16 => V::F16(b.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
            DType::C64 => return None,
        })
    }

    /// The float32 values; `None` for other types.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match self {
            V::F32(v) => Some(v),
            _ => None,
        }
    }
}

/// float32 values.
pub fn f(v: &[f32]) -> V {
    V::F32(v.to_vec())
}

/// int32 values.
pub fn i(v: &[i32]) -> V {
    V::I32(v.to_vec())
}

/// int64 values.
pub fn i64s(v: &[i64]) -> V {
    V::I64(v.to_vec())
}

/// bool values.
pub fn b(v: &[bool]) -> V {
    V::Bool(v.to_vec())
}

/// `n` zeros of `dtype` (not complex64).
pub fn zeros(dtype: DType, n: usize) -> V {
    V::from_bytes(dtype, &vec![0; n * dtype.size()]).expect("a real element type")
}

/// `0, 1, …, n-1` as floats.
pub fn seq(n: usize) -> Vec<f32> {
    (0..n).map(|v| v as f32).collect()
}

/// `n` seeded values in `[lo, hi)` from a seed-mixed xorshift (13, 7, 17); the IR op cases'
/// data (the TFLite ones use [`crate::XorShift`]).
pub fn rand(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let step = |s: u64| {
        let s = s ^ (s << 13);
        let s = s ^ (s >> 7);
        s ^ (s << 17)
    };
    std::iter::successors(Some(step(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)), |&s| Some(step(s)))
        .take(n)
        .map(|s| lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32))
        .collect()
}
