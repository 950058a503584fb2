//! Regression tests of where two rules of a round meet over time (issue 35): a component's own
//! deadline and the starved-round rule; a database a readiness round learns and `/health`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::check::{CheckFuture, CheckReport, DatabaseCheck};
use crate::component::{ComponentSpec, ComponentStatus, from_fn};
use crate::config::HealthConfig;
use crate::monitor::runner::HealthMonitor;
use crate::monitor::testing::{monitor, rounds};
use crate::probe::Probe;
use crate::test_helpers::{FakeCheck, FakeComponent, Logs};
use crate::verdict::{Status, TimeoutDetail};
use crate::view::Condition;

/// A database that answers after `0`, in the test's (virtual) time.
#[derive(Debug)]
struct Slow(Duration);

impl DatabaseCheck for Slow {
    fn vendor(&self) -> &'static str {
        "fake"
    }

    fn check(&self) -> CheckFuture {
        let latency = self.0;
        Box::pin(async move {
            tokio::time::sleep(latency).await;
            Ok(CheckReport::default())
        })
    }
}

/// A component that passes its first check and hangs from then on.
fn passes_then_hangs() -> impl crate::component::Component {
    let checks = Arc::new(AtomicUsize::new(0));
    from_fn(move || {
        let first = checks.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if !first {
                std::future::pending::<()>().await;
            }
            Ok::<_, crate::check::CheckError>(())
        }
    })
}

/// A critical component with a deadline of its own (100 ms) hangs, in a round that also
/// waits 400 ms for a database: it times out on its own deadline, and readiness, which it
/// gates, fails at once. It used to be waited for after the database, past its deadline, which
/// read as a round the runtime woke late: the pass heard before stood in, `healthy`, for as
/// long as a health verdict stays fresh.
#[tokio::test(start_paused = true)]
async fn a_hung_component_times_out_on_its_own_deadline_whatever_the_round_waited_for_first() {
    let config = HealthConfig::new()
        .readiness_timeout(Duration::from_millis(500))
        .database("default", Slow(Duration::from_millis(400)))
        .component(
            ComponentSpec::new("queue", passes_then_hangs())
                .critical(true)
                .gates_readiness(true)
                .timeout(Duration::from_millis(100)),
        );
    let handle = monitor(config);
    handle.state.health_round().await;
    handle.state.readiness_round().await;
    assert!(handle.view().answer(Probe::Ready).passing);

    handle.state.health_round().await;
    let queue = |handle: &crate::HealthHandle| {
        let view = handle.view();
        view.health
            .components
            .iter()
            .find(|report| &*report.name == "queue")
            .cloned()
            .expect("the component is listed")
    };
    let report = queue(&handle);
    assert_eq!(report.status, ComponentStatus::Unhealthy, "{report:?}");
    let outcome = report.outcome.expect("a check was heard");
    assert_eq!(
        outcome.detail,
        Some(TimeoutDetail::DeadlinePassed),
        "a timeout of its own, not a starved round"
    );
    handle.state.readiness_round().await;
    assert!(!handle.view().answer(Probe::Ready).passing);
}

/// A database a readiness round finds refused is `unhealthy` on `/health` in the same round,
/// whatever the health interval, and its recovery likewise: no two answers of one process
/// contradict each other about one check for longer than a readiness interval (issue 35 B:
/// `/health` said `healthy` for 4 to 8 s over a red database card).
#[tokio::test]
async fn a_database_readiness_learns_reaches_health_in_the_same_round() {
    let database = FakeComponent::new(FakeCheck::Ready);
    let handle = monitor(
        HealthConfig::new()
            .readiness_timeout(Duration::from_secs(10))
            .health_interval(Duration::from_secs(3600))
            .database("default", database.clone()),
    );
    rounds(&handle).await;
    assert_eq!(handle.view().health.status, Status::Healthy);

    for (behaviour, ready, health) in [
        (FakeCheck::Refused, false, Status::Unhealthy),
        (FakeCheck::Ready, true, Status::Healthy),
    ] {
        database.set(behaviour);
        handle.state.readiness_round().await;
        let view = handle.view();
        assert_eq!(view.answer(Probe::Ready).passing, ready);
        assert_eq!(view.health.status, health, "{behaviour:?}");
        let shown = view.health.database.as_ref().expect("the default database");
        assert_eq!(shown.passed(), ready);
        assert_eq!(view.pool.is_usable(), ready);
    }
}

/// The transition's line is written when readiness's answer changes: after an outage, not
/// when the checks pass again (the return's delay still holds it out), but when that delay
/// runs out, with no round to mark it.
#[tokio::test(start_paused = true)]
async fn readiness_is_logged_ready_when_its_return_ends_not_when_its_checks_pass() {
    let database = FakeComponent::new(FakeCheck::Ready);
    let config = HealthConfig::new()
        .readiness_interval(Duration::from_secs(1))
        .readiness_timeout(Duration::from_millis(500))
        .debounce(Duration::from_secs(2))
        .return_jitter(Duration::from_secs(30))
        .database("default", database.clone());
    let (handle, monitor) = HealthMonitor::new(config).unwrap();
    let (guard, logs) = Logs::capture();
    tokio::spawn(monitor.run());
    let mut views = handle.watch();
    views
        .wait_for(|view| view.answer(Probe::Ready).passing)
        .await
        .unwrap();

    database.set(FakeCheck::Refused);
    tokio::time::sleep(Duration::from_secs(5)).await;
    database.set(FakeCheck::Ready);
    let view = views
        .wait_for(|view| view.answer(Probe::Ready).condition == Condition::Returning)
        .await
        .unwrap();
    let back_at = view
        .readiness
        .returned
        .at
        .expect("a return after the outage");
    let ready_lines = |logs: &Logs| logs.text().matches("readiness is now ready").count();
    assert!(
        logs.text().contains("readiness passes its checks again"),
        "{}",
        logs.text()
    );
    let before = ready_lines(&logs);
    tokio::time::sleep_until(back_at.into()).await;
    assert_eq!(
        ready_lines(&logs),
        before,
        "not ready before the delay ran out"
    );
    let view = views
        .wait_for(|view| view.answer(Probe::Ready).passing)
        .await
        .unwrap();
    assert_eq!(view.answer(Probe::Ready).condition, Condition::Verdict);
    // The monitor's watch wakes just past the instant (timers tick by the millisecond): a
    // moment for it to run.
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(crate::clock::since(back_at) < Duration::from_millis(10));
    assert_eq!(ready_lines(&logs), before + 1, "{}", logs.text());
    assert!(
        logs.text()
            .contains("after=\"the return's random delay ran out\""),
        "{}",
        logs.text()
    );
    drop(guard);
}
