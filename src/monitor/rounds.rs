//! The rounds: checking, building the verdicts and publishing them into the view's store.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::components::{Forced, TrackedComponent};
use super::fresh::{Begun, Fresh, FreshWait};
#[cfg(feature = "redis")]
use super::shared::SharedRounds;
use super::slot::{CheckSlot, STARVED_AFTER};
use super::state::MonitorState;
use super::transitions::{log_health_transition, log_readiness_transition};
use crate::check::{CheckError, CheckErrorKind};
#[cfg(feature = "redis")]
use crate::redis::{Entry, Lock, Read, SharedVerdicts};
use crate::util::{join, join_all};
#[cfg(feature = "redis")]
use crate::verdict::Return;
use crate::verdict::{
    CheckOutcome, CheckStatus, ComponentReport, HealthVerdict, PoolVerdict, ReadinessRules,
    ReadinessVerdict,
};
#[cfg(feature = "redis")]
use crate::verdict::{FleetGuard, Standing};
use crate::view::published::{Made, Published};

/// The two cadences of rounds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cadence {
    /// Readiness rounds: every database; readiness and pool verdicts.
    Readiness,
    /// Health rounds: every database and component (or the shared entry); the health
    /// verdict.
    Health,
}

impl Cadence {
    fn as_str(self) -> &'static str {
        match self {
            Self::Readiness => "readiness",
            Self::Health => "health",
        }
    }
}

/// What one round concluded about every database.
pub(crate) struct DatabaseRound {
    pub(crate) outcomes: Vec<CheckOutcome>,
    pub(crate) started: Instant,
    pub(crate) finished_at: SystemTime,
}

/// What a health round computed by this process concluded.
pub(crate) struct HealthRound {
    pub(crate) default: Option<CheckOutcome>,
    pub(crate) others: Vec<CheckOutcome>,
    pub(crate) components: Vec<crate::verdict::ComponentReport>,
    pub(crate) started: Instant,
    pub(crate) finished_at: SystemTime,
}

/// What a round over the databases and the components concluded.
pub(crate) struct FullRound {
    pub(crate) outcomes: Vec<CheckOutcome>,
    pub(crate) components: Vec<crate::verdict::ComponentReport>,
    pub(crate) started: Instant,
    pub(crate) finished_at: SystemTime,
}

/// The reason a panicked round's verdicts give.
const ROUND_PANICKED: &str = "the round panicked; the next round runs as usual";

impl MonitorState {
    /// Runs one round of `cadence`. A panic anywhere in it costs that round only: its
    /// verdicts are published as failed (readiness `not_ready`, pool and health `error`,
    /// cause `panicked`), it is logged, and the caller goes on to the next round.
    pub(crate) async fn guarded(&self, cadence: Cadence) {
        let round = async {
            match cadence {
                Cadence::Readiness => self.readiness_round().await,
                Cadence::Health => drop(self.health_round().await),
            }
        };
        if let Err(panic) = crate::util::catch_unwind(round).await {
            // Reporting must not panic in turn: it renders fixed verdicts only, but it is
            // guarded all the same, for the monitor's life depends on it.
            let reported = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.round_panicked(cadence, &panic);
            }));
            if reported.is_err() {
                tracing::error!(
                    round = cadence.as_str(),
                    "reporting a panicked round panicked"
                );
            }
        }
    }

    /// Publishes what a round of `cadence` that panicked with `panic` concluded.
    pub(super) fn round_panicked(&self, cadence: Cadence, panic: &str) {
        let now = crate::clock::now();
        let checked_at = SystemTime::now();
        tracing::error!(
            round = cadence.as_str(),
            %panic,
            "a round panicked; it is reported as failed and the next round runs as usual"
        );
        match cadence {
            Cadence::Readiness => {
                self.counters
                    .readiness_round_panics
                    .fetch_add(1, Ordering::Relaxed);
                let made = self.made(now, now, self.config.readiness_interval);
                // The default database's check did not conclude: reported as an error of
                // its own, category `panicked`.
                let default = self.default_slot().first().map(|slot| CheckOutcome {
                    name: slot.name().clone(),
                    status: CheckStatus::Failed,
                    elapsed: Duration::ZERO,
                    running_for: None,
                    error: Some(CheckError::new(CheckErrorKind::Panicked, ROUND_PANICKED)),
                    detail: None,
                    critical: slot.is_critical(),
                    target: slot.target(),
                    details: None,
                });
                let default = default
                    .zip(self.default_slot().first())
                    .map(|(outcome, slot)| (outcome, slot.vendor(), None));
                let pool = PoolVerdict::from_outcome(default, checked_at);
                self.publish_pool_verdict(pool, made);
                let hold = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
                let mut verdict =
                    ReadinessVerdict::panicked(ROUND_PANICKED, checked_at, hold.clone());
                verdict.groups = self.group_verdicts(None);
                self.publish_readiness(verdict, made);
            }
            Cadence::Health => {
                self.counters
                    .health_round_panics
                    .fetch_add(1, Ordering::Relaxed);
                let made = self.made(now, now, self.config.health_interval);
                let verdict =
                    HealthVerdict::panicked("health", self.is_monitor_running(), checked_at)
                        .with_lifecycle(
                            self.held(),
                            self.store.startup.is_started(),
                            self.fleet_guard_now(),
                        );
                self.publish_health_verdict(verdict, made);
            }
        }
    }

    /// Checks `slots` in parallel under the one deadline.
    pub(crate) async fn round(&self, slots: &[CheckSlot]) -> DatabaseRound {
        let started = crate::clock::now();
        // Cannot overflow: the config keeps the timeout within `MAX_DURATION` (one year).
        let deadline = started + self.config.readiness_timeout;
        // Every check starts before the round waits on any, and the waits run together.
        let claims: Vec<_> = slots
            .iter()
            .map(|slot| slot.claim(started, &self.spawner))
            .collect();
        let outcomes = join_all(claims.into_iter().map(|claim| claim.outcome(deadline))).await;
        warn_on_overrun("readiness", started, deadline);
        DatabaseRound {
            outcomes,
            started,
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
        let started = round.started;
        self.counters
            .readiness_rounds
            .fetch_add(1, Ordering::Relaxed);
        let took = u64::try_from(crate::clock::since(started).as_nanos()).unwrap_or(u64::MAX);
        self.counters
            .readiness_round_nanos
            .store(took, Ordering::Relaxed);
        let default = self
            .default_index
            .map(|index| round.outcomes[index].clone());
        self.publish_pool(default, started, round.finished_at);
        self.follow_databases(&round);
        // Published and read before the hold's lock is taken: it is not held across an await.
        #[cfg(feature = "redis")]
        let guard = self.fleet_guard(&round.outcomes).await;
        let hold = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
        let mut verdict = ReadinessVerdict::from_outcomes(
            round.outcomes,
            self.gating_components(),
            self.readiness_rules(),
            round.finished_at,
            hold.clone(),
        );
        verdict.groups = self.group_verdicts(Some(&verdict.databases));
        // The fleet guard's decision, applied where readiness is decided: a hold placed
        // while the fleet was read still takes the process out.
        #[cfg(feature = "redis")]
        let verdict = match guard {
            Some(guard) => verdict.with_fleet_guard(guard),
            None => verdict,
        };
        let made = self.made(started, crate::clock::now(), self.config.readiness_interval);
        let guard_changed = self.store.readiness().verdict.fleet_guard != verdict.fleet_guard;
        self.publish_readiness(verdict, made);
        drop(hold);
        self.round_clock.round_finished();
        if self.store.startup.first_round_completed() || guard_changed {
            self.lifecycle_changed(self.held());
        }
    }

    /// One clock for every answer about a database: each readiness round (which checks every
    /// database every second anyway) republishes `/health` with its outcomes when they
    /// differ from what `/health` shows, and while it shows one that did not pass. A database
    /// readiness finds refused is `unhealthy` on `/health` in the same round, not a health
    /// interval later; a health round that met one slow moment does not keep `/health`
    /// failing for a whole health interval (Envoy's checker would take the host out
    /// meanwhile); a recovery shows within a readiness interval. The components stand as
    /// they are; no check more is run. Published before readiness's verdict, so that a
    /// reader that saw readiness's answer finds `/health` at least as new.
    fn follow_databases(&self, round: &DatabaseRound) {
        let current = self.store.health();
        if current.is_placeholder() {
            return;
        }
        let verdict = &current.verdict;
        let mut shown = verdict.database.iter().chain(&verdict.databases);
        let differs = round.outcomes.iter().any(|outcome| {
            shown
                .clone()
                .find(|shown| shown.name == outcome.name)
                .is_none_or(|shown| shown.status != outcome.status)
        });
        if !differs && shown.all(CheckOutcome::passed) {
            return;
        }
        // Ordered as the verdict it amends: a health round that started before this one and
        // publishes after it is newer news of its components, and must not be refused.
        let amends = current
            .when_made()
            .map_or(round.started, |made| made.round_started);
        drop(current);
        let (default, others) = self.split_default(round.outcomes.clone());
        let components = self
            .components
            .iter()
            .map(TrackedComponent::report)
            .collect();
        let made = self.made(amends, crate::clock::now(), self.config.health_interval);
        self.publish_health_from(default, others, components, round.finished_at, None, made);
    }

    /// Every database and every component due (all of them when `forced`), in parallel
    /// under the one deadline: what the health round and `?nocache=true` check.
    pub(crate) async fn full_round(&self, forced: Forced) -> FullRound {
        let started = crate::clock::now();
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
        // Waited for together: a component with a deadline of its own shorter than the
        // round's is looked at when that deadline comes, not once the databases are heard (a
        // hung component would otherwise read as a starved round, and stand as it was).
        let (outcomes, components) = join(
            join_all(databases.into_iter().map(|claim| claim.outcome(deadline))),
            join_all(
                claims
                    .into_iter()
                    .map(|claim| claim.report(started, deadline)),
            ),
        )
        .await;
        warn_on_overrun("health", started, deadline);
        FullRound {
            outcomes,
            components,
            started,
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
        self.publish_health(round)
    }

    /// The default database, the others and every component due, checked by this process in
    /// parallel under the one deadline.
    pub(crate) async fn computed_health(&self) -> HealthRound {
        let round = self.full_round(Forced::No).await;
        let started = round.started;
        self.counters.health_rounds.fetch_add(1, Ordering::Relaxed);
        let took = u64::try_from(crate::clock::since(started).as_nanos()).unwrap_or(u64::MAX);
        self.counters
            .health_round_nanos
            .store(took, Ordering::Relaxed);
        let (default, others) = self.split_default(round.outcomes);
        HealthRound {
            default,
            others,
            components: round.components,
            started,
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
    pub(super) fn gating_components(&self) -> Vec<ComponentReport> {
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
        round_started: Instant,
        finished_at: SystemTime,
    ) -> Arc<Published<PoolVerdict>> {
        let default = default
            .zip(self.default_slot().first())
            .map(|(outcome, slot)| (outcome, slot.vendor(), slot.pool_stats()));
        let verdict = PoolVerdict::from_outcome(default, finished_at);
        let made = self.made(
            round_started,
            crate::clock::now(),
            self.config.readiness_interval,
        );
        self.publish_pool_verdict(verdict, made)
    }

    /// Publishes a pool verdict, and tells watchers.
    fn publish_pool_verdict(
        &self,
        verdict: PoolVerdict,
        made: Made,
    ) -> Arc<Published<PoolVerdict>> {
        let published = self.store.made(verdict, made);
        self.store.publish_pool(&published);
        published
    }

    /// When a verdict of the round started at `round_started` on the cadence `interval`,
    /// its data computed at `computed_at`, was made: published now.
    pub(super) fn made(
        &self,
        round_started: Instant,
        computed_at: Instant,
        interval: Duration,
    ) -> Made {
        Made::now(round_started, computed_at, self.stale_after(interval))
    }

    /// Publishes the health verdict this process computed in `round`.
    pub(crate) fn publish_health(&self, round: HealthRound) -> Arc<Published<HealthVerdict>> {
        let made = self.made(
            round.started,
            crate::clock::now(),
            self.config.health_interval,
        );
        self.publish_health_from(
            round.default,
            round.others,
            round.components,
            round.finished_at,
            None,
            made,
        )
    }

    /// Builds and publishes a health verdict: computed here (`computed_by` is `None`), or
    /// the shared part another process computed (`computed_by` names it) with this
    /// process's own components merged in. This process's watchers (pool saturation, the
    /// shared cache's state) are added either way.
    pub(crate) fn publish_health_from(
        &self,
        default: Option<CheckOutcome>,
        others: Vec<CheckOutcome>,
        #[cfg_attr(not(feature = "redis"), allow(unused_mut))] mut components: Vec<ComponentReport>,
        finished_at: SystemTime,
        computed_by: Option<Arc<str>>,
        made: Made,
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
        verdict.computed_by = computed_by;
        let verdict = verdict.with_lifecycle(
            self.held(),
            self.store.startup.is_started(),
            self.fleet_guard_now(),
        );
        self.publish_health_verdict(verdict, made)
    }

    /// Publishes a health verdict, tells the view's watchers, and logs a transition.
    fn publish_health_verdict(
        &self,
        verdict: HealthVerdict,
        made: Made,
    ) -> Arc<Published<HealthVerdict>> {
        let published = self.store.made(verdict, made);
        if let Some(previous) = self.store.publish_health(&published) {
            log_health_transition(&self.counters, &previous.verdict, &published.verdict);
        }
        published
    }

    /// What the fleet guard concluded in the readiness verdict published now, for `/health`
    /// to list.
    fn fleet_guard_now(&self) -> Option<crate::verdict::FleetGuard> {
        self.store.readiness().verdict.fleet_guard.clone()
    }

    /// The hold, the start or the fleet guard's conclusion changed: `/health` shows them, so
    /// its verdict is republished
    /// with them (keeping its round's age), and watchers are told.
    pub(crate) fn lifecycle_changed(&self, held: Option<Arc<str>>) {
        let current = arc_swap::Guard::into_inner(self.store.health());
        if let Some(made) = current.when_made() {
            let verdict = current.verdict.with_lifecycle(
                held,
                self.store.startup.is_started(),
                self.fleet_guard_now(),
            );
            // The same round's verdict: it keeps its age and its staleness.
            self.publish_health_verdict(verdict, made);
        }
        self.store.notify();
    }

    /// What fails readiness, as configured.
    pub(super) fn readiness_rules(&self) -> ReadinessRules {
        ReadinessRules {
            fail_direction: self.config.fail_direction,
            unknown: self.config.unknown_components,
        }
    }

    /// Publishes a readiness verdict, tells the view's watchers, and logs a transition.
    /// The caller holds the hold's lock.
    pub(super) fn publish_readiness(&self, verdict: ReadinessVerdict, made: Made) {
        let previous = self.store.readiness();
        let now = crate::clock::now();
        let verdict = verdict
            .with_streaks(&previous.verdict, self.config.fail_direction, now)
            // The one place a return is decided: every reader judges by its instant.
            .with_return(
                &previous.verdict,
                is_out(&previous, now),
                self.config.debounce,
                || crate::random::part_of(self.config.return_jitter),
                now,
            );
        drop(previous);
        let published = self.store.made(verdict, made);
        if let Some(previous) = self.store.publish_readiness(&published) {
            log_readiness_transition(&self.counters, &previous.verdict, &published.verdict, now);
        }
    }
}

impl MonitorState {
    /// Whether a verdict that passes on its own (not kept by the fleet guard), published at
    /// `now`, waits out a return after an outage: one still ahead, or one it would begin.
    /// What the fleet standing says before the round publishes; the setting's whole delay
    /// stands in for the draw (a draw of zero is counted as waiting, for that round only).
    #[cfg(feature = "redis")]
    pub(super) fn would_wait_to_return(&self, now: Instant) -> bool {
        let previous = self.store.readiness();
        let out = is_out(&previous, now);
        let debounce = self.config.debounce;
        let jitter = || self.config.return_jitter;
        Return::after(&previous.verdict, out, true, false, debounce, jitter, now).is_pending(now)
    }
}

/// Ends a fresh computation when dropped, finished or not (its task cancelled, or dropped
/// before it ever ran): the next bypass starts over instead of waiting on a dead channel.
struct FreshDone(Arc<MonitorState>);

impl Drop for FreshDone {
    fn drop(&mut self) {
        self.0.fresh.abandon();
    }
}

impl MonitorState {
    /// Places (`Some`) or releases (`None`) the manual hold, and republishes readiness at
    /// once. Returns whether anything changed.
    pub(crate) fn set_hold(&self, reason: Option<Arc<str>>) -> bool {
        let mut hold = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
        if *hold == reason {
            return false;
        }
        hold.clone_from(&reason);
        let current = arc_swap::Guard::into_inner(self.store.readiness());
        // Before the first round (or once the monitor stopped) there is nothing to
        // re-render: the next round applies the hold.
        if let Some(made) = current.when_made() {
            // The hold and nothing else: the round's conclusion (the fleet guard's, a
            // panicked round's reason) is what a release restores. The same round's verdict:
            // it keeps its age and its staleness.
            self.publish_readiness(current.verdict.with_hold(reason.clone()), made);
        }
        drop(hold);
        self.lifecycle_changed(reason.clone());
        match reason {
            Some(reason) => tracing::warn!(%reason, "readiness held by the operator"),
            None => tracing::info!("readiness hold released"),
        }
        true
    }

    /// Starts (or joins, or reuses within the rate limit) a fresh computation of the health
    /// and pool verdicts.
    pub(crate) fn fresh(self: &Arc<Self>) -> FreshWait {
        let now = crate::clock::now();
        let (sender, wait) = match self.fresh.begin(self.config.nocache_min_interval, now) {
            Begun::Existing(wait) => return wait,
            Begun::New { sender, wait } => (sender, wait),
        };
        let monitor = Arc::clone(self);
        // Made before spawning: a task dropped before its first poll runs none of its code.
        let done = FreshDone(Arc::clone(self));
        // Spawned, so that a client that goes away does not cancel what others wait for.
        self.spawner.spawn(async move {
            let _done = done;
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
                if let Err(error) = monitor.write_entry(&shared.verdicts, &round, None).await {
                    shared
                        .record(Some(error), &monitor.counters, &monitor.spawner)
                        .await;
                }
            }
            let pool =
                monitor.publish_pool(round.default.clone(), round.started, round.finished_at);
            let health = monitor.publish_health(round);
            let fresh = Fresh { health, pool };
            monitor.fresh.finish(fresh.clone());
            let _ = sender.send(Some(fresh));
        });
        wait
    }
}

/// Whether `published` is out of the rotation by its age at `now` (a placeholder, or stale):
/// a verdict that passes after it comes back at once.
fn is_out(published: &Published<ReadinessVerdict>, now: Instant) -> bool {
    published.is_placeholder() || published.is_stale(now)
}

/// Warns when a round finished well past its deadline (by more than [`STARVED_AFTER`]). A
/// round waits for its checks only until the deadline, so lateness means the runtime did not
/// run the monitor on time (a blocked worker thread, CPU starvation): once per round that
/// overran, never per probe. Its timeouts were not counted (see [`CheckSlot`]).
fn warn_on_overrun(round: &'static str, started: Instant, deadline: Instant) {
    let finished = crate::clock::now();
    let late = finished.saturating_duration_since(deadline);
    if late > STARVED_AFTER {
        tracing::warn!(
            round,
            took = ?finished.duration_since(started),
            deadline = ?deadline.duration_since(started),
            late = ?late,
            "a round overran its deadline: the runtime is blocked or starved; the checks it could not hear keep the result heard before"
        );
    }
}

/// The rounds with a shared cache: serve the fleet's entry when it is fresh, else race for the
/// lock and compute, falling back to this process's own verdict whenever Redis is in trouble;
/// and the fleet guard's part of a readiness round. See [`crate::redis`].
#[cfg(feature = "redis")]
impl MonitorState {
    /// The fleet guard's part of a readiness round: publishes where this process stands on
    /// `outcomes` (this round's) and, when it is out only on dependencies the fleet shares,
    /// what the guard concludes from the fleet's standings. `None` when the guard is off,
    /// when this process is ready or out for a cause of its own, and when Redis does not
    /// answer: readiness is then this process's own.
    pub(super) async fn fleet_guard(
        &self,
        outcomes: &[crate::verdict::CheckOutcome],
    ) -> Option<FleetGuard> {
        let fleet = self.shared.as_ref()?.fleet.as_ref()?;
        let verdict = ReadinessVerdict::from_outcomes(
            outcomes.to_vec(),
            self.gating_components(),
            self.readiness_rules(),
            std::time::SystemTime::now(),
            self.held(),
        );
        let draining = self.store.is_draining();
        let returning = verdict.passes() && self.would_wait_to_return(crate::clock::now());
        let standing = self.standing(&verdict, draining, returning);
        let deadline = crate::clock::now() + self.config.readiness_timeout;
        let members = fleet.publish_and_read(&standing, deadline).await.ok()?;
        match standing {
            Standing::Shared { cause } => Some(FleetGuard::decide(
                &fleet.process_id,
                cause,
                &members,
                fleet.fraction,
            )),
            Standing::Ready | Standing::Local | Standing::Returning => None,
        }
    }

    /// Where this process stands on `verdict` (its checks and its hold), as the fleet
    /// reads it.
    fn standing(&self, verdict: &ReadinessVerdict, draining: bool, returning: bool) -> Standing {
        Standing::of(
            verdict,
            draining,
            returning,
            self.readiness_rules(),
            |name| {
                self.components
                    .iter()
                    .any(|component| *component.name() == *name && component.is_shared())
            },
        )
    }

    /// Writes this process's standing now, between rounds: the instant its return's delay
    /// runs out, it is in rotation, and the fleet reads so at once rather than a round
    /// later. Nothing when the guard is off, or when the published verdict is the guard's
    /// to keep (its standing is the round's, written by the round).
    pub(super) async fn standing_changed(&self) {
        let Some(fleet) = self
            .shared
            .as_ref()
            .and_then(|shared| shared.fleet.as_ref())
        else {
            return;
        };
        let published = self.store.readiness();
        let verdict = &published.verdict;
        if verdict.fleet_guard.is_some() || published.is_placeholder() {
            return;
        }
        let now = crate::clock::now();
        let returning = verdict.passes() && verdict.returned.is_pending(now);
        let standing = self.standing(verdict, self.store.is_draining(), returning);
        drop(published);
        let deadline = now + self.config.readiness_timeout;
        // The guard's decision is the next round's: what is read here is not used.
        let _ = fleet.publish_and_read(&standing, deadline).await;
    }

    pub(super) async fn shared_health_round(
        &self,
        shared: &SharedRounds,
    ) -> Arc<Published<HealthVerdict>> {
        let round_started = crate::clock::now();
        let deadline = round_started + self.config.readiness_timeout;
        let read = shared.verdicts.read(deadline).await;
        // The instant the entry's round ended, by Redis's clock: what `age_ms` counts from.
        let computed_at = |age: Duration| {
            let now = crate::clock::now();
            now.checked_sub(age).unwrap_or(now)
        };
        let (previous, problem) = match read {
            Read::Found(entry, age) if shared.verdicts.is_fresh(age) => {
                shared.record(None, &self.counters, &self.spawner).await;
                return self
                    .serve_shared(entry, computed_at(age), round_started)
                    .await;
            }
            Read::Found(entry, age) => (Some((entry, age, computed_at(age))), None),
            Read::Missing => (None, None),
            Read::Invalid(error) => (None, Some(error)),
            Read::Failed(error) => {
                // Redis is in trouble: no lock, no write, this process's own verdict.
                shared
                    .record(Some(error), &self.counters, &self.spawner)
                    .await;
                return self.compute_and_publish(None).await;
            }
        };
        match shared.verdicts.lock(deadline).await {
            Ok(Some(lock)) => {
                self.compute_and_publish(Some((shared, problem, lock)))
                    .await
            }
            Ok(None) => {
                shared.record(problem, &self.counters, &self.spawner).await;
                match previous {
                    // Another process computes: keep serving the entry there is.
                    Some((entry, age, computed_at)) if age < shared.verdicts.keep => {
                        self.serve_shared(entry, computed_at, round_started).await
                    }
                    // None to serve (the fleet's first round): this process's own, unwritten.
                    _ => self.compute_and_publish(None).await,
                }
            }
            Err(error) => {
                shared
                    .record(Some(error), &self.counters, &self.spawner)
                    .await;
                self.compute_and_publish(None).await
            }
        }
    }

    /// Computes this process's verdict; with `write` (the lock won, and what the read found
    /// wrong, if anything), writes the entry before publishing.
    async fn compute_and_publish(
        &self,
        write: Option<(&SharedRounds, Option<CheckError>, Lock)>,
    ) -> Arc<Published<HealthVerdict>> {
        let round = self.computed_health().await;
        if let Some((shared, problem, lock)) = write {
            let written = self
                .write_entry(&shared.verdicts, &round, Some(&lock))
                .await
                .err();
            shared
                .record(problem.or(written), &self.counters, &self.spawner)
                .await;
        }
        self.publish_health(round)
    }

    /// Writes the shared part of `round` as the entry, bounded by the round's deadline:
    /// under `lock`, only while the lock is still this process's.
    pub(super) async fn write_entry(
        &self,
        verdicts: &SharedVerdicts,
        round: &HealthRound,
        lock: Option<&Lock>,
    ) -> Result<(), CheckError> {
        let components = self
            .components
            .iter()
            .zip(&round.components)
            .filter(|(component, _)| component.is_shared())
            .map(|(_, report)| report.clone())
            .collect();
        let entry = Entry {
            computed_at: round.finished_at,
            computed_by: verdicts.process_id.clone(),
            keep: verdicts.keep,
            database: round.default.clone(),
            databases: round.others.clone(),
            components,
        };
        let deadline = crate::clock::now() + self.config.readiness_timeout;
        verdicts.write(&entry, lock, deadline).await.map(drop)
    }

    /// Serves `entry`, computed at `computed_at`: its databases and shared components, this
    /// process's own components checked now. Serving it is a live round: its verdict goes
    /// stale as one computed here would.
    async fn serve_shared(
        &self,
        entry: Entry,
        computed_at: Instant,
        round_started: Instant,
    ) -> Arc<Published<HealthVerdict>> {
        self.counters.shared_rounds.fetch_add(1, Ordering::Relaxed);
        let started = crate::clock::now();
        let deadline = started + self.config.readiness_timeout;
        for component in self.components.iter().filter(|c| c.is_shared()) {
            if let Some(report) = entry
                .components
                .iter()
                .find(|r| *r.name == *component.name())
            {
                component.adopt(report);
            }
        }
        // Every local check starts before the round waits on any.
        let claims: Vec<_> = self
            .components
            .iter()
            .map(|component| {
                (!component.is_shared())
                    .then(|| component.claim(started, &self.spawner, Forced::No))
            })
            .collect();
        let components = join_all(self.components.iter().zip(claims).map(
            |(component, claim)| async move {
                match claim {
                    Some(claim) => claim.report(started, deadline).await,
                    None => component.report(),
                }
            },
        ))
        .await;
        let made = self.made(round_started, computed_at, self.config.health_interval);
        self.publish_health_from(
            entry.database,
            entry.databases,
            components,
            entry.computed_at,
            Some(entry.computed_by),
            made,
        )
    }
}
