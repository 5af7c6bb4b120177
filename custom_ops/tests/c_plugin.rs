//! A plugin written in C against `include/nnrt_plugin.h` (tests/c/example_plugin.c), compiled
//! here with the system C compiler (skipped with a message when there is none): the header and
//! the Rust side agree (the C file asserts the struct sizes), its ops run through a session, a
//! failing op comes back as a typed run error naming it, and a plugin of another ABI version is
//! refused.

use std::path::{Path, PathBuf};
use std::process::Command;

use nnrt::{Error, PluginError, RunError, Session};
use nnrt_tests::{ModelBuilder, TempDir, TensorType};

/// Compiles the example plugin into `dir`; `None` (skip) without a C compiler.
fn compile(dir: &Path, version: Option<u32>) -> Option<PathBuf> {
    compile_with(dir, version, &[])
}

fn compile_with(dir: &Path, version: Option<u32>, defines: &[&str]) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join(format!("libc_example_{}_{}.so", version.unwrap_or(0), defines.len()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(&cc);
    cmd.args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-std=c11"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("tests/c/example_plugin.c"))
        .arg("-o")
        .arg(&out);
    if let Some(v) = version {
        cmd.arg(format!("-DPLUGIN_VERSION={v}u"));
    }
    cmd.args(defines.iter().map(|d| format!("-D{d}")));
    match cmd.output() {
        Ok(o) if o.status.success() => Some(out),
        Ok(o) => panic!("{cc} failed to build the example plugin:\n{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            println!("skipped: no C compiler ({cc}: {e})");
            None
        }
    }
}

/// `x [2, 3] -> OP -> y`, with y's shape unknown in the model (`[-1, -1]`).
fn model(dir: &Path, op: &str) -> PathBuf {
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[2, 3]);
    let y = b.tensor("y", TensorType::FLOAT32, &[2, 3]);
    b.shape_signature(y, &[-1, -1]);
    b.custom_op(op, &[x], &[y], &[]);
    b.output(y);
    let p = dir.join(format!("{op}.tflite"));
    std::fs::write(&p, b.finish()).unwrap();
    p
}

fn input() -> Vec<u8> {
    [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn c_plugin_runs_shapes_and_fails_cleanly() {
    let dir = TempDir::new("c-plugin").unwrap();
    let Some(lib) = compile(dir.path(), None) else { return };

    let mut s = Session::load(model(dir.path(), "CAddOne")).unwrap();
    let mut ops = s.load_custom_op_library(&lib).unwrap();
    ops.sort();
    assert_eq!(ops, vec!["CAddOne", "CFail"]);
    s.prepare().unwrap();
    assert_eq!(s.output_info(0).unwrap().dims, vec![2, 3], "the shape function gives y's dims");
    s.set_input(0, &input()).unwrap();
    s.run().unwrap();
    let y: Vec<f32> = s.output(0).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(y, vec![2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);

    // CFail has no shape function, and y's shape is unknown in the model: prepare says so.
    let mut s = Session::load(model(dir.path(), "CFail")).unwrap();
    s.load_custom_op_library(&lib).unwrap();
    assert!(s.prepare().unwrap_err().to_string().contains("unknown dims"));
}

#[test]
fn a_failing_plugin_op_is_a_run_error_naming_it() {
    let dir = TempDir::new("c-plugin-fail").unwrap();
    let Some(lib) = compile(dir.path(), None) else { return };
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[2, 3]);
    let y = b.tensor("y", TensorType::FLOAT32, &[2, 3]);
    b.custom_op("CFail", &[x], &[y], &[]);
    b.output(y);
    let p = dir.path().join("fail.tflite");
    std::fs::write(&p, b.finish()).unwrap();

    let mut s = Session::load(&p).unwrap();
    s.load_custom_op_library(&lib).unwrap();
    s.prepare().unwrap();
    s.set_input(0, &input()).unwrap();
    match s.run() {
        Err(Error::Run(RunError::Kernel { kind, reason, .. })) => {
            assert_eq!(kind, "CFail");
            assert!(reason.contains("status 7") && reason.contains("deliberate failure (op_data says hello)"), "{reason}");
            assert!(reason.contains("c-example"), "the error names the plugin: {reason}");
        }
        other => panic!("expected a run error naming CFail, got {other:?}"),
    }
}

#[test]
fn a_plugin_of_another_abi_version_is_refused() {
    let dir = TempDir::new("c-plugin-version").unwrap();
    let Some(lib) = compile(dir.path(), Some(99)) else { return };
    let mut s = Session::load(model(dir.path(), "CAddOne")).unwrap();
    match s.load_custom_op_library(&lib) {
        Err(Error::Plugin(e @ PluginError::Version { got: 99, expected: 2, .. })) => assert!(e.to_string().contains("rebuild"), "{e}"),
        other => panic!("expected a version error, got {other:?}"),
    }
    // Nothing was registered: prepare still names the missing op.
    assert!(s.prepare().unwrap_err().to_string().contains("CAddOne"));
}

/// A plugin built against version 1 of the header (it accepts only a version 1 host and fills
/// only version 1's fields) still loads: nnrt offers version 2, then version 1.
#[test]
fn a_version_1_plugin_keeps_loading() {
    let dir = TempDir::new("c-plugin-v1").unwrap();
    let Some(lib) = compile_with(dir.path(), Some(1), &["HOST_VERSION=1u"]) else { return };
    let mut s = Session::load(model(dir.path(), "CAddOne")).unwrap();
    let mut ops = s.load_custom_op_library(&lib).unwrap();
    ops.sort();
    assert_eq!(ops, vec!["CAddOne", "CFail"]);
    s.prepare().unwrap();
    s.set_input(0, &input()).unwrap();
    s.run().unwrap();
    let y: Vec<f32> = s.output(0).unwrap().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    assert_eq!(y, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
}
