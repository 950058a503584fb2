//! What the monitor, its handles and the layers share: the configuration, the database
//! slots, the published verdicts, and the monitor's own state.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use tokio::sync::watch;

use super::components::TrackedComponent;
use super::fresh::FreshRounds;
use super::handle::MonitorStats;
use super::lag::{MONITOR_COMPONENT, RoundClock, RoundLag};
use super::published::{Published, publish_newer};
use super::slot::CheckSlot;
use super::startup::Startup;
use crate::config::HealthConfig;
use crate::drain::DrainHandle;
use crate::probe::ProbePaths;
use crate::rendered::{render_health, render_pool, render_readiness};
use crate::verdict::{
    ComponentReport, DatabaseOutcome, HealthVerdict, PoolVerdict, ReadinessVerdict,
};

#[derive(Debug)]
pub(crate) struct MonitorState {
    pub(crate) config: HealthConfig,
    /// The layer's probe paths, from the configuration.
    pub(crate) paths: ProbePaths,
    slots: Vec<CheckSlot>,
    components: Vec<TrackedComponent>,
    /// When the last readiness round finished, for self-monitoring.
    round_clock: Arc<RoundClock>,
    default_index: Option<usize>,
    pub(crate) readiness: ArcSwap<Published<ReadinessVerdict>>,
    pub(crate) health: ArcSwap<Published<HealthVerdict>>,
    pub(crate) pool: ArcSwap<Published<PoolVerdict>>,
    pub(crate) startup: Startup,
    /// The drain every reader of this monitor follows, once one is attached.
    pub(crate) drain: OnceLock<DrainHandle>,
    fresh: FreshRounds,
    monitor_running: AtomicBool,
    updates: watch::Sender<Arc<HealthVerdict>>,
    readiness_updates: watch::Sender<Arc<ReadinessVerdict>>,
    /// The manual hold's reason, while one is in place. Also serialises readiness
    /// publications, so that a round that read the hold before it changed cannot publish
    /// after the change.
    hold: Mutex<Option<Arc<str>>>,
    pub(crate) counters: Counters,
}

/// The monitor's work so far (the checks started are counted by each slot).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) readiness_rounds: AtomicU64,
    pub(crate) health_rounds: AtomicU64,
    pub(crate) fresh_rounds: AtomicU64,
}

/// What one round concluded about every database.
pub(crate) struct Round {
    pub(crate) outcomes: Vec<DatabaseOutcome>,
    pub(crate) finished_at: SystemTime,
}

const NO_ROUND_YET: &str = "no round has completed yet";
const MONITOR_STOPPED: &str = "the health monitor is not running";

impl MonitorState {
    pub(crate) fn new(config: HealthConfig) -> Self {
        let limit = config.check_limit.max(config.readiness_timeout);
        let slots = config
            .databases
            .iter()
            .map(|entry| CheckSlot::database(entry, !config.is_optional(&entry.name), limit))
            .collect();
        for name in &config.optional_databases {
            if !config.database_names().any(|database| database == &**name) {
                tracing::warn!(database = %name, "a database declared optional is not configured");
            }
        }
        let round_clock = Arc::new(RoundClock::new());
        let mut components: Vec<TrackedComponent> = config
            .components
            .iter()
            .map(|spec| {
                let mut spec = spec.clone();
                spec.critical |= config.is_listed_critical(&spec.name);
                TrackedComponent::new(&spec, limit)
            })
            .collect();
        if config.self_monitoring
            && !config
                .component_names()
                .any(|name| name == MONITOR_COMPONENT)
        {
            let lag = RoundLag {
                clock: Arc::clone(&round_clock),
                interval: config.readiness_interval,
                deadline: config.readiness_timeout,
            };
            let spec = crate::component::ComponentSpec::new(MONITOR_COMPONENT, lag);
            components.push(TrackedComponent::new(&spec, limit));
        }
        for name in &config.critical_components {
            if !config
                .component_names()
                .any(|component| component == &**name)
            {
                tracing::warn!(component = %name, "a component listed in TOWER_HEALTH_CRITICAL is not configured");
            }
        }
        let default_index = config.default_database_index();
        let paths = ProbePaths::new(&config.path_prefix, config.kubernetes_aliases);
        let startup = Startup::new(config.startup_waits_for_mark);
        let (readiness, health, pool) = placeholders(NO_ROUND_YET, false);
        let (updates, _) = watch::channel(health.verdict.clone());
        let (readiness_updates, _) = watch::channel(readiness.verdict.clone());
        Self {
            config,
            paths,
            slots,
            components,
            round_clock,
            default_index,
            readiness: ArcSwap::from_pointee(readiness),
            health: ArcSwap::from_pointee(health),
            pool: ArcSwap::from_pointee(pool),
            startup,
            drain: OnceLock::new(),
            fresh: FreshRounds::default(),
            monitor_running: AtomicBool::new(false),
            updates,
            readiness_updates,
            hold: Mutex::new(None),
            counters: Counters::default(),
        }
    }

    pub(crate) fn fresh_rounds(&self) -> &FreshRounds {
        &self.fresh
    }

    pub(crate) fn is_monitor_running(&self) -> bool {
        self.monitor_running.load(Ordering::Acquire)
    }

    pub(crate) fn set_monitor_running(&self, running: bool) {
        self.monitor_running.store(running, Ordering::Release);
        if !running {
            let (readiness, health, pool) = placeholders(MONITOR_STOPPED, false);
            let readiness = Arc::new(readiness);
            self.readiness.store(readiness.clone());
            self.readiness_updates
                .send_replace(readiness.verdict.clone());
            self.pool.store(Arc::new(pool));
            let health = Arc::new(health);
            self.health.store(health.clone());
            self.updates.send_replace(health.verdict.clone());
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Arc<HealthVerdict>> {
        self.updates.subscribe()
    }

    pub(crate) fn subscribe_readiness(&self) -> watch::Receiver<Arc<ReadinessVerdict>> {
        self.readiness_updates.subscribe()
    }

    /// Places (`Some`) or releases (`None`) the manual hold, and republishes readiness at
    /// once. Returns whether anything changed.
    pub(crate) fn set_hold(&self, reason: Option<Arc<str>>) -> bool {
        let mut hold = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
        if *hold == reason {
            return false;
        }
        hold.clone_from(&reason);
        let current = self.readiness.load_full();
        // Before the first round (or once the monitor stopped) there is nothing to
        // re-render: the next round applies the hold.
        if let Some(checked_at) = current.verdict.checked_at {
            let verdict = ReadinessVerdict::from_outcomes(
                current.verdict.databases.clone(),
                current.verdict.components.clone(),
                self.config.fail_direction,
                self.config.unknown_components,
                checked_at,
                reason.clone(),
            );
            self.publish_readiness(verdict, Some(current.computed_at));
        }
        drop(hold);
        match reason {
            Some(reason) => tracing::warn!(%reason, "readiness held by the operator"),
            None => tracing::info!("readiness hold released"),
        }
        true
    }

    /// The manual hold's reason, if one is in place.
    pub(crate) fn held(&self) -> Option<Arc<str>> {
        self.hold
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Renders and publishes a readiness verdict (computed at `computed_at`, or now), tells
    /// subscribers, and logs a transition. The caller holds the hold's lock.
    fn publish_readiness(&self, verdict: ReadinessVerdict, computed_at: Option<Instant>) {
        let stale_after = self.stale_after(self.config.readiness_interval);
        let rendered = render_readiness(&verdict, stale_after);
        let published = Arc::new(Published::computed_at(
            verdict,
            rendered,
            Some(stale_after),
            computed_at.unwrap_or_else(Instant::now),
        ));
        let previous = publish_newer(&self.readiness, &published, &self.monitor_running);
        if !Arc::ptr_eq(&previous, &published) && previous.computed_at <= published.computed_at {
            self.readiness_updates
                .send_replace(published.verdict.clone());
            log_readiness_transition(&previous.verdict, &published.verdict);
        }
    }

    pub(crate) fn stats(&self) -> MonitorStats {
        MonitorStats {
            readiness_rounds: self.counters.readiness_rounds.load(Ordering::Relaxed),
            health_rounds: self.counters.health_rounds.load(Ordering::Relaxed),
            fresh_rounds: self.counters.fresh_rounds.load(Ordering::Relaxed),
            checks_started: self.slots.iter().map(CheckSlot::checks_started).sum(),
            component_checks_started: self
                .components
                .iter()
                .map(|component| component.slot.checks_started())
                .sum(),
        }
    }

    /// The staleness bound of verdicts refreshed every `interval`: three missed rounds.
    /// Saturating, so that no setting can make it panic (the config bounds every duration by
    /// `MAX_DURATION` anyway, and `Published` treats a bound past the clock's range as none).
    fn stale_after(&self, interval: Duration) -> Duration {
        interval
            .saturating_mul(3)
            .saturating_add(self.config.readiness_timeout)
    }

    /// Checks `slots` in parallel under the one deadline.
    pub(crate) async fn round(&self, slots: &[CheckSlot]) -> Round {
        let started = Instant::now();
        // Cannot overflow: the config keeps the timeout within `MAX_DURATION` (one year).
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
    pub(crate) fn default_slot(&self) -> &[CheckSlot] {
        match self.default_index {
            Some(index) => &self.slots[index..=index],
            None => &[],
        }
    }

    pub(crate) async fn readiness_round(&self) {
        let round = self.round(&self.slots).await;
        self.counters
            .readiness_rounds
            .fetch_add(1, Ordering::Relaxed);
        let default = self
            .default_index
            .map(|index| round.outcomes[index].clone());
        self.publish_pool(default, round.finished_at);
        let hold = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
        let verdict = ReadinessVerdict::from_outcomes(
            round.outcomes,
            self.gating_components(),
            self.config.fail_direction,
            self.config.unknown_components,
            round.finished_at,
            hold.clone(),
        );
        self.publish_readiness(verdict, None);
        drop(hold);
        self.round_clock.round_finished();
        self.startup.first_round_completed();
    }

    /// The default database and every component due, in parallel under the one deadline.
    pub(crate) async fn health_round(&self) -> Arc<Published<HealthVerdict>> {
        let started = Instant::now();
        // Cannot overflow: the config keeps the timeout within `MAX_DURATION` (one year).
        let deadline = started + self.config.readiness_timeout;
        // Every check starts before the round waits on any.
        let databases: Vec<_> = self.slots.iter().map(|slot| slot.claim(started)).collect();
        let claims: Vec<_> = self
            .components
            .iter()
            .map(|component| component.claim(started))
            .collect();
        let mut outcomes = Vec::with_capacity(databases.len());
        for claim in databases {
            outcomes.push(claim.outcome(deadline).await);
        }
        let mut components = Vec::with_capacity(claims.len());
        for claim in claims {
            components.push(claim.report(started, deadline).await);
        }
        self.counters.health_rounds.fetch_add(1, Ordering::Relaxed);
        let (default, others) = self.split_default(outcomes);
        self.publish_health(default, others, components, SystemTime::now())
    }

    /// The pools that are saturated now (read right after a round's checks), by database.
    pub(crate) fn saturated_pools(&self) -> Vec<(Arc<str>, crate::check::PoolStats)> {
        self.config
            .databases
            .iter()
            .zip(&self.slots)
            .filter_map(|(entry, slot)| {
                slot.pool_stats()
                    .filter(crate::check::PoolStats::is_saturated)
                    .map(|stats| (entry.name.clone(), stats))
            })
            .collect()
    }

    /// The default database's outcome, and the others', from a round over every database.
    pub(crate) fn split_default(
        &self,
        mut outcomes: Vec<DatabaseOutcome>,
    ) -> (Option<DatabaseOutcome>, Vec<DatabaseOutcome>) {
        let default = self.default_index.map(|index| outcomes.remove(index));
        (default, outcomes)
    }

    /// Every database's slot.
    pub(crate) fn slots(&self) -> &[CheckSlot] {
        &self.slots
    }

    /// Where every component stands now, as the last health round left it.
    pub(crate) fn component_reports(&self) -> Vec<ComponentReport> {
        self.components
            .iter()
            .map(TrackedComponent::report)
            .collect()
    }

    /// The components that gate readiness, as the last health round left them.
    fn gating_components(&self) -> Vec<ComponentReport> {
        self.components
            .iter()
            .filter(|component| component.gates_readiness())
            .map(TrackedComponent::report)
            .collect()
    }

    /// Publishes the pool verdict from the default database's outcome.
    pub(crate) fn publish_pool(
        &self,
        default: Option<DatabaseOutcome>,
        finished_at: SystemTime,
    ) -> Arc<Published<PoolVerdict>> {
        let default = default
            .zip(self.default_slot().first())
            .map(|(outcome, slot)| (outcome, slot.vendor(), slot.pool_stats()));
        let verdict = PoolVerdict::from_outcome(default, finished_at);
        let stale_after = self.stale_after(self.config.readiness_interval);
        let rendered = render_pool(&verdict, stale_after);
        let published = Arc::new(Published::new(verdict, rendered, Some(stale_after)));
        publish_newer(&self.pool, &published, &self.monitor_running);
        published
    }

    pub(crate) fn publish_health(
        &self,
        default: Option<DatabaseOutcome>,
        others: Vec<DatabaseOutcome>,
        components: Vec<ComponentReport>,
        finished_at: SystemTime,
    ) -> Arc<Published<HealthVerdict>> {
        let verdict = HealthVerdict::from_outcome(
            default,
            others,
            self.saturated_pools(),
            components,
            self.config.unknown_components,
            self.is_monitor_running(),
            finished_at,
        );
        let stale_after = self.stale_after(self.config.health_interval);
        let rendered = render_health(&verdict, stale_after);
        let published = Arc::new(Published::new(verdict, rendered, Some(stale_after)));
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
            render_readiness(&readiness, unused),
            None,
        ),
        Published::new(health.clone(), render_health(&health, unused), None),
        Published::new(pool.clone(), render_pool(&pool, unused), None),
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
    let reason = current.reason.as_deref().unwrap_or_default();
    if current.status == crate::Status::Healthy {
        tracing::info!(%from, %to, "health status changed");
        return;
    }
    if current.status == crate::Status::Degraded {
        tracing::warn!(%from, %to, %reason, "health status changed");
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
        .unwrap_or_else(|| reason.to_owned());
    tracing::warn!(%from, %to, %reason, "health status changed");
}
