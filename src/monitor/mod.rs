//! The background monitor and the handle on its verdicts.
//!
//! [`HealthMonitor`] runs two cadences: a readiness round (default every second) and a health
//! round (default every ten seconds). Each round checks every configured database in parallel
//! under one deadline (default 500 ms), builds the verdicts, renders every answer the probe
//! endpoints may give, and publishes them through an `ArcSwap`. Answering a probe is then a
//! pointer load and a couple of reference-count increments.
//!
//! Database load is therefore set by the cadence and the number of databases, never by how
//! often probes arrive: a storm of probes costs the database what an idle minute costs.
//!
//! # Example
//!
//! ```
//! use tower_health::{HealthConfig, HealthMonitor};
//!
//! # #[tokio::main]
//! # async fn main() {
//! let (health, monitor) = HealthMonitor::new(HealthConfig::new());
//! tokio::spawn(monitor.run());
//!
//! // No database configured: readiness has nothing to wait for.
//! let mut updates = health.subscribe();
//! updates.changed().await.unwrap();
//! assert!(health.readiness().ready);
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
//! # Staleness
//!
//! A verdict older than three of its rounds plus the deadline (3.5 s for readiness with the
//! defaults) is not served as fresh: readiness answers 503 `not_ready` and health and pool
//! answer 503 `unavailable`, each with the reason. Liveness and ping are not affected.

mod handle;
mod published;
mod runner;
mod shared;
mod slot;

pub use self::handle::{HealthHandle, MonitorStats};
pub(crate) use self::published::Published;
pub use self::runner::HealthMonitor;
pub(crate) use self::shared::{Fresh, Shared};
