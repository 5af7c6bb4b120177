//! # nnrt-loaders
//!
//! Turns model files into nnrt-core's IR: nnpackages (folder or zip, MANIFEST 1.0–1.3, cfg
//! files), TFLite (`TFL3`) and Circle (`CIR0`) flatbuffers through one generated reader that is
//! verified on every load. Constant data is borrowed from the memory-mapped file, not copied.
//!
//! Depends on `nnrt-core`; nothing here knows about backends.

pub mod fbs;
pub mod generated;
pub mod join;
pub mod nnpackage;
pub mod tflite;

pub use join::join;
pub use nnpackage::{load, IoRef, Manifest, Package};
