//! Envoy's `x-envoy-immediate-health-check-fail` over real servers: on the application's
//! responses while the process is held or draining, with the setting on; never on a probe's
//! answer, never with the setting off (`x-envoy-degraded` is in `components.rs` and
//! `saturation.rs`). And the ORCA load report Envoy reads (`endpoint-load-metrics`): on the
//! application's responses only with a load capacity set, one per response, following the
//! requests in flight.

use crate::support;

use std::net::SocketAddr;

use http::StatusCode;
use support::{Client, fast, first_rounds, gated_app, serve};
use tower::ServiceBuilder;
use tower_health::{DrainConfig, DrainHandle, DrainLayer, HealthConfig, HealthHandle};
use tower_health::{HealthLayer, HealthMonitor};

const IMMEDIATE_FAIL: &str = "x-envoy-immediate-health-check-fail";

const PROBES: [&str; 6] = [
    "/health",
    "/health/live",
    "/health/ready",
    "/health/startup",
    "/health/pool",
    "/health/ping",
];

/// The README's hyper-util stack: `HealthLayer` over `DrainLayer` over the app.
async fn hyper_stack(config: HealthConfig) -> (HealthHandle, DrainHandle, support::TestServer) {
    let health = HealthMonitor::spawn(config).unwrap();
    let drain = health.drain().clone();
    let server = serve(
        ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .layer(DrainLayer::new(&drain))
            .service(support::app()),
    )
    .await;
    first_rounds(&health).await;
    (health, drain, server)
}

/// Whether the application's answer and every probe's carry the header: `(app, probes)`.
async fn marked(client: &Client, addr: SocketAddr) -> (bool, Vec<&'static str>) {
    let app = client.get(addr, "/work").await;
    assert_eq!(app.text(), "inner /work");
    let mut probes = Vec::new();
    for path in PROBES {
        if client
            .get(addr, path)
            .await
            .header(IMMEDIATE_FAIL)
            .is_some()
        {
            probes.push(path);
        }
    }
    (app.header(IMMEDIATE_FAIL) == Some("true"), probes)
}

#[tokio::test]
async fn held_or_draining_the_applications_responses_say_so_and_nothing_else_does() {
    let (health, drain, server) = hyper_stack(fast().envoy_immediate_fail(true)).await;
    let client = Client::new();
    assert_eq!(
        marked(&client, server.addr).await,
        (false, vec![]),
        "in rotation"
    );
    assert!(health.hold("maintenance"));
    assert_eq!(marked(&client, server.addr).await, (true, vec![]), "held");
    assert!(health.release());
    assert_eq!(
        marked(&client, server.addr).await,
        (false, vec![]),
        "released"
    );
    assert!(drain.start());
    assert_eq!(
        marked(&client, server.addr).await,
        (true, vec![]),
        "draining"
    );
}

#[tokio::test]
async fn off_by_default() {
    let (health, drain, server) = hyper_stack(fast()).await;
    let client = Client::new();
    assert!(health.hold("maintenance"));
    assert_eq!(marked(&client, server.addr).await, (false, vec![]), "held");
    assert!(drain.start());
    assert_eq!(
        marked(&client, server.addr).await,
        (false, vec![]),
        "draining"
    );
}

/// `health.around(router)`, the form the README recommends for axum, under a drain that
/// refuses new requests: the refusal says it too.
#[cfg(feature = "axum")]
#[tokio::test]
async fn around_an_axum_router_and_on_a_drains_refusal() {
    use axum::Router;
    use axum::routing::get;
    use tower_health::drain::DrainPolicy;

    let health = HealthMonitor::spawn(
        fast()
            .envoy_immediate_fail(true)
            .drain(DrainConfig::new().policy(DrainPolicy::Reject)),
    )
    .unwrap();
    let drain = health.drain();
    let router = Router::new().route("/work", get(|| async { "inner /work" }));
    let stack = HealthLayer::new(&health).around(router);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, stack).await });
    first_rounds(&health).await;
    let client = Client::new();
    assert_eq!(marked(&client, addr).await, (false, vec![]), "in rotation");
    assert!(health.hold("maintenance"));
    assert_eq!(marked(&client, addr).await, (true, vec![]), "held");
    assert!(health.release());
    assert_eq!(marked(&client, addr).await, (false, vec![]), "released");
    assert!(drain.start());
    let refused = client.get(addr, "/work").await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.header(IMMEDIATE_FAIL), Some("true"));
    assert!(
        client
            .get(addr, "/health/ready")
            .await
            .header(IMMEDIATE_FAIL)
            .is_none()
    );
    server.abort();
}

const LOAD_REPORT: &str = "endpoint-load-metrics";

/// What one ORCA report says.
#[derive(Debug, Clone, Copy)]
struct OrcaReport {
    utilization: f64,
    requests_per_second: f64,
    errors_per_second: f64,
}

/// `reply`'s ORCA report, read as Envoy reads it, checking its form: one header, `TEXT `,
/// then `key=value` pairs separated by `, `: `application_utilization` (from 0 to 1),
/// `rps_fractional` and `eps` (finite, never negative), each once. `None` without a report.
fn orca_report(reply: &support::Reply) -> Option<OrcaReport> {
    let mut reports = reply.headers.get_all(LOAD_REPORT).iter();
    let report = reports.next()?.to_str().unwrap().to_owned();
    assert!(reports.next().is_none(), "one report per response");
    let pairs = report
        .strip_prefix("TEXT ")
        .unwrap_or_else(|| panic!("not a TEXT report: {report:?}"));
    let pairs: Vec<(&str, f64)> = pairs
        .split(", ")
        .map(|pair| {
            let (key, value) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("not key=value: {report:?}"));
            let value: f64 = value.parse().unwrap();
            assert!(value.is_finite() && value >= 0.0, "{report:?}");
            (key, value)
        })
        .collect();
    let keys: Vec<&str> = pairs.iter().map(|(key, _)| *key).collect();
    assert_eq!(
        keys,
        ["application_utilization", "rps_fractional", "eps"],
        "{report:?}"
    );
    assert!(pairs[0].1 <= 1.0, "{report:?}");
    Some(OrcaReport {
        utilization: pairs[0].1,
        requests_per_second: pairs[1].1,
        errors_per_second: pairs[2].1,
    })
}

/// The utilization `reply`'s ORCA report says; `None` without a report.
fn load_report(reply: &support::Reply) -> Option<f64> {
    orca_report(reply).map(|report| report.utilization)
}

#[tokio::test]
async fn the_application_s_responses_carry_a_load_report_only_with_a_capacity() {
    // Off by default: no report anywhere.
    let (_health, _drain, server) = hyper_stack(fast()).await;
    let client = Client::new();
    assert_eq!(load_report(&client.get(server.addr, "/work").await), None);

    // A capacity of 2, with Envoy's immediate fail on too: both dialects' words.
    const CAPACITY: u32 = 2;
    let health =
        HealthMonitor::spawn(fast().load_capacity(CAPACITY).envoy_immediate_fail(true)).unwrap();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let server = serve(
        ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .layer(DrainLayer::new(health.drain()))
            .service(gated_app(gate.clone())),
    )
    .await;
    first_rounds(&health).await;
    let idle = client.get(server.addr, "/work").await;
    assert_eq!(idle.text(), "inner /work");
    // Idle, less what a late timer tick counts on a busy test machine (the runtime's lag is
    // load too).
    assert!(
        load_report(&idle).is_some_and(|load| load < 0.1),
        "idle: {:?}",
        idle.header(LOAD_REPORT)
    );
    for path in PROBES {
        let probe = client.get(server.addr, path).await;
        assert_eq!(
            load_report(&probe),
            None,
            "{path}: a probe's answer is not the app's"
        );
    }
    // Both requests the app can take, held: the report rises to 1 (the estimate's
    // smoothing takes a few seconds; `eventually` waits far longer).
    let held: Vec<_> = (0..CAPACITY)
        .map(|_| {
            let client = Client::new();
            let addr = server.addr;
            tokio::spawn(async move { client.get(addr, "/wait").await })
        })
        .collect();
    let full = support::eventually(support::LIMIT, || async {
        load_report(&client.get(server.addr, "/work").await).is_some_and(|load| load >= 0.95)
    })
    .await;
    assert!(
        full,
        "the report did not follow: {:?}",
        health.utilization()
    );
    // An operator's hold: Envoy's word and the load report, side by side.
    assert!(health.hold("maintenance"));
    let held_reply = client.get(server.addr, "/work").await;
    assert_eq!(held_reply.header(IMMEDIATE_FAIL), Some("true"));
    assert!(load_report(&held_reply).is_some_and(|load| load >= 0.9));
    assert!(health.release());
    // Released, the requests finish and the report comes back down.
    gate.add_permits(CAPACITY as usize);
    for request in held {
        assert_eq!(request.await.unwrap().text(), "inner /wait");
    }
    let idle = support::eventually(support::LIMIT, || async {
        load_report(&client.get(server.addr, "/work").await).is_some_and(|load| load < 0.05)
    })
    .await;
    assert!(
        idle,
        "the report did not come back down: {:?}",
        health.utilization()
    );
}

/// The axum stack (`HealthLayer::around`) carries the report on the app's responses too.
#[cfg(feature = "axum")]
#[tokio::test]
async fn around_an_axum_router_the_app_s_responses_carry_the_load_report() {
    use axum::Router;
    use axum::routing::get;

    let health = HealthMonitor::spawn(fast().load_capacity(16)).unwrap();
    let router = Router::new().route("/work", get(|| async { "inner /work" }));
    let stack = HealthLayer::new(&health).around(router);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, stack).await });
    first_rounds(&health).await;
    let client = Client::new();
    // Idle, less what a late timer tick counts on a busy test machine.
    let idle = load_report(&client.get(addr, "/work").await);
    assert!(idle.is_some_and(|load| load < 0.1), "{idle:?}");
    assert_eq!(load_report(&client.get(addr, "/health/ready").await), None);
    server.abort();
}

/// An app that answers `/fail` with a 500 and anything else with `inner <path>`.
fn failing_app() -> impl tower::Service<
    http::Request<hyper::body::Incoming>,
    Response = http::Response<http_body_util::Full<bytes::Bytes>>,
    Error = std::convert::Infallible,
    Future = impl Future<
        Output = Result<
            http::Response<http_body_util::Full<bytes::Bytes>>,
            std::convert::Infallible,
        >,
    > + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(|request: http::Request<hyper::body::Incoming>| async move {
        let body = format!("inner {}", request.uri().path());
        let mut response = http::Response::new(http_body_util::Full::new(bytes::Bytes::from(body)));
        if request.uri().path() == "/fail" {
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        }
        Ok(response)
    })
}

/// A burst of successful requests to `addr` makes the report's request rate positive while
/// its error rate stays 0; requests answered with a 500 then make the error rate positive.
/// Nothing timed: each waits with `eventually`, on the reports of the requests it sends.
async fn the_report_s_rates_follow_the_requests_and_their_errors(
    client: &Client,
    addr: SocketAddr,
    health: &HealthHandle,
) {
    for _ in 0..100 {
        let reply = client.get(addr, "/work").await;
        assert_eq!(reply.status, StatusCode::OK);
        let report = orca_report(&reply).expect("a report on every application response");
        assert_eq!(report.errors_per_second, 0.0, "no error yet: {report:?}");
    }
    let counted = support::eventually(support::LIMIT, || async {
        let report = orca_report(&client.get(addr, "/work").await).unwrap();
        assert_eq!(report.errors_per_second, 0.0, "no error yet: {report:?}");
        report.requests_per_second > 0.0
    })
    .await;
    assert!(
        counted,
        "the request rate did not follow: {:?}",
        health.requests_per_second()
    );
    let failing = support::eventually(support::LIMIT, || async {
        let reply = client.get(addr, "/fail").await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        orca_report(&reply).unwrap().errors_per_second > 0.0
    })
    .await;
    assert!(
        failing,
        "the error rate did not follow: {:?}",
        health.errors_per_second()
    );
    assert!(health.errors_per_second().unwrap() > 0.0);
    assert!(health.requests_per_second().unwrap() >= health.errors_per_second().unwrap());
}

#[tokio::test]
async fn the_load_report_carries_the_request_and_error_rates_only_with_a_capacity() {
    let client = Client::new();
    // Off: no report, no rates.
    let (off, _drain, server) = hyper_stack(fast()).await;
    assert_eq!(
        orca_report(&client.get(server.addr, "/work").await).map(|_| ()),
        None
    );
    assert_eq!(off.requests_per_second(), None);
    drop(server);

    let health = HealthMonitor::spawn(fast().load_capacity(64)).unwrap();
    let server = serve(
        ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .layer(DrainLayer::new(health.drain()))
            .service(failing_app()),
    )
    .await;
    first_rounds(&health).await;
    the_report_s_rates_follow_the_requests_and_their_errors(&client, server.addr, &health).await;
}

/// The axum stack (`HealthLayer::around`) counts the app's requests and errors the same way.
#[cfg(feature = "axum")]
#[tokio::test]
async fn around_an_axum_router_the_load_report_carries_the_rates() {
    use axum::Router;
    use axum::routing::get;

    let router = || {
        Router::new()
            .route("/work", get(|| async { "inner /work" }))
            .route(
                "/fail",
                get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "inner /fail") }),
            )
    };
    let serve_around = |health: &HealthHandle| {
        let stack = HealthLayer::new(health).around(router());
        async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move { axum::serve(listener, stack).await });
            (addr, server)
        }
    };
    let client = Client::new();
    // Off: no report, no rates.
    let off = HealthMonitor::spawn(fast()).unwrap();
    let (addr, server) = serve_around(&off).await;
    first_rounds(&off).await;
    assert_eq!(
        orca_report(&client.get(addr, "/fail").await).map(|_| ()),
        None
    );
    assert_eq!(off.errors_per_second(), None);
    server.abort();

    let health = HealthMonitor::spawn(fast().load_capacity(64)).unwrap();
    let (addr, server) = serve_around(&health).await;
    first_rounds(&health).await;
    the_report_s_rates_follow_the_requests_and_their_errors(&client, addr, &health).await;
    server.abort();
}
