//! The services and what they answer, over fake checks whose rounds the test runs: the
//! view's rules (fail direction, components, drain) applied per service, `Check` and `List`.

use std::time::Duration;

use tonic::{Code, Request};

use super::pb::health_server::Health;
use super::pb::{HealthCheckRequest, HealthListRequest};
use super::{HealthService, ServingStatus};
use crate::component::ComponentSpec;
use crate::config::{FailDirection, HealthConfig};
use crate::dialect::grpc::MAX_LISTED;
use crate::monitor::{test_monitor, test_rounds};
use crate::probe::Probe;
use crate::test_helpers::{FakeCheck, FakeComponent};
use crate::view::Condition;

use ServingStatus::{NotServing, Serving, Unknown};

/// A default database that answers, a `replica` and two components the test switches.
struct Fixture {
    service: HealthService,
    replica: FakeComponent,
    cache: FakeComponent,
    queue: FakeComponent,
}

fn fixture(fail_direction: FailDirection) -> Fixture {
    // Long for checks that answer: a loaded machine never makes them `timed_out`.
    fixture_with(fail_direction, Duration::from_secs(10))
}

fn fixture_with(fail_direction: FailDirection, deadline: Duration) -> Fixture {
    let (replica, cache, queue) = (
        FakeComponent::new(FakeCheck::Ready),
        FakeComponent::new(FakeCheck::Ready),
        FakeComponent::new(FakeCheck::Ready),
    );
    let config = HealthConfig::new()
        .readiness_timeout(deadline)
        .fail_direction(fail_direction)
        .database("default", FakeCheck::Ready)
        .database("replica", replica.clone())
        .component(ComponentSpec::new("cache", cache.clone()))
        .component(ComponentSpec::new("queue", queue.clone()).critical(true));
    Fixture {
        service: HealthService::new(&test_monitor(config)),
        replica,
        cache,
        queue,
    }
}

impl Fixture {
    fn statuses(&self) -> [Option<ServingStatus>; 5] {
        [
            "",
            "database/default",
            "database/replica",
            "component/cache",
            "component/queue",
        ]
        .map(|name| self.service.status(name))
    }

    async fn rounds(&self) {
        test_rounds(self.service.handle()).await;
    }
}

#[tokio::test]
async fn every_service_is_unknown_before_the_first_round_then_serves() {
    let fixture = fixture(FailDirection::NotReady);
    assert_eq!(fixture.statuses(), [Some(Unknown); 5]);
    assert_eq!(fixture.service.status("database/nope"), None);
    assert_eq!(fixture.service.status("greeter"), None);
    fixture.rounds().await;
    assert_eq!(fixture.statuses(), [Some(Serving); 5]);
}

#[tokio::test]
async fn a_database_down_fails_its_service_and_readiness() {
    let fixture = fixture(FailDirection::NotReady);
    fixture.replica.set(FakeCheck::Refused);
    fixture.rounds().await;
    let [ready, default, replica, ..] = fixture.statuses();
    assert_eq!(
        [ready, default, replica],
        [Some(NotServing), Some(Serving), Some(NotServing)]
    );
}

#[tokio::test]
async fn a_timed_out_database_serves_only_under_fail_direction_ready() {
    for (direction, expected) in [
        (FailDirection::NotReady, NotServing),
        (FailDirection::Ready, Serving),
    ] {
        let fixture = fixture_with(direction, Duration::from_millis(50));
        fixture.replica.set(FakeCheck::Hangs);
        fixture.rounds().await;
        let outcome = fixture.service.handle().view().readiness.databases[1].status;
        assert_eq!(outcome.as_str(), "timed_out");
        assert_eq!(
            fixture.service.status("database/replica"),
            Some(expected),
            "{direction:?}"
        );
        assert_eq!(fixture.service.status(""), Some(expected), "{direction:?}");
    }
}

#[tokio::test]
async fn a_stale_verdict_fails_the_databases_and_readiness_in_either_fail_direction() {
    for direction in [FailDirection::NotReady, FailDirection::Ready] {
        // Rounds due every millisecond with a 20 ms deadline, and none runs after the
        // test's: the verdicts go stale soon, as under a stuck monitor.
        let config = HealthConfig::new()
            .readiness_interval(Duration::from_millis(1))
            .health_interval(Duration::from_millis(1))
            .readiness_timeout(Duration::from_millis(20))
            .fail_direction(direction)
            .database("default", FakeCheck::Ready)
            .component(ComponentSpec::new(
                "cache",
                FakeComponent::new(FakeCheck::Ready),
            ));
        let service = HealthService::new(&test_monitor(config));
        let names = ["", "database/default", "component/cache"];
        test_rounds(service.handle()).await;
        assert_eq!(
            names.map(|name| service.status(name)),
            [Some(Serving); 3],
            "{direction:?}: fresh"
        );
        let mut watch = service.handle().watch();
        let stale = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let view = watch.changed().await.unwrap();
                let conditions = [Probe::Ready, Probe::Health].map(|p| view.answer(p).condition);
                if conditions == [Condition::Stale; 2] {
                    break;
                }
            }
        })
        .await;
        assert!(
            stale.is_ok(),
            "{direction:?}: the verdicts never went stale"
        );
        assert_eq!(
            names.map(|name| service.status(name)),
            [Some(NotServing); 3],
            "{direction:?}: stale"
        );
        let request = Request::new(HealthCheckRequest {
            service: "database/default".into(),
        });
        let answer = service.check(request).await.unwrap().into_inner();
        assert_eq!(answer, NotServing.into(), "{direction:?}: Check");
    }
}

#[tokio::test]
async fn components_serve_when_healthy_or_degraded() {
    let fixture = fixture(FailDirection::NotReady);
    fixture.cache.set(FakeCheck::Refused);
    fixture.queue.set(FakeCheck::Refused);
    fixture.rounds().await;
    assert_eq!(
        fixture.service.status("component/cache"),
        Some(Serving),
        "degraded"
    );
    assert_eq!(
        fixture.service.status("component/queue"),
        Some(NotServing),
        "unhealthy"
    );
    assert_eq!(
        fixture.service.status(""),
        Some(Serving),
        "readiness is not theirs"
    );
}

#[tokio::test]
async fn a_drain_fails_every_service_the_applications_included() {
    let fixture = fixture(FailDirection::NotReady);
    let reporter = fixture.service.reporter();
    reporter.set_service_status("greeter.v1.Greeter", Serving);
    fixture.rounds().await;
    let drain = fixture.service.handle().drain().clone();
    assert_eq!(fixture.service.status("greeter.v1.Greeter"), Some(Serving));
    drain.start();
    assert_eq!(fixture.statuses(), [Some(NotServing); 5]);
    assert_eq!(
        fixture.service.status("greeter.v1.Greeter"),
        Some(NotServing)
    );
    assert!(
        fixture
            .service
            .handle()
            .view()
            .answer(crate::Probe::Live)
            .passing,
        "liveness is not gRPC's business"
    );
}

#[tokio::test]
async fn check_answers_not_found_and_list_every_service() {
    let fixture = fixture(FailDirection::NotReady);
    fixture.rounds().await;
    let reporter = fixture.service.reporter();
    reporter.set_service_status("greeter.v1.Greeter", NotServing);
    let check = |service: &str| {
        let request = Request::new(HealthCheckRequest {
            service: service.into(),
        });
        fixture.service.check(request)
    };
    let status = check("greeter.v1.Greeter").await.unwrap().into_inner();
    assert_eq!(status, NotServing.into());
    assert_eq!(check("nope").await.unwrap_err().code(), Code::NotFound);
    assert!(reporter.clear_service_status("greeter.v1.Greeter"));
    assert_eq!(
        check("greeter.v1.Greeter").await.unwrap_err().code(),
        Code::NotFound
    );

    let list = fixture.service.list(Request::new(HealthListRequest {}));
    let mut names: Vec<_> = list
        .await
        .unwrap()
        .into_inner()
        .statuses
        .into_keys()
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "",
            "component/cache",
            "component/queue",
            "database/default",
            "database/replica"
        ]
    );
    for n in 0..=(MAX_LISTED - names.len()) {
        reporter.set_service_status(format!("app.{n}"), Serving);
    }
    let list = fixture.service.list(Request::new(HealthListRequest {}));
    assert_eq!(list.await.unwrap_err().code(), Code::ResourceExhausted);
}

#[tokio::test]
async fn not_found_echoes_a_long_name_cut_short() {
    let fixture = fixture(FailDirection::NotReady);
    fixture.rounds().await;
    let check = |service: String| {
        fixture
            .service
            .check(Request::new(HealthCheckRequest { service }))
    };
    let short = check("nope".to_owned()).await.unwrap_err();
    assert_eq!(short.message(), r#"unknown service "nope""#);
    // Issue 21: a 1 MiB name came back whole, in the `grpc-message` header.
    let long = check("é".repeat(512 * 1024)).await.unwrap_err();
    assert_eq!(long.code(), Code::NotFound);
    assert_eq!(
        long.message(),
        format!(r#"unknown service "{}"... (1048576 bytes)"#, "é".repeat(64))
    );
    // Exactly at the limit: whole.
    let at_limit = check("a".repeat(64)).await.unwrap_err();
    assert_eq!(
        at_limit.message(),
        format!(r#"unknown service "{}""#, "a".repeat(64))
    );
}

#[tokio::test]
async fn the_crates_names_cannot_be_set() {
    let fixture = fixture(FailDirection::NotReady);
    fixture.rounds().await;
    let reporter = fixture.service.reporter();
    for name in ["", "database/default", "component/cache"] {
        let logs = crate::test_helpers::logged(|| {
            assert!(!reporter.set_service_status(name, NotServing), "{name:?}");
        });
        assert!(logs.contains("is tower-health's own"), "{logs}");
    }
    assert_eq!(fixture.statuses(), [Some(Serving); 5], "unchanged");
    assert!(reporter.set_service_status("greeter.v1.Greeter", Serving));
}
