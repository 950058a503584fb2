//! Components in the health verdict: exact bodies with fake components, no database.

use std::time::{Duration, Instant};

use http::StatusCode;

use super::HealthHandle;
use super::{get, readme_sample};
use crate::component::{ComponentSpec, ComponentStatus, UnknownComponents};
use crate::config::HealthConfig;
use crate::http::Respond;
use crate::http::request::{BodyMode, Freshness};
use crate::monitor::testing::{monitor, rounds};
use crate::probe::Probe;
use crate::test_helpers::{FakeCheck, FakeComponent, normalize, read};
use crate::verdict::Audience;
use crate::verdict::Status;

/// One default database that answers, and a long deadline: a loaded machine never turns an
/// instant answer into `timed_out`.
fn config() -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", FakeCheck::Ready)
}

fn with_component(spec: ComponentSpec) -> HealthHandle {
    monitor(config().component(spec))
}

const READY: &str = r#"{"checks":{"database_default":"ready"},"status":"ready"}"#;

#[tokio::test]
async fn a_non_critical_component_in_trouble_is_degraded_and_readiness_is_untouched() {
    let cache = FakeComponent::new(FakeCheck::Refused);
    let handle = with_component(ComponentSpec::new("cache", cache.clone()));
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Health).await,
        (StatusCode::OK, readme_sample("health/degraded"))
    );
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (StatusCode::OK, READY.to_owned())
    );
    assert_eq!(handle.view().health.status, Status::Degraded);
    // Recovers with the first success (the default hysteresis).
    cache.set(FakeCheck::Ready);
    handle.state().health_round().await;
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::OK,
            r#"{"causes":[],"checks":{"database":"healthy"},"components":{"cache":{"check":"ok","consecutive_failures":0,"consecutive_successes":1,"critical":false,"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"gates_readiness":false,"reason":"the last check succeeded","since":"T","status":"healthy"}},"details":{"database":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"name":"default","status":"ready"}},"reason":null,"self_healing":true,"started":true,"status":"healthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
}

#[tokio::test]
async fn a_critical_component_in_trouble_is_unhealthy() {
    let queue = FakeComponent::new(FakeCheck::Refused);
    let handle = with_component(ComponentSpec::new("queue", queue).critical(true));
    rounds(&handle).await;
    assert_eq!(
        get(&handle, Probe::Health).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"causes":[{"kind":"component","name":"queue","text":"critical component queue is unhealthy"}],"checks":{"database":"healthy"},"components":{"queue":{"check":"failed","consecutive_failures":1,"consecutive_successes":0,"critical":true,"detail":null,"elapsed_ms":0,"error":"error connecting to server: Connection refused (os error 111)","error_kind":"refused","gates_readiness":false,"reason":"1 failed check in a row, failures_before_trouble is 1","since":"T","status":"unhealthy"}},"details":{"database":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"name":"default","status":"ready"}},"reason":"critical component queue is unhealthy","self_healing":true,"started":true,"status":"unhealthy","timestamp":"T","_cache":{"hit":true,"age_ms":0}}"#.to_owned()
        )
    );
    // Readiness is not its business unless it gates readiness.
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (StatusCode::OK, READY.to_owned())
    );
}

#[tokio::test]
async fn a_component_that_gates_readiness_takes_the_pod_out_of_rotation() {
    let upstream = FakeComponent::new(FakeCheck::Refused);
    let handle =
        with_component(ComponentSpec::new("upstream", upstream.clone()).gates_readiness(true));
    // Before its first result it is unknown, which counts as fine by default.
    handle.state().readiness_round().await;
    let (status, body) = get(&handle, Probe::Ready).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains(r#""component_upstream":"unknown""#), "{body}");
    handle.state().health_round().await;
    handle.state().readiness_round().await;
    assert_eq!(
        get(&handle, Probe::Ready).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"checks":{"component_upstream":"not_ready","database_default":"ready"},"details":{"component_upstream":{"check":"failed","consecutive_failures":1,"consecutive_successes":0,"critical":false,"detail":null,"elapsed_ms":0,"error":"error connecting to server: Connection refused (os error 111)","error_kind":"refused","gates_readiness":true,"reason":"1 failed check in a row, failures_before_trouble is 1","since":"T","status":"degraded"},"database_default":{"detail":null,"elapsed_ms":0,"error":null,"error_kind":null,"status":"ready"}},"status":"not_ready","timestamp":"T"}"#.to_owned()
        )
    );
    upstream.set(FakeCheck::Ready);
    rounds(&handle).await;
    handle.state().readiness_round().await;
    let (status, body) = get(&handle, Probe::Ready).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains(r#""component_upstream":"ready""#), "{body}");
}

#[tokio::test]
async fn hysteresis_and_unknown_before_the_first_result() {
    let cache = FakeComponent::new(FakeCheck::Refused);
    let handle = with_component(
        ComponentSpec::new("cache", cache.clone())
            .failures_before_trouble(2)
            .successes_before_recovery(2),
    );
    handle.state().readiness_round().await;
    assert_eq!(
        handle.view().health.components.len(),
        0,
        "no health round yet: nothing published"
    );
    // A bypass checks the component too, and its check counts: one failure, below the
    // threshold, still unknown (never silently healthy).
    let (status, _, body) = read(
        handle
            .probe_response(
                Probe::Health,
                BodyMode::Full,
                Freshness::Bypass,
                Audience::Full,
                crate::http::request::Form::Json,
            )
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        normalize(&body).contains(r#""reason":"1 failed check in a row, below failures_before_trouble (2)","since":"T","status":"unknown""#),
        "{body}"
    );
    let status_after_round = || async {
        handle.state().health_round().await;
        let health = handle.view().health;
        (health.status, health.components[0].status)
    };
    assert_eq!(
        status_after_round().await,
        (Status::Degraded, ComponentStatus::Degraded)
    );
    cache.set(FakeCheck::Ready);
    assert_eq!(
        status_after_round().await,
        (Status::Degraded, ComponentStatus::Degraded),
        "one success is not a recovery"
    );
    assert_eq!(
        &*handle.view().health.components[0].reason,
        "1 successful check in a row, below successes_before_recovery (2)"
    );
    assert_eq!(
        status_after_round().await,
        (Status::Healthy, ComponentStatus::Healthy)
    );
    // A single failure after that stays below the threshold.
    cache.set(FakeCheck::Refused);
    assert_eq!(
        status_after_round().await,
        (Status::Healthy, ComponentStatus::Healthy)
    );
}

#[tokio::test]
async fn unknown_can_count_as_trouble() {
    let cache = FakeComponent::new(FakeCheck::Refused);
    let config = config()
        .component(ComponentSpec::new("cache", cache).failures_before_trouble(3))
        .unknown_components(UnknownComponents::InTrouble);
    let handle = monitor(config);
    rounds(&handle).await;
    let health = handle.view().health;
    assert_eq!(health.components[0].status, ComponentStatus::Unknown);
    assert_eq!(health.status, Status::Degraded);
    assert_eq!(
        health.reason().as_deref(),
        Some("non-critical component cache is unknown")
    );
}

#[tokio::test]
async fn a_panicking_and_a_hanging_component_are_reported_and_nothing_else_suffers() {
    let config = config()
        .component(ComponentSpec::new(
            "panics",
            FakeComponent::new(FakeCheck::Panics),
        ))
        .component(
            ComponentSpec::new("hangs", FakeComponent::new(FakeCheck::Hangs))
                .timeout(Duration::from_millis(20)),
        )
        .component(ComponentSpec::new(
            "fine",
            FakeComponent::new(FakeCheck::Ready),
        ));
    let handle = monitor(config);
    let started = Instant::now();
    rounds(&handle).await;
    // Bounded by the hanging one's timeout, far below the 10 s deadline.
    assert!(started.elapsed() < Duration::from_secs(10));
    let (status, body) = get(&handle, Probe::Health).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains(r#""fine":{"check":"ok""#), "{body}");
    assert!(
        body.contains(r#""hangs":{"check":"timed_out","consecutive_failures":1,"consecutive_successes":0,"critical":false,"detail":"the check did not finish before the deadline""#),
        "{body}"
    );
    assert!(
        body.contains(r#""panics":{"check":"error","consecutive_failures":1,"consecutive_successes":0,"critical":false,"detail":null,"elapsed_ms":0,"error":"the check panicked: the fake check panics","error_kind":"panicked""#),
        "{body}"
    );
    assert!(
        body.contains(r#""checks":{"database":"healthy"}"#),
        "{body}"
    );
    assert!(body.contains(r#""status":"degraded""#), "{body}");
    // The hanging check is joined by the next round, not started again.
    let before = handle.stats().component_checks_started;
    handle.state().health_round().await;
    assert_eq!(handle.stats().component_checks_started, before + 2);
    let (_, body) = get(&handle, Probe::Health).await;
    assert!(
        body.contains(r#""detail":"a check started by an earlier round is still running; no new check was started""#),
        "{body}"
    );
    assert!(body.contains(r#""running_for_ms":0"#), "{body}");
}

#[tokio::test]
async fn a_slower_cadence_reuses_the_last_result() {
    let handle = with_component(
        ComponentSpec::new("slow", FakeComponent::new(FakeCheck::Refused))
            .cadence(crate::config::MAX_DURATION),
    );
    rounds(&handle).await;
    rounds(&handle).await;
    assert_eq!(handle.stats().component_checks_started, 1);
    let health = handle.view().health;
    assert_eq!(health.components[0].consecutive_failures, 1, "counted once");
    assert_eq!(health.status, Status::Degraded);
}

#[tokio::test]
async fn the_database_going_and_coming_back_while_a_component_is_degraded() {
    // As the state diagram: degraded -> unhealthy -> degraded -> healthy.
    let database = FakeComponent::new(FakeCheck::Ready);
    let cache = FakeComponent::new(FakeCheck::Refused);
    let config = HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", database.clone())
        .component(ComponentSpec::new("cache", cache.clone()));
    let handle = monitor(config);
    let mut seen = Vec::new();
    for (db, component) in [
        (FakeCheck::Ready, FakeCheck::Refused),
        (FakeCheck::Refused, FakeCheck::Refused),
        (FakeCheck::Ready, FakeCheck::Refused),
        (FakeCheck::Ready, FakeCheck::Ready),
    ] {
        database.set(db);
        cache.set(component);
        handle.state().health_round().await;
        seen.push(handle.view().health.status);
    }
    assert_eq!(
        seen,
        [
            Status::Degraded,
            Status::Unhealthy,
            Status::Degraded,
            Status::Healthy
        ]
    );
}

#[tokio::test]
async fn a_watcher_is_told_of_each_transition() {
    let cache = FakeComponent::new(FakeCheck::Refused);
    let handle = with_component(ComponentSpec::new("cache", cache.clone()));
    let mut changes = handle.state().store.changes();
    handle.state().health_round().await;
    assert!(changes.has_changed().unwrap());
    changes.borrow_and_update();
    assert_eq!(handle.view().health.status, Status::Degraded);
    cache.set(FakeCheck::Ready);
    handle.state().health_round().await;
    assert!(changes.has_changed().unwrap());
    assert_eq!(handle.view().health.status, Status::Healthy);
}

#[cfg(feature = "tcp")]
#[tokio::test]
async fn a_tcp_component_reports_reachability_and_its_target() {
    use crate::component::Tcp;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let open = listener.local_addr().unwrap();
    let closed = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let config = config()
        .component(ComponentSpec::new("open", Tcp::new(open.to_string())))
        .component(ComponentSpec::new("closed", Tcp::new(closed.to_string())));
    let handle = monitor(config);
    rounds(&handle).await;
    let health = handle.view().health;
    assert_eq!(health.components[0].status, ComponentStatus::Healthy);
    assert_eq!(health.components[1].status, ComponentStatus::Degraded);
    let (status, body) = get(&handle, Probe::Health).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(&format!(r#""target":"{open}""#)), "{body}");
    // The operating system's wording of the refusal sits between the two.
    let closed_head = format!(
        r#""closed":{{"check":"failed","consecutive_failures":1,"consecutive_successes":0,"critical":false,"detail":null,"elapsed_ms":0,"error":"connecting to {closed}: "#
    );
    let closed_tail = format!(
        r#"","error_kind":"refused","gates_readiness":false,"reason":"1 failed check in a row, failures_before_trouble is 1","since":"T","status":"degraded","target":"{closed}"}}"#
    );
    assert!(body.contains(&closed_head), "{body}");
    assert!(body.contains(&closed_tail), "{body}");
    drop(listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_runtime_watcher_detects_a_blocked_worker_thread() {
    use crate::component::RuntimeWatcher;
    let handle = with_component(ComponentSpec::new(
        "runtime",
        RuntimeWatcher::new().threshold(Duration::from_millis(100)),
    ));
    // The first round starts the watcher's ticking task.
    rounds(&handle).await;
    // A task that blocks the runtime's only worker thread, as a synchronous call would.
    tokio::spawn(async { std::thread::sleep(Duration::from_millis(500)) })
        .await
        .unwrap();
    handle.state().health_round().await;
    let health = handle.view().health;
    let report = &health.components[0];
    assert_eq!(report.status, ComponentStatus::Degraded, "{report:?}");
    assert_eq!(health.status, Status::Degraded);
    let error = report.outcome.as_ref().unwrap().error.as_ref().unwrap();
    assert!(
        error
            .message()
            .contains("a task is blocking a runtime worker thread"),
        "{error}"
    );
    // Liveness does not follow: a slow pod is not restarted.
    assert_eq!(get(&handle, Probe::Live).await.0, StatusCode::OK);
}

#[cfg(feature = "http-check")]
#[tokio::test]
async fn an_http_component_expects_a_2xx_and_does_not_follow_redirects() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::component::Http;
    /// A server that answers every request with `status_line`.
    async fn answering(status_line: &'static str) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0; 1024];
                    let _ = stream.read(&mut request).await;
                    let response = format!(
                        "HTTP/1.1 {status_line}\r\nlocation: /elsewhere\r\ncontent-length: 0\r\n\r\n"
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        addr
    }
    let ok = answering("200 OK").await;
    let moved = answering("301 Moved Permanently").await;
    let down = answering("503 Service Unavailable").await;
    let config = [("ok", ok), ("moved", moved), ("down", down)]
        .into_iter()
        .fold(config(), |config, (name, addr)| {
            config.component(ComponentSpec::new(
                name,
                Http::new(&format!("http://{addr}/status")).unwrap(),
            ))
        });
    let handle = monitor(config);
    rounds(&handle).await;
    let health = handle.view().health;
    let error = |index: usize| {
        health.components[index]
            .outcome
            .as_ref()
            .and_then(|outcome| outcome.error.as_ref())
            .map(|error| error.message().to_owned())
    };
    assert_eq!(health.components[0].status, ComponentStatus::Healthy);
    assert_eq!(error(0), None);
    assert_eq!(
        error(1).as_deref(),
        Some("answered 301 Moved Permanently (redirects are not followed)")
    );
    assert_eq!(
        error(2).as_deref(),
        Some("answered 503 Service Unavailable, expected 2xx")
    );
    assert_eq!(health.status, Status::Degraded);
    assert_eq!(
        health.components[0].target.as_deref(),
        Some(format!("http://{ok}/status").as_str())
    );
}

#[tokio::test]
async fn self_monitoring_reports_readiness_rounds_that_lag() {
    // Bound: 2 x 1 ms + the 20 ms deadline. No database, so that rounds do not depend on
    // the deadline.
    let config = HealthConfig::new()
        .readiness_interval(Duration::from_millis(1))
        .readiness_timeout(Duration::from_millis(20))
        .self_monitoring(true);
    let handle = monitor(config);
    // Before the first readiness round there is nothing to say: fine, not a failure.
    handle.state().health_round().await;
    let health = handle.view().health;
    assert_eq!(&*health.components[0].name, "monitor");
    assert_eq!(health.components[0].status, ComponentStatus::Healthy);
    handle.state().readiness_round().await;
    // Then no round runs, as when the monitor is stuck.
    tokio::time::sleep(Duration::from_millis(100)).await;
    handle.state().health_round().await;
    let health = handle.view().health;
    let report = &health.components[0];
    assert_eq!(report.status, ComponentStatus::Degraded, "{report:?}");
    let error = report.outcome.as_ref().unwrap().error.as_ref().unwrap();
    assert!(
        error
            .message()
            .contains("rounds are due every 1ms (bound 22ms): the monitor is lagging"),
        "{error}"
    );
}

#[tokio::test]
async fn without_self_monitoring_components_stay_null() {
    let handle = monitor(config());
    rounds(&handle).await;
    assert!(handle.view().health.components.is_empty());
}

#[cfg(feature = "disk")]
#[tokio::test]
async fn disk_space_below_the_minimum_is_trouble() {
    use crate::component::DiskSpace;
    let dir = std::env::temp_dir();
    let config = config()
        .component(ComponentSpec::new(
            "enough",
            DiskSpace::new(&dir).min_available_percent(0),
        ))
        .component(ComponentSpec::new(
            "full",
            DiskSpace::new(&dir).min_available_bytes(u64::MAX),
        ))
        .component(ComponentSpec::new(
            "missing",
            DiskSpace::new("/no/such/path/tower-health"),
        ));
    let handle = monitor(config);
    rounds(&handle).await;
    let health = handle.view().health;
    let message = |index: usize| {
        health.components[index]
            .outcome
            .as_ref()
            .and_then(|outcome| outcome.error.as_ref())
            .map(|error| error.message().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(
        health.components[0].status,
        ComponentStatus::Healthy,
        "{}",
        message(0)
    );
    assert_eq!(health.components[1].status, ComponentStatus::Degraded);
    assert!(
        message(1).ends_with(&format!("below the minimum of {}", u64::MAX)),
        "{}",
        message(1)
    );
    assert_eq!(health.components[2].status, ComponentStatus::Degraded);
    assert!(
        message(2).starts_with("reading the free space of /no/such/path/tower-health: "),
        "{}",
        message(2)
    );
    assert_eq!(
        health.components[0].target.as_deref(),
        Some(dir.display().to_string().as_str())
    );
}

#[tokio::test]
async fn a_bypass_rechecks_components_so_a_fix_shows_at_once() {
    let cache = FakeComponent::new(FakeCheck::Refused);
    // A cadence the test never reaches: only a forced check looks again.
    let handle = with_component(
        ComponentSpec::new("cache", cache.clone()).cadence(std::time::Duration::from_secs(3600)),
    );
    rounds(&handle).await;
    assert_eq!(handle.view().health.status, Status::Degraded);
    cache.set(FakeCheck::Ready);
    handle.state().health_round().await;
    assert_eq!(
        handle.view().health.status,
        Status::Degraded,
        "the cadence keeps the last result"
    );
    let (status, _, body) = read(
        handle
            .probe_response(
                Probe::Health,
                BodyMode::Full,
                Freshness::Bypass,
                Audience::Full,
                crate::http::request::Form::Json,
            )
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(r#""status":"healthy""#), "{body}");
    assert_eq!(
        handle.view().health.components[0].status,
        ComponentStatus::Healthy
    );
}
