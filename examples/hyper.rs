//! The same stack as the `server` example on hyper and hyper-util alone, without axum:
//! tower-health in front of a plain `service_fn`, a graceful shutdown driven by the drain.
//!
//! Run with
//!
//! ```not_rust
//! cargo run --example hyper
//! ```
//!
//! Settings as for the `server` example: `LISTEN_ADDR`, `DATABASE_URL`,
//! `DATABASE_URL_<NAME>`, `TOWER_HEALTH_*` (or `BALDUR_*`), `RUST_LOG`.

mod common;

use std::convert::Infallible;
use std::error::Error;
use std::pin::pin;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::{ServiceBuilder, service_fn};
use tower_health::{DrainConfig, DrainLayer, HealthLayer, HealthMonitor, PingLayer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    common::init_tracing();
    let health = HealthMonitor::spawn(common::health_config()?);
    let (drain_layer, drain) = DrainLayer::pair(DrainConfig::from_env()?);

    let app = service_fn(|_request: Request<Incoming>| async {
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
            b"hello from hyper\n",
        ))))
    });
    let service = ServiceBuilder::new()
        .layer(PingLayer::new())
        .layer(HealthLayer::new(health).drain(drain.clone()))
        .layer(drain_layer)
        .service(app);

    let listener = TcpListener::bind(common::listen_addr()).await?;
    tracing::info!("listening on http://{}", listener.local_addr()?);
    let graceful = GracefulShutdown::new();
    let mut shutdown = pin!(drain.shutdown_signal());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        continue;
                    }
                };
                if let Err(error) = stream.set_nodelay(true) {
                    tracing::warn!(%error, "cannot set TCP_NODELAY");
                }
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service.clone()));
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    // Stop accepting; let the open connections finish, within the drain timeout.
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("every connection closed"),
        () = drain.timeout_elapsed() => {
            tracing::warn!(in_flight = drain.in_flight(), "drain timeout: closing what is still open");
        }
    }
    Ok(())
}
