//! Coral's PoseNet and BodyPix models from `../shared/corpus` (skipped with a message when it is
//! absent), run end to end with the decoder plugin and compared with the poses in each folder's
//! `coral_reference_poses.csv` (Coral's test data: pose id, pose score, keypoint id, keypoint
//! score, x and y normalized by the input's width and height).
//!
//! Coral computed those poses from `posenet/test_image.bmp` (kept in `tests/data`) resized by its
//! test code: TFLite's float RESIZE_BILINEAR with half-pixel centres, the result truncated to
//! uint8. Fed that input, nnrt must reproduce everything within 0.02: the pose count, pose
//! scores, every keypoint's position and every keypoint's score (it does to about 0.007; the
//! rest is TFLite's quantized kernels of the time against today's). The corpus input was resized
//! with PIL instead, which moves keypoint scores (heatmap samples at slightly different
//! positions) by up to 0.10 while positions and pose scores stay within 0.02: with it, the test
//! checks those and keypoint scores within 0.15 only.

use std::io::Read;
use std::path::{Path, PathBuf};

use nnrt::Session;

fn plugin() -> PathBuf {
    nnrt_tests::built_plugin("nnrt_posenet_decoder", "nnrt-posenet-decoder")
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

/// Coral's test image as RGB rows (top first), with its height and width.
fn coral_image() -> (Vec<u8>, usize, usize) {
    let zip = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/coral_test_image.zip");
    let file = std::fs::File::open(&zip).unwrap_or_else(|e| panic!("{}: {e}", zip.display()));
    let mut archive = zip::ZipArchive::new(file).expect("a zip archive");
    let mut bmp = Vec::new();
    archive.by_name("test_image.bmp").expect("test_image.bmp in the archive").read_to_end(&mut bmp).expect("readable");
    let u32_at = |o: usize| u32::from_le_bytes([bmp[o], bmp[o + 1], bmp[o + 2], bmp[o + 3]]) as usize;
    let (offset, w, h) = (u32_at(10), u32_at(18), u32_at(22));
    assert_eq!(u16::from_le_bytes([bmp[28], bmp[29]]), 24, "a 24-bit BMP");
    let stride = (w * 3).div_ceil(4) * 4;
    let mut rgb = Vec::with_capacity(h * w * 3);
    // Rows are stored bottom-up, pixels as BGR.
    for y in (0..h).rev() {
        for px in bmp[offset + y * stride..][..w * 3].chunks_exact(3) {
            rgb.extend_from_slice(&[px[2], px[1], px[0]]);
        }
    }
    (rgb, h, w)
}

/// Coral's test resize (libcoral `ResizeImage`): TFLite's float RESIZE_BILINEAR with
/// half-pixel centres in the order of its optimized kernel (the four corner products added to
/// zero one after another, each weight a product of two factors), then truncated to uint8.
fn coral_resize((rgb, h, w): &(Vec<u8>, usize, usize), oh: usize, ow: usize) -> Vec<u8> {
    let axis = |o: usize, n: usize, size: usize| {
        let scale = n as f32 / size as f32;
        let v = (o as f32 + 0.5) * scale - 0.5;
        let lo = (v.floor() as i64).max(0) as usize;
        let hi = (v.ceil() as i64).min(n as i64 - 1) as usize;
        (lo, hi, v - lo as f32)
    };
    let mut out = Vec::with_capacity(oh * ow * 3);
    for y in 0..oh {
        let (y0, y1, dy) = axis(y, *h, oh);
        for x in 0..ow {
            let (x0, x1, dx) = axis(x, *w, ow);
            let corners = [(y0, x0, (1.0 - dy) * (1.0 - dx)), (y0, x1, (1.0 - dy) * dx), (y1, x0, dy * (1.0 - dx)), (y1, x1, dy * dx)];
            for c in 0..3 {
                let v = corners.iter().fold(0.0f32, |acc, &(yy, xx, s)| acc + rgb[(yy * w + xx) * 3 + c] as f32 * s);
                // C++'s float to uint8 conversion truncates.
                out.push(v as u8);
            }
        }
    }
    out
}

/// Tolerances: (pose score, keypoint position, keypoint score).
type Tol = (f32, f32, f32);

fn check(dir: &Path, input: Option<&[u8]>, (tol_pose, tol_pos, tol_kp): Tol) {
    let mut s = Session::load(dir.join("model.tflite")).unwrap();
    s.load_custom_op_library(plugin()).unwrap();
    s.prepare().unwrap();
    let info = s.input_info(0).unwrap();
    let (h, w) = (info.dims[1] as f32, info.dims[2] as f32);
    let corpus_input = npy_data(&dir.join("input_0.npy"));
    s.set_input(0, input.unwrap_or(&corpus_input)).unwrap();
    s.run().unwrap();
    let (kp, ks, ps) = (floats(s.output(0).unwrap()), floats(s.output(1).unwrap()), floats(s.output(2).unwrap()));
    let count = floats(s.output(3).unwrap())[0] as usize;
    let want = reference(&dir.join("coral_reference_poses.csv"));
    let name = format!("{} ({} input)", dir.file_name().unwrap().to_string_lossy(), if input.is_some() { "Coral's" } else { "corpus" });
    assert_eq!(count, want.len(), "{name}: pose count");
    for (i, r) in want.iter().enumerate() {
        assert!((ps[i] - r.score).abs() <= tol_pose, "{name}: pose {i} score {} vs {}", ps[i], r.score);
        for (k, &(score, x, y)) in r.keypoints.iter().enumerate() {
            let (gy, gx) = (kp[(i * 17 + k) * 2] / h, kp[(i * 17 + k) * 2 + 1] / w);
            assert!((gx - x).abs() <= tol_pos && (gy - y).abs() <= tol_pos, "{name}: pose {i} keypoint {k} at ({gx}, {gy}) vs ({x}, {y})");
            assert!((ks[i * 17 + k] - score).abs() <= tol_kp, "{name}: pose {i} keypoint {k} score {} vs {score}", ks[i * 17 + k]);
        }
    }
}

#[test]
fn coral_posenet_models_reproduce_coral_poses() {
    let Some(corpus) = nnrt_tests::corpus_dir() else {
        println!("skipped: ../shared/corpus is absent");
        return;
    };
    let image = coral_image();
    let mut n = 0;
    for name in [
        "coral_posenet_mobilenet_v1_075_353_481_16_quant_decoder",
        "coral_posenet_mobilenet_v1_075_481_641_16_quant_decoder",
        "coral_posenet_mobilenet_v1_075_721_1281_16_quant_decoder",
        "coral_bodypix_mobilenet_v1_075_512_512_16_quant_decoder",
    ] {
        let dir = corpus.join("tflite").join(name);
        if dir.join("coral_reference_poses.csv").is_file() {
            let info = Session::load(dir.join("model.tflite")).unwrap().input_info(0).unwrap();
            let input = coral_resize(&image, info.dims[1], info.dims[2]);
            check(&dir, Some(&input), (0.02, 0.02, 0.02));
            check(&dir, None, (0.02, 0.02, 0.15));
            n += 1;
        } else {
            println!("skipped: {} is absent", dir.display());
        }
    }
    println!("{n} Coral models checked");
}
