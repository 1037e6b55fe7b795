//! What the seeded fuzz tests share: a small generator, and the case count and seed read from
//! the environment (`CCM_FUZZ_CASES`, `CCM_FUZZ_SEED`), so that `scripts/fuzz` can run many more
//! cases than the normal suite and a failure is reproduced by the seed it prints.

/// A small deterministic generator (xorshift64*), so a failing case is reproduced by its seed.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` (a [`case_seed`]).
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// The seed of case `case` of a run seeded with `seed`: what a failure prints, and what
/// `CCM_FUZZ_SEED` reproduces it with as the run's first case. Never 0, where xorshift would
/// stay at 0.
pub fn case_seed(seed: u64, case: u64) -> u64 {
    seed.wrapping_add(case).max(1)
}

/// Cases per test: `CCM_FUZZ_CASES`, else `default`, a number small enough for the normal
/// suite.
pub fn cases(default: u64) -> u64 {
    env_number("CCM_FUZZ_CASES").unwrap_or(default)
}

/// The run's seed: `CCM_FUZZ_SEED`, else the test's own `default`.
pub fn seed(default: u64) -> u64 {
    env_number("CCM_FUZZ_SEED").unwrap_or(default)
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
