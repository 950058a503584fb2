use std::str::FromStr;
use std::time::Duration;

use crate::config::{ConfigError, Env, UnknownValue, Zero, assert_in_range};

/// What [`Drain`](crate::drain::Drain) does with ordinary requests once the drain has started.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum DrainPolicy {
    /// Keep serving them (the default). Right behind a load balancer or a Kubernetes Service:
    /// requests keep arriving until the endpoint update has spread, and each one refused there
    /// would be a failed request for a client.
    #[default]
    Serve,
    /// Answer 503 with `Retry-After`. Right when clients retry elsewhere on their own (a
    /// client-side balanced gRPC or HTTP pool) and a quick refusal beats a slow answer from an
    /// instance about to stop.
    Reject,
}

impl FromStr for DrainPolicy {
    type Err = UnknownValue;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "serve" => Ok(Self::Serve),
            "reject" => Ok(Self::Reject),
            _ => Err(UnknownValue::new("serve or reject")),
        }
    }
}

/// Settings of a drain: how long to keep taking traffic, how long to wait for in-flight work,
/// and what to do with requests meanwhile.
///
/// [`DrainConfig::from_env`] reads the `TOWER_HEALTH_DRAIN_*` variables listed with the others
/// in [the environment table](crate::config#drainconfigfrom_env).
#[derive(Clone, Debug)]
#[must_use]
pub struct DrainConfig {
    pub(crate) delay: Duration,
    pub(crate) timeout: Duration,
    pub(crate) policy: DrainPolicy,
    pub(crate) connection_close: bool,
    pub(crate) retry_after: Duration,
}

impl Default for DrainConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl DrainConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self {
            delay: Duration::from_secs(5),
            timeout: Duration::from_secs(20),
            policy: DrainPolicy::Serve,
            connection_close: true,
            retry_after: Duration::from_secs(5),
        }
    }

    /// How long after the drain starts the server keeps accepting work before its shutdown
    /// begins: the time load balancers need to see readiness fail and stop sending traffic.
    ///
    /// Derive it from whatever polls readiness: a readiness probe with `periodSeconds: 2` and
    /// `failureThreshold: 2` sees the 503 within 4 s, so 5 s leaves a second for the endpoint
    /// update to spread. With Kubernetes' defaults (10 s x 3) it would be 30 s or more.
    ///
    /// Defaults to 5 seconds.
    ///
    /// # Panics
    ///
    /// When `delay` is neither zero nor from 1 ms to 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn delay(mut self, delay: Duration) -> Self {
        assert_in_range("DrainConfig::delay", delay, Zero::Allowed);
        self.delay = delay;
        self
    }

    /// The longest [`DrainHandle::drained`](crate::DrainHandle::drained) waits for in-flight
    /// requests, counted from the start of the drain (so it includes the delay). Keep it below
    /// the pod's `terminationGracePeriodSeconds`.
    ///
    /// Defaults to 20 seconds.
    ///
    /// # Panics
    ///
    /// When `timeout` is shorter than 1 ms (zero included) or longer than 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        assert_in_range("DrainConfig::timeout", timeout, Zero::Refused);
        self.timeout = timeout;
        self
    }

    /// What to do with ordinary requests during the drain.
    ///
    /// Defaults to [`DrainPolicy::Serve`].
    pub fn policy(mut self, policy: DrainPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Whether responses to HTTP/1 requests carry `Connection: close` while draining, so that
    /// keep-alive clients reconnect (through the load balancer, to another instance).
    ///
    /// Defaults to `true`.
    pub fn connection_close(mut self, close: bool) -> Self {
        self.connection_close = close;
        self
    }

    /// The `Retry-After` of draining answers, rounded up to whole seconds (at least one).
    ///
    /// Defaults to 5 seconds.
    ///
    /// # Panics
    ///
    /// When `retry_after` is neither zero nor from 1 ms to 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        assert_in_range("DrainConfig::retry_after", retry_after, Zero::Allowed);
        self.retry_after = retry_after;
        self
    }

    define_env_constructors!("the table above");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self::new();
        if let Some(delay) = env.duration_or_zero("TOWER_HEALTH_DRAIN_DELAY")? {
            config.delay = delay;
        }
        if let Some(timeout) = env.duration("TOWER_HEALTH_DRAIN_TIMEOUT", None)? {
            config.timeout = timeout;
        }
        if config.timeout <= config.delay {
            let (name, value) = env
                .first(&["TOWER_HEALTH_DRAIN_TIMEOUT", "TOWER_HEALTH_DRAIN_DELAY"])
                .unwrap_or(("TOWER_HEALTH_DRAIN_TIMEOUT", "20s"));
            return Err(ConfigError::new(
                name,
                value,
                format!(
                    "the drain timeout ({}) must be longer than the drain delay ({}), or in-flight requests get no time to finish",
                    humantime::format_duration(config.timeout),
                    humantime::format_duration(config.delay)
                ),
            ));
        }
        if let Some(policy) =
            env.parse(&["TOWER_HEALTH_DRAIN_POLICY"], "expected serve or reject")?
        {
            config.policy = policy;
        }
        if let Some(close) = env.flag("TOWER_HEALTH_DRAIN_CONNECTION_CLOSE")? {
            config.connection_close = close;
        }
        if let Some(retry_after) = env.duration("TOWER_HEALTH_DRAIN_RETRY_AFTER", None)? {
            config.retry_after = retry_after;
        }
        Ok(config)
    }

    /// `Retry-After` in whole seconds, rounded up, at least one.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        secs.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_vars_reads_every_setting() {
        let config = DrainConfig::from_vars([
            ("TOWER_HEALTH_DRAIN_DELAY", "0s"),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "45s"),
            ("TOWER_HEALTH_DRAIN_POLICY", "reject"),
            ("TOWER_HEALTH_DRAIN_CONNECTION_CLOSE", "false"),
            ("TOWER_HEALTH_DRAIN_RETRY_AFTER", "1500ms"),
        ])
        .unwrap();
        assert_eq!(config.delay, Duration::ZERO);
        assert_eq!(config.timeout, Duration::from_secs(45));
        assert_eq!(config.policy, DrainPolicy::Reject);
        assert!(!config.connection_close);
        assert_eq!(config.retry_after_secs(), 2);
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (variable, value) in [
            ("TOWER_HEALTH_DRAIN_DELAY", "soon"),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "-3s"),
            ("TOWER_HEALTH_DRAIN_POLICY", "panic"),
            ("TOWER_HEALTH_DRAIN_CONNECTION_CLOSE", "maybe"),
            ("TOWER_HEALTH_DRAIN_RETRY_AFTER", "0s"),
        ] {
            let error = DrainConfig::from_vars([(variable, value)]).unwrap_err();
            assert_eq!((error.variable(), error.value()), (variable, value));
        }
    }

    #[test]
    fn durations_out_of_range_are_refused() {
        for (variable, value) in [
            ("TOWER_HEALTH_DRAIN_DELAY", "100us"),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "1000000000000000s"),
            ("TOWER_HEALTH_DRAIN_RETRY_AFTER", "2y"),
        ] {
            let error = DrainConfig::from_vars([(variable, value)]).unwrap_err();
            assert_eq!((error.variable(), error.value()), (variable, value));
        }
    }

    #[test]
    #[should_panic(expected = "DrainConfig::timeout must be from 1ms to 1year")]
    fn a_timeout_longer_than_a_year_panics() {
        let _ = DrainConfig::new().timeout(Duration::MAX);
    }

    #[test]
    #[should_panic(expected = "DrainConfig::delay must be zero or from 1ms to 1year")]
    fn a_delay_longer_than_a_year_panics() {
        let _ = DrainConfig::new().delay(Duration::MAX);
    }

    #[test]
    fn timeout_must_exceed_delay() {
        let error = DrainConfig::from_vars([("TOWER_HEALTH_DRAIN_DELAY", "30s")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_DRAIN_DELAY");
        let error = DrainConfig::from_vars([
            ("TOWER_HEALTH_DRAIN_DELAY", "10s"),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "10s"),
        ])
        .unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_DRAIN_TIMEOUT");
        assert!(
            error.reason().contains("longer than the drain delay"),
            "{error}"
        );
    }
}
