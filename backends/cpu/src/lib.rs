//! nnrt's CPU backend.
//!
//! `kernels` holds the math of each op family as plain functions over slices (each optimized
//! kernel next to its reference twin); `simd` holds every `unsafe` SIMD routine, chosen at run
//! time from the CPU's features. This crate must not depend on any file format or on wgpu.

#![deny(unsafe_code)] // allowed only in `simd`, the one module of SIMD intrinsics

pub mod aot;
mod backend;
mod kernel;
mod lines;
pub mod prepack;
pub mod kernels;
mod ops;
pub mod quant;
#[allow(unsafe_code)]
pub(crate) mod simd;
#[doc(hidden)]
pub mod testdata;

pub use backend::CpuBackend;
