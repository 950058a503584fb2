//! `SqlxCheck` against the real PostgreSQL: ready, refused, and the pool's figures.

mod support;

use std::time::Duration;

use http::StatusCode;
use support::{
    Client, LIMIT, eventually, fast, first_rounds, health_server, pg_addr, pg_url, refused_addr,
};
use tower_health::check::{CheckErrorKind, SqlxCheck};

fn sqlx_check(url: &str) -> SqlxCheck {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(2))
        .connect_lazy(url)
        .expect("the URL parses");
    SqlxCheck::new(pool)
}

#[tokio::test]
async fn an_sqlx_pool_is_checked_and_its_figures_reported() {
    require_postgres!();
    let (health, server) =
        health_server(fast().database("default", sqlx_check(&pg_url())).unwrap()).await;
    first_rounds(&health).await;
    let ready = eventually(LIMIT, || async { health.readiness().ready }).await;
    assert!(ready, "{:?}", health.readiness());
    let client = Client::new();
    let reply = client.get(server.addr, "/health/pool").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["pool_info"]["vendor"], "postgresql");
    assert_eq!(body["pool_info"]["max_size"], 1);
    assert_eq!(body["pool_info"]["connections"], 1);
    let health_body = client.get(server.addr, "/health").await.json();
    let target = health_body["details"]["database"]["target"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(target.ends_with("/postgres"), "{target}");
}

#[tokio::test]
async fn a_refused_database_is_not_ready_and_refused() {
    let addr = refused_addr().await;
    let url = format!("postgres://postgres:hunter2@{addr}/postgres");
    let (health, _server) =
        health_server(fast().database("default", sqlx_check(&url)).unwrap()).await;
    first_rounds(&health).await;
    let readiness = health.readiness();
    assert!(!readiness.ready);
    let error = readiness.databases[0].error.clone().expect("an error");
    // Refused, in the first round, with the cause: not a pool timeout.
    assert_eq!(error.kind(), CheckErrorKind::Refused, "{error}");
    assert!(error.message().contains("refused"), "{error}");
    assert!(!error.message().contains("hunter2"), "{error}");
}

#[tokio::test]
async fn an_unknown_role_is_auth() {
    require_postgres!();
    // Trust authentication still rejects a role that does not exist: FATAL 28000.
    let url = format!("postgres://no_such_role@{}/postgres", pg_addr());
    let (health, _server) =
        health_server(fast().database("default", sqlx_check(&url)).unwrap()).await;
    first_rounds(&health).await;
    let outcome = health.readiness().databases[0].clone();
    let error = outcome.error.expect("an error");
    assert_eq!(error.kind(), CheckErrorKind::Auth, "{error}");
    assert!(error.message().contains("no_such_role"), "{error}");
}
