//! f32 GEMM: the packed, register-blocked kernel next to its reference twin, in GFLOP/s
//! (criterion's throughput is set to 2·M·N·K "elements", read as FLOP).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nnrt_backend_cpu::kernels::gemm::{gemm, gemm_ref, PackedB};
use nnrt_backend_cpu::kernels::Act;
use nnrt_benches::{data, pool};

fn bench(c: &mut Criterion) {
    let one = pool(1);
    let mut g = c.benchmark_group("gemm_f32_1thread");
    // 512³, a 3x3 conv as GEMM (56x56x32 input, 64 filters), a 1x1 conv, an FC row.
    for &(m, k, n) in &[(512, 512, 512), (3136, 288, 64), (12544, 32, 64), (1, 1280, 1000)] {
        let a = data(m * k, 1);
        let w = data(n * k, 2);
        let bias = data(n, 3);
        let packed = PackedB::pack(n, k, &w);
        let mut out = vec![0f32; m * n];
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        let id = format!("{m}x{k}x{n}");
        g.bench_with_input(BenchmarkId::new("packed", &id), &(), |b, _| {
            b.iter(|| one.install(|| gemm(m, &a, k, &packed, Some(&bias), Act::RELU6, &mut out, n)))
        });
        if m * n * k <= 1 << 24 {
            g.bench_with_input(BenchmarkId::new("reference", &id), &(), |b, _| {
                b.iter(|| gemm_ref(m, n, k, &a, k, &w, Some(&bias), Act::RELU6, &mut out, n))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
