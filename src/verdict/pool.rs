use std::sync::Arc;
use std::time::SystemTime;

use http::StatusCode;

use super::CheckOutcome;
use super::PoolStats;
use super::Status;

/// Is the default database usable? The answer of `/health/pool`.
///
/// Statuses:
///
/// - `healthy`: usable (200).
/// - `degraded` with a database: usable, but its pool is saturated (every connection busy,
///   checkouts waiting); 200, like every `degraded`: keep serving, but look into it.
/// - `degraded` without one: no database is configured (503: the one place degraded does not
///   answer 200, kept from the system this crate replaces and documented there).
/// - `error`: not usable, or the check failed (503).
/// - `unavailable`: no verdict (503).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PoolVerdict {
    /// The status described above.
    pub status: Status,
    /// The default database's name; `None` when no database is configured.
    pub alias: Option<Arc<str>>,
    /// The default database's vendor, such as `"postgresql"`.
    pub vendor: Option<&'static str>,
    /// The default database's outcome in the round.
    pub outcome: Option<CheckOutcome>,
    /// The pool's statistics right after the check.
    pub stats: Option<PoolStats>,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why there is no real verdict, when there is none.
    pub reason: Option<&'static str>,
}

impl PoolVerdict {
    /// Whether the default database is usable: its check succeeded, its pool saturated or
    /// not.
    #[must_use]
    pub fn is_usable(&self) -> bool {
        self.outcome.as_ref().is_some_and(CheckOutcome::passed)
    }

    /// Whether the default database's pool was saturated after the check.
    #[must_use]
    pub fn is_saturated(&self) -> bool {
        self.stats.as_ref().is_some_and(PoolStats::is_saturated)
    }

    /// 200 when the default database is usable (saturated or not), 503 otherwise (no database
    /// configured included).
    #[must_use]
    pub fn http_status(&self) -> StatusCode {
        if self.is_usable() {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        }
    }

    pub(crate) fn from_outcome(
        outcome: Option<(CheckOutcome, &'static str, Option<PoolStats>)>,
        checked_at: SystemTime,
    ) -> Self {
        match outcome {
            None => Self {
                status: Status::Degraded,
                alias: None,
                vendor: None,
                outcome: None,
                stats: None,
                checked_at: Some(checked_at),
                reason: Some("no database is configured"),
            },
            Some((outcome, vendor, stats)) => Self {
                // A saturated pool is not an outage: the check answered (through its reserved
                // connection), so the database is usable, and the figures say why degraded.
                status: match (outcome.passed(), stats.is_some_and(|s| s.is_saturated())) {
                    (false, _) => Status::Error,
                    (true, true) => Status::Degraded,
                    (true, false) => Status::Healthy,
                },
                alias: Some(outcome.name.clone()),
                vendor: Some(vendor),
                outcome: Some(outcome),
                stats,
                checked_at: Some(checked_at),
                reason: None,
            },
        }
    }

    pub(crate) fn unavailable(reason: &'static str) -> Self {
        Self {
            status: Status::Unavailable,
            alias: None,
            vendor: None,
            outcome: None,
            stats: None,
            checked_at: None,
            reason: Some(reason),
        }
    }
}
