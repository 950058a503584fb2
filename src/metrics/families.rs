//! The metric families, written from one [`Snapshot`] in the order of the table in the
//! [module docs](super): what the view answers here, the monitor's work in `work.rs`.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::snapshot::Snapshot;
use super::states::{COMPONENT_STATUSES, CONDITIONS, DATABASE_STATUSES, STATUSES};
use super::work;
use super::write::{family, gauges};
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
                outcome.passed(),
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
                    [
                        ("database", &*outcome.name),
                        ("status", each.database_word()),
                    ],
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

    work::encode(snapshot, encoder)?;

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
