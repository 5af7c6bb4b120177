//! Shared pieces of nnrt's command-line tools: `.npy` files, argument parsing, logging.

#![forbid(unsafe_code)]

pub mod args;
pub mod logger;
pub mod npy;
