//! The manual hold, and what the view's watchers are told, with a fake database.

use std::time::Duration;

use http::StatusCode;

use super::get;
use crate::config::HealthConfig;
use crate::monitor::testing::{monitor, rounds};
use crate::probe::Probe;
use crate::test_helpers::FakeCheck;

fn config() -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", FakeCheck::Ready)
}

const READY: &str = r#"{"checks":{"database_default":"ready"},"status":"ready"}"#;

#[tokio::test]
async fn a_hold_fails_readiness_at_once_and_a_release_restores_it() {
    let handle = monitor(config());
    rounds(&handle).await;
    let mut changes = handle.state().store.changes();
    changes.borrow_and_update();
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
    assert!(changes.has_changed().unwrap());
    let held = handle.view().readiness;
    assert!(!held.passes());
    assert!(
        held.ready,
        "the checks' conclusion is the round's: the hold is beside it"
    );
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
    changes.borrow_and_update();
    assert!(handle.release());
    assert!(!handle.release());
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (StatusCode::OK, READY.to_owned())
    );
    assert!(changes.has_changed().unwrap());
    assert!(handle.view().readiness.passes());
}

/// A hold, then its release, change the hold and nothing else: a round that panicked is
/// still reported as such after the release, until the next round (a hold once rebuilt
/// readiness from the outcomes, and a release made a panicked round read `ready`).
#[tokio::test]
async fn a_release_restores_what_the_round_concluded() {
    let handle = monitor(config());
    rounds(&handle).await;
    crate::monitor::testing::readiness_round_panicked(&handle, "the fake round panicked");
    let panicked = get(&handle, Probe::Ready).await;
    assert_eq!(panicked.0, StatusCode::SERVICE_UNAVAILABLE);
    assert!(handle.hold("deploy freeze"));
    assert!(handle.release());
    assert_eq!(get(&handle, Probe::Ready).await, panicked);
    // The next round decides again.
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (StatusCode::OK, READY.to_owned())
    );
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
async fn a_watcher_is_told_of_each_readiness_round() {
    let handle = monitor(config());
    let mut changes = handle.state().store.changes();
    changes.borrow_and_update();
    assert!(handle.view().readiness.checked_at.is_none());
    handle.state().readiness_round().await;
    assert!(changes.has_changed().unwrap());
    changes.borrow_and_update();
    let verdict = handle.view().readiness;
    assert!(verdict.ready && verdict.checked_at.is_some());
    handle.state().set_monitor_running(false);
    assert!(changes.has_changed().unwrap());
    assert!(!handle.view().readiness.ready);
}
