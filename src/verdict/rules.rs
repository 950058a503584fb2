//! What fails readiness: the fail direction, how a component with no result yet counts, and
//! the rule that applies them to a check's outcome.

use super::{CheckOutcome, ComponentReport, UnknownComponents};

/// What readiness answers while a database check has timed out.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailDirection {
    /// Report `timed_out` and answer 503: the pod leaves rotation (the default).
    #[default]
    NotReady,
    /// Report `timed_out` and answer 200: the pod stays in rotation. The case for pods that
    /// share one database, where depooling them all at once turns a database stall into a full
    /// outage.
    Ready,
}

impl FailDirection {
    /// The name used in configuration: `"not_ready"` or `"ready"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotReady => "not_ready",
            Self::Ready => "ready",
        }
    }
}

/// What fails readiness, from the configuration: the one place that says which check
/// outcome takes a pod out of rotation, for the verdict and for every answer that lists
/// the checks.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct ReadinessRules {
    pub(crate) fail_direction: FailDirection,
    pub(crate) unknown: UnknownComponents,
}

impl ReadinessRules {
    /// Whether `outcome` fails readiness: a critical database's failure, or its timeout
    /// under [`FailDirection::NotReady`].
    pub(crate) fn database_fails(self, outcome: &CheckOutcome) -> bool {
        outcome.critical && !outcome.status.passes_readiness(self.fail_direction)
    }

    /// Whether `report` (a component that gates readiness) fails readiness.
    pub(crate) fn component_fails(self, report: &ComponentReport) -> bool {
        report.counts_as_trouble(self.unknown)
    }
}
