//! Inputs whose signature has unknown dims, resized after prepare (as `nnfw_set_input_tensorinfo`
//! does): every batch size gives what the same model gives when prepared for that size
//! (memory over many alternating sizes: `memory_flat.rs`).

use nnrt::Session;
use nnrt_tests::{Act, BuiltinOperator as Op, ModelBuilder, Options, TensorIdx, TensorType, XorShift};

/// x[-1, 12] -> FC(12->8, relu) -> FC(8->4) -> softmax, batch unknown.
fn model() -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let mut rng = XorShift::new(7);
    let x = b.input("x", TensorType::FLOAT32, &[1, 12]);
    b.shape_signature(x, &[-1, 12]);
    let w1 = b.constant_f32("w1", &[8, 12], &rng.fill(96, -0.5, 0.5));
    let b1 = b.constant_f32("b1", &[8], &rng.fill(8, -0.1, 0.1));
    let h = b.tensor("h", TensorType::FLOAT32, &[1, 8]);
    b.shape_signature(h, &[-1, 8]);
    b.op(Op::FULLY_CONNECTED, &[x, w1, b1], &[h], Options::FullyConnected { act: Act::RELU, keep_num_dims: false });
    let w2 = b.constant_f32("w2", &[4, 8], &rng.fill(32, -0.5, 0.5));
    let l = b.tensor("logits", TensorType::FLOAT32, &[1, 4]);
    b.shape_signature(l, &[-1, 4]);
    b.op(Op::FULLY_CONNECTED, &[h, w2, TensorIdx::ABSENT], &[l], Options::FullyConnected { act: Act::NONE, keep_num_dims: false });
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 4]);
    b.shape_signature(y, &[-1, 4]);
    b.op(Op::SOFTMAX, &[l], &[y], Options::Softmax { beta: 1.0 });
    b.output(y);
    b.finish()
}

/// A session on 1 thread, prepared for `batch` rows when given (else the model's 1).
fn prepared(bytes: &[u8], batch: Option<usize>) -> Session {
    let model = nnrt_loaders::tflite::load_bytes("dynamic.tflite", bytes.to_vec()).expect("loads");
    let mut s = Session::from_model(model).expect("model");
    s.set_threads(1).unwrap();
    if let Some(batch) = batch {
        s.set_input_shape(0, &[batch, 12]).unwrap();
    }
    s.prepare().unwrap();
    s
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn run(s: &mut Session, input: &[f32]) -> Vec<u8> {
    s.set_input(0, &f32_bytes(input)).expect("input size matches the new shape");
    s.run().expect("runs");
    s.output(0).expect("output").to_vec()
}

#[test]
fn resizing_after_prepare_matches_a_fixed_size_preparation() {
    let bytes = model();
    let mut s = prepared(&bytes, None);
    let mut rng = XorShift::new(11);
    for batch in [1usize, 3, 7, 1] {
        let input = rng.fill(batch * 12, -1.0, 1.0);
        s.set_input_shape(0, &[batch, 12]).unwrap();
        assert_eq!(s.output_info(0).unwrap().dims, vec![batch, 4], "output info follows the new shape");
        let got = run(&mut s, &input);
        // The same model prepared from scratch for this batch size.
        let mut fixed = prepared(&bytes, Some(batch));
        let want = run(&mut fixed, &input);
        // Same kernels, same order of operations: bit-identical.
        assert_eq!(got, want, "batch {batch}");
    }
}
