//! Coral's PoseNet and BodyPix models from `../shared/corpus` (skipped with a message when it is
//! absent), run end to end with the decoder plugin and compared with the poses in each folder's
//! `coral_reference_poses.csv` (Coral's test data: pose id, pose score, keypoint id, keypoint
//! score, x and y normalized by the input's width and height).
//!
//! What must match: the pose count, pose scores within 0.02 and every keypoint's position within
//! 0.02. Keypoint scores are checked within 0.15 only: Coral dumped its reference from its own
//! resize of the test image, while the corpus input was resized with PIL, and a keypoint's score
//! is a heatmap sample at a slightly moved position (the decoder itself agrees with libcoral's to
//! 1e-4 on identical heatmaps, and nnrt's heatmaps equal LiteRT's reference kernels' bit for bit
//! on the corpus input). Coral's own test is looser still: pose scores within 0.1, positions of
//! keypoints scoring above 0.7 within 0.04.

use std::path::{Path, PathBuf};

use nnrt::Session;

fn plugin() -> PathBuf {
    let name = format!("{}nnrt_posenet_decoder{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps folder");
    [deps.join(&name), deps.parent().expect("profile folder").join(&name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not built next to {}", deps.display()))
}

/// The data bytes of a `.npy` file (any dtype; the caller knows it).
fn npy_data(p: &Path) -> Vec<u8> {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(b.starts_with(b"\x93NUMPY"), "{} is not a .npy file", p.display());
    let (len, start) = if b[6] == 1 { (u16::from_le_bytes([b[8], b[9]]) as usize, 10) } else { (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12) };
    b[start + len..].to_vec()
}

struct RefPose {
    score: f32,
    /// (score, x, y) per keypoint.
    keypoints: Vec<(f32, f32, f32)>,
}

fn reference(p: &Path) -> Vec<RefPose> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut poses: Vec<RefPose> = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let f: Vec<f32> = line.split(',').map(|v| v.trim().parse().expect("a number")).collect();
        let id = f[0] as usize;
        if poses.len() <= id {
            poses.push(RefPose { score: f[1], keypoints: Vec::new() });
        }
        poses[id].keypoints.push((f[3], f[4], f[5]));
    }
    poses
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn check(dir: &Path) {
    let mut s = Session::load(dir.join("model.tflite")).unwrap();
    s.load_custom_op_library(plugin()).unwrap();
    s.prepare().unwrap();
    let info = s.input_info(0).unwrap();
    let (h, w) = (info.dims[1] as f32, info.dims[2] as f32);
    s.set_input(0, &npy_data(&dir.join("input_0.npy"))).unwrap();
    s.run().unwrap();
    let (kp, ks, ps) = (floats(s.output(0).unwrap()), floats(s.output(1).unwrap()), floats(s.output(2).unwrap()));
    let count = floats(s.output(3).unwrap())[0] as usize;
    let want = reference(&dir.join("coral_reference_poses.csv"));
    let name = dir.file_name().unwrap().to_string_lossy();
    assert_eq!(count, want.len(), "{name}: pose count");
    for (i, r) in want.iter().enumerate() {
        assert!((ps[i] - r.score).abs() <= 0.02, "{name}: pose {i} score {} vs {}", ps[i], r.score);
        for (k, &(score, x, y)) in r.keypoints.iter().enumerate() {
            let (gy, gx) = (kp[(i * 17 + k) * 2] / h, kp[(i * 17 + k) * 2 + 1] / w);
            assert!((gx - x).abs() <= 0.02 && (gy - y).abs() <= 0.02, "{name}: pose {i} keypoint {k} at ({gx}, {gy}) vs ({x}, {y})");
            assert!((ks[i * 17 + k] - score).abs() <= 0.15, "{name}: pose {i} keypoint {k} score {} vs {score}", ks[i * 17 + k]);
        }
    }
}

#[test]
fn coral_posenet_models_reproduce_coral_poses() {
    let Some(corpus) = nnrt_tests::corpus_dir() else {
        println!("skipped: ../shared/corpus is absent");
        return;
    };
    let mut n = 0;
    for name in [
        "coral_posenet_mobilenet_v1_075_353_481_16_quant_decoder",
        "coral_posenet_mobilenet_v1_075_481_641_16_quant_decoder",
        "coral_posenet_mobilenet_v1_075_721_1281_16_quant_decoder",
        "coral_bodypix_mobilenet_v1_075_512_512_16_quant_decoder",
    ] {
        let dir = corpus.join("tflite").join(name);
        if dir.join("coral_reference_poses.csv").is_file() {
            check(&dir);
            n += 1;
        } else {
            println!("skipped: {} is absent", dir.display());
        }
    }
    println!("{n} Coral models checked");
}
