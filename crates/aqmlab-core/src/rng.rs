//! Seeded random streams. Every component that needs randomness gets its own stream,
//! derived from the run seed and a stable component key, so adding a component or
//! changing the order in which components draw never perturbs another's sequence.

use rand::Rng as _;
use rand_pcg::Pcg64Mcg;

/// A component's random stream.
#[derive(Clone, Debug)]
pub struct Rng(Pcg64Mcg);

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

impl Rng {
    /// The stream for component `(domain, index)` of the run with `seed`.
    /// `domain` names the kind of component ("link", "flow", "qdisc", ...).
    pub fn stream(seed: u64, domain: &str, index: u64) -> Rng {
        let mut h = splitmix(seed);
        for b in domain.bytes() {
            h = splitmix(h ^ b as u64);
        }
        h = splitmix(h ^ index);
        let lo = splitmix(h ^ 0x5151);
        Rng(Pcg64Mcg::new(((h as u128) << 64) | lo as u128 | 1))
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0.gen::<f64>()
    }
    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.uniform() < p)
    }
    pub fn next_u32(&mut self) -> u32 {
        self.0.gen()
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.gen()
    }
    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.0.gen_range(0..n)
        }
    }
    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }
    /// Pareto with the given mean and shape (> 1): scale = mean (shape-1)/shape.
    pub fn pareto(&mut self, mean: f64, shape: f64) -> f64 {
        let scale = mean * (shape - 1.0) / shape;
        scale / (1.0 - self.uniform()).powf(1.0 / shape)
    }
}

impl Default for Rng {
    fn default() -> Self {
        Rng::stream(0, "default", 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn streams_are_independent_and_reproducible() {
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::stream(7, "flow", 1), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::stream(7, "flow", 1), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::stream(7, "flow", 2), |r, _| Some(r.next_u64()))
            .collect();
        let d: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::stream(8, "flow", 1), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        let mut r = Rng::stream(1, "x", 0);
        let m: f64 = (0..20000).map(|_| r.pareto(5.0, 2.5)).sum::<f64>() / 20000.0;
        assert!((m - 5.0).abs() < 0.5, "pareto mean {m}");
    }
}
