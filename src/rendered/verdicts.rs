//! Rendering verdicts into JSON responses, once per round.
//!
//! Each verdict is rendered in every variant a probe may need (published, bypassed, draining,
//! stale), so that answering never encodes JSON. Key names follow the Python system this crate
//! replaces, so existing dashboards keep working; keys are only ever added.

use std::time::{Duration, SystemTime};

use http::StatusCode;
use serde_json::{Map, Value, json};

use super::Rendered;
use crate::Status;
use crate::component::UnknownComponents;
use crate::verdict::{
    ComponentReport, DatabaseOutcome, HealthVerdict, PoolVerdict, ReadinessVerdict,
};

/// Every variant of one verdict's response.
#[derive(Clone, Debug)]
pub(crate) struct RenderedVerdict {
    /// Served from the published verdict (`"_cache": {"hit": true}`).
    pub(crate) published: Rendered,
    /// Served to `?nocache=true` (`"_cache": {"hit": "bypassed"}`).
    pub(crate) bypassed: Rendered,
    /// Served while the server drains.
    pub(crate) draining: Rendered,
    /// Served when the verdict is older than its staleness bound.
    pub(crate) stale: Rendered,
}

const DRAINING_REASON: &str =
    "the server is draining: it finishes in-flight requests and takes no new traffic";

pub(crate) fn render_readiness(
    verdict: &ReadinessVerdict,
    stale_after: Duration,
) -> RenderedVerdict {
    let mut checks = Map::new();
    let mut details = Map::new();
    for outcome in &verdict.databases {
        let key = format!("database_{}", outcome.name);
        checks.insert(key.clone(), outcome.status.as_str().into());
        details.insert(key, database_detail(outcome));
    }
    for report in &verdict.components {
        let key = format!("component_{}", report.name);
        let check = match report.status {
            crate::component::ComponentStatus::Unknown => "unknown",
            _ if report.counts_as_trouble(UnknownComponents::Ignored) => "not_ready",
            _ => "ready",
        };
        checks.insert(key.clone(), check.into());
        details.insert(key, component_detail(report));
    }
    let status = if verdict.ready { "ready" } else { "not_ready" };
    // Every database ready: the short answer kubelets poll all day (the JSON the Python system
    // gave). Otherwise, and in every 503, the diagnosis: per-database details, when, and why.
    let all_clear = verdict.reason.is_none()
        && verdict.held.is_none()
        && verdict.databases.iter().all(DatabaseOutcome::is_ready)
        && verdict
            .components
            .iter()
            .all(|report| report.status == crate::component::ComponentStatus::Healthy);
    let body = |status: &str, reason: Option<&str>| {
        let mut body = json!({ "status": status, "checks": checks });
        if !all_clear || reason.is_some() {
            body["details"] = Value::Object(details.clone());
            body["timestamp"] = timestamp(verdict.checked_at);
        }
        if let Some(reason) = reason {
            body["reason"] = reason.into();
        }
        body
    };
    let code = if verdict.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let held = verdict
        .held
        .as_ref()
        .map(|reason| format!("held by the operator: {reason}"));
    let published = Rendered::json(
        code,
        to_vec(&body(status, held.as_deref().or(verdict.reason))),
    );
    let stale_reason = stale_reason("readiness", stale_after);
    RenderedVerdict {
        bypassed: published.clone(),
        published,
        draining: Rendered::json(
            StatusCode::SERVICE_UNAVAILABLE,
            to_vec(&body("draining", Some(DRAINING_REASON))),
        ),
        stale: Rendered::json(
            StatusCode::SERVICE_UNAVAILABLE,
            to_vec(&body("not_ready", Some(&stale_reason))),
        ),
    }
}

pub(crate) fn render_health(verdict: &HealthVerdict, stale_after: Duration) -> RenderedVerdict {
    let database = match &verdict.database {
        Some(outcome) if outcome.is_ready() => Status::Healthy,
        _ => Status::Unhealthy,
    };
    let mut details = Map::new();
    if let Some(outcome) = &verdict.database {
        let mut detail = database_detail(outcome);
        detail["name"] = (*outcome.name).into();
        if let Some(target) = &outcome.target {
            detail["target"] = (**target).into();
        }
        details.insert("database".into(), detail);
    }
    // The other databases, beside the default one's `database` (kept as the Python system
    // named it): `database_<name>`, with whether each is critical.
    for outcome in &verdict.databases {
        let mut detail = database_detail(outcome);
        detail["critical"] = outcome.critical.into();
        if let Some(target) = &outcome.target {
            detail["target"] = (**target).into();
        }
        details.insert(format!("database_{}", outcome.name), detail);
    }
    // A saturated pool's figures, beside its database: why `degraded`.
    for (name, stats) in &verdict.saturated_pools {
        let key = match &verdict.database {
            Some(default) if default.name == *name => "database".to_owned(),
            _ => format!("database_{name}"),
        };
        if let Some(Value::Object(detail)) = details.get_mut(&key) {
            detail.insert(
                "pool".into(),
                json!({
                    "saturated": true,
                    "max_size": stats.max_size,
                    "connections": stats.connections,
                    "idle_connections": stats.idle_connections,
                    "in_use": stats.in_use(),
                    "pending_gets": stats.pending_gets,
                    "gets_timed_out": stats.gets_timed_out,
                }),
            );
        }
    }
    // `null` with no component registered: the body the Python system gave.
    let components = if verdict.components.is_empty() {
        Value::Null
    } else {
        Value::Object(
            verdict
                .components
                .iter()
                .map(|report| ((*report.name).to_owned(), component_detail(report)))
                .collect(),
        )
    };
    let body = |status: &str, reason: Option<&str>| {
        json!({
            "status": status,
            "checks": { "database": database.as_str() },
            "details": details,
            "timestamp": timestamp(verdict.checked_at),
            "self_healing": verdict.self_healing,
            "components": components,
            "reason": reason,
        })
    };
    let stale_reason = stale_reason("health", stale_after);
    with_cache_variants(
        verdict.status.http_status(),
        &body(verdict.status.as_str(), verdict.reason.as_deref()),
        &body("draining", Some(DRAINING_REASON)),
        &body(Status::Unavailable.as_str(), Some(&stale_reason)),
    )
}

pub(crate) fn render_pool(verdict: &PoolVerdict, stale_after: Duration) -> RenderedVerdict {
    let error = verdict
        .outcome
        .as_ref()
        .and_then(|outcome| outcome.error.as_ref().map(ToString::to_string))
        .or_else(|| {
            verdict.outcome.as_ref().and_then(|outcome| {
                (!outcome.is_ready()).then(|| format!("the check {}", outcome.status))
            })
        });
    let mut info = Map::new();
    info.insert("alias".into(), verdict.alias.as_deref().into());
    info.insert("vendor".into(), verdict.vendor.into());
    info.insert("is_usable".into(), verdict.is_usable().into());
    info.insert("status".into(), verdict.status.as_str().into());
    info.insert("error".into(), error.as_deref().or(verdict.reason).into());
    if let Some(outcome) = &verdict.outcome {
        info.insert("check".into(), outcome.status.as_str().into());
        info.insert("elapsed_ms".into(), millis(outcome.elapsed));
        info.insert("detail".into(), outcome.detail.as_deref().into());
    }
    if let Some(stats) = &verdict.stats {
        info.insert("max_size".into(), stats.max_size.into());
        info.insert("connections".into(), stats.connections.into());
        info.insert("idle_connections".into(), stats.idle_connections.into());
        info.insert("in_use".into(), stats.in_use().into());
        info.insert("pending_gets".into(), stats.pending_gets.into());
        info.insert("gets_timed_out".into(), stats.gets_timed_out.into());
        info.insert(
            "connections_created".into(),
            stats.connections_created.into(),
        );
        info.insert(
            "connections_closed_broken".into(),
            stats.connections_closed_broken.into(),
        );
        info.insert("saturated".into(), stats.is_saturated().into());
        info.insert(
            "reserved_connections_opened".into(),
            stats.reserved_connections_opened.into(),
        );
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
    let stale_reason = stale_reason("pool", stale_after);
    with_cache_variants(
        verdict.http_status(),
        &body(verdict.status.as_str(), error.as_deref()),
        &body("draining", Some(DRAINING_REASON)),
        &body(Status::Unavailable.as_str(), Some(&stale_reason)),
    )
}

/// Renders a body that ends with `"_cache": {"hit": ..., "age_ms": <age>}`, the age spliced
/// in per request.
fn with_cache_variants(
    code: StatusCode,
    published: &Value,
    draining: &Value,
    stale: &Value,
) -> RenderedVerdict {
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    RenderedVerdict {
        published: cached(code, published, "true"),
        bypassed: cached(code, published, "\"bypassed\""),
        draining: cached(unavailable, draining, "true"),
        stale: cached(unavailable, stale, "true"),
    }
}

fn cached(code: StatusCode, body: &Value, hit: &str) -> Rendered {
    let mut head = to_vec(body);
    // The age changes with every request, so the body is stored as two halves around it and
    // the digits are written per request (`ProbeBody`): no JSON encoding and no allocation on
    // the probe path (BENCHMARKS.md: two allocations per answer, the header map's). `to_vec`
    // of an object always ends with `}`; reopen it to append `_cache` last.
    let closing = head.pop();
    debug_assert_eq!(closing, Some(b'}'));
    if head.len() > 1 {
        head.push(b',');
    }
    head.extend_from_slice(br#""_cache":{"hit":"#);
    head.extend_from_slice(hit.as_bytes());
    head.extend_from_slice(br#","age_ms":"#);
    Rendered::json_with_age(code, head, b"}}")
}

fn database_detail(outcome: &DatabaseOutcome) -> Value {
    let mut detail = json!({
        "status": outcome.status.as_str(),
        "elapsed_ms": millis(outcome.elapsed),
        "error": outcome.error.as_ref().map(|error| error.message()),
        "error_kind": outcome.error.as_ref().map(|error| error.kind().as_str()),
        "detail": outcome.detail,
    });
    if let Some(running_for) = outcome.running_for {
        detail["running_for_ms"] = millis(running_for);
    }
    detail
}

/// One component as `/health` shows it (and readiness, for one that gates it).
fn component_detail(report: &ComponentReport) -> Value {
    let outcome = report.outcome.as_ref();
    let mut detail = json!({
        "status": report.status.as_str(),
        "critical": report.critical,
        "gates_readiness": report.gates_readiness,
        "check": report.last_check(),
        "elapsed_ms": outcome.map(|outcome| millis(outcome.elapsed)),
        "reason": report.reason,
        "error": outcome.and_then(|outcome| outcome.error.as_ref().map(|error| error.message())),
        "error_kind": outcome.and_then(|outcome| outcome.error.as_ref().map(|error| error.kind().as_str())),
        "detail": outcome.and_then(|outcome| outcome.detail.as_deref()),
        "since": timestamp(Some(report.since)),
        "consecutive_failures": report.consecutive_failures,
        "consecutive_successes": report.consecutive_successes,
    });
    if let Some(running_for) = outcome.and_then(|outcome| outcome.running_for) {
        detail["running_for_ms"] = millis(running_for);
    }
    if let Some(target) = &report.target {
        detail["target"] = target.as_str().into();
    }
    detail
}

fn stale_reason(what: &str, stale_after: Duration) -> String {
    format!(
        "the {what} verdict is stale: no round has completed for more than {}; the health monitor is stuck or stopped",
        humantime::format_duration(stale_after)
    )
}

fn millis(duration: Duration) -> Value {
    (duration.as_micros() as f64 / 1000.0).into()
}

fn timestamp(at: Option<SystemTime>) -> Value {
    let at = at.unwrap_or_else(SystemTime::now);
    humantime::format_rfc3339_millis(at).to_string().into()
}

fn to_vec(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a serde_json::Value always serializes")
}
