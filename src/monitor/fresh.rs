//! Fresh computations for `?nocache=true`: concurrent bypasses share one computation, and a
//! bypass within `nocache_min_interval` of the last one reuses its result.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use super::components::Forced;
use super::state::{HealthRound, MonitorState};
use crate::verdict::{HealthVerdict, PoolVerdict};
use crate::view::published::Published;

/// A fresh computation's result: both verdicts it published.
#[derive(Clone, Debug)]
pub(crate) struct Fresh {
    pub(crate) health: Arc<Published<HealthVerdict>>,
    pub(crate) pool: Arc<Published<PoolVerdict>>,
}

/// The computation in flight, if any, and the last one's result.
#[derive(Debug, Default)]
pub(crate) struct FreshRounds {
    state: Mutex<FreshState>,
}

#[derive(Debug, Default)]
struct FreshState {
    running: Option<watch::Receiver<Option<Fresh>>>,
    last: Option<Fresh>,
}

impl FreshRounds {
    fn lock(&self) -> MutexGuard<'_, FreshState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a bypass gets its fresh verdicts from.
#[derive(Debug)]
pub(crate) enum FreshWait {
    /// A computation finished within the rate limit: reuse it.
    Ready(Fresh),
    /// Wait for the computation in flight.
    Wait(watch::Receiver<Option<Fresh>>),
}

impl FreshWait {
    /// The fresh verdicts; `None` when the computation could not finish (runtime shutdown).
    pub(crate) async fn fresh(self) -> Option<Fresh> {
        match self {
            Self::Ready(fresh) => Some(fresh),
            Self::Wait(mut receiver) => receiver
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|fresh| fresh.clone()),
        }
    }
}

/// Ends a fresh computation: records its result, or (if the task was cancelled, or dropped
/// before it ever ran) just clears `running`, so that the next bypass starts over instead of
/// waiting on a dead channel.
struct FreshDone(Arc<MonitorState>);

impl FreshDone {
    fn finish(self, fresh: Fresh) {
        self.0.fresh_rounds().lock().last = Some(fresh);
    }
}

impl Drop for FreshDone {
    fn drop(&mut self) {
        self.0.fresh_rounds().lock().running = None;
    }
}

impl MonitorState {
    /// Starts (or joins, or reuses within the rate limit) a fresh computation of the health
    /// and pool verdicts.
    pub(crate) fn fresh(self: &Arc<Self>) -> FreshWait {
        let mut state = self.fresh_rounds().lock();
        if let Some(last) = &state.last {
            let age = last.health.age(crate::clock::now());
            if age < self.config.nocache_min_interval {
                return FreshWait::Ready(last.clone());
            }
        }
        if let Some(running) = &state.running {
            return FreshWait::Wait(running.clone());
        }
        let (sender, receiver) = watch::channel(None);
        state.running = Some(receiver.clone());
        drop(state);
        let monitor = Arc::clone(self);
        // Made before spawning: a task dropped before its first poll runs none of its code.
        let done = FreshDone(Arc::clone(self));
        // Spawned, so that a client that goes away does not cancel what others wait for.
        self.spawner.spawn(async move {
            // Components too, cadence or not: after a fix, `?nocache=true` shows it at once.
            let round = monitor.full_round(Forced::Yes).await;
            monitor
                .counters
                .fresh_rounds
                .fetch_add(1, Ordering::Relaxed);
            let (default, others) = monitor.split_default(round.outcomes);
            let round = HealthRound {
                default,
                others,
                components: round.components,
                started: round.started,
                finished_at: round.finished_at,
            };
            #[cfg(feature = "redis")]
            if let Some(shared) = monitor.shared.as_ref().filter(|s| s.nocache_writes()) {
                // Configured to: the bypass's verdict becomes the fleet's.
                shared.write_fresh(&monitor, &round).await;
            }
            let pool =
                monitor.publish_pool(round.default.clone(), round.started, round.finished_at);
            let health = monitor.publish_health(round);
            let fresh = Fresh { health, pool };
            done.finish(fresh.clone());
            let _ = sender.send(Some(fresh));
        });
        FreshWait::Wait(receiver)
    }
}
