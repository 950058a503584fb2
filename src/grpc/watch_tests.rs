//! `Watch` over fake checks: pushed changes only, the latest status for a slow reader,
//! `SERVICE_UNKNOWN` kept open, and the end of every stream at the shutdown.

use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use futures_core::Stream;
use tonic::Request;
use tonic::codegen::BoxStream;

use super::pb::health_check_response::ServingStatus as Wire;
use super::pb::health_server::Health;
use super::pb::{HealthCheckRequest, HealthCheckResponse};
use super::{HealthService, ServingStatus};

/// What `Watch` answers with.
type WatchStream = BoxStream<HealthCheckResponse>;
use crate::config::HealthConfig;
use crate::monitor::{test_monitor, test_rounds};
use crate::shutdown::DrainConfig;
use crate::test_helpers::{FakeCheck, FakeComponent};

/// A bound against hanging, not a measurement.
const LIMIT: Duration = Duration::from_secs(10);

/// The service of a monitor of `database` whose `Watch` streams act on every answer at once.
fn service(database: &FakeComponent) -> HealthService {
    configured(database, |config| config)
}

/// The service of a monitor of `database`, configured by `set` (no debounce unless it says).
fn configured(
    database: &FakeComponent,
    set: impl FnOnce(HealthConfig) -> HealthConfig,
) -> HealthService {
    let config = HealthConfig::new()
        .readiness_timeout(Duration::from_secs(10))
        .debounce(Duration::ZERO)
        .database("default", database.clone());
    HealthService::new(&test_monitor(set(config)))
}

async fn watch(service: &HealthService, name: &str) -> WatchStream {
    let request = Request::new(HealthCheckRequest {
        service: name.into(),
    });
    service.watch(request).await.unwrap().into_inner()
}

/// The next message; `None` when the stream ended.
async fn next(stream: &mut WatchStream) -> Option<Wire> {
    let item = std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx));
    let item = tokio::time::timeout(LIMIT, item)
        .await
        .expect("a message or the end");
    item.map(|message| message.unwrap().status())
}

/// Whether the stream has nothing to send now (polled once, without waiting).
fn nothing_pending(stream: &mut WatchStream) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(stream).poll_next(&mut cx).is_pending()
}

#[tokio::test]
async fn a_watch_sends_each_change_once() {
    let database = FakeComponent::new(FakeCheck::Ready);
    let service = service(&database);
    let handle = service.handle().clone();
    let mut ready = watch(&service, "").await;
    let mut default = watch(&service, "database/default").await;
    assert_eq!(next(&mut ready).await, Some(Wire::Unknown));
    assert_eq!(next(&mut default).await, Some(Wire::Unknown));
    test_rounds(&handle).await;
    assert_eq!(next(&mut ready).await, Some(Wire::Serving));
    assert_eq!(next(&mut default).await, Some(Wire::Serving));
    // A round with the same outcome publishes a new verdict, and sends nothing.
    test_rounds(&handle).await;
    assert!(nothing_pending(&mut ready));
    database.set(FakeCheck::Refused);
    test_rounds(&handle).await;
    assert_eq!(next(&mut ready).await, Some(Wire::NotServing));
    assert_eq!(next(&mut default).await, Some(Wire::NotServing));
    assert!(nothing_pending(&mut ready));
}

/// A client-side health check acts on the first `NOT_SERVING`: a `Watch` stream says it once
/// the failure has lasted the debounce, while `Check`, which is polled, says it at once. A
/// recovery and a drain are sent at once, and so is a failure that never passed.
#[tokio::test]
async fn a_watch_waits_out_the_debounce_before_not_serving() {
    let debounce = Duration::from_millis(300);
    let database = FakeComponent::new(FakeCheck::Ready);
    let service = configured(&database, |config| {
        config
            .debounce(debounce)
            .drain(DrainConfig::new().timeout(LIMIT))
    });
    let handle = service.handle().clone();
    let mut ready = watch(&service, "").await;
    let mut default = watch(&service, "database/default").await;
    assert_eq!(next(&mut ready).await, Some(Wire::Unknown));
    assert_eq!(next(&mut default).await, Some(Wire::Unknown));
    test_rounds(&handle).await;
    assert_eq!(next(&mut ready).await, Some(Wire::Serving));
    assert_eq!(next(&mut default).await, Some(Wire::Serving));

    database.set(FakeCheck::Refused);
    test_rounds(&handle).await;
    assert_eq!(service.status(""), Some(ServingStatus::NotServing), "Check");
    tokio::time::sleep(debounce).await;
    test_rounds(&handle).await;
    assert_eq!(next(&mut ready).await, Some(Wire::NotServing));
    assert_eq!(next(&mut default).await, Some(Wire::NotServing));

    database.set(FakeCheck::Ready);
    test_rounds(&handle).await;
    assert_eq!(
        next(&mut ready).await,
        Some(Wire::Serving),
        "a recovery at once"
    );
    assert_eq!(next(&mut default).await, Some(Wire::Serving));

    handle.drain().start();
    assert_eq!(
        next(&mut ready).await,
        Some(Wire::NotServing),
        "a drain at once"
    );
}

/// The debounce's end is a change of its own: with no round after the failure, a `Watch`
/// stream says `NOT_SERVING` when the failure has lasted the debounce, not at the next
/// publication (issue 35 A4: 5 s against a 4 s debounce and a 5 s interval).
#[tokio::test(start_paused = true)]
async fn a_watch_says_not_serving_at_the_debounces_end_without_waiting_for_a_round() {
    let debounce = Duration::from_secs(4);
    let database = FakeComponent::new(FakeCheck::Ready);
    let service = configured(&database, |config| config.debounce(debounce));
    let handle = service.handle().clone();
    let mut streams = [
        watch(&service, "").await,
        watch(&service, "database/default").await,
    ];
    for stream in &mut streams {
        assert_eq!(next(stream).await, Some(Wire::Unknown));
    }
    test_rounds(&handle).await;
    for stream in &mut streams {
        assert_eq!(next(stream).await, Some(Wire::Serving));
    }

    database.set(FakeCheck::Refused);
    test_rounds(&handle).await;
    let failed = crate::clock::now();
    for stream in &mut streams {
        assert!(
            nothing_pending(stream),
            "failing for less than the debounce"
        );
    }
    for stream in &mut streams {
        assert_eq!(next(stream).await, Some(Wire::NotServing));
        let waited = crate::clock::since(failed);
        assert!(
            waited >= debounce && waited < debounce + Duration::from_millis(50),
            "said at the debounce's end, {waited:?} after the failure"
        );
    }
}

#[tokio::test]
async fn a_watch_keeps_serving_through_failed_rounds_shorter_than_the_debounce() {
    let database = FakeComponent::new(FakeCheck::Ready);
    let service = configured(&database, |config| {
        config.debounce(Duration::from_secs(3600))
    });
    let handle = service.handle().clone();
    let mut streams = Vec::new();
    for name in ["", "database/default"] {
        let mut stream = watch(&service, name).await;
        assert_eq!(next(&mut stream).await, Some(Wire::Unknown));
        streams.push(stream);
    }
    test_rounds(&handle).await;
    for stream in &mut streams {
        assert_eq!(next(stream).await, Some(Wire::Serving));
    }
    database.set(FakeCheck::Refused);
    for _ in 0..3 {
        test_rounds(&handle).await;
        assert_eq!(service.status(""), Some(ServingStatus::NotServing), "Check");
        for stream in &mut streams {
            assert!(
                nothing_pending(stream),
                "failing for less than the debounce"
            );
        }
    }
}

#[tokio::test]
async fn a_watch_of_a_process_that_never_passed_is_not_debounced() {
    let service = configured(&FakeComponent::new(FakeCheck::Refused), |config| {
        config.debounce(Duration::from_secs(3600))
    });
    let handle = service.handle().clone();
    let mut ready = watch(&service, "").await;
    assert_eq!(next(&mut ready).await, Some(Wire::Unknown));
    test_rounds(&handle).await;
    assert_eq!(next(&mut ready).await, Some(Wire::NotServing));
}

#[tokio::test]
async fn a_slow_reader_gets_the_latest_status_not_a_queue() {
    let database = FakeComponent::new(FakeCheck::Ready);
    let service = service(&database);
    let reporter = service.reporter();
    reporter.set_service_status("greeter", ServingStatus::Serving);
    let mut greeter = watch(&service, "greeter").await;
    assert_eq!(next(&mut greeter).await, Some(Wire::Serving));
    for status in [ServingStatus::NotServing, ServingStatus::Serving] {
        reporter.set_service_status("greeter", status);
    }
    reporter.set_service_status("greeter", ServingStatus::NotServing);
    assert_eq!(next(&mut greeter).await, Some(Wire::NotServing));
    assert!(nothing_pending(&mut greeter));
}

#[tokio::test]
async fn an_unknown_service_stays_open_until_it_appears() {
    let service = service(&FakeComponent::new(FakeCheck::Ready));
    let mut greeter = watch(&service, "greeter").await;
    assert_eq!(next(&mut greeter).await, Some(Wire::ServiceUnknown));
    assert!(nothing_pending(&mut greeter), "kept open");
    service
        .reporter()
        .set_service_status("greeter", ServingStatus::Serving);
    assert_eq!(next(&mut greeter).await, Some(Wire::Serving));
    assert!(service.reporter().clear_service_status("greeter"));
    assert_eq!(next(&mut greeter).await, Some(Wire::ServiceUnknown));
}

#[tokio::test]
async fn streams_get_not_serving_at_the_drain_and_end_when_the_shutdown_begins() {
    let delay = Duration::from_millis(50);
    let service = configured(&FakeComponent::new(FakeCheck::Ready), |config| {
        config.drain(DrainConfig::new().delay(delay).timeout(LIMIT))
    });
    let handle = service.handle().clone();
    test_rounds(&handle).await;
    let drain = handle.drain().clone();
    let mut streams = Vec::new();
    for name in ["", "database/default", "nope"] {
        let mut stream = watch(&service, name).await;
        next(&mut stream).await;
        streams.push(stream);
    }
    drain.start();
    for stream in &mut streams[..2] {
        assert_eq!(next(stream).await, Some(Wire::NotServing));
    }
    // Ended once the drain delay, at which `DrainHandle::serve` begins the shutdown, is over.
    for stream in &mut streams {
        assert_eq!(next(stream).await, None);
    }
    assert!(drain.is_draining());
}

#[tokio::test]
async fn close_streams_ends_every_stream_now() {
    let service = service(&FakeComponent::new(FakeCheck::Ready));
    let mut ready = watch(&service, "").await;
    assert_eq!(next(&mut ready).await, Some(Wire::Unknown));
    service.clone().close_streams();
    assert_eq!(next(&mut ready).await, None);
    // A later watch sends the status, and ends.
    let mut late = watch(&service, "").await;
    assert_eq!(next(&mut late).await, Some(Wire::Unknown));
    assert_eq!(next(&mut late).await, None);
}
