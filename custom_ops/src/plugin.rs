//! Plugin loading: the crate's only `unsafe`. Opens a shared library with libloading, calls its
//! `nnrt_plugin_register` (see `include/nnrt_plugin.h`), checks what it returns, and wraps each op
//! so the rest of nnrt calls plugin code through safe methods: [`PluginOp::eval`] and
//! [`PluginOp::infer_shape`] build the C descriptors from borrowed tensor views, call the plugin,
//! and turn a non-zero status into an `Err` carrying the plugin's message.
//!
//! What this module trusts: loading a library runs its code, so a plugin is as trusted as the
//! caller that chose to load it (a package's own `custom_op/` libraries load only when the caller
//! allows it). Within that trust, the checks here catch mistakes rather than malice: NULL
//! pointers, ABI version mismatches, missing eval functions, bad shapes. The library stays loaded
//! while any [`PluginOp`] of it is alive (each holds an `Arc` of it).
//!
//! Panics: the plugin side (nnrt-plugin-sdk) catches Rust panics before they reach this
//! boundary; the host's own callback ([`host_log`]) catches panics before returning to C.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use nnrt_core::{DType, TensorMut, TensorRef};
use nnrt_plugin_sdk::abi::{self, nnrt_plugin_tensor, NNRT_PLUGIN_ABI_VERSION, NNRT_PLUGIN_ABI_VERSION_MIN, NNRT_PLUGIN_MAX_RANK};
use thiserror::Error;

use crate::{QuantDesc, ShapeInput};

/// Why a plugin could not be loaded.
#[derive(Debug, Error)]
pub enum PluginError {
    /// The shared library could not be opened.
    #[error("cannot load custom-op plugin {path}: {reason}")]
    Open {
        /// The library's path.
        path: String,
        /// The loader's message.
        reason: String,
    },
    /// The library is not an nnrt plugin.
    #[error("{path} is not an nnrt custom-op plugin: it does not export `nnrt_plugin_register` (see custom_ops/include/nnrt_plugin.h)")]
    NoEntryPoint {
        /// The library's path.
        path: String,
    },
    /// The plugin was built for another ABI version, or refused to load.
    #[error("custom-op plugin {path} speaks plugin ABI version {got}, this nnrt speaks version {expected}: rebuild it against this nnrt's nnrt_plugin.h")]
    Version {
        /// The library's path.
        path: String,
        /// The version the plugin returned (0: it refused to register).
        got: u32,
        /// The host's version.
        expected: u32,
    },
    /// The plugin registered something the ABI does not allow.
    #[error("custom-op plugin {path} is invalid: {reason}")]
    Invalid {
        /// The library's path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A package ships plugins in `custom_op/` and the caller did not allow loading them.
    #[error(
        "the package ships custom-op plugins ({files}) needed for custom op(s) {ops}, but loading code from a package is off by default: \
         if you trust the package, allow it with nnpackage_run --allow-package-plugins (or the session config ALLOW_PACKAGE_PLUGINS=1), \
         or load a trusted build of the plugin with --custom-op-lib PATH (Session::load_custom_op_library)"
    )]
    PackageNotAllowed {
        /// The library files under `custom_op/`.
        files: String,
        /// The custom ops without a kernel.
        ops: String,
    },
    /// A package's plugins cannot be loaded from where the package is.
    #[error("cannot load the package's custom-op plugins ({files}): {reason}")]
    PackageUnsupported {
        /// The library files under `custom_op/`.
        files: String,
        /// Why, and what to do instead.
        reason: String,
    },
}

/// The host side of `nnrt_plugin_host`, valid for the life of the process: the current version,
/// offered first, then version 1 for plugins that refuse it (see nnrt_plugin.h, "Versioning").
static HOST: abi::nnrt_plugin_host = abi::nnrt_plugin_host { abi_version: NNRT_PLUGIN_ABI_VERSION, log: Some(host_log) };
static HOST_V1: abi::nnrt_plugin_host = abi::nnrt_plugin_host { abi_version: NNRT_PLUGIN_ABI_VERSION_MIN, log: Some(host_log) };

/// `nnrt_plugin_host.log`: forwards a plugin's message to the `log` facade.
unsafe extern "C" fn host_log(level: i32, message: *const c_char) {
    // Nothing may unwind back into the plugin's C frames.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if message.is_null() {
            return;
        }
        // SAFETY: the plugin passes a NUL-terminated string valid for the call (nnrt_plugin.h).
        let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
        let level = match level {
            abi::log_level::ERROR => log::Level::Error,
            abi::log_level::WARN => log::Level::Warn,
            abi::log_level::INFO => log::Level::Info,
            _ => log::Level::Debug,
        };
        log::log!(target: "nnrt::plugin", level, "{text}");
    }));
}

/// Ops a plugin may register at most (a sanity bound on `nops`).
const MAX_OPS: usize = 4096;
/// Bytes of the error buffer given to eval and shape functions.
const ERROR_BUFFER: usize = 1024;

/// A loaded plugin library and its ops.
pub struct PluginLibrary {
    path: String,
    name: String,
    ops: Vec<Arc<PluginOp>>,
    device_ops: Vec<Arc<DeviceDriverOp>>,
}

impl std::fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLibrary").field("path", &self.path).field("name", &self.name).field("ops", &self.op_names()).finish()
    }
}

/// One op of a loaded plugin.
pub struct PluginOp {
    name: String,
    /// "plugin 'NAME' (PATH)", for messages.
    origin: String,
    eval: abi::nnrt_plugin_eval_fn,
    shape: Option<abi::nnrt_plugin_shape_fn>,
    op_data: *mut c_void,
    _lib: Arc<libloading::Library>,
}

// SAFETY: `op_data` and the function pointers belong to the plugin, which nnrt_plugin.h requires to
// be callable from any thread at once (no unsynchronized mutable state). The library they live in
// is kept loaded by `_lib` for as long as this value exists.
unsafe impl Send for PluginOp {}
// SAFETY: as above; `PluginOp` itself is never mutated after loading.
unsafe impl Sync for PluginOp {}

impl PluginLibrary {
    /// Opens the shared library at `path`, registers it and checks its op table.
    pub fn load(path: &Path) -> Result<PluginLibrary, PluginError> {
        let shown = path.display().to_string();
        // dlopen searches the system's library paths for a bare file name; a plugin named on the
        // command line means the file here.
        let local;
        let path = if path.components().count() == 1 && path.is_relative() {
            local = Path::new(".").join(path);
            local.as_path()
        } else {
            path
        };
        // SAFETY: opening a library runs its initializers: the caller chose to trust this file
        // (explicit `--custom-op-lib`/`load_custom_op_library`, or an allowed package plugin).
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
            // dlerror's text starts with the path, which the error already names.
            let reason = e.to_string();
            let reason = reason.strip_prefix(&format!("{}: ", path.display())).map(str::to_string).unwrap_or(reason);
            PluginError::Open { path: shown.clone(), reason }
        })?;
        // SAFETY: the symbol's type is the one nnrt_plugin.h declares for `nnrt_plugin_register`.
        let register: abi::nnrt_plugin_register_fn = match unsafe { lib.get::<abi::nnrt_plugin_register_fn>(abi::NNRT_PLUGIN_ENTRY_POINT) } {
            Ok(sym) => *sym,
            Err(_) => return Err(PluginError::NoEntryPoint { path: shown }),
        };
        let mut info = abi::nnrt_plugin_info::default();
        // SAFETY: `register` is the plugin's entry point, alive while `lib` is; `HOST` is a static
        // and `info` a local of the current (largest) layout, both valid for the call as the
        // header requires.
        let mut got = unsafe { register(&HOST, &mut info) };
        if got == 0 {
            // A plugin built for version 1 refuses a version 2 host: offer version 1. It writes
            // only version 1's fields, which lead the struct.
            info = abi::nnrt_plugin_info::default();
            // SAFETY: as above.
            got = unsafe { register(&HOST_V1, &mut info) };
        }
        let known = NNRT_PLUGIN_ABI_VERSION_MIN..=NNRT_PLUGIN_ABI_VERSION;
        if !known.contains(&got) || info.abi_version != got {
            let got = if known.contains(&got) { info.abi_version } else { got };
            return Err(PluginError::Version { path: shown, got, expected: NNRT_PLUGIN_ABI_VERSION });
        }
        let invalid = |reason: String| PluginError::Invalid { path: shown.clone(), reason };
        let name = if info.name.is_null() {
            path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        } else {
            // SAFETY: a non-NULL `info.name` is a NUL-terminated string the plugin keeps alive
            // while loaded (nnrt_plugin.h).
            unsafe { CStr::from_ptr(info.name) }.to_string_lossy().into_owned()
        };
        if info.nops > MAX_OPS {
            return Err(invalid(format!("it registers {} ops (at most {MAX_OPS})", info.nops)));
        }
        if info.nops > 0 && info.ops.is_null() {
            return Err(invalid(format!("it registers {} ops but the op table is NULL", info.nops)));
        }
        let table: &[abi::nnrt_plugin_op] = if info.nops == 0 {
            &[]
        } else {
            // SAFETY: non-NULL (checked) and, per the header, `nops` entries valid while loaded;
            // copied out below before `lib` could go away.
            unsafe { std::slice::from_raw_parts(info.ops, info.nops) }
        };
        let lib = Arc::new(lib);
        let origin = format!("plugin '{name}' ({shown})");
        let mut ops = Vec::with_capacity(table.len());
        for (i, op) in table.iter().enumerate() {
            if op.name.is_null() {
                return Err(invalid(format!("op {i} has no name")));
            }
            // SAFETY: non-NULL (checked) NUL-terminated name kept alive by the plugin.
            let op_name = unsafe { CStr::from_ptr(op.name) }.to_str().map_err(|_| invalid(format!("op {i}'s name is not UTF-8")))?.to_string();
            if op_name.is_empty() {
                return Err(invalid(format!("op {i} has an empty name")));
            }
            let eval = op.eval.ok_or_else(|| invalid(format!("op '{op_name}' has no eval function")))?;
            ops.push(Arc::new(PluginOp {
                name: op_name,
                origin: origin.clone(),
                eval,
                shape: op.infer_shape,
                op_data: op.op_data,
                _lib: lib.clone(),
            }));
        }
        let device_ops = if got >= 2 { device_ops(&info, &lib, &origin).map_err(invalid)? } else { Vec::new() };
        log::info!(
            "loaded custom-op {origin} (ABI version {got}): {}",
            ops.iter().map(|o| o.name.as_str()).chain(device_ops.iter().map(|o| o.name.as_str())).collect::<Vec<_>>().join(", ")
        );
        Ok(PluginLibrary { path: shown, name, ops, device_ops })
    }

    /// The path it was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The name the plugin gave itself.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Names of the ops it provides, in registration order.
    pub fn op_names(&self) -> Vec<&str> {
        self.ops.iter().map(|o| o.name.as_str()).collect()
    }

    pub(crate) fn ops(&self) -> &[Arc<PluginOp>] {
        &self.ops
    }

    /// The device ops (drivers) it provides, in registration order.
    pub fn device_ops(&self) -> &[Arc<DeviceDriverOp>] {
        &self.device_ops
    }
}

/// A NUL-terminated, non-empty UTF-8 string from the plugin, or why not.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string the plugin keeps alive while loaded.
unsafe fn plugin_str(p: *const c_char, what: &str) -> Result<String, String> {
    if p.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: non-NULL (checked) and NUL-terminated by the caller's promise.
    let s = unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| format!("{what} is not UTF-8"))?;
    if s.is_empty() {
        return Err(format!("{what} is empty"));
    }
    Ok(s.to_string())
}

/// The device op table of a version 2 registration, checked and copied out.
fn device_ops(info: &abi::nnrt_plugin_info, lib: &Arc<libloading::Library>, origin: &str) -> Result<Vec<Arc<DeviceDriverOp>>, String> {
    if info.ndevice_ops > MAX_OPS {
        return Err(format!("it registers {} device ops (at most {MAX_OPS})", info.ndevice_ops));
    }
    if info.ndevice_ops == 0 {
        return Ok(Vec::new());
    }
    if info.device_ops.is_null() {
        return Err(format!("it registers {} device ops but the table is NULL", info.ndevice_ops));
    }
    // SAFETY: non-NULL (checked) and, per the header, `ndevice_ops` entries valid while loaded.
    let table = unsafe { std::slice::from_raw_parts(info.device_ops, info.ndevice_ops) };
    let mut out = Vec::with_capacity(table.len());
    for (i, op) in table.iter().enumerate() {
        // SAFETY: the header makes both NUL-terminated strings kept alive by the plugin.
        let name = unsafe { plugin_str(op.name, &format!("device op {i}'s name")) }?;
        // SAFETY: as above.
        let device = unsafe { plugin_str(op.device, &format!("device op '{name}''s device")) }?;
        let init = op.init.ok_or_else(|| format!("device op '{name}' has no init function"))?;
        let run = op.run.ok_or_else(|| format!("device op '{name}' has no run function"))?;
        out.push(Arc::new(DeviceDriverOp {
            name,
            device,
            origin: origin.to_string(),
            init,
            run,
            free: op.free,
            driver_data: op.driver_data,
            _lib: lib.clone(),
        }));
    }
    Ok(out)
}

/// One device op of a loaded driver (plugin ABI version 2): per-op init with the op's options,
/// run with layer buffers, free.
pub struct DeviceDriverOp {
    name: String,
    device: String,
    /// "plugin 'NAME' (PATH)", for messages.
    origin: String,
    init: abi::nnrt_device_init_fn,
    run: abi::nnrt_device_run_fn,
    free: Option<abi::nnrt_device_free_fn>,
    driver_data: *mut c_void,
    _lib: Arc<libloading::Library>,
}

// SAFETY: as for `PluginOp`: the pointers belong to the plugin, whose init may be called from any
// thread (nnrt_plugin.h); the library stays loaded while this value exists.
unsafe impl Send for DeviceDriverOp {}
// SAFETY: as above; never mutated after loading.
unsafe impl Sync for DeviceDriverOp {}

impl DeviceDriverOp {
    /// The custom op name it drives.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device it drives, for messages.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// "plugin 'NAME' (PATH)".
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Calls the driver's init with an op's option bytes; the state is freed when dropped.
    pub fn init(self: &Arc<Self>, options: &[u8]) -> Result<DeviceOpState, String> {
        let mut state: *mut c_void = std::ptr::null_mut();
        let mut err = vec![0u8; ERROR_BUFFER];
        // SAFETY: `init` and `driver_data` come from the driver's registration, its library kept
        // loaded by `_lib`; `options`, `state` and `err` are live for the call, and the driver
        // keeps no pointer to `options` after it returns (nnrt_plugin.h).
        let status = unsafe { (self.init)(self.driver_data, options.as_ptr(), options.len(), &mut state, err.as_mut_ptr().cast(), err.len()) };
        if status != 0 {
            return Err(format!("{} init {}", self.origin, message(&err, status)));
        }
        Ok(DeviceOpState { op: self.clone(), state })
    }
}

/// A device op's per-op state from its driver's init; freed (by the driver) when dropped.
pub struct DeviceOpState {
    op: Arc<DeviceDriverOp>,
    state: *mut c_void,
}

// SAFETY: the state belongs to the driver, which nnrt_plugin.h lets run on any thread as long
// as one state is not run from two threads at once: `run` takes `&mut self`.
unsafe impl Send for DeviceOpState {}

impl DeviceOpState {
    /// Runs one inference: `inputs` and `outputs` are (layer name, bytes) in the program's layer
    /// order; the driver reads the inputs and writes the outputs in the device's layout.
    pub fn run(&mut self, inputs: &[(&CStr, &[u8])], outputs: &mut [(&CStr, &mut [u8])]) -> Result<(), String> {
        let ins: Vec<abi::nnrt_device_buffer> =
            inputs.iter().map(|(n, b)| abi::nnrt_device_buffer { name: n.as_ptr(), data: b.as_ptr().cast_mut().cast(), size: b.len() }).collect();
        let outs: Vec<abi::nnrt_device_buffer> =
            outputs.iter_mut().map(|(n, b)| abi::nnrt_device_buffer { name: n.as_ptr(), data: b.as_mut_ptr().cast(), size: b.len() }).collect();
        let mut err = vec![0u8; ERROR_BUFFER];
        // SAFETY: `run` and `state` come from the driver (state from its init, not yet freed);
        // each descriptor points into a live slice of exactly `size` bytes: inputs borrowed
        // shared (the driver only reads them), outputs borrowed exclusively and disjoint; names
        // are NUL-terminated `CStr`s. All outlive the call and the driver keeps no pointer.
        let status = unsafe { (self.op.run)(self.state, ins.as_ptr(), ins.len(), outs.as_ptr(), outs.len(), err.as_mut_ptr().cast(), err.len()) };
        if status != 0 {
            return Err(format!("{} run {}", self.op.origin, message(&err, status)));
        }
        Ok(())
    }
}

impl Drop for DeviceOpState {
    fn drop(&mut self) {
        if let Some(free) = self.op.free {
            // SAFETY: `state` came from this driver's init and is freed exactly once, here; the
            // library is still loaded (`op` holds it).
            unsafe { free(self.state) }
        }
    }
}

/// A descriptor for one tensor; `data` may be NULL (shape inference).
fn descriptor(dtype: DType, dims: &[usize], q: QuantDesc, data: *mut c_void, size: usize) -> Result<nnrt_plugin_tensor, String> {
    if dims.len() > NNRT_PLUGIN_MAX_RANK {
        return Err(format!("rank {} is above the plugin ABI's limit of {NNRT_PLUGIN_MAX_RANK}", dims.len()));
    }
    let mut d = [0i32; NNRT_PLUGIN_MAX_RANK];
    for (slot, &n) in d.iter_mut().zip(dims) {
        *slot = i32::try_from(n).map_err(|_| format!("dim {n} does not fit an int32"))?;
    }
    let code = match dtype {
        DType::F32 => abi::dtype::FLOAT32,
        DType::F16 => abi::dtype::FLOAT16,
        DType::I8 => abi::dtype::INT8,
        DType::U8 => abi::dtype::UINT8,
        DType::I16 => abi::dtype::INT16,
        DType::I32 => abi::dtype::INT32,
        DType::I64 => abi::dtype::INT64,
        DType::Bool => abi::dtype::BOOL,
        DType::C64 => return Err("complex64 tensors cannot cross the plugin ABI (it has no complex type)".into()),
    };
    Ok(nnrt_plugin_tensor { dtype: code, rank: dims.len() as i32, dims: d, scale: q.scale, zero_point: q.zero_point, data, size })
}

/// The plugin's message from its error buffer (up to the first NUL).
fn message(buf: &[u8], status: i32) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let text = String::from_utf8_lossy(&buf[..end]);
    if text.trim().is_empty() {
        format!("failed with status {status} and no message")
    } else {
        format!("failed with status {status}: {}", text.trim())
    }
}

impl PluginOp {
    /// The op's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the plugin gives a shape function for the op.
    pub fn has_shape_fn(&self) -> bool {
        self.shape.is_some()
    }

    /// Runs the op on `ins` into `outs`. `in_q`/`out_q` give each tensor's quantization.
    pub fn eval(&self, ins: &[TensorRef<'_>], in_q: &[QuantDesc], outs: &mut [TensorMut<'_>], out_q: &[QuantDesc], options: &[u8]) -> Result<(), String> {
        let q = |qs: &[QuantDesc], i: usize| qs.get(i).copied().unwrap_or_default();
        let inputs = ins
            .iter()
            .enumerate()
            // The plugin gets `void *` as in onert; nnrt_plugin.h makes inputs read-only.
            .map(|(i, t)| descriptor(t.dtype, t.dims, q(in_q, i), t.bytes.as_ptr().cast_mut().cast(), t.bytes.len()).map_err(|e| format!("input {i}: {e}")))
            .collect::<Result<Vec<_>, String>>()?;
        let mut outputs = outs
            .iter_mut()
            .enumerate()
            .map(|(i, t)| descriptor(t.dtype, t.dims, q(out_q, i), t.bytes.as_mut_ptr().cast(), t.bytes.len()).map_err(|e| format!("output {i}: {e}")))
            .collect::<Result<Vec<_>, String>>()?;
        let params = abi::nnrt_plugin_kernel_params {
            inputs: inputs.as_ptr(),
            ninputs: inputs.len(),
            outputs: outputs.as_mut_ptr(),
            noutputs: outputs.len(),
            options: options.as_ptr(),
            options_size: options.len(),
        };
        let mut err = vec![0u8; ERROR_BUFFER];
        // SAFETY: `eval` and `op_data` come from the plugin's registration and its library is kept
        // loaded by `_lib`. Every descriptor points into a live borrowed slice of exactly `size`
        // bytes: inputs from `&[u8]` (the plugin must only read them), outputs from `&mut [u8]`
        // that the arena hands out disjoint from each other and from the inputs. `params`,
        // `inputs`, `outputs`, `options` and `err` outlive the call, and the plugin keeps no
        // pointer after returning (nnrt_plugin.h).
        let status = unsafe { (self.eval)(self.op_data, &params, err.as_mut_ptr().cast(), err.len()) };
        if status != 0 {
            return Err(format!("{} {}", self.origin, message(&err, status)));
        }
        Ok(())
    }

    /// Output dims from the plugin's shape function, or `None` when it has none.
    pub fn infer_shape(&self, ins: &[ShapeInput<'_>], outs: &[(DType, QuantDesc)], options: &[u8]) -> Option<Result<Vec<Vec<usize>>, String>> {
        let shape = self.shape?;
        Some((|| {
            let inputs = ins
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let (ptr, len) = t.data.map_or((std::ptr::null_mut(), 0), |d| (d.as_ptr().cast_mut().cast(), d.len()));
                    descriptor(t.dtype, t.dims, t.quant, ptr, len).map_err(|e| format!("input {i}: {e}"))
                })
                .collect::<Result<Vec<_>, String>>()?;
            let mut outputs =
                outs.iter().map(|&(dtype, q)| descriptor(dtype, &[], q, std::ptr::null_mut(), 0)).collect::<Result<Vec<_>, String>>()?;
            let mut params = abi::nnrt_plugin_kernel_params {
                inputs: inputs.as_ptr(),
                ninputs: inputs.len(),
                outputs: outputs.as_mut_ptr(),
                noutputs: outputs.len(),
                options: options.as_ptr(),
                options_size: options.len(),
            };
            let mut err = vec![0u8; ERROR_BUFFER];
            // SAFETY: as in `eval`; input data pointers are NULL or a constant's live bytes, output
            // descriptors carry no data, and the plugin only writes their rank and dims.
            let status = unsafe { shape(self.op_data, &mut params, err.as_mut_ptr().cast(), err.len()) };
            if status != 0 {
                return Err(format!("{}: shape function {}", self.origin, message(&err, status)));
            }
            outputs
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let rank = usize::try_from(t.rank).ok().filter(|&r| r <= NNRT_PLUGIN_MAX_RANK);
                    let rank = rank.ok_or_else(|| format!("{}: shape function gave output {k} rank {}", self.origin, t.rank))?;
                    t.dims[..rank]
                        .iter()
                        .map(|&d| usize::try_from(d).map_err(|_| format!("{}: shape function gave output {k} dim {d}", self.origin)))
                        .collect()
                })
                .collect()
        })())
    }
}
