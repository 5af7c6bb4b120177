//! # nnrt-npy
//!
//! NumPy `.npy` files: [`parse`] reads format versions 1.0, 2.0 and 3.0 (C order, the types of
//! [`DType`]) from untrusted bytes into an [`Array`] or a typed [`NpyError`]; [`to_bytes`]
//! writes version 1.0 (2.0 when the header outgrows 1.0's 16-bit length), as NumPy does.
//! `nnpackage_run --load:npy/--dump:npy` use it, and the `npy` fuzz target runs it.
//!
//! Depends on `nnrt-core` for [`DType`] only; knows nothing about files, models or sessions.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use nnrt_core::DType;
use thiserror::Error;

/// An array read from a `.npy` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    /// Element type.
    pub dtype: DType,
    /// Dims (empty for a scalar).
    pub dims: Vec<usize>,
    /// Little-endian element bytes, in C order.
    pub data: Vec<u8>,
}

/// Why bytes are not a `.npy` array nnrt can use.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum NpyError {
    /// The file does not start with `\x93NUMPY`.
    #[error("not an .npy file (it does not start with \\x93NUMPY)")]
    BadMagic,
    /// A format version other than 1.0, 2.0 or 3.0.
    #[error("unsupported .npy format version {0} (supported: 1, 2, 3)")]
    Version(u8),
    /// The file ends inside its header.
    #[error("truncated .npy header: the file has {got} bytes, the header needs {needed}")]
    Truncated {
        /// The file's length.
        got: usize,
        /// The length the header's size field asks for.
        needed: u64,
    },
    /// The header is not UTF-8 text.
    #[error(".npy header is not text")]
    NotText,
    /// A header field is missing or cannot be read.
    #[error(".npy header: '{key}' is missing or malformed")]
    Field {
        /// `descr` or `shape`.
        key: &'static str,
    },
    /// A shape entry is not a non-negative integer.
    #[error(".npy header: shape entry '{0}' is not a non-negative integer")]
    Dim(String),
    /// An element type nnrt has no [`DType`] for.
    #[error("unsupported .npy dtype '{0}' (supported: float32/16, int8/16/32/64, uint8, bool, complex64, little-endian)")]
    Dtype(String),
    /// Fortran (column-major) order.
    #[error("Fortran-ordered .npy arrays are not supported; save with C order")]
    FortranOrder,
    /// The shape's size in bytes does not fit in memory addresses.
    #[error(".npy shape {dims:?} of {dtype} is too large: its size overflows")]
    TooLarge {
        /// The shape.
        dims: Vec<usize>,
        /// The element type.
        dtype: DType,
    },
    /// The data after the header is not the size the shape and type give.
    #[error(".npy data has {got} bytes, expected {expected} for {dtype} shape {dims:?}")]
    DataSize {
        /// Bytes present.
        got: usize,
        /// Bytes the shape needs.
        expected: usize,
        /// The element type.
        dtype: DType,
        /// The shape.
        dims: Vec<usize>,
    },
}

/// NumPy's type string for `dtype` (little-endian, or `|` for one-byte types).
pub fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::Bool => "|b1",
        DType::C64 => "<c8",
    }
}

fn parse_descr(d: &str) -> Result<DType, NpyError> {
    Ok(match d {
        "<f4" | "=f4" => DType::F32,
        "<f2" | "=f2" => DType::F16,
        "|i1" | "<i1" | "=i1" => DType::I8,
        "|u1" | "<u1" | "=u1" => DType::U8,
        "<i2" | "=i2" => DType::I16,
        "<i4" | "=i4" => DType::I32,
        "<i8" | "=i8" => DType::I64,
        "|b1" | "<b1" | "=b1" => DType::Bool,
        "<c8" | "=c8" => DType::C64,
        other => return Err(NpyError::Dtype(other.to_string())),
    })
}

/// Value of `key` in the header dict, as the raw text after the colon.
fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("'{key}':");
    let start = header.find(&pat)? + pat.len();
    Some(header[start..].trim_start())
}

/// Parses `.npy` bytes. Never panics: whatever the bytes, the result is an array whose data
/// has exactly the size its shape and type give, or an error.
pub fn parse(bytes: &[u8]) -> Result<Array, NpyError> {
    if bytes.len() < 6 || &bytes[..6] != b"\x93NUMPY" {
        return Err(NpyError::BadMagic);
    }
    let major = *bytes.get(6).ok_or(NpyError::Truncated { got: bytes.len(), needed: 10 })?;
    // Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 in 4 (3.0: UTF-8 header).
    let (len_bytes, start) = match major {
        1 => (&bytes.get(8..10), 10),
        2 | 3 => (&bytes.get(8..12), 12),
        v => return Err(NpyError::Version(v)),
    };
    let len_bytes = len_bytes.ok_or(NpyError::Truncated { got: bytes.len(), needed: start as u64 })?;
    let hlen = len_bytes.iter().rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let needed = start as u64 + hlen;
    let end = usize::try_from(needed).ok().filter(|&e| e <= bytes.len()).ok_or(NpyError::Truncated { got: bytes.len(), needed })?;
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| NpyError::NotText)?;

    let d = field(header, "descr").ok_or(NpyError::Field { key: "descr" })?;
    let d = d.strip_prefix('\'').ok_or(NpyError::Field { key: "descr" })?;
    let dtype = parse_descr(&d[..d.find('\'').ok_or(NpyError::Field { key: "descr" })?])?;
    if field(header, "fortran_order").is_some_and(|v| v.starts_with("True")) {
        return Err(NpyError::FortranOrder);
    }
    let s = field(header, "shape").ok_or(NpyError::Field { key: "shape" })?;
    let s = s.strip_prefix('(').ok_or(NpyError::Field { key: "shape" })?;
    let s = &s[..s.find(')').ok_or(NpyError::Field { key: "shape" })?];
    let dims = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_end_matches('L').parse::<usize>().map_err(|_| NpyError::Dim(p.to_string())))
        .collect::<Result<Vec<_>, _>>()?;

    let data = &bytes[end..];
    // A shape with a zero dim holds no bytes whatever its other dims, as in NumPy.
    let elements = if dims.contains(&0) { Some(0) } else { dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) };
    let expected = elements.and_then(|n| n.checked_mul(dtype.size())).ok_or_else(|| NpyError::TooLarge { dims: dims.clone(), dtype })?;
    if data.len() != expected {
        return Err(NpyError::DataSize { got: data.len(), expected, dtype, dims });
    }
    Ok(Array { dtype, dims, data: data.to_vec() })
}

/// Serializes to `.npy`: version 1.0, or 2.0 when the header is longer than 1.0 can state
/// (a shape of thousands of dims). The header is padded with spaces so the data starts on a
/// 64-byte boundary, and ends in a newline, as NumPy writes it.
pub fn to_bytes(dtype: DType, dims: &[usize], data: &[u8]) -> Vec<u8> {
    let shape = match dims.len() {
        0 => "()".to_string(),
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let dict = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", descr(dtype));
    // The header (dict, padding, newline) after the magic, version and length field of `prefix`
    // bytes, so that the data starts at a multiple of 64.
    let header = |prefix: usize| {
        let pad = (64 - (prefix + dict.len() + 1) % 64) % 64;
        format!("{dict}{}\n", " ".repeat(pad))
    };
    let mut out = Vec::new();
    out.extend_from_slice(b"\x93NUMPY");
    let v1 = header(10);
    let header = match u16::try_from(v1.len()) {
        Ok(len) => {
            out.extend_from_slice(&[1, 0]);
            out.extend_from_slice(&len.to_le_bytes());
            v1
        }
        Err(_) => {
            let v2 = header(12);
            out.extend_from_slice(&[2, 0]);
            // A header past 4 GiB would need a shape of some 10^9 dims.
            out.extend_from_slice(&u32::try_from(v2.len()).unwrap_or(u32::MAX).to_le_bytes());
            v2
        }
    };
    out.reserve(header.len() + data.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests;
