//! The `gpu` backend against the `cpu` backend: every GPU kernel family (and its options) runs a
//! one-op model on both and must agree; partitions, fallbacks with their reasons, and
//! `OP_BACKEND_MAP` splits of a real model must give the reference outputs.
//!
//! On a machine with no GPU adapter at all (not even a software Vulkan one such as lavapipe)
//! every test prints why it is skipped and returns.
//!
//! Tolerances: the GPU sums in another order and its exp/log/tanh come from the driver's math
//! library, so sums get 1e-5 absolute + 1e-5 relative and transcendental functions 2e-5 absolute +
//! 2e-5 relative; data movement (concat, pad, transpose, reshape, nearest resize) and max/min
//! must be bit-exact.

use nnrt::{DType, Session};
use nnrt_core::{
    Activation, BinaryOp, ConstData, Conv2D, DepthwiseConv2D, FullyConnected, Model, OpKind, Operand, OperandId, Operation, Padding, Pool2D,
    PoolKind, ReduceOp, Resize, ResizeMode, Subgraph, UnaryOp,
};
use nnrt_tests::XorShift;

/// Whether a GPU adapter exists; prints why a test is skipped when none does.
fn gpu_or_skip(test: &str) -> bool {
    match nnrt_backend_gpu::GpuBackend::new(std::env::var("GPU_ADAPTER").ok().as_deref()) {
        Ok(b) => {
            eprintln!("{test}: gpu adapter '{}'", b.gpu().adapter_name());
            true
        }
        Err(why) => {
            eprintln!("{test}: SKIPPED, no GPU adapter: {why}");
            false
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Tol {
    abs: f32,
    rel: f32,
}

const EXACT: Tol = Tol { abs: 0.0, rel: 0.0 };
const SUMS: Tol = Tol { abs: 1e-5, rel: 1e-5 };
const TRANSCENDENTAL: Tol = Tol { abs: 2e-5, rel: 2e-5 };

fn rand(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut r = XorShift::new(seed);
    r.fill(n, lo, hi)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A one-subgraph model under construction, with the bytes fed to each input.
#[derive(Default)]
struct G {
    g: Subgraph,
    feeds: Vec<Vec<u8>>,
}

impl G {
    fn input(&mut self, dims: &[usize], seed: u64) -> OperandId {
        self.input_values(dims, &rand(dims.iter().product(), seed, -1.0, 1.0))
    }

    fn input_values(&mut self, dims: &[usize], v: &[f32]) -> OperandId {
        let id = self.g.add_operand(Operand::new(format!("in{}", self.feeds.len()), DType::F32, dims));
        self.g.inputs.push(id);
        self.feeds.push(f32_bytes(v));
        id
    }

    fn input_i32(&mut self, dims: &[usize], v: &[i32]) -> OperandId {
        let id = self.g.add_operand(Operand::new(format!("in{}", self.feeds.len()), DType::I32, dims));
        self.g.inputs.push(id);
        self.feeds.push(i32_bytes(v));
        id
    }

    fn konst(&mut self, dtype: DType, dims: &[usize], bytes: Vec<u8>) -> OperandId {
        let mut o = Operand::new("const", dtype, dims);
        o.data = Some(ConstData::owned(bytes));
        self.g.add_operand(o)
    }

    fn weights(&mut self, dims: &[usize], seed: u64) -> OperandId {
        self.konst(DType::F32, dims, f32_bytes(&rand(dims.iter().product(), seed, -1.0, 1.0)))
    }

    fn ints(&mut self, v: &[i32]) -> OperandId {
        self.konst(DType::I32, &[v.len()], i32_bytes(v))
    }

    fn tensor(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        self.g.add_operand(Operand::new("t", dtype, dims))
    }

    fn out(&mut self, dims: &[usize]) -> OperandId {
        self.out_typed(DType::F32, dims)
    }

    fn out_typed(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        let id = self.g.add_operand(Operand::new(format!("out{}", self.g.outputs.len()), dtype, dims));
        self.g.outputs.push(id);
        id
    }

    fn op(&mut self, kind: OpKind, inputs: &[Option<OperandId>], outputs: &[OperandId]) {
        self.g.add_op(Operation { kind, inputs: inputs.to_vec(), outputs: outputs.to_vec() });
    }

    fn session(&self, backends: &str, config: &[(&str, &str)]) -> Session {
        let model = Model { subgraphs: vec![self.g.clone()], source: "gpu test".into(), ..Model::default() };
        let mut s = Session::from_model(model).expect("session");
        s.set_backends(backends).expect("backends");
        s.set_threads(1).expect("threads");
        for (k, v) in config {
            s.set_config(k, v).expect("config");
        }
        s.prepare().unwrap_or_else(|e| panic!("prepare on {backends}: {e}"));
        s
    }

    /// Runs on `backends`; every output's bytes.
    fn run_on(&self, backends: &str, config: &[(&str, &str)]) -> (Vec<Vec<u8>>, Vec<nnrt::OpPlacement>) {
        let mut s = self.session(backends, config);
        for (k, v) in self.feeds.iter().enumerate() {
            s.set_input(k, v).expect("input");
        }
        s.run().unwrap_or_else(|e| panic!("run on {backends}: {e}"));
        let outs = (0..s.output_count()).map(|k| s.output(k).expect("output").to_vec()).collect();
        (outs, s.placements().expect("placements"))
    }

    /// Runs on the cpu and with every op on the gpu; the outputs must agree within `tol`.
    fn check(&self, what: &str, tol: Tol) {
        self.check_against(self, what, tol);
    }

    /// Runs with every op on the gpu; the outputs must agree within `tol` with `reference`'s (a
    /// model computing the same thing from ops the cpu has) on the cpu.
    fn check_against(&self, reference: &G, what: &str, tol: Tol) {
        let (want, _) = reference.run_on("cpu", &[]);
        let (got, placed) = self.run_on("gpu;cpu", &[]);
        for p in &placed {
            assert_eq!(p.backend, "gpu", "{what}: op {} {} fell back: {:?}", p.index, p.kind, p.fallback_reason);
        }
        compare(what, &got, &want, tol);
    }
}

fn compare(what: &str, got: &[Vec<u8>], want: &[Vec<u8>], tol: Tol) {
    assert_eq!(got.len(), want.len(), "{what}: output count");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "{what}: output {k} size");
        for (j, (a, b)) in g.chunks_exact(4).zip(w.chunks_exact(4)).enumerate() {
            let (a, b) = (f32::from_le_bytes([a[0], a[1], a[2], a[3]]), f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            let ok = if tol.abs == 0.0 && tol.rel == 0.0 {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            } else {
                a == b || (a - b).abs() <= tol.abs + tol.rel * b.abs() || (a.is_nan() && b.is_nan())
            };
            assert!(ok, "{what}: output {k} element {j}: gpu {a}, cpu {b} (tolerance {tol:?})");
        }
    }
}

// ---- convolutions ----------------------------------------------------------------------------

fn conv_case(what: &str, x: [usize; 4], w: [usize; 4], p: Conv2D, bias: bool, seed: u64) {
    let mut g = G::default();
    let xi = g.input(&x, seed);
    let wi = g.weights(&w, seed + 1);
    let bi = bias.then(|| g.weights(&[w[0]], seed + 2));
    let kh = (w[1] - 1) * p.dilation[0] + 1;
    let kw = (w[2] - 1) * p.dilation[1] + 1;
    let (oh, ow) = match p.padding {
        Padding::Same => (x[1].div_ceil(p.stride[0]), x[2].div_ceil(p.stride[1])),
        Padding::Valid => ((x[1] - kh) / p.stride[0] + 1, (x[2] - kw) / p.stride[1] + 1),
        Padding::Explicit(e) => ((x[1] + e[0] + e[1] - kh) / p.stride[0] + 1, (x[2] + e[2] + e[3] - kw) / p.stride[1] + 1),
    };
    let o = g.out(&[x[0], oh, ow, w[0]]);
    g.op(OpKind::Conv2D(p), &[Some(xi), Some(wi), bi], &[o]);
    g.check(what, SUMS);
}

#[test]
fn conv_general_and_pointwise() {
    if !gpu_or_skip("conv_general_and_pointwise") {
        return;
    }
    let c = |padding, stride, dilation, act| Conv2D { padding, stride, dilation, act };
    conv_case("3x3 same relu", [1, 9, 7, 5], [6, 3, 3, 5], c(Padding::Same, [1, 1], [1, 1], Activation::Relu), true, 1);
    conv_case("3x3 valid stride 2 relu6, 5 out channels", [2, 11, 10, 3], [5, 3, 3, 3], c(Padding::Valid, [2, 2], [1, 1], Activation::Relu6), true, 2);
    conv_case("3x3 dilation 2 tanh", [1, 12, 12, 4], [3, 3, 3, 4], c(Padding::Same, [1, 1], [2, 2], Activation::Tanh), false, 3);
    conv_case("explicit padding", [1, 6, 6, 2], [4, 2, 3, 2], c(Padding::Explicit([1, 0, 2, 1]), [1, 2], [1, 1], Activation::ReluN1To1), true, 4);
    conv_case("1x1 as gemm", [2, 7, 5, 9], [11, 1, 1, 9], c(Padding::Same, [1, 1], [1, 1], Activation::None), true, 5);
    conv_case("1x1 stride 2 (direct)", [1, 8, 8, 6], [7, 1, 1, 6], c(Padding::Valid, [2, 2], [1, 1], Activation::Relu), false, 6);
}

#[test]
fn depthwise_multipliers() {
    if !gpu_or_skip("depthwise_multipliers") {
        return;
    }
    for (k, (x, mult, stride, dil, pad, act)) in [
        ([1, 9, 9, 8], 1, [1, 1], [1, 1], Padding::Same, Activation::Relu6),
        ([2, 10, 7, 3], 2, [2, 2], [1, 1], Padding::Same, Activation::None),
        ([1, 12, 12, 4], 1, [1, 1], [2, 2], Padding::Valid, Activation::Relu),
    ]
    .into_iter()
    .enumerate()
    {
        let mut g = G::default();
        let xi = g.input(&x, 10 + k as u64);
        let c = x[3] * mult;
        let wi = g.weights(&[1, 3, 3, c], 20 + k as u64);
        let bi = g.weights(&[c], 30 + k as u64);
        let eff = 2 * dil[0] + 1;
        let (oh, ow) = match pad {
            Padding::Same => (x[1].div_ceil(stride[0]), x[2].div_ceil(stride[1])),
            _ => ((x[1] - eff) / stride[0] + 1, (x[2] - eff) / stride[1] + 1),
        };
        let o = g.out(&[x[0], oh, ow, c]);
        let p = DepthwiseConv2D { padding: pad, stride, dilation: dil, depth_multiplier: mult, act };
        g.op(OpKind::DepthwiseConv2D(p), &[Some(xi), Some(wi), Some(bi)], &[o]);
        g.check(&format!("depthwise case {k}"), SUMS);
    }
}

// ---- matrix products -------------------------------------------------------------------------

#[test]
fn fully_connected_and_batch_matmul() {
    if !gpu_or_skip("fully_connected_and_batch_matmul") {
        return;
    }
    let fc = |act, keep_num_dims| FullyConnected { act, keep_num_dims, asymmetric_quantize_inputs: false };
    // Bias and activation; 3-D input flattened; weights fed as an input (not constant).
    let mut g = G::default();
    let x = g.input(&[3, 10], 40);
    let w = g.weights(&[7, 10], 41);
    let b = g.weights(&[7], 42);
    let o = g.out(&[3, 7]);
    g.op(OpKind::FullyConnected(fc(Activation::Relu, false)), &[Some(x), Some(w), Some(b)], &[o]);
    g.check("fc relu", SUMS);

    let mut g = G::default();
    let x = g.input(&[2, 3, 10], 43);
    let w = g.input(&[5, 10], 44);
    let o = g.out(&[2, 3, 5]);
    g.op(OpKind::FullyConnected(fc(Activation::None, true)), &[Some(x), Some(w), None], &[o]);
    g.check("fc keep_num_dims, runtime weights", SUMS);

    for (k, (xd, yd, adj_x, adj_y, od)) in [
        (vec![2, 3, 4], vec![2, 4, 5], false, false, vec![2, 3, 5]),
        (vec![2, 4, 3], vec![2, 4, 5], true, false, vec![2, 3, 5]),
        (vec![1, 3, 4], vec![2, 5, 4], false, true, vec![2, 3, 5]),
        (vec![2, 2, 3, 4], vec![2, 1, 4, 6], false, false, vec![2, 2, 3, 6]),
        (vec![9, 17], vec![17, 13], false, false, vec![9, 13]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut g = G::default();
        let x = g.input(&xd, 50 + k as u64);
        let y = g.input(&yd, 60 + k as u64);
        let o = g.out(&od);
        g.op(OpKind::BatchMatMul { adj_x, adj_y }, &[Some(x), Some(y)], &[o]);
        g.check(&format!("batch matmul case {k}"), SUMS);
    }
}

// ---- element-wise ----------------------------------------------------------------------------

#[test]
fn binary_ops_broadcast_and_activations() {
    if !gpu_or_skip("binary_ops_broadcast_and_activations") {
        return;
    }
    let ops = [
        (BinaryOp::Add, SUMS),
        (BinaryOp::Sub, SUMS),
        (BinaryOp::Mul, SUMS),
        (BinaryOp::Div, SUMS),
        (BinaryOp::Pow, TRANSCENDENTAL),
        (BinaryOp::SquaredDifference, SUMS),
        (BinaryOp::Maximum, EXACT),
        (BinaryOp::Minimum, EXACT),
        (BinaryOp::FloorDiv, SUMS),
        (BinaryOp::FloorMod, SUMS),
    ];
    for (op, tol) in ops {
        for (ad, bd, od) in [(vec![2, 1, 3], vec![4, 1], vec![2, 4, 3]), (vec![2, 3, 4], vec![2, 3, 4], vec![2, 3, 4]), (vec![1, 2, 1, 3, 1, 2], vec![2, 1], vec![1, 2, 1, 3, 2, 2])] {
            let mut g = G::default();
            let a = g.input_values(&ad, &rand(ad.iter().product(), 70, -3.0, 3.0));
            let bvals: Vec<f32> = match op {
                // Integer exponents make negative bases defined; divisors stay away from 0.
                BinaryOp::Pow => rand(bd.iter().product(), 71, -3.0, 3.0).iter().map(|v| v.round()).collect(),
                BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::FloorMod => rand(bd.iter().product(), 71, 0.5, 2.0).iter().enumerate().map(|(i, v)| if i % 2 == 0 { *v } else { -v }).collect(),
                _ => rand(bd.iter().product(), 71, -3.0, 3.0),
            };
            let b = g.konst(DType::F32, &bd, f32_bytes(&bvals));
            let o = g.out(&od);
            g.op(OpKind::Binary { op, act: Activation::None }, &[Some(a), Some(b)], &[o]);
            g.check(&format!("{op:?} {ad:?} x {bd:?}"), tol);
        }
    }
    for act in [Activation::Relu, Activation::ReluN1To1, Activation::Relu6, Activation::Tanh] {
        let mut g = G::default();
        let a = g.input_values(&[4, 8], &rand(32, 80, -8.0, 8.0));
        let b = g.input_values(&[8], &rand(8, 81, -8.0, 8.0));
        let o = g.out(&[4, 8]);
        g.op(OpKind::Binary { op: BinaryOp::Add, act }, &[Some(a), Some(b)], &[o]);
        g.check(&format!("add fused {act:?}"), TRANSCENDENTAL);
    }
}

#[test]
fn unary_ops() {
    if !gpu_or_skip("unary_ops") {
        return;
    }
    let all = [
        (UnaryOp::Relu, EXACT, -4.0, 4.0),
        (UnaryOp::Relu6, EXACT, -8.0, 8.0),
        (UnaryOp::ReluN1To1, EXACT, -2.0, 2.0),
        (UnaryOp::Relu0To1, EXACT, -2.0, 2.0),
        (UnaryOp::Tanh, TRANSCENDENTAL, -6.0, 6.0),
        (UnaryOp::Logistic, TRANSCENDENTAL, -10.0, 10.0),
        (UnaryOp::HardSwish, SUMS, -5.0, 5.0),
        (UnaryOp::LeakyRelu(0.2), EXACT, -4.0, 4.0),
        (UnaryOp::Elu, TRANSCENDENTAL, -4.0, 4.0),
        (UnaryOp::Gelu { approximate: false }, TRANSCENDENTAL, -4.0, 4.0),
        (UnaryOp::Gelu { approximate: true }, TRANSCENDENTAL, -4.0, 4.0),
        (UnaryOp::Abs, EXACT, -4.0, 4.0),
        (UnaryOp::Neg, EXACT, -4.0, 4.0),
        (UnaryOp::Exp, TRANSCENDENTAL, -4.0, 4.0),
        (UnaryOp::Log, TRANSCENDENTAL, 0.01, 10.0),
        (UnaryOp::Sqrt, SUMS, 0.0, 10.0),
        (UnaryOp::Rsqrt, SUMS, 0.1, 10.0),
        (UnaryOp::Square, SUMS, -4.0, 4.0),
        (UnaryOp::Sin, TRANSCENDENTAL, -3.0, 3.0),
        (UnaryOp::Cos, TRANSCENDENTAL, -3.0, 3.0),
        (UnaryOp::Floor, EXACT, -4.0, 4.0),
        (UnaryOp::Ceil, EXACT, -4.0, 4.0),
        (UnaryOp::Round, EXACT, -4.0, 4.0),
        (UnaryOp::Sign, EXACT, -4.0, 4.0),
    ];
    for (k, (op, tol, lo, hi)) in all.into_iter().enumerate() {
        let mut g = G::default();
        let mut v = rand(257, 90 + k as u64, lo, hi);
        // Halves exercise round-half-to-even; zero exercises sign and relus.
        v[0] = 0.0;
        v[1] = 2.5;
        v[2] = -1.5;
        if lo < 0.0 {
            v[3] = -0.0;
        }
        let x = g.input_values(&[257], &v);
        let o = g.out(&[257]);
        g.op(OpKind::Unary(op), &[Some(x)], &[o]);
        g.check(&format!("{op:?}"), tol);
    }
}

// ---- pooling, reductions, softmax ------------------------------------------------------------

#[test]
fn pooling_reductions_softmax() {
    if !gpu_or_skip("pooling_reductions_softmax") {
        return;
    }
    for (k, (kind, pad, filter, stride, act)) in [
        (PoolKind::Average, Padding::Same, [3, 3], [2, 2], Activation::None),
        (PoolKind::Max, Padding::Valid, [2, 2], [2, 2], Activation::Relu),
        (PoolKind::L2, Padding::Same, [2, 3], [1, 2], Activation::None),
        (PoolKind::Average, Padding::Valid, [7, 7], [1, 1], Activation::Relu6),
    ]
    .into_iter()
    .enumerate()
    {
        let x = [1, 7, 7, 5];
        let mut g = G::default();
        let xi = g.input(&x, 100 + k as u64);
        let (oh, ow) = match pad {
            Padding::Same => (x[1].div_ceil(stride[0]), x[2].div_ceil(stride[1])),
            _ => ((x[1] - filter[0]) / stride[0] + 1, (x[2] - filter[1]) / stride[1] + 1),
        };
        let o = g.out(&[1, oh, ow, 5]);
        g.op(OpKind::Pool2D(Pool2D { kind, padding: pad, stride, filter, act }), &[Some(xi)], &[o]);
        if kind == PoolKind::L2 {
            // Also against sqrt(average pool(x²)) on the cpu, which pins both L2 kernels.
            let mut r = G::default();
            let xr = r.input(&x, 100 + k as u64);
            let sq = r.tensor(DType::F32, &x);
            r.op(OpKind::Unary(UnaryOp::Square), &[Some(xr)], &[sq]);
            let avg = r.tensor(DType::F32, &[1, oh, ow, 5]);
            r.op(OpKind::Pool2D(Pool2D { kind: PoolKind::Average, padding: pad, stride, filter, act }), &[Some(sq)], &[avg]);
            let or = r.out(&[1, oh, ow, 5]);
            r.op(OpKind::Unary(UnaryOp::Sqrt), &[Some(avg)], &[or]);
            g.check_against(&r, "L2 pool against sqrt(avg(x²))", SUMS);
            g.check("L2 pool", SUMS);
            continue;
        }
        g.check(&format!("{kind:?} pool {k}"), if kind == PoolKind::Max { EXACT } else { SUMS });
    }
    for (op, axes, od, tol) in [
        (ReduceOp::Mean, vec![1, 2], vec![2, 1, 1, 6], SUMS),
        (ReduceOp::Sum, vec![0], vec![1, 4, 5, 6], SUMS),
        (ReduceOp::Max, vec![-1], vec![2, 4, 5, 1], EXACT),
        (ReduceOp::Min, vec![1, 3], vec![2, 1, 5, 1], EXACT),
        (ReduceOp::Prod, vec![2], vec![2, 4, 1, 6], SUMS),
    ] {
        let mut g = G::default();
        let x = g.input_values(&[2, 4, 5, 6], &rand(240, 110, 0.5, 1.5));
        let a = g.ints(&axes);
        let o = g.out(&od);
        g.op(OpKind::Reduce { op, keep_dims: true }, &[Some(x), Some(a)], &[o]);
        g.check(&format!("{op:?} over {axes:?}"), tol);
    }
    let mut g = G::default();
    let x = g.input_values(&[3, 10], &rand(30, 120, -5.0, 5.0));
    let o = g.out(&[3, 10]);
    g.op(OpKind::Softmax { beta: 0.5 }, &[Some(x)], &[o]);
    g.check("softmax beta 0.5", TRANSCENDENTAL);
    let mut g = G::default();
    let x = g.input_values(&[2, 3, 7], &rand(42, 121, -5.0, 5.0));
    let o = g.out(&[2, 3, 7]);
    g.op(OpKind::LogSoftmax, &[Some(x)], &[o]);
    g.check("log softmax", TRANSCENDENTAL);
}

// ---- data movement ---------------------------------------------------------------------------

#[test]
fn concat_pad_transpose_reshape() {
    if !gpu_or_skip("concat_pad_transpose_reshape") {
        return;
    }
    // Three inputs, one constant, with a fused relu (the cpu has none: relu after concat there);
    // and along the last axis.
    let concat3 = |act: Activation, then_relu: bool| {
        let mut g = G::default();
        let a = g.input(&[2, 3, 4], 130);
        let b = g.weights(&[2, 1, 4], 131);
        let c = g.input(&[2, 2, 4], 132);
        let t = if then_relu { g.tensor(DType::F32, &[2, 6, 4]) } else { g.out(&[2, 6, 4]) };
        g.op(OpKind::Concatenation { axis: 1, act }, &[Some(a), Some(b), Some(c)], &[t]);
        if then_relu {
            let o = g.out(&[2, 6, 4]);
            g.op(OpKind::Unary(UnaryOp::Relu), &[Some(t)], &[o]);
        }
        g
    };
    concat3(Activation::Relu, false).check_against(&concat3(Activation::None, true), "concat axis 1 relu", EXACT);
    let mut g = G::default();
    let a = g.input(&[3, 2], 133);
    let b = g.input(&[3, 5], 134);
    let o = g.out(&[3, 7]);
    g.op(OpKind::Concatenation { axis: -1, act: Activation::None }, &[Some(a), Some(b)], &[o]);
    g.check("concat axis -1", EXACT);
    // int32 data moves as 4-byte words.
    let mut g = G::default();
    let a = g.input_i32(&[2, 2], &[1, -2, 3, i32::MIN]);
    let b = g.input_i32(&[2, 1], &[i32::MAX, 7]);
    let o = g.out_typed(DType::I32, &[2, 3]);
    g.op(OpKind::Concatenation { axis: 1, act: Activation::None }, &[Some(a), Some(b)], &[o]);
    g.check("concat int32", EXACT);

    let mut g = G::default();
    let x = g.input(&[1, 3, 3, 2], 135);
    let p = g.konst(DType::I32, &[4, 2], i32_bytes(&[0, 0, 1, 2, 2, 0, 0, 1]));
    let o = g.out(&[1, 6, 5, 3]);
    g.op(OpKind::Pad, &[Some(x), Some(p)], &[o]);
    g.check("pad zeros", EXACT);
    let mut g = G::default();
    let x = g.input(&[2, 3], 136);
    let p = g.konst(DType::I32, &[2, 2], i32_bytes(&[1, 0, 2, 1]));
    let v = g.konst(DType::F32, &[], f32_bytes(&[-7.5]));
    let o = g.out(&[3, 6]);
    g.op(OpKind::Pad, &[Some(x), Some(p), Some(v)], &[o]);
    g.check("pad with a value", EXACT);

    // NHWC -> NCHW and back: the layout permutes partitions would need.
    let mut g = G::default();
    let x = g.input(&[2, 3, 4, 5], 137);
    let perm = g.ints(&[0, 3, 1, 2]);
    let t = g.tensor(DType::F32, &[2, 5, 3, 4]);
    g.op(OpKind::Transpose, &[Some(x), Some(perm)], &[t]);
    let back = g.ints(&[0, 2, 3, 1]);
    let o = g.out(&[2, 3, 4, 5]);
    g.op(OpKind::Transpose, &[Some(t), Some(back)], &[o]);
    let o2 = g.out(&[2, 5, 3, 4]);
    let relu_in = t;
    g.op(OpKind::Unary(UnaryOp::Relu), &[Some(relu_in)], &[o2]);
    g.check("transpose there and back", EXACT);

    // Reshape and squeeze alias their input's buffer; the aliased tensor is also read back.
    let mut g = G::default();
    let x = g.input(&[1, 4, 6], 138);
    let r = g.out(&[4, 6]);
    g.op(OpKind::Reshape { new_shape: Some(vec![4, 6]) }, &[Some(x)], &[r]);
    let s = g.out(&[4, 6]);
    g.op(OpKind::Unary(UnaryOp::Neg), &[Some(r)], &[s]);
    g.check("reshape alias", EXACT);
}

#[test]
fn resize_modes() {
    if !gpu_or_skip("resize_modes") {
        return;
    }
    for (k, (mode, align_corners, half_pixel_centers)) in [
        (ResizeMode::Bilinear, false, false),
        (ResizeMode::Bilinear, true, false),
        (ResizeMode::Bilinear, false, true),
        (ResizeMode::Nearest, false, false),
        (ResizeMode::Nearest, true, false),
        (ResizeMode::Nearest, false, true),
    ]
    .into_iter()
    .enumerate()
    {
        for (x, out) in [([1, 4, 5, 3], [7, 9]), ([2, 6, 6, 2], [3, 4])] {
            let mut g = G::default();
            let xi = g.input(&x, 140 + k as u64);
            let size = g.ints(&[out[0] as i32, out[1] as i32]);
            let o = g.out(&[x[0], out[0], out[1], x[3]]);
            g.op(OpKind::Resize(Resize { mode, align_corners, half_pixel_centers }), &[Some(xi), Some(size)], &[o]);
            let tol = if mode == ResizeMode::Nearest { EXACT } else { SUMS };
            g.check(&format!("resize {mode:?} align {align_corners} half {half_pixel_centers} to {out:?}"), tol);
        }
    }
}

// ---- partitions, fallback, OP_BACKEND_MAP ----------------------------------------------------

/// conv -> mean -> argmax -> (cast) : the GPU has no ARG_MAX kernel, so that op falls back to the
/// cpu with the gpu's reason, and the gpu partition's result crosses to the host for it.
#[test]
fn refused_op_falls_back_with_its_reason() {
    if !gpu_or_skip("refused_op_falls_back_with_its_reason") {
        return;
    }
    let mut g = G::default();
    let x = g.input(&[1, 6, 6, 3], 150);
    let w = g.weights(&[4, 3, 3, 3], 151);
    let c = g.tensor(DType::F32, &[1, 6, 6, 4]);
    g.op(OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::Relu }), &[Some(x), Some(w), None], &[c]);
    let axes = g.ints(&[1, 2]);
    let m = g.out(&[1, 4]);
    g.op(OpKind::Reduce { op: ReduceOp::Mean, keep_dims: false }, &[Some(c), Some(axes)], &[m]);
    let ax = g.ints(&[1]);
    let am = g.out_typed(DType::I32, &[1]);
    g.op(OpKind::ArgMinMax { max: true }, &[Some(m), Some(ax)], &[am]);
    let (want, _) = g.run_on("cpu", &[]);
    let (got, placed) = g.run_on("gpu;cpu", &[]);
    assert_eq!(placed[0].backend, "gpu");
    assert_eq!(placed[1].backend, "gpu");
    assert_eq!(placed[2].backend, "cpu");
    let reason = placed[2].fallback_reason.as_deref().unwrap_or("");
    assert!(reason.contains("gpu") && reason.contains("ArgMax has no gpu kernel"), "reason: {reason}");
    compare("conv+mean on gpu", &got[..1], &want[..1], SUMS);
    assert_eq!(got[1], want[1], "argmax on cpu after the gpu partition");

    // A dtype the gpu refuses: an int32 ADD falls back, saying why.
    let mut g = G::default();
    let a = g.input_i32(&[3], &[1, 2, 3]);
    let b = g.input_i32(&[3], &[10, 20, 30]);
    let o = g.out_typed(DType::I32, &[3]);
    g.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[Some(a), Some(b)], &[o]);
    let (got, placed) = g.run_on("gpu;cpu", &[]);
    assert_eq!(placed[0].backend, "cpu");
    assert!(placed[0].fallback_reason.as_deref().unwrap_or("").contains("int32; gpu kernels compute in float32"), "{:?}", placed[0].fallback_reason);
    assert_eq!(got[0], i32_bytes(&[11, 22, 33]));
}

/// OP_BACKEND_ALLOPS / OP_BACKEND_<Op> steer ops between the backends.
#[test]
fn onert_controls_steer_ops() {
    if !gpu_or_skip("onert_controls_steer_ops") {
        return;
    }
    let mut g = G::default();
    let x = g.input(&[2, 8], 160);
    let w = g.weights(&[4, 8], 161);
    let f = g.tensor(DType::F32, &[2, 4]);
    g.op(OpKind::FullyConnected(FullyConnected { act: Activation::None, keep_num_dims: false, asymmetric_quantize_inputs: false }), &[Some(x), Some(w), None], &[f]);
    let o = g.out(&[2, 4]);
    g.op(OpKind::Unary(UnaryOp::Logistic), &[Some(f)], &[o]);
    let (want, _) = g.run_on("cpu", &[]);
    let (got, placed) = g.run_on("cpu;gpu", &[("OP_BACKEND_ALLOPS", "gpu")]);
    assert!(placed.iter().all(|p| p.backend == "gpu"), "{placed:?}");
    compare("all ops on gpu", &got, &want, TRANSCENDENTAL);
    let (got, placed) = g.run_on("gpu;cpu", &[("OP_BACKEND_Logistic", "cpu")]);
    assert_eq!((placed[0].backend.as_str(), placed[1].backend.as_str()), ("gpu", "cpu"));
    compare("logistic on cpu", &got, &want, TRANSCENDENTAL);
}

/// MobileNetV2 with OP_BACKEND_MAP alternating cpu and gpu op by op (every op boundary crosses
/// between host and device) still matches LiteRT's reference output.
#[test]
fn mobilenet_v2_alternating_backends_matches_reference() {
    if !gpu_or_skip("mobilenet_v2_alternating_backends_matches_reference") {
        return;
    }
    let Some(corpus) = nnrt_tests::corpus_dir() else {
        eprintln!("SKIPPED: ../shared/corpus is not present");
        return;
    };
    let dir = corpus.join("tflite/keras_mobilenet_v2_224_float");
    let read = |name: &str| nnrt_tests::read_npy_f32(&std::fs::read(dir.join(name)).expect("npy")).expect("f32 npy");
    let (_, input) = read("input_0.npy");
    let (_, expected) = read("expected_0.npy");
    let mut s = Session::load(dir.join("model.tflite")).expect("load");
    s.set_backends("gpu;cpu").expect("backends");
    s.set_threads(1).expect("threads");
    let map: Vec<String> = (0..65).map(|i| format!("{i}={}", if i % 2 == 0 { "cpu" } else { "gpu" })).collect();
    s.set_config("OP_BACKEND_MAP", &map.join(";")).expect("map");
    s.prepare().expect("prepare");
    let placed = s.placements().expect("placements");
    assert_eq!(placed.len(), 65);
    for p in &placed {
        assert_eq!(p.backend, if p.index % 2 == 0 { "cpu" } else { "gpu" }, "op {} {}: {:?}", p.index, p.kind, p.fallback_reason);
    }
    s.set_input(0, &f32_bytes(&input)).expect("input");
    s.run().expect("run");
    let out = s.output(0).expect("output").to_vec();
    let got: Vec<f32> = out.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(got.len(), expected.len());
    // The corpus's tolerance for this model: 1e-5 absolute (+1.6e-6 relative).
    for (j, (a, b)) in got.iter().zip(&expected).enumerate() {
        assert!((a - b).abs() <= 1e-5 + 1.6e-6 * b.abs(), "element {j}: {a} vs reference {b}");
    }
    // And run again: partitions keep their buffers, results do not drift.
    s.run().expect("second run");
    assert_eq!(s.output(0).expect("output"), out);
}

/// GPU_PRECISION=f16 stores constant weights as f16 (where the adapter has f16 shaders): results
/// move by about f16's rounding of the weights (2⁻¹¹ relative) and stay close to the cpu's.
#[test]
fn f16_weight_storage() {
    if !gpu_or_skip("f16_weight_storage") {
        return;
    }
    let gpu = nnrt_backend_gpu::GpuBackend::new(std::env::var("GPU_ADAPTER").ok().as_deref()).expect("adapter");
    if !gpu.gpu().has_f16() {
        eprintln!("f16_weight_storage: SKIPPED, adapter '{}' has no f16 shaders", gpu.gpu().adapter_name());
        return;
    }
    let mut g = G::default();
    let x = g.input(&[1, 8, 8, 6], 170);
    let w = g.weights(&[8, 3, 3, 6], 171);
    let c = g.tensor(DType::F32, &[1, 8, 8, 8]);
    g.op(OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::None }), &[Some(x), Some(w), None], &[c]);
    let dw = g.weights(&[1, 3, 3, 8], 172);
    let d = g.tensor(DType::F32, &[1, 8, 8, 8]);
    g.op(OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Activation::None }), &[Some(c), Some(dw), None], &[d]);
    let fw = g.weights(&[10, 512], 173);
    let o = g.out(&[1, 10]);
    g.op(OpKind::FullyConnected(FullyConnected { act: Activation::None, keep_num_dims: false, asymmetric_quantize_inputs: false }), &[Some(d), Some(fw), None], &[o]);
    let (want, _) = g.run_on("cpu", &[]);
    let (full, _) = g.run_on("gpu", &[]);
    let (half, placed) = g.run_on("gpu", &[("GPU_PRECISION", "f16")]);
    assert!(placed.iter().all(|p| p.backend == "gpu"));
    compare("f32 weights", &full, &want, SUMS);
    assert_ne!(half, full, "f16 weights should round the result");
    // Values here are sums of ~500 products of size ~1: f16 weights move them by ~0.02 at most.
    compare("f16 weights", &half, &want, Tol { abs: 5e-2, rel: 1e-2 });
}

/// Sessions on several threads share one device: each run's read-back must wait for its own
/// submission even when another thread's poll completes it.
#[test]
fn sessions_on_threads_share_the_device() {
    if !gpu_or_skip("sessions_on_threads_share_the_device") {
        return;
    }
    let mut g = G::default();
    let x = g.input(&[1, 12, 12, 8], 180);
    let w = g.weights(&[16, 3, 3, 8], 181);
    let c = g.tensor(DType::F32, &[1, 12, 12, 16]);
    g.op(OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::Relu }), &[Some(x), Some(w), None], &[c]);
    let axes = g.ints(&[1, 2]);
    let o = g.out(&[1, 16]);
    g.op(OpKind::Reduce { op: ReduceOp::Mean, keep_dims: false }, &[Some(c), Some(axes)], &[o]);
    let (want, _) = g.run_on("cpu", &[]);
    let g = std::sync::Arc::new(g);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let g = g.clone();
            std::thread::spawn(move || {
                let mut s = g.session("gpu", &[]);
                s.set_input(0, &g.feeds[0]).expect("input");
                (0..25)
                    .map(|_| {
                        s.run().expect("run");
                        s.output(0).expect("output").to_vec()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        for out in t.join().expect("thread") {
            compare("threaded run", &[out], &want, SUMS);
        }
    }
}

