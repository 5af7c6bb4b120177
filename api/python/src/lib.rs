//! # nnrt-python
//!
//! The native half of nnrt's Python package: `nnrt._nnrt`, a thin layer over the Rust
//! [`nnrt::Session`] (not the C ABI). The pure-Python `nnrt` package (`python/nnrt/__init__.py`)
//! is what users import; it checks arguments, turns NumPy arrays into byte views and back, and
//! holds the exception classes this module raises (`nnrt._errors`).
//!
//! What crosses the boundary, and what is copied:
//! - inputs come as 1-D `uint8` views of the caller's arrays (no copy when an array is
//!   C-contiguous and of the input's dtype); nnrt copies each once into its arena, as
//!   `Session::set_input` does, before the GIL is released;
//! - outputs are copied once out of the arena (which the next run overwrites) into a `Vec` that
//!   the returned NumPy array then owns: no second copy;
//! - the GIL is released while a session prepares or runs, so sessions on other Python threads
//!   run at the same time.
//!
//! No panic reaches Python: the Rust API turns panics in prepare and run into
//! `Error::Internal`, and every entry point here runs under `catch_unwind` as a last guard.
//! This crate depends on `nnrt` and on pyo3/numpy only; it must not depend on loaders or backends
//! directly.

#![forbid(unsafe_code)]

mod convert;
mod session;

use pyo3::prelude::*;

/// The native module `nnrt._nnrt`.
#[pymodule]
fn _nnrt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<session::NativeSession>()?;
    m.add_function(wrap_pyfunction!(available_backends, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}

/// The backends of this build (its cargo features), e.g. `["cpu", "gpu"]`.
#[pyfunction]
fn available_backends() -> Vec<String> {
    nnrt::available_backends().iter().map(|s| s.to_string()).collect()
}

/// nnrt's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
