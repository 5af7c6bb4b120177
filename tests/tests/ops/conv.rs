//! CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV.

use nnrt_core::{Activation, Conv2D, DepthwiseConv2D, OpKind, Padding, TransposeConv};
use nnrt_tests::reference::{self as r, Geom};
use nnrt_tests::{f, rand, Case, Graph, Options, TensorIdx, XorShift};
use nnrt_tests::{Act, BuiltinOperator as Op, Padding as TflPadding, TensorType};

use crate::{dims_i32, noise, random, tflite_unary, GPU_SUMS, SUMS};

nnrt_tests::replay_on_every_target!(tflite_conv_cases, tflite_depthwise_cases, gpu_conv_cases, gpu_depthwise_cases, float16_weight_cases, transpose_conv_cases, tflite_neg_cases, dynamic_filter_cases);

fn ident(v: f32) -> f32 {
    v
}

fn relu(v: f32) -> f32 {
    v.max(0.0)
}

fn relu6(v: f32) -> f32 {
    v.clamp(0.0, 6.0)
}

const fn geom(stride: usize, dilation: usize, same: bool) -> Geom {
    Geom { stride: [stride; 2], dilation: [dilation; 2], same }
}

/// CONV_2D through the TFLite reader against `reference::conv2d`.
fn tflite_conv(name: &str, input: [usize; 4], filter: [usize; 4], g: Geom, bias: bool, act: (Act, fn(f32) -> f32), seed: u64) -> Case {
    let x = random(&input, seed);
    let w = random(&filter, seed + 1);
    let bv = XorShift::new(seed + 2).fill(filter[0], -0.5, 0.5);
    let want = r::conv2d(&x, &w, bias.then_some(bv.as_slice()), g, act.1);
    tflite_unary(name, &x, &want, SUMS, |b, xi, y| {
        let wi = b.constant_f32("w", &dims_i32(&filter), &w.data);
        let bi = if bias { b.constant_f32("b", &[filter[0] as i32], &bv) } else { TensorIdx::ABSENT };
        let padding = if g.same { TflPadding::SAME } else { TflPadding::VALID };
        let opts = Options::Conv2D { padding, stride: [g.stride[0] as i32, g.stride[1] as i32], dilation: [g.dilation[0] as i32, g.dilation[1] as i32], act: act.0 };
        b.op(Op::CONV_2D, &[xi, wi, bi], &[y], opts);
    })
    .gpu_tol(GPU_SUMS)
}

fn tflite_conv_cases() -> Vec<Case> {
    vec![
        tflite_conv("CONV_2D SAME 3x3", [1, 6, 7, 3], [4, 3, 3, 3], geom(1, 1, true), true, (Act::NONE, ident), 10),
        // 8 -> 4 outputs (padding 1, all after); 7 -> 4 outputs (padding 2, split 1/1).
        tflite_conv("CONV_2D SAME stride 2 relu6", [2, 8, 7, 5], [6, 3, 3, 5], geom(2, 1, true), true, (Act::RELU6, relu6), 20),
        // LiteRT's CONV_2D insists on a bias (conv.cc: `TF_LITE_ENSURE(context, has_bias)`); nnrt
        // accepts an absent one (-1), so this case is checked against the reference only.
        tflite_conv("CONV_2D VALID stride 2", [1, 9, 8, 3], [5, 3, 2, 3], Geom { stride: [2, 2], dilation: [1, 1], same: false }, false, (Act::NONE, ident), 30),
        tflite_conv("CONV_2D dilation 2", [1, 7, 7, 2], [3, 3, 3, 2], geom(1, 2, true), true, (Act::RELU, relu), 40),
        tflite_conv("CONV_2D 1x1", [1, 4, 5, 16], [8, 1, 1, 16], geom(1, 1, false), true, (Act::NONE, ident), 50),
    ]
}

/// DEPTHWISE_CONV_2D (3x3, relu6) through the TFLite reader against `reference::depthwise`.
fn tflite_depthwise(name: &str, input: [usize; 4], multiplier: usize, g: Geom, seed: u64) -> Case {
    let oc = input[3] * multiplier;
    let x = random(&input, seed);
    let w = random(&[1, 3, 3, oc], seed + 1);
    let bias = XorShift::new(seed + 2).fill(oc, -0.5, 0.5);
    let want = r::depthwise(&x, &w, Some(&bias), g, relu6);
    tflite_unary(name, &x, &want, SUMS, |b, xi, y| {
        let wi = b.constant_f32("w", &dims_i32(&w.dims), &w.data);
        let bi = b.constant_f32("b", &[oc as i32], &bias);
        let opts = Options::DepthwiseConv2D {
            padding: if g.same { TflPadding::SAME } else { TflPadding::VALID },
            stride: [g.stride[0] as i32, g.stride[1] as i32],
            dilation: [g.dilation[0] as i32, g.dilation[1] as i32],
            depth_multiplier: multiplier as i32,
            act: Act::RELU6,
        };
        b.op(Op::DEPTHWISE_CONV_2D, &[xi, wi, bi], &[y], opts);
    })
    .gpu_tol(GPU_SUMS)
}

fn tflite_depthwise_cases() -> Vec<Case> {
    vec![
        tflite_depthwise("DEPTHWISE_CONV_2D multiplier 2 SAME", [1, 5, 6, 3], 2, geom(1, 1, true), 60),
        tflite_depthwise("DEPTHWISE_CONV_2D multiplier 2 VALID /2", [1, 7, 7, 4], 2, geom(2, 1, false), 70),
    ]
}

/// `v` rounded to float16 and back (nearest even), as the float16 converter stores weights.
fn to_f16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect()
}

/// The float16 converter's pattern: every weight and bias stored as float16, DEQUANTIZE to
/// float32, then the float op. Kernels pack the weights straight from float16; the reference
/// uses the same values rounded to float16.
fn float16_weight_cases() -> Vec<Case> {
    let g = geom(1, 1, true);
    let x = random(&[1, 6, 7, 8], 80);
    let (w, dw) = (random(&[16, 3, 3, 8], 81), random(&[1, 3, 3, 16], 82));
    let (b, db) = (XorShift::new(83).fill(16, -0.5, 0.5), XorShift::new(84).fill(16, -0.5, 0.5));
    let (w16, dw16) = (r::T::new(&w.dims, to_f16(&w.data)), r::T::new(&dw.dims, to_f16(&dw.data)));
    // A conv into a depthwise conv (the two are fused on the cpu backend when it pays).
    let mid = r::conv2d(&x, &w16, Some(&to_f16(&b)), g, relu);
    let want = r::depthwise(&mid, &dw16, Some(&to_f16(&db)), g, relu6);
    let conv_dw = tflite_unary("float16 weights: CONV_2D then DEPTHWISE_CONV_2D", &x, &want, SUMS, |bld, xi, y| {
        let mut dequantized = |name: &str, dims: &[usize], v: &[f32]| {
            let h = bld.constant_f16(&format!("{name}_f16"), &dims_i32(dims), v);
            let t = bld.tensor(name, TensorType::FLOAT32, &dims_i32(dims));
            bld.op(Op::DEQUANTIZE, &[h], &[t], Options::None);
            t
        };
        let (wi, bi, dwi, dbi) = (dequantized("w", &w.dims, &w.data), dequantized("b", &[16], &b), dequantized("dw", &dw.dims, &dw.data), dequantized("db", &[16], &db));
        let m = bld.tensor("mid", TensorType::FLOAT32, &dims_i32(&mid.dims));
        bld.op(Op::CONV_2D, &[xi, wi, bi], &[m], Options::Conv2D { padding: TflPadding::SAME, stride: [1, 1], dilation: [1, 1], act: Act::RELU });
        let opts = Options::DepthwiseConv2D { padding: TflPadding::SAME, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Act::RELU6 };
        bld.op(Op::DEPTHWISE_CONV_2D, &[m, dwi, dbi], &[y], opts);
    });
    let fx = random(&[3, 40], 85);
    let fw = random(&[24, 40], 86);
    let fw16 = r::T::new(&fw.dims, to_f16(&fw.data));
    let want = r::fully_connected(&fx, &fw16, None, false);
    let fc = tflite_unary("float16 weights: FULLY_CONNECTED", &fx, &want, SUMS, |bld, xi, y| {
        let h = bld.constant_f16("w_f16", &[24, 40], &fw.data);
        let wi = bld.tensor("w", TensorType::FLOAT32, &[24, 40]);
        bld.op(Op::DEQUANTIZE, &[h], &[wi], Options::None);
        bld.op(Op::FULLY_CONNECTED, &[xi, wi, TensorIdx::ABSENT], &[y], Options::FullyConnected { act: Act::NONE, keep_num_dims: false });
    });
    vec![conv_dw.gpu_tol(GPU_SUMS), fc.gpu_tol(GPU_SUMS)]
}

/// Output height and width of a window op over `x` with the effective kernel `k`.
fn out_hw(x: [usize; 4], k: [usize; 2], stride: [usize; 2], padding: Padding) -> (usize, usize) {
    match padding {
        Padding::Same => (x[1].div_ceil(stride[0]), x[2].div_ceil(stride[1])),
        Padding::Valid => ((x[1] - k[0]) / stride[0] + 1, (x[2] - k[1]) / stride[1] + 1),
        Padding::Explicit(e) => ((x[1] + e[0] + e[1] - k[0]) / stride[0] + 1, (x[2] + e[2] + e[3] - k[1]) / stride[1] + 1),
        Padding::Explicit3(_) => panic!("a 2-D window takes 4 explicit paddings, not 6"),
    }
}

/// Every GPU convolution path (and its options), compared with the cpu.
fn gpu_conv(name: &str, x: [usize; 4], w: [usize; 4], p: Conv2D, bias: bool, seed: u64) -> Case {
    let mut g = Graph::new();
    let xi = g.input(&x, noise(&x, seed));
    let wi = g.konst(&w, noise(&w, seed + 1));
    let bi = bias.then(|| g.konst(&[w[0]], noise(&[w[0]], seed + 2)));
    let k = [(w[1] - 1) * p.dilation[0] + 1, (w[2] - 1) * p.dilation[1] + 1];
    let (oh, ow) = out_hw(x, k, p.stride, p.padding);
    let o = g.out(nnrt_core::DType::F32, &[x[0], oh, ow, w[0]]);
    g.op(OpKind::Conv2D(p), &[Some(xi), Some(wi), bi], &[o]);
    Case::new(name, &g).same_as_cpu(GPU_SUMS)
}

fn gpu_conv_cases() -> Vec<Case> {
    let c = |padding, stride, dilation, act| Conv2D { padding, stride, dilation, act };
    vec![
        gpu_conv("3x3 same relu", [1, 9, 7, 5], [6, 3, 3, 5], c(Padding::Same, [1, 1], [1, 1], Activation::Relu), true, 1),
        gpu_conv("3x3 valid stride 2 relu6, 5 out channels", [2, 11, 10, 3], [5, 3, 3, 3], c(Padding::Valid, [2, 2], [1, 1], Activation::Relu6), true, 2),
        gpu_conv("3x3 dilation 2 tanh", [1, 12, 12, 4], [3, 3, 3, 4], c(Padding::Same, [1, 1], [2, 2], Activation::Tanh), false, 3),
        gpu_conv("explicit padding", [1, 6, 6, 2], [4, 2, 3, 2], c(Padding::Explicit([1, 0, 2, 1]), [1, 2], [1, 1], Activation::ReluN1To1), true, 4),
        gpu_conv("1x1 as gemm", [2, 7, 5, 9], [11, 1, 1, 9], c(Padding::Same, [1, 1], [1, 1], Activation::None), true, 5),
        gpu_conv("1x1 stride 2 (direct)", [1, 8, 8, 6], [7, 1, 1, 6], c(Padding::Valid, [2, 2], [1, 1], Activation::Relu), false, 6),
    ]
}

fn gpu_depthwise_cases() -> Vec<Case> {
    let rows = [
        ([1, 9, 9, 8], 1, [1, 1], [1, 1], Padding::Same, Activation::Relu6),
        ([2, 10, 7, 3], 2, [2, 2], [1, 1], Padding::Same, Activation::None),
        ([1, 12, 12, 4], 1, [1, 1], [2, 2], Padding::Valid, Activation::Relu),
    ];
    let mut cases = Vec::new();
    for (k, (x, mult, stride, dil, pad, act)) in rows.into_iter().enumerate() {
        let mut g = Graph::new();
        let xi = g.input(&x, noise(&x, 10 + k as u64));
        let c = x[3] * mult;
        let wi = g.konst(&[1, 3, 3, c], noise(&[1, 3, 3, c], 20 + k as u64));
        let bi = g.konst(&[c], noise(&[c], 30 + k as u64));
        let (oh, ow) = out_hw(x, [2 * dil[0] + 1, 2 * dil[1] + 1], stride, pad);
        let o = g.out(nnrt_core::DType::F32, &[x[0], oh, ow, c]);
        let p = DepthwiseConv2D { padding: pad, stride, dilation: dil, depth_multiplier: mult, act };
        g.op(OpKind::DepthwiseConv2D(p), &[Some(xi), Some(wi), Some(bi)], &[o]);
        cases.push(Case::new(format!("depthwise case {k}"), &g).same_as_cpu(GPU_SUMS));
    }
    cases
}

/// TFLite's reference loop for TRANSPOSE_CONV, written out for the tests.
#[allow(clippy::too_many_arguments)]
fn transpose_conv_ref(x: &[f32], xd: [usize; 4], w: &[f32], wd: [usize; 4], od: [usize; 4], stride: [usize; 2], pad: [usize; 2], bias: &[f32]) -> Vec<f32> {
    let mut o = vec![0.0; od.iter().product()];
    for n in 0..xd[0] {
        for iy in 0..xd[1] {
            for ix in 0..xd[2] {
                for ic in 0..xd[3] {
                    for fy in 0..wd[1] {
                        for fx in 0..wd[2] {
                            let oy = (iy * stride[0] + fy) as isize - pad[0] as isize;
                            let ox = (ix * stride[1] + fx) as isize - pad[1] as isize;
                            if oy < 0 || ox < 0 || oy as usize >= od[1] || ox as usize >= od[2] {
                                continue;
                            }
                            for oc in 0..wd[0] {
                                o[((n * od[1] + oy as usize) * od[2] + ox as usize) * od[3] + oc] +=
                                    x[((n * xd[1] + iy) * xd[2] + ix) * xd[3] + ic] * w[((oc * wd[1] + fy) * wd[2] + fx) * wd[3] + ic];
                            }
                        }
                    }
                }
            }
        }
    }
    for (k, v) in o.iter_mut().enumerate() {
        *v += bias.get(k % od[3]).copied().unwrap_or(0.0);
    }
    o
}

/// A TRANSPOSE_CONV model on seeded data: (graph, x, w, bias or empty).
fn transpose_conv_model(xd: [usize; 4], wd: [usize; 4], od: [usize; 4], p: TransposeConv, bias: bool, seed: u64) -> (Graph, Vec<f32>, Vec<f32>, Vec<f32>) {
    let x = rand(xd.iter().product(), seed, -1.0, 1.0);
    let w = rand(wd.iter().product(), seed + 1, -1.0, 1.0);
    let bv = rand(wd[0], seed + 2, -0.5, 0.5);
    let mut g = Graph::new();
    let shape = g.ints(&od.map(|d| d as i32));
    let wi = g.konst(&wd, f(&w));
    let xi = g.input(&xd, f(&x));
    let bi = bias.then(|| g.konst(&[wd[0]], f(&bv)));
    let y = g.out(nnrt_core::DType::F32, &od);
    g.op(OpKind::TransposeConv(p), &[Some(shape), Some(wi), Some(xi), bi], &[y]);
    (g, x, w, if bias { bv } else { vec![] })
}

fn transpose_conv_cases() -> Vec<Case> {
    const NO_KERNEL: &str = "no TransposeConv kernel";
    let mut cases = Vec::new();
    // TFLite transpose_conv_test SimpleTest: 4x4 input 1..16, 3x3 filter 1..9, SAME, stride 1.
    let mut g = Graph::new();
    let shape = g.ints(&[1, 4, 4, 1]);
    let w = g.konst(&[1, 3, 3, 1], f(&(1..=9).map(|v| v as f32).collect::<Vec<_>>()));
    let x = g.input(&[1, 4, 4, 1], f(&(1..=16).map(|v| v as f32).collect::<Vec<_>>()));
    let y = g.out(nnrt_core::DType::F32, &[1, 4, 4, 1]);
    let p = TransposeConv { padding: Padding::Same, stride: [1, 1], act: Activation::None };
    g.op(OpKind::TransposeConv(p), &[Some(shape), Some(w), Some(x), None], &[y]);
    let want = [29.0, 62.0, 83.0, 75.0, 99.0, 192.0, 237.0, 198.0, 207.0, 372.0, 417.0, 330.0, 263.0, 446.0, 485.0, 365.0];
    cases.push(Case::new("transpose_conv_tflite_example_same_stride1", &g).out(0, f(&want)).no_gpu(NO_KERNEL));
    for (padding, od) in [(Padding::Valid, [2, 9, 11, 3]), (Padding::Same, [2, 8, 10, 3])] {
        let p = TransposeConv { padding, stride: [2, 2], act: Activation::Relu };
        let (g, x, w, bias) = transpose_conv_model([2, 4, 5, 6], [3, 3, 3, 6], od, p, true, 7);
        let want: Vec<f32> = transpose_conv_ref(&x, [2, 4, 5, 6], &w, [3, 3, 3, 6], od, [2, 2], [0, 0], &bias).iter().map(|v| v.max(0.0)).collect();
        let name = format!("transpose_conv stride 2 {padding:?} bias relu");
        cases.push(Case::new(name, &g).dims(0, &od).out_close(0, f(&want), SUMS).no_gpu(NO_KERNEL));
    }
    // SAME with odd total padding: out 7 from in 4, k 3, stride 2 -> pad (1, 1) on top.
    let p = TransposeConv { padding: Padding::Same, stride: [2, 2], act: Activation::None };
    let (g, x, w, _) = transpose_conv_model([1, 4, 4, 2], [2, 3, 3, 2], [1, 7, 7, 2], p, false, 9);
    let want = transpose_conv_ref(&x, [1, 4, 4, 2], &w, [2, 3, 3, 2], [1, 7, 7, 2], [2, 2], [1, 1], &[]);
    cases.push(Case::new("transpose_conv same odd", &g).out_close(0, f(&want), SUMS).no_gpu(NO_KERNEL));
    let mut g = Graph::new();
    let shape = g.ints(&[1, 4, 4, 2]);
    let w = g.konst(&[2, 3, 3, 5], f(&[0.0; 90]));
    let x = g.input(&[1, 4, 4, 3], f(&[0.0; 48]));
    let y = g.out(nnrt_core::DType::F32, &[1, 4, 4, 2]);
    g.op(OpKind::TransposeConv(TransposeConv { padding: Padding::Same, stride: [1, 1], act: Activation::None }), &[Some(shape), Some(w), Some(x), None], &[y]);
    cases.push(Case::new("neg_transpose_conv_channel_mismatch", &g).prepare_error(&["TransposeConv", "channels"]));
    cases
}

/// CONV_2D through the TFLite reader (which must load it): 3 input channels, a filter for 2
/// (and 2 does not divide 3, so not grouped).
fn tflite_neg_cases() -> Vec<Case> {
    let x = nnrt_tests::reference::T::new(&[1, 5, 5, 3], vec![0.0; 75]);
    let y = nnrt_tests::reference::T::new(&[1, 5, 5, 4], vec![0.0; 100]);
    let case = tflite_unary("neg_prepare_conv_filter_channel_mismatch", &x, &y, SUMS, |b, xi, yi| {
        let w = b.constant_f32("w", &[4, 3, 3, 2], &[0.5; 72]);
        b.op(Op::CONV_2D, &[xi, w, TensorIdx::ABSENT], &[yi], Options::conv(TflPadding::SAME, 1, Act::NONE));
    });
    vec![case.prepare_error(&["Conv2D", "input channels"])]
}

/// A convolution whose filter (and bias, with `dyn_bias`) is computed at run time, fed here as
/// graph inputs (TFLite allows it; a DEQUANTIZE of a variable or a weight-generating subgraph
/// does it): the same values as the constant-filter model, bit for bit.
fn dynamic_filter(name: &str, x: [usize; 4], w: [usize; 4], kind: OpKind, dyn_bias: bool, seed: u64) -> Case {
    let out_c = if matches!(kind, OpKind::DepthwiseConv2D(_)) { w[3] } else { w[0] };
    let (pad, stride, dil) = match &kind {
        OpKind::Conv2D(p) => (p.padding, p.stride, p.dilation),
        OpKind::DepthwiseConv2D(p) => (p.padding, p.stride, p.dilation),
        _ => unreachable!("a 2-D convolution"),
    };
    let k = [(w[1] - 1) * dil[0] + 1, (w[2] - 1) * dil[1] + 1];
    let (oh, ow) = out_hw(x, k, stride, pad);
    let graph = |computed: bool| {
        let mut g = Graph::new();
        let xi = g.input(&x, noise(&x, seed));
        let (wv, bv) = (noise(&w, seed + 1), noise(&[out_c], seed + 2));
        let wi = if computed { g.input(&w, wv) } else { g.konst(&w, wv) };
        let bi = if computed && dyn_bias { g.input(&[out_c], bv) } else { g.konst(&[out_c], bv) };
        let o = g.out(nnrt_core::DType::F32, &[x[0], oh, ow, out_c]);
        g.op(kind.clone(), &[Some(xi), Some(wi), Some(bi)], &[o]);
        g
    };
    Case::new(name, &graph(true)).same_as_cpu_of(&graph(false), nnrt_tests::Tol::EXACT).gpu_tol(GPU_SUMS)
}

fn dynamic_filter_cases() -> Vec<Case> {
    let conv = |stride, act| OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [stride; 2], dilation: [1, 1], act });
    let dw = |m, act| OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Valid, stride: [1, 1], dilation: [2, 2], depth_multiplier: m, act });
    vec![
        dynamic_filter("CONV_2D 3x3 with a computed filter", [1, 9, 8, 5], [7, 3, 3, 5], conv(1, Activation::Relu6), false, 3100),
        dynamic_filter("CONV_2D 1x1 stride 2 with a computed filter and bias", [2, 10, 10, 16], [24, 1, 1, 16], conv(2, Activation::None), true, 3110),
        dynamic_filter("grouped CONV_2D with a computed filter", [1, 6, 6, 8], [6, 3, 3, 4], conv(1, Activation::Relu), true, 3120)
            .no_gpu("a grouped convolution has no gpu kernel (gpu;cpu runs it on the cpu)"),
        dynamic_filter("DEPTHWISE_CONV_2D dilation 2 with a computed filter", [1, 11, 10, 6], [1, 3, 3, 6], dw(1, Activation::Relu), false, 3130),
        dynamic_filter("DEPTHWISE_CONV_2D multiplier 2 with a computed filter and bias", [1, 9, 9, 3], [1, 3, 3, 6], dw(2, Activation::None), true, 3140),
    ]
}

/// A float16 model's weights are packed from transient float32 copies: after prepare on the cpu
/// backend no widened float32 copy is kept (through the PAD fold, the expand → depthwise →
/// projection block fusion and the 1×1 convolution), and the outputs equal those of the same
/// model with the rounded weights stored as float32, bit for bit.
#[test]
fn float16_weights_keep_no_float32_copy_after_prepare() {
    let x = random(&[1, 16, 16, 8], 90);
    let (w1, dw, w2) = (random(&[16, 3, 3, 8], 91), random(&[1, 3, 3, 16], 92), random(&[8, 1, 1, 16], 93));
    let build = |half: bool| {
        let mut b = nnrt_tests::ModelBuilder::new();
        let xi = b.input("x", TensorType::FLOAT32, &[1, 16, 16, 8]);
        let weight = |b: &mut nnrt_tests::ModelBuilder, name: &str, t: &r::T| {
            if !half {
                return b.constant_f32(name, &dims_i32(&t.dims), &to_f16(&t.data));
            }
            let h = b.constant_f16(&format!("{name}_f16"), &dims_i32(&t.dims), &t.data);
            let w = b.tensor(name, TensorType::FLOAT32, &dims_i32(&t.dims));
            b.op(Op::DEQUANTIZE, &[h], &[w], Options::None);
            w
        };
        let (w1i, dwi, w2i) = (weight(&mut b, "w1", &w1), weight(&mut b, "dw", &dw), weight(&mut b, "w2", &w2));
        let pads = b.constant_i32("pads", &[4, 2], &[0, 0, 1, 1, 1, 1, 0, 0]);
        let padded = b.tensor("padded", TensorType::FLOAT32, &[1, 18, 18, 8]);
        b.op(Op::PAD, &[xi, pads], &[padded], Options::None);
        let (c1, d1, y) = (b.tensor("c1", TensorType::FLOAT32, &[1, 8, 8, 16]), b.tensor("d1", TensorType::FLOAT32, &[1, 8, 8, 16]), b.tensor("y", TensorType::FLOAT32, &[1, 8, 8, 8]));
        b.op(Op::CONV_2D, &[padded, w1i, TensorIdx::ABSENT], &[c1], Options::Conv2D { padding: TflPadding::VALID, stride: [2, 2], dilation: [1, 1], act: Act::RELU6 });
        let opts = Options::DepthwiseConv2D { padding: TflPadding::SAME, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Act::RELU6 };
        b.op(Op::DEPTHWISE_CONV_2D, &[c1, dwi, TensorIdx::ABSENT], &[d1], opts);
        b.op(Op::CONV_2D, &[d1, w2i, TensorIdx::ABSENT], &[y], Options::Conv2D { padding: TflPadding::VALID, stride: [1, 1], dilation: [1, 1], act: Act::NONE });
        b.output(y);
        let model = nnrt_loaders::tflite::load_bytes("float16", b.finish()).expect("load");
        let mut s = nnrt::Session::from_model(model).expect("session");
        s.set_backends("cpu").expect("backends");
        s.prepare().expect("prepare");
        s
    };
    let mut half = build(true);
    let g = half.prepared().expect("prepared").graph();
    let widened: Vec<_> = g.operands.iter().filter_map(|o| o.data.as_ref()).filter(|d| d.is_widened_f16()).collect();
    assert_eq!(widened.len(), 3, "the three float16 weights are folded to widened constants");
    assert!(widened.iter().all(|d| d.widen_unkept().is_some()), "prepare kept a float32 copy of a float16 weight");
    let mut full = build(false);
    let bytes: Vec<u8> = x.data.iter().flat_map(|v| v.to_le_bytes()).collect();
    for s in [&mut half, &mut full] {
        s.set_input(0, &bytes).expect("input");
        s.run().expect("run");
    }
    assert_eq!(half.output(0).expect("output"), full.output(0).expect("output"));
}
