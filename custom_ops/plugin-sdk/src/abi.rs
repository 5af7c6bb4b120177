//! The C ABI of `custom_ops/include/nnrt_plugin.h`, as `#[repr(C)]` Rust types. Both sides use
//! these: plugins built with this SDK, and nnrt's plugin loader. Names follow the header so a
//! reader can grep one against the other. Plain data only: no code here dereferences anything.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

/// `NNRT_PLUGIN_ABI_VERSION`: 2 adds device ops (drivers) to version 1's custom ops.
pub const NNRT_PLUGIN_ABI_VERSION: u32 = 2;

/// `NNRT_PLUGIN_ABI_VERSION_MIN`: the oldest version nnrt still loads.
pub const NNRT_PLUGIN_ABI_VERSION_MIN: u32 = 1;

/// `NNRT_PLUGIN_MAX_RANK`.
pub const NNRT_PLUGIN_MAX_RANK: usize = 6;

/// `NNRT_PLUGIN_ENTRY_POINT`, NUL-terminated for symbol lookup.
pub const NNRT_PLUGIN_ENTRY_POINT: &[u8] = b"nnrt_plugin_register\0";

/// `nnrt_plugin_dtype` codes (NNFW_TYPE values where nnfw.h has the type).
pub mod dtype {
    /// float32
    pub const FLOAT32: i32 = 0;
    /// int32
    pub const INT32: i32 = 1;
    /// bool, one byte per element
    pub const BOOL: i32 = 3;
    /// uint8 (quantized or plain)
    pub const UINT8: i32 = 4;
    /// int64
    pub const INT64: i32 = 5;
    /// int8 (quantized or plain)
    pub const INT8: i32 = 6;
    /// int16
    pub const INT16: i32 = 7;
    /// float16
    pub const FLOAT16: i32 = 8;
}

/// `NNRT_PLUGIN_LOG_*` levels.
pub mod log_level {
    /// An error.
    pub const ERROR: i32 = 1;
    /// A warning.
    pub const WARN: i32 = 2;
    /// Information.
    pub const INFO: i32 = 3;
    /// Debugging detail.
    pub const DEBUG: i32 = 4;
}

/// `nnrt_plugin_tensor`: one tensor as a kernel sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nnrt_plugin_tensor {
    /// An `nnrt_plugin_dtype` code.
    pub dtype: i32,
    /// Number of dims used.
    pub rank: i32,
    /// Dims, `dims[0..rank]`.
    pub dims: [i32; NNRT_PLUGIN_MAX_RANK],
    /// Per-tensor quantization scale, 0 when not quantized.
    pub scale: f32,
    /// Per-tensor quantization zero point.
    pub zero_point: i32,
    /// The bytes (NULL in shape functions except for constant inputs).
    pub data: *mut c_void,
    /// Bytes at `data`.
    pub size: usize,
}

/// `nnrt_plugin_kernel_params`.
#[repr(C)]
#[derive(Debug)]
pub struct nnrt_plugin_kernel_params {
    /// Input descriptors.
    pub inputs: *const nnrt_plugin_tensor,
    /// Number of inputs.
    pub ninputs: usize,
    /// Output descriptors.
    pub outputs: *mut nnrt_plugin_tensor,
    /// Number of outputs.
    pub noutputs: usize,
    /// The op's option bytes (may be NULL).
    pub options: *const u8,
    /// Bytes at `options`.
    pub options_size: usize,
}

/// `nnrt_plugin_eval_fn`.
pub type nnrt_plugin_eval_fn = unsafe extern "C" fn(*mut c_void, *const nnrt_plugin_kernel_params, *mut c_char, usize) -> i32;

/// `nnrt_plugin_shape_fn`.
pub type nnrt_plugin_shape_fn = unsafe extern "C" fn(*mut c_void, *mut nnrt_plugin_kernel_params, *mut c_char, usize) -> i32;

/// `nnrt_plugin_op`. Function pointers are `Option` so a NULL from C is representable.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nnrt_plugin_op {
    /// NUL-terminated op name.
    pub name: *const c_char,
    /// Required eval function.
    pub eval: Option<nnrt_plugin_eval_fn>,
    /// Optional shape function.
    pub infer_shape: Option<nnrt_plugin_shape_fn>,
    /// Passed back to `eval` and `infer_shape`.
    pub op_data: *mut c_void,
}

/// `nnrt_device_buffer`: one layer's bytes in the device's layout.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nnrt_device_buffer {
    /// NUL-terminated layer name.
    pub name: *const c_char,
    /// The bytes (inputs read-only).
    pub data: *mut c_void,
    /// Bytes at `data`.
    pub size: usize,
}

/// `nnrt_device_init_fn`.
pub type nnrt_device_init_fn = unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut *mut c_void, *mut c_char, usize) -> i32;

/// `nnrt_device_run_fn`.
pub type nnrt_device_run_fn = unsafe extern "C" fn(*mut c_void, *const nnrt_device_buffer, usize, *const nnrt_device_buffer, usize, *mut c_char, usize) -> i32;

/// `nnrt_device_free_fn`.
pub type nnrt_device_free_fn = unsafe extern "C" fn(*mut c_void);

/// `nnrt_plugin_device_op` (version 2).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nnrt_plugin_device_op {
    /// NUL-terminated custom op name.
    pub name: *const c_char,
    /// NUL-terminated device name, for messages.
    pub device: *const c_char,
    /// Required per-op init.
    pub init: Option<nnrt_device_init_fn>,
    /// Required run.
    pub run: Option<nnrt_device_run_fn>,
    /// Optional per-op free.
    pub free: Option<nnrt_device_free_fn>,
    /// Passed to `init`.
    pub driver_data: *mut c_void,
}

/// `nnrt_plugin_info`, filled by the plugin (the last two fields exist from version 2 on).
#[repr(C)]
#[derive(Debug)]
pub struct nnrt_plugin_info {
    /// The ABI version the plugin was built with.
    pub abi_version: u32,
    /// NUL-terminated plugin name.
    pub name: *const c_char,
    /// The ops.
    pub ops: *const nnrt_plugin_op,
    /// Number of ops.
    pub nops: usize,
    /// The device ops (version 2).
    pub device_ops: *const nnrt_plugin_device_op,
    /// Number of device ops (version 2).
    pub ndevice_ops: usize,
}

impl Default for nnrt_plugin_info {
    fn default() -> Self {
        nnrt_plugin_info { abi_version: 0, name: std::ptr::null(), ops: std::ptr::null(), nops: 0, device_ops: std::ptr::null(), ndevice_ops: 0 }
    }
}

/// `nnrt_plugin_host`, given by nnrt.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nnrt_plugin_host {
    /// The host's ABI version.
    pub abi_version: u32,
    /// Logs a NUL-terminated message.
    pub log: Option<unsafe extern "C" fn(i32, *const c_char)>,
}

/// `nnrt_plugin_register_fn`.
pub type nnrt_plugin_register_fn = unsafe extern "C" fn(*const nnrt_plugin_host, *mut nnrt_plugin_info) -> u32;

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes the header gives on 64-bit targets (checked against a C compiler by the
    /// nnrt-custom-ops C plugin test).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn layout_matches_the_header() {
        assert_eq!(std::mem::size_of::<nnrt_plugin_tensor>(), 56);
        assert_eq!(std::mem::size_of::<nnrt_plugin_kernel_params>(), 48);
        assert_eq!(std::mem::size_of::<nnrt_plugin_op>(), 32);
        assert_eq!(std::mem::size_of::<nnrt_plugin_info>(), 48);
        assert_eq!(std::mem::offset_of!(nnrt_plugin_info, device_ops), 32, "version 1's fields keep their places");
        assert_eq!(std::mem::size_of::<nnrt_plugin_device_op>(), 48);
        assert_eq!(std::mem::size_of::<nnrt_device_buffer>(), 24);
        assert_eq!(std::mem::size_of::<nnrt_plugin_host>(), 16);
    }
}
