//! A small FlexBuffers reader: enough to read the option maps TFLite custom ops carry
//! (`{"stride": 16, "score_threshold": 0.5, "subset_idxs": [..]}`): maps, numbers (inline or
//! indirect), booleans, strings, keys, and vectors (typed, fixed-size typed, untyped) of those.
//! Every read is bounds-checked; a malformed buffer gives an error, never a panic. Byte strings
//! and blobs read as bytes ([`Reference::as_bytes`]): this is the workspace's one FlexBuffers
//! reader, used by plugins through this SDK and by nnrt-loaders for the Edge TPU op's options.
//!
//! Format (flatbuffers' FlexBuffers spec): the last byte of the buffer is the root's byte width,
//! the byte before it the root's packed type (`type << 2 | log2(child byte width)`); the root
//! value sits just before those. Scalars are stored inline in their parent's width; everything
//! else is an unsigned offset back from where it is stored. A vector is preceded by its length;
//! an untyped vector is followed by one packed type byte per element; a map is an untyped vector
//! of values preceded by (keys vector offset, keys byte width, length).

use std::fmt;

const NULL: u8 = 0;
const INT: u8 = 1;
const UINT: u8 = 2;
const FLOAT: u8 = 3;
const KEY: u8 = 4;
const STRING: u8 = 5;
const INDIRECT_INT: u8 = 6;
const INDIRECT_UINT: u8 = 7;
const INDIRECT_FLOAT: u8 = 8;
const MAP: u8 = 9;
const VECTOR: u8 = 10;
const VECTOR_INT: u8 = 11;
const VECTOR_KEY: u8 = 14;
const VECTOR_STRING_DEPRECATED: u8 = 15;
const VECTOR_INT2: u8 = 16;
const VECTOR_FLOAT4: u8 = 24;
const BLOB: u8 = 25;
const BOOL: u8 = 26;
const VECTOR_BOOL: u8 = 36;

/// What went wrong reading a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "flexbuffer: {}", self.0)
    }
}

impl std::error::Error for Error {}

impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

fn read_uint(buf: &[u8], at: usize, width: usize) -> Result<u64, Error> {
    let b = at.checked_add(width).and_then(|end| buf.get(at..end)).ok_or_else(|| Error(format!("read of {width} bytes at {at} is out of bounds")))?;
    Ok(match width {
        1 => b[0] as u64,
        2 => u16::from_le_bytes([b[0], b[1]]) as u64,
        4 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
        8 => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        w => return err(format!("bad byte width {w}")),
    })
}

fn read_int(buf: &[u8], at: usize, width: usize) -> Result<i64, Error> {
    let u = read_uint(buf, at, width)?;
    Ok(match width {
        1 => u as u8 as i8 as i64,
        2 => u as u16 as i16 as i64,
        4 => u as u32 as i32 as i64,
        _ => u as i64,
    })
}

fn read_float(buf: &[u8], at: usize, width: usize) -> Result<f64, Error> {
    let u = read_uint(buf, at, width)?;
    Ok(match width {
        4 => f32::from_bits(u as u32) as f64,
        8 => f64::from_bits(u),
        w => return err(format!("a float cannot be {w} bytes wide")),
    })
}

fn indirect(buf: &[u8], at: usize, width: usize) -> Result<usize, Error> {
    let off = read_uint(buf, at, width)?;
    usize::try_from(off).ok().and_then(|o| at.checked_sub(o)).ok_or_else(|| Error(format!("offset {off} at {at} points before the buffer")))
}

/// A value in a buffer.
#[derive(Clone, Copy)]
pub struct Reference<'a> {
    buf: &'a [u8],
    /// Where the value (or its offset) is stored.
    at: usize,
    /// Width of the slot at `at`.
    parent_width: usize,
    /// Width of the pointed-to data (for offset types).
    byte_width: usize,
    ty: u8,
}

impl fmt::Debug for Reference<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reference(type {} at {})", self.ty, self.at)
    }
}

/// The root of buffer `buf`.
pub fn root(buf: &[u8]) -> Result<Reference<'_>, Error> {
    if buf.len() < 3 {
        return err(format!("buffer of {} bytes is too short", buf.len()));
    }
    let width = buf[buf.len() - 1] as usize;
    let packed = buf[buf.len() - 2];
    if !matches!(width, 1 | 2 | 4 | 8) || buf.len() < width + 2 {
        return err(format!("bad root width {width}"));
    }
    Ok(Reference { buf, at: buf.len() - 2 - width, parent_width: width, byte_width: 1 << (packed & 3), ty: packed >> 2 })
}

impl<'a> Reference<'a> {
    fn packed(buf: &'a [u8], at: usize, parent_width: usize, packed: u8) -> Reference<'a> {
        Reference { buf, at, parent_width, byte_width: 1 << (packed & 3), ty: packed >> 2 }
    }

    /// The FlexBuffers type code.
    pub fn type_code(&self) -> u8 {
        self.ty
    }

    fn target(&self) -> Result<usize, Error> {
        indirect(self.buf, self.at, self.parent_width)
    }

    /// The value as an integer (floats truncate, booleans are 0/1), as TFLite's `AsInt64`.
    pub fn as_i64(&self) -> Result<i64, Error> {
        match self.ty {
            INT => read_int(self.buf, self.at, self.parent_width),
            UINT | BOOL => Ok(read_uint(self.buf, self.at, self.parent_width)? as i64),
            FLOAT => Ok(read_float(self.buf, self.at, self.parent_width)? as i64),
            INDIRECT_INT => read_int(self.buf, self.target()?, self.byte_width),
            INDIRECT_UINT => Ok(read_uint(self.buf, self.target()?, self.byte_width)? as i64),
            INDIRECT_FLOAT => Ok(read_float(self.buf, self.target()?, self.byte_width)? as i64),
            t => err(format!("type {t} is not a number")),
        }
    }

    /// The value as an `i32` (fails if it does not fit).
    pub fn as_i32(&self) -> Result<i32, Error> {
        let v = self.as_i64()?;
        i32::try_from(v).map_err(|_| Error(format!("{v} does not fit an int32")))
    }

    /// The value as a float (integers convert).
    pub fn as_f64(&self) -> Result<f64, Error> {
        match self.ty {
            FLOAT => read_float(self.buf, self.at, self.parent_width),
            INDIRECT_FLOAT => read_float(self.buf, self.target()?, self.byte_width),
            INT | UINT | BOOL | INDIRECT_INT | INDIRECT_UINT => Ok(self.as_i64()? as f64),
            t => err(format!("type {t} is not a number")),
        }
    }

    /// The value as an `f32`.
    pub fn as_f32(&self) -> Result<f32, Error> {
        Ok(self.as_f64()? as f32)
    }

    /// The value as a boolean (numbers: non-zero).
    pub fn as_bool(&self) -> Result<bool, Error> {
        Ok(self.as_i64()? != 0)
    }

    /// The bytes of a string, key or blob, without the terminating NUL and without a UTF-8
    /// check: byte strings (the Edge TPU op's DarwiNN package under key "4") are binary. The
    /// slice borrows the buffer as is, so it has the buffer's alignment at that offset (none in
    /// general): copy it before reading it as anything but bytes.
    pub fn as_bytes(&self) -> Result<&'a [u8], Error> {
        match self.ty {
            KEY => {
                let start = self.target()?;
                let len = self.buf.get(start..).and_then(|s| s.iter().position(|&b| b == 0)).ok_or_else(|| Error("key is not NUL-terminated".into()))?;
                Ok(&self.buf[start..start + len])
            }
            STRING | BLOB => {
                let start = self.target()?;
                let len_at = start.checked_sub(self.byte_width).ok_or_else(|| Error("string length before the buffer".into()))?;
                let len = read_uint(self.buf, len_at, self.byte_width)?;
                usize::try_from(len)
                    .ok()
                    .and_then(|len| start.checked_add(len))
                    .and_then(|end| self.buf.get(start..end))
                    .ok_or_else(|| Error(format!("string of {len} bytes at {start} runs past the buffer of {}", self.buf.len())))
            }
            t => err(format!("type {t} is not a string, key or blob")),
        }
    }

    /// Where the bytes of a string, key or blob start in the buffer (see [`Reference::as_bytes`]).
    pub fn bytes_offset(&self) -> Result<usize, Error> {
        match self.ty {
            KEY | STRING | BLOB => self.target(),
            t => err(format!("type {t} is not a string, key or blob")),
        }
    }

    /// The text of a string or key (a blob whose bytes are UTF-8 also reads).
    pub fn as_str(&self) -> Result<&'a str, Error> {
        std::str::from_utf8(self.as_bytes()?).map_err(|_| Error("string is not UTF-8".into()))
    }

    /// The value as a vector (typed, fixed typed, untyped or a map's values).
    pub fn as_vector(&self) -> Result<Vector<'a>, Error> {
        let start = self.target()?;
        let w = self.byte_width;
        let (len, elem) = match self.ty {
            VECTOR | MAP => (None, None),
            VECTOR_INT..=VECTOR_KEY => (None, Some(self.ty - VECTOR_INT + INT)),
            VECTOR_STRING_DEPRECATED => (None, Some(STRING)),
            VECTOR_BOOL => (None, Some(BOOL)),
            VECTOR_INT2..=VECTOR_FLOAT4 => {
                let n = (self.ty - VECTOR_INT2) / 3 + 2;
                (Some(n as usize), Some((self.ty - VECTOR_INT2) % 3 + INT))
            }
            t => return err(format!("type {t} is not a vector")),
        };
        let len = match len {
            Some(n) => n,
            None => read_uint(self.buf, start.checked_sub(w).ok_or_else(|| Error("vector length before the buffer".into()))?, w)? as usize,
        };
        let end = len.checked_mul(w).and_then(|n| n.checked_add(start)).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| Error(format!("vector of {len} elements runs past the buffer")))?;
        if elem.is_none() && end.checked_add(len).is_none_or(|e| e > self.buf.len()) {
            return err("vector element types run past the buffer");
        }
        Ok(Vector { buf: self.buf, start, len, width: w, elem })
    }

    /// The value as a map.
    pub fn as_map(&self) -> Result<Map<'a>, Error> {
        if self.ty != MAP {
            return err(format!("type {} is not a map", self.ty));
        }
        let values = self.as_vector()?;
        let w = self.byte_width;
        let keys_at = values.start.checked_sub(3 * w).ok_or_else(|| Error("map header before the buffer".into()))?;
        let keys_start = indirect(self.buf, keys_at, w)?;
        let keys_width = read_uint(self.buf, keys_at + w, w)? as usize;
        let keys = Reference { buf: self.buf, at: 0, parent_width: 0, byte_width: keys_width, ty: VECTOR_KEY };
        let keys = Vector { start: keys_start, ..keys.vector_at(keys_start)? };
        if keys.len != values.len {
            return err(format!("map has {} keys but {} values", keys.len, values.len));
        }
        Ok(Map { keys, values })
    }

    fn vector_at(&self, start: usize) -> Result<Vector<'a>, Error> {
        let w = self.byte_width;
        if !matches!(w, 1 | 2 | 4 | 8) {
            return err(format!("bad byte width {w}"));
        }
        let len = read_uint(self.buf, start.checked_sub(w).ok_or_else(|| Error("vector length before the buffer".into()))?, w)? as usize;
        len.checked_mul(w).and_then(|n| n.checked_add(start)).filter(|&e| e <= self.buf.len()).ok_or_else(|| Error("keys run past the buffer".into()))?;
        Ok(Vector { buf: self.buf, start, len, width: w, elem: Some(KEY) })
    }

    /// Whether the value is null.
    pub fn is_null(&self) -> bool {
        self.ty == NULL
    }
}

/// A vector's elements.
#[derive(Clone, Copy, Debug)]
pub struct Vector<'a> {
    buf: &'a [u8],
    start: usize,
    len: usize,
    width: usize,
    /// Element type of typed vectors; `None` for untyped ones (types follow the elements).
    elem: Option<u8>,
}

impl<'a> Vector<'a> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`.
    pub fn get(&self, i: usize) -> Result<Reference<'a>, Error> {
        if i >= self.len {
            return err(format!("index {i} is out of range for a vector of {}", self.len));
        }
        let at = self.start + i * self.width;
        match self.elem {
            // Typed vectors store scalars in their own width; offsets point to data of that width.
            Some(ty) => Ok(Reference { buf: self.buf, at, parent_width: self.width, byte_width: self.width, ty }),
            None => {
                let packed = *self.buf.get(self.start + self.len * self.width + i).ok_or_else(|| Error("element type past the buffer".into()))?;
                Ok(Reference::packed(self.buf, at, self.width, packed))
            }
        }
    }

    /// All elements as integers.
    pub fn to_i64s(&self) -> Result<Vec<i64>, Error> {
        (0..self.len).map(|i| self.get(i)?.as_i64()).collect()
    }
}

/// A map: sorted keys and their values.
#[derive(Clone, Copy, Debug)]
pub struct Map<'a> {
    keys: Vector<'a>,
    values: Vector<'a>,
}

impl<'a> Map<'a> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.values.len
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.values.len == 0
    }

    /// The keys, in stored (sorted) order.
    pub fn keys(&self) -> Result<Vec<&'a str>, Error> {
        (0..self.keys.len).map(|i| self.keys.get(i)?.as_str()).collect()
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Result<Option<Reference<'a>>, Error> {
        for i in 0..self.keys.len {
            if self.keys.get(i)?.as_str()? == key {
                return self.values.get(i).map(Some);
            }
        }
        Ok(None)
    }

    /// The value of `key`, or an error naming the missing key.
    pub fn require(&self, key: &str) -> Result<Reference<'a>, Error> {
        self.get(key)?.ok_or_else(|| Error(format!("the options have no '{key}'")))
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &str) -> bool {
        matches!(self.get(key), Ok(Some(_)))
    }
}

/// Builds FlexBuffer maps of scalars and int vectors, for tests and tools (the writer side of
/// what [`root`] reads; not a general encoder). Widths are fixed at 8 bytes for simplicity.
pub mod build {
    /// A value in a map built by [`map`].
    #[derive(Clone, Debug)]
    pub enum Value {
        /// A signed integer.
        Int(i64),
        /// A float (stored as float64).
        Float(f64),
        /// A boolean.
        Bool(bool),
        /// A typed vector of integers.
        Ints(Vec<i64>),
    }

    /// A FlexBuffer whose root is a map of `entries` (sorted by key here, as FlexBuffers needs).
    pub fn map(entries: &[(&str, Value)]) -> Vec<u8> {
        let mut entries = entries.to_vec();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut buf = Vec::new();
        let mut key_at = Vec::new();
        for (k, _) in &entries {
            key_at.push(buf.len());
            buf.extend_from_slice(k.as_bytes());
            buf.push(0);
        }
        let pad = |buf: &mut Vec<u8>| {
            while !buf.len().is_multiple_of(8) {
                buf.push(0);
            }
        };
        // Int vectors, each a typed VECTOR_INT of width 8 preceded by its length.
        let mut vec_at = vec![None; entries.len()];
        for (i, (_, v)) in entries.iter().enumerate() {
            if let Value::Ints(xs) = v {
                pad(&mut buf);
                buf.extend_from_slice(&(xs.len() as u64).to_le_bytes());
                vec_at[i] = Some(buf.len());
                for x in xs {
                    buf.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        // Keys vector.
        pad(&mut buf);
        buf.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        let keys_start = buf.len();
        for &k in &key_at {
            let here = buf.len();
            buf.extend_from_slice(&((here - k) as u64).to_le_bytes());
        }
        // Map header: keys offset, keys width, length; then values and their packed types.
        let here = buf.len();
        buf.extend_from_slice(&((here - keys_start) as u64).to_le_bytes());
        buf.extend_from_slice(&8u64.to_le_bytes());
        buf.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        let values_start = buf.len();
        let mut types = Vec::new();
        for (i, (_, v)) in entries.iter().enumerate() {
            let here = buf.len();
            let (bytes, ty) = match v {
                Value::Int(x) => (x.to_le_bytes(), super::INT << 2 | 3),
                Value::Float(x) => (x.to_le_bytes(), super::FLOAT << 2 | 3),
                Value::Bool(b) => ((*b as u64).to_le_bytes(), super::BOOL << 2 | 3),
                Value::Ints(_) => (((here - vec_at[i].unwrap_or(here)) as u64).to_le_bytes(), super::VECTOR_INT << 2 | 3),
            };
            buf.extend_from_slice(&bytes);
            types.push(ty);
        }
        buf.extend_from_slice(&types);
        // Root: an offset to the map, its packed type, its width.
        pad(&mut buf);
        let here = buf.len();
        buf.extend_from_slice(&((here - values_start) as u64).to_le_bytes());
        buf.push(super::MAP << 2 | 3);
        buf.push(8);
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::build::{map, Value};
    use super::*;

    #[test]
    fn reads_a_built_map() {
        let buf = map(&[
            ("stride", Value::Int(16)),
            ("score_threshold", Value::Float(0.5)),
            ("max_detections", Value::Int(10)),
            ("flag", Value::Bool(true)),
            ("subset_idxs", Value::Ints(vec![1, -2, 3])),
        ]);
        let m = root(&buf).unwrap().as_map().unwrap();
        assert_eq!(m.keys().unwrap(), vec!["flag", "max_detections", "score_threshold", "stride", "subset_idxs"]);
        assert_eq!(m.require("stride").unwrap().as_i32().unwrap(), 16);
        assert_eq!(m.require("score_threshold").unwrap().as_f32().unwrap(), 0.5);
        assert!(m.require("flag").unwrap().as_bool().unwrap());
        assert_eq!(m.require("subset_idxs").unwrap().as_vector().unwrap().to_i64s().unwrap(), vec![1, -2, 3]);
        assert!(m.get("missing").unwrap().is_none());
        assert!(m.require("missing").unwrap_err().0.contains("missing"));
    }

    /// A map as flexbuffers' C++ builder writes it (narrowest widths, `{"a": 1, "b": 2.5}`):
    /// keys "a\0b\0", keys vector width 1, values width 4 (the float forces it), packed types.
    #[test]
    fn reads_a_narrow_map() {
        let mut b = vec![b'a', 0, b'b', 0];
        b.push(2); // keys len (width 1) at 4
        let keys_start = b.len(); // 5
        b.push((keys_start) as u8); // offset to "a" at 0: 5 - 0
        b.push((keys_start + 1 - 2) as u8); // offset to "b" at 2: 6 - 2
        while b.len() % 4 != 0 {
            b.push(0);
        }
        let hdr = b.len(); // 8
        b.extend_from_slice(&((hdr - keys_start) as u32).to_le_bytes()); // keys offset
        b.extend_from_slice(&1u32.to_le_bytes()); // keys width
        b.extend_from_slice(&2u32.to_le_bytes()); // len
        let values = b.len(); // 20
        b.extend_from_slice(&1i32.to_le_bytes());
        b.extend_from_slice(&2.5f32.to_le_bytes());
        b.push(INT << 2);
        b.push(FLOAT << 2);
        let root_at = b.len();
        b.push((root_at - values) as u8);
        b.push(MAP << 2 | 2);
        b.push(1);
        let m = root(&b).unwrap().as_map().unwrap();
        assert_eq!(m.require("a").unwrap().as_i64().unwrap(), 1);
        assert_eq!(m.require("b").unwrap().as_f64().unwrap(), 2.5);
    }

    /// A map whose "4" is a binary string with a 2-byte length prefix (as the small Edge TPU
    /// packages are stored): the bytes come back as is, not UTF-8 checked, and truncation fails.
    #[test]
    fn reads_binary_strings() {
        let payload = [0xbcu8, 0x0f, 0, 0, b'D', b'W', b'N', b'1', 0xff, 0xfe, 0];
        let mut b = vec![b'4', 0];
        b.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        let s_at = b.len(); // 4
        b.extend_from_slice(&payload);
        b.push(0);
        b.push(1); // keys len
        let keys_start = b.len();
        b.push(keys_start as u8); // offset back to "4" at 0
        if b.len() % 2 == 1 {
            b.push(0);
        }
        let hdr = b.len();
        b.extend_from_slice(&((hdr - keys_start) as u16).to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        let values = b.len();
        b.extend_from_slice(&((values - s_at) as u16).to_le_bytes());
        b.push(STRING << 2 | 1);
        let root_at = b.len();
        b.push((root_at - values) as u8);
        b.push(MAP << 2 | 1);
        b.push(1);
        let m = root(&b).unwrap().as_map().unwrap();
        let v = m.require("4").unwrap();
        assert_eq!(v.as_bytes().unwrap(), &payload);
        assert_eq!(v.bytes_offset().unwrap(), s_at);
        assert!(v.as_str().is_err(), "not UTF-8");
        let mut long = b.clone();
        long[2] = 0xff; // the length now runs past the buffer
        assert!(root(&long).unwrap().as_map().unwrap().require("4").unwrap().as_bytes().is_err());
    }

    #[test]
    fn malformed_buffers_are_errors() {
        assert!(root(&[]).is_err());
        assert!(root(&[0, 0, 3]).is_err());
        let buf = map(&[("k", Value::Int(1))]);
        for cut in 0..buf.len() {
            // Truncations and garbage must fail cleanly, never panic.
            let _ = root(&buf[cut..]).and_then(|r| r.as_map()).and_then(|m| m.require("k")).and_then(|v| v.as_i64());
        }
        let mut bad = buf.clone();
        let n = bad.len();
        bad[n - 3] = 0xff;
        let _ = root(&bad).and_then(|r| r.as_map());
    }
}
