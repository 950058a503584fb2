//! [`HealthConfig`]'s load feedback: the capacity the application declares, which turns the
//! monitor's load estimate on ([`crate::load`]).

use super::{ConfigError, Env, HealthConfig};
use crate::load::MAX_CAPACITY;

const CAPACITY_RANGE: &str = "expected a number of requests in flight from 0 (off) to 1000000";

/// # Load feedback
///
/// How busy the process is, for the balancers that can weigh a server by it.
impl HealthConfig {
    /// How many requests the application can have in flight at once: with it, the monitor
    /// keeps a smoothed estimate of the process's utilization (the requests in flight over
    /// this capacity, the runtime's lag, or the default database's pool in use, its queue
    /// included, whichever is largest), and the readers pass it
    /// on: the HAProxy agent lowers its weight as the estimate rises (never below 10%: load
    /// alone never says `drain`, `down` or `0%`), and the application's responses carry an
    /// ORCA load report (`endpoint-load-metrics: TEXT application_utilization=0.42,
    /// rps_fractional=120.50, eps=0.30`, with the server-wide request and error rates) for
    /// Envoy and gRPC clients that weigh endpoints by it.
    /// [`HealthHandle::utilization`](crate::HealthHandle::utilization),
    /// [`requests_per_second`](crate::HealthHandle::requests_per_second) and
    /// [`errors_per_second`](crate::HealthHandle::errors_per_second) read them.
    ///
    /// The requests in flight are the drain's count
    /// ([`DrainHandle::in_flight`](crate::DrainHandle::in_flight) without the long-lived
    /// connections): requests count there below a
    /// [`DrainLayer`](crate::DrainLayer), or in `HealthLayer::around` (feature `axum`).
    /// Set it to the concurrency the application is sized for (a concurrency limit's, the
    /// pool's size times the requests a connection serves at once): the estimate reads 1
    /// there.
    ///
    /// Defaults to `0`: off, and a request pays one branch for it (on, a couple of relaxed
    /// increments on a counter sharded by thread, and a clone of the rendered report).
    ///
    /// A `capacity` above 1,000,000 is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new) (the setting is left as it was).
    pub fn load_capacity(mut self, capacity: u32) -> Self {
        if self
            .error
            .passes(check_capacity("HealthConfig::load_capacity", capacity))
        {
            self.load_capacity = capacity;
        }
        self
    }

    /// Reads `TOWER_HEALTH_LOAD_CAPACITY`.
    pub(super) fn load_from_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        if let Some((name, value)) = env.first(&["TOWER_HEALTH_LOAD_CAPACITY"]) {
            self.load_capacity = value
                .parse::<u32>()
                .ok()
                .filter(|capacity| check_capacity(name, *capacity).is_ok())
                .ok_or_else(|| ConfigError::new(name, value, CAPACITY_RANGE))?;
        }
        Ok(self)
    }
}

fn check_capacity(name: &'static str, capacity: u32) -> Result<(), ConfigError> {
    if capacity <= MAX_CAPACITY {
        Ok(())
    } else {
        Err(ConfigError::new(
            name,
            &capacity.to_string(),
            CAPACITY_RANGE,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_capacity() {
        for (value, capacity) in [("64", 64), ("0", 0), (" 1000000 ", 1_000_000)] {
            let config = HealthConfig::from_vars([("TOWER_HEALTH_LOAD_CAPACITY", value)]).unwrap();
            assert_eq!(config.load_capacity, capacity, "{value:?}");
        }
        let config = HealthConfig::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.load_capacity, 0, "off by default");
    }

    #[test]
    fn refuses_a_bad_capacity_naming_the_variable() {
        for value in ["-1", "many", "1000001", "4294967296", "1.5", "64%"] {
            let error =
                HealthConfig::from_vars([("TOWER_HEALTH_LOAD_CAPACITY", value)]).unwrap_err();
            assert_eq!(
                (error.variable(), error.value()),
                ("TOWER_HEALTH_LOAD_CAPACITY", value)
            );
            assert_eq!(error.reason(), CAPACITY_RANGE);
        }
    }

    #[test]
    fn the_setter_records_a_capacity_it_cannot_take() {
        let config = HealthConfig::new()
            .load_capacity(32)
            .load_capacity(1_000_001);
        let error = config.checked().unwrap_err();
        assert_eq!(error.variable(), "HealthConfig::load_capacity");
        assert_eq!(config.load_capacity, 32, "the bad value is not taken");
        assert!(HealthConfig::new().load_capacity(0).checked().is_ok());
        assert!(
            HealthConfig::new()
                .load_capacity(MAX_CAPACITY)
                .checked()
                .is_ok()
        );
    }
}
