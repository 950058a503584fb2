//! The view: drain, hold, startup and staleness decide one answer, and every reader gives
//! it; the watch wakes on each change. That the HTTP response (which the layers and the
//! admin server serve) agrees with the view in each of these states is tested beside the
//! response builder (`http/response_tests.rs`).

use std::time::Duration;

use crate::config::HealthConfig;
use crate::monitor::testing::{conditions, goes_stale_soon, monitor, rounds, until_stale};
use crate::probe::Probe;
use crate::test_helpers::FakeCheck;
use crate::view::{Condition, View};

fn config(check: FakeCheck) -> HealthConfig {
    HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .database("default", check)
}

/// One probe judged alone (gRPC's overall `Check` reads readiness's so) is the view's answer
/// to it, in every state.
fn agrees_alone(handle: &super::HealthHandle, view: &View) {
    for probe in Probe::ALL {
        let one = handle.judge(probe);
        let (condition, passing, status) = (one.condition, one.passing, one.status);
        let whole = view.answer(probe);
        assert_eq!(
            (passing, condition, status),
            (whole.passing, whole.condition, whole.status),
            "{probe}"
        );
    }
}

#[tokio::test]
async fn every_state_decides_one_answer_for_every_reader() {
    let handle = monitor(config(FakeCheck::Ready));
    let view = handle.view();
    agrees_alone(&handle, &view);
    assert_eq!(conditions(&view), [Condition::Unavailable; 3]);
    assert!(!view.answer(Probe::Startup).passing);
    assert_eq!(view.answer(Probe::Startup).condition, Condition::Starting);
    assert!(view.answer(Probe::Live).passing && view.answer(Probe::Ping).passing);

    rounds(&handle).await;
    let view = handle.view();
    agrees_alone(&handle, &view);
    assert_eq!(conditions(&view), [Condition::Verdict; 3]);
    assert!(
        view.answers().iter().all(|answer| answer.passing),
        "{view:?}"
    );
    assert!(view.answer(Probe::Ready).age.is_some());

    handle.hold("maintenance");
    let view = handle.view();
    agrees_alone(&handle, &view);
    assert_eq!(view.held.as_deref(), Some("maintenance"));
    assert_eq!(view.answer(Probe::Ready).condition, Condition::Held);
    assert!(!view.answer(Probe::Ready).passing);
    assert!(
        view.answer(Probe::Health).passing,
        "a hold is about traffic only"
    );
    handle.release();

    let drain = handle.drain().clone();
    drain.start();
    let view = handle.view();
    agrees_alone(&handle, &view);
    assert!(view.draining);
    assert_eq!(conditions(&view), [Condition::Draining; 3]);
    for probe in [Probe::Live, Probe::Ping, Probe::Startup] {
        assert!(view.answer(probe).passing, "{probe} passes through a drain");
    }
}

#[tokio::test]
async fn a_refused_database_and_a_stopped_monitor() {
    let handle = monitor(config(FakeCheck::Refused));
    rounds(&handle).await;
    let view = handle.view();
    agrees_alone(&handle, &view);
    assert_eq!(conditions(&view), [Condition::Verdict; 3]);
    assert_eq!(view.answer(Probe::Ready).status, "not_ready");
    assert_eq!(view.answer(Probe::Health).status, "unhealthy");
    assert_eq!(view.answer(Probe::Pool).status, "error");

    handle.state.set_monitor_running(false);
    let view = handle.view();
    agrees_alone(&handle, &view);
    assert!(!view.monitor_running);
    assert_eq!(conditions(&view), [Condition::Unavailable; 3]);
    assert_eq!(view.answer(Probe::Health).status, "unavailable");
}

#[tokio::test]
async fn a_stale_verdict_fails_for_every_reader() {
    let config = goes_stale_soon();
    let handle = monitor(config);
    rounds(&handle).await;
    let mut watch = handle.watch();
    let fresh = watch.changed().await.unwrap();
    assert_eq!(fresh.answer(Probe::Ready).condition, Condition::Verdict);
    // No round runs from here on, as with a stuck monitor: the watch wakes by itself when
    // the verdicts go stale.
    let stale = until_stale(&mut watch).await;
    assert_eq!(stale.answer(Probe::Ready).status, "not_ready");
    assert_eq!(stale.answer(Probe::Health).status, "unavailable");
}

#[tokio::test]
async fn the_watch_wakes_on_each_change_and_only_then() {
    let handle = monitor(config(FakeCheck::Ready));
    let mut watch = handle.watch();
    let first = watch.changed().await.unwrap();
    assert!(!first.answer(Probe::Startup).passing);

    // The first readiness round: ready, and started.
    let round = handle.state.readiness_round();
    round.await;
    let view = bounded(&mut watch).await;
    assert!(view.answer(Probe::Ready).passing);
    let view = if view.started {
        view
    } else {
        bounded(&mut watch).await
    };
    assert!(view.answer(Probe::Startup).passing);

    // A drain started after the watch began waiting.
    let waiting = tokio::spawn({
        let mut watch = handle.watch();
        watch.current().unwrap();
        async move {
            loop {
                let view = watch.changed().await.unwrap();
                if view.draining {
                    return view;
                }
            }
        }
    });
    let drain = handle.drain().clone();
    drain.start();
    let view = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the drain reached the watch")
        .unwrap();
    assert_eq!(conditions(&view), [Condition::Draining; 3]);

    // Nothing changes: the watch waits.
    watch.current().unwrap();
    let quiet = tokio::time::timeout(Duration::from_millis(50), watch.changed()).await;
    assert!(quiet.is_err(), "woke with nothing changed: {quiet:?}");
}

#[tokio::test]
async fn the_watch_ends_with_the_monitor() {
    let handle = monitor(config(FakeCheck::Ready));
    let mut watch = handle.watch();
    watch.current().unwrap();
    drop(handle);
    let closed = tokio::time::timeout(Duration::from_secs(30), watch.changed())
        .await
        .expect("the watch ended");
    assert!(closed.is_none());
}

/// The next view of `watch`, bounded against a hang.
async fn bounded(watch: &mut crate::view::ViewWatch) -> View {
    tokio::time::timeout(Duration::from_secs(30), watch.changed())
        .await
        .expect("the watch woke")
        .unwrap()
}
