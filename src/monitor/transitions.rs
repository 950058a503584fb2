//! One `tracing` event per transition of readiness and of the health status, never one per
//! round.

use crate::verdict::{DatabaseOutcome, HealthVerdict, ReadinessVerdict};

pub(super) fn log_readiness_transition(previous: &ReadinessVerdict, current: &ReadinessVerdict) {
    if previous.ready == current.ready && previous.checked_at.is_some() {
        return;
    }
    let databases = current
        .databases
        .iter()
        .map(|outcome| format!("{}={}", outcome.name, outcome.status))
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
        tracing::info!(%databases, %components, "readiness is now ready");
    } else {
        tracing::warn!(%databases, %components, %held, "readiness is now not_ready");
    }
}

pub(super) fn log_health_transition(previous: &HealthVerdict, current: &HealthVerdict) {
    if previous.status == current.status {
        return;
    }
    let (from, to) = (previous.status, current.status);
    let reason = current.reason.as_deref().unwrap_or_default();
    if current.status == crate::Status::Healthy {
        tracing::info!(%from, %to, "health status changed");
        return;
    }
    if current.status == crate::Status::Degraded {
        tracing::warn!(%from, %to, %reason, "health status changed");
        return;
    }
    let reason = current
        .database
        .as_ref()
        .and_then(DatabaseOutcome::error_or_detail)
        .unwrap_or_else(|| reason.to_owned());
    tracing::warn!(%from, %to, %reason, "health status changed");
}
