use std::time::SystemTime;

use super::DatabaseOutcome;
use crate::Status;
use crate::check::CheckErrorKind;

/// The full picture: the answer of `/health`.
///
/// The status follows the default database: healthy when it answers, unhealthy when it does
/// not (or when no database is configured), `error` when its check panicked. The other
/// databases are readiness's business.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HealthVerdict {
    /// The overall status.
    pub status: Status,
    /// The default database's outcome; `None` when no database is configured.
    pub database: Option<DatabaseOutcome>,
    /// Whether the background monitor that keeps verdicts fresh is running.
    pub self_healing: bool,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why the status is what it is, when the outcomes alone do not say.
    pub reason: Option<&'static str>,
}

impl HealthVerdict {
    pub(crate) fn from_outcome(
        database: Option<DatabaseOutcome>,
        self_healing: bool,
        checked_at: SystemTime,
    ) -> Self {
        let panicked = |outcome: &DatabaseOutcome| {
            outcome
                .error
                .as_ref()
                .is_some_and(|error| error.kind() == CheckErrorKind::Panicked)
        };
        let (status, reason) = match &database {
            None => (Status::Unhealthy, Some("no database is configured")),
            Some(default) if panicked(default) => {
                (Status::Error, Some("the default database check panicked"))
            }
            Some(default) if !default.is_ready() => (Status::Unhealthy, None),
            Some(_) => (Status::Healthy, None),
        };
        Self {
            status,
            database,
            self_healing,
            checked_at: Some(checked_at),
            reason,
        }
    }

    pub(crate) fn unavailable(reason: &'static str, self_healing: bool) -> Self {
        Self {
            status: Status::Unavailable,
            database: None,
            self_healing,
            checked_at: None,
            reason: Some(reason),
        }
    }
}
