use std::str::FromStr;
use std::time::Duration;

use crate::env::{ConfigError, Env, FirstError, Zero, check_in_range, not_a_name};

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
    type Err = ConfigError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "serve" => Ok(Self::Serve),
            "reject" => Ok(Self::Reject),
            _ => Err(not_a_name("drain::DrainPolicy", value, "serve or reject")),
        }
    }
}

/// Settings of a monitor's drain: how long to keep taking traffic, how long to wait for
/// in-flight work, and what to do with requests meanwhile. Given to
/// [`HealthConfig::drain`](crate::HealthConfig::drain); [`HealthConfig::from_env`](crate::HealthConfig::from_env)
/// reads them from the `TOWER_HEALTH_DRAIN_*` variables listed with the others in [the
/// environment table](crate::config#the-drain-read-by-healthconfigfrom_env).
///
/// ```
/// use std::time::Duration;
/// use tower_health::{DrainConfig, HealthConfig};
///
/// let config = HealthConfig::new().drain(DrainConfig::new().delay(Duration::from_secs(10)));
/// # let _ = config;
/// ```
///
/// The setters never fail: the first invalid value one is given is kept aside, the setting
/// left as it was, and [`HealthMonitor::new`](crate::HealthMonitor::new), where the
/// monitor's settings are checked, returns it.
#[derive(Clone, Debug)]
#[must_use]
pub struct DrainConfig {
    pub(crate) delay: Duration,
    pub(crate) timeout: Duration,
    pub(crate) policy: DrainPolicy,
    pub(crate) connection_close: bool,
    pub(crate) retry_after: Duration,
    /// `None`: half the time from the delay to the timeout.
    pub(crate) close_window: Option<Duration>,
    /// The first invalid value a setter was given, for
    /// [`HealthMonitor::new`](crate::HealthMonitor::new) to return.
    pub(crate) error: FirstError,
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
            close_window: None,
            error: FirstError::default(),
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
    /// A `delay` neither zero nor from 1 ms to 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new), as is a delay not shorter than the
    /// [`timeout`](Self::timeout).
    pub fn delay(mut self, delay: Duration) -> Self {
        if self
            .error
            .passes(check_in_range("DrainConfig::delay", delay, Zero::Allowed))
        {
            self.delay = delay;
        }
        self
    }

    /// The longest [`DrainHandle::drained`](crate::DrainHandle::drained) waits for in-flight
    /// requests (and registered long-lived connections), counted from the start of the drain
    /// (so it includes the delay and the [close window](Self::close_window)). Keep it below
    /// the pod's `terminationGracePeriodSeconds`.
    ///
    /// Defaults to 20 seconds.
    ///
    /// A `timeout` shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new), as is a timeout not longer than the
    /// [`delay`](Self::delay): in-flight requests would get no time to finish.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        if self.error.passes(check_in_range(
            "DrainConfig::timeout",
            timeout,
            Zero::Refused,
        )) {
            self.timeout = timeout;
        }
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
    /// A `retry_after` neither zero nor from 1 ms to 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        if self.error.passes(check_in_range(
            "DrainConfig::retry_after",
            retry_after,
            Zero::Allowed,
        )) {
            self.retry_after = retry_after;
        }
        self
    }

    /// The window over which the long-lived connections registered with the drain
    /// ([`DrainHandle::long_lived`](crate::DrainHandle::long_lived)) are told to close, one
    /// after the other, starting when the [`delay`](Self::delay) has passed: the load
    /// balancers have stopped sending new connections here by then, so the clients that
    /// reconnect land on the other instances, at a rate of the connections over the window
    /// rather than all at once. The window is cut into ten batches: the connections open when
    /// the drain starts are dealt to them in turn, each closing at a random point of its
    /// batch's tenth.
    ///
    /// Defaults to half the time from the delay to the [`timeout`](Self::timeout) (7.5 s
    /// with their defaults), leaving the other half for the last connections to close.
    /// Zero closes them all at once when the delay has passed.
    ///
    /// A `close_window` neither zero nor from 1 ms to 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new), as is a delay plus window not
    /// shorter than the timeout: the last connections would get no time to close.
    pub fn close_window(mut self, window: Duration) -> Self {
        if self.error.passes(check_in_range(
            "DrainConfig::close_window",
            window,
            Zero::Allowed,
        )) {
            self.close_window = Some(window);
        }
        self
    }

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self::new();
        if let Some(delay) = env.duration_or_zero("TOWER_HEALTH_DRAIN_DELAY")? {
            config.delay = delay;
        }
        if let Some(timeout) = env.duration("TOWER_HEALTH_DRAIN_TIMEOUT", None)? {
            config.timeout = timeout;
        }
        if let Some(reason) = config.timeout_not_after_delay() {
            let (name, value) = env
                .first(&["TOWER_HEALTH_DRAIN_TIMEOUT", "TOWER_HEALTH_DRAIN_DELAY"])
                .unwrap_or(("TOWER_HEALTH_DRAIN_TIMEOUT", "20s"));
            return Err(ConfigError::new(name, value, reason));
        }
        if let Some(window) = env.duration_or_zero("TOWER_HEALTH_DRAIN_CLOSE_WINDOW")? {
            config.close_window = Some(window);
            if let Some(reason) = config.window_not_before_timeout() {
                let (name, value) = env
                    .first(&["TOWER_HEALTH_DRAIN_CLOSE_WINDOW"])
                    .expect("read just above");
                return Err(ConfigError::new(name, value, reason));
            }
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

    /// The settings' one error: the first invalid value a setter was given, then a timeout
    /// not longer than the delay (charged to the timeout), then a close window that does not
    /// end before the timeout (charged to the window). Checked once, by
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub(crate) fn checked(&self) -> Result<(), ConfigError> {
        self.error.check()?;
        if let Some(reason) = self.timeout_not_after_delay() {
            return Err(ConfigError::new(
                "DrainConfig::timeout",
                &humantime::format_duration(self.timeout).to_string(),
                reason,
            ));
        }
        if let Some(reason) = self.window_not_before_timeout() {
            return Err(ConfigError::new(
                "DrainConfig::close_window",
                &humantime::format_duration(self.close_window_or_default()).to_string(),
                reason,
            ));
        }
        Ok(())
    }

    /// The close window: as set, or half the time from the delay to the timeout.
    pub(crate) fn close_window_or_default(&self) -> Duration {
        self.close_window
            .unwrap_or_else(|| self.timeout.saturating_sub(self.delay) / 2)
    }

    /// Why the close window leaves the last long-lived connections no time to close before
    /// the timeout, if it does not (only a window that was set: the default always does).
    fn window_not_before_timeout(&self) -> Option<String> {
        let window = self.close_window?;
        (self.delay.saturating_add(window) >= self.timeout).then(|| {
            format!(
                "the drain delay ({}) plus the close window ({}) must be shorter than the drain timeout ({}), or the last long-lived connections get no time to close",
                humantime::format_duration(self.delay),
                humantime::format_duration(window),
                humantime::format_duration(self.timeout)
            )
        })
    }

    /// Why the timeout does not leave in-flight requests time to finish, if it does not.
    fn timeout_not_after_delay(&self) -> Option<String> {
        (self.timeout <= self.delay).then(|| {
            format!(
                "the drain timeout ({}) must be longer than the drain delay ({}), or in-flight requests get no time to finish",
                humantime::format_duration(self.timeout),
                humantime::format_duration(self.delay)
            )
        })
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
    use crate::{HealthConfig, HealthMonitor};

    /// The drain's settings as `HealthConfig::from_vars` reads them.
    fn from_vars<const N: usize>(vars: [(&str, &str); N]) -> Result<DrainConfig, ConfigError> {
        HealthConfig::from_vars(vars).map(|config| config.drain)
    }

    /// The error the monitor's one fallible point returns for `drain`.
    fn monitor_error(drain: DrainConfig) -> ConfigError {
        HealthMonitor::new(HealthConfig::new().drain(drain)).expect_err("the settings are refused")
    }

    #[test]
    fn from_vars_reads_every_setting() {
        let config = from_vars([
            ("TOWER_HEALTH_DRAIN_DELAY", "0s"),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "45s"),
            ("TOWER_HEALTH_DRAIN_POLICY", "reject"),
            ("TOWER_HEALTH_DRAIN_CONNECTION_CLOSE", "false"),
            ("TOWER_HEALTH_DRAIN_RETRY_AFTER", "1500ms"),
            ("TOWER_HEALTH_DRAIN_CLOSE_WINDOW", "30s"),
        ])
        .unwrap();
        assert_eq!(config.close_window_or_default(), Duration::from_secs(30));
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
            ("TOWER_HEALTH_DRAIN_CLOSE_WINDOW", "-1s"),
        ] {
            let error = from_vars([(variable, value)]).unwrap_err();
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
            let error = from_vars([(variable, value)]).unwrap_err();
            assert_eq!((error.variable(), error.value()), (variable, value));
        }
    }

    #[test]
    fn a_timeout_longer_than_a_year_is_the_monitors_error() {
        let config = DrainConfig::new().timeout(Duration::MAX);
        assert_eq!(
            config.timeout,
            Duration::from_secs(20),
            "the old value kept"
        );
        let error = monitor_error(config);
        assert_eq!(error.variable(), "DrainConfig::timeout");
        assert_eq!(error.reason(), "must be from 1ms to 1year");
    }

    #[test]
    fn a_delay_longer_than_a_year_is_the_monitors_error() {
        let error = monitor_error(DrainConfig::new().delay(Duration::MAX));
        assert_eq!(error.variable(), "DrainConfig::delay");
        assert_eq!(error.reason(), "must be zero or from 1ms to 1year");
    }

    #[test]
    fn the_first_bad_value_is_the_one_returned() {
        let config = DrainConfig::new()
            .retry_after(Duration::from_micros(1))
            .delay(Duration::MAX)
            .timeout(Duration::ZERO);
        let error = monitor_error(config);
        assert_eq!(
            error.to_string(),
            r#"DrainConfig::retry_after="1µs": must be zero or from 1ms to 1year"#
        );
    }

    #[test]
    fn a_timeout_not_longer_than_the_delay_is_the_monitors_error() {
        for delay in [Duration::from_secs(20), Duration::from_secs(30)] {
            let error = monitor_error(DrainConfig::new().delay(delay));
            assert_eq!(
                (error.variable(), error.value()),
                ("DrainConfig::timeout", "20s")
            );
            assert!(
                error
                    .reason()
                    .contains("must be longer than the drain delay"),
                "{error}"
            );
        }
        let config = DrainConfig::new()
            .delay(Duration::from_secs(30))
            .timeout(Duration::from_secs(31));
        assert!(
            config.checked().is_ok(),
            "the order of the setters does not matter"
        );
    }

    #[test]
    fn the_close_window_defaults_to_half_the_time_from_the_delay_to_the_timeout() {
        assert_eq!(
            DrainConfig::new().close_window_or_default(),
            Duration::from_millis(7500)
        );
        let config = DrainConfig::new()
            .delay(Duration::from_secs(10))
            .timeout(Duration::from_secs(30));
        assert_eq!(config.close_window_or_default(), Duration::from_secs(10));
        assert!(config.checked().is_ok());
        let zero = DrainConfig::new().close_window(Duration::ZERO);
        assert_eq!(zero.close_window_or_default(), Duration::ZERO);
        assert!(zero.checked().is_ok());
    }

    #[test]
    fn a_close_window_not_ending_before_the_timeout_is_the_monitors_error() {
        let error = monitor_error(DrainConfig::new().close_window(Duration::from_secs(15)));
        assert_eq!(
            (error.variable(), error.value()),
            ("DrainConfig::close_window", "15s")
        );
        assert!(
            error.reason().contains("shorter than the drain timeout"),
            "{error}"
        );
        let error = monitor_error(DrainConfig::new().close_window(Duration::from_micros(5)));
        assert_eq!(error.variable(), "DrainConfig::close_window");
        let config = DrainConfig::new()
            .close_window(Duration::from_secs(14))
            .timeout(Duration::from_secs(20));
        assert!(config.checked().is_ok());
    }

    #[test]
    fn a_close_window_not_ending_before_the_timeout_names_the_variable() {
        let error = from_vars([
            ("TOWER_HEALTH_DRAIN_DELAY", "5s"),
            ("TOWER_HEALTH_DRAIN_CLOSE_WINDOW", "15s"),
        ])
        .unwrap_err();
        assert_eq!(
            (error.variable(), error.value()),
            ("TOWER_HEALTH_DRAIN_CLOSE_WINDOW", "15s")
        );
        assert!(
            error.reason().contains("shorter than the drain timeout"),
            "{error}"
        );
        let config = from_vars([
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "60s"),
            ("TOWER_HEALTH_DRAIN_CLOSE_WINDOW", "15s"),
        ])
        .unwrap();
        assert_eq!(config.close_window_or_default(), Duration::from_secs(15));
    }

    #[test]
    fn timeout_must_exceed_delay() {
        let error = from_vars([("TOWER_HEALTH_DRAIN_DELAY", "30s")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_DRAIN_DELAY");
        let error = from_vars([
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
