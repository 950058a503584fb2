//! The rounds: checking, building the verdicts, rendering and publishing them.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::components::{Forced, TrackedComponent};
use super::published::{Published, publish_newer};
use super::slot::CheckSlot;
use super::state::{FullRound, HealthRound, MonitorState, Round};
use super::transitions::{log_health_transition, log_readiness_transition};
use crate::rendered::{render_health, render_pool, render_readiness};
use crate::verdict::{CheckOutcome, ComponentReport, HealthVerdict, PoolVerdict, ReadinessVerdict};

impl MonitorState {
    /// Checks `slots` in parallel under the one deadline.
    pub(crate) async fn round(&self, slots: &[CheckSlot]) -> Round {
        let started = Instant::now();
        // Cannot overflow: the config keeps the timeout within `MAX_DURATION` (one year).
        let deadline = started + self.config.readiness_timeout;
        let claims: Vec<_> = slots
            .iter()
            .map(|slot| slot.claim(started, &self.spawner))
            .collect();
        let mut outcomes = Vec::with_capacity(claims.len());
        for claim in claims {
            outcomes.push(claim.outcome(deadline).await);
        }
        warn_on_overrun("readiness", started, deadline);
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
        let started = Instant::now();
        let round = self.round(&self.slots).await;
        self.counters
            .readiness_rounds
            .fetch_add(1, Ordering::Relaxed);
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counters
            .readiness_round_nanos
            .store(took, Ordering::Relaxed);
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
        if self.startup.first_round_completed() {
            self.lifecycle_changed(self.held());
        }
    }

    /// Every database and every component due (all of them when `forced`), in parallel
    /// under the one deadline: what the health round and `?nocache=true` check.
    pub(crate) async fn full_round(&self, forced: Forced) -> FullRound {
        let started = Instant::now();
        // Cannot overflow: the config keeps the timeout within `MAX_DURATION` (one year).
        let deadline = started + self.config.readiness_timeout;
        // Every check starts before the round waits on any.
        let databases: Vec<_> = self
            .slots
            .iter()
            .map(|slot| slot.claim(started, &self.spawner))
            .collect();
        let claims: Vec<_> = self
            .components
            .iter()
            .map(|component| component.claim(started, &self.spawner, forced))
            .collect();
        let mut outcomes = Vec::with_capacity(databases.len());
        for claim in databases {
            outcomes.push(claim.outcome(deadline).await);
        }
        let mut components = Vec::with_capacity(claims.len());
        for claim in claims {
            components.push(claim.report(started, deadline).await);
        }
        warn_on_overrun("health", started, deadline);
        FullRound {
            outcomes,
            components,
            finished_at: SystemTime::now(),
        }
    }

    /// The health round: from the shared cache when there is one (which computes, through
    /// [`computed_health`](Self::computed_health), when its entry is not fresh), else
    /// computed here.
    pub(crate) async fn health_round(&self) -> Arc<Published<HealthVerdict>> {
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            return self.shared_health_round(shared).await;
        }
        let round = self.computed_health().await;
        self.publish_health(
            round.default,
            round.others,
            round.components,
            round.finished_at,
        )
    }

    /// The default database, the others and every component due, checked by this process in
    /// parallel under the one deadline.
    pub(crate) async fn computed_health(&self) -> HealthRound {
        let started = Instant::now();
        let round = self.full_round(Forced::No).await;
        self.counters.health_rounds.fetch_add(1, Ordering::Relaxed);
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counters
            .health_round_nanos
            .store(took, Ordering::Relaxed);
        let (default, others) = self.split_default(round.outcomes);
        HealthRound {
            default,
            others,
            components: round.components,
            finished_at: round.finished_at,
        }
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
        mut outcomes: Vec<CheckOutcome>,
    ) -> (Option<CheckOutcome>, Vec<CheckOutcome>) {
        let default = self.default_index.map(|index| outcomes.remove(index));
        (default, outcomes)
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
        default: Option<CheckOutcome>,
        finished_at: SystemTime,
    ) -> Arc<Published<PoolVerdict>> {
        let default = default
            .zip(self.default_slot().first())
            .map(|(outcome, slot)| (outcome, slot.vendor(), slot.pool_stats()));
        let verdict = PoolVerdict::from_outcome(default, finished_at);
        let stale_after = self.stale_after(self.config.readiness_interval);
        let rendered = render_pool(&verdict, stale_after);
        let published = Arc::new(Published::new(verdict, rendered, Some(stale_after)));
        if publish_newer(&self.pool, &published, &self.monitor_running).is_some() {
            self.notify_view();
        }
        published
    }

    pub(crate) fn publish_health(
        &self,
        default: Option<CheckOutcome>,
        others: Vec<CheckOutcome>,
        components: Vec<ComponentReport>,
        finished_at: SystemTime,
    ) -> Arc<Published<HealthVerdict>> {
        self.publish_health_from(default, others, components, finished_at, None)
    }

    /// Builds and publishes a health verdict: computed here (`shared` is `None`), or the
    /// shared part another process computed (`shared` names it and says how old its round
    /// is) with this process's own components merged in. This process's watchers (pool
    /// saturation, the shared cache's state) are added either way.
    pub(crate) fn publish_health_from(
        &self,
        default: Option<CheckOutcome>,
        others: Vec<CheckOutcome>,
        #[cfg_attr(not(feature = "redis"), allow(unused_mut))] mut components: Vec<ComponentReport>,
        finished_at: SystemTime,
        shared: Option<(Arc<str>, Duration)>,
    ) -> Arc<Published<HealthVerdict>> {
        #[cfg(feature = "redis")]
        if let Some(cache) = &self.shared {
            components.push(cache.report());
        }
        let mut verdict = HealthVerdict::from_outcome(
            default,
            others,
            self.saturated_pools(),
            components,
            self.config.unknown_components,
            self.is_monitor_running(),
            finished_at,
        );
        let stale_after = self.stale_after(self.config.health_interval);
        let timing = match shared {
            Some((computed_by, age)) => {
                verdict.computed_by = Some(computed_by);
                // `age_ms` counts from the computing round; staleness from now, as it is
                // about this process's monitor.
                let now = Instant::now();
                let computed_at = now.checked_sub(age).unwrap_or(now);
                (computed_at, stale_after.saturating_add(now - computed_at))
            }
            None => (Instant::now(), stale_after),
        };
        let verdict = verdict.with_lifecycle(self.held(), self.startup.is_started());
        self.publish_health_verdict(verdict, timing)
    }

    /// Renders and publishes a health verdict computed at `computed_at` and stale
    /// `stale_after` later, tells subscribers, and logs a transition.
    fn publish_health_verdict(
        &self,
        verdict: HealthVerdict,
        (computed_at, stale_after): (Instant, Duration),
    ) -> Arc<Published<HealthVerdict>> {
        let rendered = render_health(&verdict, stale_after);
        let published = Arc::new(Published::computed_at(
            verdict,
            rendered,
            Some(stale_after),
            computed_at,
        ));
        if let Some(previous) = publish_newer(&self.health, &published, &self.monitor_running) {
            log_health_transition(&self.counters, &previous.verdict, &published.verdict);
            self.updates.send_replace(published.verdict.clone());
            self.notify_view();
        }
        published
    }

    /// The hold or the start changed: `/health` shows both, so its verdict is republished
    /// with them (keeping its round's age), and watchers are told.
    pub(crate) fn lifecycle_changed(&self, held: Option<Arc<str>>) {
        let current = self.health.load_full();
        if !current.is_placeholder() {
            let verdict = current
                .verdict
                .with_lifecycle(held, self.startup.is_started());
            let stale_after = current.stale_at().map_or_else(
                || self.stale_after(self.config.health_interval),
                |stale_at| stale_at.saturating_duration_since(current.computed_at),
            );
            self.publish_health_verdict(verdict, (current.computed_at, stale_after));
        }
        self.notify_view();
    }

    /// Renders and publishes a readiness verdict (computed at `computed_at`, or now), tells
    /// subscribers, and logs a transition. The caller holds the hold's lock.
    pub(super) fn publish_readiness(
        &self,
        verdict: ReadinessVerdict,
        computed_at: Option<Instant>,
    ) {
        let stale_after = self.stale_after(self.config.readiness_interval);
        let rendered = render_readiness(&verdict, stale_after);
        let published = Arc::new(Published::computed_at(
            verdict,
            rendered,
            Some(stale_after),
            computed_at.unwrap_or_else(Instant::now),
        ));
        if let Some(previous) = publish_newer(&self.readiness, &published, &self.monitor_running) {
            self.readiness_updates
                .send_replace(published.verdict.clone());
            log_readiness_transition(&self.counters, &previous.verdict, &published.verdict);
            self.notify_view();
        }
    }
}

/// How late past its deadline a round may finish before it is worth a warning: scheduling
/// jitter is not news, a starved or blocked runtime is.
const OVERRUN_WORTH_A_WARNING: Duration = Duration::from_millis(100);

/// Warns when a round finished well past its deadline. A round waits for its checks only
/// until the deadline, so lateness means the runtime did not run the monitor on time (a
/// blocked worker thread, CPU starvation): once per round that overran, never per probe.
fn warn_on_overrun(round: &'static str, started: Instant, deadline: Instant) {
    let finished = Instant::now();
    let late = finished.saturating_duration_since(deadline);
    if late > OVERRUN_WORTH_A_WARNING {
        tracing::warn!(
            round,
            took = ?finished.duration_since(started),
            deadline = ?deadline.duration_since(started),
            late = ?late,
            "a round overran its deadline: the runtime is blocked or starved"
        );
    }
}
