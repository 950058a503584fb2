//! The manual hold and readiness subscriptions, with a fake database.

use std::time::Duration;

use http::StatusCode;

use super::tests::{get, monitor, rounds};
use crate::config::HealthConfig;
use crate::probe::Probe;
use crate::test_helpers::FakeCheck;

fn config() -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", FakeCheck::Ready)
        .unwrap()
}

const READY: &str = r#"{"checks":{"database_default":"ready"},"status":"ready"}"#;

#[tokio::test]
async fn a_hold_fails_readiness_at_once_and_a_release_restores_it() {
    let handle = monitor(config());
    rounds(&handle).await;
    let mut readiness = handle.subscribe_readiness();
    readiness.borrow_and_update();
    assert!(handle.hold("deploy freeze"));
    assert!(
        !handle.hold("deploy freeze"),
        "the same hold changes nothing"
    );
    assert_eq!(handle.held().as_deref(), Some("deploy freeze"));
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"checks":{"database_default":"ready"},"details":{"database_default":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"status":"ready"}},"reason":"held by the operator: deploy freeze","status":"not_ready","timestamp":"T"}"#.to_owned()
        )
    );
    assert!(readiness.has_changed().unwrap());
    assert!(!readiness.borrow_and_update().ready);
    // Liveness, health and startup are untouched.
    assert_eq!(get(&handle, Probe::Live).await.0, StatusCode::OK);
    assert_eq!(get(&handle, Probe::Startup).await.0, StatusCode::OK);
    assert_eq!(get(&handle, Probe::Health).await.0, StatusCode::OK);
    // Later rounds keep the hold.
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Ready).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    readiness.borrow_and_update();
    assert!(handle.release());
    assert!(!handle.release());
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (StatusCode::OK, READY.to_owned())
    );
    assert!(readiness.borrow_and_update().ready);
}

#[tokio::test]
async fn a_hold_placed_before_the_first_round_applies_to_it() {
    let handle = monitor(config());
    handle.hold("warming up");
    rounds(&handle).await;
    let (status, body) = get(&handle, Probe::Ready).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body.contains(r#""reason":"held by the operator: warming up""#),
        "{body}"
    );
}

#[tokio::test]
async fn a_readiness_subscriber_sees_each_round() {
    let handle = monitor(config());
    let mut readiness = handle.subscribe_readiness();
    assert!(readiness.borrow_and_update().checked_at.is_none());
    handle.state.readiness_round().await;
    assert!(readiness.has_changed().unwrap());
    let verdict = readiness.borrow_and_update().clone();
    assert!(verdict.ready && verdict.checked_at.is_some());
    handle.state.set_monitor_running(false);
    assert!(readiness.has_changed().unwrap());
    assert!(!readiness.borrow_and_update().ready);
}
