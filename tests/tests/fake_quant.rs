//! FAKE_QUANT through the TFLite reader: values land on the nudged grid, and a narrow range is
//! refused at prepare as TFLite refuses it.

use nnrt::Session;
use nnrt_tests::{BuiltinOperator, ModelBuilder, Options, TempDir, TensorType};

fn model(dir: &std::path::Path, min: f32, max: f32, num_bits: i32, narrow_range: bool) -> std::path::PathBuf {
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[6]);
    let y = b.tensor("y", TensorType::FLOAT32, &[6]);
    b.op(BuiltinOperator::FAKE_QUANT, &[x], &[y], Options::FakeQuant { min, max, num_bits, narrow_range });
    b.output(y);
    let p = dir.join("fq.tflite");
    std::fs::write(&p, b.finish()).unwrap();
    p
}

#[test]
fn values_snap_to_the_grid() {
    // [-0.4, 1.1] over 4 bits: 15 steps of 0.1, and 0 is level 4, so nothing is nudged.
    let dir = TempDir::new("fake-quant").unwrap();
    let mut s = Session::load(model(dir.path(), -0.4, 1.1, 4, false)).unwrap();
    s.prepare().unwrap();
    let x: [f32; 6] = [-3.0, -0.05, 0.0, 0.26, 0.349, 7.0];
    s.set_input(0, &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    s.run().unwrap();
    let got: Vec<f32> = s.output(0).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    // Rounding is on the distance from the range's minimum, half away from zero: -0.05 is 3.5
    // steps up and goes to step 4 (0.0). The ends clamp.
    for (g, w) in got.iter().zip([-0.4, 0.0, 0.0, 0.3, 0.3, 1.1]) {
        assert!((g - w).abs() < 1e-6, "{got:?}");
    }
}

#[test]
fn a_narrow_range_is_refused_at_prepare() {
    let dir = TempDir::new("fake-quant-narrow").unwrap();
    let e = Session::load(model(dir.path(), -1.0, 1.0, 8, true)).unwrap().prepare().unwrap_err().to_string();
    assert!(e.contains("FakeQuant") && e.contains("narrow_range"), "{e}");
}
