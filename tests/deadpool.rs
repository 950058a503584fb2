//! `DeadpoolCheck` against the real PostgreSQL: ready, refused, and the pool's figures.

mod support;

use http::StatusCode;
use support::{Client, LIMIT, eventually, fast, first_rounds, health_server, pg_addr, pg_url};
use tower_health::check::DeadpoolCheck;

fn deadpool(url: &str) -> DeadpoolCheck {
    let config: deadpool_postgres::tokio_postgres::Config = url.parse().unwrap();
    let manager = deadpool_postgres::Manager::new(config, deadpool_postgres::tokio_postgres::NoTls);
    let pool = deadpool_postgres::Pool::builder(manager)
        .max_size(1)
        .build()
        .unwrap();
    DeadpoolCheck::new(pool)
}

#[tokio::test]
async fn a_deadpool_pool_is_checked_and_its_figures_reported() {
    require_postgres!();
    let (health, server) =
        health_server(fast().database("default", deadpool(&pg_url())).unwrap()).await;
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
    assert_eq!(
        client.get(server.addr, "/health").await.json()["status"],
        "healthy"
    );
}

#[tokio::test]
async fn a_refused_database_is_not_ready() {
    let refused = support::refused_addr().await;
    let url = format!("postgres://postgres@{refused}/postgres");
    let (health, server) = health_server(fast().database("default", deadpool(&url)).unwrap()).await;
    first_rounds(&health).await;
    let reply = Client::new().get(server.addr, "/health/ready").await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    let body = reply.json();
    assert_eq!(body["checks"]["database_default"], "not_ready", "{body}");
    assert_eq!(
        body["details"]["database_default"]["error_kind"], "refused",
        "{body}"
    );
}

#[tokio::test]
async fn an_unknown_role_is_auth() {
    require_postgres!();
    // Trust authentication still rejects a role that does not exist: FATAL 28000.
    let url = format!("postgres://no_such_role@{}/postgres", pg_addr());
    let (health, server) = health_server(fast().database("default", deadpool(&url)).unwrap()).await;
    first_rounds(&health).await;
    let body = Client::new().get(server.addr, "/health/ready").await.json();
    assert_eq!(body["checks"]["database_default"], "not_ready", "{body}");
    assert_eq!(
        body["details"]["database_default"]["error_kind"], "auth",
        "{body}"
    );
}
