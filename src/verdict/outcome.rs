//! What one check (a database's or a component's) concluded in one round.
//!
//! Databases and components are checked by the same mechanism and report the same
//! [`CheckOutcome`]: the check passed, failed or timed out. What that means is each reader's
//! to say: readiness shows a database as `"ready"`, `"not_ready"` or `"timed_out"`, and a
//! component's `check` as `"ok"`, `"failed"`, `"timed_out"` or `"error"`
//! ([`ComponentReport::last_check`](super::ComponentReport::last_check)).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::FailDirection;
use super::{CheckError, CheckErrorKind};

/// How one check ended in one round.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckStatus {
    /// The check succeeded within the deadline.
    Passed,
    /// The check failed within the deadline.
    Failed,
    /// The check had not finished when the deadline passed, or gave up waiting itself (a
    /// connect timeout, a saturated pool).
    TimedOut,
}

impl CheckStatus {
    /// The name of the status: `"passed"`, `"failed"` or `"timed_out"`.
    ///
    /// Bodies and metrics say it as their readers expect: a database is
    /// [`database_word`](Self::database_word) (`"ready"`, `"not_ready"`, `"timed_out"`), and a
    /// component's last check reads as [`ComponentReport::last_check`] says.
    ///
    /// [`ComponentReport::last_check`]: super::ComponentReport::last_check
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
        }
    }

    /// The word a database whose check ended so goes by in bodies (readiness's `checks`,
    /// each database's `status`, `pool_info.check`), causes and metrics: `"ready"`,
    /// `"not_ready"` or `"timed_out"`, the words dashboards already read.
    #[must_use]
    pub const fn database_word(self) -> &'static str {
        match self {
            Self::Passed => "ready",
            Self::Failed => "not_ready",
            Self::TimedOut => "timed_out",
        }
    }

    /// Whether a critical database whose check ended so lets readiness pass: passed, or timed
    /// out under [`FailDirection::Ready`]. The rule of [`ReadinessVerdict::ready`], for
    /// readers that answer per database (gRPC's `database/<name>` services).
    ///
    /// [`ReadinessVerdict::ready`]: super::ReadinessVerdict::ready
    #[must_use]
    pub fn passes_readiness(self, fail_direction: FailDirection) -> bool {
        match self {
            Self::Passed => true,
            Self::TimedOut => fail_direction == FailDirection::Ready,
            Self::Failed => false,
        }
    }
}

impl fmt::Display for CheckStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one check, of a [database](crate::check) or of a [component](crate::component),
/// concluded in one round.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CheckOutcome {
    /// The configured name of the database (`"default"` for the default one) or component.
    pub name: Arc<str>,
    /// Passed, failed or timed out.
    pub status: CheckStatus,
    /// How long this round waited: until the check finished, or until the deadline.
    pub elapsed: Duration,
    /// For a check still running from an earlier round, how long it has been running.
    pub running_for: Option<Duration>,
    /// Why the check failed (redacted), when it did.
    pub error: Option<CheckError>,
    /// Why a check that timed out without an error of its own did: what
    /// [`detail`](Self::detail) says.
    pub(crate) detail: Option<TimeoutDetail>,
    /// Whether the database or component is critical. A critical database gates readiness
    /// (the default one also decides `unhealthy`); an optional one, down, makes health
    /// `degraded` and leaves readiness alone: see
    /// [`HealthConfig::optional_database`](crate::HealthConfig::optional_database). A
    /// critical component in trouble makes health `unhealthy`, another `degraded`.
    pub critical: bool,
    /// What the check connects to (host, port, database name, URL; redacted, never a
    /// password): the target its [`CheckReport`](crate::check::CheckReport) named when it
    /// passed with one, else the check's own
    /// ([`DatabaseCheck::target`](crate::check::DatabaseCheck::target),
    /// [`Component::target`](crate::component::Component::target)).
    pub target: Option<Arc<str>>,
    /// What a passing check reported beside its result (a latency, a server version):
    /// [`CheckReport::detail`](crate::check::CheckReport::detail). `None` when the check did
    /// not pass or reported nothing. Rendered where targets are (at the full detail level),
    /// as `details`.
    pub details: Option<Arc<Map<String, Value>>>,
}

/// Why a check timed out without an error of its own: a note of the monitor's, the same at
/// every detail level (it names nothing). Readers get its sentence
/// ([`CheckOutcome::detail`]); the shared entry keeps its key.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TimeoutDetail {
    /// The check did not finish before the round's deadline.
    DeadlinePassed,
    /// A check started by an earlier round is still running, and no other was started.
    EarlierCheckRunning,
    /// The round's deadline passed while the process was starved (the runtime woke the round
    /// well past it), which says nothing of the check: the outcome is the last one the
    /// rounds heard, standing in for this round's timeout. See [`HealthConfig::readiness_timeout`](crate::HealthConfig::readiness_timeout).
    Starved,
}

impl TimeoutDetail {
    /// A short key: `deadline_passed`, `earlier_check_running` or `starved`, as the shared
    /// entry keeps it.
    #[cfg(feature = "redis")]
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::DeadlinePassed => "deadline_passed",
            Self::EarlierCheckRunning => "earlier_check_running",
            Self::Starved => "starved",
        }
    }

    /// The note in a sentence, as bodies show it under `detail`.
    pub(crate) const fn describe(self) -> &'static str {
        match self {
            Self::DeadlinePassed => "the check did not finish before the deadline",
            Self::EarlierCheckRunning => {
                "a check started by an earlier round is still running; no new check was started"
            }
            Self::Starved => {
                "the process was starved past the round's deadline; this is the last result heard"
            }
        }
    }
}

impl fmt::Display for TimeoutDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

impl CheckOutcome {
    /// What went wrong, for a log line: the (redacted) error, or else the detail.
    pub(crate) fn error_or_detail(&self) -> Option<String> {
        self.error
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| self.detail.map(|detail| detail.describe().to_owned()))
    }

    /// The category of what went wrong: the error's, or [`CheckErrorKind::Timeout`] for a
    /// check the deadline cut short (it has no error of its own: it has not ended); `None`
    /// when the check passed.
    #[must_use]
    pub fn error_kind(&self) -> Option<CheckErrorKind> {
        match (&self.error, self.status) {
            (Some(error), _) => Some(error.kind()),
            (None, CheckStatus::TimedOut) => Some(CheckErrorKind::Timeout),
            (None, CheckStatus::Passed | CheckStatus::Failed) => None,
        }
    }

    /// Whether the check passed.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.status == CheckStatus::Passed
    }

    /// Why a check that has no error of its own did not finish on time, in the sentence the
    /// bodies show under `detail`: the round's deadline cut it short; a check started by an
    /// earlier round is still running, and no other was started; or the process was starved
    /// past the round's deadline, which says nothing of the check, and the outcome is the last
    /// one the rounds heard (see
    /// [`HealthConfig::readiness_timeout`](crate::HealthConfig::readiness_timeout)). `None`
    /// otherwise.
    #[must_use]
    pub fn detail(&self) -> Option<&'static str> {
        self.detail.map(TimeoutDetail::describe)
    }
}
