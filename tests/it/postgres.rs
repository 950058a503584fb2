//! The monitor against the real PostgreSQL and real faults: a healthy database, a refused
//! port, a listener that never answers, a slow query, a proxied connection that freezes or is
//! cut, and several databases at once.

use crate::support;

use support::fast;

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::Value;
use support::{
    Client, PgProxy, StalledListener, eventually, first_rounds, health_server, pg_addr, pg_url,
    postgres, refused_addr,
};
use tower_health::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport, DatabaseCheck};
use tower_health::postgres::PostgresCheck;
use tower_health::verdict::CheckStatus;
use tower_health::{HealthMonitor, config::FailDirection, verdict::Status};

/// A monitor whose default database is the test database behind a fresh [`PgProxy`], served
/// over HTTP, its first rounds done and ready.
async fn through_proxy(
    config: tower_health::HealthConfig,
) -> (PgProxy, tower_health::HealthHandle, support::TestServer) {
    let proxy = PgProxy::start(pg_addr()).await;
    let (health, server) = health_server(config.database("default", postgres(&proxy.url()))).await;
    first_rounds(&health).await;
    assert!(
        health.view().readiness.ready,
        "{:?}",
        health.view().readiness
    );
    (proxy, health, server)
}

/// Waits until the default database's check is reported `timed_out`.
async fn until_timed_out(health: &tower_health::HealthHandle) {
    let timed_out = eventually(support::LIMIT, || async {
        health.view().readiness.databases[0].status == CheckStatus::TimedOut
    })
    .await;
    assert!(timed_out, "{:?}", health.view().readiness);
}

#[tokio::test]
async fn a_healthy_database_answers_200_on_every_probe() {
    require_postgres!();
    let (health, server) = health_server(fast().database("default", postgres(&pg_url()))).await;
    first_rounds(&health).await;
    let client = Client::new();

    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.header("content-type"), Some("application/json"));
    assert_eq!(ready.header("cache-control"), Some("no-store"));
    let body = ready.json();
    assert_eq!(body["status"], "ready");
    assert_eq!(
        body["checks"],
        serde_json::json!({"database_default": "ready"})
    );

    let full = client.get(server.addr, "/health").await;
    assert_eq!(full.status, StatusCode::OK);
    let body = full.json();
    assert_eq!(body["status"], "healthy");
    assert_eq!(body["checks"], serde_json::json!({"database": "healthy"}));
    assert_eq!(body["self_healing"], true);
    assert_eq!(body["components"], Value::Null);
    assert_eq!(body["_cache"]["hit"], true);
    assert!(body["_cache"]["age_ms"].is_u64(), "{body}");
    let timestamp = body["timestamp"].as_str().unwrap();
    assert!(timestamp.ends_with('Z'), "{timestamp}");
    humantime::parse_rfc3339(timestamp).expect("an RFC 3339 timestamp");

    let pool = client.get(server.addr, "/health/pool").await;
    assert_eq!(pool.status, StatusCode::OK);
    let body = pool.json();
    assert_eq!(body["status"], "healthy");
    let info = &body["pool_info"];
    assert_eq!(info["alias"], "default");
    assert_eq!(info["vendor"], "postgresql");
    assert_eq!(info["is_usable"], true);
    assert_eq!(info["status"], "healthy");
    assert_eq!(info["error"], Value::Null);
    assert_eq!(info["max_size"], 1);
    assert!(body.get("error").is_none(), "{body}");

    let live = client.get(server.addr, "/health/live").await;
    assert_eq!(
        (live.status, live.json()),
        (StatusCode::OK, serde_json::json!({"status": "alive"}))
    );
    let ping = client.get(server.addr, "/health/ping").await;
    assert_eq!(ping.status, StatusCode::OK);
    assert_eq!(
        ping.json(),
        serde_json::json!({"ping": "pong", "status": "alive"})
    );
    assert_eq!(ping.header("cache-control"), Some("max-age=1"));
}

#[tokio::test]
async fn a_refused_port_fails_fast_with_a_redacted_error() {
    let addr = refused_addr().await;
    let url = format!("postgres://app:s3cret-pw@{addr}/app");
    let (health, server) = health_server(fast().database("default", postgres(&url))).await;
    first_rounds(&health).await;
    let client = Client::new();

    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    let body = ready.json();
    assert_eq!(body["status"], "not_ready");
    assert_eq!(
        body["checks"]["database_default"], "not_ready",
        "refused is not a timeout: {body}"
    );

    let full = client.get(server.addr, "/health").await;
    assert_eq!(full.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(full.json()["status"], "unhealthy");
    assert_eq!(full.json()["checks"]["database"], "unhealthy");

    let pool = client.get(server.addr, "/health/pool").await;
    assert_eq!(pool.status, StatusCode::SERVICE_UNAVAILABLE);
    let body = pool.json();
    assert_eq!(body["status"], "error");
    assert_eq!(body["pool_info"]["is_usable"], false);
    let error = body["error"].as_str().expect("a top-level error");
    assert!(error.contains("refused"), "{error}");
    for reply in [&ready, &full, &pool] {
        let text = reply.text();
        assert!(!text.contains("s3cret-pw"), "password leaked: {text}");
        assert!(!text.contains(&url), "connection string leaked: {text}");
    }
    let outcome = health.view().readiness.databases[0].clone();
    assert_eq!(outcome.error.unwrap().kind(), CheckErrorKind::Refused);
    let details = client.get(server.addr, "/health/ready").await.json();
    assert_eq!(
        details["details"]["database_default"]["error_kind"], "refused",
        "{details}"
    );
}

#[tokio::test]
async fn a_stalled_database_is_reported_timed_out_on_time_and_never_stacked() {
    let stalled = StalledListener::start().await;
    let budget = Duration::from_millis(300);
    let config = fast()
        .readiness_timeout(budget)
        .database("default", postgres(&stalled.url()));
    let started = Instant::now();
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    // A bound against hanging with generous slack, not a measurement: without the deadline
    // the verdict would never arrive, since the listener never answers.
    assert!(
        started.elapsed() < budget + Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    let client = Client::new();
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.json()["checks"]["database_default"], "timed_out");
    let outcome = &health.view().readiness.databases[0];
    assert_eq!(outcome.status, CheckStatus::TimedOut);
    assert!(outcome.elapsed >= budget, "{:?}", outcome.elapsed);

    let full = client.get(server.addr, "/health").await;
    assert_eq!(full.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(full.json()["details"]["database"]["status"], "timed_out");

    // Rounds keep coming (every 100 ms) while the first attempt is still stuck; none opens
    // another connection, and the detail says why.
    let rounds_before = health.stats().readiness_rounds;
    let more_rounds = eventually(support::LIMIT, || async {
        health.stats().readiness_rounds >= rounds_before + 5
    })
    .await;
    assert!(more_rounds, "no five more rounds");
    assert_eq!(stalled.accepted(), 1, "a stuck check must not be stacked");
    assert_eq!(health.stats().checks_started, 1);
    assert_eq!(
        health.view().readiness.databases[0].detail(),
        Some("a check started by an earlier round is still running; no new check was started")
    );
}

#[tokio::test]
async fn fail_direction_ready_keeps_a_stalled_database_in_rotation() {
    let stalled = StalledListener::start().await;
    let config = fast()
        .fail_direction(FailDirection::Ready)
        .database("default", postgres(&stalled.url()));
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    let ready = Client::new().get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    let body = ready.json();
    assert_eq!(body["status"], "ready");
    assert_eq!(
        body["checks"]["database_default"], "timed_out",
        "still reported: {body}"
    );
}

#[tokio::test]
async fn a_stall_stays_timed_out_when_connection_attempts_give_up() {
    // Connection attempts against the stall give up after 400 ms, every few rounds: each one
    // must still read `timed_out` (and stay in rotation under fail direction `ready`), not
    // flip to `not_ready`.
    let stalled = StalledListener::start().await;
    let manager = tower_health::postgres::PostgresCheckManager::new(stalled.url().parse().unwrap())
        .connect_timeout(Duration::from_millis(400));
    let pool = bb8::Pool::builder()
        .max_size(1)
        .test_on_check_out(false)
        .build_unchecked(manager);
    let config = fast()
        .readiness_interval(Duration::from_millis(50))
        .readiness_timeout(Duration::from_millis(100))
        .fail_direction(FailDirection::Ready)
        .database("default", PostgresCheck::new(pool));
    let (health, _server) = health_server(config).await;
    first_rounds(&health).await;
    let mut seen = std::collections::HashSet::new();
    // Three attempts take about 1.2 s; the bound only guards against a hang.
    let attempts = eventually(support::LIMIT, || {
        let verdict = health.view().readiness;
        assert!(verdict.ready, "{verdict:?}");
        let outcome = &verdict.databases[0];
        assert_eq!(outcome.status, CheckStatus::TimedOut, "{outcome:?}");
        if let Some(error) = &outcome.error {
            seen.insert(error.kind());
        }
        let done = stalled.accepted() >= 3;
        async move { done }
    })
    .await;
    assert!(
        attempts,
        "{} connection attempts in {:?}",
        stalled.accepted(),
        support::LIMIT
    );
    assert!(seen.contains(&CheckErrorKind::Timeout), "{seen:?}");
}

#[tokio::test]
async fn only_readiness_fails_on_a_stalled_second_database() {
    require_postgres!();
    let stalled = StalledListener::start().await;
    let config = fast()
        .database("default", postgres(&pg_url()))
        .database("replica", postgres(&stalled.url()));
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    let client = Client::new();

    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    let body = ready.json();
    assert_eq!(
        body["checks"],
        serde_json::json!({"database_default": "ready", "database_replica": "timed_out"})
    );

    // Health follows the default database, and shows every database (issue 10): the
    // replica is there, critical, without changing the status.
    let reply = client.get(server.addr, "/health").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["status"], "healthy");
    assert_eq!(body["details"]["database_replica"]["critical"], true);
    assert_eq!(body["details"]["database_replica"]["status"], "timed_out");
    let reply = client.get(server.addr, "/health/pool").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert!(
        !reply.text().contains("replica"),
        "the pool endpoint names the replica: {}",
        reply.text()
    );
}

#[tokio::test]
async fn every_database_is_checked_in_parallel_under_one_deadline() {
    require_postgres!();
    let stalls = [
        StalledListener::start().await,
        StalledListener::start().await,
    ];
    let budget = Duration::from_secs(1);
    let config = fast()
        .readiness_timeout(budget)
        .database("default", postgres(&pg_url()))
        .database("a", postgres(&stalls[0].url()))
        .database("b", postgres(&stalls[1].url()));
    let (health, _server) = health_server(config).await;
    first_rounds(&health).await;
    let verdict = health.view().readiness;
    let statuses: Vec<_> = verdict
        .databases
        .iter()
        .map(|outcome| outcome.status)
        .collect();
    assert_eq!(
        statuses,
        [
            CheckStatus::Passed,
            CheckStatus::TimedOut,
            CheckStatus::TimedOut
        ]
    );
    // Both are measured from the round's start. Waited on in sequence, each under a deadline
    // of its own, the second would report at least a whole budget more than the first (timers
    // never fire early); under one deadline they report the same up to scheduling noise.
    let (a, b) = (verdict.databases[1].elapsed, verdict.databases[2].elapsed);
    assert!(a >= budget && b >= budget, "{a:?}, {b:?}");
    assert!(a.abs_diff(b) < budget, "{a:?} vs {b:?}");
}

#[tokio::test]
async fn no_database_gives_the_documented_answers() {
    let (health, server) = health_server(fast()).await;
    first_rounds(&health).await;
    let client = Client::new();
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["checks"], serde_json::json!({}));
    let full = client.get(server.addr, "/health").await;
    assert_eq!(full.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(full.json()["status"], "unhealthy");
    let pool = client.get(server.addr, "/health/pool").await;
    assert_eq!(pool.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(pool.json()["status"], "degraded");
    assert_eq!(
        pool.json()["pool_info"]["error"],
        "no database is configured"
    );
}

#[tokio::test]
async fn a_frozen_connection_times_out_and_recovers_when_it_thaws() {
    require_postgres!();
    let (proxy, health, _server) = through_proxy(fast()).await;

    proxy.freeze();
    until_timed_out(&health).await;
    assert!(!health.view().readiness.ready);
    assert_eq!(
        proxy.connections(),
        1,
        "the stuck connection is not stacked"
    );

    proxy.thaw();
    let recovered = eventually(support::LIMIT, || async { health.view().readiness.ready }).await;
    assert!(recovered, "{:?}", health.view().readiness);
    assert_eq!(
        proxy.connections(),
        1,
        "the same pooled connection carried on"
    );
}

#[tokio::test]
async fn a_connection_that_stays_dark_is_abandoned_and_replaced() {
    require_postgres!();
    let (proxy, health, _server) = through_proxy(fast().check_limit(Duration::from_secs(1))).await;

    // The pooled connection goes dark for good; new connections still get through.
    proxy.freeze();
    until_timed_out(&health).await;
    // Past the check limit the check is dropped with its connection, and a new one is opened.
    let recovered = eventually(support::LIMIT, || async {
        health.view().readiness.ready && proxy.connections() == 2
    })
    .await;
    assert!(recovered, "{:?}", health.view().readiness);
    let pool = health.view().pool;
    let stats = pool.stats.unwrap();
    assert_eq!(
        stats.connections_closed_broken, 1,
        "the dark connection was discarded: {stats:?}"
    );
}

#[tokio::test]
async fn a_cut_connection_is_discarded_and_replaced() {
    require_postgres!();
    let (proxy, health, _server) =
        through_proxy(fast().readiness_interval(Duration::from_millis(50))).await;

    proxy.cut();
    // The next check finds its pooled connection closed, discards it (the pool counts it
    // broken) and opens a new one (tests/it/recycle.rs shows no round fails meanwhile).
    let recovered = eventually(support::LIMIT, || async {
        let pool = health.view().pool;
        let broken = pool
            .stats
            .is_some_and(|stats| stats.connections_closed_broken >= 1);
        broken && health.view().readiness.ready && proxy.connections() == 2
    })
    .await;
    assert!(
        recovered,
        "{:?} {:?}",
        health.view().readiness,
        health.view().pool
    );
}

/// A check that runs a slow query on the real database: `SELECT pg_sleep(..)`.
#[derive(Debug)]
struct SlowQuery {
    check: PostgresCheck<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>,
    seconds: f64,
}

impl DatabaseCheck for SlowQuery {
    fn vendor(&self) -> &'static str {
        "postgresql"
    }

    fn check(&self) -> CheckFuture {
        let pool = self.check.pool().clone();
        let query = format!("SELECT pg_sleep({})", self.seconds);
        Box::pin(async move {
            let conn = pool
                .get()
                .await
                .map_err(|error| CheckError::new(CheckErrorKind::Refused, error.to_string()))?;
            conn.simple_query(&query)
                .await
                .map_err(|error| CheckError::new(CheckErrorKind::Query, error.to_string()))?;
            Ok(CheckReport::default())
        })
    }
}

#[tokio::test]
async fn a_slow_query_times_out_and_is_not_run_twice_at_once() {
    require_postgres!();
    let application = format!("tower-health-slow-{}", std::process::id());
    let url = format!("{}?application_name={application}", pg_url());
    let manager =
        bb8_postgres::PostgresConnectionManager::new_from_stringlike(&url, tokio_postgres::NoTls)
            .unwrap();
    let pool = bb8::Pool::builder()
        .max_size(4)
        .build(manager)
        .await
        .unwrap();
    // Far longer than the test, and never abandoned (the check limit is an hour): however
    // slowly the rounds come, the first query is still running at the end.
    let check = SlowQuery {
        check: PostgresCheck::new(pool),
        seconds: 60.0,
    };
    let config = fast().check_limit(Duration::from_secs(3600));
    let (health, _server) = health_server(config.database("default", check)).await;
    first_rounds(&health).await;
    assert_eq!(
        health.view().readiness.databases[0].status,
        CheckStatus::TimedOut
    );

    // Many rounds later the first pg_sleep is still the only one running.
    let rounds = health.stats().readiness_rounds;
    let more_rounds = eventually(support::LIMIT, || async {
        health.stats().readiness_rounds >= rounds + 5
    })
    .await;
    assert!(more_rounds, "no five more rounds");
    let inspector = support::pg_client().await;
    let running: i64 = support::bounded(
        "counting the slow queries",
        inspector.query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'SELECT pg_sleep%' AND state = 'active'",
            &[&application],
        ),
    )
    .await
    .unwrap()
    .get(0);
    let checks_started = health.stats().checks_started;
    // Before asserting, so that a failure leaves no query behind either.
    support::bounded(
        "cancelling the slow query",
        inspector.execute(
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        ),
    )
    .await
    .unwrap();
    assert_eq!(running, 1, "one slow query at a time");
    assert_eq!(checks_started, 1);
}

#[tokio::test]
async fn a_panicking_check_is_an_error_not_a_dead_monitor() {
    #[derive(Debug)]
    struct Panics;
    impl DatabaseCheck for Panics {
        fn vendor(&self) -> &'static str {
            "test"
        }
        fn check(&self) -> CheckFuture {
            panic!("boom")
        }
    }
    let (health, monitor) = HealthMonitor::new(fast().database("default", Panics)).unwrap();
    tokio::spawn(monitor.run());
    first_rounds(&health).await;
    let verdict = health.view().health;
    assert_eq!(verdict.status, Status::Error);
    let error = verdict.database.as_ref().unwrap().error.clone().unwrap();
    assert_eq!(error.kind(), CheckErrorKind::Panicked);
    assert!(error.message().contains("boom"), "{error}");
    assert!(health.is_monitor_running());
}

/// What one check of `url` through a pool of its own fails with, bounded: every fault here is
/// answered at once, or within the 300 ms connect timeout.
async fn failure_of(url: &str) -> CheckError {
    let manager = tower_health::postgres::PostgresCheckManager::new(url.parse().unwrap())
        .connect_timeout(Duration::from_millis(300));
    let pool = bb8::Pool::builder()
        .max_size(1)
        .test_on_check_out(false)
        .build_unchecked(manager);
    support::bounded(url, PostgresCheck::with_dedicated_pool(pool).check())
        .await
        .expect_err("the check fails")
}

#[tokio::test]
async fn an_unknown_role_is_auth() {
    require_postgres!();
    // Trust authentication still rejects a role that does not exist: FATAL 28000.
    let error = failure_of(&format!("postgres://no_such_role@{}/postgres", pg_addr())).await;
    assert_eq!(error.kind(), CheckErrorKind::Auth, "{error}");
    assert!(error.message().contains("no_such_role"), "{error}");
}

#[tokio::test]
async fn a_database_that_does_not_exist_is_refused_not_a_query_error() {
    require_postgres!();
    // FATAL 3D000 at startup: a replica pointed at the wrong database name.
    let error = failure_of(&format!("postgres://postgres@{}/no_such_db", pg_addr())).await;
    assert_eq!(error.kind(), CheckErrorKind::Refused, "{error}");
    assert!(error.message().contains("no_such_db"), "{error}");
}

#[tokio::test]
async fn a_listener_that_never_answers_is_a_timeout_reported_timed_out() {
    let stalled = StalledListener::start().await;
    let error = failure_of(&stalled.url()).await;
    assert_eq!(error.kind(), CheckErrorKind::Timeout, "{error}");
    assert!(error.kind().is_timeout());

    // Through the monitor, the check giving up inside the budget: `timed_out`, with its kind.
    let manager = tower_health::postgres::PostgresCheckManager::new(stalled.url().parse().unwrap())
        .connect_timeout(Duration::from_millis(200));
    let pool = bb8::Pool::builder()
        .max_size(1)
        .test_on_check_out(false)
        .build_unchecked(manager);
    let config = fast()
        .readiness_timeout(Duration::from_secs(2))
        .database("default", PostgresCheck::with_dedicated_pool(pool));
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    let body = Client::new().get(server.addr, "/health/ready").await.json();
    assert_eq!(body["checks"]["database_default"], "timed_out", "{body}");
    assert_eq!(
        body["details"]["database_default"]["error_kind"], "timeout",
        "{body}"
    );
}

#[tokio::test]
async fn a_name_that_does_not_resolve_is_dns() {
    // `.invalid` never resolves (RFC 6761), and the resolver says so at once; bounded all the
    // same, so a machine whose resolver hangs fails here rather than waits.
    let error = failure_of("postgres://postgres@no-such-host.invalid:5432/postgres").await;
    assert_eq!(error.kind(), CheckErrorKind::Dns, "{error}");
}
