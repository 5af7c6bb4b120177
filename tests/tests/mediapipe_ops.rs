//! The MediaPipe custom ops LiteRT runs through XNNPACK without registration
//! (`MaxPoolingWithArgmax2D`, `MaxUnpooling2D`, `Convolution2DTransposeBias`) run on the CPU
//! backend with no plugin loaded: TFLite models built in memory whose declared output shapes
//! are unknown, so the backend must infer them.

use nnrt::Session;
use nnrt_tests::{ModelBuilder, TempDir, TensorType};

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// TfLitePoolParams as MediaPipe stores it: padding (1 SAME, 2 VALID), stride_w, stride_h,
/// filter_w, filter_h, activation.
fn pool_options(padding: i32, k: i32, act: i32) -> Vec<u8> {
    [padding, k, k, k, k, act].iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// x [1, 4, 6, 2] → MaxPoolingWithArgmax2D (2×2, SAME, RELU) → MaxUnpooling2D; outputs the
/// pooled values, the indices and the unpooled map.
fn segnet_block(dir: &std::path::Path) -> std::path::PathBuf {
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[1, 4, 6, 2]);
    b.shape_signature(x, &[1, -1, -1, 2]);
    let unknown = |b: &mut ModelBuilder, name: &str| {
        let t = b.tensor(name, TensorType::FLOAT32, &[1, 1, 1, 2]);
        b.shape_signature(t, &[1, -1, -1, 2]);
        t
    };
    let (v, i, y) = (unknown(&mut b, "values"), unknown(&mut b, "indices"), unknown(&mut b, "unpooled"));
    b.custom_op("MaxPoolingWithArgmax2D", &[x], &[v, i], &pool_options(1, 2, 1));
    b.custom_op("MaxUnpooling2D", &[v, i], &[y], &pool_options(1, 2, 0));
    b.output(v).output(i).output(y);
    let p = dir.join("segnet.tflite");
    std::fs::write(&p, b.finish()).unwrap();
    p
}

#[test]
fn argmax_pooling_and_unpooling_run_without_a_plugin() {
    let dir = TempDir::new("mediapipe-segnet").unwrap();
    let mut s = Session::load(segnet_block(dir.path())).unwrap();
    s.prepare().unwrap();
    assert!(s.placements().unwrap().iter().all(|p| p.backend == "cpu"));
    assert_eq!(s.output_info(0).unwrap().dims, vec![1, 2, 3, 2]);
    assert_eq!(s.output_info(1).unwrap().dims, vec![1, 2, 3, 2]);
    assert_eq!(s.output_info(2).unwrap().dims, vec![1, 4, 6, 2]);
    // Distinct values, channel 1 the negation of channel 0 (so its maxima sit elsewhere).
    let x: Vec<f32> = (0..24).flat_map(|p| {
        let v = ((p * 7) % 24) as f32 - 11.5;
        [v, -v]
    }).collect();
    s.set_input(0, &f32_bytes(&x)).unwrap();
    s.run().unwrap();
    let (values, indices, unpooled) = (floats(s.output(0).unwrap()), floats(s.output(1).unwrap()), floats(s.output(2).unwrap()));
    let at = |y: usize, x_: usize, c: usize| x[(y * 6 + x_) * 2 + c];
    for oy in 0..2 {
        for ox in 0..3 {
            for c in 0..2 {
                let cells = [(0, 0), (0, 1), (1, 0), (1, 1)].map(|(dy, dx)| at(2 * oy + dy, 2 * ox + dx, c));
                let (pos, max) = cells.iter().enumerate().fold((0, f32::MIN), |(bp, bm), (p, &v)| if v > bm { (p, v) } else { (bp, bm) });
                let k = (oy * 3 + ox) * 2 + c;
                assert_eq!(values[k], max.max(0.0), "value ({oy}, {ox}, {c})");
                assert_eq!(indices[k], pos as f32 + 0.1, "index ({oy}, {ox}, {c})");
                for (p, (dy, dx)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
                    let want = if p == pos { max.max(0.0) } else { 0.0 };
                    assert_eq!(unpooled[((2 * oy + dy) * 6 + 2 * ox + dx) * 2 + c], want, "unpooled ({oy}, {ox}, {c}) cell {p}");
                }
            }
        }
    }
}

#[test]
fn the_output_shapes_follow_a_new_input_shape() {
    let dir = TempDir::new("mediapipe-resize").unwrap();
    let mut s = Session::load(segnet_block(dir.path())).unwrap();
    s.set_input_shape(0, &[1, 5, 3, 2]).unwrap();
    s.prepare().unwrap();
    // SAME pooling rounds up; unpooling doubles the pooled map.
    assert_eq!(s.output_info(0).unwrap().dims, vec![1, 3, 2, 2]);
    assert_eq!(s.output_info(2).unwrap().dims, vec![1, 6, 4, 2]);
    s.set_input(0, &f32_bytes(&[1.0; 30])).unwrap();
    s.run().unwrap();
    // All cells equal: each window's first cell holds the value.
    let unpooled = floats(s.output(2).unwrap());
    assert_eq!(unpooled.iter().filter(|&&v| v == 1.0).count(), 3 * 2 * 2);
}

#[test]
fn bad_options_fail_at_prepare_naming_the_op() {
    let dir = TempDir::new("mediapipe-bad").unwrap();
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[1, 3, 3, 2]);
    let w = b.constant_f32("w", &[4, 2, 2, 2], &[0.5; 32]);
    let bias = b.constant_f32("b", &[4], &[0.0; 4]);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 6, 6, 4]);
    // Only padding and stride_width: stride_height is missing.
    let options: Vec<u8> = [1i32, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    b.custom_op("Convolution2DTransposeBias", &[x, w, bias], &[y], &options);
    b.output(y);
    let p = dir.path().join("bad.tflite");
    std::fs::write(&p, b.finish()).unwrap();
    let e = Session::load(&p).unwrap().prepare().unwrap_err().to_string();
    assert!(e.contains("Convolution2DTransposeBias") && e.contains("8 bytes"), "{e}");
}
