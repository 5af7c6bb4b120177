//! Helpers shared by nnrt's criterion benches: deterministic data and a one-thread pool.

/// `n` values in [-1, 1) from a fixed-seed xorshift generator.
pub fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A rayon pool with `n` threads (kernels split work over the pool they run in).
pub fn pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool")
}
