//! Edge TPU models run through the test driver (`nnpackage_run --device-lib` as a library call):
//! what reaches each output tensor must be the driver's known tensor, re-laid out from the
//! package's tile layout to YXZ, sign bits restored and dequantized where the tensor is float.
//! The models are the corpus' (`../shared/corpus/darwinn`, or `$NNRT_SHARED/corpus/darwinn`;
//! skipped when absent) and one-op models built here around a corpus package.

use std::path::{Path, PathBuf};

use nnrt::Session;
use nnrt_edgetpu_test_driver::{known_plain, seed};
use nnrt_loaders::darwinn::{self, host, Executable};
use nnrt_tests::{manifest, ModelBuilder, NnPackage, TempDir, TensorType};

fn driver() -> PathBuf {
    nnrt_tests::built_plugin("nnrt_edgetpu_test_driver", "nnrt-edgetpu-test-driver")
}

fn case(name: &str) -> Option<PathBuf> {
    let shared = std::env::var_os("NNRT_SHARED").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../shared"));
    let p = shared.join("corpus/darwinn").join(name);
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: {} not found", p.display());
        None
    }
}

fn options(dir: &Path) -> (Vec<u8>, Executable) {
    let bytes = std::fs::read(dir.join("custom_options.flexbuf")).unwrap();
    let exe = darwinn::read_options(&bytes).unwrap().packages[0].runnable().unwrap().clone();
    (bytes, exe)
}

/// The driver's seed for inputs `first` (each input layer's first element, in the layer's type,
/// as the tensor gives it): the first byte of each after nnrt's sign flip.
fn seed_of(exe: &Executable, first: &[Vec<u8>]) -> u8 {
    seed(exe.input_layers.iter().zip(first).map(|(l, e)| {
        let mut e = e.clone();
        host::flip_sign(l.data_type, &mut e);
        e[0]
    }))
}

/// Output layer `name`'s known tensor as nnrt must deliver it (YXZ, two's complement).
fn expected(exe: &Executable, name: &str, seed: u8) -> Vec<u8> {
    let k = exe.output_layers.iter().position(|l| l.name == name).unwrap();
    let l = &exe.output_layers[k];
    let mut v = known_plain(l, k, seed);
    host::flip_sign(l.data_type, &mut v);
    v
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(7).wrapping_add(salt)).collect()
}

/// split_concat: five 8x8 outputs in tile layouts (16 tiles, padded), matched by name (the
/// op's output order differs from the graph's).
#[test]
fn split_concat_round_trip() {
    let Some(dir) = case("split_concat") else { return };
    let (_, exe) = options(&dir);
    let mut s = Session::load(dir.join("model_edgetpu.tflite")).unwrap();
    assert_eq!(s.load_device_library(driver()).unwrap(), vec!["edgetpu-custom-op"]);
    s.prepare().unwrap();
    let mut first = Vec::new();
    for i in 0..s.input_count() {
        let info = s.input_info(i).unwrap();
        let data = pattern(info.dims.iter().product(), 11 * i as u8 + 1);
        first.push((info.name.clone(), data[0]));
        s.set_input(i, &data).unwrap();
    }
    s.run().unwrap();
    let firsts: Vec<Vec<u8>> = exe.input_layers.iter().map(|l| vec![first.iter().find(|(n, _)| *n == l.name).unwrap().1]).collect();
    let sd = seed_of(&exe, &firsts);
    for o in 0..s.output_count() {
        let name = s.output_info(o).unwrap().name;
        assert_eq!(s.output(o).unwrap(), expected(&exe, &name, sd).as_slice(), "output {o} '{name}'");
    }
}

/// A one-op model around deeplab's package (outputs 33x33x256 in 16 tiles and 1x1x256).
#[test]
fn deeplab_tiles_round_trip() {
    let Some(dir) = case("deeplabv3_mnv2_dm05_pascal_quant") else { return };
    let (opts, exe) = options(&dir);
    let tmp = TempDir::new("edgetpu-deeplab").unwrap();
    let mut b = ModelBuilder::new();
    let x = b.input(&exe.input_layers[0].name, TensorType::UINT8, &[1, 513, 513, 3]);
    // The op's outputs in the reverse of the layers' order: matching is by name.
    let outs: Vec<_> = exe.output_layers.iter().rev().map(|l| b.tensor(&l.name, TensorType::UINT8, &[1, l.y_dim, l.x_dim, l.z_dim])).collect();
    b.custom_op("edgetpu-custom-op", &[x], &outs, &opts);
    for &o in &outs {
        b.output(o);
    }
    let path = tmp.path().join("deeplab_op.tflite");
    std::fs::write(&path, b.finish()).unwrap();
    let mut s = Session::load(&path).unwrap();
    s.load_device_library(driver()).unwrap();
    s.prepare().unwrap();
    let data = pattern(513 * 513 * 3, 200);
    s.set_input(0, &data).unwrap();
    s.run().unwrap();
    let sd = seed_of(&exe, &[vec![data[0]]]);
    for o in 0..2 {
        let name = s.output_info(o).unwrap().name;
        assert_eq!(s.output(o).unwrap(), expected(&exe, &name, sd).as_slice(), "output '{name}'");
    }
}

/// mobilenet's package behind float tensors: nnrt quantizes the input and dequantizes the
/// output with the layers' numerics.
#[test]
fn float_tensors_are_quantized_and_dequantized() {
    let Some(dir) = case("mobilenet_v1_0.25_128_quant") else { return };
    let (opts, exe) = options(&dir);
    let (li, lo) = (&exe.input_layers[0], &exe.output_layers[0]);
    let tmp = TempDir::new("edgetpu-float").unwrap();
    let mut b = ModelBuilder::new();
    let x = b.input(&li.name, TensorType::FLOAT32, &[1, 128, 128, 3]);
    let y = b.tensor(&lo.name, TensorType::FLOAT32, &[1, 1001]);
    b.custom_op("edgetpu-custom-op", &[x], &[y], &opts);
    b.output(y);
    let path = tmp.path().join("float_op.tflite");
    std::fs::write(&path, b.finish()).unwrap();
    let mut s = Session::load(&path).unwrap();
    s.load_device_library(driver()).unwrap();
    s.prepare().unwrap();
    let values: Vec<f32> = (0..128 * 128 * 3).map(|i| ((i % 97) as f32 - 48.0) / 50.0).collect();
    s.set_input(0, &values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    s.run().unwrap();
    // The first input element as the layer holds it: round(-0.96 * 128) + 128 = 5.
    let mut q0 = [0u8];
    host::quantize(li.data_type, li.numerics, &values[..1], &mut q0).unwrap();
    assert_eq!(q0, [5]);
    let plain = expected(&exe, &lo.name, seed_of(&exe, &[q0.to_vec()]));
    let n = lo.numerics.unwrap();
    let want: Vec<f32> = plain.iter().map(|&q| (f32::from(q) - n.zero_point as f32) * n.dequantization_factor).collect();
    let got: Vec<f32> = s.output(0).unwrap().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    // Exact: both sides compute (q - zp) · scale in f32.
    assert_eq!(got, want);
}

/// The compiled LSTM: its state outputs (`*_variable_output`, not graph outputs) feed its
/// state inputs on the next run; the driver adds 1 to each state element's first byte, so the
/// second run's seed is the first's plus 2.
#[test]
fn lstm_state_is_fed_back() {
    let Some(dir) = case("keras_lstm_mnist_ptq") else { return };
    let (_, exe) = options(&dir);
    let mut s = Session::load(dir.join("model_edgetpu.tflite")).unwrap();
    s.load_device_library(driver()).unwrap();
    s.prepare().unwrap();
    s.set_input(0, &pattern(28 * 28, 3)).unwrap();
    let name = s.output_info(0).unwrap().name;
    s.run().unwrap();
    let first = s.output(0).unwrap().to_vec();
    let seed1 = (0..=255u8).find(|&sd| expected(&exe, &name, sd) == first).expect("run 1 gives the known tensor for some seed");
    s.run().unwrap();
    assert_eq!(s.output(0).unwrap(), expected(&exe, &name, seed1.wrapping_add(2)).as_slice());
}

/// Without a driver, prepare fails naming the device, chip and runtime version and what to do.
#[test]
fn without_a_driver_prepare_says_what_to_do() {
    let Some(dir) = case("mobilenet_v1_0.25_128_quant") else { return };
    let mut s = Session::load(dir.join("model_edgetpu.tflite")).unwrap();
    let e = s.prepare().unwrap_err().to_string();
    for part in ["Edge TPU", "'beagle'", "version 12", "--device-lib", "CPU version"] {
        assert!(e.contains(part), "{part} missing in: {e}");
    }
    // The session config key loads it at prepare instead.
    let mut s = Session::load(dir.join("model_edgetpu.tflite")).unwrap();
    s.set_config(nnrt::DEVICE_LIB, &driver().to_string_lossy()).unwrap();
    s.prepare().unwrap();
}

/// A custom-op plugin is not a driver, and a driver's init sees bad options as an error.
#[test]
fn drivers_are_checked() {
    let Some(dir) = case("split_concat") else { return };
    let mut s = Session::load(dir.join("model_edgetpu.tflite")).unwrap();
    let posenet = nnrt_tests::built_plugin("nnrt_posenet_decoder", "nnrt-posenet-decoder");
    let e = s.load_device_library(&posenet).unwrap_err().to_string();
    assert!(e.contains("no device op") && e.contains("--custom-op-lib"), "{e}");
}

/// A package's own cfg cannot load a driver (it is code): DEVICE_LIB there is ignored.
#[test]
fn a_package_cannot_load_its_own_driver() {
    let Some(dir) = case("split_concat") else { return };
    let tmp = TempDir::new("edgetpu-pkg-cfg").unwrap();
    let cfg = format!("DEVICE_LIB={}\n", driver().display());
    NnPackage::single("model.tflite", std::fs::read(dir.join("model_edgetpu.tflite")).unwrap())
        .with_manifest(&manifest(&[("model.tflite", "tflite")], &["pkg.cfg"]))
        .with_file("metadata/pkg.cfg", cfg.into_bytes())
        .write_dir(tmp.path())
        .unwrap();
    let mut s = Session::load(tmp.path()).unwrap();
    assert_eq!(s.config().get(nnrt::DEVICE_LIB), None);
    assert!(matches!(s.prepare(), Err(nnrt::Error::NoDeviceDriver { .. })));
}
