use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

use super::shared::Shared;
use crate::verdict::{HealthVerdict, PoolVerdict, ReadinessVerdict};

/// A handle on the verdicts a [`HealthMonitor`](super::HealthMonitor) publishes.
///
/// Cheap to clone; give one to every [`HealthLayer`](crate::HealthLayer) and to anything else
/// that wants the verdicts. The monitor stops once every handle is gone.
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct HealthHandle {
    pub(crate) shared: Arc<Shared>,
}

/// Counters of the monitor's work since it was created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MonitorStats {
    /// Readiness rounds completed.
    pub readiness_rounds: u64,
    /// Health rounds completed.
    pub health_rounds: u64,
    /// Fresh computations run for `?nocache=true` (concurrent bypasses share one).
    pub fresh_rounds: u64,
    /// Database checks started, over every database. Each is one checkout and one
    /// `SELECT 1` for [`PostgresCheck`](crate::check::PostgresCheck); a round that finds a
    /// check still running joins it instead of starting another.
    pub checks_started: u64,
}

impl HealthHandle {
    /// The latest readiness verdict.
    #[must_use]
    pub fn readiness(&self) -> Arc<ReadinessVerdict> {
        self.shared.readiness.load().verdict.clone()
    }

    /// The latest health verdict.
    #[must_use]
    pub fn health(&self) -> Arc<HealthVerdict> {
        self.shared.health.load().verdict.clone()
    }

    /// The latest pool verdict.
    #[must_use]
    pub fn pool(&self) -> Arc<PoolVerdict> {
        self.shared.pool.load().verdict.clone()
    }

    /// Computes a fresh health verdict now, as `?nocache=true` does: bounded by the readiness
    /// timeout, shared with any bypass already in flight, and published.
    ///
    /// Returns `None` only when the computation could not finish (the runtime is shutting
    /// down).
    pub async fn refresh(&self) -> Option<Arc<HealthVerdict>> {
        let fresh = self.shared.fresh().fresh().await?;
        Some(fresh.health.verdict.clone())
    }

    /// A receiver that sees every new health verdict: `changed().await` wakes on each
    /// publication. Status transitions are also logged through `tracing`, once each.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Arc<HealthVerdict>> {
        self.shared.subscribe()
    }

    /// Whether the monitor is running (its [`run`](super::HealthMonitor::run) future is being
    /// polled and has not finished).
    #[must_use]
    pub fn is_monitor_running(&self) -> bool {
        self.shared.is_monitor_running()
    }

    /// What the monitor has done so far.
    #[must_use]
    pub fn stats(&self) -> MonitorStats {
        let (readiness_rounds, health_rounds, fresh_rounds, checks_started) =
            self.shared.counters();
        MonitorStats {
            readiness_rounds,
            health_rounds,
            fresh_rounds,
            checks_started,
        }
    }
}

impl fmt::Debug for HealthHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthHandle")
            .field("config", &self.shared.config)
            .field("monitor_running", &self.is_monitor_running())
            .finish_non_exhaustive()
    }
}
