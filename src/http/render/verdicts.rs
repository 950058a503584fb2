//! Rendering verdicts into JSON responses, once per round, for each audience.
//!
//! Each verdict is rendered in every variant a probe may need (published, bypassed, draining,
//! stale) and for each [`Audience`], so that answering never encodes JSON. What an audience
//! may see is decided here, field by field, and nowhere else: [`Audience::Minimal`] gets
//! statuses, error categories and the names the operator configured; [`Audience::Full`] also
//! gets the redacted error text, targets, what passing checks reported (`details`), pool
//! figures and timings. Key names never change, so that existing dashboards keep working;
//! keys are only ever added.

use std::time::{Duration, SystemTime};

use http::StatusCode;
use serde_json::{Map, Value, json};

use super::Rendered;
use super::kube::KubeAnswers;
use super::variants::{Hit, Variants, to_vec, with_cache};
use crate::check::{CheckErrorKind, PoolStats};
use crate::component::{ComponentStatus, UnknownComponents};
use crate::verdict::Status;
use crate::verdict::{
    Audience, Cause, CheckOutcome, ComponentReport, GroupVerdict, HealthVerdict, PoolVerdict,
    ReadinessRules, ReadinessVerdict, Return, TimeoutDetail,
};
use crate::view::{Checked, group_checks};

/// Every variant of one verdict's response, for every audience, and its
/// [Kubernetes-style answers](super::kube); readiness's also has its groups'.
#[derive(Clone, Debug)]
pub(crate) struct RenderedVerdict {
    audiences: [Variants; Audience::ALL.len()],
    kube: KubeAnswers,
    groups: Box<[RenderedGroup]>,
}

/// A health group's answers, rendered with the readiness verdict it is part of.
#[derive(Clone, Debug)]
pub(crate) struct RenderedGroup {
    pub(crate) name: std::sync::Arc<str>,
    audiences: [GroupVariants; Audience::ALL.len()],
    kube: KubeAnswers,
}

/// Every variant of a group's answer, for one audience: readiness's judgement picks one.
#[derive(Clone, Debug)]
pub(crate) struct GroupVariants {
    /// The group's own answer.
    pub(crate) published: Rendered,
    /// While an operator holds the process out: 503.
    pub(crate) held: Rendered,
    /// While the server drains: 503.
    pub(crate) draining: Rendered,
    /// Once readiness's verdict is stale: 503.
    pub(crate) stale: Rendered,
}

impl RenderedGroup {
    /// The variants `audience` is served.
    pub(crate) fn for_audience(&self, audience: Audience) -> &GroupVariants {
        &self.audiences[audience.index()]
    }

    /// The group's checks as `?verbose` and `?exclude` answer them.
    pub(crate) fn kube(&self) -> &KubeAnswers {
        &self.kube
    }
}

impl RenderedVerdict {
    fn new(kube: KubeAnswers, render: impl Fn(Audience) -> Variants) -> Self {
        Self {
            audiences: Audience::ALL.map(render),
            kube,
            groups: Box::default(),
        }
    }

    /// The answers of the health group `name`, if readiness's verdict has it.
    pub(crate) fn group(&self, name: &str) -> Option<&RenderedGroup> {
        self.groups.iter().find(|group| *group.name == *name)
    }

    /// The variants `audience` is served.
    pub(crate) fn for_audience(&self, audience: Audience) -> &Variants {
        &self.audiences[audience.index()]
    }

    /// The verdict's checks as `?verbose`, `?exclude` and a check's own path answer them.
    pub(crate) fn kube(&self) -> &KubeAnswers {
        &self.kube
    }
}

const DRAINING_REASON: &str =
    "the server is draining: it finishes in-flight requests and takes no new traffic";

/// Why a variant answers as it does, when the verdict alone does not say: listed before the
/// verdict's own causes.
struct Circumstance {
    kind: &'static str,
    text: String,
}

impl Circumstance {
    fn draining() -> Self {
        Self {
            kind: "draining",
            text: DRAINING_REASON.to_owned(),
        }
    }

    fn stale(what: &str, stale_after: Duration) -> Self {
        Self {
            kind: "stale",
            text: format!(
                "the {what} verdict is stale: no round has completed for more than {}; the health monitor is stuck or stopped",
                humantime::format_duration(stale_after)
            ),
        }
    }
}

pub(crate) fn render_readiness(
    verdict: &ReadinessVerdict,
    rules: ReadinessRules,
    stale_after: Duration,
) -> RenderedVerdict {
    let checks_pass = verdict.databases.iter().all(CheckOutcome::passed)
        && verdict
            .components
            .iter()
            .all(|report| report.status == ComponentStatus::Healthy);
    let code = if verdict.passes() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let status = verdict.status();
    // Every database ready: the short answer kubelets poll all day (the JSON Baldur gave).
    // Otherwise, and in every 503, the diagnosis: per-database details, when, and why.
    let all_clear = checks_pass
        && verdict.reason.is_none()
        && verdict.held.is_none()
        && verdict.fleet_guard.is_none();
    let stale = Circumstance::stale("readiness", stale_after);
    let returning = returning(verdict.returned);
    // The fleet guard's count, the same for every audience: names and numbers only.
    let fleet_guard = verdict.fleet_guard.as_ref().map(|guard| {
        let reason = guard.to_string();
        let body = json!({
            "kept": guard.kept,
            "cause": &*guard.cause,
            "members": guard.members,
            "failing": guard.failing,
            "in_rotation": guard.in_rotation,
            "wanted": guard.wanted,
            "fraction": guard.fraction,
        });
        (reason, body)
    });
    let kube = KubeAnswers::of_verdict(
        "readyz",
        verdict.checks(rules),
        verdict.reason,
        stale.text.clone(),
    );
    let groups = verdict
        .groups
        .iter()
        .map(|group| render_group(group, verdict, &stale))
        .collect();
    let mut rendered = RenderedVerdict::new(kube, |audience| {
        let mut checks = Map::new();
        let mut details = Map::new();
        for outcome in &verdict.databases {
            let key = format!("database_{}", outcome.name);
            checks.insert(key.clone(), outcome.status.database_word().into());
            details.insert(key, database_detail(outcome, audience));
        }
        for report in &verdict.components {
            let key = format!("component_{}", report.name);
            let check = match report.status {
                ComponentStatus::Unknown => "unknown",
                _ if report.counts_as_trouble(UnknownComponents::Ignored) => "not_ready",
                _ => "ready",
            };
            checks.insert(key.clone(), check.into());
            details.insert(key, component_detail(report, audience));
        }
        let held = verdict.held.as_ref().map(|reason| {
            Cause::Held {
                reason: reason.clone(),
            }
            .describe_for(audience)
        });
        // Passing checks at the minimal level say nothing `checks` does not (their status
        // between nulls): a hold, a drain or a stale verdict over them adds its reason only.
        let shows_details = !checks_pass || audience == Audience::Full;
        let body = |status: &str, reason: Option<&str>| {
            let mut body = json!({ "status": status, "checks": checks });
            if !all_clear || reason.is_some() {
                if shows_details {
                    body["details"] = Value::Object(details.clone());
                }
                body["timestamp"] = timestamp(verdict.checked_at);
            }
            if let Some(reason) = reason {
                body["reason"] = reason.into();
            }
            body
        };
        // The delay drawn and when it ends (an instant, not the time left: rendered once per
        // publication, never per request).
        let mut returning_body = body("not_ready", Some(Return::REASON));
        returning_body["returning"] = returning.clone();
        let guard_reason = fleet_guard.as_ref().map(|(reason, _)| reason.as_str());
        let mut published = body(status, held.as_deref().or(verdict.reason).or(guard_reason));
        // Only in the verdict's own answer: a drain or a stale verdict is not the guard's.
        if let Some((_, guard)) = &fleet_guard {
            published["fleet_guard"] = guard.clone();
        }
        let published = Rendered::json(code, to_vec(&published));
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        // Kept in rotation by the fleet guard: `x-envoy-degraded`, as a degraded `/health`.
        let kept = if verdict.is_kept_by_fleet_guard() {
            Status::Degraded
        } else {
            Status::Healthy
        };
        Variants {
            bypassed: published.clone(),
            published,
            draining: Rendered::json(
                unavailable,
                to_vec(&body("draining", Some(DRAINING_REASON))),
            ),
            stale: Rendered::json(unavailable, to_vec(&body("not_ready", Some(&stale.text)))),
            returning: Some(Rendered::json(unavailable, to_vec(&returning_body))),
        }
        .of_status(kept)
    });
    rendered.groups = groups;
    rendered
}

/// Renders a health verdict; `own_id` is this process's, when it shares its verdicts
/// through Redis: `_cache` then names who computed every verdict, this process included.
pub(crate) fn render_health(
    verdict: &HealthVerdict,
    stale_after: Duration,
    own_id: Option<&str>,
) -> RenderedVerdict {
    let database = match &verdict.database {
        Some(outcome) if outcome.passed() => Status::Healthy,
        _ => Status::Unhealthy,
    };
    let stale = Circumstance::stale("health", stale_after);
    let no_verdict = verdict.causes.iter().find_map(|cause| match cause {
        Cause::NoVerdict { .. } | Cause::Panicked { .. } => Some(cause.describe()),
        _ => None,
    });
    let kube = KubeAnswers::of_verdict(
        "healthz",
        verdict.checks(rules_unused()),
        no_verdict.as_deref(),
        stale.text.clone(),
    );
    RenderedVerdict::new(kube, |audience| {
        let mut details = Map::new();
        if let Some(outcome) = &verdict.database {
            let mut detail = database_detail(outcome, audience);
            detail["name"] = (*outcome.name).into();
            details.insert("database".into(), detail);
        }
        // The other databases, beside the default one's `database` (kept as Baldur named
        // it): `database_<name>`, with whether each is critical.
        for outcome in &verdict.databases {
            let mut detail = database_detail(outcome, audience);
            detail["critical"] = outcome.critical.into();
            details.insert(format!("database_{}", outcome.name), detail);
        }
        // A saturated pool, beside its database: why `degraded`.
        for (name, stats) in &verdict.saturated_pools {
            let key = match &verdict.database {
                Some(default) if default.name == *name => "database".to_owned(),
                _ => format!("database_{name}"),
            };
            if let Some(Value::Object(detail)) = details.get_mut(&key) {
                detail.insert("pool".into(), saturated_pool(stats, audience));
            }
        }
        // `null` with no component registered: the body Baldur gave.
        let components = if verdict.components.is_empty() {
            Value::Null
        } else {
            Value::Object(
                verdict
                    .components
                    .iter()
                    .map(|report| {
                        (
                            (*report.name).to_owned(),
                            component_detail(report, audience),
                        )
                    })
                    .collect(),
            )
        };
        let body = |status: &str, circumstance: Option<&Circumstance>| {
            let causes = causes(circumstance, &verdict.causes, audience);
            let reason = causes.first().map(|cause| cause["text"].clone());
            json!({
                "status": status,
                "checks": { "database": database.as_str() },
                "details": details,
                "timestamp": timestamp(verdict.checked_at),
                "self_healing": verdict.self_healing,
                "started": verdict.started,
                "components": components,
                "reason": reason,
                "causes": causes,
            })
        };
        let full = audience == Audience::Full;
        let hit = match (verdict.computed_by.as_deref(), own_id) {
            (None, None) => Hit::Own(None),
            (None, Some(own)) => Hit::Own(Some(full.then_some(own))),
            (Some(by), _) => Hit::Shared(full.then_some(by)),
        };
        with_cache(
            verdict.status.http_status(),
            hit,
            &body(verdict.status.as_str(), None),
            &body("draining", Some(&Circumstance::draining())),
            &body(Status::Unavailable.as_str(), Some(&stale)),
        )
        .of_status(verdict.status)
    })
}

pub(crate) fn render_pool(verdict: &PoolVerdict, stale_after: Duration) -> RenderedVerdict {
    let stale = Circumstance::stale("pool", stale_after);
    let kube = KubeAnswers::of_verdict(
        "poolz",
        verdict.checks(rules_unused()),
        verdict.reason,
        stale.text.clone(),
    );
    RenderedVerdict::new(kube, |audience| {
        let failed = verdict.outcome.as_ref().filter(|outcome| !outcome.passed());
        // The error text names hosts, users and databases: its category stands in for it
        // where details are not shown.
        let error = failed.map(|outcome| match (&outcome.error, audience) {
            (Some(error), Audience::Full) => error.to_string(),
            (Some(error), Audience::Minimal) => error.kind().as_str().to_owned(),
            (None, Audience::Full) => format!("the check {}", outcome.status.database_word()),
            (None, Audience::Minimal) => outcome.error_kind().map_or_else(
                || outcome.status.database_word().to_owned(),
                |kind| kind.as_str().to_owned(),
            ),
        });
        let mut info = Map::new();
        info.insert("alias".into(), verdict.alias.as_deref().into());
        info.insert("vendor".into(), verdict.vendor.into());
        info.insert("is_usable".into(), verdict.is_usable().into());
        info.insert("status".into(), verdict.status.as_str().into());
        info.insert("error".into(), error.as_deref().or(verdict.reason).into());
        if let Some(outcome) = &verdict.outcome {
            info.insert("check".into(), outcome.status.database_word().into());
            info.insert(
                "error_kind".into(),
                outcome.error_kind().map(CheckErrorKind::as_str).into(),
            );
            info.insert("detail".into(), detail_text(outcome).into());
            if audience == Audience::Full {
                info.insert("elapsed_ms".into(), millis(outcome.elapsed));
            }
        }
        if let Some(stats) = &verdict.stats {
            info.insert("saturated".into(), stats.is_saturated().into());
            if audience == Audience::Full {
                info.extend(pool_figures(stats));
            }
        }
        let body = |status: &str, error: Option<&str>| {
            let mut body = json!({
                "status": status,
                "pool_info": info,
                "timestamp": timestamp(verdict.checked_at),
            });
            if let Some(error) = error {
                body["error"] = error.into();
            }
            body
        };
        with_cache(
            verdict.http_status(),
            Hit::Own(None),
            &body(verdict.status.as_str(), error.as_deref()),
            &body("draining", Some(DRAINING_REASON)),
            &body(Status::Unavailable.as_str(), Some(&stale.text)),
        )
        .of_status(verdict.status)
    })
}

/// A health group's answers: its own status, or 503 while held, draining or stale, as
/// readiness's judgement says.
fn render_group(
    group: &GroupVerdict,
    readiness: &ReadinessVerdict,
    stale: &Circumstance,
) -> RenderedGroup {
    let checks: Map<String, Value> = group
        .members
        .iter()
        .map(|member| ((*member.check).to_owned(), member.state.into()))
        .collect();
    let failing = group.members.iter().find(|member| !member.passed);
    let held = readiness.held.as_ref().map(|reason| Cause::Held {
        reason: reason.clone(),
    });
    let audiences = Audience::ALL.map(|audience| {
        let body = |status: &str, reason: Option<String>| {
            let mut body = json!({ "status": status, "group": &*group.name, "checks": checks });
            if let Some(reason) = reason {
                body["reason"] = reason.into();
            }
            to_vec(&body)
        };
        let reason = failing.map(|member| match (&member.reason, audience) {
            (Some(reason), Audience::Full) => {
                format!("{} is {}: {reason}", member.check, member.state)
            }
            _ => format!("{} is {}", member.check, member.state),
        });
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        GroupVariants {
            published: Rendered::json(
                group.status.http_status(),
                body(group.status.as_str(), reason),
            ),
            held: Rendered::json(
                unavailable,
                body(
                    "held",
                    held.as_ref().map(|held| held.describe_for(audience)),
                ),
            ),
            draining: Rendered::json(unavailable, body("draining", Some(DRAINING_REASON.into()))),
            stale: Rendered::json(unavailable, body("unavailable", Some(stale.text.clone()))),
        }
    });
    let checks = group_checks(group, readiness);
    let no_verdict =
        (group.status == Status::Unavailable).then_some("no round has checked the group yet");
    RenderedGroup {
        name: group.name.clone(),
        audiences,
        kube: KubeAnswers::of_verdict(
            format!("group/{}", group.name),
            checks,
            no_verdict,
            stale.text.clone(),
        ),
    }
}

/// `causes` in the body: the circumstance of the variant first, then the verdict's own.
fn causes(circumstance: Option<&Circumstance>, causes: &[Cause], audience: Audience) -> Vec<Value> {
    circumstance
        .map(|circumstance| json!({ "kind": circumstance.kind, "text": circumstance.text }))
        .into_iter()
        .chain(causes.iter().map(|cause| {
            let mut value = json!({ "kind": cause.kind(), "text": cause.describe_for(audience) });
            if let Some(name) = cause.name() {
                value["name"] = name.into();
            }
            value
        }))
        .collect()
}

fn database_detail(outcome: &CheckOutcome, audience: Audience) -> Value {
    let mut detail = json!({
        "status": outcome.status.database_word(),
        "error": shown(audience, || outcome.error.as_ref().map(|error| error.message())),
        "error_kind": outcome.error_kind().map(CheckErrorKind::as_str),
        "detail": detail_text(outcome),
    });
    if audience == Audience::Full {
        detail["elapsed_ms"] = millis(outcome.elapsed);
        if let Some(running_for) = outcome.running_for {
            detail["running_for_ms"] = millis(running_for);
        }
        if let Some(target) = &outcome.target {
            detail["target"] = (**target).into();
        }
        if let Some(details) = &outcome.details {
            detail["details"] = Value::Object((**details).clone());
        }
    }
    detail
}

/// One component as `/health` shows it (and readiness, for one that gates it).
fn component_detail(report: &ComponentReport, audience: Audience) -> Value {
    let outcome = report.outcome.as_ref();
    let error = outcome.and_then(|outcome| outcome.error.as_ref());
    let mut detail = json!({
        "status": report.status.as_str(),
        "critical": report.critical,
        "gates_readiness": report.gates_readiness,
        "check": report.last_check(),
        "reason": report.reason,
        "error": shown(audience, || error.map(|error| error.message())),
        "error_kind": outcome.and_then(CheckOutcome::error_kind).map(CheckErrorKind::as_str),
        "detail": outcome.and_then(detail_text),
        "since": timestamp(Some(report.since)),
        "consecutive_failures": report.consecutive_failures,
        "consecutive_successes": report.consecutive_successes,
    });
    if audience == Audience::Full {
        detail["elapsed_ms"] = outcome.map(|outcome| millis(outcome.elapsed)).into();
        if let Some(running_for) = outcome.and_then(|outcome| outcome.running_for) {
            detail["running_for_ms"] = millis(running_for);
        }
        if let Some(target) = report.shown_target() {
            detail["target"] = target.into();
        }
        if let Some(details) = outcome.and_then(|outcome| outcome.details.as_deref()) {
            detail["details"] = Value::Object(details.clone());
        }
    }
    detail
}

/// `detail.pool` of a saturated pool in `/health`.
fn saturated_pool(stats: &PoolStats, audience: Audience) -> Value {
    let mut pool = Map::new();
    pool.insert("saturated".into(), true.into());
    if audience == Audience::Full {
        pool.extend(pool_figures(stats).into_iter().filter(|(key, _)| {
            !matches!(
                key.as_str(),
                "connections_created" | "connections_closed_broken" | "reserved_connections_opened"
            )
        }));
    }
    Value::Object(pool)
}

/// A pool's figures: what `/health/pool` shows where details are shown.
fn pool_figures(stats: &PoolStats) -> Map<String, Value> {
    let mut figures = Map::new();
    figures.insert("max_size".into(), stats.max_size.into());
    figures.insert("connections".into(), stats.connections.into());
    figures.insert("idle_connections".into(), stats.idle_connections.into());
    figures.insert("in_use".into(), stats.in_use().into());
    figures.insert("pending_gets".into(), stats.pending_gets.into());
    figures.insert("gets_timed_out".into(), stats.gets_timed_out.into());
    figures.insert(
        "connections_created".into(),
        stats.connections_created.into(),
    );
    figures.insert(
        "connections_closed_broken".into(),
        stats.connections_closed_broken.into(),
    );
    figures.insert(
        "reserved_connections_opened".into(),
        stats.reserved_connections_opened.into(),
    );
    figures
}

/// `value` for [`Audience::Full`], `null` for the others: for text that can name hosts,
/// users and databases.
fn shown<'a>(audience: Audience, value: impl FnOnce() -> Option<&'a str>) -> Value {
    match audience {
        Audience::Full => value().into(),
        Audience::Minimal => Value::Null,
    }
}

/// `detail` in a body: the monitor's own note, shown at every level (it names nothing).
fn detail_text(outcome: &CheckOutcome) -> Option<&'static str> {
    outcome.detail.map(TimeoutDetail::describe)
}

fn millis(duration: Duration) -> Value {
    (duration.as_micros() as f64 / 1000.0).into()
}

/// `at` in RFC 3339, to the millisecond (now for `None`). An instant past the year 9999 (a
/// clock set that far) is written as the last one RFC 3339 can hold, where the formatter
/// would panic.
/// A return as readiness's body shows it while it waits: the delay drawn (`jitter_ms`) and
/// when it ends (`at`, RFC 3339).
fn returning(returned: Return) -> Value {
    // The return's instant is on the verdicts' clock (`crate::clock`), not the standard one.
    let now = crate::clock::now();
    let left = returned
        .at
        .map_or(Duration::ZERO, |at| at.saturating_duration_since(now));
    json!({
        "jitter_ms": u64::try_from(returned.jitter.as_millis()).unwrap_or(u64::MAX),
        "at": timestamp(SystemTime::now().checked_add(left)),
    })
}

fn timestamp(at: Option<SystemTime>) -> Value {
    let at = at.unwrap_or_else(SystemTime::now);
    // 9999-12-31T23:59:59.999Z.
    let last = SystemTime::UNIX_EPOCH + Duration::from_millis(253_402_300_799_999);
    humantime::format_rfc3339_millis(at.min(last))
        .to_string()
        .into()
}

/// The rules health's and pool's checks do not read (only readiness's do).
fn rules_unused() -> ReadinessRules {
    ReadinessRules::default()
}
