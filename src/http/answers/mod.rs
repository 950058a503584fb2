//! Every probe's exact HTTP answer in every state, with fake checks and no database: the
//! monitor's verdicts as the HTTP side renders them, as a reader gets them.

mod components;
mod databases;
mod details;
mod hold;

use std::time::Duration;

use http::StatusCode;

use crate::config::{FailDirection, HealthConfig};
use crate::http::Respond;
use crate::http::request::{BodyMode, Freshness};
use crate::monitor::HealthHandle;
use crate::monitor::runner::HealthMonitor;
use crate::monitor::testing::{config_with, goes_stale_soon, monitor, rounds, with};
use crate::probe::Probe;
use crate::shutdown::DrainConfig;
use crate::test_helpers::{FakeCheck, normalize, read};
use crate::verdict::Audience;
use crate::verdict::Status;

/// `probe`'s answer from `handle`'s published verdicts: status and normalised body.
pub(crate) async fn get(handle: &HealthHandle, probe: Probe) -> (StatusCode, String) {
    get_with(handle, probe, Freshness::Published).await
}

async fn get_with(
    handle: &HealthHandle,
    probe: Probe,
    freshness: Freshness,
) -> (StatusCode, String) {
    let (status, _, body) = read(
        handle
            .probe_response(
                probe,
                BodyMode::Full,
                freshness,
                Audience::Full,
                crate::http::request::Form::Json,
            )
            .await,
    )
    .await;
    (status, normalize(&body))
}

const LIVE: &str = r#"{"status":"alive"}"#;
const PING: &str = r#"{"ping":"pong","status":"alive"}"#;
const STARTED: &str = r#"{"status":"started"}"#;

#[tokio::test]
async fn before_the_first_round() {
    let handle = with(FakeCheck::Ready);
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"checks":{},"details":{},"reason":"no round has completed yet","status":"not_ready","timestamp":"T"}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"causes":[{"kind":"no_verdict","text":"no round has completed yet"}],"checks":{"database":"unhealthy"},"components":null,"details":{},"reason":"no round has completed yet","self_healing":false,"started":false,"status":"unavailable","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Pool).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"pool_info":{"alias":null,"error":"no round has completed yet","is_usable":false,"status":"unavailable","vendor":null},"status":"unavailable","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Startup).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"status":"starting","reason":"the first readiness round has not completed"}"#
                .to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Live).await,
        (StatusCode::OK, LIVE.to_owned())
    );
    assert_eq!(
        get(&handle, Probe::Ping).await,
        (StatusCode::OK, PING.to_owned())
    );
}

#[tokio::test]
async fn healthy() {
    let handle = with(FakeCheck::Ready);
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::OK,
            r#"{"checks":{"database_default":"ready"},"status":"ready"}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::OK,
            r#"{"causes":[],"checks":{"database":"healthy"},"components":null,"details":{"database":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"name":"default","status":"ready"}},"reason":null,"self_healing":true,"started":true,"status":"healthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Pool).await,
        (
            StatusCode::OK,
            r#"{"pool_info":{"alias":"default","check":"ready","connections":1,"connections_closed_broken":0,"connections_created":0,"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"gets_timed_out":0,"idle_connections":1,"in_use":0,"is_usable":true,"max_size":1,"pending_gets":0,"reserved_connections_opened":0,"saturated":false,"status":"healthy","vendor":"fake"},"status":"healthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Startup).await,
        (StatusCode::OK, STARTED.to_owned())
    );
    assert_eq!(
        get(&handle, Probe::Live).await,
        (StatusCode::OK, LIVE.to_owned())
    );
    assert_eq!(
        get(&handle, Probe::Ping).await,
        (StatusCode::OK, PING.to_owned())
    );
}

#[tokio::test]
async fn a_passing_check_reports_its_target_and_details_in_health() {
    let handle = with(FakeCheck::Reports);
    rounds(&handle).await;
    // All clear: readiness keeps its short answer.
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::OK,
            r#"{"checks":{"database_default":"ready"},"status":"ready"}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::OK,
            r#"{"causes":[],"checks":{"database":"healthy"},"components":null,"details":{"database":{"detail":null,"details":{"latency_ms":1.5,"server_version":"16.4","via":"postgres://app:***@pooler/app"},"elapsed_ms":0,"error":null,"error_kind":null,"name":"default","status":"ready","target":"reached.internal:5432"}},"reason":null,"self_healing":true,"started":true,"status":"healthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
}

#[tokio::test]
async fn refused() {
    let handle = with(FakeCheck::Refused);
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"checks":{"database_default":"not_ready"},"details":{"database_default":{"detail":null,"elapsed_ms":0,"error":"error connecting to server: Connection refused (os error 111)","error_kind":"refused","status":"not_ready"}},"status":"not_ready","timestamp":"T"}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"causes":[{"kind":"database","name":"default","text":"database default is not_ready (refused)"}],"checks":{"database":"unhealthy"},"components":null,"details":{"database":{"detail":null,"elapsed_ms":0,"error":"error connecting to server: Connection refused (os error 111)","error_kind":"refused","name":"default","status":"not_ready"}},"reason":"database default is not_ready (refused)","self_healing":true,"started":true,"status":"unhealthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Pool).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"error":"refused: error connecting to server: Connection refused (os error 111)","pool_info":{"alias":"default","check":"not_ready","connections":1,"connections_closed_broken":0,"connections_created":0,"detail":null,"elapsed_ms":0,"error":"refused: error connecting to server: Connection refused (os error 111)","error_kind":"refused","gets_timed_out":0,"idle_connections":1,"in_use":0,"is_usable":false,"max_size":1,"pending_gets":0,"reserved_connections_opened":0,"saturated":false,"status":"error","vendor":"fake"},"status":"error","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    // A database outage is not a reason to restart: liveness, startup and ping stay 200.
    assert_eq!(
        get(&handle, Probe::Startup).await,
        (StatusCode::OK, STARTED.to_owned())
    );
    assert_eq!(
        get(&handle, Probe::Live).await,
        (StatusCode::OK, LIVE.to_owned())
    );
}

#[tokio::test]
async fn a_saturated_pool_is_degraded_not_an_outage() {
    let handle = with(FakeCheck::Saturated);
    rounds(&handle).await;
    // The database answers (through the check's own connection): readiness stays ready;
    // health and the pool endpoint say degraded (200), with the figures, not "down".
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::OK,
            r#"{"checks":{"database_default":"ready"},"status":"ready"}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::OK,
            r#"{"causes":[{"kind":"pool_saturated","name":"default","text":"database default's pool is saturated: 10 of 10 connections in use, 4 checkouts waiting"}],"checks":{"database":"healthy"},"components":null,"details":{"database":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"name":"default","pool":{"connections":10,"gets_timed_out":2,"idle_connections":0,"in_use":10,"max_size":10,"pending_gets":4,"saturated":true},"status":"ready"}},"reason":"database default's pool is saturated: 10 of 10 connections in use, 4 checkouts waiting","self_healing":true,"started":true,"status":"degraded","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Pool).await,
        (
            StatusCode::OK,
            r#"{"pool_info":{"alias":"default","check":"ready","connections":10,"connections_closed_broken":0,"connections_created":10,"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"gets_timed_out":2,"idle_connections":0,"in_use":10,"is_usable":true,"max_size":10,"pending_gets":4,"reserved_connections_opened":1,"saturated":true,"status":"degraded","vendor":"fake"},"status":"degraded","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    let pool = handle.view().pool;
    assert!(pool.is_usable() && pool.is_saturated(), "{pool:?}");
}

#[tokio::test]
async fn timed_out_and_a_check_still_running_is_joined() {
    let handle = with(FakeCheck::Hangs);
    handle.state().readiness_round().await;
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"checks":{"database_default":"timed_out"},"details":{"database_default":{"detail":"the check did not finish before the deadline","elapsed_ms":0,"error":null,"error_kind":"timeout","status":"timed_out"}},"status":"not_ready","timestamp":"T"}"#.to_owned()
        )
    );
    // The health round finds the readiness round's check still running and waits for it
    // rather than starting a second one.
    handle.state().health_round().await;
    assert_eq!(handle.stats().checks_started, 1);
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"causes":[{"kind":"database","name":"default","text":"database default is timed_out"}],"checks":{"database":"unhealthy"},"components":null,"details":{"database":{"detail":"a check started by an earlier round is still running; no new check was started","elapsed_ms":0,"error":null,"error_kind":"timeout","name":"default","running_for_ms":0,"status":"timed_out"}},"reason":"database default is timed_out","self_healing":true,"started":true,"status":"unhealthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    // What this round waited is bounded by its deadline; the age of the check is apart.
    let outcome = handle.view().health.database.clone().unwrap();
    assert!(
        outcome.elapsed < outcome.running_for.unwrap(),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn timed_out_keeps_the_pod_in_rotation_under_fail_direction_ready() {
    let config = config_with(FakeCheck::Hangs).fail_direction(FailDirection::Ready);
    let handle = monitor(config);
    handle.state().readiness_round().await;
    let (status, body) = get(&handle, Probe::Ready).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains(r#""checks":{"database_default":"timed_out"}"#),
        "{body}"
    );
    assert!(body.contains(r#""status":"ready""#), "{body}");
}

#[tokio::test]
async fn a_panicking_check_is_an_error_not_a_crash() {
    let handle = with(FakeCheck::Panics);
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"causes":[{"kind":"database","name":"default","text":"database default's check panicked"}],"checks":{"database":"unhealthy"},"components":null,"details":{"database":{"detail":null,"elapsed_ms":0,"error":"the check panicked: the fake check panics","error_kind":"panicked","name":"default","status":"not_ready"}},"reason":"database default's check panicked","self_healing":true,"started":true,"status":"error","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    let (status, body) = get(&handle, Probe::Ready).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains(r#""error_kind":"panicked""#), "{body}");
}

#[tokio::test]
async fn no_database() {
    let handle = monitor(HealthConfig::new());
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::OK,
            r#"{"checks":{},"status":"ready"}"#.to_owned()
        )
    );
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"causes":[{"kind":"no_database","text":"no database is configured"}],"checks":{"database":"unhealthy"},"components":null,"details":{},"reason":"no database is configured","self_healing":true,"started":true,"status":"unhealthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    // 503 `degraded`, as documented (and unlike a saturated pool's 200 `degraded`).
    assert_eq!(
        get(&handle, Probe::Pool).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"pool_info":{"alias":null,"error":"no database is configured","is_usable":false,"status":"degraded","vendor":null},"status":"degraded","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
}

#[tokio::test]
async fn stale_verdicts_are_not_served_as_fresh() {
    // Bound: 3 x 1 ms + the 20 ms deadline; then no round runs. No database, so that the
    // round itself does not depend on the deadline.
    let config = goes_stale_soon();
    let handle = monitor(config);
    rounds(&handle).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"checks":{},"details":{},"reason":"the readiness verdict is stale: no round has completed for more than 23ms; the health monitor is stuck or stopped","status":"not_ready","timestamp":"T"}"#.to_owned()
        )
    );
    let (status, body) = get(&handle, Probe::Health).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains(r#""status":"unavailable""#), "{body}");
    assert!(body.contains("the health verdict is stale"), "{body}");
    // Liveness and startup do not follow the monitor.
    assert_eq!(get(&handle, Probe::Live).await.0, StatusCode::OK);
    assert_eq!(get(&handle, Probe::Startup).await.0, StatusCode::OK);
}

#[tokio::test]
async fn the_longest_settings_publish_without_overflowing() {
    // A staleness bound of three 1-year intervals plus a 1-year timeout, and a deadline a
    // year away: every sum the monitor computes stays in range.
    let year = crate::config::MAX_DURATION;
    let config = config_with(FakeCheck::Ready)
        .readiness_timeout(year)
        .readiness_interval(year)
        .health_interval(year)
        .check_limit(year)
        .nocache_min_interval(year);
    let handle = monitor(config);
    rounds(&handle).await;
    assert_eq!(get(&handle, Probe::Ready).await.0, StatusCode::OK);
    assert_eq!(get(&handle, Probe::Health).await.0, StatusCode::OK);
    assert_eq!(get(&handle, Probe::Pool).await.0, StatusCode::OK);
}

#[tokio::test]
async fn draining() {
    let handle = monitor(
        config_with(FakeCheck::Ready).drain(DrainConfig::new().retry_after(Duration::from_secs(7))),
    );
    rounds(&handle).await;
    let drain = handle.drain();
    assert_eq!(get(&handle, Probe::Ready).await.0, StatusCode::OK);
    drain.start();
    let (status, headers, body) = read(
        handle
            .probe_response(
                Probe::Ready,
                BodyMode::Full,
                Freshness::Published,
                Audience::Full,
                crate::http::request::Form::Json,
            )
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers[http::header::RETRY_AFTER], "7");
    assert_eq!(
        normalize(&body),
        r#"{"checks":{"database_default":"ready"},"details":{"database_default":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"status":"ready"}},"reason":"the server is draining: it finishes in-flight requests and takes no new traffic","status":"draining","timestamp":"T"}"#
    );
    for probe in [Probe::Health, Probe::Pool] {
        let (status, body) = get(&handle, probe).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{probe:?}");
        assert!(body.contains(r#""status":"draining""#), "{probe:?}: {body}");
    }
    // A bypass does not get around a drain.
    let (status, _) = get_with(&handle, Probe::Health, Freshness::Bypass).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    // Draining is a normal phase of life: no restart.
    for (probe, body) in [
        (Probe::Live, LIVE),
        (Probe::Ping, PING),
        (Probe::Startup, STARTED),
    ] {
        assert_eq!(get(&handle, probe).await, (StatusCode::OK, body.to_owned()));
    }
}

#[tokio::test]
async fn a_bypass_computes_afresh_and_says_so() {
    let handle = with(FakeCheck::Ready);
    rounds(&handle).await;
    let before = handle.stats();
    assert_eq!(
        get_with(&handle, Probe::Health, Freshness::Bypass).await,
        (
            StatusCode::OK,
            r#"{"causes":[],"checks":{"database":"healthy"},"components":null,"details":{"database":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"name":"default","status":"ready"}},"reason":null,"self_healing":true,"started":true,"status":"healthy","timestamp":"T","_cache":{"hit":"bypassed","age_ms":0}}"#.to_owned()
        )
    );
    let (_, body) = get_with(&handle, Probe::Pool, Freshness::Bypass).await;
    assert!(
        body.ends_with(r#""_cache":{"hit":"bypassed","age_ms":0}}"#),
        "{body}"
    );
    let after = handle.stats();
    assert_eq!(
        after.fresh_rounds,
        before.fresh_rounds + 1,
        "the second shares the first"
    );
    assert_eq!(after.checks_started, before.checks_started + 1);
    // The published verdict is the fresh one now, served unmarked.
    let (_, body) = get(&handle, Probe::Health).await;
    assert!(
        body.ends_with(r#""_cache":{"hit":true,"age_ms":0}}"#),
        "{body}"
    );
}

#[tokio::test]
async fn head_gets_the_status_and_length_without_a_body() {
    let handle = with(FakeCheck::Ready);
    rounds(&handle).await;
    for probe in Probe::ALL {
        let (get_status, _, get_body) = read(
            handle
                .probe_response(
                    probe,
                    BodyMode::Full,
                    Freshness::Published,
                    Audience::Full,
                    crate::http::request::Form::Json,
                )
                .await,
        )
        .await;
        let (status, headers, body) = read(
            handle
                .probe_response(
                    probe,
                    BodyMode::HeadOnly,
                    Freshness::Published,
                    Audience::Full,
                    crate::http::request::Form::Json,
                )
                .await,
        )
        .await;
        assert_eq!(status, get_status, "{probe:?}");
        assert!(body.is_empty(), "{probe:?}");
        // The age may gain a digit between the two requests, not more.
        let length: usize = headers[http::header::CONTENT_LENGTH]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(length.abs_diff(get_body.len()) <= 1, "{probe:?}");
    }
}

#[tokio::test]
async fn startup_can_wait_for_the_application() {
    let config = config_with(FakeCheck::Ready).startup_waits_for_mark(true);
    let handle = monitor(config);
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Startup).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"status":"starting","reason":"the application has not declared itself started (HealthHandle::mark_started)"}"#.to_owned()
        )
    );
    assert!(!handle.is_started());
    handle.mark_started();
    assert_eq!(
        get(&handle, Probe::Startup).await,
        (StatusCode::OK, STARTED.to_owned())
    );
    // For the rest of the process's life: a database outage or a stopped monitor does not
    // take it back.
    handle.state().set_monitor_running(false);
    assert_eq!(
        get(&handle, Probe::Startup).await,
        (StatusCode::OK, STARTED.to_owned())
    );
    assert_eq!(
        get(&handle, Probe::Ready).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[tokio::test]
async fn a_stopped_monitor_is_unavailable_at_once() {
    let handle = with(FakeCheck::Ready);
    rounds(&handle).await;
    handle.state().set_monitor_running(false);
    let (status, body) = get(&handle, Probe::Health).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body.contains(r#""reason":"the health monitor is not running""#),
        "{body}"
    );
    assert!(body.contains(r#""self_healing":false"#), "{body}");
}

/// The sample bodies in README.md, by name: what a newcomer reads is what the crate returns.
pub(super) fn readme_sample(name: &str) -> String {
    let readme = include_str!("../../docs/bodies.md");
    let marker = format!("<!-- body: {name} -->\n```json\n");
    let start = readme.find(&marker).expect("the sample is in bodies.md") + marker.len();
    let end = start + readme[start..].find("\n```").expect("the sample ends");
    normalize(&readme[start..end])
}

#[tokio::test]
async fn the_readme_samples_are_what_the_crate_returns() {
    let healthy = with(FakeCheck::Ready);
    rounds(&healthy).await;
    assert_eq!(
        get(&healthy, Probe::Ready).await.1,
        readme_sample("ready/healthy")
    );
    assert_eq!(
        get(&healthy, Probe::Health).await.1,
        readme_sample("health/healthy")
    );

    let saturated = with(FakeCheck::Saturated);
    rounds(&saturated).await;
    assert_eq!(
        get(&saturated, Probe::Pool).await.1,
        readme_sample("pool/saturated")
    );

    let refused = with(FakeCheck::Refused);
    rounds(&refused).await;
    assert_eq!(
        get(&refused, Probe::Ready).await.1,
        readme_sample("ready/refused")
    );
    assert_eq!(
        get(&refused, Probe::Pool).await.1,
        readme_sample("pool/refused")
    );

    let stalled = with(FakeCheck::Hangs);
    rounds(&stalled).await;
    assert_eq!(
        get(&stalled, Probe::Health).await.1,
        readme_sample("health/timed_out")
    );

    let starting = monitor(config_with(FakeCheck::Ready).startup_waits_for_mark(true));
    rounds(&starting).await;
    assert_eq!(
        get(&starting, Probe::Startup).await.1,
        readme_sample("startup/waiting")
    );
}

#[tokio::test]
async fn watchers_see_only_what_is_published_while_the_monitor_is_stopped() {
    let handle = with(FakeCheck::Ready);
    rounds(&handle).await;
    handle.state().set_monitor_running(false);
    let mut changes = handle.state().store.changes();
    changes.borrow_and_update();
    assert_eq!(handle.view().health.status, Status::Unavailable);
    // A bypass computes for its requester; readers keep the "not running" placeholder, and
    // so must the view's watchers.
    let fresh = handle.refresh().await.expect("the bypass finishes");
    assert_eq!(fresh.status, Status::Healthy);
    let (status, _) = get_with(&handle, Probe::Health, Freshness::Bypass).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the requester gets its fresh verdict"
    );
    assert_eq!(
        get(&handle, Probe::Health).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let seen = handle.view().health.status;
    assert_eq!(
        seen,
        Status::Unavailable,
        "a watcher saw what no reader was served"
    );
    assert!(
        !changes.has_changed().unwrap(),
        "a watcher was woken for it"
    );
}

/// Polls `future` once on a runtime of its own, then drops that runtime with whatever the
/// future spawned still queued: a request whose runtime goes away mid-way.
/// Returns whether the future was still pending (its work in flight) when the runtime died.
fn poll_once_on_a_runtime_that_dies<F: std::future::Future>(future: F) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pending = runtime.block_on(async {
        let mut future = std::pin::pin!(future);
        let polled = std::future::poll_fn(|cx| std::task::Poll::Ready(future.as_mut().poll(cx)));
        polled.await.is_pending()
    });
    drop(runtime);
    pending
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn work_dropped_before_it_ever_ran_leaves_no_slot_or_bypass_taken() {
    // A monitor whose rounds the test drives, so that the work goes to the runtime that
    // asked for it (the one that dies).
    let handle = with(FakeCheck::Ready);
    // Driven on the runtime that dies, the work cannot have run: it is in flight.
    assert!(poll_once_on_a_runtime_that_dies(
        handle.state().readiness_round()
    ));
    assert!(poll_once_on_a_runtime_that_dies(handle.refresh()));
    runtime().block_on(async {
        handle.state().readiness_round().await;
        let readiness = handle.view().readiness;
        assert!(readiness.ready, "{readiness:?}");
        assert!(
            handle.refresh().await.is_some(),
            "the bypass state was left set"
        );
        assert_eq!(handle.stats().fresh_rounds, 1);
    });
}

#[test]
fn a_request_runtime_that_dies_costs_the_running_monitor_nothing() {
    let monitor_runtime = runtime();
    let config = config_with(FakeCheck::Ready).readiness_interval(Duration::from_millis(10));
    let handle = monitor_runtime.block_on(async { HealthMonitor::spawn(config).unwrap() });
    // The bypass and the checks it starts run on the monitor's runtime, not the one that
    // asked and died (which is why they may even have finished within the one poll).
    let _ = poll_once_on_a_runtime_that_dies(handle.refresh());
    monitor_runtime.block_on(async {
        assert!(
            handle.refresh().await.is_some(),
            "the bypass state was left set"
        );
        let mut changes = handle.state().store.changes();
        let rounds_before = handle.stats().readiness_rounds;
        let two_more_rounds = async {
            while handle.stats().readiness_rounds < rounds_before + 2 {
                changes.changed().await.unwrap();
            }
        };
        tokio::time::timeout(Duration::from_secs(30), two_more_rounds)
            .await
            .expect("the monitor kept running its rounds");
        let readiness = handle.view().readiness;
        assert!(readiness.ready, "{readiness:?}");
    });
}
