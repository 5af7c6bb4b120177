//! The decoder as users load it: a shared library given to a session (`load_custom_op_library`,
//! `nnpackage_run --custom-op-lib`) or shipped in a package's `custom_op/` folder, which loads only
//! when the caller allows it. The model is a one-op PoseNet tail built in memory, with outputs
//! declared without shapes as in Coral's models, so the plugin's shape function must supply them.

use std::path::{Path, PathBuf};
use std::process::Command;

use nnrt::{Error, Session};
use nnrt_plugin_sdk::flexbuffers::build::{map, Value};
use nnrt_tests::{manifest, ModelBuilder, NnPackage, TempDir, TensorType, ZipMethod};

const H: usize = 4;
const W: usize = 4;
const MAX: usize = 3;

/// The plugin Cargo built for this test: `target/<profile>/deps/libnnrt_posenet_decoder.so`
/// (beside the test executable), else `target/<profile>/`.
fn plugin() -> PathBuf {
    nnrt_tests::built_plugin("nnrt_posenet_decoder", "nnrt-posenet-decoder")
}

/// A model whose only op is the decoder, reading three float inputs.
fn model() -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let heat = b.input("heatmaps", TensorType::FLOAT32, &[1, H as i32, W as i32, 17]);
    let short = b.input("short_offsets", TensorType::FLOAT32, &[1, H as i32, W as i32, 34]);
    let mid = b.input("mid_offsets", TensorType::FLOAT32, &[1, H as i32, W as i32, 64]);
    let outs: Vec<_> = ["poses", "poses:1", "poses:2", "poses:3"].iter().map(|n| b.tensor(n, TensorType::FLOAT32, &[])).collect();
    let options = map(&[
        ("max_detections", Value::Int(MAX as i64)),
        ("score_threshold", Value::Float(0.5)),
        ("stride", Value::Int(16)),
        ("nms_radius", Value::Float(16.0)),
    ]);
    b.custom_op("PosenetDecoderOp", &[heat, short, mid], &outs, &options);
    for o in outs {
        b.output(o);
    }
    b.finish()
}

/// Runs a prepared session on flat heatmaps (logit 6 everywhere) and zero offsets: every cell is
/// a peak, so poses sit on cells with every keypoint scored sigmoid(6).
fn run_and_check(s: &mut Session) {
    let f32s = |n: usize, v: f32| v.to_le_bytes().repeat(n);
    s.set_input(0, &f32s(H * W * 17, 6.0)).unwrap();
    s.set_input(1, &f32s(H * W * 34, 0.0)).unwrap();
    s.set_input(2, &f32s(H * W * 64, 0.0)).unwrap();
    s.run().unwrap();
    let dims: Vec<Vec<usize>> = (0..4).map(|i| s.output_info(i).unwrap().dims).collect();
    assert_eq!(dims, vec![vec![1, MAX, 17, 2], vec![1, MAX, 17], vec![1, MAX], vec![1]]);
    let floats = |i: usize| s.output(i).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect::<Vec<f32>>();
    let count = floats(3)[0];
    assert!((1.0..=MAX as f32).contains(&count), "pose count {count}");
    let expected = 1.0 / (1.0 + (-6f32).exp());
    // Every keypoint of the first pose scores sigmoid(6), so the pose does too (mean of 17).
    assert!((floats(2)[0] - expected).abs() < 1e-5, "pose score {}", floats(2)[0]);
}

/// [`model`] written to `decoder.tflite` in `dir`.
fn model_file(dir: &TempDir) -> PathBuf {
    let file = dir.path().join("decoder.tflite");
    std::fs::write(&file, model()).unwrap();
    file
}

fn write_package(dir: &Path, with_plugin: bool, cfg: Option<&str>) {
    let mut pkg = NnPackage::single("model.tflite", model());
    if let Some(text) = cfg {
        pkg = pkg.with_manifest(&manifest(&[("model.tflite", "tflite")], &["pkg.cfg"])).with_file("metadata/pkg.cfg", text.as_bytes().to_vec());
    }
    if with_plugin {
        pkg = pkg.with_file("custom_op/libnnrt_posenet_decoder.so", std::fs::read(plugin()).expect("plugin bytes"));
    }
    pkg.write_dir(dir).expect("package folder");
}

#[test]
fn explicit_library_supplies_kernel_and_output_shapes() {
    let dir = TempDir::new("posenet-explicit").unwrap();
    let file = model_file(&dir);
    let mut s = Session::load(&file).unwrap();
    let ops = s.load_custom_op_library(plugin()).unwrap();
    assert_eq!(ops, vec!["PosenetDecoderOp"]);
    s.prepare().unwrap();
    run_and_check(&mut s);
}

#[test]
fn without_the_plugin_prepare_names_the_op() {
    let dir = TempDir::new("posenet-missing").unwrap();
    let file = model_file(&dir);
    let mut s = Session::load(&file).unwrap();
    let e = s.prepare().unwrap_err();
    assert!(matches!(e, Error::Compile(_)), "{e:?}");
    assert!(e.to_string().contains("PosenetDecoderOp"), "{e}");
}

#[test]
fn package_plugins_load_only_when_allowed() {
    let dir = TempDir::new("posenet-package").unwrap();
    write_package(dir.path(), true, None);

    let mut s = Session::load(dir.path()).unwrap();
    assert_eq!(s.package().custom_op_files, vec!["libnnrt_posenet_decoder.so"]);
    let e = s.prepare().unwrap_err();
    assert!(matches!(e, Error::Plugin(nnrt::PluginError::PackageNotAllowed { .. })), "{e:?}");
    let msg = e.to_string();
    for needle in ["custom_op/libnnrt_posenet_decoder.so", "PosenetDecoderOp", "--allow-package-plugins", "ALLOW_PACKAGE_PLUGINS=1"] {
        assert!(msg.contains(needle), "the refusal should mention {needle}: {msg}");
    }

    // The caller allows it: the same session prepares and runs.
    s.set_config(nnrt::ALLOW_PACKAGE_PLUGINS, "1").unwrap();
    s.prepare().unwrap();
    run_and_check(&mut s);
}

#[test]
fn a_package_cannot_allow_its_own_plugins() {
    let dir = TempDir::new("posenet-selfallow").unwrap();
    write_package(dir.path(), true, Some("ALLOW_PACKAGE_PLUGINS=1\n"));
    let mut s = Session::load(dir.path()).unwrap();
    assert_eq!(s.config().get(nnrt::ALLOW_PACKAGE_PLUGINS), None);
    assert!(matches!(s.prepare(), Err(Error::Plugin(nnrt::PluginError::PackageNotAllowed { .. }))));
}

#[test]
fn plugins_in_a_zipped_package_say_to_unzip() {
    let dir = TempDir::new("posenet-zip").unwrap();
    let pkg = NnPackage::single("model.tflite", model()).with_file("custom_op/libnnrt_posenet_decoder.so", std::fs::read(plugin()).unwrap());
    let zip = dir.path().join("pkg.nnpkg.zip");
    std::fs::write(&zip, pkg.to_zip(ZipMethod::Stored, None).unwrap()).unwrap();
    let mut s = Session::load(&zip).unwrap();
    s.set_config(nnrt::ALLOW_PACKAGE_PLUGINS, "1").unwrap();
    let e = s.prepare().unwrap_err();
    assert!(e.to_string().contains("unzip"), "{e}");
    // An explicit library still works for the zipped package.
    let mut s = Session::load(&zip).unwrap();
    s.load_custom_op_library(plugin()).unwrap();
    s.prepare().unwrap();
    run_and_check(&mut s);
}

/// `target/<profile>/nnpackage_run`, when built (it belongs to nnrt-cli; skipped otherwise).
fn nnpackage_run() -> Option<PathBuf> {
    nnrt_tests::cli_binary("nnpackage_run")
}


#[test]
fn nnpackage_run_refuses_package_plugins_unless_allowed() {
    let Some(bin) = nnpackage_run() else { return };
    let dir = TempDir::new("posenet-cli").unwrap();
    let pkg = dir.path().join("pkg");
    write_package(&pkg, true, None);
    let out = Command::new(&bin).arg(&pkg).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("--allow-package-plugins"), "{err}");
    let out = Command::new(&bin).arg(&pkg).arg("--allow-package-plugins").output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));

    // A bare model with the library given explicitly.
    let file = model_file(&dir);
    let out = Command::new(&bin).arg(&file).arg("--custom-op-lib").arg(plugin()).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(&bin).arg(&file).arg("--custom-op-lib").arg(dir.path().join("missing.so")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.so"));
}

#[test]
fn nnrt_inspect_loads_plugins_to_show_shapes_and_placement() {
    let Some(bin) = nnrt_tests::cli_binary("nnrt-inspect") else { return };
    let dir = TempDir::new("posenet-inspect").unwrap();
    let file = model_file(&dir);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();

    // Without the plugin the model cannot prepare: the outputs keep their open shapes.
    let out = Command::new(&bin).arg(&file).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(stdout.contains("prepare failed") && stdout.contains("PosenetDecoderOp"), "{stdout}");
    assert!(!stdout.contains("prepared ["), "{stdout}");

    // With it (given twice: the option is repeatable), the plugin's shape function sizes the
    // outputs and the op is placed on the plugin.
    let out = Command::new(&bin).arg(&file).arg("--custom-op-lib").arg(plugin()).arg("--custom-op-lib").arg(plugin()).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {}", text(&out.stderr));
    let want = [format!("[1,{MAX},17,2]"), format!("[1,{MAX},17]"), format!("[1,{MAX}]"), "[1]".to_string()];
    for (k, dims) in want.iter().enumerate() {
        let line = stdout.lines().find(|l| l.starts_with(&format!("output {k}:"))).unwrap_or_else(|| panic!("no output {k} line: {stdout}"));
        assert!(line.ends_with(&format!("(prepared {dims})")), "output {k}: {line}");
    }
    let op = stdout.lines().skip_while(|l| *l != "ops:").nth(1).unwrap_or_default();
    assert!(op.contains("PosenetDecoderOp(") && op.trim_end().ends_with("[custom]"), "{stdout}");
    assert!(!stdout.contains("prepare failed"), "{stdout}");

    let out = Command::new(&bin).arg(&file).arg("--custom-op-lib").arg(plugin()).arg("--partition").output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {}", text(&out.stderr));
    let line = stdout.lines().next().unwrap_or_default();
    assert!(line.contains("PosenetDecoderOp") && line.split_whitespace().nth(2) == Some("custom"), "{stdout}");

    // A library that is not there: exit 1, one line naming it.
    let out = Command::new(&bin).arg(&file).arg("--custom-op-lib").arg(dir.path().join("missing.so")).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("missing.so") && stderr.trim_end().lines().count() == 1, "{stderr}");
}
