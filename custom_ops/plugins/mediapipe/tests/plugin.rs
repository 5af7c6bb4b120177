//! The MediaPipe plugin as users load it: one-op models built in memory, and MediaPipe's selfie
//! segmentation model from `../shared/corpus` when it exists (skipped with a message otherwise).

use std::path::{Path, PathBuf};

use nnrt::{Error, RunError, Session};
use nnrt_tests::{ModelBuilder, TempDir, TensorType};

/// The plugin Cargo built for this test (beside the test executable, else `target/<profile>/`).
fn plugin() -> PathBuf {
    nnrt_tests::built_plugin("nnrt_mediapipe_ops", "nnrt-mediapipe-ops")
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The model `b` holds, written to `name` in `dir`.
fn write_model(b: &ModelBuilder, dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, b.finish()).unwrap();
    p
}

/// One custom op `op` (with `options`) on a float input (`name`, `dims`) and a float [1, 4, 4]
/// `matrix`, giving a float `y` of `y_dims`: the model written to `file` in `dir`.
fn matrix_op_model(dir: &Path, file: &str, op: &str, (name, dims): (&str, &[i32]), y_dims: &[i32], options: &[u8]) -> PathBuf {
    let mut b = ModelBuilder::new();
    let x = b.input(name, TensorType::FLOAT32, dims);
    let m = b.input("matrix", TensorType::FLOAT32, &[1, 4, 4]);
    let y = b.tensor("y", TensorType::FLOAT32, y_dims);
    b.custom_op(op, &[x, m], &[y], options);
    b.output(y);
    write_model(&b, dir, file)
}

/// `Convolution2DTransposeBias` on x [1, 3, 4, 2] with 3x3 weights, stride 2, SAME padding; the
/// output's shape is unknown in the model, so the plugin's shape function must give it.
fn transpose_conv_model(dir: &Path) -> (PathBuf, Vec<f32>, Vec<f32>, Vec<f32>) {
    let w: Vec<f32> = (0..2 * 3 * 3 * 2).map(|i| ((i * 7 % 5) as f32 - 2.0) * 0.5).collect();
    let bias = vec![0.25, -1.0];
    let x: Vec<f32> = (0..3 * 4 * 2).map(|i| (i % 6) as f32 - 2.5).collect();
    let mut b = ModelBuilder::new();
    let xi = b.input("x", TensorType::FLOAT32, &[1, 3, 4, 2]);
    let wi = b.constant_f32("w", &[2, 3, 3, 2], &w);
    let bi = b.constant_f32("b", &[2], &bias);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 1, 1, 2]);
    b.shape_signature(y, &[1, -1, -1, 2]);
    let options: Vec<u8> = [1i32, 2, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    b.custom_op("Convolution2DTransposeBias", &[xi, wi, bi], &[y], &options);
    b.output(y);
    let p = write_model(&b, dir, "tconv.tflite");
    (p, x, w, bias)
}

/// Runs the transposed-convolution model on the plugin's kernel (`with_plugin`) or the CPU
/// backend's built-in one, checks where it ran and compares with the definition.
fn check_transpose_conv_bias(with_plugin: bool) {
    let dir = TempDir::new("mediapipe-tconv").unwrap();
    let (model, x, w, bias) = transpose_conv_model(dir.path());
    let mut s = Session::load(&model).unwrap();
    if with_plugin {
        let ops = s.load_custom_op_library(plugin()).unwrap();
        assert!(ops.contains(&"Convolution2DTransposeBias".to_string()), "{ops:?}");
    }
    s.prepare().unwrap();
    // A loaded plugin's kernel wins over the CPU backend's built-in one of the same name.
    let placed = s.placements().unwrap();
    assert_eq!(placed[0].backend, if with_plugin { "custom" } else { "cpu" }, "{placed:?}");
    // H: 2 * (3 - 1) + 3 - max(0, 3 - 2 % 2 - 1) = 5; W: 2 * 3 + 3 - max(0, 3 - 3 % 2 - 1) = 8.
    let dims = s.output_info(0).unwrap().dims;
    assert_eq!(dims, vec![1, 5, 8, 2]);
    s.set_input(0, &f32_bytes(&x)).unwrap();
    s.run().unwrap();
    let got = floats(s.output(0).unwrap());

    // The definition: out[oy, ox, o] = bias[o] + sum of x[iy, ix, c] * w[o, fy, fx, c] over
    // oy = 2 iy + fy - pad_top, ox = 2 ix + fx - pad_left, with pad = total / 2 = (2 / 2, 1 / 2).
    let (pad_t, pad_l) = (1usize, 0usize);
    let mut want = vec![0f32; 5 * 8 * 2];
    for (i, v) in want.iter_mut().enumerate() {
        *v = bias[i % 2];
    }
    for iy in 0..3usize {
        for ix in 0..4usize {
            for fy in 0..3usize {
                for fx in 0..3usize {
                    let (Some(oy), Some(ox)) = ((2 * iy + fy).checked_sub(pad_t), (2 * ix + fx).checked_sub(pad_l)) else { continue };
                    if oy >= 5 || ox >= 8 {
                        continue;
                    }
                    for o in 0..2 {
                        for c in 0..2 {
                            want[(oy * 8 + ox) * 2 + o] += x[(iy * 4 + ix) * 2 + c] * w[((o * 3 + fy) * 3 + fx) * 2 + c];
                        }
                    }
                }
            }
        }
    }
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        // A few products of small exact values: float32 rounding stays far below 1e-5.
        assert!((a - b).abs() < 1e-5, "element {i}: {a} vs {b}");
    }
}

#[test]
fn transpose_conv_bias_runs_on_the_plugin_with_inferred_output_shape() {
    check_transpose_conv_bias(true);
}

#[test]
fn transpose_conv_bias_runs_without_a_plugin_on_the_cpu_backend() {
    check_transpose_conv_bias(false);
}

#[test]
fn without_the_plugin_prepare_names_the_op() {
    // TransformTensorBilinear has no built-in kernel (LiteRT's XNNPACK has none either).
    let dir = TempDir::new("mediapipe-missing").unwrap();
    let p = matrix_op_model(dir.path(), "tt.tflite", "TransformTensorBilinear", ("x", &[1, 4, 4, 1]), &[1, 2, 2, 1], &[]);
    let e = Session::load(&p).unwrap().prepare().unwrap_err();
    assert!(e.to_string().contains("TransformTensorBilinear"), "{e}");
}

#[test]
fn a_kernel_error_is_a_run_error_naming_the_op() {
    // TransformLandmarks version 1 (rank-4 landmarks) needs a 'scale' option; give none.
    let dir = TempDir::new("mediapipe-error").unwrap();
    let options = nnrt_plugin_sdk::flexbuffers::build::map(&[("dimensions", nnrt_plugin_sdk::flexbuffers::build::Value::Int(3))]);
    let p = matrix_op_model(dir.path(), "tl.tflite", "TransformLandmarks", ("landmarks", &[1, 1, 2, 3]), &[1, 1, 2, 3], &options);
    let mut s = Session::load(&p).unwrap();
    s.load_custom_op_library(plugin()).unwrap();
    s.prepare().unwrap();
    s.set_input(0, &f32_bytes(&[0.0; 6])).unwrap();
    s.set_input(1, &f32_bytes(&[0.0; 16])).unwrap();
    match s.run() {
        Err(Error::Run(RunError::Kernel { kind, reason, .. })) => {
            assert_eq!(kind, "TransformLandmarks");
            assert!(reason.contains("scale") && reason.contains("plugin 'mediapipe'"), "{reason}");
        }
        other => panic!("expected a run error naming TransformLandmarks, got {other:?}"),
    }
}

/// Reads a float32 `.npy` file: dims and values.
fn read_npy(p: &Path) -> (Vec<usize>, Vec<f32>) {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    nnrt_tests::read_npy_f32(&bytes).unwrap_or_else(|| panic!("{} is not a float32 .npy", p.display()))
}

/// MediaPipe's selfie segmentation against LiteRT's (XNNPACK) output, with its
/// Convolution2DTransposeBias ops on the plugin or on the CPU backend's built-in kernel.
fn check_selfie(with_plugin: bool) {
    let Some(corpus) = nnrt_tests::corpus_dir() else {
        println!("skipped: ../shared/corpus is absent");
        return;
    };
    let dir = corpus.join("tflite/mediapipe_selfie_segmentation");
    if !dir.is_dir() {
        println!("skipped: {} is absent", dir.display());
        return;
    }
    let mut s = Session::load(dir.join("model.tflite")).unwrap();
    if with_plugin {
        s.load_custom_op_library(plugin()).unwrap();
    }
    s.prepare().unwrap();
    let (_, input) = read_npy(&dir.join("input_0.npy"));
    s.set_input(0, &f32_bytes(&input)).unwrap();
    s.run().unwrap();
    let got = floats(s.output(0).unwrap());
    let (dims, want) = read_npy(&dir.join("expected_xnnpack_0.npy"));
    assert_eq!(s.output_info(0).unwrap().dims, dims);
    let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    // The mask is a sigmoid after ~240 float ops whose XNNPACK reference sums in other orders;
    // the transposed convolution itself follows TFLite's reference loop. Differences stay in
    // the 1e-5 range; 1e-4 leaves room for that float noise and still catches any wrong pixel.
    assert!(worst < 1e-4, "max abs error {worst}");
}

#[test]
fn selfie_segmentation_matches_litert_with_the_plugin() {
    check_selfie(true);
}

#[test]
fn selfie_segmentation_matches_litert_without_a_plugin() {
    check_selfie(false);
}
