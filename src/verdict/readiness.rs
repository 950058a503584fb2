use std::time::SystemTime;

use super::{DatabaseOutcome, DatabaseStatus};
use crate::config::FailDirection;

/// Can this instance serve traffic? The answer of `/health/ready`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadinessVerdict {
    /// Every configured database is usable (a timed-out one counts as usable only under
    /// [`FailDirection::Ready`]).
    pub ready: bool,
    /// One outcome per configured database, in configuration order.
    pub databases: Vec<DatabaseOutcome>,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why there is no real verdict (before the first round, after the monitor stopped).
    pub reason: Option<&'static str>,
}

impl ReadinessVerdict {
    pub(crate) fn from_outcomes(
        databases: Vec<DatabaseOutcome>,
        fail_direction: FailDirection,
        checked_at: SystemTime,
    ) -> Self {
        let ready = databases.iter().all(|outcome| match outcome.status {
            DatabaseStatus::Ready => true,
            DatabaseStatus::TimedOut => fail_direction == FailDirection::Ready,
            DatabaseStatus::NotReady => false,
        });
        Self {
            ready,
            databases,
            checked_at: Some(checked_at),
            reason: None,
        }
    }

    pub(crate) fn unavailable(reason: &'static str) -> Self {
        Self {
            ready: false,
            databases: Vec::new(),
            checked_at: None,
            reason: Some(reason),
        }
    }
}
