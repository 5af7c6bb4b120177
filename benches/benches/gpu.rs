//! The gpu backend (wgpu; lavapipe where no GPU exists): GEMM (FULLY_CONNECTED), 1x1 and 3x3
//! convolutions as one-op models, each next to the same model on the cpu backend, throughput in
//! FLOP (2 per multiply-add); and the example model end to end on the gpu. Prints why and
//! benches nothing when the machine has no GPU adapter at all.
//!
//! Each iteration is a whole `Session::run`: upload of the input, one submission, read-back of
//! the output, as an application sees it.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nnrt::Session;
use nnrt_benches::data;
use nnrt_core::{Activation, ConstData, Conv2D, DType, FullyConnected, Model, OpKind, Operand, Operation, Padding, Subgraph};

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `y = op(x, weights, bias)` with one input of `x_dims` and one output of `y_dims`.
fn one_op(kind: OpKind, x_dims: &[usize], w_dims: &[usize], y_dims: &[usize]) -> Model {
    let mut g = Subgraph::default();
    let x = g.add_operand(Operand::new("x", DType::F32, x_dims));
    let mut w = Operand::new("w", DType::F32, w_dims);
    w.data = Some(ConstData::owned(f32_bytes(&data(w_dims.iter().product(), 2))));
    let w = g.add_operand(w);
    let mut b = Operand::new("b", DType::F32, &[w_dims[0]]);
    b.data = Some(ConstData::owned(f32_bytes(&data(w_dims[0], 3))));
    let b = g.add_operand(b);
    let y = g.add_operand(Operand::new("y", DType::F32, y_dims));
    g.add_op(Operation { kind, inputs: vec![Some(x), Some(w), Some(b)], outputs: vec![y] });
    g.inputs.push(x);
    g.outputs.push(y);
    Model { subgraphs: vec![g], source: "gpu bench".into(), ..Model::default() }
}

fn session(model: Model, backends: &str) -> Session {
    let mut s = Session::from_model(model).expect("session");
    s.set_backends(backends).expect("backends");
    s.set_threads(1).expect("threads");
    s.prepare().expect("prepare");
    let input = f32_bytes(&data(s.input_info(0).expect("input").byte_size() / 4, 1));
    s.set_input(0, &input).expect("input");
    s.run().expect("warm-up run (compiles the pipelines)");
    s
}

fn gpu_adapter() -> Option<String> {
    match nnrt_backend_gpu::GpuBackend::new(std::env::var("GPU_ADAPTER").ok().as_deref()) {
        Ok(b) => Some(b.gpu().adapter_name().to_string()),
        Err(why) => {
            eprintln!("gpu benches skipped: no GPU adapter: {why}");
            None
        }
    }
}

fn bench_kernels(c: &mut Criterion) {
    let Some(adapter) = gpu_adapter() else { return };
    eprintln!("gpu adapter: {adapter}");
    let mut g = c.benchmark_group("gpu_vs_cpu_1thread");
    g.sample_size(10);
    let fc = OpKind::FullyConnected(FullyConnected { act: Activation::None, keep_num_dims: false, asymmetric_quantize_inputs: false });
    let conv = |act| OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act });
    // (name, kind, x dims, w dims, y dims, flops)
    let cases: Vec<(&str, OpKind, Vec<usize>, Vec<usize>, Vec<usize>, usize)> = vec![
        ("gemm_256x512x256", fc, vec![256, 512], vec![256, 512], vec![256, 256], 2 * 256 * 512 * 256),
        ("conv1x1_28x28x64x128", conv(Activation::Relu6), vec![1, 28, 28, 64], vec![128, 1, 1, 64], vec![1, 28, 28, 128], 2 * 28 * 28 * 64 * 128),
        ("conv3x3_28x28x32x64", conv(Activation::Relu), vec![1, 28, 28, 32], vec![64, 3, 3, 32], vec![1, 28, 28, 64], 2 * 28 * 28 * 9 * 32 * 64),
    ];
    for (name, kind, xd, wd, yd, flops) in cases {
        g.throughput(Throughput::Elements(flops as u64));
        for backends in ["gpu", "cpu"] {
            let mut s = session(one_op(kind.clone(), &xd, &wd, &yd), backends);
            g.bench_with_input(BenchmarkId::new(backends, name), &(), |b, _| b.iter(|| s.run().expect("run")));
        }
    }
    g.finish();
}

fn bench_model(c: &mut Criterion) {
    if gpu_adapter().is_none() {
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/models/tiny_mobilenet.tflite");
    let mut g = c.benchmark_group("model_tiny_mobilenet_gpu");
    g.sample_size(10);
    let mut s = Session::load(path).expect("the example model loads");
    s.set_backends("gpu;cpu").expect("backends");
    s.prepare().expect("prepares");
    let input = vec![0u8; s.input_info(0).expect("one input").byte_size()];
    s.set_input(0, &input).expect("input size matches");
    s.run().expect("warm-up run");
    g.bench_function("gpu", |b| b.iter(|| s.run().expect("runs")));
    g.finish();
}

criterion_group!(benches, bench_kernels, bench_model);
criterion_main!(benches);
