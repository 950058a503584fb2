//! What the monitor, its handles and the layers share: the configuration, the database
//! slots, the published verdicts, and the monitor's own state.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::components::{TrackedComponent, carry_for};
use super::counters::{Counters, MonitorStats};
use super::fresh::FreshRounds;
use super::history::{CheckHistory, CheckKind};
use super::lag::{MONITOR_COMPONENT, RoundClock, RoundLag};
use super::slot::CheckSlot;
use super::spawner::Spawner;
use crate::config::{HealthConfig, stale_bound};
use crate::load::{Gauge, Rates, Utilization};
use crate::shutdown::DrainHandle;
use crate::verdict::{
    CheckOutcome, ComponentReport, GroupVerdict, HealthVerdict, PoolVerdict, ReadinessRules,
    ReadinessVerdict,
};
use crate::view::{Known, Placeholders, Store};

#[derive(Debug)]
pub(crate) struct MonitorState {
    pub(crate) config: HealthConfig,
    pub(super) slots: Vec<CheckSlot>,
    pub(super) components: Vec<TrackedComponent>,
    /// When the last readiness round finished, for self-monitoring.
    pub(super) round_clock: Arc<RoundClock>,
    pub(super) default_index: Option<usize>,
    /// What the monitor publishes, and the lifecycle beside it: written here only.
    pub(crate) store: Arc<Store>,
    pub(super) fresh: FreshRounds,
    /// Where checks and bypasses run: the monitor's runtime, once `run` has started.
    pub(super) spawner: Spawner,
    /// The manual hold's reason, while one is in place. Also serialises readiness
    /// publications, so that a round that read the hold before it changed cannot publish
    /// after the change.
    pub(super) hold: Mutex<Option<Arc<str>>>,
    pub(crate) counters: Counters,
    /// The load estimate, when the application declared a capacity
    /// ([`HealthConfig::load_capacity`]).
    pub(crate) load: Option<Gauge>,
    /// The health verdict shared through Redis, if configured.
    #[cfg(feature = "redis")]
    pub(super) shared: Option<super::shared::SharedRounds>,
}

const NO_ROUND_YET: &str = "no round has completed yet";
const MONITOR_STOPPED: &str = "the health monitor is not running";

impl MonitorState {
    pub(crate) fn new(config: HealthConfig) -> Self {
        let limit = config.check_limit.max(config.readiness_timeout);
        // A result heard stands in for a starved round's timeout as long as a verdict of the
        // cadence that checks it stays fresh.
        let database_carry = stale_bound(config.readiness_interval, config.readiness_timeout);
        let slots: Vec<CheckSlot> = config
            .databases
            .iter()
            .map(|entry| {
                let critical = !config.is_optional(&entry.name);
                CheckSlot::database(entry, critical, limit, database_carry)
            })
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
                TrackedComponent::new(&spec, limit, carry_for(&config, &spec))
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
            components.push(TrackedComponent::new(
                &spec,
                limit,
                carry_for(&config, &spec),
            ));
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
        #[cfg(feature = "redis")]
        let shared = super::shared::SharedRounds::new(
            &config,
            &slots,
            default_index,
            &components,
            limit,
            stale_bound(config.health_interval, config.readiness_timeout),
        );
        let store = Store::new(
            placeholders(&config, NO_ROUND_YET, false),
            config.startup_waits_for_mark,
            known(&config),
            DrainHandle::new(config.drain.clone()),
        );
        let load = std::num::NonZeroU32::new(config.load_capacity).map(|capacity| {
            let idle = crate::dialect::orca::reports(Utilization::IDLE, Rates::IDLE);
            Gauge::new(capacity, idle)
        });
        Self {
            config,
            slots,
            components,
            round_clock,
            default_index,
            store: Arc::new(store),
            fresh: FreshRounds::default(),
            spawner: Spawner::default(),
            hold: Mutex::new(None),
            counters: Counters::default(),
            load,
            #[cfg(feature = "redis")]
            shared,
        }
    }

    pub(crate) fn is_monitor_running(&self) -> bool {
        self.store.is_running()
    }

    pub(crate) fn set_monitor_running(&self, running: bool) {
        self.store.set_running(running, || {
            placeholders(&self.config, MONITOR_STOPPED, false)
        });
    }

    /// This process's id, when it shares its verdicts through Redis.
    pub(crate) fn shared_process_id(&self) -> Option<Arc<str>> {
        #[cfg(feature = "redis")]
        return self
            .shared
            .as_ref()
            .map(|shared| shared.process_id().clone());
        #[cfg(not(feature = "redis"))]
        None
    }

    pub(crate) fn stats(&self) -> MonitorStats {
        MonitorStats {
            readiness_rounds: self.counters.readiness_rounds.load(Ordering::Relaxed),
            health_rounds: self.counters.health_rounds.load(Ordering::Relaxed),
            shared_rounds: self.counters.shared_rounds.load(Ordering::Relaxed),
            shared_cache_errors: self.counters.shared_cache_errors.load(Ordering::Relaxed),
            panicked_rounds: self.counters.readiness_round_panics.load(Ordering::Relaxed)
                + self.counters.health_round_panics.load(Ordering::Relaxed),
            fresh_rounds: self.counters.fresh_rounds.load(Ordering::Relaxed),
            checks_started: self.slots.iter().map(CheckSlot::checks_started).sum(),
            component_checks_started: self
                .components
                .iter()
                .map(|component| component.slot.checks_started())
                .sum(),
        }
    }

    /// Failed checks so far, per database or component and category (each check that
    /// finished with an error counts once, however many rounds waited for it).
    pub(crate) fn check_failures(&self) -> Vec<(Arc<str>, crate::check::CheckErrorKind, u64)> {
        self.slots
            .iter()
            .chain(self.components.iter().map(|component| &component.slot))
            .flat_map(CheckSlot::failures)
            .collect()
    }

    /// The groups' verdicts from a round's `databases` (`None`: no round's) and the
    /// components as they stand.
    pub(super) fn group_verdicts(&self, databases: Option<&[CheckOutcome]>) -> Vec<GroupVerdict> {
        if self.config.groups.is_empty() {
            return Vec::new();
        }
        let components: Vec<ComponentReport> = self
            .components
            .iter()
            .map(TrackedComponent::report)
            .collect();
        group_verdicts(&self.config, databases, &components)
    }

    /// The manual hold's reason, if one is in place.
    pub(crate) fn held(&self) -> Option<Arc<str>> {
        self.hold
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The fleet as this process's fleet guard sees it (see `SharedRounds::fleet`); `None`
    /// without the guard.
    #[cfg(feature = "redis")]
    pub(crate) fn fleet(&self) -> Option<(Arc<str>, f64, Option<crate::redis::FleetSeen>)> {
        self.shared.as_ref()?.fleet()
    }

    /// Every check's history: the databases, then the components (the shared cache's among
    /// them), in the order configured.
    pub(crate) fn histories(&self) -> Vec<CheckHistory> {
        self.history_slots()
            .map(|(kind, slot)| {
                slot.history().snapshot(
                    slot.name().clone(),
                    kind,
                    slot.is_critical(),
                    slot.target(),
                )
            })
            .collect()
    }

    /// Every check's flap count (see [`History::flaps`]), by name.
    pub(crate) fn flaps(&self) -> Vec<(Arc<str>, u32)> {
        self.history_slots()
            .map(|(_, slot)| (slot.name().clone(), slot.history().flaps()))
            .collect()
    }

    /// The shared cache component's slot, when there is one.
    fn shared_cache_slot(&self) -> Option<&CheckSlot> {
        #[cfg(feature = "redis")]
        return self
            .shared
            .as_ref()
            .map(super::shared::SharedRounds::cache_slot);
        #[cfg(not(feature = "redis"))]
        None
    }

    fn history_slots(&self) -> impl Iterator<Item = (CheckKind, &CheckSlot)> {
        let databases = self.slots.iter().map(|slot| (CheckKind::Database, slot));
        let components = self
            .components
            .iter()
            .map(|component| &component.slot)
            .chain(self.shared_cache_slot())
            .map(|slot| (CheckKind::Component, slot));
        databases.chain(components)
    }

    /// The staleness bound of verdicts refreshed every `interval`: three missed rounds.
    /// Saturating, so that no setting can make it panic (the config bounds every duration by
    /// `MAX_DURATION` anyway, and `Published` treats a bound past the clock's range as none).
    pub(super) fn stale_after(&self, interval: Duration) -> Duration {
        stale_bound(interval, self.config.readiness_timeout)
    }
}

/// What the readers may know of `config`'s monitor.
fn known(config: &HealthConfig) -> Known {
    let names = |names: &mut dyn Iterator<Item = &str>| names.map(Arc::from).collect();
    Known {
        databases: names(&mut config.database_names()),
        components: names(&mut config.component_names()),
        groups: names(&mut config.group_names()),
        rules: ReadinessRules {
            fail_direction: config.fail_direction,
            unknown: config.unknown_components,
        },
        readiness_stale: stale_bound(config.readiness_interval, config.readiness_timeout),
        health_stale: stale_bound(config.health_interval, config.readiness_timeout),
        debounce: config.debounce,
    }
}

fn placeholders(config: &HealthConfig, reason: &'static str, self_healing: bool) -> Placeholders {
    let mut readiness = ReadinessVerdict::unavailable(reason);
    readiness.groups = group_verdicts(config, None, &[]);
    Placeholders {
        readiness,
        health: HealthVerdict::unavailable(reason, self_healing),
        pool: PoolVerdict::unavailable(reason),
    }
}

/// Every group's verdict from `databases` (`None`: unavailable) and `components`.
fn group_verdicts(
    config: &HealthConfig,
    databases: Option<&[CheckOutcome]>,
    components: &[ComponentReport],
) -> Vec<GroupVerdict> {
    let rules = ReadinessRules {
        fail_direction: config.fail_direction,
        unknown: config.unknown_components,
    };
    config
        .groups
        .iter()
        .map(|group| {
            let members = group
                .members
                .iter()
                .map(|member| (&member.check, member.optional));
            match databases {
                Some(databases) => {
                    GroupVerdict::of(group.name.clone(), members, databases, components, rules)
                }
                None => GroupVerdict::unavailable(group.name.clone(), members),
            }
        })
        .collect()
}
