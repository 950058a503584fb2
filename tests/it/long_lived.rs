//! Long-lived connections across a drain, with real clients over real connections: the axum
//! example's WebSockets get a close frame 1001 and its event streams a clean end, the tonic
//! example's server stream `UNAVAILABLE`, on a real SIGTERM; a connection that ignores its
//! turn is reported abandoned at the timeout; the turns of 300 connections are spread over the
//! close window; and a rolling restart behind a real HAProxy with hundreds of WebSocket clients
//! that reconnect loses nothing.

use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as AxumMessage, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use http::{Request, StatusCode};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::Message;
use tower_health::drain::{Drained, LongLived};
use tower_health::{DrainConfig, DrainHandle, HealthConfig, HealthMonitor};

use support::child::ready_example;
use support::websocket::{End, echoing_socket, until_end};
use support::{LIMIT, bounded, eventually};

/// An event stream read over HTTP/1.1: the `tick` events it got, and whether its body ended
/// cleanly (the chunked body's last chunk) or by an error.
async fn read_events(
    addr: SocketAddr,
    first: tokio::sync::oneshot::Sender<()>,
) -> (usize, Result<(), String>) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::get(format!("http://{addr}/events"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = bounded("/events", sender.send_request(request))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut ticks = 0;
    let mut first = Some(first);
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    ticks += String::from_utf8_lossy(data).matches("event: tick").count();
                    if ticks > 0
                        && let Some(first) = first.take()
                    {
                        let _ = first.send(());
                    }
                }
            }
            None => return (ticks, Ok(())),
            Some(Err(error)) => return (ticks, Err(format!("{error:?}"))),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_axum_example_closes_its_websockets_and_event_streams_cleanly_on_sigterm() {
    let (child, addr) = ready_example("server", &[]).await;

    let url = format!("ws://{addr}/ws");
    let mut sockets = Vec::new();
    for _ in 0..20 {
        sockets.push(echoing_socket(&url).await);
    }
    let mut readers = Vec::new();
    for _ in 0..5 {
        let (first, got_first) = tokio::sync::oneshot::channel();
        readers.push(tokio::spawn(read_events(addr, first)));
        bounded("the first event", got_first).await.unwrap();
    }

    child.sigterm();
    let mut ends = Vec::new();
    for mut socket in sockets {
        ends.push(bounded("the WebSocket's end", until_end(&mut socket)).await);
    }
    let mut events = Vec::new();
    for reader in readers {
        events.push(bounded("the event stream's end", reader).await.unwrap());
    }
    let (status, stderr) = child.exit_within(LIMIT).await;

    assert!(
        ends.iter().all(|end| *end == End::Closed(Some(1001))),
        "every WebSocket ends with a close frame 1001: {ends:?}"
    );
    assert!(
        events.iter().all(|(ticks, end)| *ticks > 0 && end.is_ok()),
        "every event stream ends cleanly: {events:?}"
    );
    assert!(status.success(), "{status}\n{stderr}");
    assert!(
        stderr.contains("server closed") && stderr.contains("abandoned=0"),
        "{stderr}"
    );
}

#[cfg(feature = "grpc")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tonic_examples_stream_ends_with_unavailable_on_sigterm() {
    use crate::greeter::{GreeterClient, HelloRequest};

    let (child, addr) = ready_example("tonic", &[]).await;

    let mut streams = Vec::new();
    for _ in 0..5 {
        let (channel, _goaways) = support::grpc::channel(addr).await;
        let mut client = GreeterClient::new(channel);
        let request = HelloRequest {
            name: "stream".into(),
            delay_ms: 100,
        };
        let mut stream = bounded("KeepGreeting", client.keep_greeting(request))
            .await
            .unwrap()
            .into_inner();
        let first = bounded("the first greeting", stream.message()).await;
        assert_eq!(first.unwrap().unwrap().message, "hello, stream");
        streams.push(stream);
    }
    child.sigterm();
    let mut ends = Vec::new();
    for mut stream in streams {
        let end = bounded("the stream's end", async {
            loop {
                match stream.message().await {
                    Ok(Some(_)) => {}
                    other => return other.map(|_| ()),
                }
            }
        })
        .await;
        ends.push(end);
    }
    let (status, stderr) = child.exit_within(LIMIT).await;
    assert!(
        ends.iter().all(|end| matches!(end, Err(status)
            if status.code() == tonic::Code::Unavailable
                && status.message().contains("shutting down"))),
        "every stream ends with UNAVAILABLE: {ends:?}"
    );
    assert!(status.success(), "{status}\n{stderr}");
    assert!(stderr.contains("abandoned=0"), "{stderr}");
}

/// An instance of an application with long-lived WebSockets: `/ws` says its name, echoes,
/// and closes at its turn with a close frame 1001; `/ignore` registers and never closes; `/`
/// answers its name. Served by `axum::serve` under the drain's whole sequence
/// (`DrainHandle::serve`), on a runtime of its own, as a process of its own would be.
struct Instance {
    addr: SocketAddr,
    #[cfg_attr(not(feature = "haproxy-agent"), allow(dead_code))]
    monitor: tower_health::HealthHandle,
    drain: DrainHandle,
    /// How the drain ended, once `DrainHandle::serve` has returned.
    drained: tokio::sync::oneshot::Receiver<Drained>,
    /// The warnings the instance's runtime logged (its server's, its connections', and a
    /// second waiter's for the drain's end, as an admin server's or an agent's is).
    logs: support::logs::Captured,
    /// The instance's runtime (its connections' tasks included) lives until this drops.
    _runtime: tokio::sync::oneshot::Sender<()>,
}

#[derive(Clone)]
struct AppState {
    name: &'static str,
    drain: DrainHandle,
}

async fn instance(name: &'static str, drain_config: DrainConfig) -> Instance {
    let monitor = HealthMonitor::spawn(
        HealthConfig::new()
            .readiness_interval(Duration::from_millis(100))
            .drain(drain_config),
    )
    .unwrap();
    let drain = monitor.drain().clone();
    let state = AppState {
        name,
        drain: drain.clone(),
    };
    let app = Router::new()
        .route("/", get(move || async move { name }))
        .route("/ws", get(echo_route))
        .route("/ignore", get(ignoring_route))
        .with_state(state);
    let app = tower_health::HealthLayer::new(&monitor).around(app);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let (drained, drained_receiver) = tokio::sync::oneshot::channel();
    let (runtime, runtime_receiver) = tokio::sync::oneshot::channel::<()>();
    let serving = drain.clone();
    let (logs, ready) = (
        support::logs::Captured::default(),
        std::sync::mpsc::channel(),
    );
    let writer = logs.clone();
    std::thread::spawn(move || {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(writer)
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        let _logs = tracing::subscriber::set_default(subscriber);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            // Another reader waiting for the drain's end, as the admin server does.
            let waiting = serving.clone();
            tokio::spawn(async move { waiting.drained().await });
            let _ = ready.0.send(());
            let listener = TcpListener::from_std(listener).unwrap();
            let result = serving
                .serve(|shutdown| axum::serve(listener, app).with_graceful_shutdown(shutdown))
                .await
                .unwrap();
            let _ = drained.send(result);
            let _ = runtime_receiver.await;
        });
    });
    ready.1.recv().unwrap();
    Instance {
        addr,
        monitor,
        drain,
        drained: drained_receiver,
        logs,
        _runtime: runtime,
    }
}

async fn echo_route(State(state): State<AppState>, upgrade: WebSocketUpgrade) -> Response {
    let connection = state.drain.long_lived("echo-websocket");
    upgrade.on_upgrade(move |socket| echo(socket, connection, state.name))
}

/// Says which server it is, echoes, and closes with 1001 at its turn (reading the client's
/// reply, so that nothing is left unread when the socket closes).
async fn echo(mut socket: WebSocket, connection: LongLived, name: &'static str) {
    if socket
        .send(AxumMessage::Text(format!("server {name}").into()))
        .await
        .is_err()
    {
        return;
    }
    let mut closing = connection.closing();
    loop {
        tokio::select! {
            () = &mut closing => break,
            message = socket.recv() => match message {
                Some(Ok(message @ AxumMessage::Text(_))) => {
                    if socket.send(message).await.is_err() {
                        return;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
        }
    }
    let goodbye = CloseFrame {
        code: axum::extract::ws::close_code::AWAY,
        reason: "server shutting down".into(),
    };
    if socket.send(AxumMessage::Close(Some(goodbye))).await.is_ok() {
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Some(Ok(_)) = socket.recv().await {}
        })
        .await;
    }
}

async fn ignoring_route(State(state): State<AppState>, upgrade: WebSocketUpgrade) -> Response {
    let connection = state.drain.long_lived("ignoring-websocket");
    upgrade.on_upgrade(move |mut socket| async move {
        // Never watches `closing`: holds the drain open until the timeout.
        while let Some(Ok(_)) = socket.recv().await {}
        drop(connection);
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_ignores_its_turn_is_abandoned_at_the_timeout() {
    let instance = instance(
        "app",
        DrainConfig::new()
            .delay(Duration::from_millis(100))
            .close_window(Duration::from_millis(200))
            .timeout(Duration::from_secs(1)),
    )
    .await;
    let mut polite = echoing_socket(&format!("ws://{}/ws", instance.addr)).await;
    let (mut ignoring, _) = connect_async(format!("ws://{}/ignore", instance.addr))
        .await
        .unwrap();
    assert!(
        eventually(LIMIT, || async { instance.drain.in_flight() == 2 }).await,
        "both count: {}",
        instance.drain.in_flight()
    );
    let started = Instant::now();
    instance.drain.start();
    assert_eq!(until_end(&mut polite).await, End::Closed(Some(1001)));
    let drained = bounded("the drain", instance.drained).await.unwrap();
    assert_eq!(drained.abandoned, 1, "{drained:?}");
    assert_eq!(drained.abandoned_long_lived, 1, "{drained:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the drain waited for it until the timeout"
    );
    // The drain reports it and leaves it to the process's end: it still counts.
    assert_eq!(instance.drain.in_flight(), 1);
    ignoring.send(Message::text("still here")).await.unwrap();
    // One warning, however many wait for the drain, naming what it abandoned; the line the
    // incident guide shows.
    let warnings = instance.logs.matching("drain timed out");
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains(r#"abandoned_long_lived=1 long_lived="ignoring-websocket: 1""#),
        "{warnings:#?}"
    );
    let guide = include_str!("../../src/docs/incident.md");
    let shown = support::logs::Line::block(guide, "# The log lines", 1);
    let logged = warnings[0].split_once(' ').unwrap().1;
    assert_eq!(shown, [support::logs::Line::parse(logged).unwrap()]);
}

/// Percentiles and a histogram of `offsets` (milliseconds) for the report.
fn describe(offsets: &mut [u128], bucket: u128) -> String {
    offsets.sort_unstable();
    let at = |p: usize| offsets[(offsets.len() - 1) * p / 100];
    let mut histogram: BTreeMap<u128, usize> = BTreeMap::new();
    for offset in offsets.iter() {
        *histogram.entry(offset / bucket * bucket).or_default() += 1;
    }
    let mut text = format!(
        "n={} min={} p10={} p25={} p50={} p75={} p90={} max={} (ms)\n",
        offsets.len(),
        offsets[0],
        at(10),
        at(25),
        at(50),
        at(75),
        at(90),
        offsets[offsets.len() - 1]
    );
    for (start, count) in histogram {
        text += &format!(
            "  {start:>5}-{:<5} {count:>4} {}\n",
            start + bucket,
            "#".repeat(count)
        );
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_closes_of_300_connections_are_spread_over_the_window() {
    const CONNECTIONS: usize = 300;
    let delay = Duration::from_millis(200);
    let window = Duration::from_millis(500);
    let instance = instance(
        "app",
        DrainConfig::new()
            .delay(delay)
            .close_window(window)
            .timeout(Duration::from_secs(10)),
    )
    .await;
    let url = format!("ws://{}/ws", instance.addr);
    let mut sockets = Vec::new();
    for _ in 0..CONNECTIONS {
        let (mut socket, _) = connect_async(url.as_str()).await.unwrap();
        let hello = socket.next().await;
        assert!(matches!(hello, Some(Ok(Message::Text(_)))), "{hello:?}");
        sockets.push(socket);
    }
    let started = Instant::now();
    let window_start = started + delay;
    instance.drain.start();
    let mut clients = JoinSet::new();
    for mut socket in sockets {
        clients.spawn(async move {
            let end = until_end(&mut socket).await;
            (Instant::now(), end)
        });
    }
    let mut offsets = Vec::new();
    while let Some(result) = clients.join_next().await {
        let (closed_at, end) = result.unwrap();
        assert_eq!(end, End::Closed(Some(1001)));
        // Never before the window: a turn's timer does not fire early.
        assert!(closed_at >= window_start, "closed before the window");
        offsets.push((closed_at - window_start).as_millis());
    }
    let drained = bounded("the drain", instance.drained).await.unwrap();
    assert!(drained.is_clean(), "{drained:?}");
    let batch = window.as_millis() / 10;
    let batches: std::collections::BTreeSet<u128> =
        offsets.iter().map(|offset| offset / batch).collect();
    let report = describe(&mut offsets, batch);
    println!(
        "close times of {CONNECTIONS} WebSockets from the window's start (delay {delay:?}, window {window:?}, batches of {batch} ms):\n{report}"
    );
    assert!(
        batches.len() > 1,
        "the closes are spread over more than one batch:\n{report}"
    );
}

#[cfg(feature = "haproxy-agent")]
mod rolling {
    //! A rolling restart behind a real HAProxy: two instances, WebSocket clients that echo
    //! numbered messages and reconnect when closed, HTTP load; one instance drains.

    use super::*;

    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use support::get_through;
    use support::haproxy::{Haproxy, ServerStat, free_port, two_servers};
    use support::websocket::{Tally, client};
    use tower_health::haproxy::{AgentConfig, AgentServer};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rolling_restart_behind_haproxy_closes_websockets_cleanly_and_loses_nothing() {
        const CLIENTS: usize = 200;
        let binary = require_haproxy!();
        let drain = || {
            DrainConfig::new()
                .delay(Duration::from_secs(1))
                .close_window(Duration::from_secs(2))
                .timeout(Duration::from_secs(6))
        };
        let app1 = instance("app1", drain()).await;
        let app2 = instance("app2", drain()).await;
        let mut agents = Vec::new();
        for app in [&app1, &app2] {
            // At full weight from the start (no slow start): the clients spread evenly over
            // the two, as over a fleet that has been serving for a while.
            let agent = AgentServer::new(
                AgentConfig::new().port(0).slow_start(Duration::ZERO),
                &app.monitor,
            )
            .start()
            .await
            .unwrap();
            agents.push(agent);
        }
        let frontend: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let haproxy = Haproxy::start(
            &binary,
            &two_servers(
                frontend.port(),
                [
                    (app1.addr, agents[0].local_addr()),
                    (app2.addr, agents[1].local_addr()),
                ],
            ),
        );
        let up = |stat: &ServerStat| stat.status == "UP" && stat.weight == 100;
        for server in ["app1", "app2"] {
            let ready = eventually(LIMIT, || async {
                haproxy.servers("app").await.get(server).is_some_and(up)
            })
            .await;
            assert!(
                ready,
                "{server} is not UP: {:?}\n{}",
                haproxy.servers("app").await,
                haproxy.log()
            );
        }

        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Mutex::new(Tally::default()));
        let mut clients = JoinSet::new();
        for id in 0..CLIENTS {
            clients.spawn(client(id, frontend, stop.clone(), tally.clone()));
        }
        // HTTP load: four loops of GETs, each on a new connection.
        let http: Arc<Mutex<(usize, Vec<String>)>> = Arc::default();
        let mut loaders = JoinSet::new();
        for _ in 0..4 {
            let (stop, http) = (stop.clone(), http.clone());
            loaders.spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let answer = get_through(frontend, "/").await;
                    {
                        let mut http = http.lock().unwrap();
                        match answer {
                            Ok(_) => http.0 += 1,
                            Err(error) => http.1.push(error),
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        }
        assert!(
            eventually(LIMIT, || async {
                app1.drain.in_flight() + app2.drain.in_flight() >= CLIENTS
                    && tally.lock().unwrap().echoed > 2 * CLIENTS as u64
            })
            .await,
            "the clients are connected and echoing"
        );
        let on_app1_at_start = app1.drain.in_flight();

        // The rolling restart: app1 drains (as on SIGTERM), app2 takes its clients.
        let drain_started = Instant::now();
        assert!(app1.drain.start());
        let drained = bounded("app1's drain", app1.drained).await.unwrap();
        let drain_took = drain_started.elapsed();
        // The clients go on for a moment on app2, then stop.
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.store(true, Ordering::SeqCst);
        while let Some(result) = clients.join_next().await {
            result.unwrap();
        }
        while let Some(result) = loaders.join_next().await {
            result.unwrap();
        }

        let tally = tally.lock().unwrap();
        let http = http.lock().unwrap();
        let mut buckets: BTreeMap<u128, usize> = BTreeMap::new();
        for (at, server) in &tally.reconnects {
            assert_eq!(
                server, "server app2",
                "a client reconnected to the draining app1"
            );
            *buckets
                .entry(at.saturating_duration_since(drain_started).as_millis() / 100 * 100)
                .or_default() += 1;
        }
        let peak = buckets.values().copied().max().unwrap_or(0);
        println!(
            "rolling restart: {CLIENTS} WebSocket clients ({on_app1_at_start} in flight on app1 at the drain's start), drain {drained:?} in {drain_took:?}\n\
             clean closes (1001) {}, abnormal {}, echoed {}, resent after a close {}, lost {}, out of order {}\n\
             reconnects to app2 {}, peak {peak} per 100 ms; per 100 ms from the drain's start: {buckets:?}\n\
             HTTP requests ok {}, failed {}",
            tally.clean_closes,
            tally.abnormal.len(),
            tally.echoed,
            tally.resent,
            tally.lost,
            tally.out_of_order,
            tally.reconnects.len(),
            http.0,
            http.1.len(),
        );
        assert!(drained.is_clean(), "{drained:?}");
        assert!(
            tally.abnormal.is_empty(),
            "abnormal closures: {:?}",
            tally.abnormal
        );
        assert_eq!(tally.lost, 0);
        assert_eq!(tally.out_of_order, 0);
        assert!(tally.clean_closes > 0, "app1 had clients to close");
        assert_eq!(
            tally.reconnects.len(),
            tally.clean_closes,
            "every closed client came back"
        );
        assert!(http.1.is_empty(), "failed HTTP requests: {:?}", http.1);
        assert!(http.0 > 0);
    }
}
