//! One `tracing` event per transition of readiness and of the health status, never one per
//! round.

use std::sync::atomic::Ordering;

use super::state::Counters;
use crate::verdict::{Cause, CheckOutcome, HealthVerdict, ReadinessVerdict};

pub(super) fn log_readiness_transition(
    counters: &Counters,
    previous: &ReadinessVerdict,
    current: &ReadinessVerdict,
) {
    if previous.ready == current.ready && previous.checked_at.is_some() {
        return;
    }
    counters
        .readiness_transitions
        .fetch_add(1, Ordering::Relaxed);
    let databases = current
        .databases
        .iter()
        .map(|outcome| format!("{}={}", outcome.name, outcome.status.database_word()))
        .collect::<Vec<_>>()
        .join(", ");
    let components = current
        .components
        .iter()
        .map(|report| format!("{}={}", report.name, report.status))
        .collect::<Vec<_>>()
        .join(", ");
    let held = current.held.as_deref().unwrap_or_default();
    if current.ready {
        tracing::info!(question = "readiness", %databases, %components, "readiness is now ready");
    } else {
        tracing::warn!(question = "readiness", %databases, %components, %held, "readiness is now not_ready");
    }
}

pub(super) fn log_health_transition(
    counters: &Counters,
    previous: &HealthVerdict,
    current: &HealthVerdict,
) {
    if previous.status == current.status {
        return;
    }
    counters.health_transitions.fetch_add(1, Ordering::Relaxed);
    let (from, to) = (previous.status, current.status);
    if current.status == crate::Status::Healthy {
        tracing::info!(question = "health", %from, %to, "health status changed");
        return;
    }
    let reason = current.reason().unwrap_or_default();
    // What the headline is about, and what went wrong there (the redacted error).
    let headline = current.causes.first();
    let subject = headline.and_then(Cause::name).unwrap_or_default();
    let error = match headline {
        Some(Cause::Database { name, .. }) => std::iter::once(current.database.as_ref())
            .flatten()
            .chain(&current.databases)
            .find(|outcome| outcome.name == *name)
            .and_then(CheckOutcome::error_or_detail),
        Some(Cause::Component { name, .. }) => current
            .components
            .iter()
            .find(|report| report.name == *name)
            .and_then(|report| report.outcome.as_ref())
            .and_then(CheckOutcome::error_or_detail),
        _ => None,
    }
    .unwrap_or_default();
    let causes = current.causes.len();
    tracing::warn!(question = "health", %from, %to, %reason, %subject, %error, causes, "health status changed");
}
