//! Fusions against the unfused ops, bit for bit on the cpu: PAD folded into the convolution after
//! it (`passes::fold_pads`), LOGISTIC + MUL run as one SiLU pass (the cpu's `fuse_pair`), and SiLU
//! or HARD_SWISH in a float convolution's epilogue (the cpu's `fuse_conv_act`), a corner SLICE
//! read in place by the CONV_2D after it (`fuse_pair`, TOSA's cut before a strided
//! convolution), and a CONV_2D + ADD of a channel PAD of a shortcut (the cpu's
//! `fuse_padded_residual`, BlazeFace's blocks). Each reference is
//! the same model with a RESHAPE to the same dims between the two ops, which keeps them apart.

use nnrt_core::{Activation, BinaryOp, Conv2D, DType, DepthwiseConv2D, OpKind, OperandId, Padding, Quantization, UnaryOp};
use nnrt_tests::{f, Case, Graph, Tol, XorShift, V};

use crate::{GPU_MATH, GPU_SUMS};

nnrt_tests::replay_on_every_target!(pad_conv_cases, silu_cases, conv_act_cases, crop_conv_cases, padded_residual_cases);

/// An op between `t` and its reader in the reference: RESHAPE to the same dims.
fn keep_apart(g: &mut Graph, t: OperandId, dtype: DType, dims: &[usize], quant: &Quantization) -> OperandId {
    let r = g.tensor(dtype, dims);
    g.sub.operands[r.index()].quant = quant.clone();
    g.op(OpKind::Reshape { new_shape: Some(dims.iter().map(|&d| d as i32).collect()) }, &[Some(t)], &[r]);
    r
}

/// The values fed to a tensor of `dtype` (uniform over its range for integers).
fn values(dtype: DType, n: usize, seed: u64) -> V {
    let mut r = XorShift::new(seed);
    match dtype {
        DType::I8 => V::I8(r.fill(n, -128.0, 127.99).iter().map(|&v| v.floor() as i8).collect()),
        DType::U8 => V::U8(r.fill(n, 0.0, 255.99).iter().map(|&v| v.floor() as u8).collect()),
        _ => f(&r.fill(n, -1.0, 1.0)),
    }
}

struct PadConv<'a> {
    name: &'a str,
    dtype: DType,
    /// The input's quantization (also the padded tensor's).
    quant: Quantization,
    input: [usize; 4],
    /// PAD's `[[top, bottom], [left, right]]`.
    pads: [[usize; 2]; 2],
    /// PADV2's value, as the input's bytes.
    value: Option<Vec<u8>>,
    depthwise: bool,
    padding: Padding,
    stride: usize,
    out_c: usize,
}

/// x → PAD → CONV_2D / DEPTHWISE_CONV_2D (3×3, bias, RELU6) → y; with `apart`, a RESHAPE between
/// the PAD and the convolution.
fn pad_conv_graph(c: &PadConv, apart: bool, seed: u64) -> Graph {
    let [n, h, w, ch] = c.input;
    let quantized = c.dtype != DType::F32;
    let mut g = Graph::new();
    let x = g.input(&c.input, values(c.dtype, n * h * w * ch, seed));
    g.sub.operands[x.index()].quant = c.quant.clone();
    let pd = [n, h + c.pads[0][0] + c.pads[0][1], w + c.pads[1][0] + c.pads[1][1], ch];
    let pads = g.konst(&[4, 2], V::I32(vec![0, 0, c.pads[0][0] as i32, c.pads[0][1] as i32, c.pads[1][0] as i32, c.pads[1][1] as i32, 0, 0]));
    let p = g.tensor(c.dtype, &pd);
    g.sub.operands[p.index()].quant = c.quant.clone();
    let value = c.value.as_ref().map(|b| {
        let v = g.konst(&[], V::from_bytes(c.dtype, b).unwrap_or_else(|| f(&[0.0])));
        g.sub.operands[v.index()].quant = c.quant.clone();
        v
    });
    g.op(OpKind::Pad, &[Some(x), Some(pads), value], &[p]);
    let conv_in = if apart { keep_apart(&mut g, p, c.dtype, &pd, &c.quant) } else { p };
    let wd = if c.depthwise { [1, 3, 3, c.out_c] } else { [c.out_c, 3, 3, ch] };
    let wn: usize = wd.iter().product();
    // uint8 models carry uint8 weights with a zero point, per tensor; int8 ones int8, per channel.
    let (wt, bt) = match c.dtype {
        DType::U8 => (DType::U8, DType::I32),
        DType::I8 => (DType::I8, DType::I32),
        _ => (DType::F32, DType::F32),
    };
    let weights = g.konst(&wd, values(wt, wn, seed + 1));
    let in_scale = match c.quant {
        Quantization::PerTensor { scale, .. } => scale,
        _ => 1.0,
    };
    let w_scales: Vec<f32> = match wt {
        DType::U8 => vec![0.01; c.out_c],
        _ => (0..c.out_c).map(|k| 0.01 + 0.002 * k as f32).collect(),
    };
    g.sub.operands[weights.index()].quant = match wt {
        DType::U8 => Quantization::PerTensor { scale: 0.01, zero_point: 120 },
        DType::I8 => Quantization::PerAxis { scales: w_scales.clone(), zero_points: vec![0; c.out_c], axis: if c.depthwise { 3 } else { 0 } },
        _ => Quantization::None,
    };
    let bias_values = match bt {
        DType::I32 => V::I32(XorShift::new(seed + 2).fill(c.out_c, -500.0, 500.0).iter().map(|&v| v as i32).collect()),
        _ => values(bt, c.out_c, seed + 2),
    };
    let bias = g.konst(&[c.out_c], bias_values);
    g.sub.operands[bias.index()].quant = match wt {
        DType::U8 => Quantization::PerTensor { scale: 0.01 * in_scale, zero_point: 0 },
        DType::I8 => Quantization::PerAxis { scales: w_scales.iter().map(|s| s * in_scale).collect(), zero_points: vec![0; c.out_c], axis: 0 },
        _ => Quantization::None,
    };
    let out_dim = |len: usize, pad: [usize; 2]| {
        let padded = len + pad[0] + pad[1];
        match c.padding {
            Padding::Same => padded.div_ceil(c.stride),
            _ => (padded - 3) / c.stride + 1,
        }
    };
    let od = [n, out_dim(h, c.pads[0]), out_dim(w, c.pads[1]), c.out_c];
    let y = g.out(c.dtype, &od);
    if quantized {
        g.sub.operands[y.index()].quant = Quantization::PerTensor { scale: 0.05, zero_point: 3 };
    }
    let kind = if c.depthwise {
        OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: c.padding, stride: [c.stride; 2], dilation: [1, 1], depth_multiplier: c.out_c / ch, act: Activation::Relu6 })
    } else {
        OpKind::Conv2D(Conv2D { padding: c.padding, stride: [c.stride; 2], dilation: [1, 1], act: Activation::Relu6 })
    };
    g.op(kind, &[Some(conv_in), Some(weights), Some(bias)], &[y]);
    g
}

fn pad_conv_cases() -> Vec<Case> {
    let q8 = Quantization::PerTensor { scale: 0.02, zero_point: -5 };
    let qu8 = Quantization::PerTensor { scale: 0.03, zero_point: 131 };
    let rows = [
        // MediaPipe's stride-2 blocks: PAD (0, 1) before a VALID 3×3.
        PadConv { name: "PAD + CONV_2D VALID stride 2", dtype: DType::F32, quant: Quantization::None, input: [1, 12, 11, 3], pads: [[0, 1], [0, 1]], value: None, depthwise: false, padding: Padding::Valid, stride: 2, out_c: 8 },
        PadConv { name: "PAD + DEPTHWISE_CONV_2D VALID stride 2", dtype: DType::F32, quant: Quantization::None, input: [2, 16, 16, 8], pads: [[0, 1], [0, 1]], value: None, depthwise: true, padding: Padding::Valid, stride: 2, out_c: 8 },
        // SAME over the padded input: its amounts plus the PAD's.
        PadConv { name: "PADV2 0 + DEPTHWISE_CONV_2D SAME stride 2", dtype: DType::F32, quant: Quantization::None, input: [1, 9, 10, 4], pads: [[2, 1], [1, 0]], value: Some(0f32.to_le_bytes().to_vec()), depthwise: true, padding: Padding::Same, stride: 2, out_c: 8 },
        PadConv { name: "PAD + CONV_2D SAME stride 2", dtype: DType::F32, quant: Quantization::None, input: [1, 9, 9, 5], pads: [[1, 1], [1, 1]], value: None, depthwise: false, padding: Padding::Same, stride: 2, out_c: 6 },
        // Quantized: the zero point is what a skipped tap reads.
        PadConv { name: "int8 PAD + CONV_2D VALID stride 2", dtype: DType::I8, quant: q8.clone(), input: [1, 12, 11, 3], pads: [[0, 1], [0, 1]], value: None, depthwise: false, padding: Padding::Valid, stride: 2, out_c: 8 },
        PadConv { name: "int8 PADV2 zero point + DEPTHWISE_CONV_2D SAME stride 2", dtype: DType::I8, quant: q8, input: [1, 10, 10, 8], pads: [[1, 1], [1, 1]], value: Some(vec![(-5i8) as u8]), depthwise: true, padding: Padding::Same, stride: 2, out_c: 8 },
        PadConv { name: "uint8 PAD + DEPTHWISE_CONV_2D VALID stride 2", dtype: DType::U8, quant: qu8, input: [1, 9, 8, 4], pads: [[1, 1], [0, 1]], value: None, depthwise: true, padding: Padding::Valid, stride: 2, out_c: 4 },
    ];
    rows.iter()
        .enumerate()
        .map(|(k, c)| {
            let seed = 900 + 10 * k as u64;
            let case = Case::new(c.name, &pad_conv_graph(c, false, seed)).same_as_cpu_of(&pad_conv_graph(c, true, seed), Tol::EXACT);
            if c.dtype == DType::F32 {
                case.gpu_tol(GPU_SUMS)
            } else {
                case.no_gpu("quantized convolutions run on the cpu")
            }
        })
        .collect()
}

/// x → LOGISTIC → MUL(x, logistic) (or MUL(logistic, x)) with `act`; with `apart`, a RESHAPE
/// between the LOGISTIC and the MUL.
fn silu_graph(dims: &[usize], x_first: bool, act: Activation, apart: bool, seed: u64) -> Graph {
    let mut g = Graph::new();
    let x = g.input(dims, f(&XorShift::new(seed).fill(dims.iter().product(), -8.0, 8.0)));
    let s = g.tensor(DType::F32, dims);
    g.op(OpKind::Unary(UnaryOp::Logistic), &[Some(x)], &[s]);
    let s = if apart { keep_apart(&mut g, s, DType::F32, dims, &Quantization::None) } else { s };
    let y = g.out(DType::F32, dims);
    let ins = if x_first { [Some(x), Some(s)] } else { [Some(s), Some(x)] };
    g.op(OpKind::Binary { op: BinaryOp::Mul, act }, &ins, &[y]);
    g
}

fn silu_cases() -> Vec<Case> {
    // 40·40·9 = 14400 elements: split across threads, with a tail that is not a whole vector.
    let rows: [(&str, &[usize], bool, Activation); 4] = [
        ("SiLU: LOGISTIC + MUL(x, logistic)", &[1, 40, 40, 9], true, Activation::None),
        ("SiLU: LOGISTIC + MUL(logistic, x)", &[1, 40, 40, 9], false, Activation::None),
        ("SiLU with a fused RELU6", &[2, 7, 3], true, Activation::Relu6),
        ("SiLU of one element", &[1], false, Activation::None),
    ];
    rows.iter()
        .enumerate()
        .map(|(k, &(name, dims, x_first, act))| {
            let seed = 950 + k as u64;
            Case::new(name, &silu_graph(dims, x_first, act, false, seed)).same_as_cpu_of(&silu_graph(dims, x_first, act, true, seed), Tol::EXACT).gpu_tol(GPU_MATH)
        })
        .collect()
}

/// What follows the convolution in [`conv_act_graph`].
#[derive(Clone, Copy)]
enum Post {
    /// LOGISTIC, then MUL of the convolution's output and the logistic (output first when
    /// `x_first`), with the MUL's fused activation.
    Silu { x_first: bool, act: Activation },
    HardSwish,
}

struct ConvAct<'a> {
    name: &'a str,
    input: [usize; 4],
    /// `[k_h, k_w]`.
    kernel: [usize; 2],
    stride: usize,
    padding: Padding,
    /// DEPTHWISE_CONV_2D with this multiplier, or CONV_2D.
    depthwise: Option<usize>,
    out_c: usize,
    /// The convolution's own fused activation.
    act: Activation,
    post: Post,
}

/// x → CONV_2D / DEPTHWISE_CONV_2D (bias) → SiLU or HARD_SWISH → y; with `apart`, a RESHAPE
/// between the convolution and the activation's first op.
fn conv_act_graph(c: &ConvAct, apart: bool, seed: u64) -> Graph {
    let [n, h, w, ch] = c.input;
    let [kh, kw] = c.kernel;
    let mut g = Graph::new();
    let x = g.input(&c.input, f(&XorShift::new(seed).fill(n * h * w * ch, -2.0, 2.0)));
    let wd = match c.depthwise {
        Some(_) => [1, kh, kw, c.out_c],
        None => [c.out_c, kh, kw, ch],
    };
    let weights = g.konst(&wd, f(&XorShift::new(seed + 1).fill(wd.iter().product(), -0.5, 0.5)));
    let bias = g.konst(&[c.out_c], f(&XorShift::new(seed + 2).fill(c.out_c, -1.0, 1.0)));
    let out_dim = |len: usize, k: usize| match c.padding {
        Padding::Same => len.div_ceil(c.stride),
        _ => (len - k) / c.stride + 1,
    };
    let od = [n, out_dim(h, kh), out_dim(w, kw), c.out_c];
    let y = g.tensor(DType::F32, &od);
    let kind = match c.depthwise {
        Some(m) => OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: c.padding, stride: [c.stride; 2], dilation: [1, 1], depth_multiplier: m, act: c.act }),
        None => OpKind::Conv2D(Conv2D { padding: c.padding, stride: [c.stride; 2], dilation: [1, 1], act: c.act }),
    };
    g.op(kind, &[Some(x), Some(weights), Some(bias)], &[y]);
    let first_in = if apart { keep_apart(&mut g, y, DType::F32, &od, &Quantization::None) } else { y };
    match c.post {
        Post::HardSwish => {
            let out = g.out(DType::F32, &od);
            g.op(OpKind::Unary(UnaryOp::HardSwish), &[Some(first_in)], &[out]);
        }
        Post::Silu { x_first, act } => {
            let s = g.tensor(DType::F32, &od);
            g.op(OpKind::Unary(UnaryOp::Logistic), &[Some(first_in)], &[s]);
            let out = g.out(DType::F32, &od);
            let ins = if x_first { [Some(y), Some(s)] } else { [Some(s), Some(y)] };
            g.op(OpKind::Binary { op: BinaryOp::Mul, act }, &ins, &[out]);
        }
    }
    g
}

fn conv_act_cases() -> Vec<Case> {
    let silu = Post::Silu { x_first: true, act: Activation::None };
    let silu_rev = Post::Silu { x_first: false, act: Activation::None };
    let silu_relu6 = Post::Silu { x_first: true, act: Activation::Relu6 };
    let (none, relu6) = (Activation::None, Activation::Relu6);
    let (same, valid) = (Padding::Same, Padding::Valid);
    // Odd channel counts (vector tails), 1×1 convolutions read in place, 3×3 ones read in place
    // or gathered, strides 1 and 2, outputs large enough to be cut into several bands on one
    // thread and split across two.
    let rows = [
        ConvAct { name: "CONV_2D 1x1 + SiLU", input: [1, 64, 64, 8], kernel: [1, 1], stride: 1, padding: same, depthwise: None, out_c: 37, act: none, post: silu },
        ConvAct { name: "CONV_2D 1x1 + SiLU(logistic, x), RELU6 conv", input: [1, 9, 7, 5], kernel: [1, 1], stride: 1, padding: valid, depthwise: None, out_c: 19, act: relu6, post: silu_rev },
        ConvAct { name: "CONV_2D 3x3 SAME + SiLU with a RELU6 MUL", input: [1, 48, 45, 6], kernel: [3, 3], stride: 1, padding: same, depthwise: None, out_c: 33, act: none, post: silu_relu6 },
        ConvAct { name: "CONV_2D 3x3 stride 2 + SiLU (batch 2)", input: [2, 23, 21, 3], kernel: [3, 3], stride: 2, padding: same, depthwise: None, out_c: 13, act: none, post: silu },
        ConvAct { name: "CONV_2D 1x1 + HARD_SWISH", input: [1, 56, 56, 16], kernel: [1, 1], stride: 1, padding: same, depthwise: None, out_c: 45, act: none, post: Post::HardSwish },
        ConvAct { name: "CONV_2D 3x3 stride 2 VALID + HARD_SWISH", input: [1, 31, 29, 3], kernel: [3, 3], stride: 2, padding: valid, depthwise: None, out_c: 17, act: none, post: Post::HardSwish },
        ConvAct { name: "DEPTHWISE_CONV_2D 3x3 + SiLU", input: [1, 40, 38, 23], kernel: [3, 3], stride: 1, padding: same, depthwise: Some(1), out_c: 23, act: none, post: silu },
        ConvAct { name: "DEPTHWISE_CONV_2D 5x5 stride 2 + SiLU(logistic, x)", input: [1, 29, 27, 11], kernel: [5, 5], stride: 2, padding: same, depthwise: Some(1), out_c: 11, act: none, post: silu_rev },
        ConvAct { name: "DEPTHWISE_CONV_2D multiplier 2 + HARD_SWISH", input: [1, 17, 15, 7], kernel: [3, 3], stride: 1, padding: valid, depthwise: Some(2), out_c: 14, act: none, post: Post::HardSwish },
        ConvAct { name: "DEPTHWISE_CONV_2D 3x3 RELU6 + HARD_SWISH", input: [1, 44, 44, 19], kernel: [3, 3], stride: 1, padding: same, depthwise: Some(1), out_c: 19, act: relu6, post: Post::HardSwish },
    ];
    rows.iter()
        .enumerate()
        .map(|(k, c)| {
            let seed = 970 + 10 * k as u64;
            Case::new(c.name, &conv_act_graph(c, false, seed)).same_as_cpu_of(&conv_act_graph(c, true, seed), Tol::EXACT).gpu_tol(GPU_MATH)
        })
        .collect()
}

struct CropConv<'a> {
    name: &'a str,
    input: [usize; 4],
    /// SLICE's begin and size.
    begin: [usize; 4],
    size: [usize; 4],
    kernel: usize,
    stride: usize,
    padding: Padding,
    out_c: usize,
}

/// x → SLICE → CONV_2D (bias, RELU) → y; with `apart`, a RESHAPE between the SLICE and the
/// convolution.
fn crop_conv_graph(c: &CropConv, apart: bool, seed: u64) -> Graph {
    let mut g = Graph::new();
    let x = g.input(&c.input, f(&XorShift::new(seed).fill(c.input.iter().product(), -2.0, 2.0)));
    let begin = g.konst(&[4], V::I32(c.begin.iter().map(|&v| v as i32).collect()));
    let size = g.konst(&[4], V::I32(c.size.iter().map(|&v| v as i32).collect()));
    let t = g.tensor(DType::F32, &c.size);
    g.op(OpKind::Slice, &[Some(x), Some(begin), Some(size)], &[t]);
    let conv_in = if apart { keep_apart(&mut g, t, DType::F32, &c.size, &Quantization::None) } else { t };
    let [n, h, w, ch] = c.size;
    let k = c.kernel;
    let weights = g.konst(&[c.out_c, k, k, ch], f(&XorShift::new(seed + 1).fill(c.out_c * k * k * ch, -0.5, 0.5)));
    let bias = g.konst(&[c.out_c], f(&XorShift::new(seed + 2).fill(c.out_c, -1.0, 1.0)));
    let out_dim = |len: usize| match c.padding {
        Padding::Same => len.div_ceil(c.stride),
        _ => (len - k) / c.stride + 1,
    };
    let y = g.out(DType::F32, &[n, out_dim(h), out_dim(w), c.out_c]);
    let conv = Conv2D { padding: c.padding, stride: [c.stride; 2], dilation: [1, 1], act: Activation::Relu };
    g.op(OpKind::Conv2D(conv), &[Some(conv_in), Some(weights), Some(bias)], &[y]);
    g
}

fn crop_conv_cases() -> Vec<Case> {
    let (same, valid) = (Padding::Same, Padding::Valid);
    let rows = [
        // keras small ResNet's shortcut as TOSA writes it: 32×32 cut to 31×31, 1×1 stride 2.
        CropConv { name: "SLICE 32->31 + CONV_2D 1x1 stride 2", input: [1, 32, 32, 16], begin: [0; 4], size: [1, 31, 31, 16], kernel: 1, stride: 2, padding: valid, out_c: 24 },
        CropConv { name: "SLICE + CONV_2D 3x3 stride 2 VALID (batch 2)", input: [2, 18, 17, 5], begin: [0; 4], size: [2, 15, 15, 5], kernel: 3, stride: 2, padding: valid, out_c: 7 },
        // SAME pads after the cut (3×3 stride 2 over 16: (0, 1); stride 1 over 11: (1, 1)), where
        // the uncut tensor has values: not fused, so the values must still match.
        CropConv { name: "SLICE + CONV_2D 3x3 stride 2 SAME reading past the cut", input: [1, 17, 17, 3], begin: [0; 4], size: [1, 16, 16, 3], kernel: 3, stride: 2, padding: same, out_c: 5 },
        CropConv { name: "SLICE + CONV_2D 3x3 stride 1 SAME (pads both sides)", input: [1, 12, 12, 4], begin: [0; 4], size: [1, 11, 10, 4], kernel: 3, stride: 1, padding: same, out_c: 6 },
        // A cut that does not start at the corner, and one of channels: not fused.
        CropConv { name: "SLICE from (1, 1) + CONV_2D 1x1 stride 2", input: [1, 9, 9, 4], begin: [0, 1, 1, 0], size: [1, 8, 8, 4], kernel: 1, stride: 2, padding: valid, out_c: 3 },
        CropConv { name: "SLICE of channels + CONV_2D 1x1", input: [1, 6, 6, 8], begin: [0; 4], size: [1, 6, 6, 5], kernel: 1, stride: 1, padding: valid, out_c: 3 },
    ];
    rows.iter()
        .enumerate()
        .map(|(k, c)| {
            let seed = 1100 + 10 * k as u64;
            Case::new(c.name, &crop_conv_graph(c, false, seed))
                .same_as_cpu_of(&crop_conv_graph(c, true, seed), Tol::EXACT)
                .gpu_tol(GPU_SUMS)
                .no_gpu("SLICE has no gpu kernel (gpu;cpu runs it on the cpu)")
        })
        .collect()
}

struct PaddedResidual<'a> {
    name: &'a str,
    /// The convolution's input, kernel, stride and output channels (SAME padding, bias).
    input: [usize; 4],
    kernel: usize,
    stride: usize,
    out_c: usize,
    /// The shortcut's channels, PAD's channel padding (before, after), PADV2's value.
    shortcut_c: usize,
    pad: (usize, usize),
    value: Option<f32>,
    /// PAD's spatial padding (rows, columns after): then the pattern is not fused.
    spatial: usize,
    /// The PAD runs before the convolution; the ADD reads (padded, conv) instead of (conv, padded).
    pad_first: bool,
    swap: bool,
    act: Activation,
}

/// x → CONV_2D → y; s → PAD (channels) → p; ADD(y, p) → out. With `apart`, a RESHAPE between the
/// PAD and the ADD.
fn padded_residual_graph(c: &PaddedResidual, apart: bool, seed: u64) -> Graph {
    let [n, h, w, ch] = c.input;
    let (oh, ow) = (h.div_ceil(c.stride), w.div_ceil(c.stride));
    let od = [n, oh, ow, c.out_c];
    let sd = [n, oh - c.spatial, ow - c.spatial, c.shortcut_c];
    let mut g = Graph::new();
    let x = g.input(&c.input, f(&XorShift::new(seed).fill(n * h * w * ch, -2.0, 2.0)));
    let s = g.input(&sd, f(&XorShift::new(seed + 3).fill(sd.iter().product(), -2.0, 2.0)));
    let k = c.kernel;
    let weights = g.konst(&[c.out_c, k, k, ch], f(&XorShift::new(seed + 1).fill(c.out_c * k * k * ch, -0.5, 0.5)));
    let bias = g.konst(&[c.out_c], f(&XorShift::new(seed + 2).fill(c.out_c, -1.0, 1.0)));
    let y = g.tensor(DType::F32, &od);
    let p = g.tensor(DType::F32, &od);
    let pads = g.konst(&[4, 2], V::I32(vec![0, 0, 0, c.spatial as i32, 0, c.spatial as i32, c.pad.0 as i32, c.pad.1 as i32]));
    let value = c.value.map(|v| g.konst(&[], f(&[v])));
    let conv = OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [c.stride; 2], dilation: [1, 1], act: Activation::None });
    if c.pad_first {
        g.op(OpKind::Pad, &[Some(s), Some(pads), value], &[p]);
        g.op(conv, &[Some(x), Some(weights), Some(bias)], &[y]);
    } else {
        g.op(conv, &[Some(x), Some(weights), Some(bias)], &[y]);
        g.op(OpKind::Pad, &[Some(s), Some(pads), value], &[p]);
    }
    let p = if apart { keep_apart(&mut g, p, DType::F32, &od, &Quantization::None) } else { p };
    let out = g.out(DType::F32, &od);
    let ins = if c.swap { [Some(p), Some(y)] } else { [Some(y), Some(p)] };
    g.op(OpKind::Binary { op: BinaryOp::Add, act: c.act }, &ins, &[out]);
    g
}

fn padded_residual_cases() -> Vec<Case> {
    let (none, relu, relu6) = (Activation::None, Activation::Relu, Activation::Relu6);
    let base = PaddedResidual { name: "", input: [1, 64, 64, 24], kernel: 1, stride: 1, out_c: 28, shortcut_c: 24, pad: (0, 4), value: None, spatial: 0, pad_first: false, swap: true, act: relu };
    let rows = [
        // BlazeFace's first widening block, as the converter writes it.
        PaddedResidual { name: "CONV_2D 1x1 24->28 + ADD(PAD(shortcut 24 -> 28), conv), RELU", ..base },
        // Both sides padded with PADV2's value, the PAD first in the graph, the ADD's operands
        // the other way round, a 3×3 convolution, rows of 36 (two 16-lane vectors and a tail).
        PaddedResidual { name: "PADV2(-0.5) both sides + CONV_2D 3x3 + ADD, RELU6", input: [1, 30, 29, 7], kernel: 3, out_c: 36, shortcut_c: 31, pad: (2, 3), value: Some(-0.5), pad_first: true, swap: false, act: relu6, ..base },
        // Rows narrower than a vector, batch 2, the shortcut after a stride-2 convolution.
        PaddedResidual { name: "CONV_2D 3x3 stride 2 5->9 + ADD(PAD(6 -> 9)), batch 2", input: [2, 17, 15, 5], kernel: 3, stride: 2, out_c: 9, shortcut_c: 6, pad: (1, 2), act: none, ..base },
        // Odd row length (a period of 17 vectors), one channel padded.
        PaddedResidual { name: "CONV_2D 1x1 -> 17 + ADD(PAD(16 -> 17))", input: [1, 20, 20, 12], out_c: 17, shortcut_c: 16, pad: (0, 1), act: none, ..base },
        // A PAD of nothing: the plain residual path.
        PaddedResidual { name: "CONV_2D 1x1 + ADD(PAD of zero width)", input: [1, 12, 12, 8], out_c: 20, shortcut_c: 20, pad: (0, 0), ..base },
        // Spatial padding as well: not fused, the values must still match.
        PaddedResidual { name: "CONV_2D + ADD(PAD of rows, columns and channels), not fused", input: [1, 10, 10, 4], out_c: 8, shortcut_c: 6, pad: (0, 2), spatial: 1, ..base },
    ];
    rows.iter()
        .enumerate()
        .map(|(k, c)| {
            let seed = 1200 + 10 * k as u64;
            Case::new(c.name, &padded_residual_graph(c, false, seed)).same_as_cpu_of(&padded_residual_graph(c, true, seed), Tol::EXACT).gpu_tol(GPU_SUMS)
        })
        .collect()
}
