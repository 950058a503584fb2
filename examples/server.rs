//! An axum app behind the full tower-health stack: probes on `/health/*`, one ordinary route
//! on `/`, and a drain on SIGTERM or Ctrl-C.
//!
//! Run with
//!
//! ```not_rust
//! cargo run --example server
//! ```
//!
//! then `curl -i http://127.0.0.1:8080/health/ready`.
//!
//! - `LISTEN_ADDR`: where to listen (default `127.0.0.1:8080`).
//! - `DATABASE_URL`: the default database (default
//!   `postgres://postgres@127.0.0.1:5432/postgres`); set but empty, no database at all.
//! - `DATABASE_URL_<NAME>`: further databases, named `<name>` lower-cased.
//! - everything else through `HealthConfig::from_env` and `DrainConfig::from_env`
//!   (`TOWER_HEALTH_*`, or the Python system's `BALDUR_*` names).
//! - `RUST_LOG`: log filter (default `info`).

use std::env;
use std::error::Error;
use std::future::IntoFuture;

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower::make::Shared;
use tower_health::check::PostgresCheck;
use tower_health::{DrainConfig, DrainLayer, HealthConfig, HealthLayer, HealthMonitor, PingLayer};
use tracing_subscriber::EnvFilter;

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();

    let config = with_databases(HealthConfig::from_env()?)?;
    tracing::info!(databases = ?config.database_names().collect::<Vec<_>>(), "checking");
    let health = HealthMonitor::spawn(config);
    let (drain_layer, drain) = DrainLayer::pair(DrainConfig::from_env()?);

    let app = Router::new().route("/", get(|| async { "hello from behind tower-health\n" }));
    // The probe layers wrap the whole router (axum's own layers run after routing), and sit
    // outside the drain so probes are never counted as in-flight work.
    let service = ServiceBuilder::new()
        // axum::serve wants axum's body type.
        .map_response(IntoResponse::into_response)
        .layer(PingLayer::new())
        .layer(HealthLayer::new(health).drain(drain.clone()))
        .layer(drain_layer)
        .service(app);

    let addr = env::var("LISTEN_ADDR").unwrap_or_else(|_| "127.0.0.1:8080".to_owned());
    let listener = TcpListener::bind(&addr).await?;
    tracing::info!("listening on http://{}", listener.local_addr()?);
    let listener = listener.tap_io(|tcp| {
        // axum 0.8's `serve` leaves Nagle on; probes are small writes that should go out now.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY");
        }
    });

    let server =
        axum::serve(listener, Shared::new(service)).with_graceful_shutdown(drain.shutdown_signal());
    // Graceful shutdown waits for every connection; the drain timeout bounds that wait.
    tokio::select! {
        result = server.into_future() => result?,
        drained = drain.drained() => {
            tracing::info!(abandoned = drained.abandoned, elapsed = ?drained.elapsed, "drain over");
        }
    }
    Ok(())
}

/// The default database from `DATABASE_URL` (unless `HealthConfig::from_env` found one and
/// `DATABASE_URL` is unset), the others from `DATABASE_URL_<NAME>`.
fn with_databases(mut config: HealthConfig) -> Result<HealthConfig, Box<dyn Error>> {
    match env::var("DATABASE_URL") {
        Ok(url) if url.trim().is_empty() => config = config.without_databases(),
        Ok(url) => config = config.database("default", PostgresCheck::connect(&url)?),
        Err(_) if config.database_names().next().is_none() => {
            config = config.database("default", PostgresCheck::connect(DEFAULT_DATABASE_URL)?);
        }
        Err(_) => {}
    }
    if env::var("DATABASE_URL").is_ok_and(|url| url.trim().is_empty()) {
        return Ok(config);
    }
    let mut named: Vec<_> = env::vars()
        .filter_map(|(key, url)| {
            Some((key.strip_prefix("DATABASE_URL_")?.to_ascii_lowercase(), url))
        })
        .collect();
    named.sort();
    for (name, url) in named {
        let check = PostgresCheck::connect(&url)
            .map_err(|error| format!("DATABASE_URL_{}: {error}", name.to_ascii_uppercase()))?;
        config = config.database(&name, check);
    }
    Ok(config)
}
