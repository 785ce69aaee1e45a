//! A small seeded generator (SplitMix64): every random choice in a run derives from the seed in
//! meta.json, and worker processes reproduce their streams from (seed, worker index).

/// SplitMix64: fast, tiny state, good enough to pick keys and draw arrival gaps.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator for stream `stream` of run seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut g = SplitMix64 {
            state: seed ^ stream.wrapping_mul(0xA24B_AED4_963E_E407),
        };
        g.next_u64();
        g
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is below 2^-40 for the n used here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in (0, 1]: never 0, so `-ln(u)` is finite.
    pub fn unit_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// An exponential gap with the given mean (Poisson arrivals).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -self.unit_open0().ln() * mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = SplitMix64::new(7, 1);
        let mut b = SplitMix64::new(7, 1);
        let mut c = SplitMix64::new(7, 2);
        let (x, y, z) = (a.next_u64(), b.next_u64(), c.next_u64());
        assert_eq!(x, y);
        assert_ne!(x, z);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut g = SplitMix64::new(1, 0);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = g.below(10) as usize;
            seen[v] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn exponential_mean_is_close() {
        let mut g = SplitMix64::new(3, 0);
        let n = 200_000;
        let mean = (0..n).map(|_| g.exponential(2.0)).sum::<f64>() / n as f64;
        assert!((mean - 2.0).abs() < 0.03, "{mean}");
    }
}
