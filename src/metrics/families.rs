//! The metric families, written once: each one's name, help and kind, and how its series are
//! read from one [`Snapshot`]. Both exporters read this list (prometheus-client's encoder and
//! OpenTelemetry's instruments), in the order of the table in the [module docs](super); what
//! the view answers is here, the monitor's work in `work.rs`.

use super::series::Labels;
use super::snapshot::Snapshot;
use super::states::{COMPONENT_STATUSES, CONDITIONS, DATABASE_STATUSES, STATUSES};
use super::{drain, work};
use crate::probe::Probe;
use crate::verdict::Status;
use crate::view::Condition;
use crate::view::reading::GroupAnswer;

/// One metric family.
pub(super) struct Family {
    /// The name without its unit and without `_total`: prometheus-client adds both to the
    /// samples, as OpenMetrics asks, and so does an OpenTelemetry-to-Prometheus pipeline,
    /// from the instrument's unit and kind.
    pub(super) name: &'static str,
    pub(super) help: &'static str,
    pub(super) series: Series,
}

/// Reads a family's series from a snapshot: calls its second argument once per series.
pub(super) type Read<T> = fn(&Snapshot, &mut dyn FnMut(Labels<'_>, T));

/// A family's kind, and what reads its series.
#[derive(Copy, Clone)]
pub(super) enum Series {
    /// A gauge of 0/1 series: 1 for `true`.
    Flags(Read<bool>),
    /// A gauge in seconds (unit `seconds`, `s` to OpenTelemetry).
    Seconds(Read<f64>),
    /// A counter.
    Counts(Read<u64>),
    /// A gauge of whole numbers.
    Number(Read<u64>),
}

/// Every family, in the order of the table in the [module docs](super).
pub(super) const FAMILIES: [Family; 26] = [
    Family {
        name: "tower_health_probe_passing",
        help: "Whether the probe passes now (HTTP 200, gRPC SERVING)",
        series: Series::Flags(probe_passing),
    },
    Family {
        name: "tower_health_probe_condition",
        help: "What decides the probe's answer: 1 for the current condition",
        series: Series::Flags(probe_condition),
    },
    Family {
        name: "tower_health_status",
        help: "The health status: 1 for the current one",
        series: Series::Flags(status),
    },
    Family {
        name: "tower_health_database_up",
        help: "Whether the database was ready in the last readiness round",
        series: Series::Flags(database_up),
    },
    Family {
        name: "tower_health_database_check_status",
        help: "The database's check status in the last readiness round: 1 for the current one",
        series: Series::Flags(database_check_status),
    },
    Family {
        name: "tower_health_component_status",
        help: "The component's status in the last health round: 1 for the current one",
        series: Series::Flags(component_status),
    },
    Family {
        name: "tower_health_group_passing",
        help: "Whether the health group passes now (HTTP 200, gRPC SERVING)",
        series: Series::Flags(group_passing),
    },
    Family {
        name: "tower_health_verdict_timestamp",
        help: "When the verdict was computed (Unix time); its age is time() minus this",
        series: Series::Seconds(work::verdict_timestamp),
    },
    Family {
        name: "tower_health_verdict_stale",
        help: "Whether the verdict is older than its staleness bound (the monitor is stuck)",
        series: Series::Flags(work::verdict_stale),
    },
    Family {
        name: "tower_health_round_duration",
        help: "How long the last round's checks took",
        series: Series::Seconds(work::round_duration),
    },
    Family {
        name: "tower_health_rounds",
        help: "Rounds completed: their checks run here (computed), or the fleet's entry served (shared)",
        series: Series::Counts(work::rounds),
    },
    Family {
        name: "tower_health_round_panics",
        help: "Rounds that panicked: reported as failed, and the next round run",
        series: Series::Counts(work::round_panics),
    },
    Family {
        name: "tower_health_shared_cache_errors",
        help: "Health rounds in which Redis failed or the shared entry could not be served",
        series: Series::Counts(work::shared_cache_errors),
    },
    Family {
        name: "tower_health_check_failures",
        help: "Checks that finished with an error, by category (each check once, however many rounds waited for it)",
        series: Series::Counts(work::check_failures),
    },
    Family {
        name: "tower_health_check_flaps",
        help: "Times the check went from passing to failing or back over the last ten minutes (counted by the minute)",
        series: Series::Number(work::check_flaps),
    },
    Family {
        name: "tower_health_transitions",
        help: "Transitions of readiness and of the health status (each one logged), the first verdict included",
        series: Series::Counts(work::transitions),
    },
    Family {
        name: "tower_health_nocache_computations",
        help: "Fresh computations run for ?nocache=true (concurrent bypasses share one)",
        series: Series::Counts(work::nocache_computations),
    },
    Family {
        name: "tower_health_draining",
        help: "Whether the drain has started",
        series: Series::Flags(|snapshot, series| series(&[], snapshot.view.draining)),
    },
    Family {
        name: "tower_health_drain_phase",
        help: "The drain's phase: 1 for the current one",
        series: Series::Flags(drain::phase),
    },
    Family {
        name: "tower_health_drain_timestamp",
        help: "When the drain started, when its delay and close window end, when its timeout falls, when it ended (Unix time)",
        series: Series::Seconds(drain::times),
    },
    Family {
        name: "tower_health_in_flight",
        help: "Requests in flight, the long-lived connections included (what a drain waits for)",
        series: Series::Number(drain::in_flight),
    },
    Family {
        name: "tower_health_long_lived_open",
        help: "Long-lived connections open (WebSockets, event streams, gRPC streams), by the name they were registered with",
        series: Series::Number(drain::long_lived_open),
    },
    Family {
        name: "tower_health_held",
        help: "Whether an operator's hold keeps readiness failing",
        series: Series::Flags(|snapshot, series| series(&[], snapshot.view.held.is_some())),
    },
    Family {
        name: "tower_health_fleet_guard_kept",
        help: "Whether the fleet guard keeps this process in rotation (readiness passes, degraded, while a dependency the fleet shares fails)",
        series: Series::Flags(fleet_guard_kept),
    },
    Family {
        name: "tower_health_started",
        help: "Whether the process has finished starting (the startup probe passes)",
        series: Series::Flags(|snapshot, series| series(&[], snapshot.view.started)),
    },
    Family {
        name: "tower_health_monitor_running",
        help: "Whether the background monitor is running",
        series: Series::Flags(|snapshot, series| series(&[], snapshot.view.monitor_running)),
    },
];

fn probe_passing(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    for answer in snapshot.view.answers() {
        series(&[("probe", answer.probe.as_str())], answer.passing);
    }
}

fn probe_condition(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    for answer in snapshot.view.answers() {
        for condition in CONDITIONS {
            let labels = [
                ("probe", answer.probe.as_str()),
                ("condition", condition.as_str()),
            ];
            series(&labels, answer.condition == condition);
        }
    }
}

/// The health verdict's status as served: `unavailable` once stale. A drain does not change
/// it (see `tower_health_draining`).
fn status(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    let view = &snapshot.view;
    // The verdict's own staleness, not the answer's condition: a drain's comes first there,
    // and would hide a stale verdict behind its last status.
    let status = if snapshot.view.is_stale(Probe::Health) {
        Status::Unavailable
    } else {
        view.health.status
    };
    for each in STATUSES {
        series(&[("status", each.as_str())], each == status);
    }
}

fn database_up(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    for outcome in &snapshot.view.readiness.databases {
        let critical = if outcome.critical { "true" } else { "false" };
        let labels = [("database", &*outcome.name), ("critical", critical)];
        series(&labels, outcome.passed());
    }
}

fn database_check_status(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    for outcome in &snapshot.view.readiness.databases {
        for each in DATABASE_STATUSES {
            let labels = [
                ("database", &*outcome.name),
                ("status", each.database_word()),
            ];
            series(&labels, outcome.status == each);
        }
    }
}

/// A health group as its path answers it: its own verdict where readiness's is the
/// verdict's, failing while held, draining, stale or before the first round.
fn group_passing(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    let view = &snapshot.view;
    let readiness = view.answer(Probe::Ready).condition;
    for group in &view.readiness.groups {
        let passing = GroupAnswer::of(readiness, group).passing;
        series(&[("group", &*group.name)], passing);
    }
}

/// Kept in rotation on the fleet guard's word, as readiness's path answers: a drain, a hold
/// or a stale verdict takes the process out whatever the guard concluded.
fn fleet_guard_kept(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    let view = &snapshot.view;
    let judged = view.answer(Probe::Ready).condition == Condition::Verdict;
    series(&[], judged && view.readiness.is_kept_by_fleet_guard());
}

fn component_status(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    for report in &snapshot.view.health.components {
        for each in COMPONENT_STATUSES {
            let labels = [("component", &*report.name), ("status", each.as_str())];
            series(&labels, report.status == each);
        }
    }
}
