//! nnrt's GPU backend: f32 kernels as WGSL compute shaders run through wgpu (Vulkan, Metal, DX12,
//! or a software Vulkan adapter such as lavapipe where no GPU exists).
//!
//! `lower` turns each supported op into shader dispatches and answers `supports` with the reason
//! an op cannot run here (op, dtype, option, or a size over the adapter's limits), so those ops
//! fall back to the next backend instead of failing at dispatch. `exec` plans device buffers by
//! tensor lifetime, builds pipelines (cached per device by shader family and override constants)
//! and bind groups at compile, and runs a partition as one submission: the host sees only the
//! tensors that cross the partition's boundary.

#![forbid(unsafe_code)]

mod device;
mod exec;
mod lower;
mod shaders;

use std::sync::Arc;

use nnrt_core::{Backend, CompileCtx, CompileError, Executable, OpId, Support};

pub use device::Gpu;
pub use shaders::families as shader_families;

/// nnrt's GPU backend (id `gpu`).
pub struct GpuBackend {
    gpu: Arc<Gpu>,
}

impl GpuBackend {
    /// Opens the adapter whose name contains `adapter` (case-insensitive; the session's
    /// `GPU_ADAPTER`), or the first high-performance adapter when `None`. The device is shared by
    /// every backend opened with the same choice. The error says why none could be used.
    pub fn new(adapter: Option<&str>) -> Result<GpuBackend, String> {
        Ok(GpuBackend { gpu: device::open(adapter)? })
    }

    /// The device in use.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}

impl Backend for GpuBackend {
    fn id(&self) -> &str {
        "gpu"
    }

    fn supports(&self, ctx: &CompileCtx, op: OpId) -> Support {
        let mut scratch = lower::Consts::probe();
        match lower::lower(ctx, op, &mut scratch, lower::Limits::of(&self.gpu)) {
            Ok(_) => Support::Yes,
            Err(why) => Support::No(why),
        }
    }

    fn compile(&self, ctx: &CompileCtx, ops: &[OpId]) -> Result<Box<dyn Executable>, CompileError> {
        Ok(Box::new(exec::GpuExecutable::new(self.gpu.clone(), ctx, ops)?))
    }
}
