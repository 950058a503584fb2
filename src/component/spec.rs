use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::Component;
use crate::env::{ConfigError, FirstError, Zero, check_in_range, is_valid_check_name};

/// A [`Component`] and how the monitor treats it; register it with
/// [`HealthConfig::component`](crate::HealthConfig::component).
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
#[must_use]
pub struct ComponentSpec {
    pub(crate) name: Arc<str>,
    pub(crate) component: Arc<dyn Component>,
    pub(crate) critical: bool,
    pub(crate) gates_readiness: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) cadence: Option<Duration>,
    pub(crate) failures_before_trouble: u32,
    pub(crate) successes_before_recovery: u32,
    pub(crate) shared: bool,
    /// The first invalid value a setter was given, for
    /// [`HealthMonitor::new`](crate::HealthMonitor::new) to return.
    pub(crate) error: FirstError,
}

impl ComponentSpec {
    /// A non-critical component named `name`, with every default.
    ///
    /// A `name` that is empty, longer than 63 bytes, or has characters other than ASCII
    /// letters, digits, `_` and `-` (it becomes a JSON key and a log field) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new), as is any invalid value given to
    /// the setters below and the component's own
    /// [`validate`](Component::validate) error.
    pub fn new(name: &str, component: impl Component) -> Self {
        let mut error = FirstError::default();
        if !is_valid_check_name(name) {
            error.passes(Err(ConfigError::new(
                "ComponentSpec::new",
                name,
                "a component name must be 1 to 63 ASCII letters, digits, '_' or '-'",
            )));
        }
        error.passes(component.validate());
        Self {
            name: name.into(),
            component: Arc::new(component),
            critical: false,
            gates_readiness: false,
            timeout: None,
            cadence: None,
            failures_before_trouble: 1,
            successes_before_recovery: 1,
            shared: false,
            error,
        }
    }

    /// Whether the component is critical: in trouble, a critical component makes `/health`
    /// 503 `unhealthy`, a non-critical one 200 `degraded`.
    ///
    /// Defaults to `false`.
    pub fn critical(mut self, critical: bool) -> Self {
        self.critical = critical;
        self
    }

    /// Whether the component also gates readiness: in trouble, `/health/ready` answers 503
    /// with `component_<name>` `not_ready`. For a dependency other than the databases that
    /// the pod cannot serve without. Readiness reads the component's state from the last
    /// health round; it does not run the check more often.
    ///
    /// Defaults to `false`.
    pub fn gates_readiness(mut self, gates: bool) -> Self {
        self.gates_readiness = gates;
        self
    }

    /// How long a round waits for the component before reporting it `timed_out`; never
    /// longer than the round's deadline
    /// ([`HealthConfig::readiness_timeout`](crate::HealthConfig::readiness_timeout)), which
    /// bounds everything. The check goes on in the background, and the next round joins it.
    ///
    /// Defaults to the round's deadline.
    ///
    /// A `timeout` shorter than 1 ms (zero included) or longer than 1 year is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        if self.error.passes(check_in_range(
            "ComponentSpec::timeout",
            timeout,
            Zero::Refused,
        )) {
            self.timeout = Some(timeout);
        }
        self
    }

    /// How often the component is checked, for one slower than the health round: in the
    /// rounds in between, its last result is reused.
    ///
    /// Defaults to every health round.
    ///
    /// A `cadence` shorter than 1 ms (zero included) or longer than 1 year is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn cadence(mut self, cadence: Duration) -> Self {
        if self.error.passes(check_in_range(
            "ComponentSpec::cadence",
            cadence,
            Zero::Refused,
        )) {
            self.cadence = Some(cadence);
        }
        self
    }

    /// How many checks in a row must fail before the component counts as in trouble.
    ///
    /// Defaults to 1.
    ///
    /// A `failures` of 0 is an error of [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn failures_before_trouble(mut self, failures: u32) -> Self {
        if self.error.passes(at_least_one(
            "ComponentSpec::failures_before_trouble",
            failures,
        )) {
            self.failures_before_trouble = failures;
        }
        self
    }

    /// How many checks in a row must succeed before a component in trouble counts as
    /// healthy again.
    ///
    /// Defaults to 1.
    ///
    /// A `successes` of 0 is an error of [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn successes_before_recovery(mut self, successes: u32) -> Self {
        if self.error.passes(at_least_one(
            "ComponentSpec::successes_before_recovery",
            successes,
        )) {
            self.successes_before_recovery = successes;
        }
        self
    }

    /// Whether the component's result is the same for every process, so that with a
    /// shared cache (`redis::SharedCache`) one process checks it per window and the others serve
    /// its result: for an expensive check of a dependency the whole fleet uses. Leave it off
    /// for anything about this process (its disk, its runtime, its own connections). Its
    /// hysteresis counts across the fleet's checks; a shared component that gates readiness
    /// gates it with the shared result. Without a shared cache it changes nothing.
    ///
    /// Defaults to `false`.
    pub fn shared(mut self, shared: bool) -> Self {
        self.shared = shared;
        self
    }

    /// The component's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for ComponentSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComponentSpec")
            .field("name", &self.name)
            .field("component", &self.component)
            .field("critical", &self.critical)
            .field("gates_readiness", &self.gates_readiness)
            .field("timeout", &self.timeout)
            .field("cadence", &self.cadence)
            .field("failures_before_trouble", &self.failures_before_trouble)
            .field("successes_before_recovery", &self.successes_before_recovery)
            .field("shared", &self.shared)
            .field("error", &self.error)
            .finish()
    }
}

/// Whether `count` is at least 1, as the error of `setter`.
fn at_least_one(setter: &str, count: u32) -> Result<(), ConfigError> {
    if count > 0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            setter,
            &count.to_string(),
            "must be at least 1",
        ))
    }
}
