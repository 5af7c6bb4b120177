//! Helpers shared by the integration tests: f32 bytes, and driving a model through every phase
//! ([`exercise`]).
#![allow(dead_code)] // each test file uses a different part

pub mod exercise;

/// Little-endian bytes of f32 values.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// f32 values of little-endian bytes.
pub fn f32_values(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
