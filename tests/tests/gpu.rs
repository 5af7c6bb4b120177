//! The `gpu` backend beyond single ops (those are replayed on every backend by `tests/ops/`):
//! partitions, fallbacks with their reasons, `OP_BACKEND_*` controls, an `OP_BACKEND_MAP` split
//! of a real model, f16 weight storage and sessions on several threads sharing the device.
//!
//! On a machine with no GPU adapter at all (not even a software Vulkan one such as lavapipe)
//! every test prints why it is skipped and returns.
//!
//! Tolerances: the GPU sums in another order and its exp/log/tanh come from the driver's math
//! library, so sums get 1e-5 absolute + 1e-5 relative and transcendental functions 2e-5 absolute +
//! 2e-5 relative.

use nnrt::{DType, Session};
use nnrt_core::{Activation, BinaryOp, Conv2D, DepthwiseConv2D, FullyConnected, OpKind, OperandId, Padding, ReduceOp, UnaryOp};
use nnrt_tests::{f, i, Graph, Tol, XorShift};

const SUMS: Tol = Tol::new(1e-5, 1e-5, "the gpu sums in another order");
const TRANSCENDENTAL: Tol = Tol::new(2e-5, 2e-5, "the gpu's exp/log/tanh come from the driver's math library");

/// Whether a GPU adapter exists; prints why a test is skipped when none does.
fn gpu_or_skip(test: &str) -> bool {
    match nnrt_tests::gpu_adapter() {
        Ok(name) => {
            eprintln!("{test}: gpu adapter '{name}'");
            true
        }
        Err(why) => {
            eprintln!("{test}: SKIPPED, no GPU adapter: {why}");
            false
        }
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A graph input of `dims` fed with seeded values in [-1, 1).
fn input(g: &mut Graph, dims: &[usize], seed: u64) -> OperandId {
    g.input(dims, f(&XorShift::new(seed).fill(dims.iter().product(), -1.0, 1.0)))
}

/// A constant of `dims` with seeded values in [-1, 1).
fn weights(g: &mut Graph, dims: &[usize], seed: u64) -> OperandId {
    g.konst(dims, f(&XorShift::new(seed).fill(dims.iter().product(), -1.0, 1.0)))
}

fn session(g: &Graph, backends: &str, config: &[(&str, &str)]) -> Session {
    let mut s = Session::from_model(g.model()).expect("session");
    s.set_backends(backends).expect("backends");
    s.set_threads(1).expect("threads");
    for (k, v) in config {
        s.set_config(k, v).expect("config");
    }
    s.prepare().unwrap_or_else(|e| panic!("prepare on {backends}: {e}"));
    s
}

/// Runs on `backends`; every output's bytes, and where each op ran.
fn run_on(g: &Graph, backends: &str, config: &[(&str, &str)]) -> (Vec<Vec<u8>>, Vec<nnrt::OpPlacement>) {
    let mut s = session(g, backends, config);
    for (k, v) in g.feeds().iter().enumerate() {
        s.set_input(k, &v.bytes()).expect("input");
    }
    s.run().unwrap_or_else(|e| panic!("run on {backends}: {e}"));
    let outs = (0..s.output_count()).map(|k| s.output(k).expect("output").to_vec()).collect();
    (outs, s.placements().expect("placements"))
}

/// `mean over h, w of relu(conv 3x3 SAME(x))`, with x `[1, hw, hw, c]` and `oc` filters (seeds
/// `seed`, `seed + 1`); the mean is a graph output, returned for ops added after it.
fn conv_mean(hw: usize, c: usize, oc: usize, seed: u64) -> (Graph, OperandId) {
    let mut g = Graph::new();
    let x = input(&mut g, &[1, hw, hw, c], seed);
    let w = weights(&mut g, &[oc, 3, 3, c], seed + 1);
    let t = g.tensor(DType::F32, &[1, hw, hw, oc]);
    g.op(OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::Relu }), &[Some(x), Some(w), None], &[t]);
    let axes = g.ints(&[1, 2]);
    let m = g.out(DType::F32, &[1, oc]);
    g.op(OpKind::Reduce { op: ReduceOp::Mean, keep_dims: false }, &[Some(t), Some(axes)], &[m]);
    (g, m)
}

fn compare(what: &str, got: &[Vec<u8>], want: &[Vec<u8>], tol: Tol) {
    assert_eq!(got.len(), want.len(), "{what}: output count");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "{what}: output {k} size");
        for (j, (a, b)) in g.chunks_exact(4).zip(w.chunks_exact(4)).enumerate() {
            let (a, b) = (f32::from_le_bytes([a[0], a[1], a[2], a[3]]), f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            assert!(tol.accepts(a, b, true), "{what}: output {k} element {j}: gpu {a}, cpu {b} (tolerance {tol:?})");
        }
    }
}

/// conv -> mean -> argmax -> (cast) : the GPU has no ARG_MAX kernel, so that op falls back to the
/// cpu with the gpu's reason, and the gpu partition's result crosses to the host for it.
#[test]
fn refused_op_falls_back_with_its_reason() {
    if !gpu_or_skip("refused_op_falls_back_with_its_reason") {
        return;
    }
    let (mut g, m) = conv_mean(6, 3, 4, 150);
    let ax = g.ints(&[1]);
    let am = g.out(DType::I32, &[1]);
    g.op(OpKind::ArgMinMax { max: true }, &[Some(m), Some(ax)], &[am]);
    let (want, _) = run_on(&g, "cpu", &[]);
    let (got, placed) = run_on(&g, "gpu;cpu", &[]);
    assert_eq!(placed[0].backend, "gpu");
    assert_eq!(placed[1].backend, "gpu");
    assert_eq!(placed[2].backend, "cpu");
    let reason = placed[2].fallback_reason.as_deref().unwrap_or("");
    assert!(reason.contains("gpu") && reason.contains("ArgMax has no gpu kernel"), "reason: {reason}");
    compare("conv+mean on gpu", &got[..1], &want[..1], SUMS);
    assert_eq!(got[1], want[1], "argmax on cpu after the gpu partition");

    // A dtype the gpu refuses: an int32 ADD falls back, saying why.
    let mut g = Graph::new();
    let a = g.input(&[3], i(&[1, 2, 3]));
    let b = g.input(&[3], i(&[10, 20, 30]));
    let o = g.out(DType::I32, &[3]);
    g.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[Some(a), Some(b)], &[o]);
    let (got, placed) = run_on(&g, "gpu;cpu", &[]);
    assert_eq!(placed[0].backend, "cpu");
    assert!(placed[0].fallback_reason.as_deref().unwrap_or("").contains("int32; gpu kernels compute in float32"), "{:?}", placed[0].fallback_reason);
    assert_eq!(got[0], i(&[11, 22, 33]).bytes());
}

/// OP_BACKEND_ALLOPS / OP_BACKEND_<Op> steer ops between the backends.
#[test]
fn onert_controls_steer_ops() {
    if !gpu_or_skip("onert_controls_steer_ops") {
        return;
    }
    let mut g = Graph::new();
    let x = input(&mut g, &[2, 8], 160);
    let w = weights(&mut g, &[4, 8], 161);
    let f = g.tensor(DType::F32, &[2, 4]);
    g.op(OpKind::FullyConnected(FullyConnected { act: Activation::None, keep_num_dims: false, asymmetric_quantize_inputs: false }), &[Some(x), Some(w), None], &[f]);
    let o = g.out(DType::F32, &[2, 4]);
    g.op(OpKind::Unary(UnaryOp::Logistic), &[Some(f)], &[o]);
    let (want, _) = run_on(&g, "cpu", &[]);
    let (got, placed) = run_on(&g, "cpu;gpu", &[("OP_BACKEND_ALLOPS", "gpu")]);
    assert!(placed.iter().all(|p| p.backend == "gpu"), "{placed:?}");
    compare("all ops on gpu", &got, &want, TRANSCENDENTAL);
    let (got, placed) = run_on(&g, "gpu;cpu", &[("OP_BACKEND_Logistic", "cpu")]);
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
    let Some(dir) = nnrt_tests::corpus_model_or_skip("tflite/keras_mobilenet_v2_224_float") else { return };
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
    let mut g = Graph::new();
    let x = input(&mut g, &[1, 8, 8, 6], 170);
    let w = weights(&mut g, &[8, 3, 3, 6], 171);
    let c = g.tensor(DType::F32, &[1, 8, 8, 8]);
    g.op(OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::None }), &[Some(x), Some(w), None], &[c]);
    let dw = weights(&mut g, &[1, 3, 3, 8], 172);
    let d = g.tensor(DType::F32, &[1, 8, 8, 8]);
    g.op(OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Activation::None }), &[Some(c), Some(dw), None], &[d]);
    let fw = weights(&mut g, &[10, 512], 173);
    let o = g.out(DType::F32, &[1, 10]);
    g.op(OpKind::FullyConnected(FullyConnected { act: Activation::None, keep_num_dims: false, asymmetric_quantize_inputs: false }), &[Some(d), Some(fw), None], &[o]);
    let (want, _) = run_on(&g, "cpu", &[]);
    let (full, _) = run_on(&g, "gpu", &[]);
    let (half, placed) = run_on(&g, "gpu", &[("GPU_PRECISION", "f16")]);
    assert!(placed.iter().all(|p| p.backend == "gpu"));
    compare("f32 weights", &full, &want, SUMS);
    assert_ne!(half, full, "f16 weights should round the result");
    // Values here are sums of ~500 products of size ~1: f16 weights move them by ~0.02 at most.
    compare("f16 weights", &half, &want, Tol::new(5e-2, 1e-2, "f16 weights move sums of ~500 products by ~0.02"));
}

/// Sessions on several threads share one device: each run's read-back must wait for its own
/// submission even when another thread's poll completes it.
#[test]
fn sessions_on_threads_share_the_device() {
    if !gpu_or_skip("sessions_on_threads_share_the_device") {
        return;
    }
    let (g, _) = conv_mean(12, 8, 16, 180);
    let (want, _) = run_on(&g, "cpu", &[]);
    let g = std::sync::Arc::new(g);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let g = g.clone();
            std::thread::spawn(move || {
                let mut s = session(&g, "gpu", &[]);
                s.set_input(0, &g.feeds()[0].bytes()).expect("input");
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

