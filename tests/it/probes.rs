//! The probe endpoints over a real HTTP server: methods, paths, pass-through, cache bypass,
//! staleness, and what probe traffic costs the database.

use crate::support;

use support::{app, fast};

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use http_body_util::channel::Channel;
use hyper::body::Incoming;
use support::{
    Client, LIMIT, PgProxy, bounded, eventually, first_rounds, health_server, pg_addr, pg_url,
    postgres, serve,
};
use tower::Layer;
use tower_health::DrainLayer;
use tower_health::{HealthConfig, HealthLayer, HealthMonitor, config::NoCache};

const PROBES: [&str; 6] = [
    "/health",
    "/health/live",
    "/health/ready",
    "/health/startup",
    "/health/pool",
    "/health/ping",
];

#[tokio::test]
async fn head_answers_like_get_without_a_body() {
    let (health, server) = health_server(fast()).await;
    first_rounds(&health).await;
    let client = Client::new();
    for path in PROBES {
        let get = client.get(server.addr, path).await;
        let head = client.request(Method::HEAD, server.addr, path).await;
        assert_eq!(head.status, get.status, "{path}");
        assert!(head.body.is_empty(), "{path}");
        assert_eq!(
            head.header("content-type"),
            get.header("content-type"),
            "{path}"
        );
        assert_eq!(
            head.header("cache-control"),
            get.header("cache-control"),
            "{path}"
        );
        let length: usize = head.header("content-length").unwrap().parse().unwrap();
        // The age in /health and /health/pool may have changed in between (a new round
        // even resets it): compare the bodies without its digits.
        let age_digits = |age: Option<u64>| age.map_or(0, |age| age.to_string().len());
        let get_age = get.json()["_cache"]["age_ms"].as_u64();
        let rest = get.body.len() - age_digits(get_age);
        if get_age.is_some() {
            let head_digits = length.checked_sub(rest);
            assert!(
                head_digits.is_some_and(|digits| (1..=20).contains(&digits)),
                "{path}: {length} vs {} with {} age digits",
                get.body.len(),
                age_digits(get_age)
            );
        } else {
            assert_eq!(length, get.body.len(), "{path}");
        }
    }
}

#[tokio::test]
async fn other_methods_get_405_with_allow() {
    let (_health, server) = health_server(fast()).await;
    let client = Client::new();
    for path in PROBES {
        for method in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::OPTIONS,
        ] {
            let reply = client.request(method.clone(), server.addr, path).await;
            assert_eq!(
                reply.status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path}"
            );
            assert_eq!(reply.header("allow"), Some("GET, HEAD"), "{method} {path}");
            assert_eq!(reply.json()["error"], "method not allowed");
        }
    }
}

#[tokio::test]
async fn a_trailing_slash_is_accepted_and_other_paths_pass_through() {
    let (health, server) = health_server(fast()).await;
    first_rounds(&health).await;
    let client = Client::new();
    for path in PROBES {
        let plain = client.get(server.addr, path).await;
        let slashed = client.get(server.addr, &format!("{path}/")).await;
        assert_eq!(slashed.status, plain.status, "{path}/");
        assert_eq!(slashed.json()["status"], plain.json()["status"], "{path}/");
    }
    for path in [
        "/",
        "/healthz",
        "/health/other",
        "/health//",
        "/health/ready/x",
        "/api/health",
    ] {
        let reply = client.get(server.addr, path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(
            reply.text(),
            format!("inner {path}"),
            "{path} must reach the inner service"
        );
    }
    // Methods on non-probe paths are the inner service's business.
    let post = client
        .request(Method::POST, server.addr, "/health/other")
        .await;
    assert_eq!(post.text(), "inner /health/other");
}

#[tokio::test]
async fn the_prefix_is_configurable() {
    let (health, server) = health_server(fast().path_prefix("/_probe/")).await;
    first_rounds(&health).await;
    let client = Client::new();
    assert_eq!(
        client.get(server.addr, "/_probe/live").await.json()["status"],
        "alive"
    );
    assert_eq!(
        client.get(server.addr, "/_probe/ready").await.json()["status"],
        "ready"
    );
    assert_eq!(
        client.get(server.addr, "/health/live").await.text(),
        "inner /health/live"
    );
}

#[tokio::test]
async fn ordinary_responses_stream_through_unbuffered() {
    let health = HealthMonitor::spawn(fast()).unwrap();
    let (sender, receiver) =
        tokio::sync::mpsc::channel::<http_body_util::channel::Sender<Bytes, Infallible>>(1);
    let app = tower::service_fn(move |_request: Request<Incoming>| {
        let sender = sender.clone();
        async move {
            let (body_sender, body) = Channel::<Bytes, Infallible>::new(1);
            sender.send(body_sender).await.unwrap();
            Ok::<_, Infallible>(Response::new(body))
        }
    });
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .service(app),
    )
    .await;
    let mut receiver = receiver;

    let stream = bounded("connecting", tokio::net::TcpStream::connect(server.addr))
        .await
        .unwrap();
    let handshake = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream));
    let (mut sender, connection) = bounded("the handshake", handshake).await.unwrap();
    tokio::spawn(connection);
    let request = Request::get("/stream")
        .body(http_body_util::Empty::<Bytes>::new())
        .unwrap();
    let response = bounded("the response head", sender.send_request(request))
        .await
        .unwrap();
    let mut body = response.into_body();
    let mut body_sender = bounded("the body's sender", receiver.recv()).await.unwrap();

    // Each chunk arrives before the next one exists: nothing in between buffers the body.
    for chunk in ["first", "second", "third"] {
        bounded("sending a chunk", body_sender.send_data(Bytes::from(chunk)))
            .await
            .unwrap();
        let frame = bounded(chunk, body.frame()).await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), chunk);
    }
    drop(body_sender);
    assert!(bounded("the end of the body", body.frame()).await.is_none());
}

#[tokio::test]
async fn nocache_computes_fresh_and_marks_the_answer_bypassed() {
    require_postgres!();
    let (health, server) = health_server(fast().database("default", postgres(&pg_url()))).await;
    first_rounds(&health).await;
    let client = Client::new();
    for path in ["/health", "/health/pool"] {
        let before = health.stats().fresh_rounds;
        let reply = client
            .get(server.addr, &format!("{path}?nocache=true"))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        let body = reply.json();
        assert_eq!(body["_cache"]["hit"], "bypassed", "{path}: {body}");
        let cached = client.get(server.addr, path).await.json();
        assert_eq!(cached["_cache"]["hit"], true, "{path}: {cached}");
        // Readiness has no bypass.
        assert!(
            client
                .get(server.addr, "/health/ready?nocache=true")
                .await
                .json()
                .get("_cache")
                .is_none()
        );
        // The second path may reuse the first one's computation (rate limit: 1 s).
        assert!(health.stats().fresh_rounds <= before + 1);
    }
}

#[tokio::test]
async fn concurrent_bypasses_share_one_computation() {
    require_postgres!();
    let proxy = PgProxy::start(pg_addr()).await;
    let hour = Duration::from_secs(3600);
    let config = HealthConfig::new()
        .readiness_interval(hour)
        .health_interval(hour)
        .readiness_timeout(Duration::from_secs(5))
        .nocache_min_interval(Duration::ZERO)
        .database("default", postgres(&proxy.url()));
    let health = HealthMonitor::spawn(config).unwrap();
    let arrived = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = arrived.clone();
    let server = serve(
        tower::ServiceBuilder::new()
            .map_request(move |request: Request<Incoming>| {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                request
            })
            .layer(HealthLayer::new(&health))
            .service(support::app()),
    )
    .await;
    first_rounds(&health).await;
    let (rounds, queries) = (health.stats().fresh_rounds, proxy.queries());

    // Hold the database's answer so that every bypass arrives while the first is running.
    proxy.freeze();
    let client = Client::new();
    let requests: Vec<_> = (0..20)
        .map(|i| {
            let client = client.clone();
            let path = if i % 2 == 0 {
                "/health?nocache=true"
            } else {
                "/health/pool?nocache=true"
            };
            tokio::spawn(async move { client.get(server.addr, path).await })
        })
        .collect();
    let all_arrived = eventually(LIMIT, || async {
        arrived.load(std::sync::atomic::Ordering::SeqCst) == 20
    })
    .await;
    assert!(all_arrived);
    proxy.thaw();
    for request in requests {
        let reply = request.await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        assert_eq!(reply.json()["_cache"]["hit"], "bypassed");
    }
    assert_eq!(
        health.stats().fresh_rounds,
        rounds + 1,
        "twenty bypasses, one computation"
    );
    assert_eq!(
        proxy.queries(),
        queries + 1,
        "one query reached the database"
    );

    // Once it is over, the next bypass computes again (no rate limit configured).
    client.get(server.addr, "/health?nocache=true").await;
    assert_eq!(health.stats().fresh_rounds, rounds + 2);
}

#[tokio::test]
async fn bypasses_are_rate_limited_and_can_be_switched_off() {
    let hour = Duration::from_secs(3600);
    let (health, server) = health_server(fast().nocache_min_interval(hour)).await;
    first_rounds(&health).await;
    let client = Client::new();
    for _ in 0..10 {
        let body = client.get(server.addr, "/health?nocache=true").await.json();
        assert_eq!(body["_cache"]["hit"], "bypassed");
    }
    assert_eq!(
        health.stats().fresh_rounds,
        1,
        "one computation per min interval"
    );

    let (health, server) = health_server(fast().nocache(NoCache::Off)).await;
    first_rounds(&health).await;
    let body = client.get(server.addr, "/health?nocache=true").await.json();
    assert_eq!(body["_cache"]["hit"], true);
    assert_eq!(health.stats().fresh_rounds, 0);
}

#[tokio::test]
async fn probe_traffic_never_reaches_the_database() {
    require_postgres!();
    let proxy = PgProxy::start(pg_addr()).await;

    // With the rounds an hour apart, nothing but probes happens after the first rounds:
    // thousands of them send not one query.
    let hour = Duration::from_secs(3600);
    let idle = HealthConfig::new()
        .readiness_interval(hour)
        .health_interval(hour)
        .database("default", postgres(&proxy.url()));
    let (health, server) = health_server(idle).await;
    first_rounds(&health).await;
    let (checks, queries) = (health.stats().checks_started, proxy.queries());
    let probes = storm(server.addr, 2000, || true).await;
    assert_eq!(proxy.queries(), queries, "{probes} probes sent queries");
    assert_eq!(health.stats().checks_started, checks);
    drop((health, server));

    // At the test cadences the storm spans several rounds of both, and the queries follow
    // the rounds (one check per round at most, plus the rounds in flight at either end).
    let (health, server) = health_server(fast().database("default", postgres(&proxy.url()))).await;
    first_rounds(&health).await;
    let (stats_before, queries_before) = (health.stats(), proxy.queries());
    let rounds_since = || {
        let stats = health.stats();
        (stats.readiness_rounds - stats_before.readiness_rounds)
            + (stats.health_rounds - stats_before.health_rounds)
    };
    let probes = storm(server.addr, 2000, || rounds_since() >= 6).await;
    let stats = health.stats();
    let queries = proxy.queries() - queries_before;
    let checks = stats.checks_started - stats_before.checks_started;
    let rounds = rounds_since();
    eprintln!("{probes} probes: {queries} queries, {checks} checks, {rounds} rounds");
    assert!(rounds >= 6, "{rounds} rounds");
    assert!(
        queries.abs_diff(checks) <= 1,
        "{queries} queries vs {checks} checks"
    );
    assert!(checks <= rounds + 2, "{checks} checks in {rounds} rounds");
}

/// Sends at least `count` probes over five connections, and goes on until `enough` holds too
/// (for at most [`LIMIT`]); returns how many were sent.
async fn storm(addr: std::net::SocketAddr, count: usize, enough: impl Fn() -> bool) -> usize {
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut sent = 0;
    let client = Client::new();
    while sent < count || !enough() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still probing after {LIMIT:?}"
        );
        let batch: Vec<_> = (0..5)
            .map(|i| {
                let client = client.clone();
                let path = ["/health/ready", "/health", "/health/pool", "/health/live"][i % 4];
                tokio::spawn(async move { client.get(addr, path).await.status })
            })
            .collect();
        for probe in batch {
            assert!(probe.await.unwrap().is_success());
            sent += 1;
        }
    }
    sent
}

#[tokio::test]
async fn a_stuck_monitor_is_not_served_as_fresh() {
    let interval = Duration::from_millis(100);
    let config = HealthConfig::new()
        .readiness_interval(interval)
        .health_interval(interval)
        .readiness_timeout(Duration::from_millis(100));
    let (health, monitor) = HealthMonitor::new(config).unwrap();
    // The monitor gets a runtime of its own, which the test then blocks: a hung monitor.
    let monitor_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (stuck_tx, stuck_rx) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        monitor_runtime.block_on(async {
            tokio::spawn(monitor.run());
            tokio::time::sleep(Duration::from_millis(300)).await;
            // Block the runtime's only thread until the test is done.
            let _ = stuck_rx.recv();
        });
    });
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .service(support::app()),
    )
    .await;
    first_rounds(&health).await;
    let client = Client::new();

    let stale = eventually(LIMIT, || async {
        client.get(server.addr, "/health/ready").await.status == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
    assert!(stale, "readiness kept answering 200 from a stuck monitor");
    let body = client.get(server.addr, "/health/ready").await.json();
    assert_eq!(body["status"], "not_ready");
    assert!(body["reason"].as_str().unwrap().contains("stale"), "{body}");
    // Health's verdict was published a moment after readiness's, and goes stale as much later
    // (with no database, a fresh one is 503 `unhealthy`).
    let health_stale = eventually(LIMIT, || async {
        let full = client.get(server.addr, "/health").await;
        full.status == StatusCode::SERVICE_UNAVAILABLE && full.json()["status"] == "unavailable"
    })
    .await;
    assert!(
        health_stale,
        "/health kept answering from a stuck monitor as if fresh"
    );
    assert_eq!(
        client.get(server.addr, "/health/live").await.status,
        StatusCode::OK
    );
    assert!(health.is_monitor_running(), "hung, not stopped");

    drop(stuck_tx);
    thread.join().unwrap();
}

#[tokio::test]
async fn a_stopped_monitor_makes_the_verdicts_unavailable_at_once() {
    let (health, monitor) = HealthMonitor::new(fast()).unwrap();
    let task = tokio::spawn(monitor.run());
    first_rounds(&health).await;
    assert!(health.view().readiness.ready);
    task.abort();
    let _ = task.await;
    assert!(!health.is_monitor_running());
    assert!(!health.view().readiness.ready);
    assert_eq!(
        health.view().health.status,
        tower_health::verdict::Status::Unavailable
    );
    assert!(!health.view().health.self_healing);
}

#[tokio::test]
async fn before_the_first_round_everything_but_live_and_ping_is_unavailable() {
    let (health, _monitor) = HealthMonitor::new(fast()).unwrap();
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .service(support::app()),
    )
    .await;
    let client = Client::new();
    for (path, status) in [
        ("/health", StatusCode::SERVICE_UNAVAILABLE),
        ("/health/ready", StatusCode::SERVICE_UNAVAILABLE),
        ("/health/pool", StatusCode::SERVICE_UNAVAILABLE),
        ("/health/live", StatusCode::OK),
        ("/health/ping", StatusCode::OK),
    ] {
        let reply = client.get(server.addr, path).await;
        assert_eq!(reply.status, status, "{path}: {}", reply.text());
    }
    let body = client.get(server.addr, "/health").await.json();
    assert_eq!(body["status"], "unavailable");
    assert_eq!(
        client.get(server.addr, "/health/ready").await.json()["status"],
        "not_ready"
    );
}

#[tokio::test]
async fn the_monitor_stops_when_every_handle_is_gone() {
    let (health, monitor) = HealthMonitor::new(fast()).unwrap();
    let task = tokio::spawn(monitor.run());
    first_rounds(&health).await;
    let server_handle = health.clone();
    drop(health);
    // Still running while a handle is held: a round completes after the first handle is gone.
    let rounds = server_handle.stats().readiness_rounds;
    let another_round = eventually(LIMIT, || async {
        server_handle.stats().readiness_rounds > rounds
    })
    .await;
    assert!(another_round, "no round after the first handle was dropped");
    assert!(server_handle.is_monitor_running());
    drop(server_handle);
    tokio::time::timeout(LIMIT, task)
        .await
        .expect("the monitor ended once its handles were gone")
        .unwrap();
}

#[tokio::test]
async fn startup_waits_for_the_first_round_and_the_application_then_stays_started() {
    let health = HealthLayer::new(
        HealthMonitor::spawn(fast().startup_waits_for_mark(true).kubernetes_aliases(true)).unwrap(),
    );
    let handle = health.handle().clone();
    let drain = health.handle().drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(health)
            .layer(drain_layer)
            .service(app()),
    )
    .await;
    let client = Client::new();
    let ready = eventually(LIMIT, || async {
        client.get(server.addr, "/readyz").await.status == StatusCode::OK
    })
    .await;
    assert!(ready, "readiness (through its alias) never turned 200");
    // The first round is done, but the application has not declared itself started.
    let starting = client.get(server.addr, "/health/startup").await;
    assert_eq!(starting.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(starting.json()["status"], "starting");
    handle.mark_started();
    let started = client.get(server.addr, "/health/startup/").await;
    assert_eq!(started.status, StatusCode::OK);
    assert_eq!(started.text(), r#"{"status":"started"}"#);
    assert_eq!(
        client.get(server.addr, "/livez").await.status,
        StatusCode::OK
    );
    // A drain depools; it does not make the pod look like it never started.
    drain.start();
    assert_eq!(
        client.get(server.addr, "/readyz").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        client.get(server.addr, "/health/startup").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn the_aliases_are_off_by_default() {
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(HealthLayer::new(HealthMonitor::spawn(fast()).unwrap()))
            .service(app()),
    )
    .await;
    let client = Client::new();
    for path in ["/livez", "/readyz"] {
        let reply = client.get(server.addr, path).await;
        assert_eq!(reply.text(), format!("inner {path}"), "passed to the app");
    }
}

#[tokio::test]
async fn a_layer_built_from_a_config_runs_its_monitor_until_the_last_service_is_gone() {
    let layer = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    let mut updates = layer.handle().watch();
    let service = layer.layer(app());
    drop(layer);
    let server = serve(service).await;
    let client = Client::new();
    let ready = eventually(LIMIT, || async {
        client.get(server.addr, "/health/ready").await.status == StatusCode::OK
    })
    .await;
    assert!(ready, "the monitor kept running while a service was left");
    // The server's connection (kept alive by the client) holds the last service; once both
    // are gone, so is the monitor, and its watch closes.
    drop(client);
    drop(server);
    let closed =
        tokio::time::timeout(LIMIT, async { while updates.changed().await.is_some() {} }).await;
    assert!(
        closed.is_ok(),
        "the monitor outlived every layer, service and handle"
    );
}
