//! The crate's only `unsafe` code: turning the raw pointers a C caller passes into references,
//! slices and strings, and calling a C custom-op kernel. Every function here checks what can be
//! checked (NULL, a NUL within a bound, lengths) and relies, for the rest, on the contract
//! `include/nnfw.h` states: a session pointer comes from `nnfw_create_session` and is not used after
//! `nnfw_close_session`; a pointer and length describe memory the caller owns for as long as the
//! documented call (or, for input/output buffers, the runs) needs it.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void};

use crate::abi::{custom_kernel_registration_info, nnfw_custom_kernel_params, nnfw_tensorinfo};
use crate::session::CSession;

/// Hands a new session to C as an owning pointer.
pub fn session_into_raw(s: CSession) -> *mut CSession {
    Box::into_raw(Box::new(s))
}

/// The session behind a pointer from [`session_into_raw`]; `None` for NULL.
pub fn session_ref<'a>(p: *mut CSession) -> Option<&'a CSession> {
    // SAFETY: a non-NULL session pointer came from `session_into_raw` (a live `Box`) and, by the
    // header's contract, is not closed while a call on it runs; only shared references are made
    // (all mutation goes through the session's mutexes), so concurrent calls cannot alias a `&mut`.
    unsafe { p.as_ref() }
}

/// Takes back ownership of a session for `nnfw_close_session`; `None` for NULL.
pub fn session_from_raw(p: *mut CSession) -> Option<Box<CSession>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` came from `Box::into_raw` in `session_into_raw` and the caller closes it once
    // (the header says the pointer is invalid after `nnfw_close_session`).
    Some(unsafe { Box::from_raw(p) })
}

/// Stores `value` through an out-pointer; `false` (nothing written) for NULL.
pub fn write_out<T>(p: *mut T, value: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: non-NULL, and the caller passes a pointer to a `T` it owns (e.g. `uint32_t *number`);
    // `write_unaligned` makes no alignment assumption.
    unsafe { p.write_unaligned(value) };
    true
}

/// Reads the `nnfw_tensorinfo` a const pointer points to; `None` for NULL.
pub fn read_tensorinfo(p: *const nnfw_tensorinfo) -> Option<nnfw_tensorinfo> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL and, by contract, points to an initialized `nnfw_tensorinfo`; every bit
    // pattern is a valid value of its plain integer fields.
    Some(unsafe { p.read_unaligned() })
}

/// Reads the `custom_kernel_registration_info` a pointer points to; `None` for NULL.
pub fn read_registration(p: *const custom_kernel_registration_info) -> Option<custom_kernel_registration_info> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL and, by contract, points to an initialized registration; its one field is
    // a nullable function pointer (`Option<fn>`), for which NULL is a valid value.
    Some(unsafe { p.read_unaligned() })
}

/// Why a C string argument was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum StrError {
    /// The pointer was NULL.
    Null,
    /// No NUL within the first `max` bytes.
    TooLong(usize),
    /// Not UTF-8.
    NotUtf8,
}

/// The NUL-terminated string at `p`, which must end within `max` bytes (NUL included).
pub fn c_str<'a>(p: *const c_char, max: usize) -> Result<&'a str, StrError> {
    if p.is_null() {
        return Err(StrError::Null);
    }
    let mut len = 0;
    loop {
        if len == max {
            return Err(StrError::TooLong(max));
        }
        // SAFETY: `p` is non-NULL and points to a NUL-terminated string (contract); every byte
        // before its NUL is readable and the scan stops at the first NUL, so `p + len` stays
        // within the string.
        if unsafe { *p.add(len) } == 0 {
            break;
        }
        len += 1;
    }
    // SAFETY: the `len` bytes at `p` were just read one by one and precede the NUL; the string
    // outlives the call that passed it, which is all `'a` is used for.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|_| StrError::NotUtf8)
}

/// Copies `s` and a NUL into `dst` (`cap` bytes); `false` (nothing written) if `dst` is NULL or
/// `s` does not fit.
pub fn copy_c_string(dst: *mut c_char, cap: usize, s: &str) -> bool {
    if dst.is_null() || s.len() >= cap {
        return false;
    }
    // SAFETY: `dst` is non-NULL and the caller owns `cap` bytes there; `s.len() + 1 <= cap`
    // bytes are written, and `s` (Rust memory) cannot overlap them.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), s.len());
        *dst.add(s.len()) = 0;
    }
    true
}

/// An input buffer the caller lent with `nnfw_set_input`: read at each run until replaced.
#[derive(Debug)]
pub struct InBuf {
    ptr: *const u8,
    len: usize,
}

// SAFETY: an `InBuf` is an address and a length that the caller keeps valid until the runs that
// use it (header contract); moving it to the thread of `nnfw_run_async` is what that call is for.
unsafe impl Send for InBuf {}

impl InBuf {
    /// The buffer at `ptr` (`len` bytes); `None` for NULL.
    pub fn new(ptr: *const c_void, len: usize) -> Option<InBuf> {
        (!ptr.is_null()).then_some(InBuf { ptr: ptr.cast(), len })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Its bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: non-NULL (checked in `new`); the caller keeps `len` readable bytes there until
        // the last run that uses the buffer (header contract for `nnfw_set_input`), and runs are
        // when this is called. The slice lives no longer than `&self`, within that run.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// An output buffer the caller lent with `nnfw_set_output`: written after each run.
#[derive(Debug)]
pub struct OutBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: as for `InBuf`.
unsafe impl Send for OutBuf {}

impl OutBuf {
    /// The buffer at `ptr` (`len` bytes); `None` for NULL.
    pub fn new(ptr: *mut c_void, len: usize) -> Option<OutBuf> {
        (!ptr.is_null()).then_some(OutBuf { ptr: ptr.cast(), len })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Copies `src` to the start of the buffer; `false` (nothing written) if it does not fit.
    pub fn write(&self, src: &[u8]) -> bool {
        if src.len() > self.len {
            return false;
        }
        // SAFETY: non-NULL (checked in `new`), the caller keeps `len >= src.len()` writable bytes
        // there until the runs that use it (header contract for `nnfw_set_output`); `src` is
        // memory of the session, never the caller's buffer, so they cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr, src.len()) };
        true
    }
}

/// Calls a custom-op kernel registered with `nnfw_register_custom_op_info`.
pub fn call_custom_eval(
    eval: unsafe extern "C" fn(*mut nnfw_custom_kernel_params, *mut c_char, usize),
    params: &mut nnfw_custom_kernel_params,
    userdata: &mut [u8],
) {
    // SAFETY: `eval` is the C function the caller registered for this op; `params` points to
    // `ninputs`/`noutputs` operands whose `allocation`s are the op's tensors, all alive for the
    // call (see `custom.rs`), and `userdata` is a buffer of `userdata.len()` bytes owned by the
    // caller of this function. The kernel's own memory safety is its author's contract.
    unsafe { eval(params, userdata.as_mut_ptr().cast::<c_char>(), userdata.len()) }
}
