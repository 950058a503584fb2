//! The health round with a shared cache: serve the fleet's entry when it is fresh, else race
//! for the lock and compute, falling back to this process's own verdict whenever Redis is in
//! trouble. See [`crate::redis`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::components::{Forced, TrackedComponent};
use super::slot::CheckSlot;
use super::state::{HealthRound, MonitorState};
use crate::check::CheckError;
use crate::component::ComponentSpec;
use crate::config::HealthConfig;
use crate::redis::{
    CacheStatus, Entry, Expected, FleetMembers, Lock, Read, SHARED_CACHE_COMPONENT, SharedVerdicts,
    Subject,
};
use crate::util::join_all;
use crate::verdict::{ComponentReport, FleetGuard, HealthVerdict, ReadinessVerdict, Standing};
use crate::view::published::Published;

/// The shared cache of a monitor, the component that reports it, and the fleet guard.
#[derive(Debug)]
pub(crate) struct SharedRounds {
    verdicts: SharedVerdicts,
    cache: TrackedComponent,
    /// The fleet's members, when the fleet guard is on.
    fleet: Option<FleetMembers>,
}

impl SharedRounds {
    /// The shared cache of a monitor checking `slots` (its databases, the default at
    /// `default_index`) and `components`, if its configuration has one.
    pub(crate) fn new(
        config: &HealthConfig,
        slots: &[CheckSlot],
        default_index: Option<usize>,
        components: &[TrackedComponent],
        limit: Duration,
        stale_after: Duration,
    ) -> Option<Self> {
        let cache = config.shared_cache.as_ref()?;
        let databases = default_first(slots, default_index)
            .map(|slot| Subject {
                name: slot.name().clone(),
                target: slot.target(),
                critical: slot.is_critical(),
            })
            .collect();
        let shared = components
            .iter()
            .filter(|component| component.is_shared())
            .map(TrackedComponent::subject)
            .collect();
        let verdicts = SharedVerdicts::new(
            cache,
            config.health_interval,
            config.readiness_timeout,
            stale_after,
            Expected::new(databases, shared),
        );
        let status = CacheStatus {
            verdicts: verdicts.clone(),
            target: cache.target.as_deref().map(str::to_owned),
        };
        let spec = ComponentSpec::new(SHARED_CACHE_COMPONENT, status);
        // A member counts as long as its readiness would stay fresh.
        let member_expiry =
            crate::config::stale_bound(config.readiness_interval, config.readiness_timeout);
        // The entry's fingerprint, computed once: the fleet is scoped to the configuration
        // as the entry is.
        let fleet = FleetMembers::new(
            cache,
            verdicts.process_id.clone(),
            verdicts.expected.fingerprint.clone(),
            member_expiry,
        );
        Some(Self {
            verdicts,
            cache: TrackedComponent::new(
                &spec,
                limit,
                super::state::component_carry(config, &spec),
            ),
            fleet,
        })
    }

    /// The fleet guard's view of the fleet, for the operator's page: this process's id, the
    /// fraction it keeps, and the members the last round read (`None` when the guard is off).
    #[cfg(feature = "page")]
    pub(crate) fn fleet(&self) -> Option<(Arc<str>, f64, Option<crate::redis::FleetSeen>)> {
        let fleet = self.fleet.as_ref()?;
        Some((
            fleet.process_id.clone(),
            fleet.fraction.as_f64(),
            fleet.seen(),
        ))
    }

    /// The `shared_cache` component's check slot, for its history.
    pub(crate) fn cache_slot(&self) -> &CheckSlot {
        &self.cache.slot
    }

    /// The `shared_cache` component, as the last round left it.
    pub(crate) fn report(&self) -> ComponentReport {
        self.cache.report()
    }

    /// Whether a `?nocache=true` computation writes the entry.
    pub(crate) fn nocache_writes(&self) -> bool {
        self.verdicts.nocache_writes
    }

    /// How this process signs what it computes.
    pub(crate) fn process_id(&self) -> &Arc<str> {
        &self.verdicts.process_id
    }

    /// Writes a `?nocache=true` computation's shared part as the entry.
    pub(crate) async fn write_fresh(&self, monitor: &MonitorState, round: &HealthRound) {
        if let Err(error) = monitor.write_entry(&self.verdicts, round, None).await {
            self.record(Some(error), monitor).await;
        }
    }

    /// Records how the round went with Redis, and updates the component from it.
    async fn record(&self, problem: Option<CheckError>, monitor: &MonitorState) {
        if problem.is_some() {
            monitor
                .counters
                .shared_cache_errors
                .fetch_add(1, Ordering::Relaxed);
        }
        self.verdicts.record(problem);
        let started = crate::clock::now();
        let claim = self.cache.claim(started, &monitor.spawner, Forced::Yes);
        // The check reads what was just recorded: it finishes at once.
        claim
            .report(started, started + Duration::from_secs(1))
            .await;
    }
}

/// `slots` as a health verdict lists them: the default first.
fn default_first(
    slots: &[CheckSlot],
    default_index: Option<usize>,
) -> impl Iterator<Item = &CheckSlot> {
    let default = default_index.and_then(|index| slots.get(index));
    default.into_iter().chain(
        slots
            .iter()
            .enumerate()
            .filter(move |(index, _)| Some(*index) != default_index)
            .map(|(_, slot)| slot),
    )
}

impl MonitorState {
    /// The fleet as this process's fleet guard sees it (see [`SharedRounds::fleet`]); `None`
    /// without the guard.
    #[cfg(feature = "page")]
    pub(crate) fn fleet(&self) -> Option<(Arc<str>, f64, Option<crate::redis::FleetSeen>)> {
        self.shared.as_ref()?.fleet()
    }

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
                shared.record(None, self).await;
                return self
                    .serve_shared(entry, computed_at(age), round_started)
                    .await;
            }
            Read::Found(entry, age) => (Some((entry, age, computed_at(age))), None),
            Read::Missing => (None, None),
            Read::Invalid(error) => (None, Some(error)),
            Read::Failed(error) => {
                // Redis is in trouble: no lock, no write, this process's own verdict.
                shared.record(Some(error), self).await;
                return self.compute_and_publish(None).await;
            }
        };
        match shared.verdicts.lock(deadline).await {
            Ok(Some(lock)) => {
                self.compute_and_publish(Some((shared, problem, lock)))
                    .await
            }
            Ok(None) => {
                shared.record(problem, self).await;
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
                shared.record(Some(error), self).await;
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
            shared.record(problem.or(written), self).await;
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
