//! Hostile sizes and counts through the C ABI: a caller's huge input shape gets
//! `NNFW_STATUS_OUT_OF_MEMORY` (never an abort), a huge thread count an error, and `nnfw_cancel`
//! stops one run and leaves the session usable. Files nnrt cannot load are `NNFW_STATUS_ERROR`
//! with their cause said once.

use std::ffi::{c_char, c_void, CStr, CString};

use nnfw::*;
use nnrt_tests::{Act, BuiltinOperator as Op, ModelBuilder, Options, TensorType};

/// x[-1, 12] -> FULLY_CONNECTED(12 -> 4): a batch the caller sets.
fn dynamic_batch_model() -> CString {
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[1, 12]);
    b.shape_signature(x, &[-1, 12]);
    let w = b.constant_f32("w", &[4, 12], &[0.5; 48]);
    let bias = b.constant_f32("b", &[4], &[0.0; 4]);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 4]);
    b.shape_signature(y, &[-1, 4]);
    b.op(Op::FULLY_CONNECTED, &[x, w, bias], &[y], Options::FullyConnected { act: Act::NONE, keep_num_dims: false });
    b.output(y);
    // One file per call: the tests of this binary run at once.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("nnfw-limits-{}-{k}.tflite", std::process::id()));
    std::fs::write(&path, b.finish()).expect("write model");
    CString::new(path.to_string_lossy().into_owned()).expect("path")
}

fn loaded() -> *mut nnfw_session {
    let model = dynamic_batch_model();
    let mut s: *mut nnfw_session = std::ptr::null_mut();
    assert_eq!(nnfw_create_session(&mut s), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_load_model_from_file(s, model.as_ptr()), NNFW_STATUS_NO_ERROR);
    s
}

fn last_error(s: *mut nnfw_session) -> String {
    let mut buf = vec![0 as c_char; 1024];
    assert_eq!(nnfw_get_last_error_message(s, buf.as_mut_ptr(), buf.len()), NNFW_STATUS_NO_ERROR);
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes).map(|m| m.to_string_lossy().into_owned()).unwrap_or_default()
}

#[test]
fn a_huge_input_shape_is_out_of_memory_not_an_abort() {
    for dims in [[i32::MAX, 12], [100_000_000, 12]] {
        let s = loaded();
        let mut ti = nnfw_tensorinfo { dtype: NNFW_TYPE_TENSOR_FLOAT32, rank: 2, dims: [0; NNFW_MAX_RANK] };
        ti.dims[..2].copy_from_slice(&dims);
        let cfg = (CString::new("MEMORY_LIMIT").unwrap(), CString::new("1G").unwrap());
        assert_eq!(nnfw_set_config(s, cfg.0.as_ptr(), cfg.1.as_ptr()), NNFW_STATUS_NO_ERROR);
        assert_eq!(nnfw_set_input_tensorinfo(s, 0, &ti), NNFW_STATUS_NO_ERROR);
        assert_eq!(nnfw_prepare(s), NNFW_STATUS_OUT_OF_MEMORY, "{dims:?}: {}", last_error(s));
        assert!(last_error(s).contains("memory limit"), "{}", last_error(s));
        assert_eq!(nnfw_close_session(s), NNFW_STATUS_NO_ERROR);
    }
}

#[test]
fn thread_counts_out_of_range_are_refused() {
    let s = loaded();
    let key = CString::new("NUM_THREADS").unwrap();
    for bad in ["4294967296", "-5", "0", "18446744073709551615"] {
        let v = CString::new(bad).unwrap();
        assert_eq!(nnfw_set_config(s, key.as_ptr(), v.as_ptr()), NNFW_STATUS_ERROR, "{bad}");
        assert!(last_error(s).contains("NUM_THREADS"), "{}", last_error(s));
    }
    let v = CString::new("2").unwrap();
    assert_eq!(nnfw_set_config(s, key.as_ptr(), v.as_ptr()), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_close_session(s), NNFW_STATUS_NO_ERROR);
}

#[test]
fn cancel_stops_one_run_and_the_session_goes_on() {
    let mut s: *mut nnfw_session = std::ptr::null_mut();
    assert_eq!(nnfw_create_session(&mut s), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_cancel(s), NNFW_STATUS_INVALID_STATE, "no model yet");
    assert_eq!(nnfw_close_session(s), NNFW_STATUS_NO_ERROR);
    let s = loaded();
    assert_eq!(nnfw_prepare(s), NNFW_STATUS_NO_ERROR);
    let input = [1.0f32; 12];
    let mut output = [0.0f32; 4];
    assert_eq!(nnfw_set_input(s, 0, NNFW_TYPE_TENSOR_FLOAT32, input.as_ptr() as *const c_void, 48), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_set_output(s, 0, NNFW_TYPE_TENSOR_FLOAT32, output.as_mut_ptr() as *mut c_void, 16), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_cancel(s), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_run(s), NNFW_STATUS_ERROR);
    assert!(last_error(s).contains("cancelled"), "{}", last_error(s));
    assert_eq!(nnfw_run(s), NNFW_STATUS_NO_ERROR, "{}", last_error(s));
    assert_eq!(output, [6.0; 4]);
    assert_eq!(nnfw_close_session(s), NNFW_STATUS_NO_ERROR);
}

#[test]
fn files_nnrt_cannot_load_are_errors_that_say_their_cause_once() {
    let dir = std::env::temp_dir().join(format!("nnfw-unloadable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write");
        p.to_string_lossy().into_owned()
    };
    let cases = [
        (dir.join("missing.tflite").to_string_lossy().into_owned(), "No such file or directory"),
        // A format nnrt recognises (bytes 4..8 name it) whose reader finds no graph behind them.
        (write("graph.tosa", b"\0\0\0\0TOSA\0\0\0\0"), "not a valid TOSA model"),
        (write("junk.bin", b"0123456789abcdef"), "unknown model format"),
    ];
    for (path, cause) in cases {
        let mut s: *mut nnfw_session = std::ptr::null_mut();
        assert_eq!(nnfw_create_session(&mut s), NNFW_STATUS_NO_ERROR);
        let c = CString::new(path.clone()).unwrap();
        assert_eq!(nnfw_load_model_from_file(s, c.as_ptr()), NNFW_STATUS_ERROR, "{path}");
        let e = last_error(s);
        assert_eq!(e.matches(cause).count(), 1, "'{cause}' once in: {e}");
        assert_eq!(e.matches(path.as_str()).count(), 1, "the path once in: {e}");
        assert_eq!(nnfw_close_session(s), NNFW_STATUS_NO_ERROR);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// An ExecuTorch program's methods through the C ABI: counted, named, selected, run.
#[test]
fn executorch_methods_are_signatures_of_the_c_abi() {
    let dir = nnrt_tests::repo_root().join("tests/data/pte/two_methods_cnn");
    let path = CString::new(dir.join("program.pte").to_string_lossy().into_owned()).expect("path");
    let mut s: *mut nnfw_session = std::ptr::null_mut();
    assert_eq!(nnfw_create_session(&mut s), NNFW_STATUS_NO_ERROR);
    assert_eq!(nnfw_load_model_from_file(s, path.as_ptr()), NNFW_STATUS_NO_ERROR, "{}", last_error(s));
    let mut n = 0u32;
    assert_eq!(nnfw_signature_count(s, &mut n), NNFW_STATUS_NO_ERROR);
    assert_eq!(n, 2);
    let mut names = Vec::new();
    for i in 0..n {
        let mut buf = vec![0 as c_char; 64];
        assert_eq!(nnfw_signature_name(s, i, buf.as_mut_ptr(), buf.len()), NNFW_STATUS_NO_ERROR);
        names.push(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned());
    }
    assert_eq!(names, ["features", "head"]);
    let mut tiny = [0 as c_char; 3];
    assert_eq!(nnfw_signature_name(s, 0, tiny.as_mut_ptr(), tiny.len()), NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE);
    let bad = CString::new("nope").unwrap();
    assert_eq!(nnfw_select_signature(s, bad.as_ptr()), NNFW_STATUS_ERROR);
    assert!(last_error(s).contains("features, head"), "{}", last_error(s));
    let head = CString::new("head").unwrap();
    assert_eq!(nnfw_select_signature(s, head.as_ptr()), NNFW_STATUS_NO_ERROR, "{}", last_error(s));
    assert_eq!(nnfw_prepare(s), NNFW_STATUS_NO_ERROR, "{}", last_error(s));
    assert_eq!(nnfw_select_signature(s, head.as_ptr()), NNFW_STATUS_INVALID_STATE);
    let x = nnrt_tests::npy_file(&dir.join("input_head_0.npy"));
    let want = nnrt_tests::npy_file(&dir.join("expected_head_0.npy"));
    let mut y = vec![0u8; want.data.len()];
    assert_eq!(nnfw_set_input(s, 0, NNFW_TYPE_TENSOR_FLOAT32, x.data.as_ptr() as *const c_void, x.data.len()), NNFW_STATUS_NO_ERROR, "{}", last_error(s));
    assert_eq!(nnfw_set_output(s, 0, NNFW_TYPE_TENSOR_FLOAT32, y.as_mut_ptr() as *mut c_void, y.len()), NNFW_STATUS_NO_ERROR, "{}", last_error(s));
    assert_eq!(nnfw_run(s), NNFW_STATUS_NO_ERROR, "{}", last_error(s));
    let f = |b: &[u8]| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect::<Vec<f32>>();
    for (g, w) in f(&y).iter().zip(f(&want.data)) {
        // ExecuTorch's outputs, within conform.py's float tolerance.
        assert!((g - w).abs() <= 1e-4 + 1e-4 * w.abs(), "{g} vs {w}");
    }
    assert_eq!(nnfw_close_session(s), NNFW_STATUS_NO_ERROR);
}
