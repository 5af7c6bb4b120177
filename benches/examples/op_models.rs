//! Writes one-op float TFLite models of MobileNetV2's hot shapes (depthwise, 1×1, 3×3, ADD) and two
//! CONV_3D volumes as
//! a corpus for `bench.py --corpus DIR`, so single ops can be timed against LiteRT (XNNPACK):
//! `cargo run --release -p nnrt-benches --example op_models -- /tmp/opbench`, then
//! `bench.py --cli target/release/nnpackage_run --corpus /tmp/opbench --only .`.
use nnrt_tests::{npy_f32, Act, BuiltinOperator, ModelBuilder, Options, Padding, TensorType, XorShift};

fn values(n: usize, rng: &mut XorShift) -> Vec<f32> {
    (0..n).map(|_| (rng.below(2001) as f32 - 1000.0) / 1000.0).collect()
}

fn dims_i32(d: &[usize]) -> Vec<i32> {
    d.iter().map(|&v| v as i32).collect()
}

/// One op on input x; `k` and `stride` describe a convolution (k = 0 for ADD).
struct Case {
    name: String,
    hw: usize,
    c_in: usize,
    c_out: usize,
    k: usize,
    stride: usize,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    Conv,
    /// CONV_3D over a `hw`-deep volume.
    Conv3d,
    Depthwise,
    Add,
}

fn write(dir: &std::path::Path, case: &Case, rng: &mut XorShift) -> std::io::Result<()> {
    let mut b = ModelBuilder::new();
    let x_dims: Vec<usize> = match case.kind {
        Kind::Conv3d => vec![1, case.hw, case.hw, case.hw, case.c_in],
        _ => vec![1, case.hw, case.hw, case.c_in],
    };
    let x = b.input("x", TensorType::FLOAT32, &dims_i32(&x_dims));
    let out_hw = case.hw.div_ceil(case.stride.max(1));
    let y_dims: Vec<usize> = match case.kind {
        Kind::Conv3d => vec![1, out_hw, out_hw, out_hw, case.c_out],
        _ => vec![1, out_hw, out_hw, case.c_out],
    };
    let y = b.tensor("y", TensorType::FLOAT32, &dims_i32(&y_dims));
    match case.kind {
        Kind::Conv => {
            let w = b.constant_f32("w", &dims_i32(&[case.c_out, case.k, case.k, case.c_in]), &values(case.c_out * case.k * case.k * case.c_in, rng));
            let bias = b.constant_f32("b", &[case.c_out as i32], &values(case.c_out, rng));
            b.op(BuiltinOperator::CONV_2D, &[x, w, bias], &[y], Options::conv(Padding::SAME, case.stride as i32, Act::RELU6));
        }
        Kind::Conv3d => {
            let k = case.k;
            let w = b.constant_f32("w", &dims_i32(&[k, k, k, case.c_in, case.c_out]), &values(k * k * k * case.c_in * case.c_out, rng));
            let bias = b.constant_f32("b", &[case.c_out as i32], &values(case.c_out, rng));
            let s = case.stride as i32;
            b.op(BuiltinOperator::CONV_3D, &[x, w, bias], &[y], Options::Conv3D { padding: Padding::SAME, stride: [s; 3], dilation: [1; 3], act: Act::RELU6 });
        }
        Kind::Depthwise => {
            let w = b.constant_f32("w", &dims_i32(&[1, case.k, case.k, case.c_in]), &values(case.k * case.k * case.c_in, rng));
            let bias = b.constant_f32("b", &[case.c_in as i32], &values(case.c_in, rng));
            let options = Options::DepthwiseConv2D {
                padding: Padding::SAME,
                stride: [case.stride as i32; 2],
                dilation: [1, 1],
                depth_multiplier: 1,
                act: Act::RELU6,
            };
            b.op(BuiltinOperator::DEPTHWISE_CONV_2D, &[x, w, bias], &[y], options);
        }
        Kind::Add => {
            let z = b.input("z", TensorType::FLOAT32, &dims_i32(&x_dims));
            b.op(BuiltinOperator::ADD, &[x, z], &[y], Options::Add { act: Act::NONE });
        }
    }
    b.output(y);
    let folder = dir.join(&case.name);
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("model.tflite"), b.finish())?;
    let n_inputs = if matches!(case.kind, Kind::Add) { 2 } else { 1 };
    let mut inputs = Vec::new();
    for i in 0..n_inputs {
        let file = format!("input_{i}.npy");
        std::fs::write(folder.join(&file), npy_f32(&x_dims, &values(x_dims.iter().product(), rng)))?;
        inputs.push(format!(r#"{{"name": "x{i}", "index": {i}, "dtype": "float32", "shape": {x_dims:?}, "file": "{file}"}}"#));
    }
    std::fs::write(folder.join("meta.json"), format!(r#"{{"name": "{}", "inputs": [{}]}}"#, case.name, inputs.join(", ")))
}

/// RFFT2D of a `[batch, rows, cols]` signal to `[fft_h, fft_w]`, then COMPLEX_ABS (a
/// spectrogram's magnitudes, as audio front ends compute them: frames × 1 × frame length).
fn write_spectrum(dir: &std::path::Path, batch: usize, rows: usize, cols: usize, fft: [usize; 2], rng: &mut XorShift) -> std::io::Result<()> {
    let name = format!("rfft2d_abs_{batch}x{rows}x{cols}_{}x{}", fft[0], fft[1]);
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &dims_i32(&[batch, rows, cols]));
    let len = b.constant_i32("fft_length", &[2], &[fft[0] as i32, fft[1] as i32]);
    let z = b.tensor("spectrum", TensorType::COMPLEX64, &dims_i32(&[batch, fft[0], fft[1] / 2 + 1]));
    let y = b.tensor("magnitude", TensorType::FLOAT32, &dims_i32(&[batch, fft[0], fft[1] / 2 + 1]));
    b.op(BuiltinOperator::RFFT2D, &[x, len], &[z], Options::None);
    b.op(BuiltinOperator::COMPLEX_ABS, &[z], &[y], Options::None);
    b.output(y);
    let folder = dir.join(&name);
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("model.tflite"), b.finish())?;
    std::fs::write(folder.join("input_0.npy"), npy_f32(&[batch, rows, cols], &values(batch * rows * cols, rng)))?;
    let input = format!(r#"{{"name": "x", "index": 0, "dtype": "float32", "shape": [{batch}, {rows}, {cols}], "file": "input_0.npy"}}"#);
    std::fs::write(folder.join("meta.json"), format!(r#"{{"name": "{name}", "inputs": [{input}]}}"#))
}

/// CONV_3D_TRANSPOSE of a `[1, n, n, n, c_in]` volume to `n · stride` per axis (SAME).
fn write_conv3d_transpose(dir: &std::path::Path, n: usize, c_in: usize, c_out: usize, k: usize, stride: usize, rng: &mut XorShift) -> std::io::Result<()> {
    let name = format!("conv3d_transpose_{n}x{c_in}_{c_out}_k{k}_s{stride}");
    let m = n * stride;
    let mut b = ModelBuilder::new();
    let shape = b.constant_i32("output_shape", &[5], &[1, m as i32, m as i32, m as i32, c_out as i32]);
    let w = b.constant_f32("w", &dims_i32(&[k, k, k, c_out, c_in]), &values(k * k * k * c_out * c_in, rng));
    let x = b.input("x", TensorType::FLOAT32, &dims_i32(&[1, n, n, n, c_in]));
    let bias = b.constant_f32("b", &[c_out as i32], &values(c_out, rng));
    let y = b.tensor("y", TensorType::FLOAT32, &dims_i32(&[1, m, m, m, c_out]));
    let s = stride as i32;
    b.op(BuiltinOperator::CONV_3D_TRANSPOSE, &[shape, w, x, bias], &[y], Options::Conv3D { padding: Padding::SAME, stride: [s; 3], dilation: [1; 3], act: Act::NONE });
    b.output(y);
    let folder = dir.join(&name);
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("model.tflite"), b.finish())?;
    std::fs::write(folder.join("input_0.npy"), npy_f32(&[1, n, n, n, c_in], &values(n * n * n * c_in, rng)))?;
    let input = format!(r#"{{"name": "x", "index": 0, "dtype": "float32", "shape": [1, {n}, {n}, {n}, {c_in}], "file": "input_0.npy"}}"#);
    std::fs::write(folder.join("meta.json"), format!(r#"{{"name": "{name}", "inputs": [{input}]}}"#))
}

/// FAKE_QUANT of a `[1, 64, 64]` tensor over `[min, max]`.
fn write_fake_quant(dir: &std::path::Path, min: f32, max: f32, num_bits: i32, narrow_range: bool, rng: &mut XorShift) -> std::io::Result<()> {
    let name = format!("fake_quant_{num_bits}bit{}_{min}_{max}", if narrow_range { "_narrow" } else { "" });
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[1, 64, 64]);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 64, 64]);
    b.op(BuiltinOperator::FAKE_QUANT, &[x], &[y], Options::FakeQuant { min, max, num_bits, narrow_range });
    b.output(y);
    let folder = dir.join(&name);
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("model.tflite"), b.finish())?;
    let v: Vec<f32> = values(64 * 64, rng).iter().map(|v| v * 2.0 * (max - min)).collect();
    std::fs::write(folder.join("input_0.npy"), npy_f32(&[1, 64, 64], &v))?;
    let input = r#"{"name": "x", "index": 0, "dtype": "float32", "shape": [1, 64, 64], "file": "input_0.npy"}"#;
    std::fs::write(folder.join("meta.json"), format!(r#"{{"name": "{name}", "inputs": [{input}]}}"#))
}

fn main() -> std::io::Result<()> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/tmp/opbench".into()));
    let mut cases = Vec::new();
    for &(hw, c, s) in &[(112, 32, 1), (112, 96, 2), (56, 144, 1), (56, 144, 2), (28, 192, 1), (14, 576, 1), (7, 960, 1)] {
        cases.push(Case { name: format!("dw_{hw}x{c}_s{s}"), hw, c_in: c, c_out: c, k: 3, stride: s, kind: Kind::Depthwise });
    }
    for &(hw, ci, co) in &[(112, 16, 96), (112, 32, 16), (56, 24, 144), (56, 144, 24), (28, 32, 192), (28, 192, 32), (14, 96, 576), (14, 576, 96), (7, 960, 320), (7, 320, 1280)] {
        cases.push(Case { name: format!("pw_{hw}x{ci}_{co}"), hw, c_in: ci, c_out: co, k: 1, stride: 1, kind: Kind::Conv });
    }
    cases.push(Case { name: "conv3_224x3_32_s2".into(), hw: 224, c_in: 3, c_out: 32, k: 3, stride: 2, kind: Kind::Conv });
    for &(hw, ci, co, s) in &[(16, 8, 16, 1), (12, 16, 32, 2)] {
        cases.push(Case { name: format!("conv3d_{hw}x{ci}_{co}_s{s}"), hw, c_in: ci, c_out: co, k: 3, stride: s, kind: Kind::Conv3d });
    }
    for &(hw, c) in &[(56, 24), (28, 32), (14, 64)] {
        cases.push(Case { name: format!("add_{hw}x{c}"), hw, c_in: c, c_out: c, k: 0, stride: 1, kind: Kind::Add });
    }
    let mut rng = XorShift::new(7);
    for case in &cases {
        write(&dir, case, &mut rng)?;
    }
    write_spectrum(&dir, 96, 1, 400, [1, 512], &mut rng)?;
    write_spectrum(&dir, 1, 30, 50, [32, 64], &mut rng)?;
    write_conv3d_transpose(&dir, 6, 8, 4, 3, 2, &mut rng)?;
    write_conv3d_transpose(&dir, 8, 16, 8, 2, 2, &mut rng)?;
    write_fake_quant(&dir, -1.0, 1.0, 8, false, &mut rng)?;
    write_fake_quant(&dir, -0.37, 5.9, 4, false, &mut rng)?;
    println!("{} one-op models, two spectra, two transposed 3-D convolutions and two fake quantizations in {}", cases.len(), dir.display());
    Ok(())
}
