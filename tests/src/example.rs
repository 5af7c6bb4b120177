//! The example model shipped in `examples/models/`: a tiny MobileNet-style float32 CNN made by
//! [`ModelBuilder`], its nnpackage folder and a fixed input. `make_example_models` writes them and
//! the `example_models` test checks the shipped bytes are exactly what this code makes.

use std::path::{Path, PathBuf};

use crate::builder::{BuiltinOperator as Op, ModelBuilder, TensorIdx, TensorType};
use crate::npy::npy_f32;
use crate::options::{Act, Options, Padding};
use crate::package::{manifest, NnPackage};
use crate::rng::XorShift;

/// Shape of the example model's input (NHWC).
pub const INPUT_DIMS: [usize; 4] = [1, 32, 32, 3];
/// Classes of the example model's output.
pub const CLASSES: usize = 10;
const WEIGHT_SEED: u64 = 0x6E6E_7274_0000_0001;
const INPUT_SEED: u64 = 0x6E6E_7274_0000_0002;

/// He-uniform weights for a layer with `fan_in` inputs per output: uniform in
/// ±sqrt(6 / fan_in), so activations keep their scale through ReLU layers.
fn he(rng: &mut XorShift, n: usize, fan_in: usize) -> Vec<f32> {
    let bound = (6.0 / fan_in as f32).sqrt();
    rng.fill(n, -bound, bound)
}

/// A conv layer's filter (OHWI) and bias constants.
fn conv_params(b: &mut ModelBuilder, rng: &mut XorShift, name: &str, dims: [i32; 4], fan_in: usize) -> (TensorIdx, TensorIdx) {
    let n = dims.iter().product::<i32>() as usize;
    let channels = if name.starts_with("dw") { dims[3] } else { dims[0] };
    let w = b.constant_f32(&format!("{name}/weights"), &dims, &he(rng, n, fan_in));
    let bias = b.constant_f32(&format!("{name}/bias"), &[channels], &rng.fill(channels as usize, -0.05, 0.05));
    (w, bias)
}

/// The example model's `.tflite` bytes: conv 3x3/2 SAME + relu6 → depthwise 3x3 + relu6 →
/// conv 1x1 → ADD (residual from the first conv) → conv 1x1 expand + relu6 → MEAN over H, W →
/// fully connected to 10 → softmax. 1x32x32x3 in, 1x10 out.
pub fn tiny_mobilenet() -> Vec<u8> {
    let mut rng = XorShift::new(WEIGHT_SEED);
    let mut b = ModelBuilder::new();
    b.description("nnrt example: tiny MobileNet-style CNN (random He-uniform weights, seed 0x6E6E727400000001)");
    let f32_ = TensorType::FLOAT32;
    let x = b.input("input", f32_, &[1, 32, 32, 3]);

    let (w, bias) = conv_params(&mut b, &mut rng, "conv1", [16, 3, 3, 3], 27);
    let conv1 = b.tensor("conv1/Relu6", f32_, &[1, 16, 16, 16]);
    b.op(Op::CONV_2D, &[x, w, bias], &[conv1], Options::conv(Padding::SAME, 2, Act::RELU6));

    let (w, bias) = conv_params(&mut b, &mut rng, "dw2", [1, 3, 3, 16], 9);
    let dw = b.tensor("dw2/Relu6", f32_, &[1, 16, 16, 16]);
    let dw_opts = Options::DepthwiseConv2D { padding: Padding::SAME, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Act::RELU6 };
    b.op(Op::DEPTHWISE_CONV_2D, &[conv1, w, bias], &[dw], dw_opts);

    let (w, bias) = conv_params(&mut b, &mut rng, "pw3", [16, 1, 1, 16], 16);
    let pw = b.tensor("pw3/BiasAdd", f32_, &[1, 16, 16, 16]);
    b.op(Op::CONV_2D, &[dw, w, bias], &[pw], Options::conv(Padding::VALID, 1, Act::NONE));

    let residual = b.tensor("block/add", f32_, &[1, 16, 16, 16]);
    b.op(Op::ADD, &[conv1, pw], &[residual], Options::Add { act: Act::NONE });

    let (w, bias) = conv_params(&mut b, &mut rng, "expand4", [32, 1, 1, 16], 16);
    let expand = b.tensor("expand4/Relu6", f32_, &[1, 16, 16, 32]);
    b.op(Op::CONV_2D, &[residual, w, bias], &[expand], Options::conv(Padding::VALID, 1, Act::RELU6));

    let axes = b.constant_i32("pool/axes", &[2], &[1, 2]);
    let pooled = b.tensor("pool/Mean", f32_, &[1, 32]);
    b.op(Op::MEAN, &[expand, axes], &[pooled], Options::Reducer { keep_dims: false });

    let w = b.constant_f32("logits/weights", &[CLASSES as i32, 32], &he(&mut rng, CLASSES * 32, 32));
    let bias = b.constant_f32("logits/bias", &[CLASSES as i32], &rng.fill(CLASSES, -0.05, 0.05));
    let logits = b.tensor("logits/BiasAdd", f32_, &[1, CLASSES as i32]);
    b.op(Op::FULLY_CONNECTED, &[pooled, w, bias], &[logits], Options::FullyConnected { act: Act::NONE, keep_num_dims: false });

    let probs = b.tensor("probs", f32_, &[1, CLASSES as i32]);
    b.op(Op::SOFTMAX, &[logits], &[probs], Options::Softmax { beta: 1.0 });
    b.output(probs);
    b.signature("serving_default", &[("input", x)], &[("probs", probs)]);
    b.finish()
}

/// The example's fixed input: uniform in [-1, 1), like a normalized image.
pub fn tiny_mobilenet_input() -> Vec<f32> {
    XorShift::new(INPUT_SEED).fill(INPUT_DIMS.iter().product(), -1.0, 1.0)
}

/// Every example file, by path relative to `examples/models/`, with its bytes.
pub fn example_files() -> Vec<(String, Vec<u8>)> {
    let model = tiny_mobilenet();
    let pkg = NnPackage::default()
        .with_file("metadata/MANIFEST", manifest(&[("tiny_mobilenet.tflite", "tflite")], &["config.cfg"]))
        .with_file("metadata/config.cfg", "# nnrt example package: run on the CPU backend\nBACKENDS=cpu\n")
        .with_file("tiny_mobilenet.tflite", model.clone());
    let mut files = vec![
        ("tiny_mobilenet.tflite".to_string(), model),
        ("tiny_mobilenet_input.0.npy".to_string(), npy_f32(&INPUT_DIMS, &tiny_mobilenet_input())),
    ];
    files.extend(pkg.files.into_iter().map(|(p, b)| (format!("tiny_mobilenet.nnpkg/{p}"), b)));
    files
}

/// Writes [`example_files`] under `dir` (usually `examples/models`); returns the paths written.
pub fn write_examples(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (rel, bytes) in example_files() {
        let p = dir.join(&rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, bytes)?;
        written.push(p);
    }
    Ok(written)
}
