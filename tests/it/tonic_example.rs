//! `examples/tonic.rs` as an operator runs it, under load: gRPC clients call the greeter over
//! HTTP/2 while HTTP/1.1 probe clients poll readiness, and a real SIGTERM drains it. And its
//! `--health-check` mode, as a container runtime runs it, against its real PostgreSQL.

use crate::greeter;
use crate::support;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use greeter::{GreeterClient, HelloRequest};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tower_health::grpc::pb::HealthCheckRequest;
use tower_health::grpc::pb::health_check_response::ServingStatus as Wire;
use tower_health::grpc::pb::health_client::HealthClient;

use http::StatusCode;
use support::child::{Example, example};
use support::fault_proxy::FaultProxy;
use support::grpc::{channel, next_status, rest};
use support::prober::{Answers, http_prober, in_order, start_for_drain};
use support::{Client, LIMIT, StalledListener, bounded, eventually, refused_addr};

/// What one kind of client saw, in order.
#[derive(Debug, Default)]
struct Seen {
    ok: usize,
    ok_during_drain: usize,
    failures: Vec<String>,
}

/// Polls `Check("")` over HTTP/2 until its connection is gone.
fn grpc_prober(addr: SocketAddr, answers: Answers) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut client = HealthClient::new(channel(addr).await.0);
        loop {
            let request = HealthCheckRequest::default();
            let answer = match bounded("Check", client.check(request)).await {
                Ok(response) => Some(response.into_inner().status() == Wire::Serving),
                Err(_) => None,
            };
            answers.lock().await.push(answer);
            if answer.is_none() {
                return;
            }
        }
    })
}

#[tokio::test]
async fn the_tonic_example_drains_on_sigterm_under_load_without_failing_a_call() {
    let addr = refused_addr().await;
    let child = start_for_drain("tonic", addr).await;

    // Probes of both styles, and a watcher of readiness.
    let (http_answers, grpc_answers) = (Answers::default(), Answers::default());
    let probers = [
        http_prober(addr, http_answers.clone()),
        grpc_prober(addr, grpc_answers.clone()),
    ];
    let mut health = HealthClient::new(channel(addr).await.0);
    let request = HealthCheckRequest::default();
    let mut watch = bounded("Watch", health.watch(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(next_status(&mut watch).await, Some(Wire::Serving));

    // The application's clients: each on its own HTTP/2 connection, calling until they have
    // seen the drain (as a balancer watching readiness would), then a few more calls.
    let draining = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    // The connections stay open (idle) once the clients stop: each must get its GOAWAY.
    let mut connections = Vec::new();
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (channel, goaway) = channel(addr).await;
        connections.push((channel.clone(), goaway));
        let (draining, seen) = (draining.clone(), seen.clone());
        workers.push(tokio::spawn(async move {
            let mut client = GreeterClient::new(channel);
            let mut after_drain = 0;
            while after_drain < 5 {
                let during_drain = draining.load(Ordering::SeqCst);
                let request = HelloRequest {
                    name: "load".into(),
                    delay_ms: 0,
                };
                let result = bounded("SayHello", client.say_hello(request)).await;
                let mut seen = seen.lock().await;
                match result {
                    Ok(_) => {
                        seen.ok += 1;
                        seen.ok_during_drain += usize::from(during_drain);
                    }
                    Err(status) => seen.failures.push(status.to_string()),
                }
                after_drain += usize::from(during_drain);
            }
        }));
    }
    let sending = eventually(LIMIT, || async { seen.lock().await.ok >= 20 }).await;
    assert!(
        sending,
        "the gRPC clients got no answers before the SIGTERM"
    );

    // A slow call, in flight from before the SIGTERM until after the graceful shutdown has
    // begun (the drain delay is 3 s, the call takes 6): it must finish, on a connection that
    // gets a GOAWAY meanwhile.
    let (slow_channel, slow_goaway) = channel(addr).await;
    let slow = tokio::spawn(async move {
        let request = HelloRequest {
            name: "slow".into(),
            delay_ms: 6_000,
        };
        GreeterClient::new(slow_channel).say_hello(request).await
    });
    child.sigterm();

    assert_eq!(next_status(&mut watch).await, Some(Wire::NotServing));
    draining.store(true, Ordering::SeqCst);
    for worker in workers {
        bounded("a gRPC client", worker).await.unwrap();
    }
    // The health stream ends when the graceful shutdown begins, not at the drain's end.
    assert_eq!(rest(&mut watch).await, []);
    // Then the listener closes: new connections are refused.
    let closed = eventually(LIMIT, || async { TcpStream::connect(addr).await.is_err() }).await;
    assert!(closed, "the listener never closed");
    let reply = bounded("the slow call", slow).await.unwrap();
    assert_eq!(
        reply.expect("the slow call").into_inner().message,
        "hello, slow"
    );
    let goaway = eventually(LIMIT, || async { slow_goaway.load(Ordering::SeqCst) > 0 }).await;
    assert!(goaway, "no GOAWAY on the slow call's connection");
    for prober in probers {
        bounded("a prober", prober).await.unwrap();
    }

    let (status, stderr) = child.exit_within(LIMIT).await;
    let seen = seen.lock().await;
    eprintln!("tonic: {seen:?}");
    assert!(
        seen.failures.is_empty(),
        "failed calls: {:?}",
        seen.failures
    );
    assert!(
        seen.ok_during_drain > 0,
        "no call was served during the drain"
    );
    for (style, answers) in [("HTTP", &http_answers), ("gRPC", &grpc_answers)] {
        assert!(
            in_order(answers).await,
            "{style} readiness went back, or the listener closed before it failed: {:?}",
            answers.lock().await
        );
        assert!(
            answers.lock().await.contains(&Some(false)),
            "{style} readiness never failed before the listener closed"
        );
    }
    for (_channel, goaway) in &connections {
        let got = eventually(LIMIT, || async { goaway.load(Ordering::SeqCst) > 0 }).await;
        assert!(got, "an HTTP/2 client got no GOAWAY");
    }
    assert!(status.success(), "{status}\n{stderr}");
    assert!(stderr.contains("drain started"), "{stderr}");
    assert!(!stderr.contains("drain timeout"), "{stderr}");
    assert!(stderr.contains("abandoned=0"), "{stderr}");
}

/// `tonic --health-check` with `env`, as a container runtime runs it: its exit code and the
/// line it wrote.
async fn health_check(env: Vec<(&'static str, String)>) -> (Option<i32>, String) {
    let run = tokio::task::spawn_blocking(move || {
        let output = Command::new(example("tonic"))
            .arg("--health-check")
            .env_remove("HEALTH_CHECK_URL")
            .envs(env)
            .stdin(Stdio::null())
            .output()
            .expect("run the health check");
        let stderr = String::from_utf8_lossy(&output.stderr)
            .trim_end()
            .to_owned();
        (output.status.code(), stderr)
    });
    bounded("the health check", run).await.unwrap()
}

/// Waits until the example's HTTP readiness (not the code under test) answers `status`.
async fn readiness_is(client: &Client, addr: SocketAddr, status: StatusCode) -> bool {
    eventually(LIMIT, || async {
        matches!(client.try_get(addr, "/health/ready").await, Ok(reply) if reply.status == status)
    })
    .await
}

#[tokio::test]
async fn the_health_check_mode_asks_grpc_health_and_exits_0_only_for_serving() {
    require_postgres!();
    let proxy = FaultProxy::postgres(support::pg_addr()).await;
    let addr = refused_addr().await;
    let _server = Example::spawn(
        "tonic",
        &[
            ("LISTEN_ADDR", addr.to_string()),
            (
                "DATABASE_URL",
                format!(
                    "postgres://postgres@{}/postgres?sslmode=disable",
                    proxy.addr
                ),
            ),
            ("TOWER_HEALTH_READINESS_INTERVAL", "100ms".into()),
        ],
    );
    let client = Client::new();
    assert!(
        readiness_is(&client, addr, StatusCode::OK).await,
        "the tonic example did not become ready"
    );
    let at = |target: String| vec![("HEALTH_CHECK_URL", target)];

    // By default `Check("")` on LISTEN_ADDR: readiness.
    let (code, line) = health_check(vec![("LISTEN_ADDR", addr.to_string())]).await;
    assert_eq!(code, Some(0), "{line}");
    assert_eq!(line, format!("healthy: grpc://{addr} answered SERVING"));
    // Named services, a `/` in the name included.
    for service in ["database/default", "greeter.v1.Greeter"] {
        let (code, line) = health_check(at(format!("grpc://{addr}/{service}"))).await;
        assert_eq!(code, Some(0), "{service}: {line}");
    }
    // A service the server does not know.
    let (code, line) = health_check(at(format!("grpc://{addr}/no.such.Service"))).await;
    assert_eq!(code, Some(1), "{line}");
    assert!(
        line.starts_with(&format!(
            "unhealthy: grpc://{addr}/no.such.Service: health rpc failed: code = NotFound desc = "
        )),
        "{line}"
    );

    // The database refuses: readiness, and so `Check("")`, goes NOT_SERVING.
    proxy.refuse().await;
    proxy.cut();
    assert!(
        readiness_is(&client, addr, StatusCode::SERVICE_UNAVAILABLE).await,
        "readiness never failed with the database refused"
    );
    let (code, line) = health_check(vec![("LISTEN_ADDR", addr.to_string())]).await;
    assert_eq!(code, Some(1), "{line}");
    assert_eq!(
        line,
        format!(r#"unhealthy: grpc://{addr}: service unhealthy (responded with "NOT_SERVING")"#)
    );
    let (code, line) = health_check(at(format!("grpc://{addr}/database/default"))).await;
    assert_eq!(code, Some(1), "{line}");
    // And back.
    proxy.pass().await;
    assert!(
        readiness_is(&client, addr, StatusCode::OK).await,
        "readiness never came back with the database"
    );
    let (code, line) = health_check(vec![("LISTEN_ADDR", addr.to_string())]).await;
    assert_eq!(code, Some(0), "{line}");

    // A listener that accepts and never answers: the check gives up at its own timeout (2 s).
    let stalled = StalledListener::start().await;
    let (code, line) = health_check(at(format!("grpc://{}", stalled.addr))).await;
    assert_eq!(code, Some(1), "{line}");
    assert_eq!(
        line,
        format!("unhealthy: grpc://{}: no answer within 2s", stalled.addr)
    );
    assert_eq!(stalled.accepted(), 1);

    // A closed port.
    let closed = refused_addr().await;
    let (code, line) = health_check(vec![("LISTEN_ADDR", closed.to_string())]).await;
    assert_eq!(code, Some(1), "{line}");
    assert!(
        line.starts_with(&format!("unhealthy: grpc://{closed}: connection failed: ")),
        "{line}"
    );
    assert!(line.contains("refused"), "{line}");
}
