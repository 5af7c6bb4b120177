//! `.npy` files for `--load:npy` / `--dump:npy`: the files' I/O around the `nnrt-npy` crate's
//! parser and writer.

use anyhow::{Context, Result};
use nnrt::DType;
pub use nnrt_npy::{parse, to_bytes, Array};

/// Reads a `.npy` file.
pub fn read(path: &str) -> Result<Array> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
    parse(&bytes).with_context(|| path.to_string())
}

/// Writes a `.npy` file.
pub fn write(path: &str, dtype: DType, dims: &[usize], data: &[u8]) -> Result<()> {
    std::fs::write(path, to_bytes(dtype, dims, data)).with_context(|| format!("cannot write {path}"))
}
