//! The README's production code (`examples/production.rs`, the README's block byte for byte)
//! run as an operator runs it, a child process on ports of its own: it starts and serves with
//! Redis refused (`/health` degraded, readiness 200, healthy once Redis comes up) and with
//! PostgreSQL refused (it serves, readiness 503), and exits cleanly on SIGTERM.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use http::StatusCode;
use support::child::Example;
use support::redis_server::{RedisServer, redis_url};
use support::{Client, LIMIT, eventually, pg_url, refused_addr};

/// The README's code, with `DATABASE_URL`, `REDIS_URL` and ports of its own (the variables it
/// reads: `LISTEN_ADDR`, the admin server's and the agent's), the health round every second
/// and a short drain; returns it with the application's address.
async fn production(database_url: &str, redis_url: &str) -> (Example, SocketAddr) {
    let (environment, app) = environment(database_url, redis_url).await;
    (Example::spawn("production", &environment), app)
}

/// The environment [`production`] starts the README's code with, and its application's
/// address.
async fn environment(
    database_url: &str,
    redis_url: &str,
) -> (Vec<(&'static str, String)>, SocketAddr) {
    let (app, admin, agent) = (
        refused_addr().await,
        refused_addr().await,
        refused_addr().await,
    );
    let environment = vec![
        ("DATABASE_URL", database_url.to_owned()),
        ("REDIS_URL", redis_url.to_owned()),
        ("LISTEN_ADDR", app.to_string()),
        ("TOWER_HEALTH_ADMIN_PORT", admin.port().to_string()),
        ("TOWER_HEALTH_AGENT_PORT", agent.port().to_string()),
        ("TOWER_HEALTH_HEALTH_INTERVAL", "1s".into()),
        ("TOWER_HEALTH_DRAIN_DELAY", "200ms".into()),
        ("TOWER_HEALTH_DRAIN_TIMEOUT", "5s".into()),
    ];
    (environment, app)
}

/// Waits until `path` on `addr` answers `status` with a body whose `status` is `word` (any
/// body with `None`); fails with the last answer after [`LIMIT`].
async fn answers(addr: SocketAddr, path: &str, status: StatusCode, word: Option<&str>) {
    let client = Client::new();
    let last = std::sync::Mutex::new(String::new());
    let reached = eventually(LIMIT, || async {
        let (reached, answer) = match client.try_get(addr, path).await {
            Ok(reply) => (
                reply.status == status && word.is_none_or(|word| reply.json()["status"] == word),
                format!("{} {}", reply.status, reply.text()),
            ),
            Err(error) => (false, error),
        };
        *last.lock().unwrap() = answer;
        reached
    })
    .await;
    let last = last.lock().unwrap();
    assert!(
        reached,
        "{path}: not {status} {word:?} within {LIMIT:?}; last: {last}"
    );
}

/// SIGTERM: the drain, then a clean exit (0), with no error printed (the README's code logs
/// to stdout and prints an error that ends it to stderr).
async fn stops_cleanly(example: Example) {
    example.sigterm();
    let (status, stderr) = example.exit_within(Duration::from_secs(30)).await;
    assert!(status.success(), "{status}: {stderr}");
    assert_eq!(stderr, "");
}

#[tokio::test]
async fn with_redis_refused_it_serves_degraded_and_ready_then_healthy_once_redis_is_up() {
    require_postgres!();
    require_redis!();
    let mut redis = RedisServer::reserve().await;
    let (example, app) = production(&pg_url(), &redis.url()).await;
    answers(app, "/health/ready", StatusCode::OK, Some("ready")).await;
    answers(app, "/health", StatusCode::OK, Some("degraded")).await;
    // Still serving, still ready: Redis is not critical, as the README's comment says.
    answers(app, "/", StatusCode::OK, None).await;
    answers(app, "/health/ready", StatusCode::OK, Some("ready")).await;
    // The lazy connection connects once Redis is there.
    redis.start().await;
    answers(app, "/health", StatusCode::OK, Some("healthy")).await;
    stops_cleanly(example).await;
}

#[tokio::test]
async fn with_postgres_refused_it_serves_and_readiness_fails() {
    require_redis!();
    let refused = refused_addr().await;
    let database_url = format!("postgres://postgres@{refused}/postgres");
    let (example, app) = production(&database_url, &redis_url()).await;
    answers(app, "/health/live", StatusCode::OK, None).await;
    answers(
        app,
        "/health/ready",
        StatusCode::SERVICE_UNAVAILABLE,
        Some("not_ready"),
    )
    .await;
    answers(app, "/", StatusCode::OK, None).await;
    stops_cleanly(example).await;
}

/// Issue 36 D: what the README's code prints when it cannot start, as a person reads it (the
/// Display form, as the examples print it), never a `Debug` dump: the variable and its value,
/// or which server's port is taken.
#[tokio::test]
async fn a_start_up_error_names_the_variable_or_the_server_at_fault() {
    let refused = refused_addr().await;
    let (mut environment, _) = environment(
        &format!("postgres://postgres@{refused}/postgres"),
        &format!("redis://{refused}"),
    )
    .await;
    let mut bad_value = environment.clone();
    bad_value.push(("TOWER_HEALTH_READINESS_TIMEOUT", "soon".into()));
    let (status, stderr) = Example::spawn("production", &bad_value)
        .exit_within(LIMIT)
        .await;
    assert!(!status.success(), "{status}");
    assert!(
        stderr.starts_with("error: TOWER_HEALTH_READINESS_TIMEOUT=\"soon\": "),
        "{stderr}"
    );
    assert!(!stderr.contains("ConfigError {"), "{stderr}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    environment.retain(|(name, _)| *name != "TOWER_HEALTH_ADMIN_PORT");
    environment.push(("TOWER_HEALTH_ADMIN_PORT", port.to_string()));
    let (status, stderr) = Example::spawn("production", &environment)
        .exit_within(LIMIT)
        .await;
    assert!(!status.success(), "{status}");
    assert!(
        stderr.starts_with(&format!(
            "error: the admin server cannot bind 127.0.0.1:{port}: "
        )),
        "{stderr}"
    );
}
