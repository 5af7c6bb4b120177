//! # nnrt-plugin-sdk
//!
//! Write nnrt custom-op plugins in safe Rust. A plugin is a `cdylib` that implements the C ABI of
//! `custom_ops/include/nnrt_plugin.h`; this crate does the C side: describe the ops with
//! [`Plugin`] (an eval closure per op, and optionally a shape closure), export them with
//! [`export_plugin!`], and every call from nnrt arrives as safe views ([`Tensor`],
//! [`TensorMut`], [`ShapeInput`]). An `Err(message)` becomes the op's run error in nnrt; a panic
//! is caught at the boundary and reported the same way.
//!
//! ```ignore
//! use nnrt_plugin_sdk::{export_plugin, Plugin};
//!
//! fn plugin() -> Plugin {
//!     Plugin::new("example").op("Double", |ins, outs, _options| {
//!         let x = ins[0].f32s()?;
//!         for (o, v) in outs[0].f32s_mut()?.iter_mut().zip(x) {
//!             *o = 2.0 * v;
//!         }
//!         Ok(())
//!     })
//! }
//! export_plugin!(plugin);
//! ```
//!
//! The crate's `unsafe` (raw pointers from the host, the exported entry point) lives in one
//! module, `ffi`; plugins themselves stay `#![deny(unsafe_code)]`. It depends on nothing of nnrt,
//! so a plugin does not link the runtime.

#![deny(unsafe_code)]

pub mod abi;
#[doc(hidden)]
pub mod ffi;
pub mod flexbuffers;

use std::fmt;

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// float32
    F32,
    /// float16
    F16,
    /// int8
    I8,
    /// uint8
    U8,
    /// int16
    I16,
    /// int32
    I32,
    /// int64
    I64,
    /// bool (one byte)
    Bool,
}

impl DType {
    /// The `nnrt_plugin_dtype` code.
    pub fn code(self) -> i32 {
        use abi::dtype::*;
        match self {
            DType::F32 => FLOAT32,
            DType::F16 => FLOAT16,
            DType::I8 => INT8,
            DType::U8 => UINT8,
            DType::I16 => INT16,
            DType::I32 => INT32,
            DType::I64 => INT64,
            DType::Bool => BOOL,
        }
    }

    /// The type of an `nnrt_plugin_dtype` code.
    pub fn from_code(code: i32) -> Option<DType> {
        use abi::dtype::*;
        Some(match code {
            FLOAT32 => DType::F32,
            FLOAT16 => DType::F16,
            INT8 => DType::I8,
            UINT8 => DType::U8,
            INT16 => DType::I16,
            INT32 => DType::I32,
            INT64 => DType::I64,
            BOOL => DType::Bool,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::I16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::I64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::Bool => "bool",
        };
        f.write_str(s)
    }
}

/// Per-tensor quantization: `real = scale * (q - zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quant {
    /// Scale (non-zero).
    pub scale: f32,
    /// Zero point.
    pub zero_point: i32,
}

fn typed<T: bytemuck::Pod>(bytes: &[u8], have: DType, want: DType) -> Result<&[T], String> {
    if have != want {
        return Err(format!("expected a {want} tensor, got {have}"));
    }
    bytemuck::try_cast_slice(bytes).map_err(|e| format!("{want} tensor bytes cannot be viewed as elements: {e:?}"))
}

/// A read-only input tensor.
#[derive(Clone, Debug)]
pub struct Tensor<'a> {
    /// Element type.
    pub dtype: DType,
    /// Dims, innermost last.
    pub dims: Vec<usize>,
    /// Per-tensor quantization, if any.
    pub quant: Option<Quant>,
    bytes: &'a [u8],
}

impl<'a> Tensor<'a> {
    /// A view of `bytes` (used by the FFI layer and by tests).
    pub fn new(dtype: DType, dims: Vec<usize>, quant: Option<Quant>, bytes: &'a [u8]) -> Tensor<'a> {
        Tensor { dtype, dims, quant, bytes }
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements of a float32 tensor.
    pub fn f32s(&self) -> Result<&'a [f32], String> {
        typed(self.bytes, self.dtype, DType::F32)
    }

    /// The elements of an int32 tensor.
    pub fn i32s(&self) -> Result<&'a [i32], String> {
        typed(self.bytes, self.dtype, DType::I32)
    }

    /// The elements of a uint8 tensor.
    pub fn u8s(&self) -> Result<&'a [u8], String> {
        typed(self.bytes, self.dtype, DType::U8)
    }

    /// The values as float32: float32 as is, quantized uint8/int8 dequantized.
    pub fn to_f32(&self) -> Result<Vec<f32>, String> {
        let q = self.quant;
        match (self.dtype, q) {
            (DType::F32, _) => Ok(self.f32s()?.to_vec()),
            (DType::U8, Some(q)) => Ok(self.bytes.iter().map(|&v| (v as f32 - q.zero_point as f32) * q.scale).collect()),
            (DType::I8, Some(q)) => Ok(self.bytes.iter().map(|&v| (v as i8 as f32 - q.zero_point as f32) * q.scale).collect()),
            (t, _) => Err(format!("cannot read a {t} tensor{} as float32", if q.is_none() { " without quantization" } else { "" })),
        }
    }
}

/// A writable output tensor, preallocated by nnrt with its final shape.
#[derive(Debug)]
pub struct TensorMut<'a> {
    /// Element type.
    pub dtype: DType,
    /// Dims, innermost last.
    pub dims: Vec<usize>,
    /// Per-tensor quantization, if any.
    pub quant: Option<Quant>,
    bytes: &'a mut [u8],
}

impl<'a> TensorMut<'a> {
    /// A view of `bytes` (used by the FFI layer and by tests).
    pub fn new(dtype: DType, dims: Vec<usize>, quant: Option<Quant>, bytes: &'a mut [u8]) -> TensorMut<'a> {
        TensorMut { dtype, dims, quant, bytes }
    }

    /// The raw bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements of a float32 tensor.
    pub fn f32s_mut(&mut self) -> Result<&mut [f32], String> {
        if self.dtype != DType::F32 {
            return Err(format!("expected a float32 output, got {}", self.dtype));
        }
        bytemuck::try_cast_slice_mut(self.bytes).map_err(|e| format!("float32 output bytes cannot be viewed as elements: {e:?}"))
    }
}

/// An input as a shape function sees it: type, dims, and the bytes when the input is a constant.
#[derive(Clone, Debug)]
pub struct ShapeInput<'a> {
    /// Element type.
    pub dtype: DType,
    /// Dims.
    pub dims: Vec<usize>,
    /// The bytes of a constant input (weights, shape tensors), else `None`.
    pub data: Option<&'a [u8]>,
}

/// An op's kernel: inputs, preallocated outputs, the op's option bytes from the model.
pub type EvalFn = Box<dyn Fn(&[Tensor<'_>], &mut [TensorMut<'_>], &[u8]) -> Result<(), String> + Send + Sync>;

/// An op's shape function: input types and dims (and constant data), option bytes → one dims
/// list per output.
pub type ShapeFn = Box<dyn Fn(&[ShapeInput<'_>], &[u8]) -> Result<Vec<Vec<usize>>, String> + Send + Sync>;

/// One op of a plugin.
pub struct OpDef {
    /// The custom op's name in models.
    pub name: String,
    /// Its kernel.
    pub eval: EvalFn,
    /// Its shape function, if outputs can be computed from inputs.
    pub shape: Option<ShapeFn>,
}

/// One layer buffer of a device op's run, read-only (an input, laid out by nnrt).
#[derive(Clone, Copy, Debug)]
pub struct DeviceBuffer<'a> {
    /// The layer's name in the device program.
    pub name: &'a str,
    /// Its bytes in the device's layout, padded.
    pub bytes: &'a [u8],
}

/// One layer buffer of a device op's run that the driver writes (an output).
#[derive(Debug)]
pub struct DeviceBufferMut<'a> {
    /// The layer's name in the device program.
    pub name: &'a str,
    /// Its bytes, to be written in the device's layout.
    pub bytes: &'a mut [u8],
}

/// A device op's run for one op (what its init returned): inputs and outputs in the program's
/// layer order. Dropping it is the op's free.
pub type DeviceRunFn = Box<dyn FnMut(&[DeviceBuffer<'_>], &mut [DeviceBufferMut<'_>]) -> Result<(), String> + Send>;

/// A device op's init: the op's option bytes → its run.
pub type DeviceInitFn = Box<dyn Fn(&[u8]) -> Result<DeviceRunFn, String> + Send + Sync>;

/// One device op (ABI version 2): a driver for a custom op whose options carry a program for an
/// accelerator.
pub struct DeviceOpDef {
    /// The custom op's name in models (`edgetpu-custom-op`).
    pub name: String,
    /// The device, for messages (`Edge TPU`).
    pub device: String,
    /// Its per-op init.
    pub init: DeviceInitFn,
}

/// A plugin: its name and ops, built once when nnrt loads the library.
pub struct Plugin {
    /// Name shown in nnrt's messages.
    pub name: String,
    /// The ops, in order.
    pub ops: Vec<OpDef>,
    /// The device ops, in order (registered only with a host of ABI version 2 or later).
    pub device_ops: Vec<DeviceOpDef>,
}

impl Plugin {
    /// A plugin named `name` with no ops yet.
    pub fn new(name: &str) -> Plugin {
        Plugin { name: name.to_string(), ops: Vec::new(), device_ops: Vec::new() }
    }

    /// Adds a device op: a driver for custom op `name` on `device`. nnrt calls `init` once per op
    /// at prepare with the op's options; the run it returns is called per inference with the
    /// layer buffers (see `nnrt_plugin.h`).
    pub fn device_op<I>(mut self, name: &str, device: &str, init: I) -> Plugin
    where
        I: Fn(&[u8]) -> Result<DeviceRunFn, String> + Send + Sync + 'static,
    {
        self.device_ops.push(DeviceOpDef { name: name.to_string(), device: device.to_string(), init: Box::new(init) });
        self
    }

    /// Adds op `name` whose outputs keep the shapes the model declares.
    pub fn op<F>(mut self, name: &str, eval: F) -> Plugin
    where
        F: Fn(&[Tensor<'_>], &mut [TensorMut<'_>], &[u8]) -> Result<(), String> + Send + Sync + 'static,
    {
        self.ops.push(OpDef { name: name.to_string(), eval: Box::new(eval), shape: None });
        self
    }

    /// Adds op `name` with a shape function nnrt calls at prepare.
    pub fn op_with_shape<F, S>(mut self, name: &str, eval: F, shape: S) -> Plugin
    where
        F: Fn(&[Tensor<'_>], &mut [TensorMut<'_>], &[u8]) -> Result<(), String> + Send + Sync + 'static,
        S: Fn(&[ShapeInput<'_>], &[u8]) -> Result<Vec<Vec<usize>>, String> + Send + Sync + 'static,
    {
        self.ops.push(OpDef { name: name.to_string(), eval: Box::new(eval), shape: Some(Box::new(shape)) });
        self
    }

    /// The op named `name` (for tests that call kernels directly).
    pub fn find(&self, name: &str) -> Option<&OpDef> {
        self.ops.iter().find(|o| o.name == name)
    }
}

/// Log levels for [`log`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// An error.
    Error,
    /// A warning.
    Warn,
    /// Information.
    Info,
    /// Debugging detail.
    Debug,
}

/// Logs `message` through nnrt's logger (nothing happens before the plugin is registered).
pub fn log(level: Level, message: &str) {
    let code = match level {
        Level::Error => abi::log_level::ERROR,
        Level::Warn => abi::log_level::WARN,
        Level::Info => abi::log_level::INFO,
        Level::Debug => abi::log_level::DEBUG,
    };
    ffi::host_log(code, message);
}

/// Exports a plugin: `export_plugin!(build)` where `build: fn() -> Plugin` defines the C entry
/// point `nnrt_plugin_register`. Use it once, in a `cdylib` crate.
#[macro_export]
macro_rules! export_plugin {
    ($build:path) => {
        /// The plugin's C entry point (see `nnrt_plugin.h`).
        ///
        /// # Safety
        /// Called by nnrt's loader with the pointers `nnrt_plugin.h` describes.
        #[no_mangle]
        #[allow(unsafe_code)]
        pub unsafe extern "C" fn nnrt_plugin_register(
            host: *const $crate::abi::nnrt_plugin_host,
            info: *mut $crate::abi::nnrt_plugin_info,
        ) -> u32 {
            // SAFETY: the caller (nnrt's loader) passes a valid host struct and a writable info
            // struct, or NULL, which `register` checks.
            unsafe { $crate::ffi::register(host, info, $build) }
        }
    };
}

/// Shape helpers shared by plugins.
pub mod shape {
    /// Fails unless `dims` has `rank` dims.
    pub fn expect_rank(what: &str, dims: &[usize], rank: usize) -> Result<(), String> {
        if dims.len() != rank {
            return Err(format!("{what} must have rank {rank}, got shape {dims:?}"));
        }
        Ok(())
    }
}
