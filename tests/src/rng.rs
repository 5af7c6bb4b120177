//! A seeded xorshift64* generator: reproducible weights, inputs and corruptions without `rand`.

/// xorshift64* (Vigna 2016). Not for cryptography; the same seed gives the same stream on every
/// platform, which is what shipped models and reported corruption seeds need.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (0 is replaced by a fixed non-zero value: xorshift's state must
    /// not be zero).
    pub fn new(seed: u64) -> XorShift {
        XorShift(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (`n` > 0; the modulo bias is irrelevant at these sizes).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A float uniform in `[lo, hi)` from the top 24 bits (every value is exact in f32).
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }

    /// `n` floats uniform in `[lo, hi)`.
    pub fn fill(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::XorShift;

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (XorShift::new(7), XorShift::new(7));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        assert!((0..1000).map(|_| a.uniform(-1.0, 1.0)).all(|v| (-1.0..1.0).contains(&v)));
    }
}
