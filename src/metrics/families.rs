//! The metric families, written from one [`Snapshot`]: every name, help text and label is
//! here, in the order of the table in the [module docs](super).

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::snapshot::Snapshot;
use super::states::{COMPONENT_STATUSES, CONDITIONS, DATABASE_STATUSES, STATUSES};
use crate::probe::Probe;
use crate::status::Status;
use crate::view::Condition;

/// Writes every family of `snapshot` to `encoder`.
pub(super) fn encode(snapshot: &Snapshot, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
    let view = &snapshot.view;
    let encoder = &mut encoder;

    gauges(
        encoder,
        "tower_health_probe_passing",
        "Whether the probe passes now (HTTP 200, gRPC SERVING)",
        view.answers()
            .iter()
            .map(|answer| ([("probe", answer.probe.as_str())], answer.passing)),
    )?;
    gauges(
        encoder,
        "tower_health_probe_condition",
        "What decides the probe's answer: 1 for the current condition",
        view.answers().iter().flat_map(|answer| {
            CONDITIONS.into_iter().map(|condition| {
                (
                    [
                        ("probe", answer.probe.as_str()),
                        ("condition", condition.as_str()),
                    ],
                    answer.condition == condition,
                )
            })
        }),
    )?;
    // The health verdict's status as served: `unavailable` once stale. A drain does not
    // change it (see tower_health_draining).
    let status = match view.answer(Probe::Health).condition {
        Condition::Stale => Status::Unavailable,
        Condition::Verdict
        | Condition::Draining
        | Condition::Unavailable
        | Condition::Held
        | Condition::Starting => view.health.status,
    };
    gauges(
        encoder,
        "tower_health_status",
        "The health status: 1 for the current one",
        STATUSES.map(|each| ([("status", each.as_str())], each == status)),
    )?;

    let databases = &view.readiness.databases;
    gauges(
        encoder,
        "tower_health_database_up",
        "Whether the database was ready in the last readiness round",
        databases.iter().map(|outcome| {
            let critical = if outcome.critical { "true" } else { "false" };
            (
                [("database", &*outcome.name), ("critical", critical)],
                outcome.is_ready(),
            )
        }),
    )?;
    gauges(
        encoder,
        "tower_health_database_check_status",
        "The database's check status in the last readiness round: 1 for the current one",
        databases.iter().flat_map(|outcome| {
            DATABASE_STATUSES.map(|each| {
                (
                    [("database", &*outcome.name), ("status", each.as_str())],
                    outcome.status == each,
                )
            })
        }),
    )?;
    gauges(
        encoder,
        "tower_health_component_status",
        "The component's status in the last health round: 1 for the current one",
        view.health.components.iter().flat_map(|report| {
            COMPONENT_STATUSES.map(|each| {
                (
                    [("component", &*report.name), ("status", each.as_str())],
                    report.status == each,
                )
            })
        }),
    )?;

    let verdicts = [
        ("health", view.health.checked_at, snapshot.stale.health),
        (
            "readiness",
            view.readiness.checked_at,
            snapshot.stale.readiness,
        ),
        ("pool", view.pool.checked_at, snapshot.stale.pool),
    ];
    family(
        encoder,
        "tower_health_verdict_timestamp",
        "When the verdict was computed (Unix time); its age is time() minus this",
        Some(&Unit::Seconds),
        MetricType::Gauge,
        |metric| {
            for (verdict, checked_at, _) in verdicts {
                if let Some(checked_at) = checked_at {
                    metric
                        .encode_family(&[("verdict", verdict)])?
                        .encode_gauge(&unix_seconds(checked_at))?;
                }
            }
            Ok(())
        },
    )?;
    gauges(
        encoder,
        "tower_health_verdict_stale",
        "Whether the verdict is older than its staleness bound (the monitor is stuck)",
        verdicts.map(|(verdict, _, stale)| ([("verdict", verdict)], stale)),
    )?;

    let rounds = [
        (
            "readiness",
            snapshot.readiness_round,
            snapshot.readiness_rounds,
        ),
        ("health", snapshot.health_round, snapshot.health_rounds),
    ];
    family(
        encoder,
        "tower_health_round_duration",
        "How long the last round's checks took",
        Some(&Unit::Seconds),
        MetricType::Gauge,
        |metric| {
            for (round, took, _) in rounds {
                metric
                    .encode_family(&[("round", round)])?
                    .encode_gauge(&took.as_secs_f64())?;
            }
            Ok(())
        },
    )?;
    counters(
        encoder,
        "tower_health_rounds",
        "Rounds completed",
        rounds.map(|(round, _, count)| ([("round", round)], count)),
    )?;
    // Summed by name and category: a database and a component may share a name.
    let mut failures = BTreeMap::new();
    for (check, kind, count) in &snapshot.check_failures {
        *failures.entry((&**check, kind.as_str())).or_insert(0) += count;
    }
    counters(
        encoder,
        "tower_health_check_failures",
        "Checks that finished with an error, by category (each check once, however many rounds waited for it)",
        failures
            .into_iter()
            .map(|((check, kind), count)| ([("check", check), ("kind", kind)], count)),
    )?;
    counters(
        encoder,
        "tower_health_transitions",
        "Transitions of readiness and of the health status (each one logged), the first verdict included",
        [
            ([("question", "health")], snapshot.health_transitions),
            ([("question", "readiness")], snapshot.readiness_transitions),
        ],
    )?;
    family(
        encoder,
        "tower_health_nocache_computations",
        "Fresh computations run for ?nocache=true (concurrent bypasses share one)",
        None,
        MetricType::Counter,
        |metric| metric.encode_counter::<NoLabelSet, _, u64>(&snapshot.fresh_rounds, None),
    )?;

    for (name, help, value) in [
        (
            "tower_health_draining",
            "Whether the drain has started",
            view.draining,
        ),
        (
            "tower_health_held",
            "Whether an operator's hold keeps readiness failing",
            view.held.is_some(),
        ),
        (
            "tower_health_started",
            "Whether the process has finished starting (the startup probe passes)",
            view.started,
        ),
        (
            "tower_health_monitor_running",
            "Whether the background monitor is running",
            view.monitor_running,
        ),
    ] {
        family(encoder, name, help, None, MetricType::Gauge, |metric| {
            metric.encode_gauge(&u32::from(value))
        })?;
    }
    Ok(())
}

/// One family: its descriptor, then what `series` writes.
fn family(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    metric_type: MetricType,
    series: impl FnOnce(&mut MetricEncoder<'_>) -> fmt::Result,
) -> fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, unit, metric_type)?;
    series(&mut metric)
}

/// A gauge family of 0/1 series.
fn gauges<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, bool)>,
) -> fmt::Result {
    family(encoder, name, help, None, MetricType::Gauge, |metric| {
        for (labels, value) in series {
            metric
                .encode_family(&labels)?
                .encode_gauge(&u32::from(value))?;
        }
        Ok(())
    })
}

/// A counter family.
fn counters<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, u64)>,
) -> fmt::Result {
    family(encoder, name, help, None, MetricType::Counter, |metric| {
        for (labels, count) in series {
            metric
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
        }
        Ok(())
    })
}

/// `at` in seconds since the Unix epoch (negative before it).
fn unix_seconds(at: SystemTime) -> f64 {
    match at.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => since.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}
