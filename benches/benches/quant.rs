//! Quantized GEMM and convolutions (int8 per-channel, uint8 per-tensor) on MobileNet-like
//! shapes, the packed VNNI/AVX2 kernels next to their reference twins (TFLite's reference
//! loops). Throughput in OP (2 per multiply-add), so GOP/s compares with the float benches.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nnrt_backend_cpu::quant::conv::{QConv, QFullyConnected};
use nnrt_backend_cpu::quant::depthwise::QDepthwise;
use nnrt_backend_cpu::quant::reference::{self, ConvQuant};
use nnrt_backend_cpu::quant::{QInt, Requant};
use nnrt_benches::{data, pool, square_conv, square_depthwise};

fn ints<T: QInt>(n: usize, seed: u64) -> Vec<T> {
    data(n, seed).into_iter().map(|v| T::sat((v * 127.0) as i32 + if T::MIN == 0 { 128 } else { 0 })).collect()
}

fn quant<T: QInt>(n: usize, in_zp: i32, w_zp: i32) -> ConvQuant {
    ConvQuant {
        in_zp,
        w_zp: vec![w_zp; n],
        out_zp: if T::MIN == 0 { 128 } else { 0 },
        requant: (0..n).map(|c| Requant::fixed(0.0005 + c as f64 * 1e-6)).collect(),
        act: (T::MIN, T::MAX),
        bias: Some((0..n).map(|c| c as i64 * 37 - 500).collect()),
        wide: false,
    }
}

fn bench_conv_typed<T: QInt>(c: &mut Criterion, group: &str, in_zp: i32, w_zp: i32) {
    let one = pool(1);
    let mut g = c.benchmark_group(group);
    g.sample_size(15);
    for &(name, hw, ci, co, k, s) in &[("1x1_56x56x64x128", 56usize, 64usize, 128usize, 1usize, 1usize), ("3x3_28x28x64x64", 28, 64, 64, 3, 1), ("3x3s2_224x224x3x32", 224, 3, 32, 3, 2)] {
        let geom = square_conv(hw, ci, co, k, s);
        let input: Vec<T> = ints(geom.input_len(), 1);
        let filter: Vec<T> = ints(geom.out_c * geom.taps(), 2);
        let q = quant::<T>(co, in_zp, w_zp);
        let conv = QConv::new::<T, T>(geom, q.clone(), &filter);
        let mut out = vec![T::default(); geom.output_len()];
        g.throughput(Throughput::Elements((2 * geom.output_len() * geom.taps()) as u64));
        g.bench_with_input(BenchmarkId::new("packed", name), &(), |b, _| b.iter(|| one.install(|| conv.run::<T, T>(&input, &mut out))));
        g.bench_with_input(BenchmarkId::new("reference", name), &(), |b, _| b.iter(|| reference::conv::<T, T, T>(&geom, &q, &input, &filter, &mut out)));
    }
    g.finish();
}

fn bench_gemm_typed<T: QInt>(c: &mut Criterion, group: &str, in_zp: i32, w_zp: i32) {
    let one = pool(1);
    let mut g = c.benchmark_group(group);
    g.sample_size(15);
    for &(m, k, n) in &[(512usize, 512usize, 512usize), (3136, 576, 64)] {
        let x: Vec<T> = ints(m * k, 3);
        let w: Vec<T> = ints(n * k, 4);
        // FULLY_CONNECTED requantizes in double in TFLite's reference; use the fixed-point form
        // here so the GEMM itself is what is measured.
        let q = quant::<T>(n, in_zp, w_zp);
        let fc = QFullyConnected::new::<T, T>(n, k, q.clone(), &w);
        let mut out = vec![T::default(); m * n];
        let name = format!("{m}x{k}x{n}");
        g.throughput(Throughput::Elements((2 * m * k * n) as u64));
        g.bench_with_input(BenchmarkId::new("packed", &name), &(), |b, _| b.iter(|| one.install(|| fc.run::<T, T>(&x, &mut out))));
        g.bench_with_input(BenchmarkId::new("reference", &name), &(), |b, _| b.iter(|| reference::fully_connected::<T, T, T>(m, k, n, &q, &x, &w, &mut out)));
    }
    g.finish();
}

fn bench_depthwise(c: &mut Criterion) {
    let one = pool(1);
    let mut g = c.benchmark_group("depthwise_int8_1thread");
    g.sample_size(15);
    for &(name, hw, ch, s) in &[("3x3_112x112x32", 112usize, 32usize, 1usize), ("3x3s2_112x112x96", 112, 96, 2)] {
        let geom = square_depthwise(hw, ch, s);
        let input: Vec<i8> = ints(geom.input_len(), 5);
        let filter: Vec<i8> = ints(geom.filter_len(), 6);
        let q = quant::<i8>(ch, -3, 0);
        let dw = QDepthwise::new::<i8, i8>(geom, q.clone(), &filter);
        let mut outv = vec![0i8; geom.output_len()];
        g.throughput(Throughput::Elements((2 * geom.output_len() * 9) as u64));
        g.bench_with_input(BenchmarkId::new("optimized", name), &(), |b, _| b.iter(|| one.install(|| dw.run::<i8, i8>(&input, &mut outv))));
        g.bench_with_input(BenchmarkId::new("reference", name), &(), |b, _| b.iter(|| reference::depthwise::<i8, i8, i8>(&geom, &q, &input, &filter, &mut outv)));
    }
    g.finish();
}

/// DeepLab's head: uint8 RESIZE_BILINEAR 33x33x21 -> 513x513x21 and ARG_MAX over the 21 classes.
fn bench_resize_argmax(c: &mut Criterion) {
    use nnrt_backend_cpu::quant::misc::{self, ResizeOpts};
    let one = pool(1);
    let mut g = c.benchmark_group("deeplab_head_uint8_1thread");
    g.sample_size(10);
    let x: Vec<u8> = ints(33 * 33 * 21, 7);
    let o = ResizeOpts { align_corners: true, half_pixel_centers: false };
    let mut up = vec![0u8; 513 * 513 * 21];
    g.throughput(Throughput::Elements(up.len() as u64));
    g.bench_function("resize_bilinear/optimized", |b| b.iter(|| one.install(|| misc::resize_bilinear_u8(&x, [1, 33, 33, 21], 513, 513, o, &mut up))));
    g.bench_function("resize_bilinear/reference", |b| b.iter(|| misc::resize_bilinear_u8_reference(&x, [1, 33, 33, 21], 513, 513, o, &mut up)));
    let mut idx = vec![0i64; 513 * 513];
    g.bench_function("arg_max/optimized", |b| b.iter(|| one.install(|| misc::arg_extreme(&up, &[1, 513, 513, 21], 3, true, &mut idx, |i| i as i64))));
    g.bench_function("arg_max/reference", |b| b.iter(|| misc::arg_extreme_reference(&up, &[1, 513, 513, 21], 3, true, &mut idx)));
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_gemm_typed::<i8>(c, "qgemm_int8_1thread", -5, 0);
    bench_gemm_typed::<u8>(c, "qgemm_uint8_1thread", 128, 120);
    bench_conv_typed::<i8>(c, "conv_int8_1thread", -5, 0);
    bench_conv_typed::<u8>(c, "conv_uint8_1thread", 128, 120);
    bench_depthwise(c);
    bench_resize_argmax(c);
}

criterion_group!(quant_benches, benches);
criterion_main!(quant_benches);
