//! `redis::Redis` against real servers, beyond the contract every backend keeps
//! (`tests/it/backends.rs`: refused, stalled, recovered, secret-free, first-round failure): the
//! application's own connection, a server of the test's own stopped and started again, with a
//! password, with TLS, and a name that does not resolve.

use crate::support;

use std::time::Duration;

use support::redis_server::{RedisServer, redis_url};
use support::{LIMIT, eventually};
use tower_health::check::CheckErrorKind;
use tower_health::component::{Component, ComponentSpec, ComponentStatus};
use tower_health::redis::Redis;
use tower_health::verdict::ComponentReport;
use tower_health::{HealthConfig, HealthHandle, HealthMonitor};

/// A monitor checking `redis` as the component `cache`, every 100 ms under a 300 ms deadline.
fn monitor(redis: Redis) -> HealthHandle {
    HealthMonitor::spawn(
        HealthConfig::new()
            .readiness_interval(Duration::from_millis(100))
            .health_interval(Duration::from_millis(100))
            .readiness_timeout(Duration::from_millis(300))
            .component(ComponentSpec::new("cache", redis)),
    )
    .unwrap()
}

/// Waits until the component `cache` is reported as `wanted`; returns its report.
async fn cache_becomes(health: &HealthHandle, wanted: ComponentStatus) -> ComponentReport {
    let reached = eventually(LIMIT, || async {
        cache(health).is_some_and(|report| report.status == wanted)
    })
    .await;
    let report = cache(health);
    assert!(reached, "cache never became {wanted}: {report:#?}");
    report.unwrap()
}

fn cache(health: &HealthHandle) -> Option<ComponentReport> {
    let verdict = health.view().health;
    verdict
        .components
        .iter()
        .find(|report| &*report.name == "cache")
        .cloned()
}

fn kind(report: &ComponentReport) -> Option<CheckErrorKind> {
    report
        .outcome
        .as_ref()
        .and_then(|outcome| outcome.error_kind())
}

#[tokio::test]
async fn healthy_against_the_real_redis_through_its_own_connection_or_the_applications() {
    require_redis!();
    let own = Redis::connect(&redis_url()).unwrap();
    let passed = support::bounded("PING", own.check()).await.unwrap();
    // The server says its version once (`INFO server`), and the report carries it.
    let version = passed.details()["version"].as_str().unwrap_or_default();
    assert!(version.contains('.'), "{passed:?}");
    assert_eq!(passed.details()["mode"], "standalone", "{passed:?}");
    let again = support::bounded("PING", own.check()).await.unwrap();
    assert_eq!(again, passed);
    let report = cache_becomes(&monitor(own), ComponentStatus::Healthy).await;
    assert_eq!(report.target.as_deref(), Some("127.0.0.1:6379/0"));
    let details = report
        .outcome
        .as_ref()
        .and_then(|outcome| outcome.details.clone());
    assert_eq!(
        details.as_ref().map(|details| &details["version"]),
        Some(&passed.details()["version"]),
        "{report:#?}"
    );

    let client = redis::Client::open(redis_url()).unwrap();
    let manager = support::bounded("connecting", redis::aio::ConnectionManager::new(client))
        .await
        .unwrap();
    let through_the_app = Redis::new(manager);
    let passed = support::bounded("PING", through_the_app.check())
        .await
        .unwrap();
    assert_eq!(passed.details()["version"], version, "{passed:?}");
    assert_eq!(through_the_app.target(), None);
}

#[tokio::test]
async fn a_name_that_does_not_resolve_is_dns() {
    let nowhere = Redis::connect("redis://no-such-host.invalid:6379").unwrap();
    let error = support::bounded("PING", nowhere.check()).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Dns, "{error}");
}

#[tokio::test]
async fn stopped_then_started_again_it_recovers_on_its_own() {
    let mut server = RedisServer::started(&[]).await;
    let health = monitor(Redis::connect(&server.url()).unwrap());
    cache_becomes(&health, ComponentStatus::Healthy).await;
    server.stop();
    let report = cache_becomes(&health, ComponentStatus::Degraded).await;
    // The connection dropped under it, or the reconnection was refused.
    let failed = kind(&report);
    assert!(
        matches!(
            failed,
            Some(CheckErrorKind::Refused | CheckErrorKind::Closed)
        ),
        "{report:#?}"
    );
    server.start().await;
    cache_becomes(&health, ComponentStatus::Healthy).await;
}

/// Regression (found by the fault matrix): the check after a refused one reported that
/// refusal again, though Redis was back. The `ConnectionManager` hands a failed reconnection
/// to the next command and only then tries again, so each check reported the state of the
/// check before, and recovery took a round more than it should.
#[tokio::test]
async fn the_first_check_after_redis_comes_back_passes() {
    let mut server = RedisServer::reserve().await;
    let redis = Redis::connect(&server.url()).unwrap();
    for _ in 0..2 {
        let error = support::bounded("PING", redis.check()).await.unwrap_err();
        assert_eq!(error.kind(), CheckErrorKind::Refused, "{error}");
    }
    server.start().await;
    let first = support::bounded("PING", redis.check()).await;
    assert!(
        first.is_ok(),
        "the first check after Redis came back: {:?}",
        first.err()
    );
}

/// Regression (found by the fault matrix): a connection kept between checks and closed
/// meanwhile (Redis restarted) failed the next check as `closed`, though Redis was there.
#[tokio::test]
async fn a_restart_between_two_checks_is_no_outage() {
    let mut server = RedisServer::started(&[]).await;
    let redis = Redis::connect(&server.url()).unwrap();
    support::bounded("PING", redis.check()).await.unwrap();
    server.stop();
    server.start().await;
    let after = support::bounded("PING", redis.check()).await;
    assert!(
        after.is_ok(),
        "the first check after the restart: {:?}",
        after.err()
    );
}

#[tokio::test]
async fn a_wrong_or_missing_password_is_auth_and_never_shown() {
    let server = RedisServer::started(&["--requirepass", "right-one"]).await;
    let port = server.addr.port();
    let wrong = Redis::connect(&format!("redis://:hunter2@127.0.0.1:{port}")).unwrap();
    let error = support::bounded("PING", wrong.check()).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Auth, "{error}");
    assert!(!format!("{error} {wrong:?}").contains("hunter2"));
    assert_eq!(
        wrong.target().as_deref(),
        Some(&*format!("127.0.0.1:{port}/0"))
    );
    let missing = Redis::connect(&server.url()).unwrap();
    let error = support::bounded("PING", missing.check()).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Auth, "{error}");
    let right = Redis::connect(&format!("redis://:right-one@127.0.0.1:{port}")).unwrap();
    support::bounded("PING", right.check()).await.unwrap();
}

#[cfg(feature = "rustls")]
#[tokio::test]
async fn rediss_to_a_server_whose_certificate_is_not_trusted_is_tls() {
    let server = RedisServer::started_tls().await;
    let tls = Redis::connect(&format!("rediss://localhost:{}", server.addr.port())).unwrap();
    let error = support::bounded("PING", tls.check()).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Tls, "{error}");
}
