//! Randomness for spreading a fleet's processes apart in time (the shared cache's rounds, the
//! return to rotation after an outage), without a dependency: not for cryptography.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

/// A number in `[0, 1)`, different in each process and on each call.
pub(crate) fn fraction() -> f64 {
    #[cfg(test)]
    if let Some(fixed) = FIXED.get() {
        return fixed;
    }
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

#[cfg(test)]
thread_local! {
    /// What every draw on this thread returns while a test has fixed it: the timeline test
    /// (`src/timeline_tests/`) replays a seed exactly, its model knowing each delay drawn.
    static FIXED: std::cell::Cell<Option<f64>> = const { std::cell::Cell::new(None) };
}

/// Makes every draw on this thread return `fraction` (in `[0, 1)`), or random ones again
/// (`None`).
#[cfg(test)]
#[cfg_attr(
    not(all(
        feature = "grpc",
        feature = "haproxy-agent",
        feature = "metrics",
        feature = "page"
    )),
    allow(
        dead_code,
        reason = "the timeline test's, which needs its readers' features"
    )
)]
pub(crate) fn fix_on_this_thread(fraction: Option<f64>) {
    FIXED.set(fraction);
}

/// A random part of `period`, in `[0, period)` (zero for a zero `period`).
pub(crate) fn part_of(period: Duration) -> Duration {
    period.mul_f64(fraction())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_stays_below_its_period() {
        let period = Duration::from_secs(5);
        for _ in 0..1000 {
            let fraction = fraction();
            assert!((0.0..1.0).contains(&fraction), "{fraction}");
            assert!(part_of(period) < period);
        }
        assert_eq!(part_of(Duration::ZERO), Duration::ZERO);
    }
}
