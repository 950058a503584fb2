//! The one clock every verdict is judged by: when a round started, when a verdict goes
//! stale, when a failure has lasted the debounce, when a return's jitter runs out.
//!
//! `std::time::Instant`, read here only. The crate's own unit tests read Tokio's clock
//! instead (the same instant unless a test paused it), so that the timeline test
//! (`src/timeline_tests/`) can run an hour of rounds in virtual time; every other build, the benches
//! and the integration tests included, reads the standard clock and pays nothing for the
//! switch.

use std::time::{Duration, Instant};

/// Now.
#[inline]
pub(crate) fn now() -> Instant {
    #[cfg(not(test))]
    return Instant::now();
    #[cfg(test)]
    return tokio::time::Instant::now().into_std();
}

/// How long ago `earlier` was (zero for an instant ahead of now): `Instant::elapsed` on
/// this clock.
#[inline]
pub(crate) fn since(earlier: Instant) -> Duration {
    now().saturating_duration_since(earlier)
}
