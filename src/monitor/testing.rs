//! Monitors whose rounds a unit test runs itself, for the tests of every reader.

use std::time::Duration;

use super::HealthHandle;
use super::rounds::Cadence;
use crate::config::HealthConfig;
use crate::monitor::runner::HealthMonitor;
use crate::probe::Probe;
use crate::test_helpers::FakeCheck;
use crate::view::{Condition, View, ViewWatch};

/// A monitor whose rounds the test runs by hand.
pub(crate) fn monitor(config: HealthConfig) -> HealthHandle {
    let (handle, _run) = HealthMonitor::new(config).unwrap();
    handle.state.set_monitor_running(true);
    handle
}

/// A monitor of one database checked by `check`. The deadline is short for a check that
/// hangs (the test waits it out) and long otherwise, so that a loaded machine never turns
/// an instant answer into `timed_out`.
pub(crate) fn with(check: FakeCheck) -> HealthHandle {
    monitor(config_with(check))
}

pub(crate) fn config_with(check: FakeCheck) -> HealthConfig {
    let deadline = match check {
        FakeCheck::Hangs => Duration::from_millis(50),
        FakeCheck::Ready
        | FakeCheck::Refused
        | FakeCheck::Panics
        | FakeCheck::Saturated
        | FakeCheck::Reports => Duration::from_secs(10),
    };
    HealthConfig::new()
        .readiness_timeout(deadline)
        .database("default", check)
}

pub(crate) async fn rounds(handle: &HealthHandle) {
    handle.state.readiness_round().await;
    handle.state.health_round().await;
}

/// A configuration whose verdicts go stale soon after the last round (the bound is
/// 3 x 1 ms + the 20 ms deadline): drive it with [`rounds`], then run none, as a stuck monitor.
pub(crate) fn goes_stale_soon() -> HealthConfig {
    HealthConfig::new()
        .readiness_interval(Duration::from_millis(1))
        .health_interval(Duration::from_millis(1))
        .readiness_timeout(Duration::from_millis(20))
}

/// The conditions of readiness, health and pool, in that order.
pub(crate) fn conditions(view: &View) -> [Condition; 3] {
    [Probe::Ready, Probe::Health, Probe::Pool].map(|probe| view.answer(probe).condition)
}

/// Waits on `watch` until all three verdicts are stale (no round runs any more, as with a
/// stuck monitor), and returns that view.
pub(crate) async fn until_stale(watch: &mut ViewWatch) -> View {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let view = watch.changed().await.unwrap();
            if conditions(&view) == [Condition::Stale; 3] {
                break view;
            }
        }
    })
    .await
    .expect("the watch saw the verdicts go stale")
}

/// Publishes what a readiness round that panicked with `readiness` and a health round that
/// panicked with `health` conclude.
pub(crate) fn rounds_panicked(handle: &HealthHandle, readiness: &str, health: &str) {
    handle.state.round_panicked(Cadence::Readiness, readiness);
    handle.state.round_panicked(Cadence::Health, health);
}

/// Publishes what a readiness round that panicked with `panic` concludes.
pub(crate) fn readiness_round_panicked(handle: &HealthHandle, panic: &str) {
    handle.state.round_panicked(Cadence::Readiness, panic);
}
