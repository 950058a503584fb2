//! Draining over a real server with hyper-util's graceful shutdown: in-flight work finishes,
//! probes flip (or not) as they should, and `drained()` resolves when it should.

use crate::support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::pin;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::channel::Channel;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use support::{Client, LIMIT, bounded, eventually, first_rounds};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tower::ServiceBuilder;
use tower_health::{
    DrainConfig, DrainHandle, DrainLayer, HealthConfig, HealthLayer, HealthMonitor, PingLayer,
    drain::DrainPolicy,
};

/// The application: `/slow` answers once `gate` opens, `/stream` sends one chunk at once and
/// two more once `gate` opens, `/hold` sends one chunk and then holds its body open for an
/// hour, anything else answers at once. Every body is a channel, so streaming is real. The
/// gate, rather than a sleep, keeps work in flight for as long as a test needs, however
/// loaded the machine; past [`LIMIT`] the work goes on without it, so that nothing hangs.
fn app(
    gate: watch::Receiver<bool>,
) -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Channel<Bytes, Infallible>>,
    Error = Infallible,
    Future = impl Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |request: Request<Incoming>| {
        let gate = gate.clone();
        async move {
            let path = request.uri().path().to_owned();
            if path == "/slow" {
                wait_for(gate.clone()).await;
            }
            let (mut sender, body) = Channel::new(1);
            tokio::spawn(async move {
                match path.as_str() {
                    "/stream" => {
                        let _ = sender.send_data(Bytes::from("one ")).await;
                        wait_for(gate).await;
                        for chunk in ["two ", "three"] {
                            let _ = sender.send_data(Bytes::from(chunk)).await;
                        }
                    }
                    "/hold" => {
                        let _ = sender.send_data(Bytes::from("held ")).await;
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    _ => {
                        let _ = sender.send_data(Bytes::from(format!("done {path}"))).await;
                    }
                }
            });
            Ok::<_, Infallible>(Response::new(body))
        }
    })
}

/// Waits until the gate opens, or [`LIMIT`] passes.
async fn wait_for(mut gate: watch::Receiver<bool>) {
    let _ = tokio::time::timeout(LIMIT, gate.wait_for(|open| *open)).await;
}

struct Server {
    addr: SocketAddr,
    drain: DrainHandle,
    /// Resolves when the graceful shutdown has finished.
    done: JoinHandle<()>,
    gate: watch::Sender<bool>,
}

impl Server {
    /// Lets `/slow` answer and `/stream` finish.
    fn open_gate(&self) {
        self.gate.send_replace(true);
    }
}

/// Ping and health outermost, then the drain, then the app; served by hyper-util with a
/// graceful shutdown driven by `DrainHandle::shutdown_signal` (started by `drain.start()`
/// here, instead of a real signal, so that tests do not signal each other).
async fn server(config: DrainConfig) -> Server {
    let health = HealthMonitor::spawn(
        HealthConfig::new()
            .readiness_interval(Duration::from_millis(100))
            .drain(config),
    )
    .unwrap();
    first_rounds(&health).await;
    let drain = health.drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let (gate, gate_rx) = watch::channel(false);
    let service = ServiceBuilder::new()
        .layer(PingLayer::new())
        .layer(HealthLayer::new(&health))
        .layer(drain_layer)
        .service(app(gate_rx));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = drain.shutdown_signal();
    let done = tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        let mut shutdown = pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let service = TowerToHyperService::new(service.clone());
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    let connection = graceful.watch(connection);
                    tokio::spawn(connection);
                }
                () = &mut shutdown => break,
            }
        }
        drop(listener);
        graceful.shutdown().await;
    });
    Server {
        addr,
        drain,
        done,
        gate,
    }
}

fn quick() -> DrainConfig {
    DrainConfig::new()
        .delay(Duration::from_millis(500))
        .timeout(Duration::from_secs(10))
}

#[tokio::test]
async fn in_flight_work_finishes_and_probes_flip_as_they_should() {
    let server = server(quick()).await;
    let client = Client::new();
    assert_eq!(
        client.get(server.addr, "/health/ready").await.status,
        StatusCode::OK
    );

    let slow: Vec<_> = (0..5)
        .map(|_| {
            let client = Client::new();
            tokio::spawn(async move { client.get(server.addr, "/slow").await })
        })
        .collect();
    let stream = {
        let client = Client::new();
        tokio::spawn(async move { client.get(server.addr, "/stream").await })
    };
    assert!(eventually(LIMIT, || async { server.drain.in_flight() == 6 }).await);

    assert!(server.drain.start());
    assert!(!server.drain.start(), "the first start counts");
    assert!(server.drain.is_draining() && !server.drain.is_drained());

    for path in ["/health/ready", "/health", "/health/pool"] {
        let reply = client.get(server.addr, path).await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert_eq!(reply.json()["status"], "draining", "{path}");
        assert_eq!(reply.header("retry-after"), Some("5"), "{path}");
    }
    for path in ["/health/live", "/health/ping"] {
        assert_eq!(
            client.get(server.addr, path).await.status,
            StatusCode::OK,
            "{path}"
        );
    }
    // Under the default policy ordinary requests are still served, with a hint to reconnect.
    let ordinary = Client::new().get(server.addr, "/").await;
    assert_eq!(ordinary.status, StatusCode::OK);
    assert_eq!(ordinary.header("connection"), Some("close"));

    // Only now does the work in flight finish (the ordinary request's body may still be
    // on its way out).
    let six = eventually(LIMIT, || async { server.drain.in_flight() == 6 }).await;
    assert!(six, "{} in flight", server.drain.in_flight());
    server.open_gate();
    for request in slow {
        let reply = request.await.unwrap();
        assert_eq!(
            (reply.status, reply.text()),
            (StatusCode::OK, "done /slow".to_owned())
        );
    }
    let streamed = stream.await.unwrap();
    assert_eq!(
        (streamed.status, streamed.text()),
        (StatusCode::OK, "one two three".to_owned())
    );

    let drained = bounded("the drain", server.drain.drained()).await;
    assert!(drained.is_clean(), "{drained:?}");
    assert!(
        drained.elapsed >= Duration::from_millis(500),
        "the delay is waited out: {drained:?}"
    );
    assert!(server.drain.is_drained());
    bounded("the graceful shutdown", server.done).await.unwrap();
}

#[tokio::test]
async fn the_reject_policy_answers_503_to_new_work_but_not_to_probes() {
    let server = server(quick().policy(DrainPolicy::Reject)).await;
    let client = Client::new();
    assert_eq!(client.get(server.addr, "/").await.status, StatusCode::OK);
    server.drain.start();

    let rejected = client.get(server.addr, "/").await;
    assert_eq!(rejected.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(rejected.header("retry-after"), Some("5"));
    assert_eq!(rejected.header("content-type"), Some("application/json"));
    assert_eq!(rejected.json()["status"], "draining");
    assert_eq!(
        client.get(server.addr, "/health/live").await.status,
        StatusCode::OK
    );
    assert_eq!(
        client.get(server.addr, "/health/ping").await.status,
        StatusCode::OK
    );
    assert_eq!(
        client.get(server.addr, "/health/ready").await.json()["status"],
        "draining"
    );
    assert_eq!(
        server.drain.in_flight(),
        0,
        "rejected requests are not in flight"
    );
}

#[tokio::test]
async fn drained_waits_for_the_last_body() {
    let server = server(
        DrainConfig::new()
            .delay(Duration::ZERO)
            .timeout(Duration::from_secs(10)),
    )
    .await;
    let stream = tokio::spawn(async move { Client::new().get(server.addr, "/stream").await });
    assert!(eventually(LIMIT, || async { server.drain.in_flight() == 1 }).await);
    server.drain.start();
    let mut drained = pin!(server.drain.drained());
    // The response head and a first chunk have been sent, but the body cannot finish before
    // the gate opens: still in flight, so the drain cannot be over (this can only fail).
    assert!(
        tokio::time::timeout(Duration::from_millis(100), drained.as_mut())
            .await
            .is_err()
    );
    assert!(server.drain.is_draining() && !server.drain.is_drained());
    server.open_gate();
    let outcome = bounded("the drain", drained).await;
    assert!(outcome.is_clean(), "{outcome:?}");
    assert_eq!(
        bounded("the stream", stream).await.unwrap().text(),
        "one two three"
    );
}

#[tokio::test]
async fn drained_gives_up_at_the_timeout_and_reports_what_it_abandoned() {
    let config = DrainConfig::new()
        .delay(Duration::ZERO)
        .timeout(Duration::from_millis(400));
    let server = server(config).await;
    let _held = tokio::spawn(async move { Client::new().get(server.addr, "/hold").await });
    assert!(eventually(LIMIT, || async { server.drain.in_flight() == 1 }).await);
    server.drain.start();
    let outcome = bounded("the drain", server.drain.drained()).await;
    assert_eq!(outcome.abandoned, 1);
    assert!(outcome.elapsed >= Duration::from_millis(400));
    assert!(server.drain.is_drained());
}

#[tokio::test]
async fn a_probe_storm_during_the_drain_is_not_in_flight_work() {
    let server = server(
        DrainConfig::new()
            .delay(Duration::from_millis(200))
            .timeout(Duration::from_secs(30)),
    )
    .await;
    let storm: Vec<_> = (0..4)
        .map(|i| {
            tokio::spawn(async move {
                let client = Client::new();
                let path = ["/health/ready", "/health/live", "/health/ping", "/health"][i];
                // Until aborted, or until the server has shut down.
                while client.try_get(server.addr, path).await.is_ok() {}
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.drain.start();
    // Sampled while the storm goes on: probes never enter the drain's count.
    for _ in 0..20 {
        assert_eq!(server.drain.in_flight(), 0);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Probes counted in flight would hold the drain to its 30 s timeout; it resolves once
    // its delay has passed with nothing in flight.
    let outcome = bounded("the drain", server.drain.drained()).await;
    assert!(outcome.is_clean(), "{outcome:?}");
    assert!(
        outcome.elapsed < Duration::from_secs(30),
        "resolved before the timeout: {outcome:?}"
    );
    for probe in storm {
        probe.abort();
    }
}

#[tokio::test]
async fn connection_close_can_be_switched_off() {
    let server = server(quick().connection_close(false)).await;
    server.drain.start();
    let reply = Client::new().get(server.addr, "/").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("connection"), None);
}
