//! A small seeded PRNG (SplitMix64), written here so that output stays byte-identical whatever the
//! versions of external crates.

#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// A generator for one purpose of one rank, independent of the others.
    pub(crate) fn derive(seed: u64, rank: u32, purpose: u64) -> Self {
        let mut r = Rng::new(seed ^ 0x5EED_0000_0000_0000);
        let a = r.next_u64();
        let mut r2 = Rng(a ^ (u64::from(rank) + 1).wrapping_mul(0xA24B_AED4_963E_E407));
        let b = r2.next_u64();
        Rng(b ^ purpose.wrapping_mul(0x9FB2_1C65_1E98_DF25))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A multiplicative jitter, uniform in [1 - a, 1 + a].
    pub(crate) fn jitter(&mut self, a: f64) -> f64 {
        1.0 + a * (2.0 * self.unit() - 1.0)
    }

    /// Uniform integer in [lo, hi].
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_stable() {
        let mut r = Rng::new(1234567);
        // Reference values of SplitMix64 for seed 1234567.
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
        let mut a = Rng::derive(7, 3, 1);
        let mut b = Rng::derive(7, 3, 1);
        assert_eq!(a.next_u64(), b.next_u64());
        let u = a.unit();
        assert!((0.0..1.0).contains(&u));
    }
}
