//! The HTTP response agrees with the view: the layers and the admin server answer what the
//! view decided, in every state the view knows (before the first round, a verdict, held,
//! draining, a refused database, a stopped monitor, stale verdicts). What the view decides in
//! each state is tested beside it (`monitor/view_tests.rs`).

use std::time::Duration;

use http::StatusCode;
use serde_json::Value;

use super::Respond;
use crate::config::HealthConfig;
use crate::http::request::{BodyMode, Freshness};
use crate::monitor::HealthHandle;
use crate::monitor::testing::{conditions, goes_stale_soon, monitor, rounds, until_stale};
use crate::probe::Probe;
use crate::test_helpers::{FakeCheck, read};
use crate::verdict::Audience;
use crate::view::{Condition, View};

fn config(check: FakeCheck) -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", check)
}

/// Every probe's HTTP response agrees with the view: 200 exactly when it passes, and the
/// body's `status` is the answer's.
async fn http_agrees_with_the_view(handle: &HealthHandle, view: &View, state: &str) {
    for answer in view.answers() {
        let response = handle
            .probe_response(
                answer.probe,
                BodyMode::Full,
                Freshness::Published,
                Audience::Full,
                crate::http::request::Form::Json,
            )
            .await;
        let (status, _, body) = read(response).await;
        let expected = if answer.passing {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        assert_eq!(status, expected, "{state}: {answer:?}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["status"], answer.status, "{state}: {answer:?}");
    }
}

#[tokio::test]
async fn http_agrees_with_the_view_before_the_first_round_healthy_held_and_draining() {
    let handle = monitor(config(FakeCheck::Ready));
    let view = handle.view();
    assert_eq!(conditions(&view), [Condition::Unavailable; 3]);
    http_agrees_with_the_view(&handle, &view, "before the first round").await;

    rounds(&handle).await;
    let view = handle.view();
    assert_eq!(conditions(&view), [Condition::Verdict; 3]);
    http_agrees_with_the_view(&handle, &view, "healthy").await;

    handle.hold("maintenance");
    let view = handle.view();
    assert_eq!(view.answer(Probe::Ready).condition, Condition::Held);
    http_agrees_with_the_view(&handle, &view, "held").await;
    handle.release();

    let drain = handle.drain().clone();
    drain.start();
    let view = handle.view();
    assert_eq!(conditions(&view), [Condition::Draining; 3]);
    http_agrees_with_the_view(&handle, &view, "draining").await;
}

#[tokio::test]
async fn http_agrees_with_the_view_of_a_refused_database_and_a_stopped_monitor() {
    let handle = monitor(config(FakeCheck::Refused));
    rounds(&handle).await;
    let view = handle.view();
    assert_eq!(conditions(&view), [Condition::Verdict; 3]);
    http_agrees_with_the_view(&handle, &view, "refused").await;

    handle.state().set_monitor_running(false);
    let view = handle.view();
    assert_eq!(conditions(&view), [Condition::Unavailable; 3]);
    http_agrees_with_the_view(&handle, &view, "stopped").await;
}

#[tokio::test]
async fn http_agrees_with_a_stale_view() {
    let config = goes_stale_soon();
    let handle = monitor(config);
    rounds(&handle).await;
    let mut watch = handle.watch();
    watch.changed().await.unwrap();
    // No round runs from here on, as with a stuck monitor: the verdicts go stale.
    let stale = until_stale(&mut watch).await;
    http_agrees_with_the_view(&handle, &stale, "stale").await;
}
