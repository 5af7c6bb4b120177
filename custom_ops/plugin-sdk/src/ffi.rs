//! The plugin side of the C boundary: the SDK's only `unsafe`. nnrt calls
//! `nnrt_plugin_register` (defined by [`crate::export_plugin!`], which calls [`register`]) and
//! then the trampolines below through the function pointers registered. Each turns the raw
//! descriptors into safe views, calls the plugin's closure inside `catch_unwind`, and turns an
//! `Err` or a panic into a non-zero status plus a message in the host's buffer.
//!
//! The pointers' validity is the host's promise under `nnrt_plugin.h`; every `unsafe` block says
//! which part of that promise it relies on, and everything the header lets be NULL is checked.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use crate::abi::*;
use crate::{DType, DeviceBuffer, DeviceBufferMut, DeviceOpDef, DeviceRunFn, OpDef, Plugin, Quant, ShapeInput, Tensor, TensorMut};

/// What a registered plugin keeps for the life of the process: the C strings and op table that
/// `nnrt_plugin_info` points into, and the op definitions `op_data` points to.
struct Exported {
    name: CString,
    _names: Vec<CString>,
    // Boxed so each `OpDef` keeps its address while the vector grows.
    #[allow(clippy::vec_box)]
    _defs: Vec<Box<OpDef>>,
    ops: Vec<nnrt_plugin_op>,
    _device_names: Vec<CString>,
    #[allow(clippy::vec_box)]
    _device_defs: Vec<Box<DeviceOpDef>>,
    device_ops: Vec<nnrt_plugin_device_op>,
}

// SAFETY: the raw pointers in `ops` point into `_names` and `_defs`, which are owned by the same
// value, never mutated after construction and never freed (the value lives in a static). The
// closures behind them are `Send + Sync` by the types of `OpDef`.
unsafe impl Send for Exported {}
// SAFETY: as above: nothing is mutated after construction, so shared access is read-only.
unsafe impl Sync for Exported {}

static EXPORTED: OnceLock<Option<Exported>> = OnceLock::new();
static HOST_LOG: OnceLock<Option<unsafe extern "C" fn(i32, *const c_char)>> = OnceLock::new();

fn build_exported(build: fn() -> Plugin) -> Option<Exported> {
    let plugin = catch_unwind(build).ok()?;
    let mut names = Vec::with_capacity(plugin.ops.len());
    let mut defs = Vec::with_capacity(plugin.ops.len());
    let mut ops = Vec::with_capacity(plugin.ops.len());
    for def in plugin.ops {
        let name = CString::new(def.name.clone()).ok()?;
        let has_shape = def.shape.is_some();
        let def = Box::new(def);
        ops.push(nnrt_plugin_op {
            name: name.as_ptr(),
            eval: Some(eval_trampoline),
            infer_shape: if has_shape { Some(shape_trampoline) } else { None },
            op_data: (&*def as *const OpDef).cast_mut().cast::<c_void>(),
        });
        names.push(name);
        defs.push(def);
    }
    let mut device_names = Vec::with_capacity(2 * plugin.device_ops.len());
    let mut device_defs = Vec::with_capacity(plugin.device_ops.len());
    let mut device_ops = Vec::with_capacity(plugin.device_ops.len());
    for def in plugin.device_ops {
        let name = CString::new(def.name.clone()).ok()?;
        let device = CString::new(def.device.clone()).ok()?;
        let def = Box::new(def);
        device_ops.push(nnrt_plugin_device_op {
            name: name.as_ptr(),
            device: device.as_ptr(),
            init: Some(device_init_trampoline),
            run: Some(device_run_trampoline),
            free: Some(device_free_trampoline),
            driver_data: (&*def as *const DeviceOpDef).cast_mut().cast::<c_void>(),
        });
        device_names.push(name);
        device_names.push(device);
        device_defs.push(def);
    }
    let name = CString::new(plugin.name).ok()?;
    Some(Exported { name, _names: names, _defs: defs, ops, _device_names: device_names, _device_defs: device_defs, device_ops })
}

/// The body of `nnrt_plugin_register`: builds the plugin once per process (nnrt may load the
/// library again for another session; the same table is returned) and fills `info`.
///
/// # Safety
/// `host` is NULL or points to a valid `nnrt_plugin_host`; `info` is NULL or points to a
/// writable `nnrt_plugin_info`.
pub unsafe fn register(host: *const nnrt_plugin_host, info: *mut nnrt_plugin_info, build: fn() -> Plugin) -> u32 {
    // SAFETY: the caller promises `host` is NULL or valid for reads.
    let Some(host) = (unsafe { host.as_ref() }) else { return 0 };
    let version = host.abi_version;
    if !(NNRT_PLUGIN_ABI_VERSION_MIN..=NNRT_PLUGIN_ABI_VERSION).contains(&version) {
        return 0;
    }
    if info.is_null() {
        return 0;
    }
    let _ = HOST_LOG.set(host.log);
    let Some(exported) = EXPORTED.get_or_init(|| build_exported(build)) else { return 0 };
    if version < 2 && exported.ops.is_empty() && !exported.device_ops.is_empty() {
        // A driver has nothing to offer a host without device ops.
        return 0;
    }
    // SAFETY: the caller promises `info` is valid for writes of the host version's struct; the
    // version 1 fields lead both versions' structs at the same offsets (`nnrt_plugin_info`'s
    // `#[repr(C)]` order), so each is written through a pointer to its own field only.
    unsafe {
        std::ptr::addr_of_mut!((*info).abi_version).write(version);
        std::ptr::addr_of_mut!((*info).name).write(exported.name.as_ptr());
        std::ptr::addr_of_mut!((*info).ops).write(exported.ops.as_ptr());
        std::ptr::addr_of_mut!((*info).nops).write(exported.ops.len());
        if version >= 2 {
            std::ptr::addr_of_mut!((*info).device_ops).write(exported.device_ops.as_ptr());
            std::ptr::addr_of_mut!((*info).ndevice_ops).write(exported.device_ops.len());
        }
    }
    version
}

/// Logs through the host's logger, if it gave one.
pub(crate) fn host_log(level: i32, message: &str) {
    let Some(Some(log)) = HOST_LOG.get() else { return };
    let Ok(text) = CString::new(message.replace('\0', " ")) else { return };
    // SAFETY: `log` came from the host's `nnrt_plugin_host`, valid for the life of the process
    // and callable from any thread (nnrt_plugin.h); `text` is NUL-terminated and outlives the call.
    unsafe { log(level, text.as_ptr()) }
}

/// Writes `message` NUL-terminated into the host's buffer, truncated to fit.
fn write_error(error: *mut c_char, error_size: usize, message: &str) {
    if error.is_null() || error_size == 0 {
        return;
    }
    let bytes = message.as_bytes();
    let n = bytes.len().min(error_size - 1);
    // SAFETY: the host gives a buffer of `error_size` writable bytes (nnrt_plugin.h); we write
    // `n + 1 <= error_size` bytes from its start. `bytes` is a separate allocation.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), error.cast::<u8>(), n);
        *error.add(n) = 0;
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".into())
}

/// Type, dims and quantization of a descriptor, checked.
fn describe(t: &nnrt_plugin_tensor, what: &str) -> Result<(DType, Vec<usize>, Option<Quant>), String> {
    let dtype = DType::from_code(t.dtype).ok_or_else(|| format!("{what} has unknown dtype code {}", t.dtype))?;
    let rank = usize::try_from(t.rank).ok().filter(|&r| r <= NNRT_PLUGIN_MAX_RANK).ok_or_else(|| format!("{what} has bad rank {}", t.rank))?;
    let dims = t.dims[..rank]
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("{what} has negative dim {d}")))
        .collect::<Result<Vec<_>, _>>()?;
    let quant = (t.scale != 0.0).then_some(Quant { scale: t.scale, zero_point: t.zero_point });
    Ok((dtype, dims, quant))
}

/// The descriptors `ptr[0..n]`.
///
/// # Safety
/// `ptr` is NULL only when `n` is 0, else valid for reads of `n` descriptors for `'a`.
unsafe fn descriptors<'a>(ptr: *const nnrt_plugin_tensor, n: usize) -> Result<&'a [nnrt_plugin_tensor], String> {
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err("descriptor array is NULL".into());
    }
    // SAFETY: non-NULL and, by the caller's promise, valid for `n` reads during `'a`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// The option bytes of `p`.
///
/// # Safety
/// `p.options` is NULL or valid for reads of `p.options_size` bytes for `'a`.
unsafe fn options<'a>(p: &nnrt_plugin_kernel_params) -> &'a [u8] {
    if p.options.is_null() || p.options_size == 0 {
        return &[];
    }
    // SAFETY: the host promises the options buffer is valid for `options_size` bytes.
    unsafe { std::slice::from_raw_parts(p.options, p.options_size) }
}

/// Runs op `op_data`: the `eval` of every op this SDK exports.
///
/// # Safety
/// Called by the host per nnrt_plugin.h: `op_data` is the pointer registered (an `OpDef` in
/// `EXPORTED`), `params` points to valid descriptors whose `data` ranges are valid for `size`
/// bytes, outputs disjoint from each other and from the inputs.
unsafe extern "C" fn eval_trampoline(op_data: *mut c_void, params: *const nnrt_plugin_kernel_params, error: *mut c_char, error_size: usize) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        // SAFETY: `op_data` is the `OpDef` pointer this module registered; it lives in `EXPORTED` forever.
        let def = unsafe { op_data.cast_const().cast::<OpDef>().as_ref() }.ok_or("op_data is NULL")?;
        // SAFETY: the host passes a valid params struct (or NULL, rejected here).
        let p = unsafe { params.as_ref() }.ok_or("params is NULL")?;
        // SAFETY: the host promises `inputs` holds `ninputs` descriptors.
        let in_desc = unsafe { descriptors(p.inputs, p.ninputs) }?;
        // SAFETY: the host promises `outputs` holds `noutputs` descriptors.
        let out_desc = unsafe { descriptors(p.outputs.cast_const(), p.noutputs) }?;
        let mut ins = Vec::with_capacity(in_desc.len());
        for (i, t) in in_desc.iter().enumerate() {
            let (dtype, dims, quant) = describe(t, &format!("input {i}"))?;
            let bytes: &[u8] = if t.data.is_null() || t.size == 0 {
                &[]
            } else {
                // SAFETY: the host promises `data` is valid for reads of `size` bytes during the
                // call and that no output overlaps it, so no `&mut` aliases this slice.
                unsafe { std::slice::from_raw_parts(t.data.cast_const().cast::<u8>(), t.size) }
            };
            ins.push(Tensor::new(dtype, dims, quant, bytes));
        }
        let mut outs = Vec::with_capacity(out_desc.len());
        for (i, t) in out_desc.iter().enumerate() {
            let (dtype, dims, quant) = describe(t, &format!("output {i}"))?;
            let bytes: &mut [u8] = if t.data.is_null() || t.size == 0 {
                &mut []
            } else {
                // SAFETY: the host promises each output's `data` is valid for writes of `size`
                // bytes and disjoint from every other input and output, so this is the only
                // reference to those bytes during the call.
                unsafe { std::slice::from_raw_parts_mut(t.data.cast::<u8>(), t.size) }
            };
            outs.push(TensorMut::new(dtype, dims, quant, bytes));
        }
        // SAFETY: the host promises the options buffer is valid for the call.
        let opts = unsafe { options(p) };
        (def.eval)(&ins, &mut outs, opts)
    }));
    finish(result, error, error_size)
}

/// Computes output shapes of op `op_data`: the `infer_shape` of ops that have a shape closure.
///
/// # Safety
/// As [`eval_trampoline`], except that input `data` is NULL unless the input is constant, and
/// output descriptors are written (rank, dims) rather than their data.
unsafe extern "C" fn shape_trampoline(op_data: *mut c_void, params: *mut nnrt_plugin_kernel_params, error: *mut c_char, error_size: usize) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        // SAFETY: as in `eval_trampoline`.
        let def = unsafe { op_data.cast_const().cast::<OpDef>().as_ref() }.ok_or("op_data is NULL")?;
        let shape = def.shape.as_ref().ok_or("this op has no shape function")?;
        // SAFETY: the host passes a valid params struct (or NULL, rejected here).
        let p = unsafe { params.as_ref() }.ok_or("params is NULL")?;
        // SAFETY: the host promises `inputs` holds `ninputs` descriptors.
        let in_desc = unsafe { descriptors(p.inputs, p.ninputs) }?;
        let mut ins = Vec::with_capacity(in_desc.len());
        for (i, t) in in_desc.iter().enumerate() {
            let (dtype, dims, _) = describe(t, &format!("input {i}"))?;
            let data = if t.data.is_null() {
                None
            } else {
                // SAFETY: a constant input's bytes, valid for reads of `size` bytes during the call.
                Some(unsafe { std::slice::from_raw_parts(t.data.cast_const().cast::<u8>(), t.size) })
            };
            ins.push(ShapeInput { dtype, dims, data });
        }
        // SAFETY: the host promises the options buffer is valid for the call.
        let opts = unsafe { options(p) };
        let shapes = shape(&ins, opts)?;
        if shapes.len() != p.noutputs {
            return Err(format!("the shape function gave {} shapes for {} outputs", shapes.len(), p.noutputs));
        }
        if p.noutputs > 0 && p.outputs.is_null() {
            return Err("output descriptor array is NULL".into());
        }
        for (k, dims) in shapes.iter().enumerate() {
            if dims.len() > NNRT_PLUGIN_MAX_RANK {
                return Err(format!("output {k}: rank {} is above {NNRT_PLUGIN_MAX_RANK}", dims.len()));
            }
            let mut out = [0i32; NNRT_PLUGIN_MAX_RANK];
            for (o, &d) in out.iter_mut().zip(dims) {
                *o = i32::try_from(d).map_err(|_| format!("output {k}: dim {d} does not fit an int32"))?;
            }
            // SAFETY: `outputs` holds `noutputs` writable descriptors (checked non-NULL above) and
            // `k < noutputs`; the host holds no other reference to them during the call.
            let t = unsafe { &mut *p.outputs.add(k) };
            t.rank = dims.len() as i32;
            t.dims = out;
        }
        Ok(())
    }));
    finish(result, error, error_size)
}

/// A device op's init: the `init` of every device op this SDK exports.
///
/// # Safety
/// Called by the host per nnrt_plugin.h: `driver_data` is the pointer registered (a
/// `DeviceOpDef` in `EXPORTED`), `options` valid for `options_size` bytes (or NULL), `op_state`
/// writable.
unsafe extern "C" fn device_init_trampoline(
    driver_data: *mut c_void,
    options: *const u8,
    options_size: usize,
    op_state: *mut *mut c_void,
    error: *mut c_char,
    error_size: usize,
) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        // SAFETY: `driver_data` is the `DeviceOpDef` this module registered, alive in `EXPORTED`.
        let def = unsafe { driver_data.cast_const().cast::<DeviceOpDef>().as_ref() }.ok_or("driver_data is NULL")?;
        if op_state.is_null() {
            return Err("op_state is NULL".into());
        }
        let opts: &[u8] = if options.is_null() || options_size == 0 {
            &[]
        } else {
            // SAFETY: the host promises `options` is valid for `options_size` bytes during the call.
            unsafe { std::slice::from_raw_parts(options, options_size) }
        };
        let run: DeviceRunFn = (def.init)(opts)?;
        // SAFETY: `op_state` is writable (checked non-NULL); the box is freed by the free trampoline.
        unsafe { *op_state = Box::into_raw(Box::new(run)).cast::<c_void>() };
        Ok(())
    }));
    finish(result, error, error_size)
}

/// The buffers `ptr[0..n]` with their names.
///
/// # Safety
/// `ptr` is NULL only when `n` is 0, else valid for reads of `n` buffers whose names are
/// NUL-terminated, for `'a`.
unsafe fn device_buffers<'a>(ptr: *const nnrt_device_buffer, n: usize) -> Result<Vec<(&'a str, &'a nnrt_device_buffer)>, String> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err("buffer array is NULL".into());
    }
    // SAFETY: non-NULL and valid for `n` reads by the caller's promise.
    let bufs = unsafe { std::slice::from_raw_parts(ptr, n) };
    bufs.iter()
        .enumerate()
        .map(|(i, b)| {
            if b.name.is_null() {
                return Err(format!("buffer {i} has no name"));
            }
            // SAFETY: the host promises each name is NUL-terminated and valid during the call.
            let name = unsafe { std::ffi::CStr::from_ptr(b.name) }.to_str().map_err(|_| format!("buffer {i}'s name is not UTF-8"))?;
            Ok((name, b))
        })
        .collect()
}

/// A device op's run.
///
/// # Safety
/// Called by the host per nnrt_plugin.h: `op_state` is what the init trampoline stored, not yet
/// freed and not run concurrently; buffers valid for their sizes, outputs disjoint.
unsafe extern "C" fn device_run_trampoline(
    op_state: *mut c_void,
    inputs: *const nnrt_device_buffer,
    ninputs: usize,
    outputs: *const nnrt_device_buffer,
    noutputs: usize,
    error: *mut c_char,
    error_size: usize,
) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        // SAFETY: `op_state` is the boxed run the init trampoline made; the host runs one state
        // from one thread at a time, so this is the only reference.
        let run = unsafe { op_state.cast::<DeviceRunFn>().as_mut() }.ok_or("op_state is NULL")?;
        // SAFETY: the host promises `ninputs` valid input buffers.
        let ins = unsafe { device_buffers(inputs, ninputs) }?;
        // SAFETY: the host promises `noutputs` valid output buffers.
        let outs = unsafe { device_buffers(outputs, noutputs) }?;
        let ins: Vec<DeviceBuffer<'_>> = ins
            .iter()
            .map(|(name, b)| DeviceBuffer {
                name,
                bytes: if b.data.is_null() || b.size == 0 {
                    &[]
                } else {
                    // SAFETY: the host promises `data` is readable for `size` bytes and not written
                    // during the call.
                    unsafe { std::slice::from_raw_parts(b.data.cast_const().cast::<u8>(), b.size) }
                },
            })
            .collect();
        let mut outs: Vec<DeviceBufferMut<'_>> = outs
            .iter()
            .map(|(name, b)| DeviceBufferMut {
                name,
                bytes: if b.data.is_null() || b.size == 0 {
                    &mut []
                } else {
                    // SAFETY: the host promises each output is writable for `size` bytes and
                    // disjoint from every other buffer, so this is the only reference.
                    unsafe { std::slice::from_raw_parts_mut(b.data.cast::<u8>(), b.size) }
                },
            })
            .collect();
        run(&ins, &mut outs)
    }));
    finish(result, error, error_size)
}

/// A device op's free: drops the run the init trampoline boxed.
///
/// # Safety
/// `op_state` is NULL or what the init trampoline stored, freed once.
unsafe extern "C" fn device_free_trampoline(op_state: *mut c_void) {
    if op_state.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: made by `Box::into_raw` in the init trampoline and freed only here, once.
        drop(unsafe { Box::from_raw(op_state.cast::<DeviceRunFn>()) });
    }));
}

fn finish(result: std::thread::Result<Result<(), String>>, error: *mut c_char, error_size: usize) -> i32 {
    match result {
        Ok(Ok(())) => 0,
        Ok(Err(message)) => {
            write_error(error, error_size, &message);
            1
        }
        Err(p) => {
            write_error(error, error_size, &format!("the plugin panicked: {}", panic_text(&*p)));
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin() -> Plugin {
        Plugin::new("sdk-test")
            .op_with_shape(
                "Twice",
                |ins, outs, _| {
                    let x = ins[0].f32s()?;
                    for (o, v) in outs[0].f32s_mut()?.iter_mut().zip(x) {
                        *o = 2.0 * v;
                    }
                    Ok(())
                },
                |ins, _| Ok(vec![ins[0].dims.clone()]),
            )
            .op("Fails", |_, _, options| Err(format!("bad options {options:?}")))
            .op("Panics", |_, _, _| panic!("kernel bug"))
            .device_op("Dev", "Test device", |options| {
                if options.is_empty() {
                    return Err("no options".into());
                }
                let add = options[0];
                let mut runs = 0u8;
                Ok(Box::new(move |ins: &[DeviceBuffer<'_>], outs: &mut [DeviceBufferMut<'_>]| {
                    runs += 1;
                    if ins[0].name != "in" || outs[0].name != "out" {
                        return Err(format!("names {} {}", ins[0].name, outs[0].name));
                    }
                    for (o, i) in outs[0].bytes.iter_mut().zip(ins[0].bytes) {
                        *o = i + add + runs;
                    }
                    Ok(())
                }))
            })
    }

    fn tensor(dims: &[i32], data: *mut c_void, size: usize) -> nnrt_plugin_tensor {
        let mut d = [0; NNRT_PLUGIN_MAX_RANK];
        d[..dims.len()].copy_from_slice(dims);
        nnrt_plugin_tensor { dtype: crate::abi::dtype::FLOAT32, rank: dims.len() as i32, dims: d, scale: 0.0, zero_point: 0, data, size }
    }

    /// The whole C round trip, as the host does it: register, then call each op's functions
    /// through the table. Errors and panics come back as statuses with messages.
    #[test]
    fn registered_ops_run_fail_and_catch_panics() {
        let host = nnrt_plugin_host { abi_version: NNRT_PLUGIN_ABI_VERSION, log: None };
        let mut info = nnrt_plugin_info::default();
        // SAFETY: valid host and info structs, as the header requires.
        assert_eq!(unsafe { register(&host, &mut info, plugin) }, NNRT_PLUGIN_ABI_VERSION);
        assert_eq!(info.nops, 3);
        // SAFETY: `register` pointed `ops` at `nops` entries that live for the process.
        let ops = unsafe { std::slice::from_raw_parts(info.ops, info.nops) };
        let mut x = [1.0f32, 2.0, 3.0];
        let mut y = [0.0f32; 3];
        let ins = [tensor(&[3], x.as_mut_ptr().cast(), 12)];
        let mut outs = [tensor(&[3], y.as_mut_ptr().cast(), 12)];
        let opts = [1u8, 2];
        let params = nnrt_plugin_kernel_params { inputs: ins.as_ptr(), ninputs: 1, outputs: outs.as_mut_ptr(), noutputs: 1, options: opts.as_ptr(), options_size: 2 };
        let mut err = [0 as c_char; 64];
        let call = |op: &nnrt_plugin_op, err: &mut [c_char; 64]| {
            // SAFETY: the descriptors point at live, disjoint arrays of the sizes given.
            unsafe { (op.eval.expect("eval"))(op.op_data, &params, err.as_mut_ptr(), err.len()) }
        };
        let text = |err: &[c_char; 64]| {
            // SAFETY: the trampolines always NUL-terminate within the buffer.
            unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) }.to_string_lossy().into_owned()
        };
        assert_eq!(call(&ops[0], &mut err), 0);
        assert_eq!(y, [2.0, 4.0, 6.0]);
        assert_eq!(call(&ops[1], &mut err), 1);
        assert_eq!(text(&err), "bad options [1, 2]");
        assert_eq!(call(&ops[2], &mut err), 2);
        assert!(text(&err).contains("panicked: kernel bug"), "{}", text(&err));

        // The shape function writes rank and dims into the output descriptors.
        let mut shape_outs = [tensor(&[], std::ptr::null_mut(), 0)];
        let ins = [tensor(&[4, 5], std::ptr::null_mut(), 0)];
        let mut sp = nnrt_plugin_kernel_params { inputs: ins.as_ptr(), ninputs: 1, outputs: shape_outs.as_mut_ptr(), noutputs: 1, options: std::ptr::null(), options_size: 0 };
        // SAFETY: as above; input data may be NULL in shape functions.
        let status = unsafe { (ops[0].infer_shape.expect("shape"))(ops[0].op_data, &mut sp, err.as_mut_ptr(), err.len()) };
        assert_eq!(status, 0);
        assert_eq!((shape_outs[0].rank, &shape_outs[0].dims[..2]), (2, &[4, 5][..]));
        assert!(ops[1].infer_shape.is_none());

        // A host of another ABI version is refused.
        let old = nnrt_plugin_host { abi_version: 0, log: None };
        // SAFETY: valid structs.
        assert_eq!(unsafe { register(&old, &mut info, plugin) }, 0);

        // A version 1 host gets the ops but not the device ops (its struct has no such fields).
        let v1 = nnrt_plugin_host { abi_version: 1, log: None };
        let mut info1 = nnrt_plugin_info::default();
        // SAFETY: valid structs (the v2 layout is larger than what a v1 host would pass).
        assert_eq!(unsafe { register(&v1, &mut info1, plugin) }, 1);
        assert_eq!((info1.abi_version, info1.nops, info1.ndevice_ops), (1, 3, 0));
        assert!(info1.device_ops.is_null());
    }

    /// A device op through its C functions: init with options, runs keeping state, errors from
    /// init, free.
    #[test]
    fn device_ops_init_run_and_free() {
        let host = nnrt_plugin_host { abi_version: NNRT_PLUGIN_ABI_VERSION, log: None };
        let mut info = nnrt_plugin_info::default();
        // SAFETY: valid host and info structs.
        assert_eq!(unsafe { register(&host, &mut info, plugin) }, 2);
        assert_eq!(info.ndevice_ops, 1);
        // SAFETY: `register` pointed `device_ops` at `ndevice_ops` entries that live for the process.
        let op = unsafe { &*info.device_ops };
        // SAFETY: NUL-terminated names kept by the plugin.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(op.device) }.to_str().unwrap(), "Test device");
        let mut err = [0 as c_char; 64];
        let mut state: *mut c_void = std::ptr::null_mut();
        let opts = [10u8];
        // SAFETY: live options, state slot and error buffer.
        assert_eq!(unsafe { (op.init.unwrap())(op.driver_data, opts.as_ptr(), 1, &mut state, err.as_mut_ptr(), err.len()) }, 0);
        assert!(!state.is_null());
        let (n_in, n_out) = (c"in", c"out");
        let mut x = [1u8, 2, 3];
        let mut y = [0u8; 3];
        let ins = [nnrt_device_buffer { name: n_in.as_ptr(), data: x.as_mut_ptr().cast(), size: 3 }];
        let outs = [nnrt_device_buffer { name: n_out.as_ptr(), data: y.as_mut_ptr().cast(), size: 3 }];
        for run in 1..=2u8 {
            // SAFETY: `state` from init, buffers live and disjoint.
            assert_eq!(unsafe { (op.run.unwrap())(state, ins.as_ptr(), 1, outs.as_ptr(), 1, err.as_mut_ptr(), err.len()) }, 0);
            assert_eq!(y, [11 + run, 12 + run, 13 + run], "the run keeps its state");
        }
        // SAFETY: `state` from init, freed once.
        unsafe { (op.free.unwrap())(state) };
        let mut none: *mut c_void = std::ptr::null_mut();
        // SAFETY: as above, with no options.
        assert_eq!(unsafe { (op.init.unwrap())(op.driver_data, std::ptr::null(), 0, &mut none, err.as_mut_ptr(), err.len()) }, 1);
        // SAFETY: the trampolines NUL-terminate within the buffer.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) }.to_str().unwrap(), "no options");
        assert!(none.is_null());
    }

    #[test]
    fn long_messages_are_truncated_and_terminated() {
        let mut buf = [1 as c_char; 8];
        write_error(buf.as_mut_ptr(), buf.len(), "a long message");
        assert_eq!(buf[7], 0);
        // SAFETY: NUL-terminated just above.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap(), "a long ");
    }
}
