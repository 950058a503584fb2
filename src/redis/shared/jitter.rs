//! Jitter for the health rounds of a fleet that shares one verdict: processes started
//! together must not read, race and compute in lockstep.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

/// A number in `[0, 1)`, different in each process and on each call (not for cryptography).
pub(crate) fn fraction() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos()),
    );
    // The top 53 bits, as a double's mantissa holds them.
    (hasher.finish() >> 11) as f64 / (1_u64 << 53) as f64
}

/// The wait before the second health round: a random part of `period`, so that the rounds
/// of processes started together spread over the whole period.
pub(crate) fn phase(period: Duration) -> Duration {
    period.mul_f64(fraction())
}

/// The wait between two later health rounds: `period`, 10 % more or less at random, so
/// that the processes keep drifting apart rather than falling back into step.
pub(crate) fn next(period: Duration) -> Duration {
    period.mul_f64(0.9 + 0.2 * fraction())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_waits_stay_within_their_bounds() {
        let period = Duration::from_secs(10);
        for _ in 0..1000 {
            let fraction = fraction();
            assert!((0.0..1.0).contains(&fraction), "{fraction}");
            assert!(phase(period) < period);
            let next = next(period);
            assert!(next >= Duration::from_secs(9) && next <= Duration::from_secs(11));
        }
    }
}
