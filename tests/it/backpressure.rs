//! Probes never wait on the application: with a saturated `ConcurrencyLimit` under the stack,
//! liveness, readiness and ping answer at once, while the application's own requests keep
//! their backpressure (they queue; they are not shed), unless `HealthLayer::shed_load` sheds
//! them: with a `PingLayer` above it, not below.

use crate::support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use support::{Client, eventually, fast, serve};
use tokio::sync::{Notify, mpsc};
use tower::ServiceBuilder;
use tower::limit::ConcurrencyLimitLayer;
use tower_health::{DrainConfig, HealthLayer, HealthMonitor, PingLayer, Probe};
use tower_health::{DrainHandle, DrainLayer};

/// A bound against hanging, not a measurement.
const LIMIT: Duration = Duration::from_secs(10);

/// What happened, in order: the application's own events and the test's.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl Events {
    fn push(&self, event: impl Into<String>) {
        self.0.lock().unwrap().push(event.into());
    }

    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// `/slow` holds its request (and the concurrency permit) until released; anything else
/// answers at once. Both record when they start.
fn app(
    events: Events,
    entered: mpsc::UnboundedSender<()>,
    release: Arc<Notify>,
) -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |request: Request<Incoming>| {
        let (events, entered, release) = (events.clone(), entered.clone(), release.clone());
        async move {
            let path = request.uri().path().to_owned();
            events.push(format!("app {path}"));
            if path == "/slow" {
                let _ = entered.send(());
                release.notified().await;
            }
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(path))))
        }
    })
}

async fn saturated_app_still_answers_probes(with_ping: bool) {
    let events = Events::default();
    let (entered_tx, mut entered) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let drain_layer = DrainLayer::new(health.handle().drain());
    let limited = ServiceBuilder::new()
        .layer(health)
        .layer(drain_layer)
        .layer(ConcurrencyLimitLayer::new(1))
        .service(app(events.clone(), entered_tx, release.clone()));
    let server = if with_ping {
        serve(
            ServiceBuilder::new()
                .layer(PingLayer::new())
                .service(limited),
        )
        .await
    } else {
        serve(limited).await
    };
    let addr = server.addr;
    let client = Client::new();
    let ready = eventually(LIMIT, || async {
        client.get(addr, "/health/ready").await.status == StatusCode::OK
    })
    .await;
    assert!(ready, "readiness never turned 200");

    // The one permit is taken by a request that will not finish until released.
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.get(addr, "/slow").await }
    });
    tokio::time::timeout(LIMIT, entered.recv())
        .await
        .expect("the slow request reached the application");
    // An application request queues behind it.
    let queued = tokio::spawn({
        let client = client.clone();
        async move { client.get(addr, "/queued").await }
    });

    for path in ["/health/live", "/health/ready", "/health/ping"] {
        let reply = tokio::time::timeout(LIMIT, client.get(addr, path))
            .await
            .unwrap_or_else(|_| panic!("{path} waited on the saturated application"));
        assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text());
        events.push(format!("probe {path} 200"));
    }
    events.push("release");
    release.notify_one();

    let slow = tokio::time::timeout(LIMIT, slow).await.unwrap().unwrap();
    assert_eq!(slow.status, StatusCode::OK);
    let queued = tokio::time::timeout(LIMIT, queued).await.unwrap().unwrap();
    assert_eq!(
        queued.status,
        StatusCode::OK,
        "queued, not shed: {}",
        queued.text()
    );
    assert_eq!(queued.text(), "/queued");
    // Probes were answered while the slow request held the permit, and the queued request
    // reached the application only once the permit was free.
    assert_eq!(
        events.all(),
        [
            "app /slow",
            "probe /health/live 200",
            "probe /health/ready 200",
            "probe /health/ping 200",
            "release",
            "app /queued",
        ],
    );
}

#[tokio::test]
async fn probes_answer_while_the_application_is_saturated() {
    saturated_app_still_answers_probes(true).await;
}

#[tokio::test]
async fn probes_answer_while_the_application_is_saturated_without_ping_layer() {
    saturated_app_still_answers_probes(false).await;
}

/// Where `PingLayer` sits relative to `HealthLayer::shed_load`, the one place shedding is set.
#[derive(Clone, Copy, Debug)]
enum ShedOrder {
    /// `PingLayer` outermost, above the shedding health layer: the documented stack.
    PingAboveHealth,
    /// `PingLayer` between the shedding health layer and the application's limit: always
    /// ready, it hides the limit's readiness from the health layer, which cannot shed.
    PingBelowHealth,
}

/// `HealthLayer::shed_load` over the drain over the application's limit of one, with
/// `PingLayer` where `order` puts it; `/slow` takes the one permit. Returns the server, the
/// drain and what to release `/slow` with.
async fn shedding_stack(
    order: ShedOrder,
    events: &Events,
) -> (
    support::TestServer,
    DrainHandle,
    Arc<Notify>,
    tokio::task::JoinHandle<support::Reply>,
) {
    let (entered_tx, mut entered) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    // Ready before the application saturates: the tests expect `/health/ready` to pass.
    let mut views = health.handle().watch();
    let ready = views.wait_for(|view| view.answer(Probe::Ready).passing);
    tokio::time::timeout(LIMIT, ready)
        .await
        .expect("readiness passes with nothing to check")
        .expect("the monitor runs");
    let drain = health.handle().drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let app = ServiceBuilder::new()
        .layer(ConcurrencyLimitLayer::new(1))
        .service(app(events.clone(), entered_tx, release.clone()));
    let server = match order {
        ShedOrder::PingAboveHealth => {
            serve(
                ServiceBuilder::new()
                    .layer(PingLayer::new())
                    .layer(health.shed_load())
                    .layer(drain_layer)
                    .service(app),
            )
            .await
        }
        ShedOrder::PingBelowHealth => {
            serve(
                ServiceBuilder::new()
                    .layer(health.shed_load())
                    .layer(drain_layer)
                    .layer(PingLayer::new())
                    .service(app),
            )
            .await
        }
    };
    let addr = server.addr;
    let slow = tokio::spawn(async move { Client::new().get(addr, "/slow").await });
    tokio::time::timeout(LIMIT, entered.recv())
        .await
        .expect("the slow request reached the application");
    (server, drain, release, slow)
}

/// With a `PingLayer` above it, `HealthLayer::shed_load` sheds: with `/slow` holding the only
/// permit, `/orders` gets 503 at once rather than queueing, while the probes still answer 200.
#[tokio::test]
async fn shed_load_sheds_under_a_ping_layer() {
    let order = ShedOrder::PingAboveHealth;
    let events = Events::default();
    let (server, drain, release, slow) = shedding_stack(order, &events).await;
    let addr = server.addr;
    let client = Client::new();

    let orders = tokio::time::timeout(LIMIT, client.get(addr, "/orders"))
        .await
        .unwrap_or_else(|_| panic!("{order:?}: /orders was queued, not shed"));
    assert_eq!(orders.status, StatusCode::SERVICE_UNAVAILABLE, "{order:?}");
    assert_eq!(orders.text(), r#"{"error":"service overloaded"}"#);
    assert_eq!(orders.header("retry-after"), Some("1"));
    assert_eq!(drain.in_flight(), 1, "a shed request is not in flight");
    for path in ["/health/live", "/health/ready", "/health/ping"] {
        let reply = tokio::time::timeout(LIMIT, client.get(addr, path))
            .await
            .unwrap_or_else(|_| panic!("{path} waited on the saturated application"));
        assert_eq!(reply.status, StatusCode::OK, "{order:?} {path}");
    }

    release.notify_one();
    let slow = tokio::time::timeout(LIMIT, slow).await.unwrap().unwrap();
    assert_eq!(slow.status, StatusCode::OK);
    // Free again: nothing is shed.
    let orders = tokio::time::timeout(LIMIT, client.get(addr, "/orders"))
        .await
        .unwrap();
    assert_eq!(orders.status, StatusCode::OK, "{order:?}");
    assert_eq!(events.all(), ["app /slow", "app /orders"], "{order:?}");
}

/// The other order, which the docs of `HealthLayer::shed_load` and of the `ping` module warn
/// against: a `PingLayer` below the shedding health layer is always ready, so the health
/// layer never sees the limit saturated and `/orders` waits for the permit (counted in the
/// drain meanwhile) instead of being shed. The probes still answer at once.
#[tokio::test]
async fn a_ping_layer_below_the_shedding_health_layer_hides_the_saturation() {
    let order = ShedOrder::PingBelowHealth;
    let events = Events::default();
    let (server, drain, release, slow) = shedding_stack(order, &events).await;
    let addr = server.addr;
    let client = Client::new();

    let orders = tokio::spawn({
        let client = client.clone();
        async move { client.get(addr, "/orders").await }
    });
    let both_in_flight = eventually(LIMIT, || async { drain.in_flight() == 2 }).await;
    assert!(
        both_in_flight,
        "{order:?}: /orders is not waiting in the stack (in flight: {})",
        drain.in_flight()
    );
    for path in ["/health/live", "/health/ready", "/health/ping"] {
        let reply = tokio::time::timeout(LIMIT, client.get(addr, path))
            .await
            .unwrap_or_else(|_| panic!("{path} waited on the saturated application"));
        assert_eq!(reply.status, StatusCode::OK, "{order:?} {path}");
    }
    events.push("release");
    release.notify_one();

    let slow = tokio::time::timeout(LIMIT, slow).await.unwrap().unwrap();
    assert_eq!(slow.status, StatusCode::OK);
    let orders = tokio::time::timeout(LIMIT, orders).await.unwrap().unwrap();
    assert_eq!(
        orders.status,
        StatusCode::OK,
        "{order:?}: {}",
        orders.text()
    );
    assert_eq!(
        events.all(),
        ["app /slow", "release", "app /orders"],
        "{order:?}: /orders waited for the permit"
    );
}

/// With the drain below the application's limit, a request that waits for the limit inside
/// `HealthLayer` has not reached `DrainLayer` yet; it still counts as in flight, so that
/// `drained()` does not report a clean drain while it is about to run.
#[tokio::test]
async fn a_queued_request_counts_in_the_drain_until_it_has_run() {
    let events = Events::default();
    let (entered_tx, mut entered) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let health = HealthLayer::new(
        HealthMonitor::spawn(fast().drain(DrainConfig::new().delay(Duration::ZERO))).unwrap(),
    );
    let drain = health.handle().drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let server = serve(
        ServiceBuilder::new()
            .layer(health)
            .layer(ConcurrencyLimitLayer::new(1))
            .layer(drain_layer)
            .service(app(events.clone(), entered_tx, release.clone())),
    )
    .await;
    let addr = server.addr;
    let client = Client::new();
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.get(addr, "/slow").await }
    });
    tokio::time::timeout(LIMIT, entered.recv())
        .await
        .expect("the slow request reached the application");
    let queued = tokio::spawn({
        let client = client.clone();
        async move { client.get(addr, "/queued").await }
    });
    let both_counted = eventually(LIMIT, || async { drain.in_flight() == 2 }).await;
    assert!(
        both_counted,
        "in flight: {}, expected the running and the queued request",
        drain.in_flight()
    );

    drain.start();
    let drained = tokio::spawn({
        let (drain, events) = (drain.clone(), events.clone());
        async move {
            let drained = drain.drained().await;
            events.push("drained");
            drained
        }
    });
    events.push("release");
    release.notify_one();
    let drained = tokio::time::timeout(LIMIT, drained).await.unwrap().unwrap();
    assert!(drained.is_clean(), "{drained:?}");
    for reply in [slow, queued] {
        let reply = tokio::time::timeout(LIMIT, reply).await.unwrap().unwrap();
        assert_eq!(reply.status, StatusCode::OK);
    }
    assert_eq!(
        events.all(),
        ["app /slow", "release", "app /queued", "drained"],
        "the drain was over before the queued request ran"
    );
}
