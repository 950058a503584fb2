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
//! `DATABASE_URL_<NAME>`, `TOWER_HEALTH_*` (or `BALDUR_*`), `RUST_LOG`; and `CLIENT_TIMEOUT`
//! (default `10s`): how long a client may take to send a request head, or leave an answer
//! unread, before its connection is closed.
//!
//! This example owns its accept loop, so bounding slow clients is its job: hyper's
//! `header_read_timeout` covers reading, [`WriteTimeout`] covers a client that pipelines
//! requests and never reads the answers (which no read timeout sees).

mod common;

use std::convert::Infallible;
use std::error::Error;
use std::pin::pin;
use std::process::ExitCode;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::{ServiceBuilder, service_fn};
use tower_health::config::{MAX_DURATION, MIN_DURATION};
use tower_health::io::WriteTimeout;
use tower_health::{DrainConfig, HealthLayer, HealthMonitor};
use tower_health::{DrainHandle, DrainLayer};

#[tokio::main]
async fn main() -> ExitCode {
    common::run(serve()).await
}

async fn serve() -> Result<(), Box<dyn Error>> {
    common::init_tracing();
    let client_timeout = client_timeout()?;
    let monitor = HealthMonitor::spawn(common::health_config()?)?;
    let drain = DrainHandle::new(DrainConfig::from_env()?)?;
    monitor.follow_drain(&drain);
    let health = HealthLayer::new(&monitor);
    let drain_layer = DrainLayer::new(&drain);

    let app = service_fn(|_request: Request<Incoming>| async {
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
            b"hello from hyper\n",
        ))))
    });
    // The health layer answers every probe (ping included) before the app; the drain layer
    // below it counts the app's requests.
    let service = ServiceBuilder::new()
        .layer(health)
        .layer(drain_layer)
        .service(app);

    let listener = TcpListener::bind(common::listen_addr()).await?;
    tracing::info!("listening on http://{}", listener.local_addr()?);
    drain
        .serve(|shutdown| async move {
            let graceful = GracefulShutdown::new();
            let mut shutdown = pin!(shutdown);
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
                        let service = TowerToHyperService::new(service.clone());
                        let stream = WriteTimeout::new(stream, client_timeout);
                        let connection = hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(client_timeout)
                            .serve_connection(TokioIo::new(stream), service);
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
            // Stop accepting; let the open connections finish (`serve` bounds this by the
            // drain timeout).
            drop(listener);
            graceful.shutdown().await;
            Ok::<_, Infallible>(())
        })
        .await?;
    Ok(())
}

/// `CLIENT_TIMEOUT`, a human duration such as `10s` or `500ms`.
fn client_timeout() -> Result<Duration, Box<dyn Error>> {
    let Ok(value) = std::env::var("CLIENT_TIMEOUT") else {
        return Ok(Duration::from_secs(10));
    };
    match humantime::parse_duration(&value) {
        Ok(timeout) if (MIN_DURATION..=MAX_DURATION).contains(&timeout) => Ok(timeout),
        Ok(_) => Err(format!("CLIENT_TIMEOUT={value:?}: expected from 1ms to 1year").into()),
        Err(error) => Err(format!("CLIENT_TIMEOUT={value:?}: {error}").into()),
    }
}
