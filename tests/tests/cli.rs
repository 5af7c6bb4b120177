//! The command-line tools, run as a user would. They belong to `nnrt-cli`, so Cargo does not
//! build them for this crate's tests: build them first (`cargo build --release -p nnrt-cli`, same
//! profile as the tests); each test is skipped with a message when its binary is missing.

use std::path::PathBuf;
use std::process::{Command, Output};

use nnrt_tests::{cli_binary, read_npy_f32, ModelBuilder, NnPackage, TempDir, TensorType, ZipMethod};

/// Runs a tool from the repository root with nnrt's environment variables cleared.
fn run(bin: &PathBuf, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args).current_dir(nnrt_tests::repo_root());
    for var in ["BACKENDS", "NUM_THREADS", "OP_BACKEND_ALLOPS", "OP_BACKEND_MAP"] {
        cmd.env_remove(var);
    }
    cmd.output().unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn nnpackage_run_example_reports_and_dumps() {
    let Some(bin) = cli_binary("nnpackage_run") else { return };
    let tmp = TempDir::new("cli").expect("temp dir");
    for model in ["examples/models/tiny_mobilenet.nnpkg", "examples/models/tiny_mobilenet.tflite"] {
        let out_prefix = tmp.path().join("out");
        let report = tmp.path().join("r.json");
        let (out_s, report_s) = (out_prefix.to_string_lossy(), report.to_string_lossy());
        let args = [model, "--load:npy", "examples/models/tiny_mobilenet_input", "--dump:npy", &out_s, "-r", "3", "-w", "1", "-m", "-p", &report_s];
        let o = run(&bin, &args);
        assert!(o.status.success(), "{model}: exit {:?}\nstdout: {}\nstderr: {}", o.status.code(), text(&o.stdout), text(&o.stderr));

        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).expect("report written")).expect("report is JSON");
        for key in ["load_ms", "prepare_ms", "execute_ms", "runs", "threads", "backends", "peak_rss_kb"] {
            assert!(r.get(key).is_some(), "{model}: report lacks '{key}': {r}");
        }
        for key in ["min", "median", "mean", "max", "geomean"] {
            let v = r["execute_ms"][key].as_f64().unwrap_or_else(|| panic!("{model}: execute_ms.{key} is not a number: {r}"));
            assert!(v >= 0.0 && v.is_finite(), "{model}: execute_ms.{key} = {v}");
        }
        let ms = &r["execute_ms"];
        assert!(ms["min"].as_f64() <= ms["median"].as_f64() && ms["median"].as_f64() <= ms["max"].as_f64(), "{model}: {ms}");
        assert_eq!(r["runs"], 3, "{model}: runs");
        assert!(r["peak_rss_kb"].as_u64().is_some_and(|kb| kb > 0), "{model}: -m must report peak RSS: {r}");

        let npy = std::fs::read(tmp.path().join("out.0.npy")).expect("dumped output");
        let (dims, values) = read_npy_f32(&npy).expect("float32 npy");
        assert_eq!(dims, vec![1, 10], "{model}: output shape");
        let sum: f32 = values.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "{model}: softmax output sums to {sum}");
    }
}

#[test]
fn nnpackage_run_missing_file_exits_1_naming_it() {
    let Some(bin) = cli_binary("nnpackage_run") else { return };
    let o = run(&bin, &["no/such/model.tflite"]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line on stderr, got: {err}");
    assert!(err.contains("no/such/model.tflite"), "stderr should name the path: {err}");
}

/// The one error line of a failed tool run, checked to say each part of its cause once: exit 1,
/// one line, `cause` in it exactly once, and no `: `-separated part repeated (an error that
/// printed its source's text and then the source again read "x: No such file ...: No such file ...").
fn error_line(bin: &PathBuf, args: &[&str], cause: &str) -> String {
    let o = run(bin, args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line on stderr, got: {err}");
    let line = err.trim_end().to_string();
    assert_eq!(line.matches(cause).count(), 1, "{args:?}: '{cause}' once in: {line}");
    let parts: Vec<&str> = line.split(": ").collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(!parts[i + 1..].contains(p), "{args:?}: '{p}' repeated in: {line}");
    }
    line
}

#[test]
fn error_lines_state_their_cause_once() {
    let Some(run_bin) = cli_binary("nnpackage_run") else { return };
    let Some(inspect) = cli_binary("nnrt-inspect") else { return };
    let tmp = TempDir::new("cli-causes").expect("temp dir");
    let at = |name: &str| tmp.path().join(name).to_string_lossy().into_owned();
    for bin in [&run_bin, &inspect] {
        let line = error_line(bin, &["no/such/model.tflite"], "No such file or directory");
        assert_eq!(line.matches("no/such/model.tflite").count(), 1, "{line}");
    }
    std::fs::write(at("bad.zip"), b"PK\x03\x04 a zip header and nothing after it").unwrap();
    error_line(&run_bin, &[&at("bad.zip")], "not a readable zip");
    let model = std::fs::read(nnrt_tests::repo_root().join("examples/models/tiny_mobilenet.tflite")).expect("example model");
    let bad_manifest = NnPackage::single("m.tflite", model).with_manifest("{\"models\": [");
    std::fs::write(at("bad_manifest.zip"), bad_manifest.to_zip(ZipMethod::Deflated, None).unwrap()).unwrap();
    error_line(&run_bin, &[&at("bad_manifest.zip")], "MANIFEST is not valid JSON");
    bad_manifest.write_dir(&tmp.path().join("pkg")).unwrap();
    error_line(&inspect, &[&at("pkg")], "MANIFEST is not valid JSON");
    std::fs::write(at("junk.bin"), b"0123456789abcdef").unwrap();
    error_line(&run_bin, &[&at("junk.bin")], "\"TFL3\"");
    error_line(&run_bin, &["examples/models/tiny_mobilenet.tflite", "--load:npy", &at("none")], "No such file or directory");
    let line = error_line(&run_bin, &["examples/models/tiny_mobilenet.tflite", "--custom-op-lib", &at("libnone.so")], "No such file or directory");
    assert_eq!(line.matches("libnone.so").count(), 1, "{line}");
}

#[test]
fn nnpackage_run_unknown_custom_op_exits_1_naming_it() {
    let Some(bin) = cli_binary("nnpackage_run") else { return };
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[1, 4]);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 4]);
    b.custom_op("NnrtCliNoSuchOp", &[x], &[y], &[]);
    b.output(y);
    let tmp = TempDir::new("cli-custom").expect("temp dir");
    let path = tmp.path().join("custom.tflite");
    std::fs::write(&path, b.finish()).expect("write model");
    let o = run(&bin, &[&path.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("NnrtCliNoSuchOp"), "stderr should name the custom op: {err}");
}

#[test]
fn nnrt_inspect_prints_one_line_per_op_with_backend() {
    let Some(bin) = cli_binary("nnrt-inspect") else { return };
    let o = run(&bin, &["examples/models/tiny_mobilenet.tflite"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stdout: {out}\nstderr: {}", text(&o.stderr));
    let ops: Vec<&str> = out.lines().skip_while(|l| *l != "ops:").skip(1).collect();
    let kinds = ["Conv2D", "DepthwiseConv2D", "Conv2D", "Add", "Conv2D", "Mean", "FullyConnected", "Softmax"];
    assert_eq!(ops.len(), kinds.len(), "one line per op:\n{out}");
    for (line, kind) in ops.iter().zip(kinds) {
        assert!(line.contains(&format!("{kind}(")), "expected {kind}: {line}");
        assert!(line.trim_end().ends_with("[cpu]"), "expected the cpu backend: {line}");
    }
}

/// Runs a tool with the Vulkan loader pointed at no driver, so wgpu finds no adapter.
fn run_without_gpu(bin: &PathBuf, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args).current_dir(nnrt_tests::repo_root());
    for var in ["BACKENDS", "NUM_THREADS", "OP_BACKEND_ALLOPS", "OP_BACKEND_MAP", "GPU_ADAPTER"] {
        cmd.env_remove(var);
    }
    cmd.env("VK_ICD_FILENAMES", "/nonexistent.json").env("WGPU_BACKEND", "vulkan");
    cmd.output().unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
}

#[test]
fn gpu_without_an_adapter_is_a_clear_error_or_a_fallback() {
    let Some(bin) = cli_binary("nnpackage_run") else { return };
    let o = run_without_gpu(&bin, &["examples/models/tiny_mobilenet.tflite", "--backends", "gpu"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("BACKENDS=gpu") && err.contains("no GPU adapter"), "{err}");
    let o = run_without_gpu(&bin, &["examples/models/tiny_mobilenet.tflite", "--backends", "gpu;cpu"]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "stderr: {err}");
    assert!(err.contains("backend 'gpu' skipped: no GPU adapter"), "{err}");
}

#[cfg(feature = "gpu")]
#[test]
fn nnrt_inspect_partition_shows_gpu_placement_and_fallback_reasons() {
    let Some(bin) = cli_binary("nnrt-inspect") else { return };
    if let Err(why) = nnrt_backend_gpu::GpuBackend::new(None) {
        println!("skipped: no GPU adapter: {why}");
        return;
    }
    // Float ops go to the gpu.
    let o = run(&bin, &["examples/models/tiny_mobilenet.tflite", "--backends", "gpu;cpu", "--partition"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stdout: {out}\nstderr: {}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "one line per op:\n{out}");
    for l in &lines {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(cols.get(2), Some(&"gpu"), "{l}");
    }
    // An int32 op is refused by the gpu: it falls back to the cpu and the line says why.
    let dir = TempDir::new("gpu_fallback").expect("temp dir");
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::INT32, &[4]);
    let y = b.input("y", TensorType::INT32, &[4]);
    let z = b.tensor("z", TensorType::INT32, &[4]);
    b.op(nnrt_tests::BuiltinOperator::ADD, &[x, y], &[z], nnrt_tests::Options::Add { act: nnrt_tests::Act::NONE });
    b.output(z);
    let path = dir.path().join("int_add.tflite");
    std::fs::write(&path, b.finish()).expect("write model");
    let o = run(&bin, &[path.to_str().expect("utf-8 path"), "--backends", "gpu;cpu", "--partition"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stdout: {out}\nstderr: {}", text(&o.stderr));
    assert!(out.contains("Add") && out.contains("cpu") && out.contains("fallback: gpu: input 0 is int32; gpu kernels compute in float32"), "{out}");
}

#[test]
fn nnrt_inspect_lists_an_executorch_programs_methods_with_their_operators() {
    let Some(bin) = cli_binary("nnrt-inspect") else { return };
    for (file, op) in [("tests/data/pte/two_methods_cnn/program.pte", "aten::convolution.out"), ("tests/data/pte/two_methods_cnn_xnnpack/program.pte", "delegate XnnpackBackend")] {
        let o = run(&bin, &[file]);
        let out = text(&o.stdout);
        assert!(o.status.success(), "stdout: {out}\nstderr: {}", text(&o.stderr));
        assert!(out.contains("format: ExecuTorch program (ET12)"), "{out}");
        for m in ["features", "head"] {
            let line = out.lines().find(|l| l.starts_with(&format!("method '{m}'"))).unwrap_or_else(|| panic!("no method '{m}':\n{out}"));
            assert!(line.contains("inputs [input_0 float32 [") && line.contains("outputs [output_0 float32 ["), "{line}");
        }
        let ops: Vec<&str> = out.lines().filter(|l| l.starts_with("  operators: ")).collect();
        assert_eq!(ops.len(), 2, "{out}");
        assert!(ops.iter().any(|l| l.contains(op)), "expected {op}:\n{out}");
    }
}

/// The README's first command: the shipped photo through the shipped Coral classifier.
#[test]
fn nnpackage_run_classifies_the_shipped_photo() {
    let Some(bin) = cli_binary("nnpackage_run") else { return };
    let d = "examples/models/mobilenet_v1_0.25_128_quant";
    let o = run(&bin, &[&format!("{d}/model.tflite"), "--load:npy", &format!("{d}/cat_input"), "--labels", &format!("{d}/labels.txt"), "-r", "2"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stdout: {out}\nstderr: {}", text(&o.stderr));
    assert!(out.contains("execute: min "), "timings are printed too:\n{out}");
    let head = out.lines().position(|l| l.starts_with("top 5 of output 0 ('MobilenetV1/Predictions/Reshape_1')")).unwrap_or_else(|| panic!("{out}"));
    let rows: Vec<(f64, usize, String)> = out
        .lines()
        .skip(head + 1)
        .take(5)
        .map(|l| {
            let mut cols = l.split_whitespace();
            let score = cols.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("score in '{l}'"));
            let class = cols.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("class in '{l}'"));
            (score, class, cols.collect::<Vec<_>>().join(" "))
        })
        .collect();
    assert_eq!(rows.len(), 5, "{out}");
    // ImageNet class 286 is "Egyptian cat" (labels.txt line 287, after "background"); LiteRT's
    // reference output for this input ranks it first too, with 32/256.
    assert_eq!((rows[0].1, rows[0].2.as_str()), (286, "Egyptian cat"), "{out}");
    assert!(rows.windows(2).all(|w| w[0].0 >= w[1].0), "scores fall: {out}");
    assert!(rows.iter().filter(|r| r.2.contains("cat")).count() >= 3, "three cat classes in the top 5: {out}");
}

/// Renders DOT text with Graphviz when it is installed; the error otherwise says nothing.
fn render_with_dot(dot_text: &str) -> Option<Result<(), String>> {
    use std::io::Write;
    let mut child = Command::new("dot").arg("-Tsvg").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().ok()?;
    child.stdin.take()?.write_all(dot_text.as_bytes()).ok()?;
    let o = child.wait_with_output().ok()?;
    Some(if o.status.success() && o.stderr.is_empty() && text(&o.stdout).contains("<svg") { Ok(()) } else { Err(text(&o.stderr)) })
}

#[test]
fn nnrt_inspect_dot_draws_every_op_and_renders() {
    let Some(bin) = cli_binary("nnrt-inspect") else { return };
    let o = run(&bin, &["examples/models/tiny_mobilenet.tflite", "--dot"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stdout: {out}\nstderr: {}", text(&o.stderr));
    assert!(out.starts_with("digraph nnrt {") && out.trim_end().ends_with('}'), "{out}");
    let ops = out.lines().filter(|l| l.trim_start().starts_with("s0_op") && !l.contains("->")).count();
    assert_eq!(ops, 8, "one node per op:\n{out}");
    assert!(out.contains("\\ncpu\", fillcolor=\"#9ecae1\""), "cpu ops are filled with the cpu colour:\n{out}");
    assert!(out.contains("[label=\"1x32x32x3 float32\"]"), "the input's edge carries its shape and dtype:\n{out}");
    assert!(!out.contains("upload"), "no copies on the cpu alone:\n{out}");
    match render_with_dot(&out) {
        Some(r) => r.expect("dot -Tsvg renders it"),
        None => println!("skipped rendering: Graphviz 'dot' not installed"),
    }
}

/// Issue 24's check: MobileNetV2 on `gpu;cpu`, with the copies of the gpu partition drawn.
#[cfg(feature = "gpu")]
#[test]
fn nnrt_inspect_dot_of_mobilenet_v2_on_gpu_renders() {
    let Some(bin) = cli_binary("nnrt-inspect") else { return };
    let Some(model) = nnrt_tests::corpus_model_or_skip("tflite/keras_mobilenet_v2_224_float/model.tflite") else { return };
    if let Err(why) = nnrt_backend_gpu::GpuBackend::new(None) {
        println!("skipped: no GPU adapter: {why}");
        return;
    }
    let o = run(&bin, &[model.to_str().expect("utf-8 path"), "--backends", "gpu;cpu", "--dot"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    assert!(out.contains("\\ngpu\", fillcolor=\"#a1d99b\""), "{out}");
    assert!(out.contains("upload\\nhost -> gpu") && out.contains("download\\ngpu -> host"), "the input is uploaded, the output read back:\n{out}");
    match render_with_dot(&out) {
        Some(r) => r.expect("dot -Tsvg renders it"),
        None => println!("skipped rendering: Graphviz 'dot' not installed"),
    }
}
