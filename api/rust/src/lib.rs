//! # nnrt
//!
//! The public Rust API of nnrt, an on-device neural-network inference runtime. A [`Session`] loads
//! a model (an nnpackage folder or zip, a `.tflite` or a `.circle` file), takes configuration
//! (backends, threads, onert's `OP_BACKEND_*` keys), prepares (partitions, compiles kernels, plans
//! memory) and runs, as many times as needed.
//!
//! ```no_run
//! let mut s = nnrt::Session::load("model.tflite")?;
//! s.set_threads(2)?;
//! s.prepare()?;
//! let input = vec![0u8; s.input_info(0)?.byte_size()];
//! s.set_input(0, &input)?;
//! s.run()?;
//! let out: &[u8] = s.output(0)?;
//! # Ok::<(), nnrt::Error>(())
//! ```

//! Backends are cargo features, `cpu` and `gpu` (both on by default); a build without `gpu` does
//! not link wgpu. [`available_backends`] lists the backends of this build; asking for another
//! fails at prepare with `backend 'gpu' is not in this build (built with: cpu)`.

#![forbid(unsafe_code)]

mod backends;
mod plugins;
mod session;

pub use nnrt_core::{CancelToken, CompileError, Config, ConstData, DType, LoadError, OpKind, Operand, OperandId, Operation, Prepared, Quantization, RunError, Subgraph, SubgraphId};
pub use nnrt_custom_ops::{EvalFn, PluginError, ALLOW_PACKAGE_PLUGINS, DEVICE_LIB};
pub use backends::{available_backends, built_with, KNOWN_BACKENDS};
pub use nnrt_loaders::{darwinn, EdgeTpuOp, Format, FormatInfo};
pub use session::{catch_quietly, panic_message, Error, OpPlacement, Session, State, TensorInfo};
