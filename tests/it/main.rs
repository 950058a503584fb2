//! The integration tests, in one binary: one module per area (each gated by the features it
//! needs), over the helpers in `support` (a real server on 127.0.0.1, a real client, real
//! faults), compiled once.
//!
//! Two tests are binaries of their own, as they need a process to themselves:
//! `tests/fault_matrix.rs` (it captures every log line of the process with a global `tracing`
//! subscriber, the monitor's worker threads and its gRPC server's runtime included) and
//! `tests/malformed.rs` (it counts every panic of the process, and fails on any).
//!
//! `cargo test --all-features` runs them all; `cargo test --all-features --test it admin::`
//! runs one module.

// Every helper needs PostgreSQL's driver (the database the tests run against), so every
// module needs the `postgres` feature, `https_check` included.
#[cfg(feature = "postgres")]
#[macro_use]
mod support;

/// The `tonic` example's own gRPC service, for the tests that run a server or a client of it.
#[cfg(all(feature = "postgres", feature = "grpc"))]
#[path = "../../examples/greeter/mod.rs"]
mod greeter;

#[cfg(all(feature = "postgres", feature = "admin"))]
mod admin;
#[cfg(all(feature = "postgres", feature = "axum"))]
mod axum_example;
#[cfg(all(
    feature = "postgres",
    feature = "deadpool",
    feature = "sqlx-0-8",
    feature = "sqlx-0-9",
    feature = "redis"
))]
mod backends;
#[cfg(feature = "postgres")]
mod backpressure;
#[cfg(feature = "postgres")]
mod components;
#[cfg(all(feature = "postgres", feature = "admin"))]
mod details;
// Reads the docs only: no feature, no helper.
mod docs;
#[cfg(feature = "postgres")]
mod drain;
#[cfg(feature = "postgres")]
mod envoy;
#[cfg(all(feature = "postgres", feature = "axum"))]
mod example;
#[cfg(all(feature = "postgres", feature = "redis"))]
mod fleet;
#[cfg(all(feature = "postgres", feature = "redis", feature = "axum"))]
mod fleet_guard;
#[cfg(feature = "postgres")]
mod groups;
#[cfg(all(feature = "postgres", feature = "grpc"))]
mod grpc;
#[cfg(all(feature = "postgres", feature = "haproxy-agent"))]
mod haproxy;
#[cfg(all(feature = "postgres", feature = "http-check", feature = "rustls"))]
mod https_check;
// The incident guide's sample log, from `examples/admin.rs` (features `admin`, `metrics`).
#[cfg(all(feature = "postgres", feature = "admin", feature = "metrics"))]
mod incident;
#[cfg(feature = "postgres")]
mod kube;
#[cfg(all(feature = "postgres", feature = "axum"))]
mod long_lived;
#[cfg(all(feature = "postgres", feature = "metrics", feature = "admin"))]
mod metrics;
#[cfg(all(feature = "postgres", feature = "grpc", feature = "axum"))]
mod orca;
#[cfg(all(feature = "postgres", feature = "metrics", feature = "opentelemetry"))]
mod otel;
#[cfg(all(feature = "postgres", feature = "page", feature = "redis"))]
mod page;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod probes;
// The README's production code: its example needs every feature its `Cargo.toml` line names.
#[cfg(all(
    feature = "postgres",
    feature = "axum",
    feature = "sqlx-0-9",
    feature = "redis",
    feature = "admin",
    feature = "metrics",
    feature = "haproxy-agent"
))]
mod production;
#[cfg(all(feature = "postgres", feature = "axum", feature = "admin"))]
mod proxies;
// Reads the README and the manifest only: no feature, no helper.
mod readme;
#[cfg(feature = "postgres")]
mod recycle;
#[cfg(all(feature = "postgres", feature = "redis"))]
mod redis;
#[cfg(all(
    feature = "postgres",
    feature = "redis-cluster",
    feature = "redis-sentinel"
))]
mod redis_topologies;
#[cfg(feature = "postgres")]
mod returning;
#[cfg(feature = "postgres")]
mod saturation;
#[cfg(all(feature = "postgres", feature = "redis", feature = "metrics"))]
mod shared;
#[cfg(all(feature = "postgres", feature = "redis"))]
mod shared_faults;
#[cfg(feature = "postgres")]
mod stacks;
#[cfg(all(feature = "postgres", feature = "rustls"))]
mod tls;
#[cfg(all(feature = "postgres", feature = "grpc"))]
mod tonic_example;
#[cfg(feature = "postgres")]
mod upgrade;
