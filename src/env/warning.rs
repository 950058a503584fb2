//! Warnings about a configuration that works but is likely not what was meant, kept as data
//! ([`HealthConfig::warnings`](crate::HealthConfig::warnings)) and logged once per process.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Something in a configuration that works but is likely not what was meant: a set variable
/// that no setting reads, or a database from the environment replaced by one added in code.
///
/// [`HealthConfig::warnings`](crate::HealthConfig::warnings) returns them; the monitor logs
/// them when it starts, so that they are seen even when `from_env` ran before the tracing
/// subscriber was installed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigWarning {
    variable: String,
    message: String,
}

impl ConfigWarning {
    pub(crate) fn new(variable: &str, message: String) -> Self {
        Self {
            variable: variable.to_owned(),
            message,
        }
    }

    /// The environment variable concerned.
    #[must_use]
    pub fn variable(&self) -> &str {
        &self.variable
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Logs each of `warnings` with `tracing::warn!`, unless the same warning was logged before in
/// this process. Called by every `from_env` and when a monitor starts: the first call that
/// finds a subscriber listening logs, the others stay quiet. A call that finds none logs
/// nothing and remembers nothing, leaving the warnings to a later call (the monitor's start,
/// typically after the subscriber is installed).
pub(crate) fn log_warnings(warnings: &[ConfigWarning]) {
    static LOGGED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if warnings.is_empty() || !tracing::enabled!(tracing::Level::WARN) {
        return;
    }
    let mut logged = LOGGED.lock().unwrap_or_else(PoisonError::into_inner);
    for warning in warnings {
        if logged.insert(warning.message.clone()) {
            tracing::warn!(variable = %warning.variable, "{warning}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_helpers::Logs;
    use crate::{HealthConfig, HealthMonitor};

    #[test]
    fn without_a_subscriber_warnings_wait_for_one() {
        // A name no other test uses: the warnings already logged are process-wide.
        let warnings = [ConfigWarning::new(
            "TOWER_HEALTH_WAITS",
            "TOWER_HEALTH_WAITS waits for a subscriber".to_owned(),
        )];
        log_warnings(&warnings);
        let (_guard, written) = Logs::capture();
        log_warnings(&warnings);
        log_warnings(&warnings);
        assert_eq!(
            written
                .text()
                .matches("TOWER_HEALTH_WAITS waits for a subscriber")
                .count(),
            1,
            "{}",
            written.text()
        );
    }

    #[tokio::test]
    async fn the_monitor_logs_the_warnings_of_its_config_when_it_starts() {
        // Read before any subscriber is installed, as `from_env` often is.
        let config = HealthConfig::from_vars([("TOWER_HEALTH_STARTS_LOGGED", "1")]).unwrap();
        let expected = "TOWER_HEALTH_STARTS_LOGGED is not read by any setting";
        assert_eq!(config.warnings()[0].to_string(), expected);
        let (_guard, written) = Logs::capture();
        let (handle, monitor) = HealthMonitor::new(config).unwrap();
        // The current-thread runtime runs the monitor on this thread, under the subscriber.
        let run = tokio::spawn(monitor.run());
        tokio::task::yield_now().await;
        drop(handle);
        tokio::time::timeout(std::time::Duration::from_secs(30), run)
            .await
            .expect("the monitor stops once its handles are gone")
            .unwrap();
        let text = written.text();
        assert!(text.contains("WARN"), "{text}");
        assert_eq!(text.matches(expected).count(), 1, "{text}");
    }
}
