//! The `.pte` container: the optional `eh00` extended header, the verified program flatbuffer,
//! the data segments after it, and where a tensor's constant bytes are.
//!
//! Layout (little-endian; ExecuTorch `schema/extended_header.h` and FORMATS.md §1):
//!
//! ```text
//! 0x00 u32 root table offset      0x04 "ET12"
//! 0x08 "eh00"  0x0c u32 header length (counted from 0x08; 24 in old files, 32 with the data size)
//! 0x10 u64 program_size  0x18 u64 segment_base_offset  0x20 u64 segment_data_size (length >= 32)
//! ```
//!
//! Without the header there is no segment base: segments must then all be empty.

use flatbuffers::VerifierOptions;

use nnrt_core::{Blob, ConstData, LoadError};

use crate::generated::executorch_flatbuffer as et;
use crate::import::Constants;

/// The format's name in errors.
pub(crate) const FORMAT: &str = "ExecuTorch";

pub(crate) fn malformed(path: &str, reason: impl Into<String>) -> LoadError {
    LoadError::Malformed { path: path.to_string(), format: FORMAT, reason: reason.into() }
}

/// The extended header's facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// Bytes of the flatbuffer (with this header).
    pub program_size: u64,
    /// Where segment offsets count from.
    pub segment_base: u64,
    /// Bytes of segment data after the base, when the header says.
    pub segment_data_size: Option<u64>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reads and checks the extended header against the file size; `None` when the file has none.
pub(crate) fn header(path: &str, bytes: &[u8]) -> Result<Option<Header>, LoadError> {
    if bytes.get(8..12) != Some(b"eh00".as_slice()) {
        return Ok(None);
    }
    let len = u32_at(bytes, 12).ok_or_else(|| malformed(path, "the extended header 'eh00' is cut off after its magic"))?;
    if len < 24 {
        return Err(malformed(path, format!("the extended header says it is {len} bytes; at least 24 are needed (magic, length, program size, segment base)")));
    }
    let end = 8 + len as usize;
    if bytes.len() < end {
        return Err(malformed(path, format!("the extended header is {len} bytes but the file is only {} bytes", bytes.len())));
    }
    let program_size = u64_at(bytes, 16).unwrap_or(0);
    let segment_base = u64_at(bytes, 24).unwrap_or(0);
    let segment_data_size = if len >= 32 { u64_at(bytes, 32) } else { None };
    let file = bytes.len() as u64;
    if program_size < end as u64 || program_size > file {
        return Err(malformed(path, format!("the extended header's program size {program_size} is outside the file ({file} bytes)")));
    }
    if segment_base < program_size {
        return Err(malformed(path, format!("the segment base offset {segment_base} lies inside the program (which ends at byte {program_size})")));
    }
    if let Some(size) = segment_data_size {
        let need = segment_base.checked_add(size).ok_or_else(|| malformed(path, "segment base + segment data size overflows"))?;
        if size > 0 && need > file {
            return Err(malformed(path, format!("the extended header says segment data ends at byte {need}, but the file has {file} bytes (truncated?)")));
        }
    }
    Ok(Some(Header { program_size, segment_base, segment_data_size }))
}

fn verifier_options() -> VerifierOptions {
    VerifierOptions { max_tables: 10_000_000, max_depth: 128, max_apparent_size: 1 << 31, ..Default::default() }
}

/// An opened program: the verified root and the file's bytes.
pub(crate) struct Container<'a> {
    pub path: &'a str,
    pub bytes: &'a [u8],
    pub header: Option<Header>,
    pub program: et::Program<'a>,
    consts: Constants<'a>,
}

impl<'a> Container<'a> {
    /// Checks the identifier and the header, and verifies the flatbuffer once; afterwards every
    /// generated accessor reads in bounds.
    pub fn open(path: &'a str, blob: &'a Blob) -> Result<Self, LoadError> {
        let bytes: &'a [u8] = (**blob).as_ref();
        if bytes.get(4..8) != Some(b"ET12".as_slice()) {
            return Err(crate::format::unknown_format(path, "file identifier is not \"ET12\"".into()));
        }
        let header = header(path, bytes)?;
        let fb_len = header.map_or(bytes.len(), |h| h.program_size as usize);
        let program = et::root_as_program_with_opts(&verifier_options(), &bytes[..fb_len])
            .map_err(|e| malformed(path, format!("the program flatbuffer does not verify: {e}")))?;
        Ok(Self { path, bytes, header, program, consts: Constants::new(blob) })
    }

    pub fn malformed(&self, reason: impl Into<String>) -> LoadError {
        malformed(self.path, reason)
    }

    /// The bytes of segment `index` (borrowed from the file).
    pub fn segment(&self, index: usize) -> Result<&'a [u8], LoadError> {
        let segments = self.program.segments();
        let n = segments.map_or(0, |s| s.len());
        let seg = segments.filter(|_| index < n).map(|s| s.get(index)).ok_or_else(|| self.malformed(format!("segment {index} does not exist (the program has {n})")))?;
        let size = seg.size();
        if size == 0 {
            return Ok(&[]);
        }
        let base = self.header.map(|h| h.segment_base).ok_or_else(|| {
            self.malformed(format!("segment {index} holds {size} bytes, but the file has no extended header to say where segments start"))
        })?;
        let start = base.checked_add(seg.offset()).ok_or_else(|| self.malformed(format!("segment {index}'s offset overflows")))?;
        let end = start.checked_add(size).ok_or_else(|| self.malformed(format!("segment {index}'s size overflows")))?;
        if end > self.bytes.len() as u64 {
            return Err(self.malformed(format!("segment {index} spans bytes {start}..{end}, past the end of the file ({} bytes; truncated?)", self.bytes.len())));
        }
        Ok(&self.bytes[start as usize..end as usize])
    }

    /// `len` bytes at `offset` inside segment `index`.
    pub fn segment_range(&self, index: usize, offset: u64, len: usize, what: &str) -> Result<ConstData, LoadError> {
        let seg = self.segment(index)?;
        let end = offset.checked_add(len as u64).filter(|&e| e <= seg.len() as u64).ok_or_else(|| {
            self.malformed(format!("{what}: {len} bytes at offset {offset} of segment {index} lie past its end ({} bytes)", seg.len()))
        })?;
        self.borrow(&seg[offset as usize..end as usize])
    }

    /// A constant borrowing `bytes`, a slice of the file.
    pub fn borrow(&self, bytes: &[u8]) -> Result<ConstData, LoadError> {
        self.consts.slice(bytes).ok_or_else(|| self.malformed("constant data outside the file"))
    }

    /// The constant bytes of a tensor whose `data_buffer_idx` is `idx` (> 0) and that is not
    /// mutable: from `constant_buffer` (older programs) or `constant_segment`.
    pub fn constant(&self, idx: usize, len: usize, what: &str) -> Result<ConstData, LoadError> {
        if let Some(buffers) = self.program.constant_buffer().filter(|b| !b.is_empty()) {
            if idx >= buffers.len() {
                return Err(self.malformed(format!("{what}: constant buffer {idx} does not exist (the program has {})", buffers.len())));
            }
            let storage = buffers.get(idx).storage().map(|s| s.bytes()).unwrap_or(&[]);
            if storage.len() < len {
                return Err(self.malformed(format!("{what}: needs {len} bytes, constant buffer {idx} has {}", storage.len())));
            }
            return self.borrow(&storage[..len]);
        }
        let seg = self.program.constant_segment().ok_or_else(|| self.malformed(format!("{what}: refers to constant {idx}, but the program has neither constant buffers nor a constant segment")))?;
        let offsets = seg.offsets().map(|o| o.iter().collect::<Vec<u64>>()).unwrap_or_default();
        let offset = *offsets.get(idx).ok_or_else(|| self.malformed(format!("{what}: constant {idx} does not exist (the constant segment lists {})", offsets.len())))?;
        self.segment_range(seg.segment_index() as usize, offset, len, what)
    }

    /// The initial bytes of a mutable tensor (`data_buffer_idx` > 0 with allocation info).
    pub fn mutable(&self, list: usize, idx: usize, len: usize, what: &str) -> Result<ConstData, LoadError> {
        let lists = self.program.mutable_data_segments();
        let n = lists.map_or(0, |l| l.len());
        let seg = lists.filter(|_| list < n).map(|l| l.get(list)).ok_or_else(|| self.malformed(format!("{what}: mutable data segment list {list} does not exist (the program has {n})")))?;
        let offsets = seg.offsets().map(|o| o.iter().collect::<Vec<u64>>()).unwrap_or_default();
        let offset = *offsets.get(idx).ok_or_else(|| self.malformed(format!("{what}: mutable data {idx} does not exist (its list has {})", offsets.len())))?;
        self.segment_range(seg.segment_index() as usize, offset, len, what)
    }

    /// The bytes named `key` in `Program.named_data`.
    pub fn named(&self, key: &str) -> Result<&'a [u8], LoadError> {
        let found = self.program.named_data().and_then(|nd| nd.iter().find(|d| d.key() == Some(key)));
        let d = found.ok_or_else(|| self.malformed(format!("named data '{key}' does not exist")))?;
        self.segment(d.segment_index() as usize)
    }

    /// The payload a delegate refers to: inline data or a segment.
    pub fn delegate_data(&self, r: &et::BackendDelegateDataReference<'_>) -> Result<&'a [u8], LoadError> {
        let index = r.index() as usize;
        match r.location() {
            et::DataLocation::INLINE => {
                let list = self.program.backend_delegate_data();
                let n = list.map_or(0, |l| l.len());
                let d = list.filter(|_| index < n).map(|l| l.get(index)).ok_or_else(|| self.malformed(format!("inline delegate data {index} does not exist (the program has {n})")))?;
                Ok(d.data().map(|v| v.bytes()).unwrap_or(&[]))
            }
            et::DataLocation::SEGMENT => self.segment(index),
            other => Err(self.malformed(format!("delegate data location {} is unknown (0 inline, 1 segment)", other.0))),
        }
    }
}
