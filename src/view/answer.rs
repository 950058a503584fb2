//! How one probe is answered, and what decided it.

use std::time::Duration;

use crate::probe::Probe;

/// How one probe is answered now: the same for every transport.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Answer {
    /// The probe answered.
    pub probe: Probe,
    /// Whether it passes: HTTP 200, gRPC `SERVING`.
    pub passing: bool,
    /// What decided the answer, beyond the verdict itself.
    pub condition: Condition,
    /// The `status` the body carries: `ready`, `not_ready`, `healthy`, `degraded`,
    /// `unhealthy`, `error`, `unavailable`, `draining`, `alive`, `started`, `starting`.
    pub status: &'static str,
    /// How old the verdict answered from is; `None` for probes that read none (liveness,
    /// ping, startup) and before the first round.
    pub age: Option<Duration>,
}

/// What decided an [`Answer`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Condition {
    /// The published verdict, as it is.
    Verdict,
    /// The server is draining: readiness, health and pool fail whatever the verdict says.
    Draining,
    /// The verdict is older than its staleness bound (the monitor is stuck or stopped): it
    /// is not served as fresh, and the probe fails.
    Stale,
    /// There is no verdict: no round has completed yet, or the monitor is not running.
    Unavailable,
    /// An operator's hold keeps readiness failing
    /// ([`HealthHandle::hold`](crate::HealthHandle::hold)).
    Held,
    /// The process has not finished starting (startup probe).
    Starting,
    /// Readiness's checks pass again after an outage, and it waits out the random delay of
    /// its return ([`HealthConfig::return_jitter`](crate::HealthConfig::return_jitter)), so
    /// that a fleet does not return on one tick: readiness fails until then.
    Returning,
}

impl Condition {
    /// `verdict`, `draining`, `stale`, `unavailable`, `held`, `starting` or `returning`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Verdict => "verdict",
            Self::Draining => "draining",
            Self::Stale => "stale",
            Self::Unavailable => "unavailable",
            Self::Held => "held",
            Self::Starting => "starting",
            Self::Returning => "returning",
        }
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
