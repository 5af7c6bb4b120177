//! # nnrt-loaders
//!
//! Turns model files into nnrt-core's IR. One frontend layer ([`format`]) recognises a model by
//! its bytes or by its nnpackage MANIFEST `model-types` and hands it to its format's reader:
//! TFLite (`TFL3`) and Circle (`CIR0`) through one generated flatbuffers reader that is verified
//! on every load (TFLite files with the Edge TPU custom op load as TFLite, and each
//! op's DarwiNN package is read and checked against the op by [`darwinn`]); ExecuTorch programs
//! (`ET12`, [`pte`]) through their own verified reader; TOSA graphs
//! (`TOSA`, [`tosa`]) through theirs. nnpackages (folder or zip,
//! MANIFEST 1.0–1.3, cfg files) wrap them. Readers share [`import`]'s helpers; constant data is
//! borrowed from the memory-mapped file, not copied.
//!
//! Depends on `nnrt-core`; nothing here knows about backends.

pub mod darwinn;
pub mod fbs;
pub mod format;
pub mod generated;
pub mod import;
pub mod join;
pub mod nnpackage;
pub mod pte;
pub mod tflite;
pub mod tosa;

pub use format::{detect, EdgeTpuOp, Format, FormatInfo, Loaded};
pub use join::join;
pub use nnpackage::{load, IoRef, Manifest, Package};
