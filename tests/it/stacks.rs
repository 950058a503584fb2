//! The health stack inside the stacks service authors write, over a real server on 127.0.0.1:
//! the form the README recommends (`health.around(router)` served by `axum::serve`: drain,
//! probes under a saturated app, shedding), axum's `Router::layer` form, tower-http's timeout,
//! compression, tracing and CORS around the router, tower's concurrency limit, buffer and
//! load shedding under the probes (hyper-util), and a request timeout inside the probes. Each
//! test checks the probe paths and an application route.

use crate::support;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use bytes::Bytes;
use http::header::{self, HeaderName};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use support::{
    Client, LIMIT, Reply, TestServer, app, bounded, eventually, fast, first_rounds, serve,
};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tower::ServiceBuilder;
use tower::buffer::BufferLayer;
use tower::limit::ConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower_health::DrainLayer;
use tower_health::{DrainConfig, HealthLayer, HealthMonitor, PingLayer};
use tower_http::compression::CompressionLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// The application route's body in the compression tests: several KB, well above
/// `CompressionLayer`'s 32-byte minimum, and compressible.
fn big_body() -> String {
    "tower-health stacks test body. ".repeat(256)
}

/// An axum app served by plain `axum::serve` on 127.0.0.1:0; stops when dropped.
struct AxumServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for AxumServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_axum(app: Router) -> AxumServer {
    serve_axum_app(app).await
}

/// Serves anything `axum::serve` takes as it takes a router: a `Router`, or the stack around
/// one.
async fn serve_axum_app<M, S>(app: M) -> AxumServer
where
    M: for<'a> tower::Service<
            axum::serve::IncomingStream<'a, TcpListener>,
            Error = std::convert::Infallible,
            Response = S,
        > + Send
        + 'static,
    for<'a> <M as tower::Service<axum::serve::IncomingStream<'a, TcpListener>>>::Future: Send,
    S: tower::Service<
            Request<axum::body::Body>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = axum::serve(listener, app).into_future();
    let task = tokio::spawn(async move {
        server.await.expect("axum::serve failed");
    });
    AxumServer { addr, task }
}

/// A GET with extra request headers, on a fresh connection, bounded by [`LIMIT`].
async fn get_with(addr: SocketAddr, path: &str, headers: &[(HeaderName, &str)]) -> Reply {
    request_with(Method::GET, addr, path, headers).await
}

async fn request_with(
    method: Method,
    addr: SocketAddr,
    path: &str,
    headers: &[(HeaderName, &str)],
) -> Reply {
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut request = Request::builder()
        .method(method.clone())
        .uri(format!("http://{addr}{path}"));
    for (name, value) in headers {
        request = request.header(name, *value);
    }
    let request = request.body(Empty::new()).unwrap();
    let what = format!("{method} {path}");
    bounded(&what, async {
        let response = client
            .request(request)
            .await
            .unwrap_or_else(|error| panic!("{what}: request failed: {error:?}"));
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .unwrap_or_else(|error| panic!("{what}: body failed: {error:?}"))
            .to_bytes();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    })
    .await
}

/// A GET through the shared keep-alive client, bounded by [`LIMIT`].
async fn fetch(client: &Client, addr: SocketAddr, path: &str) -> Reply {
    bounded(path, client.get(addr, path)).await
}

/// Every probe path answers with its status and JSON body, as with no database configured.
/// Call once the monitor's first rounds are done.
async fn assert_probes(client: &Client, addr: SocketAddr) {
    let exact = [
        ("/health/live", json!({"status": "alive"})),
        ("/health/ping", json!({"ping": "pong", "status": "alive"})),
        ("/health/ready", json!({"checks": {}, "status": "ready"})),
        ("/health/startup", json!({"status": "started"})),
    ];
    for (path, body) in exact {
        let reply = fetch(client, addr, path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text());
        assert_eq!(reply.json(), body, "{path}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/json"),
            "{path}"
        );
    }
    // No database: health is unhealthy and pool degraded, both 503.
    let health = fetch(client, addr, "/health").await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE, "/health");
    assert_eq!(health.json()["status"], "unhealthy", "/health");
    let pool = fetch(client, addr, "/health/pool").await;
    assert_eq!(pool.status, StatusCode::SERVICE_UNAVAILABLE, "/health/pool");
    assert_eq!(pool.json()["status"], "degraded", "/health/pool");
}

/// 1. The idiomatic axum form, served by plain `axum::serve`: every probe answers, the route
///    and axum's 404 are untouched, and the monitor's drain turns readiness to 503
///    while liveness stays 200.
#[tokio::test]
async fn axum_router_layers_served_by_axum_serve() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain = health.handle().drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(drain_layer)
        .layer(health)
        .layer(PingLayer::new());
    let server = serve_axum(app).await;
    first_rounds(&monitor).await;
    let client = Client::new();

    assert_probes(&client, server.addr).await;
    let hello = fetch(&client, server.addr, "/").await;
    assert_eq!(hello.status, StatusCode::OK);
    assert_eq!(hello.text(), "hello");
    // Unknown paths, under the probe prefix or not, reach the router and get its 404.
    for path in ["/nope", "/health/other"] {
        let missing = fetch(&client, server.addr, path).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{path}");
        assert!(missing.body.is_empty(), "{path}: {}", missing.text());
    }

    assert!(drain.start(), "the drain had not started before");
    let ready = fetch(&client, server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.json()["status"], "draining");
    assert_eq!(ready.header("retry-after"), Some("5"));
    for (path, body) in [
        ("/health/live", json!({"status": "alive"})),
        ("/health/ping", json!({"ping": "pong", "status": "alive"})),
        ("/health/startup", json!({"status": "started"})),
    ] {
        let reply = fetch(&client, server.addr, path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path} while draining");
        assert_eq!(reply.json(), body, "{path} while draining");
    }
    // During the drain delay ordinary requests are still served, asking the client to close.
    let hello = fetch(&client, server.addr, "/").await;
    assert_eq!(hello.status, StatusCode::OK);
    assert_eq!(hello.text(), "hello");
    assert_eq!(hello.header("connection"), Some("close"));
}

/// 0. The card: `.layer(HealthLayer::new(config))`, with `config` a `HealthConfig`, on a
///    `ServiceBuilder` stack served by hyper-util and on an axum `Router`: the layer starts
///    the configuration's monitor (the real database checked), every probe answers from it,
///    the application's routes are untouched, and `layer.handle()` is that one monitor.
#[tokio::test]
async fn the_cards_one_line_with_a_configuration() {
    support::init_tracing();
    let config = || fast().database("default", support::postgres(&support::pg_url()));

    let layer = HealthLayer::new(config());
    let monitor = layer.handle();
    let server = serve(ServiceBuilder::new().layer(layer).service(app())).await;
    let axum = serve_axum(
        Router::new()
            .route("/", get(|| async { "hello" }))
            .layer(HealthLayer::new(config())),
    )
    .await;
    let client = Client::new();
    for (addr, route, body) in [
        (server.addr, "/route", "inner /route"),
        (axum.addr, "/", "hello"),
    ] {
        let ready = eventually(LIMIT, || async {
            fetch(&client, addr, "/health/ready").await.status == StatusCode::OK
        })
        .await;
        assert!(ready, "readiness never passed on {addr}");
        let reply = fetch(&client, addr, "/health/ready").await;
        assert_eq!(
            reply.json(),
            json!({"checks": {"database_default": "ready"}, "status": "ready"})
        );
        let live = fetch(&client, addr, "/health/live").await;
        assert_eq!(live.json(), json!({"status": "alive"}));
        let app = fetch(&client, addr, route).await;
        assert_eq!((app.status, app.text().as_str()), (StatusCode::OK, body));
    }
    // The monitor the first layer started is the one its handle reads: the checks ran there.
    assert!(monitor.is_monitor_running());
    assert!(monitor.stats().checks_started > 0);
    assert_eq!(&*monitor.view().readiness.databases[0].name, "default");
}

/// 0b. A configuration the layer cannot use stops the program where the layer is made,
///     naming the setter, before anything is served.
#[tokio::test]
#[should_panic(expected = "HealthLayer::new: HealthConfig::readiness_timeout")]
async fn the_cards_one_line_refuses_a_configuration_it_cannot_use() {
    let _layer = HealthLayer::new(fast().readiness_timeout(Duration::ZERO));
}

/// 2a. tower-http's timeout, compression and tracing inside the probes, in the recommended
///     order: probes are answered before compression, so a probe's body is never compressed
///     even when the client accepts gzip, while a large application response is.
#[tokio::test]
async fn tower_http_layers_inside_the_probes() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain_layer = DrainLayer::new(health.handle().drain());
    let body = big_body();
    let app = Router::new()
        .route("/", get(move || async move { body }))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(5),
        ))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
        .layer(drain_layer)
        .layer(health)
        .layer(PingLayer::new());
    let server = serve_axum(app).await;
    first_rounds(&monitor).await;
    let client = Client::new();

    assert_probes(&client, server.addr).await;
    let plain = fetch(&client, server.addr, "/").await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.text(), big_body());

    let gzip = [(header::ACCEPT_ENCODING, "gzip")];
    // /health/ping (32 bytes) and /health are at or above the 32-byte minimum: they would be
    // compressed if compression saw them (see the next test).
    for path in ["/health/ping", "/health", "/health/ready", "/health/live"] {
        let probe = get_with(server.addr, path, &gzip).await;
        assert_eq!(probe.header("content-encoding"), None, "{path}");
        assert!(
            probe.json()["status"].is_string(),
            "{path}: not plain JSON: {:?}",
            probe.body
        );
    }
    let compressed = get_with(server.addr, "/", &gzip).await;
    assert_eq!(compressed.status, StatusCode::OK);
    assert_eq!(compressed.header("content-encoding"), Some("gzip"));
    assert!(
        compressed.body.starts_with(&[0x1f, 0x8b]),
        "not a gzip stream"
    );
    assert!(compressed.body.len() < big_body().len());
}

/// 2b. The opposite order: `CompressionLayer` wraps the probe layers. The probes still compose
///     and answer, but their bodies are then compressed for clients that accept gzip (which
///     costs a compression per probe and surprises probes that read the body without
///     decoding): keep the probe layers outside compression.
#[tokio::test]
async fn compression_outside_the_probes_compresses_them() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain_layer = DrainLayer::new(health.handle().drain());
    let body = big_body();
    let app = Router::new()
        .route("/", get(move || async move { body }))
        .layer(drain_layer)
        .layer(health)
        .layer(PingLayer::new())
        .layer(CompressionLayer::new());
    let server = serve_axum(app).await;
    first_rounds(&monitor).await;
    let client = Client::new();

    // Without Accept-Encoding nothing changes.
    assert_probes(&client, server.addr).await;
    let gzip = [(header::ACCEPT_ENCODING, "gzip")];
    for (path, status) in [
        ("/health/ping", StatusCode::OK),
        ("/health/ready", StatusCode::OK),
        ("/health/live", StatusCode::OK),
        ("/health/startup", StatusCode::OK),
        ("/health", StatusCode::SERVICE_UNAVAILABLE),
    ] {
        let probe = get_with(server.addr, path, &gzip).await;
        assert_eq!(probe.status, status, "{path}");
    }
    // Bodies of 32 bytes and more are compressed; ping's is exactly 32.
    for path in ["/health/ping", "/health"] {
        let probe = get_with(server.addr, path, &gzip).await;
        assert_eq!(probe.header("content-encoding"), Some("gzip"), "{path}");
        assert!(probe.body.starts_with(&[0x1f, 0x8b]), "{path}");
    }
    let compressed = get_with(server.addr, "/", &gzip).await;
    assert_eq!(compressed.status, StatusCode::OK);
    assert_eq!(compressed.header("content-encoding"), Some("gzip"));
}

/// 2c. `CorsLayer` inside the probes: the application gets CORS headers and its preflight,
///     the probes answer as usual and carry no CORS headers. A preflight (OPTIONS) to a probe
///     path never reaches CORS, so the probe layer answers it 405.
#[tokio::test]
async fn cors_inside_the_probes() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain_layer = DrainLayer::new(health.handle().drain());
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(CorsLayer::new().allow_origin(Any).allow_methods(Any))
        .layer(TraceLayer::new_for_http())
        .layer(drain_layer)
        .layer(health)
        .layer(PingLayer::new());
    let server = serve_axum(app).await;
    first_rounds(&monitor).await;
    let client = Client::new();

    assert_probes(&client, server.addr).await;
    let origin = [(header::ORIGIN, "https://example.com")];
    let hello = get_with(server.addr, "/", &origin).await;
    assert_eq!(hello.status, StatusCode::OK);
    assert_eq!(hello.text(), "hello");
    assert_eq!(hello.header("access-control-allow-origin"), Some("*"));

    let preflight = [
        (header::ORIGIN, "https://example.com"),
        (header::ACCESS_CONTROL_REQUEST_METHOD, "GET"),
    ];
    let options = request_with(Method::OPTIONS, server.addr, "/", &preflight).await;
    assert_eq!(options.status, StatusCode::OK);
    assert_eq!(options.header("access-control-allow-origin"), Some("*"));

    for path in ["/health/ready", "/health/live", "/health/ping"] {
        let probe = get_with(server.addr, path, &origin).await;
        assert_eq!(probe.status, StatusCode::OK, "{path}");
        assert_eq!(probe.header("access-control-allow-origin"), None, "{path}");
        let options = request_with(Method::OPTIONS, server.addr, path, &preflight).await;
        assert_eq!(options.status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
    }
}

/// Sends every probe path several times (more requests than the limit's permits or the
/// buffer's slots, so that a permit a probe kept would show), then application requests.
async fn assert_stack_under_limits(server: &TestServer) {
    let client = Client::new();
    for _ in 0..4 {
        assert_probes(&client, server.addr).await;
    }
    for path in ["/", "/work", "/health/other"] {
        let reply = fetch(&client, server.addr, path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.text(), format!("inner {path}"), "{path}");
    }
}

/// 3a. `ConcurrencyLimit` under the probes and the drain (hyper-util, `ServiceBuilder`).
#[tokio::test]
async fn concurrency_limit_under_the_stack() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain_layer = DrainLayer::new(health.handle().drain());
    let service = ServiceBuilder::new()
        .layer(PingLayer::new())
        .layer(health)
        .layer(drain_layer)
        .layer(ConcurrencyLimitLayer::new(4))
        .service(app());
    let server = serve(service).await;
    first_rounds(&monitor).await;
    assert_stack_under_limits(&server).await;
}

/// 3b. `Buffer` innermost, around the application (its error type becomes `BoxError`).
#[tokio::test]
async fn buffer_under_the_stack() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain_layer = DrainLayer::new(health.handle().drain());
    let service = ServiceBuilder::new()
        .layer(PingLayer::new())
        .layer(health)
        .layer(drain_layer)
        .layer(BufferLayer::new(16))
        .service(app());
    let server = serve(service).await;
    first_rounds(&monitor).await;
    assert_stack_under_limits(&server).await;
}

/// 3c. `LoadShed` over `ConcurrencyLimit`, and a `ConcurrencyLimit` over `Buffer` variant.
#[tokio::test]
async fn load_shed_and_concurrency_limit_under_the_stack() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain_layer = DrainLayer::new(health.handle().drain());
    let service = ServiceBuilder::new()
        .layer(PingLayer::new())
        .layer(health)
        .layer(drain_layer)
        .layer(LoadShedLayer::new())
        .layer(ConcurrencyLimitLayer::new(4))
        .service(app());
    let server = serve(service).await;
    first_rounds(&monitor).await;
    assert_stack_under_limits(&server).await;

    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain_layer = DrainLayer::new(health.handle().drain());
    let service = ServiceBuilder::new()
        .layer(PingLayer::new())
        .layer(health)
        .layer(drain_layer)
        .layer(LoadShedLayer::new())
        .layer(ConcurrencyLimitLayer::new(4))
        .layer(BufferLayer::new(16))
        .service(app());
    let server = serve(service).await;
    first_rounds(&monitor).await;
    assert_stack_under_limits(&server).await;
}

/// 4. A request timeout inside the probes: a slow application request ends with the timeout's
///    status, probes sent while it is in its handler answer 200, and the drain's in-flight
///    count comes back to zero.
#[tokio::test]
async fn timeout_inside_the_probes_times_out_the_app_not_the_probes() {
    support::init_tracing();
    let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let monitor = health.handle().clone();
    let drain = health.handle().drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let (entered_tx, mut entered) = tokio::sync::mpsc::channel::<()>(1);
    let slow = move || {
        let entered_tx = entered_tx.clone();
        async move {
            let _ = entered_tx.send(()).await;
            tokio::time::sleep(Duration::from_secs(2)).await;
            "slow"
        }
    };
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/slow", get(slow))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_millis(200),
        ))
        .layer(drain_layer)
        .layer(health)
        .layer(PingLayer::new());
    let server = serve_axum(app).await;
    first_rounds(&monitor).await;
    let client = Client::new();

    let addr = server.addr;
    let slow_client = client.clone();
    let slow_request = tokio::spawn(async move { slow_client.try_get(addr, "/slow").await });
    bounded("the slow handler starting", entered.recv())
        .await
        .expect("the slow handler signals before it sleeps");
    // The slow request is in its handler: probes on another connection answer at once.
    for path in [
        "/health/ready",
        "/health/live",
        "/health/ping",
        "/health/startup",
    ] {
        let reply = fetch(&client, addr, path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text());
    }
    let slow = bounded("the slow request", slow_request)
        .await
        .expect("the slow request's task panicked")
        .expect("the slow request failed");
    assert_eq!(slow.status, StatusCode::REQUEST_TIMEOUT);

    assert_probes(&client, addr).await;
    let hello = fetch(&client, addr, "/").await;
    assert_eq!(hello.status, StatusCode::OK);
    assert_eq!(hello.text(), "hello");
    let settled = eventually(LIMIT, || async { drain.in_flight() == 0 }).await;
    assert!(
        settled,
        "{} requests still in flight after the timeout",
        drain.in_flight()
    );
}

/// 5. The form the README recommends, `health.around(router)` (feature `axum`).
#[cfg(feature = "axum")]
mod around {
    use std::pin::pin;
    use std::sync::Arc;

    use tokio::sync::{Notify, mpsc};

    use super::*;

    /// A router whose `/slow` route signals `entered`, then holds its request until `release` is
    /// notified; `/` answers `hello`.
    fn slow_router(entered: mpsc::UnboundedSender<()>, release: Arc<Notify>) -> Router {
        let slow = move || {
            let (entered, release) = (entered.clone(), release.clone());
            async move {
                let _ = entered.send(());
                release.notified().await;
                "slow"
            }
        };
        Router::new()
            .route("/", get(|| async { "hello" }))
            .route("/slow", get(slow))
    }

    /// The card's layer has its drain with nothing else wired: the monitor the layer started
    /// owns one, and starting it (what `DrainHandle::serve` does on SIGTERM) turns readiness
    /// 503 `draining` on the card's stack while liveness stays 200; the axum stack built on the
    /// same monitor counts an application request in it.
    #[tokio::test]
    async fn the_cards_one_line_drains_with_nothing_else_wired() {
        support::init_tracing();
        let layer = HealthLayer::new(fast().drain(DrainConfig::new().delay(Duration::ZERO)));
        let monitor = layer.handle().clone();
        let (entered_tx, mut entered) = mpsc::unbounded_channel();
        let release = Arc::new(Notify::new());
        let card = serve(ServiceBuilder::new().layer(layer.clone()).service(app())).await;
        let around = serve_axum_app(layer.around(slow_router(entered_tx, release.clone()))).await;
        first_rounds(&monitor).await;
        let client = Client::new();
        let slow = tokio::spawn({
            let client = client.clone();
            let addr = around.addr;
            async move { fetch(&client, addr, "/slow").await }
        });
        tokio::time::timeout(LIMIT, entered.recv())
            .await
            .expect("the slow request reached the router");

        assert!(monitor.drain().start());
        for addr in [card.addr, around.addr] {
            let ready = fetch(&client, addr, "/health/ready").await;
            assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE, "{addr}");
            assert_eq!(ready.json()["status"], "draining", "{addr}");
            let live = fetch(&client, addr, "/health/live").await;
            assert_eq!(live.status, StatusCode::OK, "{addr}");
        }
        assert_eq!(
            monitor.drain().in_flight(),
            1,
            "the router's request counts in the monitor's drain"
        );
        release.notify_one();
        assert_eq!(slow.await.unwrap().status, StatusCode::OK);
        assert!(
            tokio::time::timeout(LIMIT, monitor.drain().drained())
                .await
                .expect("drained")
                .is_clean()
        );
    }

    /// Serves a stack around an app that is not itself what `axum::serve` takes (a router under
    /// a concurrency limit), through axum's `into_make_service`.
    async fn serve_made<S>(app: S) -> AxumServer
    where
        S: tower::Service<
                Request<axum::body::Body>,
                Response = axum::response::Response,
                Error = std::convert::Infallible,
            > + Clone
            + Send
            + 'static,
        S::Future: Send,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let made = axum::ServiceExt::<Request<axum::body::Body>>::into_make_service(app);
        let server = axum::serve(listener, made).into_future();
        let task = tokio::spawn(async move {
            server.await.expect("axum::serve failed");
        });
        AxumServer { addr, task }
    }

    /// 5a. The README's form: `health.around(router)` served by plain `axum::serve`. Every probe
    ///     answers, the router's routes and its 404 are untouched, an application request is in
    ///     flight until it has answered, and the drain flips readiness, closes keep-alive
    ///     connections and waits for the request in flight.
    #[tokio::test]
    async fn around_the_router_served_by_axum_serve() {
        support::init_tracing();
        let (entered_tx, mut entered) = mpsc::unbounded_channel();
        let release = Arc::new(Notify::new());
        let health = HealthLayer::new(fast().drain(DrainConfig::new().delay(Duration::ZERO)));
        let monitor = health.handle();
        let drain = monitor.drain().clone();
        let app = health.around(slow_router(entered_tx, release.clone()));
        let server = serve_axum_app(app).await;
        first_rounds(&monitor).await;
        let client = Client::new();

        assert_probes(&client, server.addr).await;
        let hello = fetch(&client, server.addr, "/").await;
        assert_eq!(hello.status, StatusCode::OK);
        assert_eq!(hello.text(), "hello");
        assert_eq!(hello.header("connection"), None);
        for path in ["/nope", "/health/other"] {
            let missing = fetch(&client, server.addr, path).await;
            assert_eq!(missing.status, StatusCode::NOT_FOUND, "{path}");
        }
        assert_eq!(drain.in_flight(), 0, "answered requests are not in flight");

        let addr = server.addr;
        let slow = tokio::spawn({
            let client = client.clone();
            async move { client.get(addr, "/slow").await }
        });
        bounded("the slow handler starting", entered.recv())
            .await
            .expect("the slow handler signals before it waits");
        assert_eq!(drain.in_flight(), 1, "the slow request is in flight");

        assert!(drain.start(), "the drain had not started before");
        let ready = fetch(&client, addr, "/health/ready").await;
        assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(ready.json()["status"], "draining");
        assert_eq!(ready.header("retry-after"), Some("5"));
        for path in ["/health/live", "/health/ping", "/health/startup"] {
            let reply = fetch(&client, addr, path).await;
            assert_eq!(reply.status, StatusCode::OK, "{path} while draining");
        }
        let hello = get_with(addr, "/", &[]).await;
        assert_eq!(hello.status, StatusCode::OK);
        assert_eq!(hello.header("connection"), Some("close"));

        // The drain waits for the request in flight, then ends clean.
        let mut drained = pin!(drain.drained());
        assert!(
            tokio::time::timeout(Duration::from_millis(200), drained.as_mut())
                .await
                .is_err(),
            "the drain ended with a request in flight"
        );
        release.notify_one();
        let outcome = bounded("the drain", drained).await;
        assert!(outcome.is_clean(), "{outcome:?}");
        let slow = bounded("the slow request", slow).await.unwrap();
        assert_eq!(slow.status, StatusCode::OK);
        assert_eq!(slow.text(), "slow");
    }

    /// 5b. The router saturated (a concurrency limit of one around it, its permit held): probes
    ///     answer at once, never asking the app, and an application request waits for the permit
    ///     (counted in flight meanwhile) instead of being refused.
    #[tokio::test]
    async fn around_a_saturated_router_probes_answer_and_the_app_waits() {
        support::init_tracing();
        let (entered_tx, mut entered) = mpsc::unbounded_channel();
        let release = Arc::new(Notify::new());
        let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
        let monitor = health.handle();
        let drain = health.handle().drain().clone();
        let limited = ServiceBuilder::new()
            .layer(ConcurrencyLimitLayer::new(1))
            .service(slow_router(entered_tx, release.clone()));
        let server = serve_made(health.around(limited)).await;
        first_rounds(&monitor).await;
        let client = Client::new();
        let addr = server.addr;

        let slow = tokio::spawn({
            let client = client.clone();
            async move { client.get(addr, "/slow").await }
        });
        bounded("the slow handler starting", entered.recv())
            .await
            .expect("the slow handler signals before it waits");
        let queued = tokio::spawn({
            let client = client.clone();
            async move { client.get(addr, "/").await }
        });
        let both = eventually(LIMIT, || async { drain.in_flight() == 2 }).await;
        assert!(both, "in flight: {}", drain.in_flight());

        for _ in 0..3 {
            assert_probes(&client, addr).await;
        }
        assert!(!queued.is_finished(), "the queued request did not wait");
        release.notify_one();
        let slow = bounded("the slow request", slow).await.unwrap();
        assert_eq!(slow.text(), "slow");
        let queued = bounded("the queued request", queued).await.unwrap();
        assert_eq!(queued.status, StatusCode::OK);
        assert_eq!(queued.text(), "hello");
        let settled = eventually(LIMIT, || async { drain.in_flight() == 0 }).await;
        assert!(settled, "{} still in flight", drain.in_flight());
    }

    /// 5c. The same saturated router with the layer's `shed_load`: an application request gets 503 with
    ///     `Retry-After: 1` at once, the probes answer 200, and once the permit is free nothing is
    ///     shed.
    #[tokio::test]
    async fn around_a_saturated_router_sheds_with_shed_load() {
        support::init_tracing();
        let (entered_tx, mut entered) = mpsc::unbounded_channel();
        let release = Arc::new(Notify::new());
        let health = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
        let monitor = health.handle();
        let drain = health.handle().drain().clone();
        let limited = ServiceBuilder::new()
            .layer(ConcurrencyLimitLayer::new(1))
            .service(slow_router(entered_tx, release.clone()));
        let server = serve_made(health.clone().shed_load().around(limited)).await;
        first_rounds(&monitor).await;
        let client = Client::new();
        let addr = server.addr;

        let slow = tokio::spawn({
            let client = client.clone();
            async move { client.get(addr, "/slow").await }
        });
        bounded("the slow handler starting", entered.recv())
            .await
            .expect("the slow handler signals before it waits");
        let shed = fetch(&client, addr, "/").await;
        assert_eq!(shed.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(shed.text(), r#"{"error":"service overloaded"}"#);
        assert_eq!(shed.header("retry-after"), Some("1"));
        assert_probes(&client, addr).await;
        assert_eq!(drain.in_flight(), 1, "a shed request is not in flight");

        release.notify_one();
        assert_eq!(
            bounded("the slow request", slow).await.unwrap().text(),
            "slow"
        );
        let hello = fetch(&client, addr, "/").await;
        assert_eq!(hello.status, StatusCode::OK);
        assert_eq!(hello.text(), "hello");
    }
}
