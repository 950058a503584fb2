//! Connections the server closed between checks, against the real PostgreSQL: backends
//! terminated under the checks, `idle_session_timeout` closing every idle connection, and
//! the race where the server has closed a connection the client still believes open. None of
//! them is an outage; a connection that fails as it is opened still is one.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use http::StatusCode;
use support::{Client, eventually, fast, first_rounds, health_server, pg_client, postgres};
use tower_health::check::{CheckError, CheckErrorKind, DatabaseCheck};
use tower_health::postgres::bb8::{self, ManageConnection};
use tower_health::postgres::{PostgresCheck, PostgresCheckManager, PostgresConnection};
use tower_health::postgres::{bb8_postgres, tokio_postgres};
use tower_health::verdict::CheckStatus;
use tower_health::{HealthConfig, HealthHandle};

/// An `application_name` of this test's own, so that parallel tests never terminate each
/// other's connections.
fn application_name(test: &str) -> String {
    format!("th_recycle_{}_{test}", std::process::id())
}

/// Terminates every backend named `application_name`; returns how many were terminated.
async fn terminate(inspector: &tokio_postgres::Client, application_name: &str) -> i64 {
    inspector
        .query_one(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&application_name],
        )
        .await
        .expect("terminate the test's backends")
        .get(0)
}

/// Polls `/health/ready` every 20 ms for 5 s and returns the answers that were not 200 (and
/// requests that failed), for the assertion to show.
async fn readiness_failures(server: &support::TestServer) -> Vec<String> {
    let client = Client::new();
    let mut failures = Vec::new();
    for _ in 0..250 {
        let reply = tokio::time::timeout(
            Duration::from_secs(5),
            client.try_get(server.addr, "/health/ready"),
        )
        .await;
        match reply {
            Ok(Ok(reply)) if reply.status == StatusCode::OK => {}
            Ok(Ok(reply)) => failures.push(format!("{}: {}", reply.status, reply.text())),
            Ok(Err(error)) => failures.push(error),
            Err(_) => failures.push("no answer within 5 s".to_owned()),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    failures
}

/// Serves readiness for `check` and terminates its backends every ~300 ms while readiness is
/// polled; returns the health handle and how many backends were terminated.
async fn poll_under_terminations(
    config: HealthConfig,
    application_name: String,
) -> (HealthHandle, i64, Vec<String>) {
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    assert!(
        health.view().readiness.ready,
        "{:?}",
        health.view().readiness
    );

    let stop = Arc::new(AtomicBool::new(false));
    let terminator = tokio::spawn({
        let stop = stop.clone();
        async move {
            let inspector = pg_client().await;
            let mut terminated = 0;
            while !stop.load(Ordering::SeqCst) {
                terminated += terminate(&inspector, &application_name).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            terminated
        }
    });
    let failures = readiness_failures(&server).await;
    stop.store(true, Ordering::SeqCst);
    let terminated = tokio::time::timeout(Duration::from_secs(10), terminator)
        .await
        .expect("the terminator stops")
        .expect("the terminator does not panic");
    (health, terminated, failures)
}

#[tokio::test]
async fn terminated_backends_never_fail_readiness() {
    require_postgres!();
    let name = application_name("terminated");
    let check = postgres(&support::pg_url_with(&format!("application_name={name}")));
    // A generous deadline: what is tested is that a closed connection is not an outage, not
    // how fast a loaded machine reconnects.
    let config = fast()
        .readiness_timeout(Duration::from_secs(2))
        .database("default", check);
    let (health, terminated, failures) = poll_under_terminations(config, name).await;
    assert!(terminated > 0, "no backend was terminated");
    assert!(
        failures.is_empty(),
        "{} 503s: {failures:#?}",
        failures.len()
    );
    let stats = health.view().pool.stats.unwrap();
    assert!(
        stats.connections_closed_broken > 0 && stats.connections_created > 1,
        "{stats:?}"
    );
}

#[tokio::test]
async fn terminated_reserved_connections_never_fail_readiness() {
    require_postgres!();
    let name = application_name("reserved");
    let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
        support::pg_url_with(&format!("application_name={name}")),
        tokio_postgres::NoTls,
    )
    .unwrap();
    let pool = bb8::Pool::builder()
        .max_size(4)
        .connection_timeout(Duration::from_secs(3))
        .build(manager)
        .await
        .unwrap();
    let config = fast()
        .readiness_timeout(Duration::from_secs(2))
        .database("default", PostgresCheck::new(pool));
    let (health, terminated, failures) = poll_under_terminations(config, name).await;
    assert!(terminated > 0, "no backend was terminated");
    assert!(
        failures.is_empty(),
        "{} 503s: {failures:#?}",
        failures.len()
    );
    let stats = health.view().pool.stats.unwrap();
    assert!(stats.reserved_connections_opened > 1, "{stats:?}");
    assert_eq!(
        stats.connections, 0,
        "the check never used the pool: {stats:?}"
    );
}

#[tokio::test]
async fn idle_session_timeout_never_fails_readiness() {
    require_postgres!();
    let name = application_name("idle_timeout");
    // The server closes every connection idle for 200 ms; checks come every 400 ms, so each
    // one finds its connection closed.
    let url = support::pg_url_with(&format!(
        "application_name={name}&options=-c%20idle_session_timeout%3D200"
    ));
    let config = fast()
        .readiness_interval(Duration::from_millis(400))
        .health_interval(Duration::from_secs(1))
        .readiness_timeout(Duration::from_secs(2))
        .database("default", postgres(&url));
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    let failures = readiness_failures(&server).await;
    assert!(
        failures.is_empty(),
        "{} 503s: {failures:#?}",
        failures.len()
    );
    let stats = health.view().pool.stats.unwrap();
    assert!(
        stats.connections_closed_broken >= 3 && stats.connections_created >= 4,
        "connections are replaced: {stats:?}"
    );
    assert!(health.view().readiness.ready);
}

/// The race where the server has closed a connection and the client has not noticed yet,
/// made deterministic: a manager whose connections always claim to be open, and that can
/// terminate each new connection's backend before handing it out.
struct Unnoticed {
    inner: PostgresCheckManager,
    connects: Arc<AtomicUsize>,
    /// Terminate every new connection before handing it out.
    terminate_new: bool,
}

/// A connection of the manager's own, wrapped.
struct UnnoticedClient(<PostgresCheckManager as ManageConnection>::Connection);

impl PostgresConnection for UnnoticedClient {
    fn client(&self) -> &tokio_postgres::Client {
        self.0.client()
    }

    fn mark_broken(&self) {
        self.0.mark_broken();
    }

    fn is_closed(&self) -> bool {
        false
    }
}

impl ManageConnection for Unnoticed {
    type Connection = UnnoticedClient;
    type Error = CheckError;

    async fn connect(&self) -> Result<UnnoticedClient, CheckError> {
        self.connects.fetch_add(1, Ordering::SeqCst);
        let conn = self.inner.connect().await?;
        if self.terminate_new {
            terminate_and_wait(&conn).await;
        }
        Ok(UnnoticedClient(conn))
    }

    async fn is_valid(&self, _: &mut UnnoticedClient) -> Result<(), CheckError> {
        Ok(())
    }

    fn has_broken(&self, conn: &mut UnnoticedClient) -> bool {
        self.inner.has_broken(&mut conn.0)
    }
}

/// Terminates `conn`'s backend and waits until the client has seen it close.
async fn terminate_and_wait(conn: &tokio_postgres::Client) {
    let pid: i32 = conn
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let terminated: bool = pg_client()
        .await
        .query_one("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap()
        .get(0);
    assert!(terminated);
    let closed = eventually(Duration::from_secs(5), || async { conn.is_closed() }).await;
    assert!(closed, "the client saw its backend terminated");
}

fn unnoticed(name: &str, terminate_new: bool) -> (Unnoticed, Arc<AtomicUsize>) {
    let config: tokio_postgres::Config = support::pg_url_with(&format!("application_name={name}"))
        .parse()
        .unwrap();
    let connects = Arc::new(AtomicUsize::new(0));
    let manager = Unnoticed {
        inner: PostgresCheckManager::new(config),
        connects: connects.clone(),
        terminate_new,
    };
    (manager, connects)
}

fn one_connection_pool(manager: Unnoticed) -> bb8::Pool<Unnoticed> {
    bb8::Pool::builder()
        .max_size(1)
        .test_on_check_out(false)
        .retry_connection(false)
        .build_unchecked(manager)
}

#[tokio::test]
async fn a_kept_connection_gone_under_the_query_is_retried_once_on_a_new_one() {
    require_postgres!();
    for reserved in [false, true] {
        let name = application_name(if reserved {
            "gone_reserved"
        } else {
            "gone_pooled"
        });
        let (manager, connects) = unnoticed(&name, false);
        let pool = one_connection_pool(manager);
        let check = if reserved {
            PostgresCheck::new(pool)
        } else {
            PostgresCheck::with_dedicated_pool(pool)
        };
        check
            .check()
            .await
            .expect("the first check opens a connection");
        assert_eq!(connects.load(Ordering::SeqCst), 1);

        // The kept connection's backend goes; the client is told, but the connection still
        // claims to be open, so the check only learns it from the failed query.
        let inspector = pg_client().await;
        assert_eq!(
            terminate(&inspector, &name).await,
            1,
            "reserved: {reserved}"
        );
        check
            .check()
            .await
            .unwrap_or_else(|error| panic!("reserved: {reserved}: {error}"));
        assert_eq!(connects.load(Ordering::SeqCst), 2, "reserved: {reserved}");
        let stats = check.pool_stats().unwrap();
        if reserved {
            assert_eq!(stats.reserved_connections_opened, 2, "{stats:?}");
        } else {
            assert_eq!(stats.connections_closed_broken, 1, "{stats:?}");
        }
    }
}

#[tokio::test]
async fn a_connection_opened_by_the_check_is_not_retried() {
    require_postgres!();
    for reserved in [false, true] {
        let name = application_name(if reserved {
            "fresh_reserved"
        } else {
            "fresh_pooled"
        });
        let (manager, connects) = unnoticed(&name, true);
        let pool = one_connection_pool(manager);
        let check = if reserved {
            PostgresCheck::new(pool)
        } else {
            PostgresCheck::with_dedicated_pool(pool)
        };
        let error = check
            .check()
            .await
            .expect_err("its connection was terminated");
        assert_eq!(error.kind(), CheckErrorKind::Closed, "{error}");
        assert_eq!(
            connects.load(Ordering::SeqCst),
            1,
            "reserved: {reserved}: a new connection's failure is the database's"
        );
    }
}

#[tokio::test]
async fn a_refused_database_fails_in_the_first_round_through_a_reserved_connection() {
    let addr = support::refused_addr().await;
    let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
        format!("postgres://postgres@{addr}/postgres"),
        tokio_postgres::NoTls,
    )
    .unwrap();
    // bb8's own 30 s wait would read `timed_out`; the reserved connection does not wait in it.
    let pool = bb8::Pool::builder().build_unchecked(manager);
    let config = fast().database("default", PostgresCheck::new(pool));
    let (health, _server) = health_server(config).await;
    first_rounds(&health).await;
    let outcome = health.view().readiness.databases[0].clone();
    assert_eq!(outcome.status, CheckStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.error.unwrap().kind(), CheckErrorKind::Refused);
}

/// Load feedback reads the default database's pool: every connection held by the
/// application and checkouts queued behind them read as a full process, whatever few requests
/// it holds; readiness passes all along (the check's connection is its own).
#[tokio::test]
async fn a_queue_in_front_of_the_default_pool_reads_as_load() {
    require_postgres!();
    let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
        support::pg_url(),
        tokio_postgres::NoTls,
    )
    .unwrap();
    let pool = bb8::Pool::builder()
        .max_size(2)
        .connection_timeout(Duration::from_secs(60))
        .build(manager)
        .await
        .unwrap();
    // A capacity no request count comes near: the pool alone moves the estimate.
    let config = fast()
        .load_capacity(1_000)
        .database("default", PostgresCheck::new(pool.clone()));
    let health = tower_health::HealthMonitor::spawn(config).unwrap();
    first_rounds(&health).await;
    let idle = health.utilization().unwrap();
    assert!(idle < 0.05, "an idle pool: {idle}");

    // Both connections taken, two checkouts waiting behind them.
    let held = [pool.get().await.unwrap(), pool.get().await.unwrap()];
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.get().await.map(drop) })
        })
        .collect();
    // 95% of the way in three time constants (6 s); the bound only guards against a hang.
    let full = eventually(support::LIMIT, || async {
        health.utilization().unwrap() > 0.9
    })
    .await;
    assert!(full, "utilization {:?}", health.utilization());
    assert!(health.view().readiness.ready, "load is no failure");

    drop(held);
    for waiter in waiting {
        waiter.await.unwrap().unwrap();
    }
    let eased = eventually(support::LIMIT, || async {
        health.utilization().unwrap() < 0.1
    })
    .await;
    assert!(eased, "utilization {:?}", health.utilization());
}
