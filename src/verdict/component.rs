use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use super::CheckErrorKind;
use super::ComponentStatus;
use super::{CheckOutcome, CheckStatus};

/// Where one [component](crate::component) stood when a verdict was computed.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ComponentReport {
    /// The component's name.
    pub name: Arc<str>,
    /// Its state after hysteresis.
    pub status: ComponentStatus,
    /// Whether it is critical (in trouble: `unhealthy`) or not (`degraded`).
    pub critical: bool,
    /// Whether it also gates readiness.
    pub gates_readiness: bool,
    /// What it checks (redacted), when the component says: see
    /// [`Component::target`](crate::component::Component::target). The last outcome's
    /// [`target`](CheckOutcome::target) is what its last check reached (the one a passing
    /// check's report named, else this one): [`shown_target`](Self::shown_target) picks.
    pub target: Option<String>,
    /// Its last check's outcome (with what it reported, when it passed); `None` before the
    /// first.
    pub outcome: Option<CheckOutcome>,
    /// Which rule put it where it is, for humans.
    pub reason: Cow<'static, str>,
    /// Since when it has been in its current state.
    pub since: SystemTime,
    /// Checks in a row that failed (timed out included), up to the last.
    pub consecutive_failures: u32,
    /// Checks in a row that succeeded, up to the last.
    pub consecutive_successes: u32,
}

impl ComponentReport {
    /// What its last check did: `"ok"`, `"failed"`, `"timed_out"` or `"error"` (it
    /// panicked); `None` before the first.
    #[must_use]
    pub fn last_check(&self) -> Option<&'static str> {
        self.outcome.as_ref().map(|outcome| match outcome.status {
            CheckStatus::Passed => "ok",
            CheckStatus::TimedOut => "timed_out",
            CheckStatus::Failed
                if outcome
                    .error
                    .as_ref()
                    .is_some_and(|error| error.kind() == CheckErrorKind::Panicked) =>
            {
                "error"
            }
            CheckStatus::Failed => "failed",
        })
    }

    /// The target bodies show: the last check's (what a passing check reported, else the
    /// component's own), or the component's own before the first check.
    #[must_use]
    pub fn shown_target(&self) -> Option<&str> {
        self.outcome
            .as_ref()
            .and_then(|outcome| outcome.target.as_deref())
            .or(self.target.as_deref())
    }

    /// Whether it counts as in trouble for the overall status, `unknown` counting as
    /// `policy` says.
    pub(crate) fn counts_as_trouble(&self, policy: super::UnknownComponents) -> bool {
        match self.status {
            ComponentStatus::Unknown => policy == super::UnknownComponents::InTrouble,
            status => status.is_in_trouble(),
        }
    }
}
