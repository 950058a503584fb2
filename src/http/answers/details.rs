//! What each audience sees: the short form keeps statuses, categories and configured names,
//! and nothing a driver wrote, no target, no figures, no timings.

use http::StatusCode;

use crate::check::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};
use crate::component::ComponentSpec;
use crate::config::HealthConfig;
use crate::http::Respond;
use crate::http::request::{BodyMode, Freshness};
use crate::monitor::testing::{monitor, rounds};
use crate::probe::Probe;
use crate::test_helpers::{FakeCheck, FakeComponent, normalize, read};
use crate::verdict::Audience;

/// A check that fails the way a driver does: its message names the host, the user and the
/// database, and it reports a target.
#[derive(Debug)]
struct Chatty;

const DRIVER_TEXT: &str =
    "password authentication failed for user \"app_user\" at db.internal.example:5432/orders";

impl DatabaseCheck for Chatty {
    fn vendor(&self) -> &'static str {
        "fake"
    }

    fn check(&self) -> CheckFuture {
        Box::pin(async { Err(CheckError::new(CheckErrorKind::Auth, DRIVER_TEXT)) })
    }

    fn target(&self) -> Option<String> {
        Some("db.internal.example:5432/orders".to_owned())
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        Some(PoolStats::new(10, 3, 1))
    }
}

async fn body(
    handle: &crate::monitor::HealthHandle,
    probe: Probe,
    audience: Audience,
) -> (StatusCode, String) {
    let response = handle
        .probe_response(
            probe,
            BodyMode::Full,
            Freshness::Published,
            audience,
            crate::http::request::Form::Json,
        )
        .await;
    let (status, _, body) = read(response).await;
    (status, body)
}

fn chatty() -> HealthConfig {
    HealthConfig::new()
        .database("default", Chatty)
        .database("replica", Chatty)
        .optional_database("replica")
        .component(ComponentSpec::new(
            "cache",
            FakeComponent::new(FakeCheck::Refused),
        ))
}

#[tokio::test]
async fn the_short_form_carries_no_driver_text_target_figures_or_timings() {
    let handle = monitor(chatty());
    rounds(&handle).await;
    for probe in [Probe::Health, Probe::Ready, Probe::Pool] {
        let (status, full) = body(&handle, probe, Audience::Full).await;
        let (short_status, short) = body(&handle, probe, Audience::Minimal).await;
        assert_eq!(
            status, short_status,
            "{probe}: the answer does not depend on the audience"
        );
        assert!(full.contains("app_user"), "{probe}: {full}");
        for secret in [
            "app_user",
            "db.internal.example",
            "orders",
            "Connection refused",
            "elapsed_ms",
            "max_size",
            "in_use",
            "target",
        ] {
            assert!(!short.contains(secret), "{probe} shows {secret:?}: {short}");
        }
        // Configured names and categories stay at every level.
        assert!(short.contains(r#""error_kind":"auth""#), "{probe}: {short}");
    }
    let (_, health) = body(&handle, Probe::Health, Audience::Minimal).await;
    assert_eq!(
        normalize(&health),
        r#"{"causes":[{"kind":"database","name":"default","text":"database default is not_ready (auth)"},{"kind":"component","name":"cache","text":"non-critical component cache is degraded"},{"kind":"database","name":"replica","text":"optional database replica is not_ready (auth)"}],"checks":{"database":"unhealthy"},"components":{"cache":{"check":"failed","consecutive_failures":1,"consecutive_successes":0,"critical":false,"detail":null,"error":null,"error_kind":"refused","gates_readiness":false,"reason":"1 failed check in a row, failures_before_trouble is 1","since":"T","status":"degraded"}},"details":{"database":{"detail":null,"error":null,"error_kind":"auth","name":"default","status":"not_ready"},"database_replica":{"critical":false,"detail":null,"error":null,"error_kind":"auth","status":"not_ready"}},"reason":"database default is not_ready (auth)","self_healing":true,"started":true,"status":"unhealthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#
    );
    let (_, pool) = body(&handle, Probe::Pool, Audience::Minimal).await;
    assert_eq!(
        normalize(&pool),
        r#"{"error":"auth","pool_info":{"alias":"default","check":"not_ready","detail":null,"error":"auth","error_kind":"auth","is_usable":false,"saturated":false,"status":"error","vendor":"fake"},"status":"error","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#
    );
}

#[tokio::test]
async fn a_hold_names_its_reason_only_where_details_are_shown() {
    let handle = monitor(HealthConfig::new().database("default", FakeCheck::Ready));
    rounds(&handle).await;
    handle.hold("db migration by alice");
    for probe in [Probe::Ready, Probe::Health] {
        let (_, full) = body(&handle, probe, Audience::Full).await;
        let (_, short) = body(&handle, probe, Audience::Minimal).await;
        assert!(
            full.contains("held by the operator: db migration by alice"),
            "{probe}: {full}"
        );
        assert!(short.contains("held by the operator"), "{probe}: {short}");
        assert!(!short.contains("alice"), "{probe}: {short}");
    }
}

/// A database and a component whose checks pass with a target of their own and details.
fn reporting() -> HealthConfig {
    HealthConfig::new()
        .database("default", FakeCheck::Reports)
        .component(ComponentSpec::new(
            "cache",
            FakeComponent::new(FakeCheck::Reports),
        ))
}

/// What [`FakeCheck::Reports`] reports, as bodies show it: its connection string redacted.
fn reported() -> serde_json::Value {
    serde_json::json!({
        "latency_ms": 1.5,
        "server_version": "16.4",
        "via": "postgres://app:***@pooler/app",
    })
}

#[tokio::test]
async fn what_a_passing_check_reports_shows_where_targets_do_and_nowhere_else() {
    let handle = monitor(reporting());
    rounds(&handle).await;
    let (_, full) = body(&handle, Probe::Health, Audience::Full).await;
    assert!(!full.contains("hunter2"), "{full}");
    let full: serde_json::Value = serde_json::from_str(&full).unwrap();
    for entry in [&full["details"]["database"], &full["components"]["cache"]] {
        assert_eq!(entry["target"], "reached.internal:5432", "{full}");
        assert_eq!(entry["details"], reported(), "{full}");
    }

    let (_, short) = body(&handle, Probe::Health, Audience::Minimal).await;
    // The version as a JSON string: a timestamp such as `20:15:16.463Z` holds `16.4` too.
    for secret in [
        "reached.internal",
        "\"16.4\"",
        "server_version",
        "pooler",
        "target",
    ] {
        assert!(!short.contains(secret), "shows {secret:?}: {short}");
    }
    let short: serde_json::Value = serde_json::from_str(&short).unwrap();
    for entry in [&short["details"]["database"], &short["components"]["cache"]] {
        assert_eq!(entry.get("details"), None, "{short}");
        assert!(entry["status"].is_string(), "{short}");
    }

    // Readiness lists each database when it fails (a hold, here): the reports with them.
    handle.hold("maintenance");
    let (_, full) = body(&handle, Probe::Ready, Audience::Full).await;
    let full: serde_json::Value = serde_json::from_str(&full).unwrap();
    let default = &full["details"]["database_default"];
    assert_eq!(default["details"], reported(), "{full}");
    assert_eq!(default["target"], "reached.internal:5432", "{full}");
    let (_, short) = body(&handle, Probe::Ready, Audience::Minimal).await;
    assert!(!short.contains("server_version"), "{short}");
    assert!(!short.contains("reached.internal"), "{short}");
}

#[tokio::test]
async fn a_failed_check_shows_its_own_target_and_no_details() {
    let cache = FakeComponent::new(FakeCheck::Reports);
    let handle = monitor(
        HealthConfig::new()
            .database("default", FakeCheck::Ready)
            .component(ComponentSpec::new("cache", Targeted(cache.clone()))),
    );
    rounds(&handle).await;
    let (_, passed) = body(&handle, Probe::Health, Audience::Full).await;
    let passed: serde_json::Value = serde_json::from_str(&passed).unwrap();
    assert_eq!(
        passed["components"]["cache"]["target"],
        "reached.internal:5432"
    );
    assert_eq!(passed["components"]["cache"]["details"], reported());
    cache.set(FakeCheck::Refused);
    rounds(&handle).await;
    let (_, failed) = body(&handle, Probe::Health, Audience::Full).await;
    let failed: serde_json::Value = serde_json::from_str(&failed).unwrap();
    let entry = &failed["components"]["cache"];
    assert_eq!(entry["check"], "failed", "{failed}");
    assert_eq!(
        entry["target"], "redis://:***@cache.internal.example:6379",
        "{failed}"
    );
    assert_eq!(entry.get("details"), None, "{failed}");
}

/// A component that names its target (with a password, which the monitor redacts), and
/// answers as its [`FakeComponent`] does.
#[derive(Clone, Debug)]
struct Targeted(FakeComponent);

impl crate::component::Component for Targeted {
    fn check(&self) -> CheckFuture {
        crate::component::Component::check(&self.0)
    }

    fn target(&self) -> Option<String> {
        Some("redis://:hunter2@cache.internal.example:6379".to_owned())
    }
}
