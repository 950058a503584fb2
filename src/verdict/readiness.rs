use std::sync::Arc;
use std::time::SystemTime;

use super::{CheckOutcome, ComponentReport, GroupVerdict};
use crate::component::UnknownComponents;
use crate::env::FailDirection;

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

/// Can this instance serve traffic? The answer of `/health/ready`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadinessVerdict {
    /// Every critical database is usable (a timed-out one counts as usable only under
    /// [`FailDirection::Ready`]; an [optional](crate::HealthConfig::optional_database) one
    /// is shown and does not count), and no component that
    /// [gates readiness](crate::component::ComponentSpec::gates_readiness) is in trouble.
    pub ready: bool,
    /// One outcome per configured database, in configuration order.
    pub databases: Vec<CheckOutcome>,
    /// The components that gate readiness, as the last health round left them.
    pub components: Vec<ComponentReport>,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why there is no real verdict (before the first round, after the monitor stopped, or
    /// after a round that panicked).
    pub reason: Option<&'static str>,
    /// The reason of a manual hold, while one is in place
    /// ([`HealthHandle::hold`](crate::HealthHandle::hold)): `ready` is then `false`.
    pub held: Option<Arc<str>>,
    /// The [health groups](crate::config::HealthGroup), in the order they were added, from
    /// the same round.
    pub groups: Vec<GroupVerdict>,
}

impl ReadinessVerdict {
    pub(crate) fn from_outcomes(
        databases: Vec<CheckOutcome>,
        components: Vec<ComponentReport>,
        rules: ReadinessRules,
        checked_at: SystemTime,
        held: Option<Arc<str>>,
    ) -> Self {
        let databases_ready = !databases
            .iter()
            .any(|outcome| rules.database_fails(outcome));
        let components_ready = !components
            .iter()
            .any(|report| rules.component_fails(report));
        let ready = databases_ready && components_ready && held.is_none();
        Self {
            ready,
            databases,
            components,
            checked_at: Some(checked_at),
            reason: None,
            held,
            groups: Vec::new(),
        }
    }

    /// The verdict of a round that panicked: not ready, with `reason`, until the next
    /// round.
    pub(crate) fn panicked(
        reason: &'static str,
        checked_at: SystemTime,
        held: Option<Arc<str>>,
    ) -> Self {
        Self {
            ready: false,
            databases: Vec::new(),
            components: Vec::new(),
            checked_at: Some(checked_at),
            reason: Some(reason),
            held,
            groups: Vec::new(),
        }
    }

    pub(crate) fn unavailable(reason: &'static str) -> Self {
        Self {
            ready: false,
            databases: Vec::new(),
            components: Vec::new(),
            checked_at: None,
            reason: Some(reason),
            held: None,
            groups: Vec::new(),
        }
    }
}
