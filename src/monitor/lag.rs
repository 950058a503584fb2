//! The monitor watching itself: are readiness rounds running on their cadence?
//!
//! With [`HealthConfig::self_monitoring`](crate::HealthConfig::self_monitoring), a component
//! named `monitor` reports trouble when no readiness round has finished for longer than two
//! intervals plus the deadline (a round is late: the runtime is starved, or a round is
//! stuck). Well before the verdicts go stale (three intervals plus the deadline, when
//! readiness fails closed), `/health` reads `degraded` with the lag.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport};
use crate::component::Component;

/// The name of the self-monitoring component.
pub(crate) const MONITOR_COMPONENT: &str = "monitor";

/// When the last readiness round finished, as microseconds since `origin`.
#[derive(Debug)]
pub(crate) struct RoundClock {
    origin: Instant,
    /// 0: no round yet.
    last_micros: AtomicU64,
}

impl RoundClock {
    pub(crate) fn new() -> Self {
        Self {
            origin: crate::clock::now(),
            last_micros: AtomicU64::new(0),
        }
    }

    pub(crate) fn round_finished(&self) {
        let micros =
            u64::try_from(crate::clock::since(self.origin).as_micros()).unwrap_or(u64::MAX);
        self.last_micros.store(micros.max(1), Ordering::Relaxed);
    }

    /// How long ago the last round finished; `None` before the first.
    fn since_last(&self) -> Option<Duration> {
        let last = self.last_micros.load(Ordering::Relaxed);
        (last > 0)
            .then(|| crate::clock::since(self.origin).saturating_sub(Duration::from_micros(last)))
    }
}

/// The `monitor` component: readiness round lag.
#[derive(Debug)]
pub(crate) struct RoundLag {
    pub(crate) clock: Arc<RoundClock>,
    pub(crate) interval: Duration,
    pub(crate) deadline: Duration,
}

impl Component for RoundLag {
    fn check(&self) -> CheckFuture {
        let bound = self
            .interval
            .saturating_mul(2)
            .saturating_add(self.deadline);
        let since = self.clock.since_last();
        let interval = self.interval;
        Box::pin(async move {
            match since {
                // The monitor's own finding, not a wait of this check: `other`, not `timeout`
                // (which would read as the check timing out).
                Some(since) if since > bound => Err(CheckError::new(
                    CheckErrorKind::Other,
                    format!(
                        "the last readiness round finished {} ago; rounds are due every {} (bound {}): the monitor is lagging",
                        format_millis(since),
                        humantime::format_duration(interval),
                        humantime::format_duration(bound),
                    ),
                )),
                // Before the first round there is nothing to say yet: not a failure.
                _ => Ok(CheckReport::default()),
            }
        })
    }
}

fn format_millis(duration: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(Duration::from_millis(
        u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
    ))
}
