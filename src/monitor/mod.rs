//! The background monitor and the handle on its verdicts.
//!
//! [`HealthMonitor`](crate::HealthMonitor) runs two cadences: a readiness round (default every second) and a health
//! round (default every ten seconds). Each round checks every configured database in parallel
//! under one deadline (default 500 ms), builds the verdicts, and publishes them through an
//! `ArcSwap`; as each is published, the HTTP side renders every answer a probe may get of it.
//! Answering a probe is then a pointer load and a couple of reference-count increments.
//!
//! Database load is therefore set by the cadence and the number of databases, never by how
//! often probes arrive: a storm of probes costs the database what an idle minute costs.
//!
//! # Example
//!
//! [`HealthMonitor::spawn`](crate::HealthMonitor::spawn) starts the monitor of a
//! [`HealthConfig`](crate::HealthConfig) on the current runtime; every reader (the layers,
//! the admin server, gRPC, metrics) takes its handle.
//! [`HealthMonitor::new`](crate::HealthMonitor::new) makes the monitor without running it, to
//! run it where you choose:
//!
//! ```
//! use tower_health::{HealthConfig, HealthMonitor, verdict::Status};
//!
//! # #[tokio::main]
//! # async fn main() {
//! let (health, monitor) = HealthMonitor::new(HealthConfig::new()).unwrap();
//! tokio::spawn(monitor.run());
//!
//! // No database configured: health has nothing to follow, and says so.
//! let mut views = health.watch();
//! let view = views.wait_for(|view| view.health.checked_at.is_some()).await.unwrap();
//! assert_eq!(view.health.status, Status::Unhealthy);
//! # }
//! ```
//!
//! # Stalled databases
//!
//! A check that has not finished when the deadline passes is reported `timed_out`, and the
//! round publishes on time. The check itself keeps running in the background; later rounds
//! wait for that same check (up to their own deadline) instead of starting another, so a
//! database that accepts connections and never answers does not collect a pile of them.
//!
//! # One slow round
//!
//! A round whose deadline the runtime fired late (a starved or blocked process) cannot tell a
//! silent database from its own lateness: the result last heard stands in for its timeouts
//! (`detail` "starved"), for a verdict's staleness bound, and only while the rounds since
//! heard the database on time. While `/health` shows a database that did not pass, each
//! readiness round republishes it with that round's outcomes, so that one slow health round
//! does not keep it failing for a health interval. And the readers whose consumers act on a
//! single answer (HAProxy's agent, gRPC `Watch`) wait out
//! [`HealthConfig::debounce`](crate::HealthConfig::debounce) before they report a failure.
//!
//! # Self-monitoring
//!
//! With [`HealthConfig::self_monitoring`](crate::HealthConfig::self_monitoring), the monitor
//! also watches itself: a component `monitor` reports readiness rounds that lag (none
//! finished for two intervals plus the deadline), so `/health` reads `degraded` before the
//! verdicts go stale. Pool saturation is always watched (every connection busy with
//! checkouts waiting: `degraded`, with the figures).
//!
//! # Staleness
//!
//! A verdict older than three of its rounds plus the deadline (3.5 s for readiness with the
//! defaults) is not served as fresh: readiness answers 503 `not_ready` and health and pool
//! answer 503 `unavailable`, each with the reason. Liveness and ping are not affected.

mod components;
mod counters;
mod fresh;
pub(crate) mod handle;
pub(crate) mod history;
mod lag;
#[cfg(test)]
mod panic_tests;
#[cfg(test)]
mod round_tests;
mod rounds;
pub(crate) mod runner;
#[cfg(feature = "redis")]
mod shared;
mod slot;
mod spawner;
mod state;
// `pub(crate)`: every reader's tests drive a monitor by hand.
#[cfg(test)]
pub(crate) mod testing;
/// A monitor whose rounds a unit test runs itself, for the other readers' tests.
#[cfg(all(
    test,
    any(
        feature = "grpc",
        feature = "axum",
        feature = "metrics",
        feature = "opentelemetry"
    )
))]
pub(crate) use self::testing::monitor as test_monitor;
#[cfg(all(
    test,
    any(feature = "grpc", feature = "metrics", feature = "opentelemetry")
))]
pub(crate) use self::testing::rounds as test_rounds;
mod transitions;
#[cfg(test)]
mod view_tests;

pub(crate) use self::handle::HealthHandle;
pub use self::handle::MonitorStats;
