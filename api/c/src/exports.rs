//! The `extern "C"` entry points of `include/nnfw.h`, `nnfw_experimental.h` and `nnfw_internal.h`.
//!
//! Each one: checks its session pointer (UNEXPECTED_NULL), runs its body under `catch_unwind` (a
//! panic becomes NNFW_STATUS_ERROR and never crosses into C), checks the session state and its
//! other pointers in the order onert does, and records any failure as the session's last error.
//! Raw pointers are only ever handed to the checked helpers of `crate::ffi`; this module holds
//! no `unsafe` block. (`unsafe_code` is allowed here for `#[unsafe(no_mangle)]` alone.)

#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

use crate::abi::*;
use crate::custom;
use crate::error::ApiError;
use crate::ffi::{self, InBuf, OutBuf, StrError};
use crate::session::{CSession, Phase, LOADED, RUNNABLE};

/// What C calls `nnfw_session`.
pub type nnfw_session = CSession;

/// Runs `body` on the session behind `session`, turning errors and panics into a status.
fn with_session(session: *mut nnfw_session, call: &str, body: impl FnOnce(&CSession) -> Result<(), ApiError>) -> NNFW_STATUS {
    let Some(s) = ffi::session_ref(session) else { return NNFW_STATUS_UNEXPECTED_NULL };
    match nnrt::catch_quietly(|| body(s)) {
        Ok(Ok(())) => NNFW_STATUS_NO_ERROR,
        Ok(Err(e)) => s.fail(e),
        Err(p) => s.fail(ApiError::error(format!("{call}: internal error (please report): {}", crate::panic_message(p.as_ref())))),
    }
}

/// Runs `body` where there is no session to keep a message in.
fn guarded(body: impl FnOnce() -> NNFW_STATUS) -> NNFW_STATUS {
    nnrt::catch_quietly(body).unwrap_or(NNFW_STATUS_ERROR)
}

/// A string argument of `call`, or the error onert gives for it.
fn arg_str<'a>(call: &str, what: &str, p: *const c_char, max: usize) -> Result<&'a str, ApiError> {
    ffi::c_str(p, max).map_err(|e| match e {
        StrError::Null => ApiError::null(call, what),
        StrError::TooLong(n) => ApiError::error(format!("{call}: {what} is longer than {} bytes", n - 1)),
        StrError::NotUtf8 => ApiError::error(format!("{call}: {what} is not UTF-8")),
    })
}

fn out<T>(call: &str, what: &str, p: *mut T, value: T) -> Result<(), ApiError> {
    if ffi::write_out(p, value) {
        Ok(())
    } else {
        Err(ApiError::null(call, what))
    }
}

/// Creates a session in state INITIALIZED (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_create_session(session: *mut *mut nnfw_session) -> NNFW_STATUS {
    guarded(|| {
        if session.is_null() {
            return NNFW_STATUS_UNEXPECTED_NULL;
        }
        let s = ffi::session_into_raw(CSession::default());
        ffi::write_out(session, s);
        NNFW_STATUS_NO_ERROR
    })
}

/// Closes a session, waiting for a run in flight; NULL is ignored (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_close_session(session: *mut nnfw_session) -> NNFW_STATUS {
    // NULL is accepted, as onert's `delete session` does.
    guarded(|| {
        drop(ffi::session_from_raw(session));
        NNFW_STATUS_NO_ERROR
    })
}

/// Copies the session's last error message (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_get_last_error_message(session: *mut nnfw_session, buffer: *mut c_char, length: usize) -> NNFW_STATUS {
    guarded(|| {
        let Some(s) = ffi::session_ref(session) else { return NNFW_STATUS_UNEXPECTED_NULL };
        if buffer.is_null() {
            return NNFW_STATUS_UNEXPECTED_NULL;
        }
        // Not recorded as the last error: reading the message must not replace it.
        if ffi::copy_c_string(buffer, length, &s.last_error()) {
            NNFW_STATUS_NO_ERROR
        } else {
            NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE
        }
    })
}

/// Loads an nnpackage folder or zip, or a `.tflite` / `.circle` file (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_load_model_from_file(session: *mut nnfw_session, path: *const c_char) -> NNFW_STATUS {
    const CALL: &str = "nnfw_load_model_from_file";
    with_session(session, CALL, |s| {
        s.require(CALL, &[Phase::Initialized], "a session holds one model; create another session")?;
        s.load(arg_str(CALL, "path", path, MAX_PATH_LENGTH)?)
    })
}

/// Deprecated: always NNFW_STATUS_DEPRECATED_API (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_apply_tensorinfo(session: *mut nnfw_session, _index: u32, _tensor_info: nnfw_tensorinfo) -> NNFW_STATUS {
    // As onert: deprecated whatever the arguments; the message goes to the session if there is one.
    let e = ApiError::deprecated("nnfw_apply_tensorinfo", "nnfw_set_input_tensorinfo");
    ffi::session_ref(session).map_or(e.status, |s| s.fail(e))
}

/// Sets an input's shape, before or after prepare (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_input_tensorinfo(session: *mut nnfw_session, index: u32, tensor_info: *const nnfw_tensorinfo) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_input_tensorinfo";
    with_session(session, CALL, |s| {
        s.require(CALL, &[Phase::ModelLoaded, Phase::Prepared, Phase::FinishedRun], "load a model first; not while an asynchronous run is in flight")?;
        let ti = ffi::read_tensorinfo(tensor_info).ok_or_else(|| ApiError::null(CALL, "tensor_info"))?;
        if ti.rank < 0 || ti.rank as usize > NNFW_MAX_RANK {
            return Err(ApiError::error(format!("{CALL}: rank {} is outside 0..={NNFW_MAX_RANK}", ti.rank)));
        }
        let dims = &ti.dims[..ti.rank as usize];
        if let Some(d) = dims.iter().find(|&&d| d <= 0) {
            return Err(ApiError::error(format!("{CALL}: dimension {d} in {dims:?} is not positive")));
        }
        let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        s.set_input_shape(index, &dims)
    })
}

/// Prepares the loaded model (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_prepare(session: *mut nnfw_session) -> NNFW_STATUS {
    with_session(session, "nnfw_prepare", |s| s.prepare())
}

/// Runs on the buffers set and writes the outputs (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_run(session: *mut nnfw_session) -> NNFW_STATUS {
    with_session(session, "nnfw_run", |s| s.run())
}

/// Starts a run on the session's own thread (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_run_async(session: *mut nnfw_session) -> NNFW_STATUS {
    with_session(session, "nnfw_run_async", |s| s.run_async())
}

/// Waits for the run started by `nnfw_run_async` (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_await(session: *mut nnfw_session) -> NNFW_STATUS {
    with_session(session, "nnfw_await", |s| s.await_run())
}

/// How many named entry points the model has (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_signature_count(session: *mut nnfw_session, count: *mut u32) -> NNFW_STATUS {
    const CALL: &str = "nnfw_signature_count";
    with_session(session, CALL, |s| {
        if count.is_null() {
            return Err(ApiError::null(CALL, "count"));
        }
        out(CALL, "count", count, s.signature_count(CALL)?)
    })
}

/// Copies the name of entry point `index` into `buffer` (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_signature_name(session: *mut nnfw_session, index: u32, buffer: *mut c_char, length: usize) -> NNFW_STATUS {
    const CALL: &str = "nnfw_signature_name";
    with_session(session, CALL, |s| {
        if buffer.is_null() {
            return Err(ApiError::null(CALL, "buffer"));
        }
        let name = s.signature_name(CALL, index)?;
        if ffi::copy_c_string(buffer, length, &name) {
            Ok(())
        } else {
            Err(ApiError::insufficient(format!("{CALL}: the name '{name}' needs {} bytes, the buffer has {length}", name.len() + 1)))
        }
    })
}

/// Runs a named entry point instead of the first subgraph (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_select_signature(session: *mut nnfw_session, name: *const c_char) -> NNFW_STATUS {
    const CALL: &str = "nnfw_select_signature";
    with_session(session, CALL, |s| s.select_signature(arg_str(CALL, "name", name, MAX_TENSOR_NAME_LENGTH)?))
}

/// Stops the session's run in progress from another thread (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_cancel(session: *mut nnfw_session) -> NNFW_STATUS {
    with_session(session, "nnfw_cancel", |s| s.cancel())
}

/// Lends an input buffer, read at each run (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_input(session: *mut nnfw_session, index: u32, _type: NNFW_TYPE, buffer: *const c_void, length: usize) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_input";
    with_session(session, CALL, |s| {
        s.require(CALL, RUNNABLE, "set buffers after nnfw_prepare (and not while an asynchronous run is in flight)")?;
        let buf = InBuf::new(buffer, length);
        if buf.is_none() && length != 0 {
            return Err(ApiError::error(format!("{CALL}: buffer is NULL but length is {length} (NULL with length 0 unsets the input)")));
        }
        s.set_input(index, buf)
    })
}

/// Lends an output buffer, written after each run (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_output(session: *mut nnfw_session, index: u32, _type: NNFW_TYPE, buffer: *mut c_void, length: usize) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_output";
    with_session(session, CALL, |s| {
        s.require(CALL, RUNNABLE, "set buffers after nnfw_prepare (and not while an asynchronous run is in flight)")?;
        let buf = OutBuf::new(buffer, length);
        if buf.is_none() && length != 0 {
            return Err(ApiError::error(format!("{CALL}: buffer is NULL but length is {length} (NULL with length 0 unsets the output)")));
        }
        s.set_output(index, buf)
    })
}

/// Number of model inputs (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_input_size(session: *mut nnfw_session, number: *mut u32) -> NNFW_STATUS {
    const CALL: &str = "nnfw_input_size";
    with_session(session, CALL, |s| {
        s.require(CALL, LOADED, "load a model first")?;
        if number.is_null() {
            return Err(ApiError::null(CALL, "number"));
        }
        out(CALL, "number", number, s.io_count(CALL, true)?)
    })
}

/// Number of model outputs (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_output_size(session: *mut nnfw_session, number: *mut u32) -> NNFW_STATUS {
    const CALL: &str = "nnfw_output_size";
    with_session(session, CALL, |s| {
        s.require(CALL, LOADED, "load a model first")?;
        if number.is_null() {
            return Err(ApiError::null(CALL, "number"));
        }
        out(CALL, "number", number, s.io_count(CALL, false)?)
    })
}

/// Sets an input buffer's layout (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_input_layout(session: *mut nnfw_session, index: u32, layout: NNFW_LAYOUT) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_input_layout";
    with_session(session, CALL, |s| s.set_layout(CALL, true, index, layout))
}

/// Sets an output buffer's layout (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_output_layout(session: *mut nnfw_session, index: u32, layout: NNFW_LAYOUT) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_output_layout";
    with_session(session, CALL, |s| s.set_layout(CALL, false, index, layout))
}

/// Sets an input buffer's type: its own, or float32 for a quantized input (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_input_type(session: *mut nnfw_session, index: u32, ty: NNFW_TYPE) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_input_type";
    with_session(session, CALL, |s| s.set_type(CALL, true, index, ty))
}

/// Sets an output buffer's type: its own, or float32 for a quantized output (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_output_type(session: *mut nnfw_session, index: u32, ty: NNFW_TYPE) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_output_type";
    with_session(session, CALL, |s| s.set_type(CALL, false, index, ty))
}

/// Type and shape of an input (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_input_tensorinfo(session: *mut nnfw_session, index: u32, tensor_info: *mut nnfw_tensorinfo) -> NNFW_STATUS {
    const CALL: &str = "nnfw_input_tensorinfo";
    with_session(session, CALL, |s| {
        s.require(CALL, LOADED, "load a model first")?;
        if tensor_info.is_null() {
            return Err(ApiError::null(CALL, "tensor_info"));
        }
        out(CALL, "tensor_info", tensor_info, s.tensorinfo(CALL, true, index)?)
    })
}

/// Type and shape of an output (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_output_tensorinfo(session: *mut nnfw_session, index: u32, tensor_info: *mut nnfw_tensorinfo) -> NNFW_STATUS {
    const CALL: &str = "nnfw_output_tensorinfo";
    with_session(session, CALL, |s| {
        s.require(CALL, LOADED, "load a model first")?;
        if tensor_info.is_null() {
            return Err(ApiError::null(CALL, "tensor_info"));
        }
        out(CALL, "tensor_info", tensor_info, s.tensorinfo(CALL, false, index)?)
    })
}

/// Sets the backends, `;`-separated, in order of preference (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_available_backends(session: *mut nnfw_session, backends: *const c_char) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_available_backends";
    with_session(session, CALL, |s| {
        s.require(CALL, &[Phase::ModelLoaded], "configure after loading and before nnfw_prepare")?;
        s.set_backends(arg_str(CALL, "backends", backends, MAX_BACKEND_NAME_LENGTH)?)
    })
}

/// Deprecated: always NNFW_STATUS_DEPRECATED_API (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_op_backend(session: *mut nnfw_session, _op: *const c_char, _backend: *const c_char) -> NNFW_STATUS {
    let e = ApiError::deprecated("nnfw_set_op_backend", "nnfw_set_config(session, \"OP_BACKEND_<OpName>\", backend)");
    ffi::session_ref(session).map_or(e.status, |s| s.fail(e))
}

/// The runtime version, 0xMMmmmmPP (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_query_info_u32(_session: *mut nnfw_session, id: NNFW_INFO_ID, val: *mut u32) -> NNFW_STATUS {
    // As onert: the session may be NULL, and a NULL `val` or an unknown id is an ERROR.
    guarded(|| match id {
        NNFW_INFO_ID_VERSION if ffi::write_out(val, NNFW_VERSION) => NNFW_STATUS_NO_ERROR,
        _ => NNFW_STATUS_ERROR,
    })
}

/// Records the workspace folder (`nnfw.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_workspace(session: *mut nnfw_session, dir: *const c_char) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_workspace";
    with_session(session, CALL, |s| s.set_workspace(arg_str(CALL, "dir", dir, MAX_PATH_LENGTH)?))
}

/// Registers a C kernel for a custom op (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_register_custom_op_info(session: *mut nnfw_session, id: *const c_char, info: *mut custom_kernel_registration_info) -> NNFW_STATUS {
    const CALL: &str = "nnfw_register_custom_op_info";
    with_session(session, CALL, |s| {
        let name = arg_str(CALL, "id", id, MAX_CONFIG_LENGTH)?;
        let info = ffi::read_registration(info).ok_or_else(|| ApiError::null(CALL, "info"))?;
        let eval = info.eval_function.ok_or_else(|| ApiError::null(CALL, "info->eval_function"))?;
        s.register_custom_op(name, custom::adapter(eval));
        Ok(())
    })
}

/// Index of the input with a given name (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_input_tensorindex(session: *mut nnfw_session, tensorname: *const c_char, index: *mut u32) -> NNFW_STATUS {
    tensorindex(session, "nnfw_input_tensorindex", true, tensorname, index)
}

/// Index of the output with a given name (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_output_tensorindex(session: *mut nnfw_session, tensorname: *const c_char, index: *mut u32) -> NNFW_STATUS {
    tensorindex(session, "nnfw_output_tensorindex", false, tensorname, index)
}

fn tensorindex(session: *mut nnfw_session, call: &'static str, input: bool, tensorname: *const c_char, index: *mut u32) -> NNFW_STATUS {
    with_session(session, call, |s| {
        if index.is_null() {
            return Err(ApiError::null(call, "index"));
        }
        let name = arg_str(call, "tensorname", tensorname, MAX_TENSOR_NAME_LENGTH)?;
        out(call, "index", index, s.tensorindex(call, input, name)?)
    })
}

/// Sets backends by op index, as OP_BACKEND_MAP (`nnfw_experimental.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_backends_per_operation(session: *mut nnfw_session, backend_settings: *const c_char) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_backends_per_operation";
    with_session(session, CALL, |s| {
        // As onert: a NULL string is an ERROR, checked before the state.
        let settings = arg_str(CALL, "backend_settings", backend_settings, MAX_CONFIG_LENGTH)
            .map_err(|e| ApiError::error(e.message))?;
        s.set_backends_per_operation(settings)
    })
}

/// Sets a configuration key (`nnfw_internal.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_set_config(session: *mut nnfw_session, key: *const c_char, value: *const c_char) -> NNFW_STATUS {
    const CALL: &str = "nnfw_set_config";
    with_session(session, CALL, |s| {
        s.require(CALL, &[Phase::ModelLoaded], "configure after loading and before nnfw_prepare")?;
        let key = arg_str(CALL, "key", key, MAX_CONFIG_LENGTH)?;
        let value = arg_str(CALL, "value", value, MAX_CONFIG_LENGTH)?;
        s.set_config(key, value)
    })
}

/// Reads a configuration key (`nnfw_internal.h`).
#[unsafe(no_mangle)]
pub extern "C" fn nnfw_get_config(session: *mut nnfw_session, key: *const c_char, value: *mut c_char, value_size: usize) -> NNFW_STATUS {
    const CALL: &str = "nnfw_get_config";
    with_session(session, CALL, |s| {
        s.require(CALL, &[Phase::ModelLoaded], "read configuration after loading and before nnfw_prepare")?;
        let key = arg_str(CALL, "key", key, MAX_CONFIG_LENGTH)?;
        if value.is_null() {
            return Err(ApiError::null(CALL, "value"));
        }
        match s.get_config(key)? {
            None => Ok(()),
            Some(v) if ffi::copy_c_string(value, value_size, &v) => Ok(()),
            Some(v) => Err(ApiError::error(format!("{CALL}: the value of {key} needs {} bytes but value_size is {value_size}", v.len() + 1))),
        }
    })
}
