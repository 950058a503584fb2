//! A tonic server with a gRPC service of its own (`greeter.v1.Greeter`) behind the
//! tower-health stack, probed both ways on one port: the HTTP probes (`/health/*`, over
//! HTTP/1.1 for kubelet's `httpGet`, and h2c) and `grpc.health.v1` (`Check`, `Watch`, `List`)
//! from the same view; a drain on SIGTERM or Ctrl-C.
//!
//! Run with
//!
//! ```not_rust
//! cargo run --example tonic --features grpc
//! ```
//!
//! then, on another terminal,
//!
//! ```not_rust
//! curl -i http://127.0.0.1:8080/health/ready
//! grpcurl -plaintext -import-path proto -proto grpc/health/v1/health.proto \
//!     127.0.0.1:8080 grpc.health.v1.Health/List
//! grpcurl -plaintext -import-path proto -proto greeter/v1/greeter.proto \
//!     -d '{"name": "you"}' 127.0.0.1:8080 greeter.v1.Greeter/SayHello
//! grpcurl -plaintext -import-path proto -proto greeter/v1/greeter.proto \
//!     -d '{"name": "you"}' 127.0.0.1:8080 greeter.v1.Greeter/KeepGreeting
//! ```
//!
//! `KeepGreeting` is a server stream registered with the drain
//! (`DrainHandle::long_lived`): on SIGTERM it ends with `UNAVAILABLE` (which clients retry)
//! at its turn in the drain's close window, the streams of all clients spread over it.
//!
//! Settings as for the `server` example: `LISTEN_ADDR` (default `127.0.0.1:8080`),
//! `DATABASE_URL` (default the local PostgreSQL; set but empty, no database),
//! `DATABASE_URL_<NAME>`, `TOWER_HEALTH_*` (or `BALDUR_*`), `RUST_LOG`.
//!
//! `cargo run --example tonic --features grpc -- --health-check` asks a running instance's
//! `grpc.health.v1.Health/Check` and exits 0 for `SERVING`, 1 otherwise: a container health
//! check without `grpc_health_probe`. `HEALTH_CHECK_URL` says what it asks: by default
//! `grpc://<LISTEN_ADDR>`, the service `""` (readiness);
//! `grpc://127.0.0.1:8080/greeter.v1.Greeter` asks for the greeter, and
//! `http://127.0.0.1:8080/health/ready` over HTTP.
//!
//! gRPC health services: `""` (readiness), `database/<name>`, `component/<name>`, and
//! `greeter.v1.Greeter`, which this example sets.

mod common;
mod greeter;

use std::error::Error;
use std::process::ExitCode;

use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tower_health::DrainLayer;
use tower_health::grpc::HealthService;
use tower_health::{HealthLayer, HealthMonitor};
use tower_layer::Layer;

use self::greeter::{Greeter, GreeterServer};

fn main() -> ExitCode {
    // `tonic --health-check`: a container health check of a running instance that asks its
    // grpc.health.v1 `Check("")` (readiness), for images without grpc_health_probe.
    if let Some(code) = common::health_check_flag(|addr| format!("grpc://{addr}")) {
        return code;
    }
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(common::run(serve()))
}

async fn serve() -> Result<(), Box<dyn Error>> {
    common::init_tracing();
    let monitor = HealthMonitor::spawn(common::health_config()?)?;
    let drain = monitor.drain().clone();
    let health = HealthLayer::new(&monitor);
    let drain_layer = DrainLayer::new(&drain);

    // grpc.health.v1 from the monitor the HTTP layer answers from: the two never disagree.
    let grpc_health = HealthService::new(&monitor);
    grpc_health
        .reporter()
        .set_serving::<GreeterServer<Greeter>>();

    let listener = TcpListener::bind(common::listen_addr()).await?;
    tracing::info!(
        "listening on {} (gRPC over HTTP/2; HTTP probes over HTTP/1.1 and h2c)",
        listener.local_addr()?
    );
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    drain
        .serve(|shutdown| {
            Server::builder()
                // kubelet's `httpGet` (and most load balancers' checks) speak HTTP/1.1;
                // tonic accepts only HTTP/2 unless told otherwise.
                .accept_http1(true)
                // Around every service: the probes (ping included) are answered before routing.
                .layer(health)
                .add_service(grpc_health.server())
                // The drain counts the application's calls, not the health streams: it
                // wraps the greeter alone (a `Drain` keeps the name tonic routes by). The
                // greeter registers its streams with the drain too, which tells each when
                // to close.
                .add_service(drain_layer.layer(GreeterServer::new(Greeter::new(&drain))))
                // When the drain delay is over: the listener closes, HTTP/2 clients get a
                // GOAWAY, the calls in flight finish, and the health streams end.
                .serve_with_incoming_shutdown(incoming, shutdown)
        })
        .await?;
    Ok(())
}
