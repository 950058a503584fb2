//! gRPC health checking (`grpc.health.v1`: `Check`, `Watch` and `List`) from the same view as
//! the HTTP probes, for tonic servers.
//!
//! [`HealthService`] reads the [view](crate::view) the HTTP layers and the admin server answer
//! from, so HTTP and gRPC never disagree, and a drain reaches both at the same instant. It
//! never runs a check: `Check` costs what an HTTP probe costs. Kubernetes' `grpc:` probe calls
//! `Check` with the service `""`.
//!
//! # Services
//!
//! | service | answers | `SERVING` when |
//! |---|---|---|
//! | `""` | this process's readiness (`/health/ready`) | readiness passes; `UNKNOWN` before the first round |
//! | `database/<name>` | each configured database (`database/default`, ...) | its readiness outcome passes: ready, or timed out under [`FailDirection::Ready`](crate::config::FailDirection::Ready) |
//! | `component/<name>` | each [component](crate::component) | healthy or degraded; unhealthy is `NOT_SERVING`, unknown `UNKNOWN` |
//! | `group/<name>` | each [health group](crate::config::HealthGroup) | the group passes (judged as readiness is: held, draining or stale, `NOT_SERVING`) |
//! | any other name | what the application set with [`HealthReporter::set_service_status`] | as set |
//!
//! A database or component answers `UNKNOWN` until its first round, `NOT_SERVING` once its
//! verdict is stale. An optional database answers for itself, although readiness (`""`) does
//! not count it.
//!
//! - **Drain.** From the moment the drain starts, every service answers `NOT_SERVING` to
//!   `Check`, and every `Watch` stream receives `NOT_SERVING`.
//! - **Unknown names.** `Check` answers `NOT_FOUND`. `Watch` sends `SERVICE_UNKNOWN` and keeps
//!   the stream open; if the service appears, it sends its status.
//! - **`List`** returns every service, or `RESOURCE_EXHAUSTED` past 100 of them.
//! - **`Watch`** is pushed by the monitor's publications (and the application's statuses),
//!   never polled, and sends only changes; a slow reader gets the latest status, not a queue.
//!   Streams end when the server's graceful shutdown begins (see [`HealthService`]).
//!
//! # Example
//!
//! ```
//! use tonic::Request;
//! use tower_health::grpc::pb::HealthCheckRequest;
//! use tower_health::grpc::pb::health_server::Health;
//! use tower_health::grpc::{HealthService, ServingStatus};
//! use tower_health::{HealthConfig, HealthMonitor, Probe};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = HealthMonitor::spawn(HealthConfig::new())?;
//! let drain = health.drain();
//! let grpc = HealthService::new(&health);
//! grpc.reporter().set_service_status("greeter.v1.Greeter", ServingStatus::Serving);
//!
//! // No database configured: readiness passes once the first round is done.
//! let mut watch = health.watch();
//! while !watch.changed().await.expect("the monitor runs").answer(Probe::Startup).passing {}
//! let check = |service: &str| {
//!     let request = Request::new(HealthCheckRequest { service: service.into() });
//!     let grpc = grpc.clone();
//!     async move { grpc.check(request).await.map(|response| response.into_inner().status()) }
//! };
//! use tower_health::grpc::pb::health_check_response::ServingStatus as Wire;
//! assert_eq!(check("").await?, Wire::Serving);
//! assert_eq!(check("greeter.v1.Greeter").await?, Wire::Serving);
//! assert_eq!(check("nope").await.unwrap_err().code(), tonic::Code::NotFound);
//!
//! drain.start();
//! assert_eq!(check("").await?, Wire::NotServing);
//! assert_eq!(check("greeter.v1.Greeter").await?, Wire::NotServing);
//! # Ok(())
//! # }
//! ```
//!
//! On a tonic server, beside the application's service and the HTTP probes (see
//! `examples/tonic.rs`):
//!
//! ```no_run
//! # use tonic::server::NamedService;
//! # #[derive(Clone)] struct GreeterServer;
//! # impl NamedService for GreeterServer { const NAME: &'static str = "greeter.v1.Greeter"; }
//! # impl tower_service::Service<http::Request<tonic::body::Body>> for GreeterServer {
//! #     type Response = http::Response<tonic::body::Body>;
//! #     type Error = std::convert::Infallible;
//! #     type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
//! #     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> { std::task::Poll::Ready(Ok(())) }
//! #     fn call(&mut self, _: http::Request<tonic::body::Body>) -> Self::Future { std::future::ready(Ok(tonic::Status::unimplemented("a stand-in").into_http())) }
//! # }
//! use tonic::transport::Server;
//! use tower_health::grpc::HealthService;
//! use tower_health::{DrainLayer, HealthConfig, HealthLayer, HealthMonitor};
//! use tower_layer::Layer;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let monitor = HealthMonitor::spawn(HealthConfig::from_env()?)?;
//! let drain = monitor.drain();
//! let health = HealthLayer::new(&monitor);
//! let drain_layer = DrainLayer::new(drain);
//! let grpc_health = HealthService::new(&monitor);
//! grpc_health.reporter().set_serving::<GreeterServer>();
//!
//! let addr = "127.0.0.1:50051".parse()?;
//! drain
//!     .serve(|shutdown| {
//!         Server::builder()
//!             .accept_http1(true) // kubelet's httpGet probes speak HTTP/1.1
//!             .layer(health) // the HTTP probes, ping included
//!             .add_service(grpc_health.server())
//!             // The drain counts the application's calls, not the health streams.
//!             .add_service(drain_layer.layer(GreeterServer))
//!             .serve_with_shutdown(addr, shutdown)
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! # On a tonic server
//!
//! - **`accept_http1(true)`.** tonic speaks HTTP/2 only by default; kubelet's `httpGet` probes
//!   and most load balancers' HTTP checks speak HTTP/1.1. With it, [`HealthLayer`] answers
//!   them, ping included, on the gRPC port (and over h2c too).
//! - **The drain around the application's services, not the server.** `DrainLayer` on the
//!   builder wraps every service, this one included: its `Watch` streams would count as work
//!   in flight, and under [`DrainPolicy::Reject`](crate::drain::DrainPolicy::Reject) its `Check`s
//!   would be refused instead of answering `NOT_SERVING`. Wrapped per service, the drain
//!   counts the application's calls only (a [`Drain`](crate::drain::Drain) keeps the name of
//!   the service it wraps).
//! - **HTTP/2 and the shutdown.** When the graceful shutdown begins, tonic stops accepting
//!   (new connections are refused), sends every HTTP/2 client a `GOAWAY`, and lets the calls
//!   in flight finish; the health streams end at that moment.
//!
//! [`HealthLayer`]: crate::HealthLayer

mod named;
mod orca;
mod reporter;
mod service;
mod shared;
mod status;
mod watch;

mod generated {
    // As generated: not held to the crate's lints.
    #![allow(
        missing_docs,
        unreachable_pub,
        clippy::all,
        clippy::pedantic,
        clippy::nursery,
        rustdoc::bare_urls
    )]
    #[rustfmt::skip]
    pub mod grpc_health_v1;
    #[rustfmt::skip]
    pub mod xds_service_orca_v3;
}

/// The types generated from the canonical `grpc/health/v1/health.proto` (with `List`),
/// checked in: building the crate runs no code generator. `proto/codegen` regenerates them.
pub mod pb {
    pub use super::generated::grpc_health_v1::*;

    /// The ORCA messages and service (`xds.service.orca.v3.OpenRcaService`, and the
    /// `OrcaLoadReport` of `xds.data.orca.v3`), from a trimmed copy of the xDS protos
    /// (`proto/xds/service/orca/v3/orca.proto`), checked in.
    pub mod orca {
        pub use super::super::generated::xds_service_orca_v3::*;
    }
}

pub use self::orca::{MAX_REPORT_INTERVAL, MIN_REPORT_INTERVAL, OrcaService};
pub use self::reporter::HealthReporter;
pub use self::service::HealthService;
pub use crate::dialect::grpc::ServingStatus;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;
