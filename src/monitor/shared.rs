//! The state the monitor, the handles and the layers share.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use tokio::sync::watch;

use super::published::{Published, publish_newer};
use super::slot::DatabaseSlot;
use crate::config::HealthConfig;
use crate::render;
use crate::verdict::{DatabaseOutcome, HealthVerdict, PoolVerdict, ReadinessVerdict};

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: HealthConfig,
    slots: Vec<DatabaseSlot>,
    default_index: Option<usize>,
    pub(crate) readiness: ArcSwap<Published<ReadinessVerdict>>,
    pub(crate) health: ArcSwap<Published<HealthVerdict>>,
    pub(crate) pool: ArcSwap<Published<PoolVerdict>>,
    fresh: Mutex<FreshState>,
    monitor_running: AtomicBool,
    updates: watch::Sender<Arc<HealthVerdict>>,
    readiness_rounds: AtomicU64,
    health_rounds: AtomicU64,
    fresh_rounds: AtomicU64,
}

/// A fresh computation for `?nocache=true`: both verdicts it published.
#[derive(Clone, Debug)]
pub(crate) struct Fresh {
    pub(crate) health: Arc<Published<HealthVerdict>>,
    pub(crate) pool: Arc<Published<PoolVerdict>>,
}

#[derive(Debug, Default)]
struct FreshState {
    running: Option<watch::Receiver<Option<Fresh>>>,
    last: Option<Fresh>,
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

/// Ends a fresh computation: records its result, or (if the task was cancelled) just clears
/// `running`, so that the next bypass starts over instead of waiting on a dead channel.
struct FreshDone<'a>(&'a Shared);

impl FreshDone<'_> {
    fn finish(self, fresh: Fresh) {
        self.0.fresh_state().last = Some(fresh);
    }
}

impl Drop for FreshDone<'_> {
    fn drop(&mut self) {
        self.0.fresh_state().running = None;
    }
}

/// What one round concluded about every database.
struct Round {
    outcomes: Vec<DatabaseOutcome>,
    finished_at: SystemTime,
}

const NO_ROUND_YET: &str = "no round has completed yet";
const MONITOR_STOPPED: &str = "the health monitor is not running";

impl Shared {
    pub(crate) fn new(config: HealthConfig) -> Self {
        let limit = config.check_limit.max(config.readiness_timeout);
        let slots = config
            .databases
            .iter()
            .map(|entry| DatabaseSlot::new(entry, limit))
            .collect();
        let default_index = config.default_database_index();
        let (readiness, health, pool) = placeholders(NO_ROUND_YET, false);
        let (updates, _) = watch::channel(health.verdict.clone());
        Self {
            config,
            slots,
            default_index,
            readiness: ArcSwap::from_pointee(readiness),
            health: ArcSwap::from_pointee(health),
            pool: ArcSwap::from_pointee(pool),
            fresh: Mutex::default(),
            monitor_running: AtomicBool::new(false),
            updates,
            readiness_rounds: AtomicU64::new(0),
            health_rounds: AtomicU64::new(0),
            fresh_rounds: AtomicU64::new(0),
        }
    }

    pub(crate) fn is_monitor_running(&self) -> bool {
        self.monitor_running.load(Ordering::Acquire)
    }

    pub(crate) fn set_monitor_running(&self, running: bool) {
        self.monitor_running.store(running, Ordering::Release);
        if !running {
            let (readiness, health, pool) = placeholders(MONITOR_STOPPED, false);
            self.readiness.store(Arc::new(readiness));
            self.pool.store(Arc::new(pool));
            let health = Arc::new(health);
            self.health.store(health.clone());
            self.updates.send_replace(health.verdict.clone());
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Arc<HealthVerdict>> {
        self.updates.subscribe()
    }

    pub(crate) fn counters(&self) -> (u64, u64, u64, u64) {
        let checks = self.slots.iter().map(DatabaseSlot::checks_started).sum();
        (
            self.readiness_rounds.load(Ordering::Relaxed),
            self.health_rounds.load(Ordering::Relaxed),
            self.fresh_rounds.load(Ordering::Relaxed),
            checks,
        )
    }

    /// The staleness bound of verdicts refreshed every `interval`: three missed rounds.
    fn stale_after(&self, interval: Duration) -> Duration {
        interval * 3 + self.config.readiness_timeout
    }

    /// Checks `slots` in parallel under the one deadline.
    async fn round(&self, slots: &[DatabaseSlot]) -> Round {
        let started = Instant::now();
        let deadline = started + self.config.readiness_timeout;
        let claims: Vec<_> = slots.iter().map(|slot| slot.claim(started)).collect();
        let mut outcomes = Vec::with_capacity(claims.len());
        for claim in claims {
            outcomes.push(claim.outcome(deadline).await);
        }
        Round {
            outcomes,
            finished_at: SystemTime::now(),
        }
    }

    /// The default database's slot alone: what health and pool are about.
    fn default_slot(&self) -> &[DatabaseSlot] {
        match self.default_index {
            Some(index) => &self.slots[index..=index],
            None => &[],
        }
    }

    pub(crate) async fn readiness_round(&self) {
        let round = self.round(&self.slots).await;
        self.readiness_rounds.fetch_add(1, Ordering::Relaxed);
        let default = self
            .default_index
            .map(|index| round.outcomes[index].clone());
        self.publish_pool(default, round.finished_at);
        let stale_after = self.stale_after(self.config.readiness_interval);
        let verdict = ReadinessVerdict::from_outcomes(
            round.outcomes,
            self.config.fail_direction,
            round.finished_at,
        );
        let answers = render::readiness(&verdict, stale_after);
        let published = Arc::new(Published::new(verdict, answers, Some(stale_after)));
        let previous = publish_newer(&self.readiness, &published, &self.monitor_running);
        log_readiness_transition(&previous.verdict, &published.verdict);
    }

    pub(crate) async fn health_round(&self) -> Arc<Published<HealthVerdict>> {
        let round = self.round(self.default_slot()).await;
        self.health_rounds.fetch_add(1, Ordering::Relaxed);
        self.publish_health(round.outcomes.into_iter().next(), round.finished_at)
    }

    /// Starts (or joins, or reuses within the rate limit) a fresh computation of the health
    /// and pool verdicts.
    fn fresh_state(&self) -> std::sync::MutexGuard<'_, FreshState> {
        self.fresh.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn fresh(self: &Arc<Self>) -> FreshWait {
        let mut state = self.fresh_state();
        if let Some(last) = &state.last {
            let age = last.health.computed_at.elapsed();
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
        let shared = Arc::clone(self);
        // Spawned, so that a client that goes away does not cancel what others wait for.
        tokio::spawn(async move {
            let done = FreshDone(&shared);
            let round = shared.round(shared.default_slot()).await;
            shared.fresh_rounds.fetch_add(1, Ordering::Relaxed);
            let default = round.outcomes.into_iter().next();
            let pool = shared.publish_pool(default.clone(), round.finished_at);
            let health = shared.publish_health(default, round.finished_at);
            let fresh = Fresh { health, pool };
            done.finish(fresh.clone());
            let _ = sender.send(Some(fresh));
        });
        FreshWait::Wait(receiver)
    }

    /// Publishes the pool verdict from the default database's outcome.
    fn publish_pool(
        &self,
        default: Option<DatabaseOutcome>,
        finished_at: SystemTime,
    ) -> Arc<Published<PoolVerdict>> {
        let default = default
            .zip(self.default_slot().first())
            .map(|(outcome, slot)| (outcome, slot.vendor(), slot.pool_stats()));
        let verdict = PoolVerdict::from_outcome(default, finished_at);
        let stale_after = self.stale_after(self.config.readiness_interval);
        let answers = render::pool(&verdict, stale_after);
        let published = Arc::new(Published::new(verdict, answers, Some(stale_after)));
        publish_newer(&self.pool, &published, &self.monitor_running);
        published
    }

    fn publish_health(
        &self,
        default: Option<DatabaseOutcome>,
        finished_at: SystemTime,
    ) -> Arc<Published<HealthVerdict>> {
        let verdict = HealthVerdict::from_outcome(default, self.is_monitor_running(), finished_at);
        let stale_after = self.stale_after(self.config.health_interval);
        let answers = render::health(&verdict, stale_after);
        let published = Arc::new(Published::new(verdict, answers, Some(stale_after)));
        let previous = publish_newer(&self.health, &published, &self.monitor_running);
        if !Arc::ptr_eq(&previous, &published) && previous.computed_at <= published.computed_at {
            log_health_transition(&previous.verdict, &published.verdict);
            self.updates.send_replace(published.verdict.clone());
        }
        published
    }
}

fn placeholders(
    reason: &'static str,
    self_healing: bool,
) -> (
    Published<ReadinessVerdict>,
    Published<HealthVerdict>,
    Published<PoolVerdict>,
) {
    let readiness = ReadinessVerdict::unavailable(reason);
    let health = HealthVerdict::unavailable(reason, self_healing);
    let pool = PoolVerdict::unavailable(reason);
    // The bound is unused (placeholders never go stale), but the renderer wants one.
    let unused = Duration::ZERO;
    (
        Published::new(
            readiness.clone(),
            render::readiness(&readiness, unused),
            None,
        ),
        Published::new(health.clone(), render::health(&health, unused), None),
        Published::new(pool.clone(), render::pool(&pool, unused), None),
    )
}

fn log_readiness_transition(previous: &ReadinessVerdict, current: &ReadinessVerdict) {
    if previous.ready == current.ready && previous.checked_at.is_some() {
        return;
    }
    let databases = current
        .databases
        .iter()
        .map(|outcome| format!("{}={}", outcome.name, outcome.status))
        .collect::<Vec<_>>()
        .join(", ");
    if current.ready {
        tracing::info!(%databases, "readiness is now ready");
    } else {
        tracing::warn!(%databases, "readiness is now not_ready");
    }
}

fn log_health_transition(previous: &HealthVerdict, current: &HealthVerdict) {
    if previous.status == current.status {
        return;
    }
    let (from, to) = (previous.status, current.status);
    if current.status.is_serving() {
        tracing::info!(%from, %to, "health status changed");
        return;
    }
    let reason = current
        .database
        .as_ref()
        .and_then(|outcome| {
            outcome
                .error
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| outcome.detail.clone())
        })
        .or(current.reason.map(str::to_owned))
        .unwrap_or_default();
    tracing::warn!(%from, %to, %reason, "health status changed");
}
