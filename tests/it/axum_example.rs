//! `examples/server.rs` (the axum example) as an operator runs it, under load over HTTP/2:
//! h2c clients make application requests while HTTP/1.1 probe clients poll readiness, and a
//! real SIGTERM drains it. The HTTP/1.1 rolling update is in `tests/it/example.rs`.

use crate::support;

use std::error::Error as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2::SendRequest;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use support::frames::{Frames, connect};
use support::prober::{Answers, http_prober, in_order, start_for_drain};
use support::{LIMIT, bounded, eventually, refused_addr};

/// What the HTTP/2 application clients saw.
#[derive(Debug, Default)]
struct Seen {
    ok: usize,
    ok_during_drain: usize,
    /// Requests a `GOAWAY` turned away before the application saw them (a stream above its
    /// last stream id, or sent after it): the client retries them on a new connection.
    refused: usize,
    /// Requests on a connection the server never spoke on (accepted by the kernel as the
    /// listener closed): never the application's either.
    unserved: usize,
    /// Requests the server accepted and then failed or lost: must stay empty.
    failures: Vec<String>,
    /// Every connection the clients opened, with the frames the server sent on it.
    connections: Vec<Frames>,
}

/// Whether `error` says the request never reached the server's application: a `GOAWAY`
/// (`NO_ERROR`) refused its stream (above the last stream id, or opened after it: RFC 9113,
/// 6.8, safe to retry), or hyper never sent it (the connection had gone).
fn refused_by_goaway(error: &hyper::Error) -> bool {
    if error.is_canceled() {
        return true;
    }
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(h2) = cause.downcast_ref::<h2::Error>() {
            return h2.is_go_away() && h2.is_remote() && h2.reason() == Some(h2::Reason::NO_ERROR);
        }
        source = cause.source();
    }
    false
}

/// `GET path` on `sender`, its body read to the end.
async fn get(
    sender: &mut SendRequest<Empty<Bytes>>,
    addr: SocketAddr,
    path: &str,
) -> Result<(StatusCode, Bytes), hyper::Error> {
    let request = Request::get(format!("http://{addr}{path}"))
        .body(Empty::new())
        .unwrap();
    let response = bounded(path, sender.send_request(request)).await?;
    let status = response.status();
    let body = bounded(path, response.into_body().collect()).await?;
    Ok((status, body.to_bytes()))
}

/// An application client: `GET /` over HTTP/2, one request after the other, on a connection
/// it keeps until the server's `GOAWAY` turns a request away, then on a new one, until the
/// listener refuses it.
fn h2_client(
    addr: SocketAddr,
    draining: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let Ok((mut sender, frames, _driver)) = connect(addr).await else {
                // Refused: the listener has closed.
                return;
            };
            seen.lock().await.connections.push(frames.clone());
            loop {
                if sender.ready().await.is_err() {
                    // The connection is done (after a `GOAWAY`): a new one.
                    break;
                }
                let during_drain = draining.load(Ordering::SeqCst);
                let result = get(&mut sender, addr, "/").await;
                let mut seen = seen.lock().await;
                match result {
                    Ok((StatusCode::OK, _)) => {
                        seen.ok += 1;
                        seen.ok_during_drain += usize::from(during_drain);
                    }
                    Ok((status, body)) => seen.failures.push(format!("{status}: {body:?}")),
                    Err(error) if refused_by_goaway(&error) => {
                        seen.refused += 1;
                        break;
                    }
                    Err(_) if !frames.served() => {
                        seen.unserved += 1;
                        break;
                    }
                    Err(error) => {
                        seen.failures.push(format!("{error:?}"));
                        break;
                    }
                }
            }
        }
    })
}

#[tokio::test]
async fn the_axum_example_drains_http2_clients_on_sigterm_without_losing_a_request() {
    let addr = refused_addr().await;
    let child = start_for_drain("server", addr).await;

    // Two probers, each with its answers in its own order.
    let answers = [Answers::default(), Answers::default()];
    let probers = answers.clone().map(|answers| http_prober(addr, answers));

    // Idle HTTP/2 connections: one request each, then nothing. Each must get its `GOAWAY`
    // and be closed by the server.
    let mut idle = Vec::new();
    for _ in 0..2 {
        let (mut sender, frames, driver) = connect(addr).await.expect("an HTTP/2 connection");
        let (status, _) = get(&mut sender, addr, "/")
            .await
            .expect("GET / over HTTP/2");
        assert_eq!(status, StatusCode::OK);
        idle.push((sender, frames, driver));
    }

    let draining = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let clients: Vec<_> = (0..4)
        .map(|_| h2_client(addr, draining.clone(), seen.clone()))
        .collect();
    let sending = eventually(LIMIT, || async { seen.lock().await.ok >= 20 }).await;
    assert!(
        sending,
        "the HTTP/2 clients got no answers before the SIGTERM"
    );

    // A streaming response, in flight from before the SIGTERM until after the graceful
    // shutdown has begun (the drain delay is 3 s, the body takes 6): it must be sent whole,
    // on a connection that gets a `GOAWAY` meanwhile.
    let (mut slow_sender, slow_frames, _slow_driver) =
        connect(addr).await.expect("an HTTP/2 connection");
    let request = Request::get(format!("http://{addr}/slow/6000"))
        .body(Empty::new())
        .unwrap();
    // The response head is in: the body is being sent when the SIGTERM arrives.
    let response = bounded("/slow/6000", slow_sender.send_request(request))
        .await
        .expect("the slow response's head");
    assert_eq!(response.status(), StatusCode::OK);
    let slow = tokio::spawn(async move {
        let body = response.into_body().collect().await;
        (body.map(|body| body.to_bytes()), slow_sender)
    });
    child.sigterm();

    let depooled = eventually(LIMIT, || async {
        answers[0].lock().await.last() == Some(&Some(false))
    })
    .await;
    assert!(depooled, "readiness never answered 503");
    draining.store(true, Ordering::SeqCst);

    // The clients go on until the listener refuses them; then it is closed for good.
    for client in clients {
        bounded("an HTTP/2 client", client).await.unwrap();
    }
    let closed = eventually(LIMIT, || async { TcpStream::connect(addr).await.is_err() }).await;
    assert!(closed, "the listener never closed");
    let (body, _slow_sender) = bounded("the slow response", slow).await.unwrap();
    assert_eq!(body.expect("the slow body"), "slow: started\nslow: done\n");
    assert!(
        slow_frames.goaways() > 0,
        "no GOAWAY on the slow response's connection"
    );
    for prober in probers {
        bounded("a prober", prober).await.unwrap();
    }
    for (_sender, frames, driver) in idle {
        // The server closes an idle connection once its `GOAWAY` is out.
        bounded("an idle HTTP/2 connection's end", driver)
            .await
            .unwrap();
        assert!(
            frames.goaways() > 0,
            "an idle HTTP/2 connection got no GOAWAY"
        );
    }

    let (status, stderr) = child.exit_within(LIMIT).await;
    let seen = seen.lock().await;
    eprintln!(
        "axum over HTTP/2: {} ok ({} during the drain), {} refused by a GOAWAY, {} on unserved connections, {} connections",
        seen.ok,
        seen.ok_during_drain,
        seen.refused,
        seen.unserved,
        seen.connections.len()
    );
    assert!(
        seen.failures.is_empty(),
        "requests accepted and then lost: {:?}",
        seen.failures
    );
    assert!(
        seen.ok_during_drain > 0,
        "no request was served during the drain"
    );
    for answers in &answers {
        assert!(
            in_order(answers).await,
            "readiness went back, or the listener closed before it failed: {:?}",
            answers.lock().await
        );
        assert!(
            answers.lock().await.contains(&Some(false)),
            "readiness never failed before the listener closed"
        );
    }
    for frames in seen.connections.iter().filter(|frames| frames.served()) {
        assert!(
            frames.goaways() > 0,
            "an HTTP/2 connection the server served got no GOAWAY: {frames:?}"
        );
    }
    assert!(status.success(), "{status}\n{stderr}");
    assert!(stderr.contains("drain started"), "{stderr}");
    assert!(!stderr.contains("drain timeout"), "{stderr}");
    assert!(stderr.contains("abandoned=0"), "{stderr}");
}
