use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::databases::DatabaseEntry;
use super::readers::Readers;
use super::{ConfigError, ConfigWarning, FailDirection, FirstError};

use crate::component::{ComponentSpec, UnknownComponents};

/// The return's jitter when none is set ([`HealthConfig::return_jitter`]).
pub(crate) const DEFAULT_RETURN_JITTER: Duration = Duration::from_secs(5);

/// Settings of the monitor, and the defaults of its readers' own settings.
///
/// Its setters never fail: a value a setter cannot take is recorded (the first one, naming
/// the setter) and returned by [`HealthMonitor::new`](crate::HealthMonitor::new) and
/// [`HealthMonitor::spawn`](crate::HealthMonitor::spawn), the one place the configuration
/// is checked. [`from_env`](Self::from_env) refuses a bad variable at once, naming it.
///
/// # Settings by owner
///
/// Each concern is one `impl` block below, headed by its owner, and one file of
/// `src/config/`:
///
/// | Owner | Setters | File |
/// |---|---|---|
/// | [Making one](#making-one) | [`new`](Self::new), [`warnings`](Self::warnings) | `health.rs` |
/// | [The environment](#the-environment) | [`from_env`](Self::from_env), [`from_vars`](Self::from_vars) | `health_env.rs` |
/// | [What is checked](#what-is-checked) | [`database`](Self::database), [`optional_database`](Self::optional_database), [`without_databases`](Self::without_databases), [`component`](Self::component), [`unknown_components`](Self::unknown_components), [`self_monitoring`](Self::self_monitoring) | `registry.rs` |
/// | [Health groups](#health-groups) | [`group`](Self::group) | `groups.rs` |
/// | [The rounds, the return and the drain](#the-rounds-the-return-and-the-drain) | [`readiness_timeout`](Self::readiness_timeout), [`readiness_interval`](Self::readiness_interval), [`health_interval`](Self::health_interval), [`fail_direction`](Self::fail_direction), [`debounce`](Self::debounce), [`return_jitter`](Self::return_jitter), [`nocache_min_interval`](Self::nocache_min_interval), [`check_limit`](Self::check_limit), [`startup_waits_for_mark`](Self::startup_waits_for_mark), [`drain`](Self::drain) | `timing.rs` |
/// | [The readers (defaults a layer or server may override)](#the-readers) | [`path_prefix`](Self::path_prefix), [`nocache`](Self::nocache), [`kubernetes_aliases`](Self::kubernetes_aliases), [`envoy_immediate_fail`](Self::envoy_immediate_fail), `metrics_path` (feature `metrics`), [`details`](Self::details), [`access_keys`](Self::access_keys), [`instance`](Self::instance) | `reader_defaults.rs` |
/// | [The fleet (feature `redis`)](#the-fleet) | `shared_cache` | `shared.rs` |
/// | [Load feedback](#load-feedback) | [`load_capacity`](Self::load_capacity) | `load.rs` |
///
/// ```
/// use std::time::Duration;
/// use tower_health::{HealthConfig, config::FailDirection};
///
/// let config = HealthConfig::new()
///     .readiness_timeout(Duration::from_millis(300))
///     .fail_direction(FailDirection::Ready);
/// # let _ = config;
/// ```
#[derive(Clone)]
#[must_use]
pub struct HealthConfig {
    pub(crate) databases: Vec<DatabaseEntry>,
    pub(crate) readiness_timeout: Duration,
    pub(crate) readiness_interval: Duration,
    pub(crate) health_interval: Duration,
    pub(crate) fail_direction: FailDirection,
    pub(crate) debounce: Duration,
    pub(crate) return_jitter: Duration,
    pub(crate) nocache_min_interval: Duration,
    pub(crate) check_limit: Duration,
    pub(crate) startup_waits_for_mark: bool,
    /// The settings of the monitor's drain.
    pub(crate) drain: crate::shutdown::DrainConfig,
    /// What the readers answer on and show: theirs, apart from what the rounds need.
    pub(crate) readers: Readers,
    pub(crate) components: Vec<ComponentSpec>,
    pub(crate) groups: Vec<super::HealthGroup>,
    pub(crate) optional_databases: Vec<Arc<str>>,
    /// Components the environment lists as critical (`TOWER_HEALTH_CRITICAL`).
    pub(crate) critical_components: Vec<Arc<str>>,
    pub(crate) unknown_components: UnknownComponents,
    pub(crate) self_monitoring: bool,
    /// The requests in flight the application can take; 0: no load feedback.
    pub(crate) load_capacity: u32,
    /// The health verdict shared across processes through Redis, if configured.
    #[cfg(feature = "redis")]
    pub(crate) shared_cache: Option<crate::redis::SharedCache>,
    /// What [`warnings`](Self::warnings) returns.
    pub(crate) warnings: Vec<ConfigWarning>,
    /// The first invalid value a setter was given (its components' and shared cache's
    /// included): what [`HealthMonitor::new`](crate::HealthMonitor::new) returns.
    pub(crate) error: FirstError,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// # Making one
impl HealthConfig {
    /// A configuration with every default and no database.
    pub fn new() -> Self {
        Self {
            databases: Vec::new(),
            readiness_timeout: Duration::from_millis(500),
            readiness_interval: Duration::from_secs(1),
            health_interval: Duration::from_secs(10),
            fail_direction: FailDirection::NotReady,
            debounce: Duration::from_secs(4),
            return_jitter: DEFAULT_RETURN_JITTER,
            nocache_min_interval: Duration::from_secs(1),
            check_limit: Duration::from_secs(10),
            startup_waits_for_mark: false,
            drain: crate::shutdown::DrainConfig::new(),
            readers: Readers::default(),
            components: Vec::new(),
            groups: Vec::new(),
            optional_databases: Vec::new(),
            critical_components: Vec::new(),
            unknown_components: UnknownComponents::Ignored,
            self_monitoring: false,
            load_capacity: 0,
            #[cfg(feature = "redis")]
            shared_cache: None,
            warnings: Vec::new(),
            error: FirstError::default(),
        }
    }

    /// Adds a database whose name is known to be valid, or replaces the one with its name,
    /// returning the one it replaces.
    pub(super) fn insert_database(&mut self, entry: DatabaseEntry) -> Option<DatabaseEntry> {
        match self
            .databases
            .iter_mut()
            .find(|existing| existing.name == entry.name)
        {
            Some(existing) => Some(std::mem::replace(existing, entry)),
            None => {
                self.databases.push(entry);
                None
            }
        }
    }

    /// The first invalid value a setter was given, naming the setter: checked once, where
    /// the monitor is made.
    pub(crate) fn checked(&self) -> Result<(), ConfigError> {
        self.error.check()?;
        self.drain.checked()?;
        self.check_groups()
    }

    /// What in this configuration is likely not what was meant: the set variables that no
    /// setting of this build reads (found by [`from_env`](Self::from_env) and
    /// [`from_vars`](Self::from_vars)), and a database from the environment replaced by
    /// [`database`](Self::database) in code. The monitor logs them when it starts.
    #[must_use]
    pub fn warnings(&self) -> &[ConfigWarning] {
        &self.warnings
    }
}

impl fmt::Debug for HealthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured: a new field does not compile until it is shown or skipped on purpose.
        let Self {
            databases: _,
            readiness_timeout,
            readiness_interval,
            health_interval,
            fail_direction,
            debounce,
            return_jitter,
            nocache_min_interval,
            check_limit,
            startup_waits_for_mark,
            drain,
            readers,
            components: _,
            groups,
            optional_databases,
            critical_components,
            unknown_components,
            self_monitoring,
            load_capacity,
            #[cfg(feature = "redis")]
            shared_cache,
            warnings,
            error,
        } = self;
        let mut f = f.debug_struct("HealthConfig");
        f
            // Names only: a check's `Debug` is its own business.
            .field("databases", &self.database_names().collect::<Vec<_>>())
            .field("readiness_timeout", readiness_timeout)
            .field("readiness_interval", readiness_interval)
            .field("health_interval", health_interval)
            .field("fail_direction", fail_direction)
            .field("debounce", debounce)
            .field("return_jitter", return_jitter)
            .field("nocache_min_interval", nocache_min_interval)
            .field("check_limit", check_limit)
            .field("startup_waits_for_mark", startup_waits_for_mark)
            .field("drain", drain)
            .field("readers", readers);
        f.field("components", &self.component_names().collect::<Vec<_>>())
            .field("groups", groups)
            .field("optional_databases", optional_databases)
            .field("critical_components", critical_components)
            .field("unknown_components", unknown_components)
            .field("self_monitoring", self_monitoring)
            .field("load_capacity", load_capacity);
        #[cfg(feature = "redis")]
        f.field("shared_cache", shared_cache);
        f.field("warnings", warnings).field("error", error).finish()
    }
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
