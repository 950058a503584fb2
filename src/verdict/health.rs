use std::borrow::Cow;
use std::time::SystemTime;

use super::{ComponentReport, DatabaseOutcome};
use crate::Status;
use crate::check::{CheckErrorKind, PoolStats};
use crate::component::UnknownComponents;

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
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HealthVerdict {
    /// The overall status.
    pub status: Status,
    /// The default database's outcome; `None` when no database is configured.
    pub database: Option<DatabaseOutcome>,
    /// Every other database's outcome, in configuration order.
    pub databases: Vec<DatabaseOutcome>,
    /// The saturated pools the round saw (every connection busy, checkouts waiting), by
    /// database name, with their figures; empty when none is.
    pub saturated_pools: Vec<(std::sync::Arc<str>, PoolStats)>,
    /// Whether the background monitor that keeps verdicts fresh is running.
    pub self_healing: bool,
    /// When the round finished; `None` when no round has.
    pub checked_at: Option<SystemTime>,
    /// Why the status is what it is, when the outcomes alone do not say.
    pub reason: Option<Cow<'static, str>>,
    /// Every registered component, in registration order; empty when none is.
    pub components: Vec<ComponentReport>,
}

impl HealthVerdict {
    pub(crate) fn from_outcome(
        database: Option<DatabaseOutcome>,
        databases: Vec<DatabaseOutcome>,
        saturated_pools: Vec<(std::sync::Arc<str>, PoolStats)>,
        components: Vec<ComponentReport>,
        unknown: UnknownComponents,
        self_healing: bool,
        checked_at: SystemTime,
    ) -> Self {
        let panicked = |outcome: &DatabaseOutcome| {
            outcome
                .error
                .as_ref()
                .is_some_and(|error| error.kind() == CheckErrorKind::Panicked)
        };
        let in_trouble = |critical: bool| {
            components
                .iter()
                .find(|report| report.critical == critical && report.counts_as_trouble(unknown))
        };
        let (status, reason): (_, Option<Cow<'static, str>>) = match &database {
            None => (Status::Unhealthy, Some("no database is configured".into())),
            Some(default) if default.critical && panicked(default) => (
                Status::Error,
                Some("the default database check panicked".into()),
            ),
            Some(default) if default.critical && !default.is_ready() => (Status::Unhealthy, None),
            Some(default) => match (
                in_trouble(true),
                in_trouble(false),
                std::iter::once(default)
                    .chain(&databases)
                    .find(|outcome| !outcome.critical && !outcome.is_ready()),
            ) {
                (Some(report), _, _) => (
                    Status::Unhealthy,
                    Some(format!("critical component {} is {}", report.name, report.status).into()),
                ),
                (None, Some(report), _) => (
                    Status::Degraded,
                    Some(
                        format!(
                            "non-critical component {} is {}",
                            report.name, report.status
                        )
                        .into(),
                    ),
                ),
                (None, None, _) if !saturated_pools.is_empty() => {
                    let (name, stats) = &saturated_pools[0];
                    (
                        Status::Degraded,
                        Some(
                            format!(
                                "database {name}'s pool is saturated: {} of {} connections in use, {} checkouts waiting",
                                stats.in_use(),
                                stats.max_size,
                                stats.pending_gets
                            )
                            .into(),
                        ),
                    )
                }
                (None, None, Some(outcome)) => (
                    Status::Degraded,
                    Some(
                        format!("optional database {} is {}", outcome.name, outcome.status).into(),
                    ),
                ),
                (None, None, None) => (Status::Healthy, None),
            },
        };
        Self {
            status,
            database,
            databases,
            saturated_pools,
            self_healing,
            checked_at: Some(checked_at),
            reason,
            components,
        }
    }

    pub(crate) fn unavailable(reason: &'static str, self_healing: bool) -> Self {
        Self {
            status: Status::Unavailable,
            database: None,
            databases: Vec::new(),
            saturated_pools: Vec::new(),
            self_healing,
            checked_at: None,
            reason: Some(reason.into()),
            components: Vec::new(),
        }
    }
}
