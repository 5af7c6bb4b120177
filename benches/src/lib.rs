//! Helpers shared by nnrt's criterion benches: deterministic data and a one-thread pool.

/// `n` values in [-1, 1) from a fixed-seed xorshift generator.
pub fn data(n: usize, seed: u64) -> Vec<f32> {
    nnrt_backend_cpu::testdata::unit_values(n, seed).map(|u| u * 2.0 - 1.0).collect()
}

/// A kernel pool with `n` threads (kernels split work over the pool of the run they are in).
pub fn pool(n: usize) -> nnrt_core::KernelPool {
    nnrt_core::KernelPool::new(n).expect("thread pool")
}

/// Geometry of a square, undilated, ungrouped conv with SAME padding over a 1×hw×hw×in_c input.
pub fn square_conv(hw: usize, in_c: usize, out_c: usize, k: usize, stride: usize) -> nnrt_backend_cpu::kernels::conv::ConvGeom {
    let out = hw.div_ceil(stride);
    let pad = ((out - 1) * stride + k).saturating_sub(hw) / 2;
    nnrt_backend_cpu::kernels::conv::ConvGeom {
        batch: 1,
        in_h: hw,
        in_w: hw,
        in_c,
        out_h: out,
        out_w: out,
        out_c,
        k_h: k,
        k_w: k,
        stride_h: stride,
        stride_w: stride,
        dil_h: 1,
        dil_w: 1,
        pad_top: pad,
        pad_left: pad,
        groups: 1,
    }
}

/// Geometry of a square, undilated 3x3 depthwise conv (multiplier 1) with SAME padding over a
/// 1×hw×hw×ch input.
pub fn square_depthwise(hw: usize, ch: usize, stride: usize) -> nnrt_backend_cpu::kernels::depthwise::DepthwiseGeom {
    nnrt_backend_cpu::kernels::depthwise::DepthwiseGeom::from_conv(&square_conv(hw, ch, ch, 3, stride), 1)
}
