use std::sync::Arc;
use std::time::SystemTime;

use super::Status;
use super::UnknownComponents;
use super::{Cause, CheckOutcome, ComponentReport, FleetGuard};
use super::{CheckErrorKind, PoolStats};

/// The full picture: the answer of `/health`.
///
/// The status, rule by rule (the first that applies):
///
/// 1. no database is configured: `unhealthy`;
/// 2. the default database's check panicked: `error`;
/// 3. the default database does not answer: `unhealthy`;
/// 4. a critical [component](crate::component) is in trouble: `unhealthy`;
/// 5. a non-critical component is in trouble: `degraded` (200);
/// 6. a database answers but its pool is saturated (every connection busy, checkouts
///    waiting): `degraded` (200), with the pool's figures, not "database down";
/// 7. an [optional database](crate::HealthConfig::optional_database) does not answer:
///    `degraded` (200; for an optional default database, rules 2 and 3 do not apply);
/// 8. otherwise `healthy`.
///
/// A component still `unknown` counts as
/// [`HealthConfig::unknown_components`](crate::HealthConfig::unknown_components) says. The
/// other databases are readiness's business.
///
/// [`causes`](Self::causes) lists every rule that applies, not only the first: a cache and a
/// replica in trouble behind a critical dependency are all named. An operator's hold does not
/// change the status (it is about traffic, not health) and is listed first while in place.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HealthVerdict {
    /// The overall status.
    pub status: Status,
    /// The default database's outcome; `None` when no database is configured.
    pub database: Option<CheckOutcome>,
    /// Every other database's outcome, in configuration order.
    pub databases: Vec<CheckOutcome>,
    /// The saturated pools the round saw (every connection busy, checkouts waiting), by
    /// database name, with their figures; empty when none is.
    pub saturated_pools: Vec<(Arc<str>, PoolStats)>,
    /// Whether the background monitor that keeps verdicts fresh is running.
    pub self_healing: bool,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why the status is what it is: every cause, most serious first; empty when healthy.
    pub causes: Vec<Cause>,
    /// Every registered component, in registration order; empty when none is.
    pub components: Vec<ComponentReport>,
    /// Whether the process had finished starting when the verdict was published.
    pub started: bool,
    /// The process that computed the databases' outcomes and the shared components, when
    /// this process serves a verdict from the shared cache, `redis::SharedCache` (`"_cache":
    /// {"hit": "shared", "computed_by": ...}`); `None` for a verdict of its own.
    pub computed_by: Option<Arc<str>>,
}

impl HealthVerdict {
    pub(crate) fn from_outcome(
        database: Option<CheckOutcome>,
        databases: Vec<CheckOutcome>,
        saturated_pools: Vec<(Arc<str>, PoolStats)>,
        components: Vec<ComponentReport>,
        unknown: UnknownComponents,
        self_healing: bool,
        checked_at: SystemTime,
    ) -> Self {
        let (status, causes) =
            match &database {
                None => (Status::Unhealthy, vec![Cause::NoDatabase]),
                Some(default) => {
                    let mut causes = Vec::new();
                    let default_down = default.critical && !default.passed();
                    if default_down {
                        causes.push(database_cause(default));
                    }
                    for critical in [true, false] {
                        causes.extend(
                            components
                                .iter()
                                .filter(|report| {
                                    report.critical == critical && report.counts_as_trouble(unknown)
                                })
                                .map(|report| Cause::Component {
                                    name: report.name.clone(),
                                    status: report.status,
                                    critical,
                                }),
                        );
                    }
                    causes.extend(saturated_pools.iter().map(|(name, stats)| {
                        Cause::PoolSaturated {
                            name: name.clone(),
                            stats: *stats,
                        }
                    }));
                    causes.extend(
                        std::iter::once(default)
                            .chain(&databases)
                            .filter(|outcome| !outcome.critical && !outcome.passed())
                            .map(database_cause),
                    );
                    let status = if default_down && panicked(default) {
                        Status::Error
                    } else if default_down
                        || causes
                            .iter()
                            .any(|cause| matches!(cause, Cause::Component { critical: true, .. }))
                    {
                        Status::Unhealthy
                    } else if causes.is_empty() {
                        Status::Healthy
                    } else {
                        Status::Degraded
                    };
                    (status, causes)
                }
            };
        Self {
            status,
            database,
            databases,
            saturated_pools,
            self_healing,
            checked_at: Some(checked_at),
            causes,
            components,
            started: false,
            computed_by: None,
        }
    }

    pub(crate) fn unavailable(why: &'static str, self_healing: bool) -> Self {
        Self {
            status: Status::Unavailable,
            database: None,
            databases: Vec::new(),
            saturated_pools: Vec::new(),
            self_healing,
            checked_at: None,
            causes: vec![Cause::NoVerdict { why }],
            components: Vec::new(),
            started: false,
            computed_by: None,
        }
    }

    /// The verdict of a `round` that panicked: `error`, until the next round.
    pub(crate) fn panicked(
        round: &'static str,
        self_healing: bool,
        checked_at: SystemTime,
    ) -> Self {
        Self {
            status: Status::Error,
            database: None,
            databases: Vec::new(),
            saturated_pools: Vec::new(),
            self_healing,
            checked_at: Some(checked_at),
            causes: vec![Cause::Panicked { round }],
            components: Vec::new(),
            started: false,
            computed_by: None,
        }
    }

    /// The same verdict with the operator's hold (if any) listed first among the causes, the
    /// fleet guard's conclusion (if any) last, and the start as given: what `/health` shows
    /// of the process's lifecycle and of its readiness.
    pub(crate) fn with_lifecycle(
        &self,
        held: Option<Arc<str>>,
        started: bool,
        fleet_guard: Option<FleetGuard>,
    ) -> Self {
        let mut verdict = self.clone();
        verdict
            .causes
            .retain(|cause| !matches!(cause, Cause::Held { .. } | Cause::FleetGuard { .. }));
        if let Some(reason) = held {
            verdict.causes.insert(0, Cause::Held { reason });
        }
        if let Some(guard) = fleet_guard {
            verdict.causes.push(Cause::FleetGuard { guard });
        }
        verdict.started = started;
        verdict
    }

    /// The headline: the first cause, in a sentence; `None` when healthy.
    #[must_use]
    pub fn reason(&self) -> Option<String> {
        self.causes.first().map(Cause::describe)
    }
}

fn panicked(outcome: &CheckOutcome) -> bool {
    outcome
        .error
        .as_ref()
        .is_some_and(|error| error.kind() == CheckErrorKind::Panicked)
}

fn database_cause(outcome: &CheckOutcome) -> Cause {
    Cause::Database {
        name: outcome.name.clone(),
        status: outcome.status,
        kind: outcome.error_kind(),
        optional: !outcome.critical,
    }
}
