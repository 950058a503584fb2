//! `grpc.health.v1` over a real tonic server on 127.0.0.1, against the real PostgreSQL, with
//! a real tonic client: `Check`, `Watch` and `List`; a database stall and its recovery; the
//! drain; and the HTTP probes on the same port agreeing with gRPC at every step.

use crate::greeter;
use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use http::StatusCode;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tonic::Code;
use tonic::transport::Channel;
use tonic::transport::server::TcpIncoming;
use tower_health::DrainLayer;
use tower_health::component::{ComponentSpec, from_fn};
use tower_health::drain::Drained;
use tower_health::grpc::pb::health_check_response::ServingStatus as Wire;
use tower_health::grpc::pb::health_client::HealthClient;
use tower_health::grpc::pb::{HealthCheckRequest, HealthListRequest};
use tower_health::grpc::{HealthService, ServingStatus};
use tower_health::{
    DrainConfig, DrainHandle, HealthConfig, HealthHandle, HealthLayer, HealthMonitor, PingLayer,
};
use tower_layer::Layer;

use greeter::{Greeter, GreeterServer, HelloRequest};

use support::grpc::{channel, next_status, rest};
use support::{Client, PgProxy, bounded, pg_addr, pg_url, postgres};

/// The most services `List` returns, as the `grpc` module docs state.
const MAX_LISTED: usize = 100;

/// Where the drain sits on the tonic server.
#[derive(Copy, Clone, Debug)]
enum DrainAround {
    /// Around the application's service alone (the README's form).
    Application,
    /// Around every service (`Server::builder().layer(drain_layer)`).
    Server,
}

/// A tonic server with the HTTP probe layers, `grpc.health.v1` and the greeter, run by
/// `DrainHandle::serve`.
struct TestServer {
    addr: SocketAddr,
    grpc: HealthService,
    drain: DrainHandle,
    task: JoinHandle<Result<Drained, tonic::transport::Error>>,
}

async fn start(health: HealthHandle, around: DrainAround) -> TestServer {
    let layer = HealthLayer::new(&health);
    let drain = health.drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let grpc = HealthService::new(&health);
    grpc.reporter().set_serving::<GreeterServer<Greeter>>();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let mut builder = tonic::transport::Server::builder()
        .accept_http1(true)
        .layer(PingLayer::new())
        .layer(layer);
    let greeter = Greeter::new(&drain, addr);
    let (service, serve) = (grpc.clone().server(), drain.clone());
    let task = match around {
        DrainAround::Application => tokio::spawn(async move {
            let router = builder
                .add_service(service)
                .add_service(drain_layer.layer(GreeterServer::new(greeter)));
            serve
                .serve(|shutdown| router.serve_with_incoming_shutdown(incoming, shutdown))
                .await
        }),
        DrainAround::Server => tokio::spawn(async move {
            let router = builder
                .layer(drain_layer)
                .add_service(service)
                .add_service(GreeterServer::new(greeter));
            serve
                .serve(|shutdown| router.serve_with_incoming_shutdown(incoming, shutdown))
                .await
        }),
    };
    TestServer {
        addr,
        grpc,
        drain,
        task,
    }
}

/// Readiness every 100 ms, a 300 ms deadline, the real PostgreSQL as `default`; a stuck
/// check is not abandoned within a test.
fn config() -> HealthConfig {
    support::fast()
        .check_limit(Duration::from_secs(300))
        .database("default", postgres(&pg_url()))
}

async fn client(addr: SocketAddr) -> HealthClient<Channel> {
    HealthClient::new(channel(addr).await.0)
}

async fn check(client: &mut HealthClient<Channel>, service: &str) -> Result<Wire, Code> {
    let request = HealthCheckRequest {
        service: service.into(),
    };
    match bounded("Check", client.check(request)).await {
        Ok(response) => Ok(response.into_inner().status()),
        Err(status) => Err(status.code()),
    }
}

async fn watch(
    client: &mut HealthClient<Channel>,
    service: &str,
) -> tonic::Streaming<tower_health::grpc::pb::HealthCheckResponse> {
    let request = HealthCheckRequest {
        service: service.into(),
    };
    bounded("Watch", client.watch(request))
        .await
        .expect("Watch is answered")
        .into_inner()
}

/// Waits until `service` watches `status`.
async fn until(client: &mut HealthClient<Channel>, service: &str, status: Wire) {
    let mut stream = watch(client, service).await;
    while next_status(&mut stream).await != Some(status) {}
}

/// The card on a tonic server: `Server::builder().layer(HealthLayer::new(config))` starts the
/// configuration's monitor, answers the HTTP probes from it on the gRPC port, and
/// `grpc.health.v1` built from `layer.handle()` answers from the same monitor.
#[tokio::test]
async fn the_cards_one_line_on_a_tonic_server() {
    support::init_tracing();
    let layer = HealthLayer::new(config());
    let grpc = HealthService::new(&layer.handle());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let greeter = Greeter::new(layer.handle().drain(), addr);
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let router = tonic::transport::Server::builder()
        .accept_http1(true)
        .layer(layer)
        .add_service(grpc.server())
        .add_service(GreeterServer::new(greeter));
    let task = tokio::spawn(router.serve_with_incoming(incoming));
    let mut health = client(addr).await;
    until(&mut health, "", Wire::Serving).await;
    let http = Client::new();
    let ready = bounded("/health/ready", http.get(addr, "/health/ready")).await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    assert_eq!(ready.json()["checks"]["database_default"], "ready");
    assert_eq!(
        check(&mut health, "database/default").await,
        Ok(Wire::Serving)
    );
    task.abort();
}

#[tokio::test]
async fn check_answers_readiness_a_database_and_not_found() {
    require_postgres!();
    let server = start(
        HealthMonitor::spawn(config()).unwrap(),
        DrainAround::Application,
    )
    .await;
    let mut client = client(server.addr).await;
    until(&mut client, "", Wire::Serving).await;
    assert_eq!(check(&mut client, "").await, Ok(Wire::Serving));
    assert_eq!(
        check(&mut client, "database/default").await,
        Ok(Wire::Serving)
    );
    assert_eq!(
        check(&mut client, "greeter.v1.Greeter").await,
        Ok(Wire::Serving)
    );
    assert_eq!(
        check(&mut client, "database/nope").await,
        Err(Code::NotFound)
    );
    assert_eq!(check(&mut client, "nope").await, Err(Code::NotFound));
}

/// A health group is a service of its own, `group/<name>`, judged as readiness is.
#[tokio::test]
async fn a_health_group_is_a_service_of_its_own() {
    require_postgres!();
    let refused = format!(
        "postgres://postgres@{}/postgres",
        support::refused_addr().await
    );
    let config = config()
        .database("orders", postgres(&refused))
        .optional_database("orders")
        .group(tower_health::config::HealthGroup::new("checkout").member("database/default"))
        .group(tower_health::config::HealthGroup::new("orders").member("database/orders"));
    let health = HealthMonitor::spawn(config).unwrap();
    let server = start(health.clone(), DrainAround::Application).await;
    let mut client = client(server.addr).await;
    until(&mut client, "group/checkout", Wire::Serving).await;
    assert_eq!(
        check(&mut client, "group/orders").await,
        Ok(Wire::NotServing)
    );
    assert_eq!(check(&mut client, "group/nope").await, Err(Code::NotFound));
    assert!(health.hold("maintenance"));
    until(&mut client, "group/checkout", Wire::NotServing).await;
    assert!(health.release());
    until(&mut client, "group/checkout", Wire::Serving).await;
    let listed = bounded("List", client.list(HealthListRequest {}))
        .await
        .unwrap()
        .into_inner()
        .statuses;
    assert!(listed.contains_key("group/checkout"), "{listed:?}");
    assert!(listed.contains_key("group/orders"), "{listed:?}");
}

#[tokio::test]
async fn watch_sees_a_stall_and_the_recovery_each_transition_once() {
    require_postgres!();
    let proxy = PgProxy::start(pg_addr()).await;
    let config = config().database("replica", postgres(&proxy.url()));
    let server = start(
        HealthMonitor::spawn(config).unwrap(),
        DrainAround::Application,
    )
    .await;
    let mut client = client(server.addr).await;
    until(&mut client, "", Wire::Serving).await;
    let mut ready = watch(&mut client, "").await;
    let mut replica = watch(&mut client, "database/replica").await;
    let mut default = watch(&mut client, "database/default").await;
    for stream in [&mut ready, &mut replica, &mut default] {
        assert_eq!(next_status(stream).await, Some(Wire::Serving));
    }

    // The replica's connection goes dark: its check times out, and readiness depools.
    proxy.freeze();
    assert_eq!(next_status(&mut replica).await, Some(Wire::NotServing));
    assert_eq!(next_status(&mut ready).await, Some(Wire::NotServing));
    proxy.thaw();
    assert_eq!(next_status(&mut replica).await, Some(Wire::Serving));
    assert_eq!(next_status(&mut ready).await, Some(Wire::Serving));

    // Nothing else was sent: the streams, ended now, hold no repeat.
    server.grpc.close_streams();
    assert_eq!(rest(&mut ready).await, []);
    assert_eq!(rest(&mut replica).await, []);
    assert_eq!(
        rest(&mut default).await,
        [],
        "the default database never moved"
    );
}

#[tokio::test]
async fn watch_on_an_unknown_name_stays_open_until_it_appears() {
    require_postgres!();
    let server = start(
        HealthMonitor::spawn(config()).unwrap(),
        DrainAround::Application,
    )
    .await;
    let mut client = client(server.addr).await;
    let mut stream = watch(&mut client, "billing.v1.Billing").await;
    assert_eq!(next_status(&mut stream).await, Some(Wire::ServiceUnknown));
    let reporter = server.grpc.reporter();
    reporter.set_service_status("billing.v1.Billing", ServingStatus::NotServing);
    assert_eq!(next_status(&mut stream).await, Some(Wire::NotServing));
    reporter.set_service_status("billing.v1.Billing", ServingStatus::Serving);
    assert_eq!(next_status(&mut stream).await, Some(Wire::Serving));
}

#[tokio::test]
async fn list_returns_every_service_and_refuses_past_the_limit() {
    require_postgres!();
    let cache = ComponentSpec::new("cache", from_fn(|| async { Ok(()) }));
    let server = start(
        HealthMonitor::spawn(config().component(cache)).unwrap(),
        DrainAround::Application,
    )
    .await;
    let mut client = client(server.addr).await;
    until(&mut client, "component/cache", Wire::Serving).await;
    until(&mut client, "", Wire::Serving).await;
    let list = bounded("List", client.list(HealthListRequest {})).await;
    let statuses: BTreeMap<_, _> = list
        .unwrap()
        .into_inner()
        .statuses
        .into_iter()
        .map(|(name, status)| (name, status.status()))
        .collect();
    let expected = [
        "",
        "component/cache",
        "database/default",
        "greeter.v1.Greeter",
    ]
    .map(|name| (name.to_owned(), Wire::Serving));
    assert_eq!(statuses, BTreeMap::from(expected));

    for n in statuses.len()..=MAX_LISTED {
        let name = format!("app.{n}");
        server
            .grpc
            .reporter()
            .set_service_status(name, ServingStatus::Serving);
    }
    let list = bounded("List", client.list(HealthListRequest {})).await;
    assert_eq!(list.unwrap_err().code(), Code::ResourceExhausted);
}

/// A drain flips every service and every watcher at once, the health streams end when the
/// graceful shutdown begins, and they never hold it open: the server stops (long before the
/// drain timeout, which is past the test's bound) with a clean drain.
async fn drain_flips_everything_and_the_streams_end(around: DrainAround) {
    let drain = DrainConfig::new()
        .delay(Duration::from_millis(300))
        .timeout(support::LIMIT * 4);
    let server = start(HealthMonitor::spawn(config().drain(drain)).unwrap(), around).await;
    let mut client = client(server.addr).await;
    let names = ["", "database/default", "greeter.v1.Greeter"];
    until(&mut client, "", Wire::Serving).await;
    let mut streams = Vec::new();
    for name in names {
        let mut stream = watch(&mut client, name).await;
        assert_eq!(
            next_status(&mut stream).await,
            Some(Wire::Serving),
            "{name}"
        );
        streams.push(stream);
    }
    let mut unknown = watch(&mut client, "nope").await;
    assert_eq!(next_status(&mut unknown).await, Some(Wire::ServiceUnknown));

    server.drain.start();
    for name in names {
        assert_eq!(
            check(&mut client, name).await,
            Ok(Wire::NotServing),
            "{name}"
        );
    }
    let http = Client::new();
    let ready = http.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    for (name, stream) in names.iter().zip(&mut streams) {
        assert_eq!(rest(stream).await, [Wire::NotServing], "{name}, {around:?}");
    }
    assert_eq!(rest(&mut unknown).await, []);

    let drained = bounded("the server's graceful shutdown", server.task)
        .await
        .expect("the server task")
        .expect("the server");
    assert!(drained.is_clean(), "{drained:?}");
}

#[tokio::test]
async fn a_drain_flips_every_service_and_every_watcher_at_once() {
    require_postgres!();
    drain_flips_everything_and_the_streams_end(DrainAround::Application).await;
}

#[tokio::test]
async fn with_the_drain_around_the_whole_server_the_streams_end_all_the_same() {
    require_postgres!();
    drain_flips_everything_and_the_streams_end(DrainAround::Server).await;
}

#[tokio::test]
async fn the_greeter_is_served_beside_the_probes() {
    require_postgres!();
    let server = start(
        HealthMonitor::spawn(config()).unwrap(),
        DrainAround::Application,
    )
    .await;
    let mut greeter = greeter::GreeterClient::new(channel(server.addr).await.0);
    let request = HelloRequest {
        name: "tonic".into(),
        delay_ms: 0,
    };
    let reply = bounded("SayHello", greeter.say_hello(request))
        .await
        .unwrap();
    assert_eq!(reply.into_inner().message, "hello, tonic");
    let live = Client::new().get(server.addr, "/health/live").await;
    assert_eq!(live.status, StatusCode::OK, "HTTP/1.1 on the gRPC port");
    assert_eq!(server.drain.in_flight(), 0);
}

/// What the HTTP probes say each service should answer: `/health/ready`'s status for `""`,
/// its `checks` for the databases, and `NOT_SERVING` everywhere while draining.
fn from_http(ready: &support::Reply) -> BTreeMap<String, bool> {
    let body = ready.json();
    let draining = body["status"] == "draining";
    let mut serving = BTreeMap::from([(String::new(), ready.status == StatusCode::OK)]);
    for (key, check) in body["checks"].as_object().into_iter().flatten() {
        if let Some(database) = key.strip_prefix("database_") {
            serving.insert(
                format!("database/{database}"),
                !draining && check == "ready",
            );
        }
    }
    serving
}

/// Reads `/health/ready`, then `List`, then `/health/ready` again, until the two HTTP
/// answers are the same (no round changed anything in between); then the gRPC answers must
/// be what HTTP says. Returns them.
async fn agree(
    addr: SocketAddr,
    client: &mut HealthClient<Channel>,
    step: &str,
) -> BTreeMap<String, Wire> {
    let http = Client::new();
    for _ in 0..50 {
        let before = http.get(addr, "/health/ready").await;
        let list = bounded("List", client.list(HealthListRequest {})).await;
        let after = http.get(addr, "/health/ready").await;
        let expected = from_http(&before);
        if expected != from_http(&after) {
            continue;
        }
        let statuses: BTreeMap<_, _> = list
            .unwrap()
            .into_inner()
            .statuses
            .into_iter()
            .map(|(name, status)| (name, status.status()))
            .collect();
        for (name, serving) in &expected {
            let grpc = statuses.get(name).copied();
            assert_eq!(
                grpc == Some(Wire::Serving),
                *serving,
                "{step}: {name}: gRPC {grpc:?}, HTTP {}",
                before.text()
            );
        }
        return statuses;
    }
    panic!("{step}: the HTTP answer kept changing");
}

#[tokio::test]
async fn http_probes_and_grpc_agree_at_every_step() {
    require_postgres!();
    let proxy = PgProxy::start(pg_addr()).await;
    let config = config().database("replica", postgres(&proxy.url()));
    // Not running yet: no round has completed.
    let (health, monitor) = HealthMonitor::new(config).unwrap();
    let server = start(health.clone(), DrainAround::Application).await;
    let mut client = client(server.addr).await;
    let status = |statuses: &BTreeMap<String, Wire>, name: &str| statuses.get(name).copied();

    let before = agree(server.addr, &mut client, "before the monitor runs").await;
    assert_ne!(status(&before, ""), Some(Wire::Serving));

    let _monitor = tokio::spawn(monitor.run());
    until(&mut client, "", Wire::Serving).await;
    let healthy = agree(server.addr, &mut client, "healthy").await;
    assert_eq!(status(&healthy, "database/replica"), Some(Wire::Serving));

    health.hold("maintenance");
    let held = agree(server.addr, &mut client, "held").await;
    assert_eq!(status(&held, ""), Some(Wire::NotServing));
    assert_eq!(
        status(&held, "database/default"),
        Some(Wire::Serving),
        "a hold is the process's"
    );
    health.release();
    until(&mut client, "", Wire::Serving).await;
    agree(server.addr, &mut client, "released").await;

    proxy.freeze();
    until(&mut client, "database/replica", Wire::NotServing).await;
    let stalled = agree(server.addr, &mut client, "replica stalled").await;
    assert_eq!(status(&stalled, ""), Some(Wire::NotServing));
    proxy.thaw();
    until(&mut client, "", Wire::Serving).await;
    agree(server.addr, &mut client, "recovered").await;

    server.drain.start();
    let draining = agree(server.addr, &mut client, "draining").await;
    assert!(
        draining.values().all(|status| *status == Wire::NotServing),
        "{draining:?}"
    );
}
