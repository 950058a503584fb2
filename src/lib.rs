//! Health, readiness, liveness, pool and ping endpoints for any Tower service (axum, hyper,
//! tonic), answered from verdicts computed in the background.
//!
//! # Overview
//!
//! Load balancers and Kubernetes ask every instance two different questions: "are you alive?"
//! (should I restart you?) and "are you ready?" (should I send you traffic?). This crate
//! answers them, and four more, with the status code doing the talking. The layer's paths are
//! under a configurable prefix (`/health`); the admin server (feature `admin`) answers the
//! same probes on a port of its own, at the paths of the second column:
//!
#![doc = include_str!("docs/endpoints.md")]
//!
//! - A [`HealthMonitor`] checks every configured database in parallel under one deadline, on
//!   its own cadence, and publishes each verdict through an `ArcSwap`. A probe costs a
//!   pointer load, not a database query, so the database sees the same load whether probes
//!   arrive once a minute or a thousand times a second.
//! - A database that accepts connections and never answers is reported `timed_out` when the
//!   deadline passes; no probe ever waits on a database.
//! - [`HealthLayer`] answers every probe path (ping included) in front of your service,
//!   [`DrainLayer`] counts the application's requests in the drain that SIGTERM starts, and
//!   [`PingLayer`] answers ping alone, for a service that wants nothing else.
//! - With the `grpc` feature, `grpc::HealthService` answers `grpc.health.v1` (`Check`, `Watch`,
//!   `List`) on a tonic server from the same view, so HTTP and gRPC probes never disagree.
//!
//! # Example
//!
//! One line on any Tower service (a `ServiceBuilder` stack, an axum `Router`, a tonic
//! server): `.layer(HealthLayer::new(config))`. The layer starts the configuration's monitor
//! and answers the probe paths before the service; every other request reaches the service
//! untouched.
//!
//! ```
//! # #[cfg(feature = "postgres")]
//! # mod run {
//! use bytes::Bytes;
//! use http::{Request, Response, StatusCode};
//! use http_body_util::Full;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use tower_health::postgres::PostgresCheck;
//! use tower_health::{HealthConfig, HealthLayer};
//!
//! # pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = service_fn(|_request: Request<Full<Bytes>>| async {
//!     Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from("hello"))))
//! });
//! let config = HealthConfig::from_env()?
//!     .database("default", PostgresCheck::connect("postgres://postgres@127.0.0.1/postgres")?);
//! let service = ServiceBuilder::new()
//!     .layer(HealthLayer::new(config))
//!     .service(app);
//!
//! let live = service
//!     .oneshot(Request::get("/health/live").body(Full::default())?)
//!     .await?;
//! assert_eq!(live.status(), StatusCode::OK);
//! # Ok(())
//! # }
//! # }
//! # #[cfg(feature = "postgres")]
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> { run::main().await }
//! # #[cfg(not(feature = "postgres"))]
//! # fn main() {}
//! ```
//!
//! [`HealthLayer::new`] panics on a configuration it cannot use, naming the setting;
//! [`HealthMonitor::spawn`] starts the same monitor and returns the error instead, and
//! `HealthLayer::new` takes its [`HealthHandle`] too. Every other reader (the admin server,
//! gRPC, metrics, your code) takes that handle, or the layer's
//! ([`HealthLayer::handle`]): one monitor, one set of checks, however many readers.
//!
//! # With axum and a drain
//!
//! An axum app with every probe, a drain on SIGTERM, and the PostgreSQL check (features
//! `postgres`, the default, and `axum`):
//!
//! ```no_run
//! # #[cfg(feature = "axum")]
//! # mod run {
//! use axum::{Router, routing::get};
//! use tower_health::postgres::PostgresCheck;
//! use tower_health::{HealthConfig, HealthLayer, HealthMonitor};
//!
//! # pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HealthConfig::from_env()?
//!     .database("default", PostgresCheck::connect("postgres://postgres@127.0.0.1/postgres")?);
//! let health = HealthMonitor::spawn(config)?; // the one monitor: every reader takes its handle
//!
//! let app = Router::new().route("/", get(|| async { "hello" }));
//! // Around the router, outside routing: the probes (ping included) are answered before it,
//! // and every other request is counted in the drain until its response has been sent.
//! let app = HealthLayer::new(&health).around(app);
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // SIGTERM: drain, wait the drain delay, shut down gracefully within the drain timeout.
//! health
//!     .drain()
//!     .serve(|shutdown| axum::serve(listener, app).with_graceful_shutdown(shutdown))
//!     .await?;
//! # Ok(())
//! # }
//! # }
//! # fn main() {}
//! ```
//!
//! Every monitor has its drain ([`HealthHandle::drain`], set by
//! [`HealthConfig::drain`] and the `TOWER_HEALTH_DRAIN_*` variables), and every reader of the
//! monitor follows it: a drain cannot be left out. `layer.around(router)` (the `axum` module) answers the probes before routing, so a probe
//! never reaches the router and an application request pays a path check and the drain's
//! count; a layer added with `Router::layer` runs after routing, once per route. On any
//! other Tower server (hyper-util, tonic), stack `HealthLayer` above a [`DrainLayer`] that
//! counts the application's requests in the drain (see the [guide](guide::serving)).
//!
//! # What is where
//!
//! The crate root holds what a service's `main` touches, and nothing else: [`HealthConfig`],
//! [`HealthMonitor`] and its [`HealthHandle`] (what every reader is made from), the layers
//! [`HealthLayer`], [`DrainLayer`] and [`PingLayer`] with their one [`ResponseFuture`] and
//! one [`ResponseBody`], the drain's [`DrainConfig`] and [`DrainHandle`], the [`Probe`] paths,
//! and [`redact`]: twelve names, each at the root only. Everything else is at one path in its
//! module: settings values in [`config`], verdicts and their
//! [`Status`](verdict::Status) in [`verdict`], the check and component traits in [`check`]
//! and [`component`], each backend in its own (`postgres`: bb8, deadpool, sqlx; `redis`: the
//! Redis component and the verdict a fleet shares), what a probe answers in [`view`], and each
//! reader (`admin`, `axum`, `grpc`, `metrics`, `haproxy`, `healthcheck`) in its own.
//!
//! # Guide
//!
//! The [`guide`] has a page per topic: [serving](guide::serving),
//! [Kubernetes](guide::kubernetes), [Envoy](guide::envoy), [containers without
//! curl](guide::containers),
//! [the answers, body by body](guide::bodies), [databases](guide::databases),
//! [components](guide::components), [a fleet sharing one verdict](guide::fleet),
//! [reading an incident](guide::incident), [the operator's page](guide::page),
//! [gRPC](guide::grpc), [HAProxy](guide::haproxy),
//! [nginx, Caddy and Traefik](guide::proxies), [configuration](guide::configuration),
//! [migrating](guide::migrating) and [hardening](guide::hardening). The environment
//! variables are listed in [`config`].
//! Contributors: [the architecture](guide::architecture) says where each thing lives.
//!
//! # Verdicts
//!
//! Only genuine unhealthiness answers 503. `degraded` (something other than the default
//! database needs a look: a non-critical [component](component), an optional database, a
//! saturated pool) keeps the instance in rotation; a critical component in trouble makes it
//! `unhealthy`. The verdicts, and every probe's answer, are read with [`HealthHandle::view`]
//! and followed with [`HealthHandle::watch`], and
//! [`HealthHandle::hold`] takes the instance out of rotation without a drain. With no database configured,
//! readiness answers 200 with no checks while health (`unhealthy`) and pool (`degraded`)
//! answer 503: do not route on those two then.
//!
//! # Feature flags
//!
//! | Name | Description | Default? |
//! |---|---|---|
//! | `postgres` | `postgres::PostgresCheck`, through `bb8` and `bb8-postgres` | Yes |
//! | `admin` | `admin::AdminServer`: the probes on a loopback port, with keys (hyper) | No |
//! | `deadpool` | `postgres::DeadpoolCheck`: PostgreSQL beside a `deadpool-postgres` pool | No |
//! | `sqlx-0-8` | `postgres::sqlx_0_8::SqlxCheck`: PostgreSQL beside an sqlx 0.8 `PgPool` | No |
//! | `sqlx-0-9` | `postgres::sqlx_0_9::SqlxCheck`: PostgreSQL beside an sqlx 0.9 `PgPool` (Rust 1.94) | No |
//! | `disk` | `component::DiskSpace`: free space where the application writes (fs4) | No |
//! | `http-check` | `component::Http`: an HTTP dependency answering 2xx (`TOWER_HEALTH_HTTP_<NAME>`; hyper) | No |
//! | `tcp` | `component::Tcp`: TCP reachability of a dependency (`TOWER_HEALTH_TCP_<NAME>`) | No |
//! | `rustls` | TLS for the backends that are on, without turning any on: PostgreSQL's `sslmode=require`, `verify-ca`, `verify-full` (with `postgres`); `https://` for `component::Http` (with `http-check`); `rediss://` (with `redis`) | No |
//! | `redis` | `redis::Redis` (`TOWER_HEALTH_REDIS_<NAME>`) and the health verdict shared across processes, `redis::SharedCache` (`TOWER_HEALTH_REDIS_URL`), through the `redis` crate | No |
//! | `redis-cluster` | Redis Cluster for both: `redis-cluster://` URLs (implies `redis`) | No |
//! | `redis-sentinel` | Redis Sentinel for both: `redis-sentinel://` URLs, following failovers (implies `redis`) | No |
//! | `metrics` | `metrics::HealthMetrics`: Prometheus metrics of the published verdicts, rendered once per round (prometheus-client) | No |
//! | `opentelemetry` | `metrics::OpenTelemetry`: the same metrics as observable instruments on the application's `Meter` (the `opentelemetry` API crate) | No |
//! | `grpc` | `grpc::HealthService`: `grpc.health.v1` (`Check`, `Watch`, `List`) from the same view as the HTTP probes (tonic, prost); `grpc://` targets for `healthcheck::run` (h2) | No |
//! | `haproxy-agent` | `haproxy::AgentServer`: HAProxy's agent check (`up ready 100%`, a lowered weight while degraded, `drain`, `maint`, `down`) from the same view (plain TCP) | No |
//! | `page` | the operator's page on the admin server (`/health/page`): every check's last hour, transitions, hold, drain, groups and the fleet, server-rendered (askama); implies `admin` | No |
//! | `axum` | `HealthLayer::around`: the stack around an axum app, outside routing, in one service `axum::serve` takes | No |
//! | `full` | every feature (Rust 1.94, for `sqlx-0-9`) | No |
//!
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::dbg_macro))]

#[macro_use]
mod macros;

#[doc(hidden)]
pub mod __fuzz;
pub mod access;
#[cfg(feature = "admin")]
#[cfg_attr(docsrs, doc(cfg(feature = "admin")))]
pub mod admin;
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub mod axum;
pub mod check;
mod clock;
pub mod component;
pub mod config;
mod dialect;
pub mod drain;
mod env;
#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub mod grpc;
pub mod guide;
#[cfg(feature = "haproxy-agent")]
#[cfg_attr(docsrs, doc(cfg(feature = "haproxy-agent")))]
pub mod haproxy;
pub mod health;
pub mod healthcheck;
mod http;
mod load;
#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "metrics", feature = "opentelemetry"))))]
pub mod metrics;
pub mod monitor;
pub mod ping;
#[cfg(any(
    feature = "postgres",
    feature = "deadpool",
    feature = "sqlx-0-8",
    feature = "sqlx-0-9"
))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(
        feature = "postgres",
        feature = "deadpool",
        feature = "sqlx-0-8",
        feature = "sqlx-0-9"
    )))
)]
pub mod postgres;
mod probe;
mod random;
mod redact;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
mod shutdown;
#[cfg(any(feature = "admin", feature = "haproxy-agent"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "admin", feature = "haproxy-agent"))))]
pub mod side_port;
#[cfg(test)]
mod test_helpers;
#[cfg(all(
    test,
    feature = "grpc",
    feature = "haproxy-agent",
    feature = "metrics",
    feature = "page"
))]
mod timeline_tests;
#[cfg(all(
    feature = "rustls",
    any(feature = "postgres", feature = "http-check", feature = "redis")
))]
mod tls;
mod util;
pub mod verdict;
pub mod view;

/// The README's Rust samples, compiled as doctests (`cargo test --all-features --doc`).
#[cfg(all(
    doctest,
    feature = "postgres",
    feature = "axum",
    feature = "sqlx-0-9",
    feature = "redis",
    feature = "admin",
    feature = "haproxy-agent"
))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// The crate root's names: each is here only, never also under its module's path.
pub use self::config::health::HealthConfig;
pub use self::drain::layer::DrainLayer;
pub use self::health::layer::HealthLayer;
pub use self::http::{ResponseBody, ResponseFuture};
pub use self::monitor::handle::HealthHandle;
pub use self::monitor::runner::HealthMonitor;
pub use self::ping::layer::PingLayer;
pub use self::probe::Probe;
pub use self::redact::redact;
pub use self::shutdown::config::DrainConfig;
pub use self::shutdown::handle::DrainHandle;
