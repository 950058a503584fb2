//! The README's production code, byte for byte after this header (`tests/it/readme.rs`
//! compares them, and `tests/it/production.rs` runs it with Redis and with PostgreSQL
//! refused): an axum app with its own sqlx 0.9 pool and `redis` connection checked beside
//! them, the admin server with keys and the HAProxy agent.
//!
//! Run with
//!
//! ```not_rust
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres REDIS_URL=redis://127.0.0.1 //!     cargo run --example production --features axum,sqlx-0-9,redis,admin,metrics,haproxy-agent
//! ```
//!
//! then `curl -i http://127.0.0.1:8080/health/ready`.
//!
//! - `DATABASE_URL`, `REDIS_URL`: the application's database and Redis (both needed).
//! - `LISTEN_ADDR`: where the application listens (default `0.0.0.0:8080`).
//! - everything else through `HealthConfig::from_env`, `AdminConfig::from_env` and
//!   `AgentConfig::from_env` (`TOWER_HEALTH_*`: the admin server on `127.0.0.1:9090`, the
//!   agent on `127.0.0.1:9777` by default).
//! - `RUST_LOG`: log filter (default `info`).
// The README's text, not rustfmt's layout: the two stay byte for byte the same.
#![cfg_attr(rustfmt, rustfmt::skip)]

use axum::{Router, routing::get};
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::haproxy::{AgentConfig, AgentServer};
use tower_health::postgres::sqlx_0_9::{SqlxCheck, sqlx}; // the sqlx 0.9 the check takes
use tower_health::{component::ComponentSpec, config::Details, redis::Redis};
use tower_health::{HealthConfig, HealthLayer, HealthMonitor};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env(); // RUST_LOG, else info
    tracing_subscriber::fmt().with_env_filter(filter.unwrap_or_else(|_| "info".into())).init();
    let Err(error) = run().await else { return std::process::ExitCode::SUCCESS };
    eprintln!("error: {error}"); // the Display form: it names the variable or server at fault
    std::process::ExitCode::FAILURE
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // Both connect on first use: down at start, each is a check that fails, not an exit.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(10)
        .connect_lazy(&std::env::var("DATABASE_URL")?)?;
    let redis = redis::Client::open(std::env::var("REDIS_URL")?)?
        .get_connection_manager_lazy(Default::default())?;
    let config = HealthConfig::from_env()? // the TOWER_HEALTH_* variables
        // One connection of its own beside the pool: a check never queues behind your traffic.
        .database("default", SqlxCheck::new(pool.clone()))
        // `PING` on your connection; down, /health says `degraded` and readiness stays 200.
        .component(ComponentSpec::new("cache", Redis::new(redis.clone())));
    let health = HealthMonitor::spawn(config)?; // a setter's bad value is refused here
    // TOWER_HEALTH_ADMIN_BIND=0.0.0.0 is refused without TOWER_HEALTH_ADMIN_KEY; Prometheus
    // scrapes /metrics with TOWER_HEALTH_ADMIN_READONLY_KEY. Closes when the drain is over.
    let admin = AdminConfig::from_env()?.details(Details::Authorized);
    let _admin = AdminServer::new(admin, &health).start().await?;
    let _agent = AgentServer::new(AgentConfig::from_env()?, &health).start().await?; // HAProxy
    let app = Router::new().route("/", get(|| async { "hello" })).with_state(pool);
    let app = HealthLayer::new(&health).details(Details::Never).around(app);
    let addr = std::env::var("LISTEN_ADDR").unwrap_or_else(|_| "0.0.0.0:8080".into());
    let listener = tokio::net::TcpListener::bind(addr).await?; // the kubelet's way in
    health
        .drain()
        .serve(|shutdown| axum::serve(listener, app).with_graceful_shutdown(shutdown))
        .await?;
    Ok(())
}
