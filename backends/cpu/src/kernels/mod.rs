//! Kernels per op family, as plain functions over slices in NHWC layout.
//!
//! Every optimized kernel has a reference twin (`*_ref`) written for clarity; property tests
//! compare the two. Callers install the pool they want (`nnrt_threads::KernelPool::install`); kernels
//! split large work with `nnrt_threads::par_for` and friends and never spawn threads themselves.

pub mod argmax_pool;
pub mod arith;
pub mod batch_matmul;
pub mod binary;
pub mod cast;
pub mod compare;
pub mod conv;
pub mod conv3d;
pub mod data;
pub mod depthwise;
pub mod expand_dw;
pub mod fft;
pub mod gemm;
pub mod lstm;
pub mod matrix;
pub mod movement;
pub mod pool;
pub mod reduce;
pub mod resize;
pub mod rnn;
pub mod scan;
pub mod scatter;
pub mod select;
pub mod softmax;
pub(crate) mod small;
pub mod sparse_conv;
pub mod transpose_conv;
pub mod unary;

/// A fused activation expressed as a clamp, as TFLite applies it after conv, FC, add, …
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Act {
    /// Lower bound of the output (`f32::NEG_INFINITY` when none).
    pub min: f32,
    /// Upper bound of the output (`f32::INFINITY` when none).
    pub max: f32,
}

impl Act {
    /// No clamping.
    pub const NONE: Act = Act { min: f32::NEG_INFINITY, max: f32::INFINITY };
    /// `RELU`: max(x, 0).
    pub const RELU: Act = Act { min: 0.0, max: f32::INFINITY };
    /// `RELU6`: min(max(x, 0), 6).
    pub const RELU6: Act = Act { min: 0.0, max: 6.0 };
    /// `RELU_N1_TO_1`: min(max(x, -1), 1).
    pub const RELU_N1_TO_1: Act = Act { min: -1.0, max: 1.0 };

    /// Applies the clamp to one value. NaN stays NaN, as TFLite's `min(max(x, lo), hi)` keeps it
    /// (and as the SIMD kernels do); `f32::max` would turn it into `lo`.
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
        let y = if x < self.min { self.min } else { x };
        if y > self.max {
            self.max
        } else {
            y
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Act;

    #[test]
    fn clamp_keeps_nan_like_tflite() {
        assert!(Act::RELU6.apply(f32::NAN).is_nan());
        assert!(Act::RELU.apply(f32::NAN).is_nan());
        assert_eq!(Act::RELU6.apply(-1.0), 0.0);
        assert_eq!(Act::RELU6.apply(7.0), 6.0);
        assert_eq!(Act::RELU_N1_TO_1.apply(0.5), 0.5);
        assert_eq!(Act::NONE.apply(f32::INFINITY), f32::INFINITY);
    }
}
