//! What a monitor with a shared cache keeps beside its checks: the shared verdicts, the
//! component that reports Redis's state, and the fleet's members for the fleet guard. The
//! rounds that use them (`rounds.rs`) serve the fleet's entry when it is fresh, else race for
//! the lock and compute, falling back to this process's own verdict whenever Redis is in
//! trouble. See [`crate::redis`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::components::{Forced, TrackedComponent, carry_for};
use super::counters::Counters;
use super::slot::CheckSlot;
use super::spawner::Spawner;
use crate::check::CheckError;
use crate::component::ComponentSpec;
use crate::config::HealthConfig;
use crate::redis::{
    CacheStatus, Expected, FleetMembers, SHARED_CACHE_COMPONENT, SharedVerdicts, Subject,
};
use crate::verdict::ComponentReport;

/// The shared cache of a monitor, the component that reports it, and the fleet guard.
#[derive(Debug)]
pub(crate) struct SharedRounds {
    pub(super) verdicts: SharedVerdicts,
    cache: TrackedComponent,
    /// The fleet's members, when the fleet guard is on.
    pub(super) fleet: Option<FleetMembers>,
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
            cache: TrackedComponent::new(&spec, limit, carry_for(config, &spec)),
            fleet,
        })
    }

    /// The fleet guard's view of the fleet, for the operator's page: this process's id, the
    /// fraction it keeps, and the members the last round read (`None` when the guard is off).
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

    /// Records how the round went with Redis (counted in `counters`), and updates the
    /// component from it, its check run on `spawner`.
    pub(super) async fn record(
        &self,
        problem: Option<CheckError>,
        counters: &Counters,
        spawner: &Spawner,
    ) {
        if problem.is_some() {
            counters.shared_cache_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.verdicts.record(problem);
        let started = crate::clock::now();
        let claim = self.cache.claim(started, spawner, Forced::Yes);
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
