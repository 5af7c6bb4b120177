//! How close the kernel pool gets to `THREADS`x on pure arithmetic: 8 tasks of a fixed
//! register-only FMA-free loop, min of 200. `cargo run --release -p nnrt-benches --example pool_probe`
use std::time::Instant;
fn work(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    x
}
fn main() {
    for threads in [1usize, 2] {
        let pool = nnrt_core::KernelPool::new(threads).expect("pool");
        for per_task in [2_000u64, 20_000, 200_000] {
            let mut best = f64::MAX;
            let sink = std::sync::atomic::AtomicU64::new(0);
            pool.install(|| {
                for _ in 0..200 {
                    let t = Instant::now();
                    nnrt_core::par_for(8, &|i| {
                        sink.fetch_add(work(per_task + i as u64), std::sync::atomic::Ordering::Relaxed);
                    });
                    best = best.min(t.elapsed().as_secs_f64());
                }
            });
            println!("threads {threads} task {per_task:>7} iters: {:8.1} us (sink {})", best * 1e6, sink.into_inner() % 10);
        }
    }
}
