//! One `tracing` event per transition of readiness and of the health status, never one per
//! round.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::counters::Counters;
use crate::check::CheckErrorKind;
use crate::verdict::{Cause, CheckOutcome, HealthVerdict, ReadinessVerdict};

/// Logs readiness's answer changing as `current` replaces `previous`, both judged at `now`: a
/// verdict that passes while its return after an outage is still ahead answers `not_ready`,
/// so no line says `ready` before readiness does (the end of the return's delay is logged
/// when it comes, by [`log_returned`]).
pub(super) fn log_readiness_transition(
    counters: &Counters,
    previous: &ReadinessVerdict,
    current: &ReadinessVerdict,
    now: Instant,
) {
    let answer = |verdict: &ReadinessVerdict| {
        let in_rotation = verdict.passes() && !verdict.returned.is_pending(now);
        (in_rotation, verdict.is_kept_by_fleet_guard())
    };
    let (databases, components) = checked(current);
    if current.returned != previous.returned && current.returned.is_pending(now) {
        // Still out, on its way back: what it waits for, once (no transition yet).
        tracing::info!(
            question = "readiness",
            jitter = ?current.returned.jitter,
            databases,
            components,
            "readiness passes its checks again; it answers ready once the return's random delay has run out"
        );
    }
    if answer(previous) == answer(current) && previous.checked_at.is_some() {
        return;
    }
    counters
        .readiness_transitions
        .fetch_add(1, Ordering::Relaxed);
    let kept = current.is_kept_by_fleet_guard();
    if let Some(guard) = current.fleet_guard.as_ref().filter(|_| kept) {
        let cause = ReadinessCause::of(current);
        tracing::warn!(
            question = "readiness",
            cause = %cause.subject,
            kind = cause.kind,
            error = cause.error.as_deref(),
            target = cause.target,
            members = guard.members,
            in_rotation = guard.in_rotation,
            databases,
            components,
            "readiness is now degraded: {guard}"
        );
        return;
    }
    if current.passes() {
        tracing::info!(
            question = "readiness",
            databases,
            components,
            "readiness is now ready"
        );
        return;
    }
    // Fields that would be empty are left out (`None` records nothing).
    let cause = ReadinessCause::of(current);
    tracing::warn!(
        question = "readiness",
        cause = %cause.subject,
        kind = cause.kind,
        error = cause.error.as_deref(),
        target = cause.target,
        held = current.held.as_deref(),
        databases,
        components,
        "readiness is now not_ready"
    );
}

/// Logs readiness passing again as the delay of its return after an outage runs out: the
/// instant `/health/ready` answers 200 again, which no publication marks.
pub(super) fn log_returned(counters: &Counters, current: &ReadinessVerdict) {
    counters
        .readiness_transitions
        .fetch_add(1, Ordering::Relaxed);
    let (databases, components) = checked(current);
    tracing::info!(
        question = "readiness",
        after = "the return's random delay ran out",
        jitter = ?current.returned.jitter,
        databases,
        components,
        "readiness is now ready"
    );
}

/// The databases and components of a verdict, for its transition's line.
fn checked(verdict: &ReadinessVerdict) -> (Option<String>, Option<String>) {
    let databases = listed(
        verdict
            .databases
            .iter()
            .map(|outcome| format!("{}={}", outcome.name, outcome.status.database_word())),
    );
    let components = listed(
        verdict
            .components
            .iter()
            .map(|report| format!("{}={}", report.name, report.status)),
    );
    (databases, components)
}

/// Names joined by commas; `None` for none.
fn listed(names: impl Iterator<Item = String>) -> Option<String> {
    let names: Vec<String> = names.collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// What readiness failed on, for the transition line: what, the category of its error, the
/// error itself (redacted, as every error is) and what it connects to.
#[derive(Debug, PartialEq, Eq)]
struct ReadinessCause<'a> {
    subject: String,
    kind: Option<&'static str>,
    error: Option<String>,
    target: Option<&'a str>,
}

impl<'a> ReadinessCause<'a> {
    /// The headline cause of a verdict that is not ready: an operator's hold, else the
    /// first critical database that did not pass, else the first component that gates
    /// readiness and is in trouble, else the verdict's own reason (no round, a round that
    /// panicked).
    fn of(verdict: &'a ReadinessVerdict) -> Self {
        if let Some(reason) = &verdict.held {
            return Self {
                subject: format!("held by the operator: {reason}"),
                kind: None,
                error: None,
                target: None,
            };
        }
        let database = verdict
            .databases
            .iter()
            .find(|outcome| outcome.critical && !outcome.passed());
        if let Some(outcome) = database {
            return Self::outcome(
                format!(
                    "database {} is {}",
                    outcome.name,
                    outcome.status.database_word()
                ),
                outcome,
            );
        }
        let component = verdict
            .components
            .iter()
            .find(|report| report.status.is_in_trouble());
        if let Some(report) = component {
            let subject = format!("component {} is {}", report.name, report.status);
            return match &report.outcome {
                Some(outcome) => Self {
                    target: report.shown_target(),
                    ..Self::outcome(subject, outcome)
                },
                None => Self {
                    subject,
                    kind: None,
                    error: None,
                    target: report.shown_target(),
                },
            };
        }
        Self {
            subject: verdict.reason.unwrap_or("not ready").to_owned(),
            kind: None,
            error: None,
            target: None,
        }
    }

    fn outcome(subject: String, outcome: &'a CheckOutcome) -> Self {
        Self {
            subject,
            kind: outcome.error_kind().map(CheckErrorKind::as_str),
            error: outcome.error_or_detail(),
            target: outcome.target.as_deref(),
        }
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
    if current.status == crate::verdict::Status::Healthy {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::check::CheckError;
    use crate::test_helpers::logged;
    use crate::verdict::{CheckStatus, ReadinessRules};

    fn readiness(outcomes: Vec<CheckOutcome>, held: Option<&str>) -> ReadinessVerdict {
        ReadinessVerdict::from_outcomes(
            outcomes,
            Vec::new(),
            ReadinessRules::default(),
            SystemTime::now(),
            held.map(Arc::from),
        )
    }

    fn outcome(name: &str, error: Option<CheckError>) -> CheckOutcome {
        CheckOutcome {
            name: name.into(),
            status: if error.is_some() {
                CheckStatus::Failed
            } else {
                CheckStatus::Passed
            },
            elapsed: Duration::from_millis(2),
            running_for: None,
            error,
            detail: None,
            critical: true,
            target: Some("db.internal:5432/app".into()),
            details: None,
        }
    }

    #[test]
    fn a_readiness_transition_names_its_cause() {
        let counters = Counters::default();
        let ready = readiness(vec![outcome("default", None)], None);
        let refused = CheckError::new(
            CheckErrorKind::Refused,
            "connecting to postgres://app:hunter2@db.internal/app: Connection refused",
        );
        let down = readiness(vec![outcome("default", Some(refused))], None);
        let line = logged(|| log_readiness_transition(&counters, &ready, &down, Instant::now()));
        assert!(line.contains("readiness is now not_ready"), "{line}");
        assert!(
            line.contains("cause=database default is not_ready"),
            "{line}"
        );
        assert!(line.contains("kind=\"refused\""), "{line}");
        assert!(line.contains("Connection refused"), "{line}");
        assert!(line.contains("target=\"db.internal:5432/app\""), "{line}");
        assert!(!line.contains("hunter2"), "{line}");
        // Empty fields are left out.
        assert!(!line.contains("held="), "{line}");
        assert!(!line.contains("components="), "{line}");

        let held = readiness(vec![outcome("default", None)], Some("maintenance"));
        let line = logged(|| log_readiness_transition(&counters, &ready, &held, Instant::now()));
        assert!(
            line.contains("cause=held by the operator: maintenance"),
            "{line}"
        );
        assert!(!line.contains("kind="), "{line}");
        assert!(!line.contains("error="), "{line}");

        let line = logged(|| log_readiness_transition(&counters, &down, &ready, Instant::now()));
        assert!(line.contains("readiness is now ready"), "{line}");
        assert!(!line.contains("cause="), "{line}");
    }
}
