use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::check::{CheckError, CheckErrorKind};
use crate::config::FailDirection;

/// The readiness of one database in one round.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DatabaseStatus {
    /// The check succeeded within the deadline.
    Ready,
    /// The check failed within the deadline.
    NotReady,
    /// The check had not finished when the deadline passed.
    TimedOut,
}

impl DatabaseStatus {
    /// The name used in JSON bodies: `"ready"`, `"not_ready"` or `"timed_out"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::NotReady => "not_ready",
            Self::TimedOut => "timed_out",
        }
    }

    /// Whether a critical database in this state lets readiness pass: ready, or timed out
    /// under [`FailDirection::Ready`]. The rule of [`ReadinessVerdict::ready`], for readers
    /// that answer per database (gRPC's `database/<name>` services).
    ///
    /// [`ReadinessVerdict::ready`]: super::ReadinessVerdict::ready
    #[must_use]
    pub fn passes(self, fail_direction: FailDirection) -> bool {
        match self {
            Self::Ready => true,
            Self::TimedOut => fail_direction == FailDirection::Ready,
            Self::NotReady => false,
        }
    }
}

impl fmt::Display for DatabaseStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one database's check concluded in one round.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DatabaseOutcome {
    /// The database's configured name (`"default"` for the default database).
    pub name: Arc<str>,
    /// Ready, not ready or timed out.
    pub status: DatabaseStatus,
    /// How long this round waited: until the check finished, or until the deadline.
    pub elapsed: Duration,
    /// For a check still running from an earlier round, how long it has been running.
    pub running_for: Option<Duration>,
    /// Why the check failed (redacted), when it did.
    pub error: Option<CheckError>,
    /// A note for humans, such as why a timed-out check was not started again.
    pub detail: Option<String>,
    /// Whether the database is critical (it gates readiness; the default one also decides
    /// `unhealthy`) or optional (down, it makes health `degraded` and leaves readiness
    /// alone): see [`HealthConfig::optional_database`](crate::HealthConfig::optional_database).
    pub critical: bool,
    /// What the check connects to (host, port, database name; never a password), when the
    /// check says: see [`DatabaseCheck::target`](crate::check::DatabaseCheck::target).
    pub target: Option<Arc<str>>,
}

impl DatabaseOutcome {
    /// What went wrong, for a log line: the (redacted) error, or else the detail.
    pub(crate) fn error_or_detail(&self) -> Option<String> {
        self.error
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| self.detail.clone())
    }

    /// The category of what went wrong: the error's, or [`CheckErrorKind::Timeout`] for a
    /// check the deadline cut short (it has no error of its own: it has not ended); `None`
    /// when the check succeeded.
    #[must_use]
    pub fn error_kind(&self) -> Option<CheckErrorKind> {
        match (&self.error, self.status) {
            (Some(error), _) => Some(error.kind()),
            (None, DatabaseStatus::TimedOut) => Some(CheckErrorKind::Timeout),
            (None, DatabaseStatus::Ready | DatabaseStatus::NotReady) => None,
        }
    }

    /// Whether the check succeeded.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.status == DatabaseStatus::Ready
    }
}
