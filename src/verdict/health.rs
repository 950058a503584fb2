use std::time::SystemTime;

use super::DatabaseOutcome;
use crate::Status;
use crate::check::CheckErrorKind;

/// The full picture: the answer of `/health`.
///
/// The status follows the default database: healthy when it answers, unhealthy when it does
/// not (or when no database is configured). Another database that does not answer makes the
/// verdict degraded: still serving, but worth a look. A check that panicked makes it `error`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HealthVerdict {
    /// The overall status.
    pub status: Status,
    /// The default database's outcome; `None` when no database is configured.
    pub database: Option<DatabaseOutcome>,
    /// The other databases' outcomes, in configuration order.
    pub others: Vec<DatabaseOutcome>,
    /// Whether the background monitor that keeps verdicts fresh is running.
    pub self_healing: bool,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why the status is what it is, when the outcomes alone do not say.
    pub reason: Option<&'static str>,
}

impl HealthVerdict {
    pub(crate) fn from_outcomes(
        mut databases: Vec<DatabaseOutcome>,
        default_index: Option<usize>,
        checked_at: SystemTime,
    ) -> Self {
        let database = default_index.map(|index| databases.remove(index));
        let panicked = |outcome: &DatabaseOutcome| {
            outcome
                .error
                .as_ref()
                .is_some_and(|error| error.kind() == CheckErrorKind::Panicked)
        };
        let (status, reason) = match &database {
            None => (Status::Unhealthy, Some("no database is configured")),
            Some(default) if panicked(default) => (Status::Error, Some("the default database check panicked")),
            Some(default) if !default.is_ready() => (Status::Unhealthy, None),
            Some(_) if databases.iter().any(|other| !other.is_ready()) => (
                Status::Degraded,
                Some("a database other than the default one is not ready"),
            ),
            Some(_) => (Status::Healthy, None),
        };
        Self {
            status,
            database,
            others: databases,
            self_healing: true,
            checked_at: Some(checked_at),
            reason,
        }
    }

    pub(crate) fn unavailable(reason: &'static str, self_healing: bool) -> Self {
        Self {
            status: Status::Unavailable,
            database: None,
            others: Vec::new(),
            self_healing,
            checked_at: None,
            reason: Some(reason),
        }
    }
}
