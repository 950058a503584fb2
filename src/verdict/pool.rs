use std::sync::Arc;
use std::time::SystemTime;

use http::StatusCode;

use super::DatabaseOutcome;
use crate::Status;
use crate::check::PoolStats;

/// Is the default database usable? The answer of `/health/pool`.
///
/// Statuses: `healthy` (usable, 200), `error` (not usable or the check failed, 503),
/// `degraded` (no database is configured, 503: the one place degraded does not answer 200,
/// kept from the system this crate replaces), `unavailable` (no verdict, 503).
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
    pub outcome: Option<DatabaseOutcome>,
    /// The pool's statistics right after the check.
    pub stats: Option<PoolStats>,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why there is no real verdict, when there is none.
    pub reason: Option<&'static str>,
}

impl PoolVerdict {
    /// Whether the default database is usable.
    #[must_use]
    pub fn is_usable(&self) -> bool {
        self.status == Status::Healthy
    }

    /// 200 when the default database is usable, 503 otherwise.
    #[must_use]
    pub fn http_status(&self) -> StatusCode {
        if self.is_usable() {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        }
    }

    pub(crate) fn from_outcome(
        outcome: Option<(DatabaseOutcome, &'static str, Option<PoolStats>)>,
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
                status: if outcome.is_ready() {
                    Status::Healthy
                } else {
                    Status::Error
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
