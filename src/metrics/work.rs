//! The series of the monitor's work: when each verdict was computed and whether it is stale,
//! the rounds, the checks' failures, the transitions and the cache bypasses. The families
//! that read them are in `families.rs`.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::series::{Labels, unix_seconds};
use super::snapshot::Snapshot;
use crate::probe::Probe;

/// Each verdict's name, when it was computed, and whether it is stale.
fn verdicts(snapshot: &Snapshot) -> [(&'static str, Option<SystemTime>, bool); 3] {
    let view = &snapshot.view;
    [
        (
            "health",
            view.health.checked_at,
            view.is_stale(Probe::Health),
        ),
        (
            "readiness",
            view.readiness.checked_at,
            view.is_stale(Probe::Ready),
        ),
        ("pool", view.pool.checked_at, view.is_stale(Probe::Pool)),
    ]
}

/// Absent for a verdict not computed yet.
pub(super) fn verdict_timestamp(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, f64)) {
    for (verdict, checked_at, _) in verdicts(snapshot) {
        if let Some(checked_at) = checked_at {
            series(&[("verdict", verdict)], unix_seconds(checked_at));
        }
    }
}

pub(super) fn verdict_stale(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    for (verdict, _, stale) in verdicts(snapshot) {
        series(&[("verdict", verdict)], stale);
    }
}

pub(super) fn round_duration(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, f64)) {
    for (round, took) in [
        ("readiness", snapshot.readiness_round),
        ("health", snapshot.health_round),
    ] {
        series(&[("round", round)], took.as_secs_f64());
    }
}

pub(super) fn rounds(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    for (round, source, count) in [
        ("readiness", "computed", snapshot.readiness_rounds),
        ("health", "computed", snapshot.health_rounds),
        ("health", "shared", snapshot.shared_rounds),
    ] {
        series(&[("round", round), ("source", source)], count);
    }
}

pub(super) fn round_panics(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    for (round, count) in [
        ("readiness", snapshot.readiness_round_panics),
        ("health", snapshot.health_round_panics),
    ] {
        series(&[("round", round)], count);
    }
}

pub(super) fn shared_cache_errors(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    series(&[], snapshot.shared_cache_errors);
}

/// Summed by name and category: a database and a component may share a name.
pub(super) fn check_failures(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    let mut failures = BTreeMap::new();
    for (check, kind, count) in &snapshot.check_failures {
        *failures.entry((&**check, kind.as_str())).or_insert(0) += count;
    }
    for ((check, kind), count) in failures {
        series(&[("check", check), ("kind", kind)], count);
    }
}

pub(super) fn check_flaps(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    for (check, flaps) in &snapshot.check_flaps {
        series(&[("check", check)], u64::from(*flaps));
    }
}

pub(super) fn transitions(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    series(&[("question", "health")], snapshot.health_transitions);
    series(&[("question", "readiness")], snapshot.readiness_transitions);
}

pub(super) fn nocache_computations(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    series(&[], snapshot.fresh_rounds);
}
