//! The C ABI's backends follow nnfw's cargo features: a library built with
//! `--no-default-features --features cpu` refuses `gpu` at `nnfw_prepare`, naming what the build
//! has, and falls back from `gpu;cpu` to the cpu.

use std::ffi::{c_char, CStr, CString};

use nnfw::*;

/// Loads the in-repo example model, sets `backends` and prepares; the status and, on failure,
/// the last error message.
fn prepare_with(backends: &str) -> (NNFW_STATUS, String) {
    let model = nnrt_tests::repo_root().join("examples/models/tiny_mobilenet.tflite");
    let model = CString::new(model.to_string_lossy().into_owned()).expect("path");
    let backends = CString::new(backends).expect("backends");
    let mut s: *mut nnfw_session = std::ptr::null_mut();
    assert_eq!(nnfw_create_session(&mut s), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_load_model_from_file(s, model.as_ptr()), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_set_available_backends(s, backends.as_ptr()), NNFW_STATUS_NO_ERROR);
    let status = nnfw_prepare(s);
    let mut buf = vec![0 as c_char; 1024];
    let message = match nnfw_get_last_error_message(s, buf.as_mut_ptr(), buf.len()) {
        NNFW_STATUS_NO_ERROR => {
            let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
            CStr::from_bytes_until_nul(&bytes).map(|m| m.to_string_lossy().into_owned()).unwrap_or_default()
        }
        other => format!("nnfw_get_last_error_message: status {other}"),
    };
    assert_eq!(nnfw_close_session(s), NNFW_STATUS_NO_ERROR);
    (status, message)
}

#[test]
fn the_cpu_backend_prepares() {
    let (status, message) = prepare_with("cpu");
    assert_eq!(status, NNFW_STATUS_NO_ERROR, "{message}");
}

#[cfg(not(feature = "gpu"))]
#[test]
fn a_build_without_gpu_says_so() {
    let (status, message) = prepare_with("gpu");
    assert_eq!(status, NNFW_STATUS_ERROR);
    assert!(message.contains("backend 'gpu' is not in this build (built with: cpu)"), "{message}");
    let (status, message) = prepare_with("gpu;cpu");
    assert_eq!(status, NNFW_STATUS_NO_ERROR, "{message}");
}
