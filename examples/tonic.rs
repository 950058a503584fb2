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
//! `DATABASE_URL_<NAME>`, `TOWER_HEALTH_*` (or `BALDUR_*`), `RUST_LOG`. And
//! `GREETER_DELAY_MS`: every `SayHello` takes that much longer (an instance slower than its
//! peers, as the load feedback's tests and benches start one).
//!
//! Load feedback: with `TOWER_HEALTH_LOAD_CAPACITY=<calls in flight>`, every call's trailers
//! carry an ORCA load report (`endpoint-load-metrics-bin`), and
//! `xds.service.orca.v3.OpenRcaService` streams them out of band: what gRPC's
//! `weighted_round_robin` weighs the instances by (see the gRPC guide).
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
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tower_health::DrainLayer;
use tower_health::grpc::{HealthService, OrcaService};
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

    // Out-of-band load reports (`UNIMPLEMENTED` unless TOWER_HEALTH_LOAD_CAPACITY is set).
    let orca = OrcaService::new(&monitor);

    let listener = TcpListener::bind(common::listen_addr()).await?;
    let addr = listener.local_addr()?;
    tracing::info!("listening on {addr} (gRPC over HTTP/2; HTTP probes over HTTP/1.1 and h2c)");
    let greeter = Greeter::new(&drain, addr).slower_by(greeter_delay()?);
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
                .add_service(orca.server())
                // The drain counts the application's calls, not the health streams: it
                // wraps the greeter alone (a `Drain` keeps the name tonic routes by). The
                // greeter registers its streams with the drain too, which tells each when
                // to close.
                .add_service(drain_layer.layer(GreeterServer::new(greeter)))
                // When the drain delay is over: the listener closes, HTTP/2 clients get a
                // GOAWAY, the calls in flight finish, and the health streams end.
                .serve_with_incoming_shutdown(incoming, shutdown)
        })
        .await?;
    Ok(())
}

/// `GREETER_DELAY_MS`: how much longer every `SayHello` takes, default none.
fn greeter_delay() -> Result<Duration, Box<dyn Error>> {
    match std::env::var("GREETER_DELAY_MS") {
        Err(_) => Ok(Duration::ZERO),
        Ok(ms) => match ms.trim().parse::<u16>() {
            Ok(ms) if ms <= 10_000 => Ok(Duration::from_millis(ms.into())),
            _ => Err(format!("GREETER_DELAY_MS={ms:?}: expected milliseconds, 0 to 10000").into()),
        },
    }
}
