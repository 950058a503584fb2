//! An axum app with the tower-health stack around it (`health.around(router)`): probes on
//! `/health/*` answered before routing, ordinary routes with tower-http's tracing and request
//! timeout, and a drain on SIGTERM or Ctrl-C. It speaks HTTP/1.1 and HTTP/2 (h2c, prior
//! knowledge) on one port, as `axum::serve` does; a drain sends HTTP/2 clients a `GOAWAY` when
//! the graceful shutdown begins.
//!
//! - `GET /`: a short answer that names the instance (its listening address), to see which
//!   instance a load balancer sent a request to.
//! - `GET /slow/{ms}`: a response that streams for `ms` milliseconds (at most 10 s), a line
//!   at once and a line at the end. A drain waits for it: a request counts in flight until its
//!   body has been sent, and the server's graceful shutdown lets it finish.
//! - `GET /ws`: a WebSocket that says which instance it reached (`server <address>`), then
//!   echoes what it is sent. Registered with the drain: on SIGTERM it gets a close frame 1001
//!   (Going Away) at its turn in the drain's close window.
//! - `GET /events`: an event stream (server-sent events), a numbered `tick` every second.
//!   Registered with the drain: its body ends cleanly at its turn in the close window.
//!
//! The drain's close window spreads those turns over `TOWER_HEALTH_DRAIN_CLOSE_WINDOW`
//! after the drain delay, so that the clients reconnect to the other instances a few at a
//! time.
//!
//! Run with
//!
//! ```not_rust
//! cargo run --example server --features axum
//! ```
//!
//! then `curl -i http://127.0.0.1:8080/health/ready`.
//!
//! - `LISTEN_ADDR`: where to listen (default `127.0.0.1:8080`).
//! - `DATABASE_URL`: the default database (default
//!   `postgres://postgres@127.0.0.1:5432/postgres`); set but empty, no database at all.
//! - `DATABASE_URL_<NAME>`: further databases, named `<name>` lower-cased.
//! - everything else through `HealthConfig::from_env` (`TOWER_HEALTH_*`, the drain's
//!   `TOWER_HEALTH_DRAIN_*` included, or Baldur's `BALDUR_*` names).
//! - `RUST_LOG`: log filter (default `info`).
//! - `TOWER_HEALTH_ADMIN_PORT` (built with the `admin` feature): set, the admin server too, on
//!   that port (`AdminConfig::from_env`, its keys included), for an operator's `POST /hold`
//!   and `POST /release` with the operator key (`TOWER_HEALTH_ADMIN_KEY`).
//!
//! `cargo run --example server --features axum -- --health-check` probes a running instance's readiness
//! (`HEALTH_CHECK_URL`, default `/health/ready` on `LISTEN_ADDR`) and exits 0 or 1: a
//! container health check without curl.

mod common;

use std::convert::Infallible;
use std::error::Error;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::response::sse::{Event, Sse};
use axum::routing::get;
use axum::serve::ListenerExt;
use bytes::Bytes;
use http::StatusCode;
use tokio::net::TcpListener;
use tokio_stream::wrappers::IntervalStream;
use tokio_stream::{Stream, StreamExt as _};
use tower_health::drain::LongLived;
use tower_health::{DrainHandle, HealthLayer, HealthMonitor};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// The longest `/slow/{ms}` a request may ask for.
const MAX_SLOW: Duration = Duration::from_secs(10);

/// How long a WebSocket client gets to answer the server's close frame before the server
/// closes the connection anyway.
const CLOSE_REPLY: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    // `server --health-check`: a container health check of a running instance, for images
    // without curl (see the guide's containers page).
    if let Some(code) = common::health_check_flag(|addr| format!("http://{addr}/health/ready")) {
        return code;
    }
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(common::run(serve()))
}

async fn serve() -> Result<(), Box<dyn Error>> {
    common::init_tracing();
    // The one monitor: every reader takes its handle.
    let monitor = HealthMonitor::spawn(common::health_config()?)?;
    // Readiness answers 503 `draining` once the drain starts.
    let drain = monitor.drain().clone();
    let health = HealthLayer::new(&monitor);
    #[cfg(feature = "admin")]
    let _admin = admin_server(&monitor).await?;

    let listener = TcpListener::bind(common::listen_addr()).await?;
    let addr = listener.local_addr()?;
    tracing::info!("listening on http://{addr}");
    // The app's own tracing and timeout go on the router, as usual.
    let hello = format!("hello from {addr}\n");
    let app = Router::new()
        .route("/", get(move || async move { hello }))
        .route("/slow/{ms}", get(slow))
        .route("/ws", get(websocket))
        .route("/events", get(events))
        .with_state(Instance {
            drain: drain.clone(),
            addr,
        })
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(10),
        ))
        .layer(TraceLayer::new_for_http());
    // The stack goes around the router, outside routing: probes and ping are answered before
    // it (no log line per kubelet probe, no timeout, never in-flight work), and every other
    // request is counted in the drain until its response has been sent.
    let app = health.around(app);

    let listener = listener.tap_io(|tcp| {
        // axum 0.8's `serve` leaves Nagle on; probe answers are small writes that should go
        // out now.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY");
        }
    });
    drain
        .serve(|shutdown| axum::serve(listener, app).with_graceful_shutdown(shutdown))
        .await?;
    Ok(())
}

/// What the routes share: the drain, and the address this instance listens on.
#[derive(Clone)]
struct Instance {
    drain: DrainHandle,
    addr: SocketAddr,
}

/// The admin server, when `TOWER_HEALTH_ADMIN_PORT` asks for one; kept for the life of the
/// process, it closes when the drain is over.
#[cfg(feature = "admin")]
async fn admin_server(
    monitor: &tower_health::HealthHandle,
) -> Result<Option<tower_health::side_port::SidePortHandle>, Box<dyn Error>> {
    use tower_health::admin::{AdminConfig, AdminServer};

    if std::env::var_os("TOWER_HEALTH_ADMIN_PORT").is_none() {
        return Ok(None);
    }
    let admin = AdminServer::new(AdminConfig::from_env()?, monitor)
        .start()
        .await?;
    tracing::info!("admin server on http://{}", admin.local_addr());
    Ok(Some(admin))
}

/// `GET /slow/{ms}`: streams for `ms` milliseconds. Its body outlives the handler (and the
/// request timeout, which ends with the response head), as a download's does.
async fn slow(Path(ms): Path<u64>) -> Result<Body, (StatusCode, String)> {
    let delay = Duration::from_millis(ms);
    if delay > MAX_SLOW {
        let message = format!("at most {} ms\n", MAX_SLOW.as_millis());
        return Err((StatusCode::BAD_REQUEST, message));
    }
    let (mut sender, body) = http_body_util::channel::Channel::<Bytes, Infallible>::new(1);
    tokio::spawn(async move {
        // A client that went away ends the body early: nothing more to send.
        if sender
            .send_data(Bytes::from_static(b"slow: started\n"))
            .await
            .is_ok()
        {
            tokio::time::sleep(delay).await;
            let _ = sender.send_data(Bytes::from_static(b"slow: done\n")).await;
        }
    });
    Ok(Body::new(body))
}

/// `GET /ws`: a WebSocket echo, registered with the drain before the `101` (so that it counts
/// from its start); the guard moves into the task serving the socket.
async fn websocket(State(instance): State<Instance>, upgrade: WebSocketUpgrade) -> Response {
    let connection = instance.drain.long_lived("/ws");
    upgrade.on_upgrade(move |socket| echo(socket, connection, instance.addr))
}

/// Says which instance this is, then echoes until the client goes, or until the drain's turn
/// for this connection comes: then a close frame 1001 (Going Away), and the client's reply
/// awaited (bounded), so that the connection closes cleanly with nothing unread.
async fn echo(mut socket: WebSocket, connection: LongLived, addr: SocketAddr) {
    let hello = Message::Text(format!("server {addr}").into());
    if socket.send(hello).await.is_err() {
        return;
    }
    let mut closing = connection.closing();
    loop {
        tokio::select! {
            () = &mut closing => break,
            message = socket.recv() => match message {
                Some(Ok(message @ (Message::Text(_) | Message::Binary(_)))) => {
                    if socket.send(message).await.is_err() {
                        return;
                    }
                }
                // Pings are answered by the WebSocket layer; a close frame is followed by
                // the end of the stream.
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
        }
    }
    let goodbye = CloseFrame {
        code: close_code::AWAY,
        reason: "server shutting down".into(),
    };
    if socket.send(Message::Close(Some(goodbye))).await.is_ok() {
        let _ = tokio::time::timeout(CLOSE_REPLY, async {
            while let Some(Ok(_)) = socket.recv().await {}
        })
        .await;
    }
    // `connection` drops here, after the socket: the drain stops counting it.
}

/// `GET /events`: a numbered `tick` every second, registered with the drain: the body ends
/// cleanly at the connection's turn to close (an `EventSource` then reconnects, through the
/// load balancer, to another instance).
async fn events(
    State(instance): State<Instance>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut tick = 0_u64;
    let ticks = IntervalStream::new(tokio::time::interval(Duration::from_secs(1))).map(move |_| {
        tick += 1;
        Ok(Event::default().event("tick").data(tick.to_string()))
    });
    Sse::new(instance.drain.long_lived("/events").until_closing(ticks))
}
