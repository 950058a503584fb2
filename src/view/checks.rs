//! Every check of a verdict as one structured list: its name, whether it is fine, in
//! trouble without failing the probe, or failing it, and why. Decided once per verdict, where
//! it is published; each reader renders the list its own way (Kubernetes' `?verbose` lines, a
//! check's own path).

use std::sync::Arc;

use crate::verdict::{
    Audience, Cause, CheckOutcome, ComponentReport, GroupVerdict, HealthVerdict, PoolVerdict,
    ReadinessRules, ReadinessVerdict,
};

/// How one check stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Fine.
    Ok,
    /// In trouble without failing the probe (an optional database, a non-critical
    /// component, a dependency the fleet guard keeps the process in rotation despite).
    Degraded,
    /// Fails the probe.
    Failed,
}

/// One check of a verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Check {
    /// `database/<name>`, `component/<name>`, `database`, `hold`, `fleet-guard`, `ping`,
    /// `started`, `monitor`, `shutdown`.
    pub(crate) name: Box<str>,
    pub(crate) mark: Mark,
    /// Why it is not [`Mark::Ok`], for the audience that sees details.
    pub(crate) reason: Box<str>,
    /// What the other audience reads instead; `None`: the reason is withheld.
    pub(crate) minimal: Option<Box<str>>,
}

impl Check {
    /// A check whose reason names what only the audience that sees details may read
    /// (targets, error text).
    pub(crate) fn withheld(
        name: impl Into<Box<str>>,
        mark: Mark,
        reason: impl Into<Box<str>>,
    ) -> Self {
        Self {
            name: name.into(),
            mark,
            reason: reason.into(),
            minimal: None,
        }
    }

    /// A check whose reason names nothing (the drain, the monitor, the start): shown to
    /// every audience.
    pub(crate) fn public(name: impl Into<Box<str>>, mark: Mark, reason: &str) -> Self {
        Self {
            minimal: Some(reason.into()),
            ..Self::withheld(name, mark, reason)
        }
    }

    pub(crate) fn ok(name: impl Into<Box<str>>) -> Self {
        Self::public(name, Mark::Ok, "")
    }

    /// The reason `audience` reads; empty when it is withheld from it (or there is none).
    pub(crate) fn reason_for(&self, audience: Audience) -> &str {
        match (audience, &self.minimal) {
            (Audience::Full, _) => &self.reason,
            (Audience::Minimal, Some(minimal)) => minimal,
            (Audience::Minimal, None) => "",
        }
    }
}

/// A verdict's checks, as decided where it is published.
pub(crate) trait Checked {
    /// Every check of this verdict, in the order they are listed.
    fn checks(&self, rules: ReadinessRules) -> Vec<Check>;
}

impl Checked for ReadinessVerdict {
    fn checks(&self, rules: ReadinessRules) -> Vec<Check> {
        readiness_checks(self, rules)
    }
}

impl Checked for HealthVerdict {
    fn checks(&self, _: ReadinessRules) -> Vec<Check> {
        health_checks(self)
    }
}

impl Checked for PoolVerdict {
    fn checks(&self, _: ReadinessRules) -> Vec<Check> {
        pool_checks(self)
    }
}

/// A health group's checks: its members, then readiness's hold (a hold fails every group).
pub(crate) fn group_checks(group: &GroupVerdict, readiness: &ReadinessVerdict) -> Vec<Check> {
    group
        .members
        .iter()
        .map(|member| {
            let mark = match (member.passed, member.optional) {
                (true, _) => Mark::Ok,
                (false, true) => Mark::Degraded,
                (false, false) => Mark::Failed,
            };
            let reason = member
                .reason
                .as_deref()
                .map_or_else(|| member.state.to_owned(), str::to_owned);
            Check::withheld(&*member.check, mark, reason)
        })
        .chain([match &readiness.held {
            Some(reason) => held_check(reason, Mark::Failed),
            None => Check::ok("hold"),
        }])
        .collect()
}

/// Readiness's checks: every database and every component that gates it, then the hold,
/// then the fleet guard while it keeps the process in rotation (its failing checks are then
/// shared dependencies, and only degrade it).
fn readiness_checks(verdict: &ReadinessVerdict, rules: ReadinessRules) -> Vec<Check> {
    let kept = verdict.is_kept_by_fleet_guard();
    let failed = if kept { Mark::Degraded } else { Mark::Failed };
    let databases = verdict.databases.iter().map(|outcome| {
        let mark = if rules.database_fails(outcome) {
            failed
        } else if outcome.passed() {
            Mark::Ok
        } else {
            Mark::Degraded
        };
        database_check(outcome, mark)
    });
    let components = verdict.components.iter().map(|report| {
        let mark = if rules.component_fails(report) {
            failed
        } else {
            Mark::Ok
        };
        component_check(report, mark)
    });
    let hold = match &verdict.held {
        Some(reason) => held_check(reason, Mark::Failed),
        None => Check::ok("hold"),
    };
    let guard = verdict
        .fleet_guard
        .as_ref()
        .filter(|_| kept)
        .map(|guard| Check::public(FLEET_GUARD, Mark::Degraded, &guard.to_string()));
    databases
        .chain(components)
        .chain([hold])
        .chain(guard)
        .collect()
}

/// The fleet guard's line: names and numbers only, shown to every audience.
const FLEET_GUARD: &str = "fleet-guard";

/// Health's checks: every database and every component, marked by the verdict's causes (a
/// cause that makes health `unhealthy` fails its check, the others degrade it), then the
/// hold, which `/health` shows without failing.
fn health_checks(verdict: &HealthVerdict) -> Vec<Check> {
    let caused = |kind: &str, name: &str| {
        verdict
            .causes
            .iter()
            .find(|cause| cause.kind() == kind && cause.name() == Some(name))
    };
    let mut checks = Vec::new();
    if verdict.causes.contains(&Cause::NoDatabase) {
        checks.push(Check::public(
            "database",
            Mark::Failed,
            &Cause::NoDatabase.describe(),
        ));
    }
    for outcome in verdict.database.iter().chain(&verdict.databases) {
        let mark = match caused("database", &outcome.name) {
            Some(Cause::Database {
                optional: false, ..
            }) => Mark::Failed,
            Some(_) => Mark::Degraded,
            // A critical database besides the default one fails readiness, not health.
            None if !outcome.passed() => Mark::Degraded,
            None if caused("pool_saturated", &outcome.name).is_some() => Mark::Degraded,
            None => Mark::Ok,
        };
        let mut check = database_check(outcome, mark);
        if let Some(saturated) = caused("pool_saturated", &outcome.name) {
            check.reason = saturated.describe().into();
        }
        checks.push(check);
    }
    for report in &verdict.components {
        let mark = match caused("component", &report.name) {
            Some(Cause::Component { critical: true, .. }) => Mark::Failed,
            Some(_) => Mark::Degraded,
            None => Mark::Ok,
        };
        checks.push(component_check(report, mark));
    }
    let held = verdict.causes.iter().find_map(|cause| match cause {
        Cause::Held { reason } => Some(reason),
        _ => None,
    });
    checks.push(match held {
        Some(reason) => held_check(reason, Mark::Degraded),
        None => Check::ok("hold"),
    });
    checks.extend(verdict.causes.iter().find_map(|cause| match cause {
        Cause::FleetGuard { guard } => Some(Check::public(
            FLEET_GUARD,
            Mark::Degraded,
            &guard.to_string(),
        )),
        _ => None,
    }));
    checks
}

/// `hold` while an operator holds the process out: the operator's words for the audience
/// that sees details, that it is held for the others.
fn held_check(reason: &Arc<str>, mark: Mark) -> Check {
    let held = Cause::Held {
        reason: reason.clone(),
    };
    Check {
        minimal: Some(held.describe_for(Audience::Minimal).into()),
        ..Check::withheld("hold", mark, held.describe_for(Audience::Full))
    }
}

/// The pool's check: the default database, failing when it is not usable.
fn pool_checks(verdict: &PoolVerdict) -> Vec<Check> {
    let Some(outcome) = &verdict.outcome else {
        return Vec::new();
    };
    let mark = if !verdict.is_usable() {
        Mark::Failed
    } else if verdict.is_saturated() || !outcome.passed() {
        Mark::Degraded
    } else {
        Mark::Ok
    };
    vec![database_check(outcome, mark)]
}

/// `database/<name>`, with what its check found.
fn database_check(outcome: &CheckOutcome, mark: Mark) -> Check {
    let detail = outcome.detail.map(crate::verdict::TimeoutDetail::describe);
    let reason = match (&outcome.error, detail) {
        (Some(error), _) => error.message().to_owned(),
        (None, Some(detail)) => format!("{}: {detail}", outcome.status.as_str()),
        (None, None) => outcome.status.as_str().to_owned(),
    };
    Check::withheld(format!("database/{}", outcome.name), mark, reason)
}

/// `component/<name>`, with its state and reason.
fn component_check(report: &ComponentReport, mark: Mark) -> Check {
    let reason = if report.reason.is_empty() {
        report.status.as_str().to_owned()
    } else {
        format!("{}: {}", report.status.as_str(), report.reason)
    };
    Check::withheld(format!("component/{}", report.name), mark, reason)
}
