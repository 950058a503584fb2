//! What the monitor, its handles and the layers share: the configuration, the database
//! slots, the published verdicts, and the monitor's own state.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use super::components::TrackedComponent;
use super::fresh::FreshRounds;
use super::handle::MonitorStats;
use super::lag::{MONITOR_COMPONENT, RoundClock, RoundLag};
use super::slot::CheckSlot;
use super::spawner::Spawner;
use crate::config::{HealthConfig, stale_bound};
use crate::shutdown::DrainHandle;
use crate::verdict::{
    CheckOutcome, ComponentReport, GroupVerdict, HealthVerdict, PoolVerdict, ReadinessRules,
    ReadinessVerdict,
};
use crate::view::{Known, Placeholders, Source, Store, View};

#[derive(Debug)]
pub(crate) struct MonitorState {
    pub(crate) config: HealthConfig,
    pub(super) slots: Vec<CheckSlot>,
    pub(super) components: Vec<TrackedComponent>,
    /// When the last readiness round finished, for self-monitoring.
    pub(super) round_clock: Arc<RoundClock>,
    pub(super) default_index: Option<usize>,
    /// What the monitor publishes, and the lifecycle beside it: written here only.
    pub(crate) store: Store,
    pub(super) fresh: FreshRounds,
    /// Where checks and bypasses run: the monitor's runtime, once `run` has started.
    pub(super) spawner: Spawner,
    /// The manual hold's reason, while one is in place. Also serialises readiness
    /// publications, so that a round that read the hold before it changed cannot publish
    /// after the change.
    pub(super) hold: Mutex<Option<Arc<str>>>,
    pub(crate) counters: Counters,
    /// The health verdict shared through Redis, if configured.
    #[cfg(feature = "redis")]
    pub(super) shared: Option<super::shared_round::SharedRounds>,
}

/// The monitor's work so far (the checks started are counted by each slot).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) readiness_rounds: AtomicU64,
    pub(crate) health_rounds: AtomicU64,
    /// Health rounds that served the shared cache's entry instead of computing.
    pub(crate) shared_rounds: AtomicU64,
    /// Health rounds in which Redis failed or the entry could not be served.
    pub(crate) shared_cache_errors: AtomicU64,
    /// Readiness rounds that panicked (reported, and the next round run).
    pub(crate) readiness_round_panics: AtomicU64,
    /// Health rounds that panicked (reported, and the next round run).
    pub(crate) health_round_panics: AtomicU64,
    pub(crate) fresh_rounds: AtomicU64,
    /// How long the last readiness round's checks took, in nanoseconds.
    pub(crate) readiness_round_nanos: AtomicU64,
    /// How long the last health round's checks took, in nanoseconds.
    pub(crate) health_round_nanos: AtomicU64,
    /// Readiness transitions logged, the first verdict included.
    pub(crate) readiness_transitions: AtomicU64,
    /// Health status transitions logged, the first verdict included.
    pub(crate) health_transitions: AtomicU64,
}

/// What one round concluded about every database.
pub(crate) struct Round {
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

const NO_ROUND_YET: &str = "no round has completed yet";
const MONITOR_STOPPED: &str = "the health monitor is not running";

impl Source for MonitorState {
    fn view(&self) -> View {
        self.store.view()
    }

    fn changes(&self) -> watch::Receiver<()> {
        self.store.changes()
    }

    fn drain_started(&self) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let drain = self.store.drain().clone();
        Box::pin(async move { drain.started().await })
    }
}

impl MonitorState {
    pub(crate) fn new(config: HealthConfig) -> Self {
        let limit = config.check_limit.max(config.readiness_timeout);
        // A result heard stands in for a starved round's timeout as long as a verdict of the
        // cadence that checks it stays fresh.
        let carry_for = stale_bound(config.readiness_interval, config.readiness_timeout);
        let slots: Vec<CheckSlot> = config
            .databases
            .iter()
            .map(|entry| {
                let critical = !config.is_optional(&entry.name);
                CheckSlot::database(entry, critical, limit, carry_for)
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
                TrackedComponent::new(&spec, limit, component_carry(&config, &spec))
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
                component_carry(&config, &spec),
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
        let shared = super::shared_round::SharedRounds::new(
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
        Self {
            config,
            slots,
            components,
            round_clock,
            default_index,
            store,
            fresh: FreshRounds::default(),
            spawner: Spawner::default(),
            hold: Mutex::new(None),
            counters: Counters::default(),
            #[cfg(feature = "redis")]
            shared,
        }
    }

    pub(crate) fn fresh_rounds(&self) -> &FreshRounds {
        &self.fresh
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
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
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

    /// The staleness bound of verdicts refreshed every `interval`: three missed rounds.
    /// Saturating, so that no setting can make it panic (the config bounds every duration by
    /// `MAX_DURATION` anyway, and `Published` treats a bound past the clock's range as none).
    pub(super) fn stale_after(&self, interval: Duration) -> Duration {
        stale_bound(interval, self.config.readiness_timeout)
    }
}

/// How long a component's result stands in for a starved round's timeout: a health
/// verdict's staleness bound, over the component's own cadence when it is slower.
pub(super) fn component_carry(
    config: &HealthConfig,
    spec: &crate::component::ComponentSpec,
) -> Duration {
    let cadence = spec.cadence.unwrap_or_default().max(config.health_interval);
    stale_bound(cadence, config.readiness_timeout)
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
