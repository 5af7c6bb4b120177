//! The C ABI as C applications use it: C programs in `tests/c/`, written only against the public
//! headers, compiled with the system C compiler (`cc`) and linked against the `libnnfw.so` Cargo
//! built next to this test (`target/<profile>/`, found from the test executable; rpath set).
//!
//! `NNFW_C_TEST_RUNNER` (e.g. `valgrind --error-exitcode=1 --leak-check=full`) prefixes every
//! program run: `tests/valgrind.sh` uses it. Tests on `../shared/corpus` models are skipped with a
//! message when the corpus is absent; the in-repo example model always runs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nnfw::abi;
use nnrt_tests::{BuiltinOperator, ModelBuilder, Options, TempDir, TensorType};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where Cargo put the `libnnfw.so` / `libnnfw.a` this test was built with: `target/<profile>/deps/`
/// (this test's own folder; `cargo test` does not refresh the copies in `target/<profile>/`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("target/<profile>/deps/<test>").to_path_buf();
    let profile_dir = deps.parent().expect("target/<profile>/deps").to_path_buf();
    for dir in [deps, profile_dir.clone()] {
        if dir.join("libnnfw.so").is_file() {
            return dir;
        }
    }
    panic!("libnnfw.so is not in {} (build it with `cargo build -p nnfw` in this test's profile)", profile_dir.display());
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Compiles C sources into `out/<name>`, dynamically linked to libnnfw unless `static_lib`.
fn compile(name: &str, sources: &[PathBuf], out: &Path, static_lib: bool) -> PathBuf {
    let exe = out.join(name);
    let lib = lib_dir();
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g", "-O1"])
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg("-I")
        .arg(manifest_dir().join("tests/c"))
        .args(sources)
        .arg("-o")
        .arg(&exe);
    if static_lib {
        // What a Rust staticlib needs from the system on Linux (`rustc --print native-static-libs`).
        cmd.arg(lib.join("libnnfw.a")).args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]);
    } else {
        cmd.arg("-L").arg(&lib).arg("-lnnfw").arg(format!("-Wl,-rpath,{}", lib.display())).arg("-lpthread");
    }
    let o = cmd.output().expect("cannot start the C compiler (cc)");
    assert!(o.status.success(), "compiling {name} failed:\n{}", text(&o));
    exe
}

fn program(name: &str, out: &Path) -> PathBuf {
    compile(name, &[manifest_dir().join(format!("tests/c/{name}.c"))], out, false)
}

/// Builds the C program `name` in `tmp` and checks that it succeeds on `model`, written there
/// as `file` first.
fn program_succeeds_on(tmp: &TempDir, name: &str, file: &str, model: Vec<u8>) {
    let path = tmp.path().join(file);
    std::fs::write(&path, model).unwrap();
    let exe = program(name, tmp.path());
    assert_ok(&run(&exe, &[&path]), name);
}

/// Runs a compiled program (under `NNFW_C_TEST_RUNNER` when set) with nnrt's configuration
/// variables cleared.
fn run(exe: &Path, args: &[&Path]) -> Output {
    let runner = std::env::var("NNFW_C_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut cmd = match words.next() {
        Some(first) => {
            let mut c = Command::new(first);
            c.args(words).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.args(args);
    // `cargo test` puts `target/<profile>/` on LD_LIBRARY_PATH, which outranks the rpath and
    // holds a copy of libnnfw.so only `cargo build` refreshes: load the one this test was built with.
    cmd.env("LD_LIBRARY_PATH", lib_dir());
    for var in ["BACKENDS", "NUM_THREADS", "OP_BACKEND_ALLOPS", "OP_BACKEND_MAP", "EXECUTOR"] {
        cmd.env_remove(var);
    }
    let o = output_within(cmd, TIMEOUT).unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
    println!("$ {} {}\n{}", exe.display(), args.iter().map(|a| a.display().to_string()).collect::<Vec<_>>().join(" "), text(&o));
    o
}

/// How long one program may run (valgrind included) before it counts as hung.
const TIMEOUT: Duration = Duration::from_secs(900);

/// Runs `cmd` to completion, killing it after `limit`.
fn output_within(mut cmd: Command, limit: Duration) -> Result<Output, String> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("cannot start: {e}"))?;
    // Drain both pipes on threads so a chatty program cannot block on a full pipe.
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {limit:?}: killed (a hang?)"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Output { status, stdout: out_t.join().unwrap_or_default(), stderr: err_t.join().unwrap_or_default() })
}

fn assert_ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what} failed ({}):\n{}", o.status, text(o));
}

fn example(file: &str) -> PathBuf {
    nnrt_tests::repo_root().join("examples/models").join(file)
}

/// The headers agree with the Rust definitions: every enum value and constant, every struct's
/// size, alignment and field offsets (asserted at compile time by a C file generated from
/// [`abi`]), and every function the headers declare exists in the library (the file takes each
/// one's address and links).
#[test]
fn headers_match_the_rust_definitions() {
    let tmp = TempDir::new("nnfw-header").unwrap();
    let mut c = String::from(
        "#include <stddef.h>\n#include \"nnfw.h\"\n#include \"nnfw_experimental.h\"\n#include \"nnfw_internal.h\"\n#include \"nnfw_version.h\"\n",
    );
    for (name, value) in abi::CONSTANTS {
        c += &format!("_Static_assert((long long)({name}) == {value}LL, \"{name} differs from nnfw::abi\");\n");
    }
    c += "_Static_assert(sizeof(NNFW_STATUS) == sizeof(int) && sizeof(NNFW_TYPE) == sizeof(int) && sizeof(NNFW_LAYOUT) == sizeof(int), \"enums are ints\");\n";
    for (ty, size, align, fields) in abi::layouts() {
        c += &format!("_Static_assert(sizeof({ty}) == {size}, \"size of {ty}\");\n");
        c += &format!("_Static_assert(_Alignof({ty}) == {align}, \"alignment of {ty}\");\n");
        for (field, offset) in fields {
            c += &format!("_Static_assert(offsetof({ty}, {field}) == {offset}, \"offset of {ty}.{field}\");\n");
        }
    }
    let mut functions = Vec::new();
    for header in ["nnfw.h", "nnfw_experimental.h", "nnfw_internal.h"] {
        let h = std::fs::read_to_string(manifest_dir().join("include").join(header)).unwrap();
        for line in h.lines() {
            if let Some(rest) = line.strip_prefix("NNFW_STATUS ") {
                functions.push(rest.split('(').next().unwrap().trim().to_string());
            }
        }
    }
    assert!(functions.len() >= 30, "found only {} declarations: {functions:?}", functions.len());
    c += "int main(void)\n{\n  void (*volatile p)(void);\n";
    for f in &functions {
        c += &format!("  p = (void (*)(void))&{f};\n  (void)p;\n");
    }
    c += "  return 0;\n}\n";
    let src = tmp.path().join("header_check.c");
    std::fs::write(&src, c).unwrap();
    let exe = compile("header_check", &[src], tmp.path(), false);
    assert_ok(&run(&exe, &[]), "header_check");

    // The headers also compile as C++ (onert applications are often C++).
    let cpp = tmp.path().join("header_check.cc");
    std::fs::write(&cpp, "#include \"nnfw.h\"\n#include \"nnfw_experimental.h\"\n#include \"nnfw_internal.h\"\nint main() { nnfw_session *s = nullptr; return nnfw_create_session(&s) == NNFW_STATUS_NO_ERROR ? nnfw_close_session(s) : 1; }\n").unwrap();
    let o = Command::new("c++")
        .args(["-std=c++17", "-Wall", "-Werror", "-fsyntax-only", "-I"])
        .arg(manifest_dir().join("include"))
        .arg(&cpp)
        .output();
    match o {
        Ok(o) => assert!(o.status.success(), "the headers do not compile as C++:\n{}", text(&o)),
        Err(e) => println!("skipped the C++ check: no c++ compiler ({e})"),
    }
}

/// Classifies images end to end: the in-repo example always; with the corpus, the MANIFEST 1.3
/// two-model nnpackage (when nnrt can load it), the float Keras MobileNet v2 and the quantized
/// Coral MobileNet v1 (skipped with a message while quantized kernels are missing).
#[test]
fn classifies_an_image() {
    let tmp = TempDir::new("nnfw-classify").unwrap();
    let exe = program("classify", tmp.path());
    let tiny = run(&exe, &[&example("tiny_mobilenet.tflite"), &example("tiny_mobilenet_input.0.npy"), &example("tiny_mobilenet_expected.0.npy")]);
    assert_ok(&tiny, "classify tiny_mobilenet.tflite");
    let pkg = run(&exe, &[&example("tiny_mobilenet.nnpkg"), &example("tiny_mobilenet_input.0.npy"), &example("tiny_mobilenet_expected.0.npy")]);
    assert_ok(&pkg, "classify tiny_mobilenet.nnpkg");

    let Some(corpus) = nnrt_tests::corpus_dir() else {
        println!("skipped the corpus models: ../shared/corpus is absent");
        return;
    };
    let classify = |dir: PathBuf| {
        let o = run(&exe, &[&dir.join(if dir.join("model.tflite").is_file() { "model.tflite" } else { "" }), &dir.join("input_0.npy"), &dir.join("expected_0.npy")]);
        (o.status.code(), text(&o))
    };
    match classify(corpus.join("nnpackage/mobilenet_v1_two_models")) {
        (Some(0), _) => println!("mobilenet_v1_two_models (MANIFEST 1.3, two models): top-1 matches"),
        (Some(3), msg) if msg.contains("multi-model") => println!("skipped mobilenet_v1_two_models: {}", msg.trim()),
        (Some(4), msg) if msg.contains("quantized") => println!("skipped mobilenet_v1_two_models (uint8; quantized kernels not there yet): {}", msg.trim()),
        (code, msg) => panic!("mobilenet_v1_two_models: exit {code:?}\n{msg}"),
    }
    match classify(corpus.join("tflite/keras_mobilenet_v2_224_float")) {
        (Some(0), _) => {}
        (code, msg) => panic!("keras_mobilenet_v2_224_float: exit {code:?}\n{msg}"),
    }
    let coral = corpus.join("tflite/coral_mobilenet_v1_0.25_128_quant");
    match classify(coral.clone()) {
        (Some(0), _) => {}
        (Some(4), msg) if msg.contains("quantized") => println!("skipped coral_mobilenet_v1_0.25_128_quant (quantized kernels not there yet): {}", msg.trim()),
        (code, msg) => panic!("coral_mobilenet_v1_0.25_128_quant: exit {code:?}\n{msg}"),
    }
    // The same model as a zipped nnpackage.
    let zip = corpus.join("tflite/_nnpkg_variants/coral_mobilenet_v1_0.25_128_quant.deflated.nnpkg.zip");
    if zip.is_file() {
        let o = run(&exe, &[&zip, &coral.join("input_0.npy"), &coral.join("expected_0.npy")]);
        match (o.status.code(), text(&o)) {
            (Some(0), _) => {}
            (Some(4), msg) if msg.contains("quantized") => println!("skipped the zipped coral nnpackage (quantized kernels not there yet)"),
            (code, msg) => panic!("{}: exit {code:?}\n{msg}", zip.display()),
        }
    }
}

/// NULLs, wrong order, short buffers, bad indices: each status as onert's rules give it.
#[test]
fn misuse_returns_the_documented_statuses() {
    let tmp = TempDir::new("nnfw-misuse").unwrap();
    let exe = program("misuse", tmp.path());
    assert_ok(&run(&exe, &[&example("tiny_mobilenet.tflite")]), "misuse");
}

/// Eight sessions on eight threads at once give identical outputs.
#[test]
fn eight_sessions_on_eight_threads_agree() {
    let tmp = TempDir::new("nnfw-threads").unwrap();
    let exe = program("threads", tmp.path());
    assert_ok(&run(&exe, &[&example("tiny_mobilenet.tflite"), &example("tiny_mobilenet_input.0.npy")]), "threads");
}

/// A C kernel registered with `nnfw_register_custom_op_info` runs the model's custom op.
#[test]
fn custom_op_kernel_from_c() {
    let tmp = TempDir::new("nnfw-custom").unwrap();
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[1, 4]);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 4]);
    b.custom_op("AddScalar", &[x], &[y], &[3]);
    b.output(y);
    program_succeeds_on(&tmp, "custom_op", "custom.tflite", b.finish());
}

/// NCHW buffers for NHWC tensors and float32 buffers for quantized ones.
#[test]
fn layouts_and_types_convert_at_the_boundary() {
    let tmp = TempDir::new("nnfw-io").unwrap();
    let mut b = ModelBuilder::new();
    let shape = b.constant_i32("shape", &[4], &[1, 2, 3, 4]);
    let f = b.input("f", TensorType::FLOAT32, &[1, 2, 3, 4]);
    let f_out = b.tensor("f_out", TensorType::FLOAT32, &[1, 2, 3, 4]);
    b.op(BuiltinOperator::RESHAPE, &[f, shape], &[f_out], Options::Reshape { new_shape: Some(vec![1, 2, 3, 4]) });
    let q = b.input("q", TensorType::UINT8, &[1, 2, 3, 4]);
    b.quantization(q, &[0.5], &[10], 0);
    let q_out = b.tensor("q_out", TensorType::UINT8, &[1, 2, 3, 4]);
    b.quantization(q_out, &[0.5], &[10], 0);
    b.op(BuiltinOperator::RESHAPE, &[q, shape], &[q_out], Options::Reshape { new_shape: Some(vec![1, 2, 3, 4]) });
    b.output(f_out).output(q_out);
    program_succeeds_on(&tmp, "io_forms", "io_forms.tflite", b.finish());
}

/// `libnnfw.a` links into a C program on its own too.
#[test]
fn static_library_links() {
    let tmp = TempDir::new("nnfw-static").unwrap();
    if !lib_dir().join("libnnfw.a").is_file() {
        println!("skipped: libnnfw.a is not built");
        return;
    }
    let exe = compile("classify_static", &[manifest_dir().join("tests/c/classify.c")], tmp.path(), true);
    let o = run(&exe, &[&example("tiny_mobilenet.tflite"), &example("tiny_mobilenet_input.0.npy"), &example("tiny_mobilenet_expected.0.npy")]);
    assert_ok(&o, "classify_static");
}
