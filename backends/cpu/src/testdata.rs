//! Reproducible data for the kernels' tests and nnrt's benches (not part of the runtime).

/// The states of a fixed-seed xorshift64 generator (shifts 13, 7, 17) started from `seed | 1`.
pub fn xorshift(seed: u64) -> impl Iterator<Item = u64> {
    let mut s = seed | 1;
    std::iter::repeat_with(move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    })
}

/// `n` values in [0, 1) on a 2^-24 grid: the top 24 bits of [`xorshift`]`(seed)`'s states.
pub fn unit_values(n: usize, seed: u64) -> impl Iterator<Item = f32> {
    xorshift(seed).take(n).map(|s| (s >> 40) as f32 / (1u64 << 24) as f32)
}

/// `n` values in [-0.5, 0.5) times 10^e for e in -4..4, from [`xorshift`]`(seed)`: magnitudes
/// over eight decades, so that summing them in any order but the one under test rounds
/// differently (tests of bit-exact summation order).
pub fn spread_values(n: usize, seed: u64) -> impl Iterator<Item = f32> {
    xorshift(seed).take(n).map(|s| ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 10f32.powi((s % 8) as i32 - 4))
}
