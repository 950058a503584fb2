//! gRPC's dialect: which services there are, and what each answers, from the view (and the
//! application's own statuses): `SERVING`, `NOT_SERVING`, `UNKNOWN` and the conventions of
//! `grpc.health.v1` (a drain answers `NOT_SERVING` everywhere; service `""` is readiness; a
//! `Watch` client acts on a single answer, so a failure reaches it once debounced).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use super::debounce::passes_debounced;
use crate::component::ComponentStatus;
use crate::probe::Probe;
use crate::verdict::{Failing, Streaks};
use crate::view::reading::GroupAnswer;
use crate::view::{Condition, Known, View};

/// The serving status of one service of `grpc.health.v1`.
///
/// `SERVICE_UNKNOWN` is not here: it is what [`Watch`](crate::grpc::pb::health_server::Health::watch)
/// sends for a name no service has, never a status a service is in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ServingStatus {
    /// No verdict yet: the first round has not completed.
    Unknown,
    /// The service is up and serving.
    Serving,
    /// The service is down, or the process is draining.
    NotServing,
}

impl ServingStatus {
    /// `"UNKNOWN"`, `"SERVING"` or `"NOT_SERVING"`: the names of the proto.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "UNKNOWN",
            Self::Serving => "SERVING",
            Self::NotServing => "NOT_SERVING",
        }
    }
}

impl fmt::Display for ServingStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The prefix of the service of each configured database: `database/<name>`
/// (`database/default` for the default one).
pub(crate) const DATABASE_PREFIX: &str = "database/";

/// The prefix of the service of each [component](crate::component): `component/<name>`.
pub(crate) const COMPONENT_PREFIX: &str = "component/";

/// The prefix of the service of each [health group](crate::config::HealthGroup):
/// `group/<name>`, judged as readiness is (held, draining or stale: `NOT_SERVING`).
pub(crate) const GROUP_PREFIX: &str = "group/";

/// The most services [`List`](crate::grpc::pb::health_server::Health::list) returns; past it, it
/// answers `RESOURCE_EXHAUSTED`, as the proto says.
pub(crate) const MAX_LISTED: usize = 100;

impl ServingStatus {
    /// `Serving` when `passing`, `NotServing` otherwise.
    pub(crate) const fn from_passing(passing: bool) -> Self {
        if passing {
            Self::Serving
        } else {
            Self::NotServing
        }
    }

    /// What a probe's answer is on the wire, from what decided it and whether it passes:
    /// `Unknown` while no verdict exists and the monitor is running (before the first round).
    /// A monitor that is not running is a failure, as over HTTP.
    pub(crate) fn of_judged(condition: Condition, passing: bool, monitor_running: bool) -> Self {
        match condition {
            Condition::Unavailable if monitor_running => Self::Unknown,
            _ => Self::from_passing(passing),
        }
    }

    /// A component's status: healthy and degraded serve (degraded never depools), unhealthy
    /// does not, unknown is unknown.
    pub(crate) const fn of_component(status: ComponentStatus) -> Self {
        match status {
            ComponentStatus::Healthy | ComponentStatus::Degraded => Self::Serving,
            ComponentStatus::Unhealthy => Self::NotServing,
            ComponentStatus::Unknown => Self::Unknown,
        }
    }
}

/// The statuses the application set, by name.
pub(crate) type AppStatuses = Arc<BTreeMap<Arc<str>, ServingStatus>>;

/// Whether `name` is one the crate answers for (`""`, `database/..`, `component/..`), which
/// the application cannot set.
pub(crate) fn is_reserved(name: &str) -> bool {
    name.is_empty()
        || name.starts_with(DATABASE_PREFIX)
        || name.starts_with(COMPONENT_PREFIX)
        || name.starts_with(GROUP_PREFIX)
}

/// The services at one instant: a view, what is known of the monitor (the names before the
/// first round, the rules, the debounce), and the application's statuses.
pub(crate) struct Services<'a> {
    pub(crate) view: &'a View,
    pub(crate) known: &'a Known,
    pub(crate) app: &'a BTreeMap<Arc<str>, ServingStatus>,
    /// `Some(now)` for a `Watch` stream, whose client acts on a single answer: a verdict that
    /// has failed for less than the debounce keeps `SERVING` there
    /// ([`passes_debounced`]). `None` for `Check` and `List`,
    /// which are polled, and answer the verdict as it is.
    pub(crate) debounced_at: Option<Instant>,
}

impl Services<'_> {
    /// What `name` answers, or `None` for a name no service has. Once the drain has started,
    /// every service answers `NotServing`.
    pub(crate) fn status(&self, name: &str) -> Option<ServingStatus> {
        let status = self.undrained(name)?;
        Some(if self.view.draining {
            ServingStatus::NotServing
        } else {
            status
        })
    }

    /// Every service and its status, sorted by name.
    pub(crate) fn all(&self) -> BTreeMap<String, ServingStatus> {
        let databases = self
            .known
            .databases
            .iter()
            .map(|name| &**name)
            .chain(self.view.readiness.databases.iter().map(|db| &*db.name))
            .map(|name| format!("{DATABASE_PREFIX}{name}"));
        let components = self
            .known
            .components
            .iter()
            .map(|name| &**name)
            .chain(self.view.health.components.iter().map(|c| &*c.name))
            .map(|name| format!("{COMPONENT_PREFIX}{name}"));
        let groups = self
            .known
            .groups
            .iter()
            .map(|name| format!("{GROUP_PREFIX}{name}"));
        let apps = self.app.keys().map(|name| name.to_string());
        std::iter::once(String::new())
            .chain(databases)
            .chain(components)
            .chain(groups)
            .chain(apps)
            .filter_map(|name| Some((self.status(&name)?, name)))
            .map(|(status, name)| (name, status))
            .collect()
    }

    fn undrained(&self, name: &str) -> Option<ServingStatus> {
        if name.is_empty() {
            let answer = self.view.answer(Probe::Ready);
            let passing = self.passes(
                answer.passing,
                answer.condition,
                self.view.readiness.streaks.verdict,
            );
            return Some(ServingStatus::of_judged(
                answer.condition,
                passing,
                self.view.monitor_running,
            ));
        }
        if let Some(database) = name.strip_prefix(DATABASE_PREFIX) {
            return self.database(database);
        }
        if let Some(component) = name.strip_prefix(COMPONENT_PREFIX) {
            return self.component(component);
        }
        if let Some(group) = name.strip_prefix(GROUP_PREFIX) {
            return self.group(group);
        }
        self.app.get(name).copied()
    }

    /// A database's readiness outcome under the fail direction (a stale verdict fails).
    fn database(&self, name: &str) -> Option<ServingStatus> {
        let readiness = &self.view.readiness;
        let outcome = readiness.databases.iter().find(|db| &*db.name == name);
        let configured = || self.known.databases.iter().any(|known| &**known == name);
        let fail_direction = self.known.rules.fail_direction;
        match (outcome, self.view.answer(Probe::Ready).condition) {
            (None, _) if !configured() => None,
            (_, Condition::Stale) => Some(ServingStatus::NotServing),
            (Some(outcome), _) => Some(ServingStatus::from_passing(self.passes(
                outcome.status.passes_readiness(fail_direction),
                Condition::Verdict,
                Streaks::of(&readiness.streaks.databases, name),
            ))),
            (None, _) => Some(self.no_verdict()),
        }
    }

    /// A component's status after hysteresis, from the last health round (a stale verdict
    /// fails).
    fn component(&self, name: &str) -> Option<ServingStatus> {
        let report = self
            .view
            .health
            .components
            .iter()
            .find(|c| &*c.name == name);
        let registered = || self.known.components.iter().any(|known| &**known == name);
        match (report, self.view.answer(Probe::Health).condition) {
            (None, _) if !registered() => None,
            (_, Condition::Stale) => Some(ServingStatus::NotServing),
            (Some(report), _) => Some(ServingStatus::of_component(report.status)),
            (None, _) => Some(self.no_verdict()),
        }
    }

    /// A health group, as every reader of a group answers it ([`GroupAnswer`]); `UNKNOWN`
    /// before the first round.
    fn group(&self, name: &str) -> Option<ServingStatus> {
        let group = self
            .view
            .readiness
            .groups
            .iter()
            .find(|g| &*g.name == name)?;
        let answer = GroupAnswer::of(self.view.answer(Probe::Ready).condition, group);
        Some(match answer.condition {
            Condition::Unavailable | Condition::Starting => self.no_verdict(),
            _ => ServingStatus::from_passing(self.passes(
                answer.passing,
                answer.condition,
                Streaks::of(&self.view.readiness.streaks.groups, name),
            )),
        })
    }

    /// Whether an answer that is `passing` as judged (by `condition`, failing as `failing`
    /// says) passes for this reader: as it is, or debounced for a `Watch`.
    fn passes(&self, passing: bool, condition: Condition, failing: Failing) -> bool {
        match self.debounced_at {
            Some(now) => passes_debounced(passing, condition, failing, self.known.debounce, now),
            None => passing,
        }
    }

    /// A known service without an outcome yet: unknown before the first round, failing when
    /// no monitor runs.
    fn no_verdict(&self) -> ServingStatus {
        if self.view.monitor_running {
            ServingStatus::Unknown
        } else {
            ServingStatus::NotServing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_serve_unless_unhealthy() {
        for (component, expected) in [
            (ComponentStatus::Healthy, ServingStatus::Serving),
            (ComponentStatus::Degraded, ServingStatus::Serving),
            (ComponentStatus::Unhealthy, ServingStatus::NotServing),
            (ComponentStatus::Unknown, ServingStatus::Unknown),
        ] {
            assert_eq!(
                ServingStatus::of_component(component),
                expected,
                "{component}"
            );
        }
    }
}
