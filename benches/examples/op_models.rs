//! Writes one-op float TFLite models of MobileNetV2's hot shapes (depthwise, 1×1, 3×3, ADD) and two
//! CONV_3D volumes as
//! a corpus for `bench.py --corpus DIR`, so single ops can be timed against LiteRT (XNNPACK):
//! `cargo run --release -p nnrt-benches --example op_models -- /tmp/opbench`, then
//! `bench.py --cli target/release/nnpackage_run --corpus /tmp/opbench --only .` (`--only ew_` for the
//! element-wise ops, conversions included, over every broadcast shape).
use nnrt_tests::{npy_f32, Act, BuiltinOperator, ModelBuilder, Options, Padding, TensorIdx, TensorType, XorShift};

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

/// A `.npy` (format 1.0) of any one-element-per-`width`-bytes type (`descr` as NumPy spells it).
fn npy_raw(descr: &str, dims: &[usize], data: &[u8]) -> Vec<u8> {
    let shape = format!("({})", dims.iter().map(|d| format!("{d},")).collect::<Vec<_>>().join(" "));
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// An element type of the element-wise models, with its quantization where it has one.
#[derive(Clone, Copy)]
enum Elem {
    F32,
    /// Quantized with (scale, zero point).
    I8(f32, i64),
    U8(f32, i64),
    I16(f32, i64),
    /// Plain uint8 / int8 / int16 values (CAST).
    RawU8,
    RawI8,
    RawI16,
}

impl Elem {
    fn tensor_type(self) -> TensorType {
        match self {
            Elem::F32 => TensorType::FLOAT32,
            Elem::I8(..) | Elem::RawI8 => TensorType::INT8,
            Elem::U8(..) | Elem::RawU8 => TensorType::UINT8,
            Elem::I16(..) | Elem::RawI16 => TensorType::INT16,
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Elem::F32 => "f32",
            Elem::I8(..) | Elem::RawI8 => "i8",
            Elem::U8(..) | Elem::RawU8 => "u8",
            Elem::I16(..) | Elem::RawI16 => "i16",
        }
    }

    /// A tensor of this type (quantized where the type says so).
    fn tensor(self, b: &mut ModelBuilder, name: &str, dims: &[usize], input: bool) -> TensorIdx {
        let t = if input { b.input(name, self.tensor_type(), &dims_i32(dims)) } else { b.tensor(name, self.tensor_type(), &dims_i32(dims)) };
        if let Elem::I8(s, z) | Elem::U8(s, z) | Elem::I16(s, z) = self {
            b.quantization(t, &[s], &[z], 0);
        }
        t
    }

    /// `n` random values' bytes, and the `.npy` type string.
    fn bytes(self, n: usize, rng: &mut XorShift) -> (Vec<u8>, &'static str) {
        match self {
            Elem::F32 => (values(n, rng).iter().flat_map(|v| (v * 4.0).to_le_bytes()).collect(), "<f4"),
            Elem::I8(..) | Elem::RawI8 => ((0..n).map(|_| rng.below(256) as u8).collect(), "|i1"),
            Elem::U8(..) | Elem::RawU8 => ((0..n).map(|_| rng.below(256) as u8).collect(), "|u1"),
            Elem::I16(..) | Elem::RawI16 => ((0..n).flat_map(|_| (rng.below(65536) as u16).to_le_bytes()).collect(), "<i2"),
        }
    }
}

fn save(dir: &std::path::Path, name: &str, model: Vec<u8>, inputs: &[(&[usize], Vec<u8>, &str)]) -> std::io::Result<()> {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("model.tflite"), model)?;
    let mut meta = Vec::new();
    for (i, (dims, bytes, descr)) in inputs.iter().enumerate() {
        let file = format!("input_{i}.npy");
        std::fs::write(folder.join(&file), npy_raw(descr, dims, bytes))?;
        meta.push(format!(r#"{{"name": "x{i}", "index": {i}, "shape": {dims:?}, "file": "{file}"}}"#));
    }
    std::fs::write(folder.join("meta.json"), format!(r#"{{"name": "{name}", "inputs": [{}]}}"#, meta.join(", ")))
}

/// The second operand's shape for `x_dims` = [N, H, W, C]: same, scalar, inner [1,1,1,C],
/// outer [N,H,W,1] and middle [1,H,1,C].
const BROADCASTS: [&str; 5] = ["same", "scalar", "inner", "outer", "middle"];

fn broadcast_dims(kind: &str, x: &[usize]) -> Vec<usize> {
    match kind {
        "same" => x.to_vec(),
        "scalar" => vec![1],
        "inner" => vec![1, 1, 1, x[3]],
        "outer" => vec![x[0], x[1], x[2], 1],
        _ => vec![1, x[1], 1, x[3]],
    }
}

/// `x op k` with `x` an input and `k` a constant of the `broadcast` shape (an input too when
/// the shapes are equal), both of type `elem`, the output `out`.
fn write_binary(dir: &std::path::Path, op: BuiltinOperator, elem: Elem, out: Elem, x_dims: &[usize], broadcast: &str, rng: &mut XorShift) -> std::io::Result<()> {
    let op_name = match op {
        BuiltinOperator::ADD => "add",
        BuiltinOperator::SUB => "sub",
        BuiltinOperator::MUL => "mul",
        BuiltinOperator::DIV => "div",
        _ => "max",
    };
    let hw = x_dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
    let name = format!("ew_{op_name}_{}_{hw}_{broadcast}", elem.tag());
    let k_dims = broadcast_dims(broadcast, x_dims);
    let mut b = ModelBuilder::new();
    let x = elem.tensor(&mut b, "x", x_dims, true);
    let n_k: usize = k_dims.iter().product();
    let (k_bytes, k_descr) = elem.bytes(n_k, rng);
    let same = broadcast == "same";
    let k = if same {
        elem.tensor(&mut b, "k", &k_dims, true)
    } else {
        let k = b.constant_bytes("k", elem.tensor_type(), &dims_i32(&k_dims), &k_bytes);
        match elem {
            // The constant's own scale (as a converter gives each tensor one).
            Elem::I8(_, z) | Elem::U8(_, z) => {
                b.quantization(k, &[0.0173], &[z / 2], 0);
            }
            // int16 (16×8 quantization) has zero points of 0.
            Elem::I16(..) => {
                b.quantization(k, &[0.00071], &[0], 0);
            }
            _ => {}
        }
        k
    };
    let y = out.tensor(&mut b, "y", x_dims, false);
    let options = match op {
        BuiltinOperator::ADD => Options::Add { act: Act::NONE },
        BuiltinOperator::SUB => Options::Sub { act: Act::NONE },
        BuiltinOperator::MUL => Options::Mul { act: Act::NONE },
        BuiltinOperator::DIV => Options::Div { act: Act::NONE },
        _ => Options::None,
    };
    b.op(op, &[x, k], &[y], options);
    b.output(y);
    let n: usize = x_dims.iter().product();
    let (x_bytes, x_descr) = elem.bytes(n, rng);
    let mut inputs = vec![(x_dims, x_bytes, x_descr)];
    if same {
        inputs.push((x_dims, k_bytes, k_descr));
    }
    save(dir, &name, b.finish(), &inputs)
}

/// A quantized 3×3 DEPTHWISE_CONV_2D (SAME, ReLU6 unless `relu6` is false) over
/// `[1, hw, hw, c]`: int8 with per-channel weight scales (what the TFLite converter makes
/// today) when `signed`, else uint8 with one weight scale and zero point (older
/// quantization-aware models).
fn write_qdepthwise(dir: &std::path::Path, hw: usize, c: usize, stride: usize, signed: bool, relu6: bool, rng: &mut XorShift) -> std::io::Result<()> {
    let name = format!("qdw_{}_{hw}x{c}_s{stride}{}", if signed { "i8" } else { "u8" }, if relu6 { "" } else { "_none" });
    let out_hw = hw.div_ceil(stride);
    let (ty, descr, x_zp, y_zp) = if signed { (TensorType::INT8, "|i1", -128, -128) } else { (TensorType::UINT8, "|u1", 0, 0) };
    let (x_scale, y_scale) = (0.0235f32, 0.0235f32);
    let mut b = ModelBuilder::new();
    let x = b.input("x", ty, &dims_i32(&[1, hw, hw, c]));
    b.quantization(x, &[x_scale], &[x_zp], 0);
    let taps = 9 * c;
    let (w_bytes, w_scales, w_zps): (Vec<u8>, Vec<f32>, Vec<i64>) = if signed {
        let scales = (0..c).map(|_| 0.002 + rng.below(100) as f32 * 0.0004).collect();
        ((0..taps).map(|_| (rng.below(255) as i32 - 127) as i8 as u8).collect(), scales, vec![0; c])
    } else {
        // Weights around a zero point near 128, each channel within its own spread, and one
        // channel over the whole range that sets the per-tensor scale (as in real models).
        let zp = 100 + rng.below(60) as i64;
        let spread: Vec<i64> = (0..c).map(|ch| if ch == c / 3 { 255 } else { 20 + rng.below(90) as i64 }).collect();
        let w = (0..taps).map(|i| (zp + rng.below(2 * spread[i % c] as usize + 1) as i64 - spread[i % c]).clamp(0, 255) as u8).collect();
        (w, vec![0.006], vec![zp])
    };
    let w = b.constant_bytes("w", ty, &dims_i32(&[1, 3, 3, c]), &w_bytes);
    b.quantization(w, &w_scales, &w_zps, 3);
    let bias_scales: Vec<f32> = (0..c).map(|i| x_scale * w_scales[i.min(w_scales.len() - 1)]).collect();
    let bias_vals: Vec<i32> = (0..c).map(|_| rng.below(4001) as i32 - 2000).collect();
    let bias = b.constant_i32("b", &[c as i32], &bias_vals);
    let bias_scales = if signed { bias_scales } else { bias_scales[..1].to_vec() };
    let bias_zps = vec![0; bias_scales.len()];
    b.quantization(bias, &bias_scales, &bias_zps, 0);
    let y = b.tensor("y", ty, &dims_i32(&[1, out_hw, out_hw, c]));
    b.quantization(y, &[y_scale], &[y_zp], 0);
    let act = if relu6 { Act::RELU6 } else { Act::NONE };
    let options = Options::DepthwiseConv2D { padding: Padding::SAME, stride: [stride as i32; 2], dilation: [1, 1], depth_multiplier: 1, act };
    b.op(BuiltinOperator::DEPTHWISE_CONV_2D, &[x, w, bias], &[y], options);
    b.output(y);
    let n = hw * hw * c;
    let x_bytes: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
    save(dir, &name, b.finish(), &[(&[1, hw, hw, c], x_bytes, descr)])
}

/// One CAST, QUANTIZE or DEQUANTIZE from `from` to `to` over `dims`.
fn write_convert(dir: &std::path::Path, op: BuiltinOperator, from: Elem, to: Elem, dims: &[usize], rng: &mut XorShift) -> std::io::Result<()> {
    let op_name = match op {
        BuiltinOperator::CAST => "cast",
        BuiltinOperator::QUANTIZE => "quantize",
        _ => "dequantize",
    };
    let shape = dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
    let name = format!("ew_{op_name}_{}_{}_{shape}", from.tag(), to.tag());
    let mut b = ModelBuilder::new();
    let x = from.tensor(&mut b, "x", dims, true);
    let y = to.tensor(&mut b, "y", dims, false);
    b.op(op, &[x], &[y], Options::None);
    b.output(y);
    let (bytes, descr) = from.bytes(dims.iter().product(), rng);
    save(dir, &name, b.finish(), &[(dims, bytes, descr)])
}

/// The element-wise corpus of issue 26: float and quantized binary ops over every broadcast,
/// and conversions between uint8, int8, int16 and float32. Returns how many models.
fn write_elementwise(dir: &std::path::Path, rng: &mut XorShift) -> std::io::Result<usize> {
    let mut count = 0;
    let float_ops = [BuiltinOperator::ADD, BuiltinOperator::SUB, BuiltinOperator::MUL, BuiltinOperator::DIV, BuiltinOperator::MAXIMUM];
    for op in float_ops {
        for bc in BROADCASTS {
            write_binary(dir, op, Elem::F32, Elem::F32, &[1, 56, 56, 64], bc, rng)?;
            count += 1;
        }
    }
    let q_ops = [BuiltinOperator::ADD, BuiltinOperator::SUB, BuiltinOperator::MUL];
    // 16×8 quantization's int16 activations (symmetric, zero points of 0) draw from their own
    // generator, so the other models keep their values.
    let mut rng16 = XorShift::new(16);
    let q_types = [
        (Elem::I8(0.05, 3), Elem::I8(0.08, -2), Elem::I8(0.12, 1)),
        (Elem::U8(0.05, 131), Elem::U8(0.08, 125), Elem::U8(0.12, 128)),
        (Elem::I16(0.0005, 0), Elem::I16(0.0008, 0), Elem::I16(0.004, 0)),
    ];
    for (elem, sum_out, mul_out) in q_types {
        for op in q_ops {
            let out = if op == BuiltinOperator::MUL { mul_out } else { sum_out };
            let rng = if matches!(elem, Elem::I16(..)) { &mut rng16 } else { &mut *rng };
            for bc in BROADCASTS {
                write_binary(dir, op, elem, out, &[1, 112, 112, 32], bc, rng)?;
                count += 1;
            }
            // An image normalised in the graph: [1,192,192,3] against per-channel constants.
            write_binary(dir, op, elem, out, &[1, 192, 192, 3], "inner", rng)?;
            count += 1;
        }
    }
    let image = [1, 192, 192, 3];
    let big = [1, 112, 112, 32];
    let (i8q, u8q, i16q) = (Elem::I8(0.02, -3), Elem::U8(0.03, 120), Elem::I16(0.001, 0));
    let converts = [
        (BuiltinOperator::CAST, Elem::RawU8, Elem::F32),
        (BuiltinOperator::CAST, Elem::RawI8, Elem::F32),
        (BuiltinOperator::CAST, Elem::F32, Elem::RawU8),
        (BuiltinOperator::CAST, Elem::F32, Elem::RawI8),
        (BuiltinOperator::CAST, Elem::RawI16, Elem::F32),
        (BuiltinOperator::CAST, Elem::F32, Elem::RawI16),
        (BuiltinOperator::CAST, Elem::RawU8, Elem::RawI8),
        (BuiltinOperator::CAST, Elem::RawI8, Elem::RawU8),
        (BuiltinOperator::CAST, Elem::RawU8, Elem::RawI16),
        (BuiltinOperator::CAST, Elem::RawI16, Elem::RawU8),
        (BuiltinOperator::CAST, Elem::RawI8, Elem::RawI16),
        (BuiltinOperator::CAST, Elem::RawI16, Elem::RawI8),
        (BuiltinOperator::QUANTIZE, Elem::F32, i8q),
        (BuiltinOperator::QUANTIZE, Elem::F32, u8q),
        (BuiltinOperator::QUANTIZE, Elem::F32, i16q),
        (BuiltinOperator::QUANTIZE, i8q, u8q),
        (BuiltinOperator::QUANTIZE, u8q, i8q),
        (BuiltinOperator::QUANTIZE, Elem::I8(0.02, -3), Elem::I8(0.05, 7)),
        (BuiltinOperator::QUANTIZE, u8q, Elem::U8(0.05, 128)),
        (BuiltinOperator::QUANTIZE, i16q, Elem::I16(0.003, 0)),
        (BuiltinOperator::QUANTIZE, i16q, i8q),
        (BuiltinOperator::QUANTIZE, i8q, i16q),
        (BuiltinOperator::DEQUANTIZE, i8q, Elem::F32),
        (BuiltinOperator::DEQUANTIZE, u8q, Elem::F32),
        (BuiltinOperator::DEQUANTIZE, i16q, Elem::F32),
    ];
    for (op, from, to) in converts {
        for dims in [&image[..], &big[..]] {
            write_convert(dir, op, from, to, dims, rng)?;
            count += 1;
        }
    }
    Ok(count)
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
    let ew = write_elementwise(&dir, &mut rng)?;
    // Quantized depthwise convolutions: MobileNet-like layers, both quantization schemes.
    let qdw = [(112, 16, 1), (112, 32, 1), (112, 96, 2), (56, 144, 1), (56, 144, 2), (28, 192, 1), (28, 192, 2), (14, 384, 1), (14, 576, 2), (7, 960, 1)];
    for &(hw, c, s) in &qdw {
        for signed in [true, false] {
            write_qdepthwise(&dir, hw, c, s, signed, true, &mut rng)?;
        }
    }
    // Without an activation the epilogue rounds negative values too.
    write_qdepthwise(&dir, 28, 96, 1, true, false, &mut rng)?;
    write_qdepthwise(&dir, 28, 96, 1, false, false, &mut rng)?;
    println!(
        "{} one-op models, two spectra, two transposed 3-D convolutions, two fake quantizations, {ew} element-wise models (`ew_*`) and {} quantized depthwise convolutions (`qdw_*`) in {}",
        cases.len(),
        2 * qdw.len() + 2,
        dir.display()
    );
    Ok(())
}
