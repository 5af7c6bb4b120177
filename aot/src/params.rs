//! The parameters file of an artifact: a header that names the model and the kernel ABI, a table
//! of constants, and the constants' bytes at 64-byte boundaries, memory-mapped at create.
//!
//! ```text
//! 0   magic  "NNRTPRM\0"
//! 8   u32    format version (FORMAT_VERSION)
//! 12  u32    number of constants N
//! 16  u64    model hash (the generated code holds the same)
//! 24  u64    kernel ABI (crate::KERNEL_ABI of the nnrt that wrote it)
//! 32  u64    file size in bytes
//! 40  N × (u64 offset, u64 length)
//! ..  data, each constant at a multiple of 64 bytes
//! ```
//! All integers little-endian.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use nnrt_core::{Blob, ConstData};

use crate::Error;

/// The first 8 bytes of every parameters file.
pub const MAGIC: [u8; 8] = *b"NNRTPRM\0";
/// The layout version this runtime reads and writes.
pub const FORMAT_VERSION: u32 = 1;
const HEADER: usize = 40;
/// Constants start at multiples of this many bytes.
pub const ALIGN: usize = 64;

/// A checked, memory-mapped parameters file.
pub struct Params {
    path: String,
    blob: Blob,
    table: Vec<(usize, usize)>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl Params {
    /// Maps `path` and checks it is the parameters file of the model with hash `model_hash`,
    /// written for this runtime's kernel ABI, with `count` constants, whole.
    pub fn open(path: impl AsRef<Path>, model_hash: u64, count: usize) -> Result<Params, Error> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let io = |error| Error::Io { path: name.clone(), error };
        let file = File::open(path).map_err(io)?;
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes change if another process
        // truncates or rewrites the file while it is mapped. A parameters file is a read-only
        // input (as model files are for the runtime); every read below is bounds-checked.
        let blob: Blob = match unsafe { memmap2::Mmap::map(&file) } {
            Ok(map) => Arc::new(map),
            Err(_) => Arc::new(std::fs::read(path).map_err(io)?),
        };
        Params::from_blob(name, blob, model_hash, count)
    }

    /// [`Params::open`] over bytes already in memory (`name` is used in errors).
    pub fn from_blob(name: String, blob: Blob, model_hash: u64, count: usize) -> Result<Params, Error> {
        let bad = |reason: String| Error::Params { path: name.clone(), reason };
        let b = (*blob).as_ref();
        if b.len() < HEADER {
            return Err(bad(format!("is {} bytes, shorter than the {HEADER}-byte header of an nnrt parameters file", b.len())));
        }
        if b[..8] != MAGIC {
            return Err(bad("is not an nnrt parameters file (the magic is not NNRTPRM)".into()));
        }
        let version = u32_at(b, 8);
        if version != FORMAT_VERSION {
            return Err(bad(format!("has parameters format version {version}; this artifact reads version {FORMAT_VERSION}")));
        }
        let abi = u64_at(b, 24);
        if abi != crate::KERNEL_ABI {
            return Err(bad(format!(
                "was written for kernel ABI {abi:016x}, this artifact's runtime has {:016x} (another nnrt version): regenerate the artifact and its parameters together",
                crate::KERNEL_ABI
            )));
        }
        let hash = u64_at(b, 16);
        if hash != model_hash {
            return Err(bad(format!("holds the parameters of another model (hash {hash:016x}, this artifact expects {model_hash:016x})")));
        }
        let size = u64_at(b, 32);
        if size != b.len() as u64 {
            return Err(bad(format!("is {} bytes but its header says {size}: the file is truncated or was changed", b.len())));
        }
        let n = u32_at(b, 12) as usize;
        if n != count {
            return Err(bad(format!("has {n} constants, this artifact expects {count}")));
        }
        let table_end = n.checked_mul(16).and_then(|t| t.checked_add(HEADER)).filter(|&e| e <= b.len());
        let Some(table_end) = table_end else {
            return Err(bad(format!("its table of {n} constants runs past the end of the file")));
        };
        let mut table = Vec::with_capacity(n);
        for k in 0..n {
            let (off, len) = (u64_at(b, HEADER + 16 * k), u64_at(b, HEADER + 16 * k + 8));
            let end = off.checked_add(len);
            if off < table_end as u64 || end.is_none_or(|e| e > b.len() as u64) {
                return Err(bad(format!("constant {k} ({len} bytes at {off}) lies outside the file's data")));
            }
            table.push((off as usize, len as usize));
        }
        Ok(Params { path: name, blob, table })
    }

    /// Constant `k`, borrowed from the mapped file; its length must be `len`.
    pub fn constant(&self, k: usize, len: usize) -> Result<ConstData, Error> {
        let bad = |reason: String| Error::Params { path: self.path.clone(), reason };
        let &(off, have) = self.table.get(k).ok_or_else(|| bad(format!("has no constant {k}")))?;
        if have != len {
            return Err(bad(format!("constant {k} is {have} bytes, the artifact expects {len}")));
        }
        ConstData::borrowed(self.blob.clone(), off, len).ok_or_else(|| bad(format!("constant {k} lies outside the file")))
    }

    /// The file's path as given.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Writes a parameters file's bytes: the header for `model_hash` and this runtime's ABI, then
/// `constants` in order (what `nnrt-compile` writes).
pub fn write(model_hash: u64, constants: &[&[u8]]) -> Vec<u8> {
    let n = constants.len();
    let mut off = (HEADER + 16 * n).next_multiple_of(ALIGN);
    let mut table = Vec::with_capacity(n);
    for c in constants {
        table.push((off, c.len()));
        off = (off + c.len()).next_multiple_of(ALIGN);
    }
    let total = table.last().map_or(HEADER + 16 * n, |&(o, l)| o + l);
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.extend_from_slice(&model_hash.to_le_bytes());
    out.extend_from_slice(&crate::KERNEL_ABI.to_le_bytes());
    out.extend_from_slice(&(total as u64).to_le_bytes());
    for &(o, l) in &table {
        out.extend_from_slice(&(o as u64).to_le_bytes());
        out.extend_from_slice(&(l as u64).to_le_bytes());
    }
    for (c, &(o, _)) in constants.iter().zip(&table) {
        out.resize(o, 0);
        out.extend_from_slice(c);
    }
    out
}
