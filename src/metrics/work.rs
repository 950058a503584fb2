//! The families of the monitor's work: when each verdict was computed and whether it is
//! stale, the rounds, the checks' failures, the transitions and the cache bypasses.

use std::collections::BTreeMap;
use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::snapshot::Snapshot;
use super::write::{counters, family, gauges, unix_seconds};

/// Writes the families of the monitor's work, from verdict freshness to the bypasses.
pub(super) fn encode(snapshot: &Snapshot, encoder: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let view = &snapshot.view;
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

    family(
        encoder,
        "tower_health_round_duration",
        "How long the last round's checks took",
        Some(&Unit::Seconds),
        MetricType::Gauge,
        |metric| {
            for (round, took) in [
                ("readiness", snapshot.readiness_round),
                ("health", snapshot.health_round),
            ] {
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
        "Rounds completed: their checks run here (computed), or the fleet's entry served (shared)",
        [
            ("readiness", "computed", snapshot.readiness_rounds),
            ("health", "computed", snapshot.health_rounds),
            ("health", "shared", snapshot.shared_rounds),
        ]
        .map(|(round, source, count)| ([("round", round), ("source", source)], count)),
    )?;
    counters(
        encoder,
        "tower_health_round_panics",
        "Rounds that panicked: reported as failed, and the next round run",
        [
            ("readiness", snapshot.readiness_round_panics),
            ("health", snapshot.health_round_panics),
        ]
        .map(|(round, count)| ([("round", round)], count)),
    )?;
    family(
        encoder,
        "tower_health_shared_cache_errors",
        "Health rounds in which Redis failed or the shared entry could not be served",
        None,
        MetricType::Counter,
        |metric| metric.encode_counter::<NoLabelSet, _, u64>(&snapshot.shared_cache_errors, None),
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
    Ok(())
}
