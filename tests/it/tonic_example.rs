//! `examples/tonic.rs` as an operator runs it, under load: gRPC clients call the greeter over
//! HTTP/2 while HTTP/1.1 probe clients poll readiness, and a real SIGTERM drains it.

use crate::greeter;
use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use greeter::{GreeterClient, HelloRequest};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tower_health::grpc::pb::HealthCheckRequest;
use tower_health::grpc::pb::health_check_response::ServingStatus as Wire;
use tower_health::grpc::pb::health_client::HealthClient;

use support::grpc::{channel, next_status, rest};
use support::prober::{Answers, http_prober, in_order, start_for_drain};
use support::{LIMIT, bounded, eventually, refused_addr};

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
