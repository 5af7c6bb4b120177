//! Convolutions on MobileNet-like shapes: 1x1, 3x3 (im2col + packed GEMM) and depthwise 3x3,
//! each next to its reference twin, throughput in FLOP (2 per multiply-add).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nnrt_backend_cpu::kernels::conv::{conv2d_ref, Conv2d};
use nnrt_backend_cpu::kernels::depthwise::{depthwise_conv2d, depthwise_conv2d_ref};
use nnrt_backend_cpu::kernels::Act;
use nnrt_benches::{data, pool, square_conv, square_depthwise};

fn bench_conv(c: &mut Criterion) {
    let one = pool(1);
    let mut g = c.benchmark_group("conv_f32_1thread");
    g.sample_size(20);
    // (name, spatial, in_c, out_c, k, stride)
    for &(name, hw, ci, co, k, s) in &[("1x1_56x56x64x128", 56, 64, 128, 1, 1), ("3x3_56x56x32x64", 56, 32, 64, 3, 1), ("3x3s2_224x224x3x32", 224, 3, 32, 3, 2)] {
        let geom = square_conv(hw, ci, co, k, s);
        let input = data(geom.input_len(), 1);
        let filter = data(geom.filter_len(), 2);
        let bias = data(co, 3);
        let mut out = vec![0f32; geom.output_len()];
        let mut conv = Conv2d::new(geom, &filter, Some(&bias), Act::RELU6);
        g.throughput(Throughput::Elements((2 * geom.output_len() * k * k * ci) as u64));
        g.bench_with_input(BenchmarkId::new("packed", name), &(), |b, _| b.iter(|| one.install(|| conv.run(&input, &mut out))));
        g.bench_with_input(BenchmarkId::new("reference", name), &(), |b, _| {
            b.iter(|| conv2d_ref(&geom, &input, &filter, Some(&bias), Act::RELU6, &mut out))
        });
    }
    g.finish();
}

fn bench_depthwise(c: &mut Criterion) {
    let one = pool(1);
    let mut g = c.benchmark_group("depthwise_f32_1thread");
    g.sample_size(20);
    for &(name, hw, ch, s) in &[("3x3_112x112x32", 112usize, 32usize, 1usize), ("3x3s2_112x112x96", 112, 96, 2), ("3x3_14x14x576", 14, 576, 1)] {
        let geom = square_depthwise(hw, ch, s);
        let input = data(geom.input_len(), 1);
        let filter = data(geom.filter_len(), 2);
        let bias = data(ch, 3);
        let mut output = vec![0f32; geom.output_len()];
        g.throughput(Throughput::Elements((2 * geom.output_len() * 9) as u64));
        g.bench_with_input(BenchmarkId::new("simd", name), &(), |b, _| {
            b.iter(|| one.install(|| depthwise_conv2d(&geom, &input, &filter, Some(&bias), Act::RELU6, &mut output)))
        });
        g.bench_with_input(BenchmarkId::new("reference", name), &(), |b, _| {
            b.iter(|| depthwise_conv2d_ref(&geom, &input, &filter, Some(&bias), Act::RELU6, &mut output))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_conv, bench_depthwise);
criterion_main!(benches);
