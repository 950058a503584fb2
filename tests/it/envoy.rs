//! Envoy's `x-envoy-immediate-health-check-fail` over real servers: on the application's
//! responses while the process is held or draining, with the setting on; never on a probe's
//! answer, never with the setting off (`x-envoy-degraded` is in `components.rs` and
//! `saturation.rs`).

use crate::support;

use std::net::SocketAddr;

use http::StatusCode;
use support::{Client, fast, first_rounds, serve};
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
