use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport};
use crate::env::{ConfigError, FirstError, Zero, check_in_range};

/// A [`Component`] that watches the Tokio runtime itself: a timer that fires late means a
/// task is blocking a worker thread (a synchronous call, a long computation) and every task
/// on that thread waits.
///
/// A small task ticks every [`period`](Self::period) and records how late each tick fires;
/// each check reports trouble when the worst lateness since the previous check exceeds the
/// [`threshold`](Self::threshold), with the figures (kind `other`); a check that passes
/// reports the worst lateness it saw (`details.worst_lateness_ms`). Register it
/// non-critical: `/health` then reads `degraded` (200) while the runtime is starved, and
/// liveness, which must not restart a pod for being slow, stays 200 as always.
///
/// ```
/// use tower_health::HealthConfig;
/// use tower_health::component::{ComponentSpec, RuntimeWatcher};
///
/// let config = HealthConfig::new().component(ComponentSpec::new("runtime", RuntimeWatcher::new()));
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
pub struct RuntimeWatcher {
    inner: Arc<Inner>,
    /// The first invalid value a setter was given: [`validate`](Component::validate)'s
    /// answer.
    error: FirstError,
}

#[derive(Debug)]
struct Inner {
    period: Duration,
    threshold: Duration,
    /// The worst lateness since the last check, in microseconds.
    worst_micros: AtomicU64,
    /// Whether the ticking task has been started (on the first check: the watcher may be
    /// built outside a runtime).
    ticking: AtomicBool,
}

impl Default for RuntimeWatcher {
    fn default() -> Self {
        Self::new()
    }
}

impl RuntimeWatcher {
    /// A watcher ticking every 10 ms, in trouble past 100 ms of lateness.
    #[must_use]
    pub fn new() -> Self {
        Self {
            inner: Inner::new(Duration::from_millis(10), Duration::from_millis(100)),
            error: FirstError::default(),
        }
    }

    /// How often the watcher's timer ticks.
    ///
    /// Defaults to 10 milliseconds.
    ///
    /// A `period` shorter than 1 ms (zero included) or longer than 1 year is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new) (the setting is left as it was).
    #[must_use]
    pub fn period(mut self, period: Duration) -> Self {
        if self.error.passes(check_in_range(
            "RuntimeWatcher::period",
            period,
            Zero::Refused,
        )) {
            self.inner = Inner::new(period, self.inner.threshold);
        }
        self
    }

    /// The lateness past which the runtime counts as starved.
    ///
    /// Defaults to 100 milliseconds.
    ///
    /// A `threshold` shorter than 1 ms (zero included) or longer than 1 year is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new) (the setting is left as it was).
    #[must_use]
    pub fn threshold(mut self, threshold: Duration) -> Self {
        if self.error.passes(check_in_range(
            "RuntimeWatcher::threshold",
            threshold,
            Zero::Refused,
        )) {
            self.inner = Inner::new(self.inner.period, threshold);
        }
        self
    }
}

impl Inner {
    fn new(period: Duration, threshold: Duration) -> Arc<Self> {
        Arc::new(Self {
            period,
            threshold,
            worst_micros: AtomicU64::new(0),
            ticking: AtomicBool::new(false),
        })
    }

    fn record(&self, lateness: Duration) {
        let micros = u64::try_from(lateness.as_micros()).unwrap_or(u64::MAX);
        self.worst_micros.fetch_max(micros, Ordering::Relaxed);
    }

    /// One timer of `period`, and how late it fired.
    async fn tick(&self) {
        let started = crate::clock::now();
        tokio::time::sleep(self.period).await;
        self.record(crate::clock::since(started).saturating_sub(self.period));
    }
}

/// Ticks until the watcher is gone.
async fn keep_ticking(inner: Weak<Inner>) {
    loop {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        inner.tick().await;
    }
}

impl Component for RuntimeWatcher {
    fn check(&self) -> CheckFuture {
        let inner = Arc::clone(&self.inner);
        if !inner.ticking.swap(true, Ordering::AcqRel) {
            tokio::spawn(keep_ticking(Arc::downgrade(&inner)));
        }
        Box::pin(async move {
            // One tick of its own, which also lets the ticking task record a lateness it
            // has just suffered.
            inner.tick().await;
            let worst = Duration::from_micros(inner.worst_micros.swap(0, Ordering::Relaxed));
            if worst > inner.threshold {
                return Err(CheckError::new(
                    CheckErrorKind::Other,
                    format!(
                        "a {} timer fired {} late (threshold {}): a task is blocking a runtime worker thread",
                        humantime::format_duration(inner.period),
                        humantime::format_duration(Duration::from_millis(
                            u64::try_from(worst.as_millis()).unwrap_or(u64::MAX)
                        )),
                        humantime::format_duration(inner.threshold),
                    ),
                ));
            }
            Ok(CheckReport::new().detail("worst_lateness_ms", worst.as_secs_f64() * 1000.0))
        })
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.error.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HealthConfig;
    use crate::component::ComponentSpec;

    /// The error [`HealthMonitor::new`](crate::HealthMonitor::new) returns for `watcher`.
    fn refused(watcher: RuntimeWatcher) -> ConfigError {
        let config = HealthConfig::new().component(ComponentSpec::new("runtime", watcher));
        crate::HealthMonitor::new(config).unwrap_err()
    }

    #[test]
    fn a_period_out_of_range_is_the_monitors_error_naming_the_setter() {
        let watcher = RuntimeWatcher::new().period(Duration::ZERO);
        assert_eq!(
            watcher.inner.period,
            Duration::from_millis(10),
            "the old value kept"
        );
        assert_eq!(
            refused(watcher).to_string(),
            r#"RuntimeWatcher::period="0ns": must be from 1ms to 1year"#
        );
    }

    #[test]
    fn a_threshold_out_of_range_is_the_monitors_error_naming_the_setter() {
        let watcher = RuntimeWatcher::new()
            .threshold(Duration::MAX)
            .period(Duration::ZERO);
        assert_eq!(
            watcher.inner.threshold,
            Duration::from_millis(100),
            "the old value kept"
        );
        let error = refused(watcher);
        assert_eq!(
            (error.variable(), error.reason()),
            ("RuntimeWatcher::threshold", "must be from 1ms to 1year"),
            "the first bad value"
        );
    }

    #[test]
    fn good_values_are_taken() {
        let watcher = RuntimeWatcher::new()
            .period(Duration::from_millis(5))
            .threshold(Duration::from_millis(50));
        assert!(watcher.validate().is_ok());
        assert_eq!(
            (watcher.inner.period, watcher.inner.threshold),
            (Duration::from_millis(5), Duration::from_millis(50))
        );
    }
}
