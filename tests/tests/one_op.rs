//! One-op models built in memory with `ModelBuilder`, run through `Session` on the `cpu` backend
//! (1 and 2 threads) and compared with the plain reference kernels in `common::reference`.
//!
//! Tolerances, and why:
//! - data movement (RESHAPE, TRANSPOSE, PAD, CONCATENATION) and single IEEE operations (ADD,
//!   SUB, MUL, RELU, MAX_POOL): bit-exact, nothing is rounded differently;
//! - sums (CONV_2D, DEPTHWISE, FULLY_CONNECTED, AVERAGE_POOL, MEAN): a kernel may add in another
//!   order or with FMA; for K ≤ 100 terms of size ~1 the rounding error stays below ~K·2⁻²⁴·Σ|xᵢwᵢ|,
//!   so 1e-5 absolute + 1e-5 relative;
//! - DIV: a kernel may multiply by a reciprocal (≤ 2 ulp): 3e-7 relative;
//! - exp-based (LOGISTIC, TANH, SOFTMAX): vectorized exp/tanh approximations are accurate to a few
//!   ulp of their result, which lies in [-1, 1]: 2e-6 absolute.

mod common;

use common::reference::{self as r, Fill, Geom};
use common::{dims_i32, run_and_compare, Tol, T};
use nnrt_tests::{Act, BuiltinOperator as Op, MirrorPadMode, ModelBuilder, Options, Padding, TensorIdx, TensorType, XorShift};

const F32: TensorType = TensorType::FLOAT32;
const SUMS: Tol = Tol { abs: 1e-5, rel: 1e-5 };
const TRANSCENDENTAL: Tol = Tol { abs: 2e-6, rel: 0.0 };

fn ident(v: f32) -> f32 {
    v
}

fn relu(v: f32) -> f32 {
    v.max(0.0)
}

fn relu6(v: f32) -> f32 {
    v.clamp(0.0, 6.0)
}

/// Random values in [-1, 1) with a seed per test so failures reproduce.
fn random(dims: &[usize], seed: u64) -> T {
    T::new(dims, XorShift::new(seed).fill(dims.iter().product(), -1.0, 1.0))
}

/// A model `y = op(x, constants…)` with one float32 graph input and output `out_dims`.
fn single_input(x_dims: &[usize], out_dims: &[usize], build: impl FnOnce(&mut ModelBuilder, TensorIdx, TensorIdx)) -> ModelBuilder {
    let mut b = ModelBuilder::new();
    let x = b.input("x", F32, &dims_i32(x_dims));
    let y = b.tensor("y", F32, &dims_i32(out_dims));
    build(&mut b, x, y);
    b.output(y);
    b
}

// ---- CONV_2D ---------------------------------------------------------------------------------

struct ConvCase {
    input: [usize; 4],
    filter: [usize; 4],
    geom: Geom,
    bias: bool,
    act: (Act, fn(f32) -> f32),
}

fn check_conv(what: &str, c: ConvCase, seed: u64) {
    let x = random(&c.input, seed);
    let w = random(&c.filter, seed + 1);
    let bias = XorShift::new(seed + 2).fill(c.filter[0], -0.5, 0.5);
    let bias_ref = c.bias.then_some(bias.as_slice());
    let want = r::conv2d(&x, &w, bias_ref, c.geom, c.act.1);
    let padding = if c.geom.same { Padding::SAME } else { Padding::VALID };
    let b = single_input(&c.input, &want.dims, |b, xi, y| {
        let wi = b.constant_f32("w", &dims_i32(&c.filter), &w.data);
        let bi = if c.bias { b.constant_f32("b", &[c.filter[0] as i32], &bias) } else { TensorIdx::ABSENT };
        let g = c.geom;
        let opts = Options::Conv2D { padding, stride: [g.stride[0] as i32, g.stride[1] as i32], dilation: [g.dilation[0] as i32, g.dilation[1] as i32], act: c.act.0 };
        b.op(Op::CONV_2D, &[xi, wi, bi], &[y], opts);
    });
    run_and_compare(what, &b, &[&x.data], &want, SUMS);
}

#[test]
fn conv2d_same_stride1_bias() {
    let geom = Geom { stride: [1, 1], dilation: [1, 1], same: true };
    check_conv("CONV_2D SAME 3x3", ConvCase { input: [1, 6, 7, 3], filter: [4, 3, 3, 3], geom, bias: true, act: (Act::NONE, ident) }, 10);
}

#[test]
fn conv2d_same_stride2_relu6_even_and_odd_sizes() {
    let geom = Geom { stride: [2, 2], dilation: [1, 1], same: true };
    // 8 -> 4 outputs (padding 1, all after); 7 -> 4 outputs (padding 2, split 1/1).
    check_conv("CONV_2D SAME stride 2 relu6", ConvCase { input: [2, 8, 7, 5], filter: [6, 3, 3, 5], geom, bias: true, act: (Act::RELU6, relu6) }, 20);
}

/// LiteRT's CONV_2D insists on a bias (conv.cc: `TF_LITE_ENSURE(context, has_bias)`); nnrt
/// accepts an absent one (-1), so this case is checked against the reference only.
#[test]
fn conv2d_valid_stride2_no_bias() {
    let geom = Geom { stride: [2, 2], dilation: [1, 1], same: false };
    check_conv("CONV_2D VALID stride 2", ConvCase { input: [1, 9, 8, 3], filter: [5, 3, 2, 3], geom, bias: false, act: (Act::NONE, ident) }, 30);
}

#[test]
fn conv2d_dilation2_same_relu() {
    let geom = Geom { stride: [1, 1], dilation: [2, 2], same: true };
    check_conv("CONV_2D dilation 2", ConvCase { input: [1, 7, 7, 2], filter: [3, 3, 3, 2], geom, bias: true, act: (Act::RELU, relu) }, 40);
}

#[test]
fn conv2d_1x1_valid() {
    let geom = Geom { stride: [1, 1], dilation: [1, 1], same: false };
    check_conv("CONV_2D 1x1", ConvCase { input: [1, 4, 5, 16], filter: [8, 1, 1, 16], geom, bias: true, act: (Act::NONE, ident) }, 50);
}

// ---- DEPTHWISE_CONV_2D -----------------------------------------------------------------------

fn check_depthwise(what: &str, input: [usize; 4], multiplier: usize, geom: Geom, seed: u64) {
    let oc = input[3] * multiplier;
    let x = random(&input, seed);
    let w = random(&[1, 3, 3, oc], seed + 1);
    let bias = XorShift::new(seed + 2).fill(oc, -0.5, 0.5);
    let want = r::depthwise(&x, &w, Some(&bias), geom, relu6);
    let b = single_input(&input, &want.dims, |b, xi, y| {
        let wi = b.constant_f32("w", &dims_i32(&w.dims), &w.data);
        let bi = b.constant_f32("b", &[oc as i32], &bias);
        let opts = Options::DepthwiseConv2D {
            padding: if geom.same { Padding::SAME } else { Padding::VALID },
            stride: [geom.stride[0] as i32, geom.stride[1] as i32],
            dilation: [geom.dilation[0] as i32, geom.dilation[1] as i32],
            depth_multiplier: multiplier as i32,
            act: Act::RELU6,
        };
        b.op(Op::DEPTHWISE_CONV_2D, &[xi, wi, bi], &[y], opts);
    });
    run_and_compare(what, &b, &[&x.data], &want, SUMS);
}

#[test]
fn depthwise_multiplier2_same() {
    check_depthwise("DEPTHWISE_CONV_2D multiplier 2 SAME", [1, 5, 6, 3], 2, Geom { stride: [1, 1], dilation: [1, 1], same: true }, 60);
}

#[test]
fn depthwise_multiplier2_valid_stride2() {
    check_depthwise("DEPTHWISE_CONV_2D multiplier 2 VALID /2", [1, 7, 7, 4], 2, Geom { stride: [2, 2], dilation: [1, 1], same: false }, 70);
}

// ---- FULLY_CONNECTED -------------------------------------------------------------------------

fn check_fc(what: &str, input: &[usize], n: usize, bias: bool, keep_num_dims: bool, seed: u64) {
    let k = *input.last().expect("rank >= 1");
    let x = random(input, seed);
    let w = random(&[n, k], seed + 1);
    let bv = XorShift::new(seed + 2).fill(n, -0.5, 0.5);
    let want = r::fully_connected(&x, &w, bias.then_some(bv.as_slice()), keep_num_dims);
    let b = single_input(input, &want.dims, |b, xi, y| {
        let wi = b.constant_f32("w", &dims_i32(&w.dims), &w.data);
        let bi = if bias { b.constant_f32("b", &[n as i32], &bv) } else { TensorIdx::ABSENT };
        b.op(Op::FULLY_CONNECTED, &[xi, wi, bi], &[y], Options::FullyConnected { act: Act::NONE, keep_num_dims });
    });
    run_and_compare(what, &b, &[&x.data], &want, SUMS);
}

#[test]
fn fully_connected_flattens_leading_dims() {
    check_fc("FULLY_CONNECTED keep_num_dims=false", &[2, 3, 8], 5, true, false, 80);
}

#[test]
fn fully_connected_keep_num_dims() {
    check_fc("FULLY_CONNECTED keep_num_dims=true", &[2, 3, 8], 5, true, true, 90);
}

#[test]
fn fully_connected_without_bias() {
    check_fc("FULLY_CONNECTED no bias", &[4, 20], 7, false, false, 100);
}

// ---- pooling ---------------------------------------------------------------------------------

fn check_pool(what: &str, code: Op, max: bool, seed: u64) {
    // 5x6 input, 3x3 window, stride 2, SAME: border windows hang over the edge, so the average
    // must count only the cells inside (TFLite) and the max must ignore the padding.
    let input = [1, 5, 6, 2];
    let geom = Geom { stride: [2, 2], dilation: [1, 1], same: true };
    let x = random(&input, seed);
    let want = r::pool(&x, [3, 3], geom, max);
    let b = single_input(&input, &want.dims, |b, xi, y| {
        b.op(code, &[xi], &[y], Options::Pool2D { padding: Padding::SAME, stride: [2, 2], filter: [3, 3], act: Act::NONE });
    });
    run_and_compare(what, &b, &[&x.data], &want, if max { Tol::EXACT } else { SUMS });
}

#[test]
fn average_pool_same_counts_only_inside_cells() {
    check_pool("AVERAGE_POOL_2D SAME", Op::AVERAGE_POOL_2D, false, 110);
}

#[test]
fn max_pool_same_ignores_padding() {
    // All-negative inputs: a kernel that pads with 0 would return 0 at the border.
    let input = [1, 5, 6, 2];
    let x = random(&input, 120).map(|v| v - 2.0);
    let geom = Geom { stride: [2, 2], dilation: [1, 1], same: true };
    let want = r::pool(&x, [3, 3], geom, true);
    let b = single_input(&input, &want.dims, |b, xi, y| {
        b.op(Op::MAX_POOL_2D, &[xi], &[y], Options::Pool2D { padding: Padding::SAME, stride: [2, 2], filter: [3, 3], act: Act::NONE });
    });
    run_and_compare("MAX_POOL_2D SAME negative", &b, &[&x.data], &want, Tol::EXACT);
}

// ---- binary element-wise with broadcasting -----------------------------------------------------

fn check_binary(what: &str, code: Op, b_dims: &[usize], act: Act, seed: u64) {
    let a_dims = [1, 4, 5, 3];
    let a = random(&a_dims, seed).map(|v| v * 4.0);
    // Divisors away from 0: |b| in [0.5, 1.5).
    let bt = random(b_dims, seed + 1).map(|v| if v < 0.0 { v - 0.5 } else { v + 0.5 });
    let f: fn(f32, f32) -> f32 = match code {
        Op::ADD => |x, y| x + y,
        Op::SUB => |x, y| x - y,
        Op::MUL => |x, y| x * y,
        _ => |x, y| x / y,
    };
    let fused: fn(f32) -> f32 = if act == Act::RELU { relu } else { ident };
    let want = r::binary(&a, &bt, f).map(fused);
    let options = match code {
        Op::ADD => Options::Add { act },
        Op::SUB => Options::Sub { act },
        Op::MUL => Options::Mul { act },
        _ => Options::Div { act },
    };
    let mut b = ModelBuilder::new();
    let ai = b.input("a", F32, &dims_i32(&a_dims));
    let bi = b.input("b", F32, &dims_i32(b_dims));
    let y = b.tensor("y", F32, &dims_i32(&want.dims));
    b.op(code, &[ai, bi], &[y], options);
    b.output(y);
    let tol = if code == Op::DIV { Tol { abs: 0.0, rel: 3e-7 } } else { Tol::EXACT };
    run_and_compare(what, &b, &[&a.data, &bt.data], &want, tol);
}

#[test]
fn add_broadcast_last_dim_relu() {
    check_binary("ADD [1,4,5,3]+[3] relu", Op::ADD, &[3], Act::RELU, 130);
}

#[test]
fn add_broadcast_middle_dim() {
    check_binary("ADD [1,4,5,3]+[1,1,5,1]", Op::ADD, &[1, 1, 5, 1], Act::NONE, 140);
}

#[test]
fn sub_broadcast_both_ways_relu() {
    check_binary("SUB [1,4,5,3]-[3] relu", Op::SUB, &[3], Act::RELU, 150);
    check_binary("SUB [1,4,5,3]-[1,1,5,1]", Op::SUB, &[1, 1, 5, 1], Act::NONE, 151);
}

#[test]
fn mul_broadcast_both_ways_relu() {
    check_binary("MUL [1,4,5,3]*[3]", Op::MUL, &[3], Act::NONE, 160);
    check_binary("MUL [1,4,5,3]*[1,1,5,1] relu", Op::MUL, &[1, 1, 5, 1], Act::RELU, 161);
}

#[test]
fn div_broadcast_both_ways_relu() {
    check_binary("DIV [1,4,5,3]/[3] relu", Op::DIV, &[3], Act::RELU, 170);
    check_binary("DIV [1,4,5,3]/[1,1,5,1]", Op::DIV, &[1, 1, 5, 1], Act::NONE, 171);
}

// ---- activations -------------------------------------------------------------------------------

fn check_unary(what: &str, code: Op, options: Options, f: impl Fn(f32) -> f32, tol: Tol) {
    // [-8, 8) covers every clamp and saturation point, plus exact values at the kinks.
    let mut data = XorShift::new(180).fill(2 * 3 * 37, -8.0, 8.0);
    data[..9].copy_from_slice(&[-6.0, -3.0, -1.0, -0.0, 0.0, 1.0, 3.0, 6.0, 7.5]);
    let x = T::new(&[2, 3, 37], data);
    let want = x.map(f);
    let b = single_input(&x.dims, &x.dims, |b, xi, y| {
        b.op(code, &[xi], &[y], options);
    });
    run_and_compare(what, &b, &[&x.data], &want, tol);
}

#[test]
fn relu_family() {
    check_unary("RELU", Op::RELU, Options::None, relu, Tol::EXACT);
    check_unary("RELU6", Op::RELU6, Options::None, relu6, Tol::EXACT);
    check_unary("RELU_N1_TO_1", Op::RELU_N1_TO_1, Options::None, |v| v.clamp(-1.0, 1.0), Tol::EXACT);
}

#[test]
fn logistic_and_tanh() {
    check_unary("LOGISTIC", Op::LOGISTIC, Options::None, |v| (1.0 / (1.0 + (-(v as f64)).exp())) as f32, TRANSCENDENTAL);
    check_unary("TANH", Op::TANH, Options::None, |v| (v as f64).tanh() as f32, TRANSCENDENTAL);
}

#[test]
fn hard_swish() {
    // x * relu6(x + 3) / 6: three roundings; 1 ulp of |x| ≤ 8 is ~1e-6.
    check_unary("HARD_SWISH", Op::HARD_SWISH, Options::None, |v| v * (v + 3.0).clamp(0.0, 6.0) / 6.0, Tol { abs: 1e-6, rel: 1e-6 });
}

#[test]
fn leaky_relu_alpha() {
    check_unary("LEAKY_RELU 0.3", Op::LEAKY_RELU, Options::LeakyRelu { alpha: 0.3 }, |v| if v >= 0.0 { v } else { 0.3 * v }, Tol::EXACT);
}

// ---- reductions, softmax ----------------------------------------------------------------------

fn check_mean(keep_dims: bool) {
    let x = random(&[2, 4, 5, 3], 190);
    let want = r::mean(&x, &[1, 2], keep_dims);
    let b = single_input(&x.dims, &want.dims, |b, xi, y| {
        let axes = b.constant_i32("axes", &[2], &[1, 2]);
        b.op(Op::MEAN, &[xi, axes], &[y], Options::Reducer { keep_dims });
    });
    run_and_compare(&format!("MEAN axes [1,2] keep_dims={keep_dims}"), &b, &[&x.data], &want, SUMS);
}

#[test]
fn mean_over_h_w_keep_dims() {
    check_mean(true);
}

#[test]
fn mean_over_h_w_drop_dims() {
    check_mean(false);
}

#[test]
fn softmax_beta_half() {
    let x = random(&[3, 11], 200).map(|v| v * 10.0);
    let want = r::softmax(&x, 0.5);
    let b = single_input(&x.dims, &x.dims, |b, xi, y| {
        b.op(Op::SOFTMAX, &[xi], &[y], Options::Softmax { beta: 0.5 });
    });
    run_and_compare("SOFTMAX beta 0.5", &b, &[&x.data], &want, TRANSCENDENTAL);
}

// ---- data movement --------------------------------------------------------------------------------

#[test]
fn concatenation_last_axis() {
    let (a, c) = (random(&[1, 2, 3, 4], 210), random(&[1, 2, 3, 2], 211));
    let want = r::concat(&[&a, &c], 3);
    let mut b = ModelBuilder::new();
    let ai = b.input("a", F32, &[1, 2, 3, 4]);
    let ci = b.input("c", F32, &[1, 2, 3, 2]);
    let y = b.tensor("y", F32, &[1, 2, 3, 6]);
    b.op(Op::CONCATENATION, &[ai, ci], &[y], Options::Concatenation { axis: -1, act: Act::NONE });
    b.output(y);
    run_and_compare("CONCATENATION axis -1", &b, &[&a.data, &c.data], &want, Tol::EXACT);
}

#[test]
fn reshape_with_minus_one() {
    let x = random(&[1, 2, 3, 4], 220);
    let want = T::new(&[2, 12], x.data.clone());
    let from_input = single_input(&x.dims, &want.dims, |b, xi, y| {
        let shape = b.constant_i32("shape", &[2], &[2, -1]);
        b.op(Op::RESHAPE, &[xi, shape], &[y], Options::Reshape { new_shape: Some(vec![2, -1]) });
    });
    run_and_compare("RESHAPE to [2,-1] (shape input)", &from_input, &[&x.data], &want, Tol::EXACT);
    let from_options = single_input(&x.dims, &want.dims, |b, xi, y| {
        b.op(Op::RESHAPE, &[xi], &[y], Options::Reshape { new_shape: Some(vec![-1, 12]) });
    });
    run_and_compare("RESHAPE to [-1,12] (options only)", &from_options, &[&x.data], &want, Tol::EXACT);
}

#[test]
fn transpose_nhwc_to_nchw() {
    let x = random(&[2, 3, 4, 5], 230);
    let want = r::transpose(&x, &[0, 3, 1, 2]);
    let b = single_input(&x.dims, &want.dims, |b, xi, y| {
        let perm = b.constant_i32("perm", &[4], &[0, 3, 1, 2]);
        b.op(Op::TRANSPOSE, &[xi, perm], &[y], Options::None);
    });
    run_and_compare("TRANSPOSE [0,3,1,2]", &b, &[&x.data], &want, Tol::EXACT);
}

const PADS: [[usize; 2]; 4] = [[0, 0], [1, 2], [2, 1], [0, 1]];

fn pads_i32(pads: &[[usize; 2]]) -> Vec<i32> {
    pads.iter().flat_map(|p| [p[0] as i32, p[1] as i32]).collect()
}

fn check_pad(what: &str, code: Op, fill: Fill, options: Options) {
    let x = random(&[1, 3, 4, 2], 240);
    let want = r::pad(&x, &PADS, fill);
    let b = single_input(&x.dims, &want.dims, |b, xi, y| {
        let pads = b.constant_i32("paddings", &[4, 2], &pads_i32(&PADS));
        let mut inputs = vec![xi, pads];
        if let (Op::PADV2, Fill::Value(v)) = (code, fill) {
            inputs.push(b.constant_f32("value", &[], &[v]));
        }
        b.op(code, &inputs, &[y], options);
    });
    run_and_compare(what, &b, &[&x.data], &want, Tol::EXACT);
}

#[test]
fn pad_with_zeros() {
    check_pad("PAD", Op::PAD, Fill::Value(0.0), Options::None);
}

#[test]
fn padv2_with_value() {
    check_pad("PADV2 -3.5", Op::PADV2, Fill::Value(-3.5), Options::None);
}

#[test]
fn mirror_pad_reflect() {
    check_pad("MIRROR_PAD REFLECT", Op::MIRROR_PAD, Fill::Reflect, Options::MirrorPad { mode: MirrorPadMode::REFLECT });
}

#[test]
fn mirror_pad_symmetric() {
    check_pad("MIRROR_PAD SYMMETRIC", Op::MIRROR_PAD, Fill::Symmetric, Options::MirrorPad { mode: MirrorPadMode::SYMMETRIC });
}

// ---- DEQUANTIZE -------------------------------------------------------------------------------------

#[test]
fn dequantize_f16_constant_feeding_add() {
    // The float16 converter's pattern: f16 weights -> DEQUANTIZE -> float op. The values are not
    // all exact in f16; the reference rounds them the same way (nearest even) before adding.
    let consts = [0.1f32, -2.5, 1000.3];
    let rounded: Vec<f32> = consts.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
    let x = random(&[1, 4, 5, 3], 250);
    let want = r::binary(&x, &T::new(&[3], rounded), |a, c| a + c);
    let b = single_input(&x.dims, &want.dims, |b, xi, y| {
        let c16 = b.constant_f16("c_f16", &[3], &consts);
        let c32 = b.tensor("c", F32, &[3]);
        b.op(Op::DEQUANTIZE, &[c16], &[c32], Options::None);
        b.op(Op::ADD, &[xi, c32], &[y], Options::Add { act: Act::NONE });
    });
    run_and_compare("DEQUANTIZE f16 + ADD", &b, &[&x.data], &want, Tol::EXACT);
}
