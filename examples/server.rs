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

mod common;

use std::error::Error;
use std::future::IntoFuture;

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower::make::Shared;
use tower_health::{DrainConfig, DrainLayer, HealthLayer, HealthMonitor, PingLayer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    common::init_tracing();
    let health = HealthMonitor::spawn(common::health_config()?);
    let (drain_layer, drain) = DrainLayer::pair(DrainConfig::from_env()?);

    let app = Router::new().route("/", get(|| async { "hello from behind tower-health\n" }));
    // The probe layers wrap the whole router (axum's own layers run after routing), and sit
    // outside the drain so that probes never count as in-flight work.
    let service = ServiceBuilder::new()
        // axum::serve wants axum's body type.
        .map_response(IntoResponse::into_response)
        .layer(PingLayer::new())
        .layer(HealthLayer::new(health).drain(drain.clone()))
        .layer(drain_layer)
        .service(app);

    let listener = TcpListener::bind(common::listen_addr()).await?;
    tracing::info!("listening on http://{}", listener.local_addr()?);
    let listener = listener.tap_io(|tcp| {
        // axum 0.8's `serve` leaves Nagle on; probe answers are small writes that should go
        // out now.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY");
        }
    });

    let server =
        axum::serve(listener, Shared::new(service)).with_graceful_shutdown(drain.shutdown_signal());
    // Graceful shutdown waits for every connection to finish; the drain timeout bounds it.
    tokio::select! {
        result = server.into_future() => result?,
        () = drain.timeout_elapsed() => {
            tracing::warn!(in_flight = drain.in_flight(), "drain timeout: closing what is still open");
        }
    }
    tracing::info!("server closed");
    Ok(())
}
