//! Regression tests of where two rules of a round meet over time (issue 35): a component's own
//! deadline and the starved-round rule; a database a readiness round learns and `/health`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::check::{CheckFuture, CheckReport, DatabaseCheck};
use crate::component::{ComponentSpec, ComponentStatus, from_fn};
use crate::config::HealthConfig;
use crate::monitor::testing::monitor;
use crate::probe::Probe;
use crate::verdict::TimeoutDetail;

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
            .cloned()
            .find(|report| &*report.name == "queue")
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
