//! Ahead-of-time artifacts (`nnrt-compile`): each model is compiled, its generated crate built as
//! a static library with cargo, linked with its generated C example by the C compiler, run on
//! real inputs, and its outputs compared byte for byte with nnrt's runtime (`Session`) on the same
//! model, threads and inputs, with every weight block packed at compile time mapped as it is. Then the artifact's parameters file is damaged in the ways a user
//! meets (truncated, another model's, another version) and create must refuse each by name.
//!
//! The artifacts build into `target/aot-artifacts` (their own cargo workspace each; the first
//! one compiles nnrt-aot and the CPU kernels once, the rest reuse them).

use std::path::{Path, PathBuf};
use std::process::Command;

use nnrt::Session;
use nnrt_tests::{cli_binary, TempDir};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root").to_path_buf()
}

/// The workspace's target folder (this test runs from `target/<profile>/deps/`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors().nth(3).expect("target folder").to_path_buf()
}

fn c_compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match Command::new(&cc).arg("--version").output() {
        Ok(o) if o.status.success() => Some(cc),
        _ => {
            println!("skipped: no C compiler ({cc}) to link the artifacts' C examples");
            None
        }
    }
}

fn check(what: &str, out: std::process::Output) -> std::process::Output {
    assert!(out.status.success(), "{what} failed ({}):\n{}\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// A built artifact: its folder, its C example program and its parameters file.
struct Built {
    _dir: TempDir,
    exe: PathBuf,
    params: PathBuf,
}

/// Compiles `model` with nnrt-compile, builds the crate and links its example.
fn build(compiler: &Path, cc: &str, model: &Path, name: &str, extra: &[&str]) -> Built {
    let dir = TempDir::new(&format!("aot-{name}")).expect("temp dir");
    let out = dir.path().join(name);
    let mut args: Vec<String> = vec![model.display().to_string(), "-o".into(), out.display().to_string(), "--name".into(), name.into(), "--nnrt".into(), repo().display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    check("nnrt-compile", Command::new(compiler).args(&args).output().expect("run nnrt-compile"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = target_dir().join("aot-artifacts");
    check(
        "cargo build of the artifact",
        Command::new(cargo)
            .args(["build", "--release", "--offline", "--quiet", "--manifest-path"])
            .arg(out.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("run cargo"),
    );
    let exe = out.join(format!("{name}_example"));
    let lib = target.join("release").join(format!("lib{name}.a"));
    let mut cmd = Command::new(cc);
    cmd.arg("-O2").arg("-I").arg(out.join("include")).arg(out.join("example").join("main.c")).arg(&lib).arg("-o").arg(&exe);
    if cfg!(target_os = "linux") {
        cmd.args(["-lpthread", "-ldl", "-lm"]);
    }
    check("linking the C example", cmd.output().expect("run the C compiler"));
    let params = out.join(format!("{name}.params"));
    Built { _dir: dir, exe, params }
}

/// Runs the artifact's C example on `inputs` (raw bytes per input) and returns its outputs.
fn run_artifact(b: &Built, params: &Path, inputs: &[Vec<u8>], n_out: usize) -> Result<Vec<Vec<u8>>, String> {
    let dir = b.exe.parent().expect("folder");
    let mut args = vec![params.display().to_string()];
    for (i, bytes) in inputs.iter().enumerate() {
        let p = dir.join(format!("in{i}.raw"));
        std::fs::write(&p, bytes).expect("write input");
        args.push(p.display().to_string());
    }
    let outs: Vec<PathBuf> = (0..n_out).map(|j| dir.join(format!("out{j}.raw"))).collect();
    args.extend(outs.iter().map(|p| p.display().to_string()));
    let o = Command::new(&b.exe).args(&args).output().expect("run the example");
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    Ok(outs.iter().map(|p| std::fs::read(p).expect("read output")).collect())
}

/// The runtime's outputs for the same model, method, threads and inputs.
fn run_runtime(model: &Path, method: Option<&str>, threads: usize, inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut s = Session::load(model).expect("load");
    if let Some(m) = method {
        s.select_signature(m).expect("method");
    }
    s.set_backends("cpu").expect("backends");
    s.set_threads(threads).expect("threads");
    s.prepare().expect("prepare");
    for (i, b) in inputs.iter().enumerate() {
        s.set_input(i, b).expect("input");
    }
    s.run().expect("run");
    (0..s.output_count()).map(|j| s.output(j).expect("output").to_vec()).collect()
}

fn npy_bytes(path: &Path) -> Vec<u8> {
    nnrt_npy::parse(&std::fs::read(path).expect("read npy")).expect("parse npy").data
}

/// Compiles, builds, runs and compares one model; returns the built artifact.
fn same_as_runtime(model: &Path, name: &str, method: Option<&str>, threads: usize, inputs: &[PathBuf]) -> Option<Built> {
    let compiler = cli_binary("nnrt-compile")?;
    let cc = c_compiler()?;
    let mut extra = vec!["--threads".to_string(), threads.to_string()];
    if let Some(m) = method {
        extra.extend(["--method".to_string(), m.to_string()]);
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let b = build(&compiler, &cc, model, name, &extra);
    let inputs: Vec<Vec<u8>> = inputs.iter().map(|p| npy_bytes(p)).collect();
    let want = run_runtime(model, method, threads, &inputs);
    let got = run_artifact(&b, &b.params, &inputs, want.len()).unwrap_or_else(|e| panic!("{name}: the artifact failed: {e}"));
    assert_eq!(got.len(), want.len());
    for (j, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g == w, "{name}: output {j} differs from the runtime's ({} vs {} bytes)", g.len(), w.len());
    }
    // On the CPU that compiled it, every weight block packed at compile time is used as it is.
    let dir = b.exe.parent().expect("folder");
    let mut args = vec![b.params.display().to_string()];
    args.extend((0..inputs.len()).map(|i| dir.join(format!("in{i}.raw")).display().to_string()));
    args.extend((0..want.len()).map(|j| dir.join(format!("out{j}.raw")).display().to_string()));
    let o = check("the example with NNRT_AOT_TIMES", Command::new(&b.exe).args(&args).env("NNRT_AOT_TIMES", "1").output().expect("run"));
    let line = String::from_utf8_lossy(&o.stderr).into_owned();
    let counts: Vec<usize> = line.split(", ").last().unwrap_or("").split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert!(counts.len() == 2 && counts[0] == counts[1], "{name}: {line}");
    Some(b)
}

#[test]
fn uint8_mobilenet_artifact_matches_the_runtime_and_refuses_bad_parameters() {
    let dir = repo().join("examples/models/mobilenet_v1_0.25_128_quant");
    let Some(b) = same_as_runtime(&dir.join("model.tflite"), "mobilenet_v1", None, 1, &[dir.join("cat_input.0.npy")]) else { return };
    let input = npy_bytes(&dir.join("cat_input.0.npy"));
    let good = std::fs::read(&b.params).expect("params");
    let bad = b.exe.parent().expect("folder").join("bad.params");
    let refused = |bytes: &[u8], expect: &str| {
        std::fs::write(&bad, bytes).expect("write");
        let e = run_artifact(&b, &bad, std::slice::from_ref(&input), 1).expect_err("a damaged parameters file must be refused");
        assert!(e.contains("create") && e.contains(expect), "expected '{expect}' in: {e}");
    };
    refused(&good[..good.len() - 100], "truncated");
    refused(&good[..20], "shorter than");
    refused(b"not a parameters file at all, but long enough for a header", "not an nnrt parameters file");
    let mut v = good.clone();
    v[8] = 9;
    refused(&v, "format version 9");
    let mut v = good.clone();
    v[16] ^= 1;
    refused(&v, "another model");
    let mut v = good.clone();
    v[24] ^= 1;
    refused(&v, "kernel ABI");
    let e = run_artifact(&b, &b.exe.parent().unwrap().join("missing.params"), &[input], 1).expect_err("a missing file");
    assert!(e.contains("missing.params"), "{e}");
    c_interface_checks_its_arguments(&b);
}

/// The generated C interface answers bad calls as `nnfw.h` does (status codes, a message).
fn c_interface_checks_its_arguments(b: &Built) {
    let Some(cc) = c_compiler() else { return };
    let dir = b.exe.parent().expect("folder");
    let src = dir.join("args.c");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#include <string.h>
#include "mobilenet_v1.h"
#define EXPECT(call, status) do { int s_ = (call); if (s_ != (status)) { \
  fprintf(stderr, "%s returned %d, expected %d (%s)\n", #call, s_, (status), mobilenet_v1_last_error()); return 1; } \
  if ((status) != 0 && strlen(mobilenet_v1_last_error()) == 0) { fprintf(stderr, "%s left no message\n", #call); return 1; } } while (0)
int main(int argc, char **argv) {
  static uint8_t in[MOBILENET_V1_INPUT_INPUT_BYTES], out[MOBILENET_V1_OUTPUT_MOBILENETV1_PREDICTIONS_RESHAPE_1_BYTES];
  mobilenet_v1 *a = NULL;
  EXPECT(mobilenet_v1_create(NULL, &a), MOBILENET_V1_UNEXPECTED_NULL);
  EXPECT(mobilenet_v1_create(argv[1], NULL), MOBILENET_V1_UNEXPECTED_NULL);
  EXPECT(mobilenet_v1_run(NULL), MOBILENET_V1_UNEXPECTED_NULL);
  EXPECT(mobilenet_v1_create(argv[1], &a), MOBILENET_V1_OK);
  EXPECT(mobilenet_v1_get_output_at(a, 0, out, sizeof out), MOBILENET_V1_INVALID_STATE);
  EXPECT(mobilenet_v1_set_input(a, NULL, sizeof in), MOBILENET_V1_UNEXPECTED_NULL);
  EXPECT(mobilenet_v1_set_input(a, in, sizeof in - 1), MOBILENET_V1_ERROR);
  EXPECT(mobilenet_v1_set_input_at(a, 1, in, sizeof in), MOBILENET_V1_ERROR);
  EXPECT(mobilenet_v1_set_input(a, in, sizeof in), MOBILENET_V1_OK);
  EXPECT(mobilenet_v1_run(a), MOBILENET_V1_OK);
  EXPECT(mobilenet_v1_get_mobilenetv1_predictions_reshape_1(a, out, sizeof out - 1), MOBILENET_V1_INSUFFICIENT_OUTPUT_SIZE);
  EXPECT(mobilenet_v1_get_output_at(a, 1, out, sizeof out), MOBILENET_V1_ERROR);
  EXPECT(mobilenet_v1_get_output_at(a, 0, NULL, sizeof out), MOBILENET_V1_UNEXPECTED_NULL);
  EXPECT(mobilenet_v1_get_mobilenetv1_predictions_reshape_1(a, out, sizeof out), MOBILENET_V1_OK);
  mobilenet_v1_destroy(a);
  mobilenet_v1_destroy(NULL);
  (void)argc;
  puts("ok");
  return 0;
}
"#,
    )
    .expect("write args.c");
    let exe = dir.join("args");
    let lib = target_dir().join("aot-artifacts/release/libmobilenet_v1.a");
    let mut cmd = Command::new(cc);
    cmd.arg("-O1").arg("-I").arg(dir.join("include")).arg(&src).arg(&lib).arg("-o").arg(&exe);
    if cfg!(target_os = "linux") {
        cmd.args(["-lpthread", "-ldl", "-lm"]);
    }
    check("linking the argument checks", cmd.output().expect("run the C compiler"));
    let o = check("the argument checks", Command::new(&exe).arg(&b.params).output().expect("run"));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "ok");
}

#[test]
fn float_xnnpack_program_artifact_on_two_threads() {
    let dir = repo().join("tests/data/pte/mobilenet_v2_tiny_xnnpack");
    same_as_runtime(&dir.join("program.pte"), "mbv2_tiny", None, 2, &[dir.join("input_0.npy")]);
}

/// On a CPU whose instruction set is not the one the weights were packed for (here: the kernels
/// held to AVX2 or to portable code with `NNRT_ISA`, which only lowers), the artifact packs the
/// blocks that do not fit at create and still gives the runtime's outputs on that CPU, byte for
/// byte.
#[test]
fn packed_weights_fall_back_on_another_instruction_set() {
    let Some(runner) = cli_binary("nnpackage_run") else { return };
    let dir = repo().join("tests/data/pte/q8_cnn");
    let Some(b) = same_as_runtime(&dir.join("program.pte"), "q8_cnn_isa", None, 1, &[dir.join("input_0.npy")]) else { return };
    let folder = b.exe.parent().expect("folder").to_path_buf();
    let input = folder.join("in0.raw");
    std::fs::copy(dir.join("input_0.npy"), folder.join("ref_in.0.npy")).expect("copy input");
    for isa in ["avx2", "scalar"] {
        let out = folder.join(format!("out_{isa}.raw"));
        let o = Command::new(&b.exe).arg(&b.params).arg(&input).arg(&out).env("NNRT_ISA", isa).env("NNRT_AOT_TIMES", "1").output().expect("run");
        let o = check(&format!("the artifact with NNRT_ISA={isa}"), o);
        let line = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(line.contains("packed weight blocks mapped"), "{line}");
        let prefix = folder.join(format!("ref_{isa}"));
        let args = ["--backends", "cpu", "--threads", "1", "--load:npy"];
        let r = Command::new(&runner).arg(dir.join("program.pte")).args(args).arg(folder.join("ref_in")).arg("--dump:raw").arg(&prefix).env("NNRT_ISA", isa).output().expect("run nnpackage_run");
        check(&format!("nnpackage_run with NNRT_ISA={isa}"), r);
        let want = std::fs::read(folder.join(format!("ref_{isa}.0"))).expect("reference output");
        assert!(std::fs::read(&out).expect("output") == want, "NNRT_ISA={isa}: the artifact differs from the runtime ({line})");
    }
}

#[test]
fn multi_output_and_int8_artifacts() {
    let dir = repo().join("tests/data/pte/attention_ops");
    same_as_runtime(&dir.join("program.pte"), "attention_ops", None, 1, &[dir.join("input_0.npy")]);
    let dir = repo().join("tests/data/pte/q8_cnn");
    same_as_runtime(&dir.join("program.pte"), "q8_cnn", None, 1, &[dir.join("input_0.npy")]);
}

#[test]
fn control_flow_is_refused_naming_the_op() {
    let Some(compiler) = cli_binary("nnrt-compile") else { return };
    let dir = TempDir::new("aot-refuse").expect("temp dir");
    // A TOSA COND_IF made by the conformance generator.
    let model = repo().join("tests/data/tosa_conformance/cond_if_binary_0_f32_cond0/graph.tosa");
    let o = Command::new(&compiler).arg(&model).arg("-o").arg(dir.path().join("out")).arg("--nnrt").arg(repo()).output().expect("run");
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("op @0 (If)") && e.contains("control flow"), "{e}");
    assert!(!dir.path().join("out").exists(), "nothing is written for a refused model");
}
