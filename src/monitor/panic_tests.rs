//! No round may end the monitor: a panic costs the round it happens in, reported as such, and
//! the next round runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::check::{CheckFuture, CheckReport, DatabaseCheck, PoolStats};
use crate::config::HealthConfig;
use crate::monitor::runner::HealthMonitor;
use crate::probe::Probe;
use crate::verdict::Status;
use crate::view::Condition;

/// A database check that passes, whose `pool_stats` (called in the round itself, outside
/// the check's own task) panics while `panics` is set: a user's callback gone wrong.
#[derive(Clone, Debug, Default)]
struct PanickyStats {
    panics: Arc<AtomicBool>,
}

impl DatabaseCheck for PanickyStats {
    fn vendor(&self) -> &'static str {
        "fake"
    }

    fn check(&self) -> CheckFuture {
        Box::pin(async { Ok(CheckReport::default()) })
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        assert!(
            !self.panics.load(Ordering::SeqCst),
            "pool_stats of a user's check panics"
        );
        Some(PoolStats::new(1, 1, 1))
    }
}

/// Awaits `future`, failing the test after 30 s (a guard against hanging, as a monitor that
/// died would leave every wait below hanging).
async fn bounded<F: std::future::Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within 30 s"))
}

fn config(check: PanickyStats) -> HealthConfig {
    HealthConfig::new()
        .readiness_interval(Duration::from_millis(20))
        .health_interval(Duration::from_millis(20))
        .readiness_timeout(Duration::from_secs(5))
        .database("default", check)
}

#[tokio::test]
async fn a_round_that_panics_costs_that_round_only() {
    let check = PanickyStats::default();
    let health = HealthMonitor::spawn(config(check.clone())).unwrap();
    let mut views = health.watch();
    views.wait_for(|view| view.readiness.ready).await.unwrap();
    views
        .wait_for(|view| view.health.status == Status::Healthy)
        .await
        .unwrap();

    check.panics.store(true, Ordering::SeqCst);
    let panicked = views
        .wait_for(|view| {
            view.readiness
                .reason
                .as_ref()
                .is_some_and(|reason| reason.contains("panicked"))
        })
        .await
        .unwrap()
        .readiness;
    assert!(!panicked.ready);
    assert!(
        panicked.checked_at.is_some(),
        "a round's verdict, not a placeholder"
    );
    let panicked = bounded(
        "a panicked health round",
        views.wait_for(|view| view.health.status == Status::Error),
    )
    .await
    .unwrap()
    .health;
    assert_eq!(panicked.causes[0].kind(), "panicked");
    assert_eq!(
        panicked.causes[0].describe(),
        "the health round panicked; the next round runs as usual"
    );
    let view = health.view();
    assert!(!view.answer(Probe::Ready).passing);
    assert_eq!(view.answer(Probe::Ready).condition, Condition::Verdict);
    assert!(view.answer(Probe::Live).passing);

    // Later rounds run: the monitor is alive, and recovers with the callback.
    let rounds = health.stats().readiness_rounds;
    assert!(health.is_monitor_running());
    check.panics.store(false, Ordering::SeqCst);
    bounded("ready again", views.wait_for(|view| view.readiness.ready))
        .await
        .unwrap();
    bounded(
        "healthy again",
        views.wait_for(|view| view.health.status == Status::Healthy),
    )
    .await
    .unwrap();
    assert!(health.stats().readiness_rounds > rounds);
    let counters = &health.state.counters;
    assert!(counters.readiness_round_panics.load(Ordering::Relaxed) > 0);
    assert!(counters.health_round_panics.load(Ordering::Relaxed) > 0);
}

/// A monitor whose task is gone (aborted by the application, or its runtime shut down) is
/// not running: readiness, health and pool say so with 503, liveness answers 200 as it
/// always does (the contract: liveness never follows the verdicts), and nothing else ends
/// it, a panic included.
#[tokio::test]
async fn a_monitor_whose_task_is_gone_is_unavailable_and_liveness_answers() {
    let (health, monitor) = HealthMonitor::new(config(PanickyStats::default())).unwrap();
    let task = tokio::spawn(monitor.run());
    let mut views = health.watch();
    bounded("ready", views.wait_for(|view| view.readiness.ready))
        .await
        .unwrap();
    task.abort();
    let _ = task.await;
    assert!(!health.is_monitor_running());
    let view = health.view();
    for probe in [Probe::Ready, Probe::Health, Probe::Pool] {
        let answer = view.answer(probe);
        assert!(!answer.passing, "{probe:?}");
        assert_eq!(answer.condition, Condition::Unavailable, "{probe:?}");
    }
    assert_eq!(
        health.view().readiness.reason,
        Some("the health monitor is not running")
    );
    assert!(view.answer(Probe::Live).passing);
    assert!(view.answer(Probe::Ping).passing);
}
