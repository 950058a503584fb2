//! Jitter for the health rounds of a fleet that shares one verdict: processes started
//! together must not read, race and compute in lockstep.

use std::time::Duration;

use crate::util::random_fraction as fraction;

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
