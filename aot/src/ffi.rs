//! The checks and conversions behind an artifact's generated C interface. The generated
//! `extern "C"` functions are one-line calls of these, so every artifact checks its arguments the
//! same way, as `nnfw.h` does: a NULL where a pointer is required is `UNEXPECTED_NULL`, a call in
//! the wrong state `INVALID_STATE`, a wrong size `ERROR`, and every failure leaves a message
//! for the artifact's `_last_error()`. No panic crosses the boundary.

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::{Artifact, Error};

/// Status codes, with `NNFW_STATUS`'s values.
pub type Status = i32;
/// Success.
pub const OK: Status = 0;
/// A failure; the message says what.
pub const ERROR: Status = 1;
/// A required pointer was NULL.
pub const UNEXPECTED_NULL: Status = 2;
/// The call is not allowed in the artifact's state (an output before any run).
pub const INVALID_STATE: Status = 3;
/// An output buffer is smaller than the output.
pub const INSUFFICIENT_OUTPUT_SIZE: Status = 5;

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

fn fail(status: Status, message: String) -> Status {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
    status
}

fn guarded(call: &str, body: impl FnOnce() -> Status) -> Status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(s) => s,
        Err(p) => {
            let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default();
            fail(ERROR, format!("{call}: internal error (a panic was caught): {what}"))
        }
    }
}

fn status_of(call: &str, r: Result<(), Error>) -> Status {
    match r {
        Ok(()) => OK,
        Err(e) => fail(ERROR, format!("{call}: {e}")),
    }
}

/// The message of the last failing call on this thread (empty when none failed).
pub fn last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// `NAME_create`: builds the artifact with `make` from the parameters file at `path` and stores
/// it in `*out` (NULL on failure).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or points to writable storage for a
/// pointer.
pub unsafe fn create(call: &str, path: *const c_char, out: *mut *mut Artifact, make: fn(&str) -> Result<Artifact, Error>) -> Status {
    guarded(call, || {
        if out.is_null() {
            return fail(UNEXPECTED_NULL, format!("{call}: the output pointer is NULL"));
        }
        // SAFETY: checked non-NULL; the caller gives writable storage.
        unsafe { *out = std::ptr::null_mut() };
        if path.is_null() {
            return fail(UNEXPECTED_NULL, format!("{call}: the parameters path is NULL"));
        }
        // SAFETY: the caller gives a NUL-terminated string.
        let Ok(p) = unsafe { CStr::from_ptr(path) }.to_str() else {
            return fail(ERROR, format!("{call}: the parameters path is not UTF-8"));
        };
        match make(p) {
            Ok(a) => {
                // SAFETY: as above.
                unsafe { *out = Box::into_raw(Box::new(a)) };
                OK
            }
            Err(e) => fail(ERROR, format!("{call}: {e}")),
        }
    })
}

/// # Safety
/// `a` is NULL or a pointer from `create` not yet destroyed, used by one thread at a time.
unsafe fn artifact<'a>(call: &str, a: *mut Artifact) -> Result<&'a mut Artifact, Status> {
    if a.is_null() {
        return Err(fail(UNEXPECTED_NULL, format!("{call}: the artifact is NULL")));
    }
    // SAFETY: per the contract above.
    Ok(unsafe { &mut *a })
}

/// `NAME_set_input` / `NAME_set_<input>`: copies `bytes` bytes at `data` into input `index`.
///
/// # Safety
/// `a` as for [`create`]'s result; `data` is NULL or points to `bytes` readable bytes.
pub unsafe fn set_input(call: &str, a: *mut Artifact, index: u32, data: *const c_void, bytes: usize) -> Status {
    guarded(call, || {
        // SAFETY: per this function's contract.
        let a = match unsafe { artifact(call, a) } {
            Ok(a) => a,
            Err(s) => return s,
        };
        if data.is_null() {
            return fail(UNEXPECTED_NULL, format!("{call}: the input buffer is NULL"));
        }
        // SAFETY: the caller gives `bytes` readable bytes at `data`.
        let src = unsafe { std::slice::from_raw_parts(data as *const u8, bytes) };
        status_of(call, a.set_input(index as usize, src))
    })
}

/// `NAME_run`.
///
/// # Safety
/// `a` as for [`create`]'s result.
pub unsafe fn run(call: &str, a: *mut Artifact) -> Status {
    guarded(call, || {
        // SAFETY: per this function's contract.
        match unsafe { artifact(call, a) } {
            Ok(a) => status_of(call, a.run()),
            Err(s) => s,
        }
    })
}

/// `NAME_get_output` / `NAME_get_<output>`: copies output `index` into `data` (`bytes` bytes of
/// room, at least the output's size).
///
/// # Safety
/// `a` as for [`create`]'s result; `data` is NULL or points to `bytes` writable bytes.
pub unsafe fn get_output(call: &str, a: *mut Artifact, index: u32, data: *mut c_void, bytes: usize) -> Status {
    guarded(call, || {
        // SAFETY: per this function's contract.
        let a = match unsafe { artifact(call, a) } {
            Ok(a) => a,
            Err(s) => return s,
        };
        if data.is_null() {
            return fail(UNEXPECTED_NULL, format!("{call}: the output buffer is NULL"));
        }
        if !a.has_run() {
            return fail(INVALID_STATE, format!("{call}: no output yet: call run first"));
        }
        let src = match a.output(index as usize) {
            Ok(s) => s,
            Err(e) => return fail(ERROR, format!("{call}: {e}")),
        };
        if bytes < src.len() {
            return fail(INSUFFICIENT_OUTPUT_SIZE, format!("{call}: output {index} is {} bytes, the buffer holds {bytes}", src.len()));
        }
        // SAFETY: the caller gives `bytes` ≥ `src.len()` writable bytes at `data`, not
        // overlapping the artifact's arena.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), data as *mut u8, src.len()) };
        OK
    })
}

/// `NAME_destroy`: frees an artifact from `create` (NULL is allowed and does nothing).
///
/// # Safety
/// `a` is NULL or a pointer from `create` not yet destroyed.
pub unsafe fn destroy(a: *mut Artifact) {
    if !a.is_null() {
        // SAFETY: per this function's contract, `a` came from `Box::into_raw` in `create`.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(a) })));
    }
}

/// `NAME_packed_blocks`: how many weight blocks packed at compile time were used as they are
/// (`*mapped`) out of those the artifact has (`*total`); fewer on a CPU with another instruction
/// set, whose blocks were packed at create.
///
/// # Safety
/// `a` as for [`create`]'s result; `mapped` and `total` are NULL or writable.
pub unsafe fn packed_blocks(call: &str, a: *mut Artifact, mapped: *mut u32, total: *mut u32) -> Status {
    guarded(call, || {
        // SAFETY: per this function's contract.
        let a = match unsafe { artifact(call, a) } {
            Ok(a) => a,
            Err(s) => return s,
        };
        if mapped.is_null() || total.is_null() {
            return fail(UNEXPECTED_NULL, format!("{call}: an output pointer is NULL"));
        }
        let (m, t) = a.prepacked();
        // SAFETY: checked non-NULL; the caller gives writable storage.
        unsafe {
            *mapped = m as u32;
            *total = t as u32;
        }
        OK
    })
}
