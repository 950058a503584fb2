//! HAProxy's agent check (`haproxy::AgentServer`): its line for each state over a real TCP
//! connection, beside what `/health/ready` answers, clients that send anything or nothing,
//! and a real HAProxy (started by the test) acting on it: the weight lowered while degraded,
//! `MAINT` while held, and a drain that moves new sessions to the other server while the
//! open ones finish, with no failed request; and the slow start, a weight that rises over its
//! window after a hold's release, and after an outage once the return's jitter has run out.

use crate::support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use support::haproxy::{Haproxy, ServerStat, free_port, two_servers};
use support::{
    Client, LIMIT, TestServer, app, bounded, eventually, fast, first_rounds, pg_url, postgres,
    serve,
};
use support::{gated_app, get_through};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tower::ServiceBuilder;
use tower_health::check::{CheckError, CheckErrorKind};
use tower_health::component::{self, Component, ComponentSpec};
use tower_health::config::Details;
use tower_health::haproxy::{AgentConfig, AgentServer};
use tower_health::side_port::SidePortHandle;
use tower_health::{
    DrainHandle, DrainLayer, HealthConfig, HealthHandle, HealthLayer, HealthMonitor,
};

const OK: u8 = 0;
const REFUSED: u8 = 1;

/// A non-critical component the test fails and restores: it makes health `degraded` and
/// leaves readiness alone.
fn switchable(behaviour: &Arc<AtomicU8>) -> impl Component {
    let behaviour = Arc::clone(behaviour);
    component::from_fn(move || {
        let now = behaviour.load(Ordering::SeqCst);
        async move {
            match now {
                OK => Ok(()),
                _ => Err(CheckError::new(
                    CheckErrorKind::Refused,
                    "connection refused by cache:6379",
                )),
            }
        }
    })
}

/// The test database under the short cadences, with a budget that a loaded machine (the
/// whole suite at once) does not miss: a round that missed it would honestly say `down`, and
/// HAProxy would act on it mid-test.
fn database() -> HealthConfig {
    fast()
        .readiness_timeout(Duration::from_secs(2))
        .database("default", postgres(&pg_url()))
}

/// The agent's settings on a free port, without the slow start: these tests assert each
/// state's weight the moment it holds (the slow start has its own test, below).
fn agent_config() -> AgentConfig {
    AgentConfig::new().port(0).slow_start(Duration::ZERO)
}

/// What the agent at `addr` says to a client that connects and reads.
async fn agent_line(addr: SocketAddr) -> String {
    bounded("reading the agent's line", async {
        let mut stream = TcpStream::connect(addr)
            .await
            .expect("connect to the agent");
        let mut line = String::new();
        stream
            .read_to_string(&mut line)
            .await
            .expect("read the agent's line");
        line
    })
    .await
}

/// Waits until the agent says `expected`; fails the test with what it says instead.
async fn assert_says(agent: &SidePortHandle, expected: &str) {
    let addr = agent.local_addr();
    let said = eventually(LIMIT, || async { agent_line(addr).await == expected }).await;
    assert!(
        said,
        "expected {expected:?}, the agent says {:?}",
        agent_line(addr).await
    );
}

/// The status `/health/ready` answers on `server` now.
async fn ready_status(client: &Client, server: &TestServer) -> StatusCode {
    client.get(server.addr, "/health/ready").await.status
}

/// A monitor of the test database and a switchable non-critical component, following a
/// drain, served by the README's hyper stack (health, then the drain's count, then `app`).
struct Instance {
    health: HealthHandle,
    drain: DrainHandle,
    cache: Arc<AtomicU8>,
    server: TestServer,
}

async fn instance<S>(settings: HealthConfig, app: S) -> Instance
where
    S: tower::Service<Request<Incoming>, Response = Response<Full<Bytes>>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let cache = Arc::new(AtomicU8::new(OK));
    let settings = settings.component(ComponentSpec::new("cache", switchable(&cache)));
    let health = HealthMonitor::spawn(settings).unwrap();
    let drain = health.drain().clone();
    let server = serve(
        ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .layer(DrainLayer::new(&drain))
            .service(app),
    )
    .await;
    Instance {
        health,
        drain,
        cache,
        server,
    }
}

#[tokio::test]
async fn the_agent_says_each_state_as_readiness_judges_it() {
    require_postgres!();
    let instance = instance(database(), app()).await;
    let agent = AgentServer::new(agent_config().degraded_weight(35), &instance.health)
        .start()
        .await
        .unwrap();
    first_rounds(&instance.health).await;
    let client = Client::new();

    // Ready and healthy: up, administratively ready, the full weight.
    assert_says(&agent, "up ready 100%\n").await;
    assert_eq!(
        ready_status(&client, &instance.server).await,
        StatusCode::OK
    );

    // A non-critical component fails: health is degraded, readiness passes, the weight is
    // the configured one.
    instance.cache.store(REFUSED, Ordering::SeqCst);
    assert_says(&agent, "up ready 35%\n").await;
    assert_eq!(
        ready_status(&client, &instance.server).await,
        StatusCode::OK
    );
    assert_eq!(
        client.get(instance.server.addr, "/health").await.json()["status"],
        "degraded"
    );
    instance.cache.store(OK, Ordering::SeqCst);
    assert_says(&agent, "up ready 100%\n").await;

    // An operator's hold: maintenance, and readiness fails.
    assert!(instance.health.hold("maintenance window"));
    assert_says(&agent, "maint\n").await;
    assert_eq!(
        ready_status(&client, &instance.server).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // A hold while degraded is still maintenance: the hold comes before the weight.
    instance.cache.store(REFUSED, Ordering::SeqCst);
    let degraded = eventually(LIMIT, || async {
        client.get(instance.server.addr, "/health").await.json()["status"] == "degraded"
    })
    .await;
    assert!(degraded);
    assert_eq!(agent_line(agent.local_addr()).await, "maint\n");
    assert!(instance.health.release());
    assert_says(&agent, "up ready 35%\n").await;
    instance.cache.store(OK, Ordering::SeqCst);
    assert_says(&agent, "up ready 100%\n").await;

    // The drain (last: a process drains once): drain, even while held, and readiness says
    // draining.
    assert!(instance.health.hold("maintenance window"));
    assert_says(&agent, "maint\n").await;
    assert!(instance.drain.start());
    assert_eq!(agent_line(agent.local_addr()).await, "drain\n");
    let ready = client.get(instance.server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.json()["status"], "draining");
    // A client that sends HAProxy's `agent-send` string first gets the same line.
    let mut stream = TcpStream::connect(agent.local_addr()).await.unwrap();
    stream.write_all(b"app/app1\n").await.unwrap();
    let mut line = String::new();
    bounded("agent-send", stream.read_to_string(&mut line))
        .await
        .unwrap();
    assert_eq!(line, "drain\n");

    agent.shutdown();
    bounded("the agent closes", agent.closed()).await;
}

/// A URL of a PostgreSQL that refuses connections: a port nothing listens on.
async fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("postgres://postgres@127.0.0.1:{port}/postgres")
}

#[tokio::test]
async fn a_refused_database_is_down_with_its_reason_only_where_the_agent_shows_details() {
    let url = refused_url().await;
    // The monitor shows details to its readers; the agent has a setting of its own.
    let settings = fast()
        .details(Details::Always)
        .database("default", postgres(&url));
    let instance = instance(settings, app()).await;
    let default = AgentServer::new(agent_config(), &instance.health)
        .start()
        .await
        .unwrap();
    let shown = AgentServer::new(agent_config().details(Details::Always), &instance.health)
        .start()
        .await
        .unwrap();
    first_rounds(&instance.health).await;
    let client = Client::new();
    assert_says(
        &shown,
        "down ready #database default is not_ready (refused)\n",
    )
    .await;
    // Anyone who reaches the agent's port reads its line: no reason unless asked for.
    assert_says(&default, "down ready\n").await;
    assert_eq!(
        ready_status(&client, &instance.server).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // `authorized` is `never` here: the agent has no keys.
    let authorized = AgentServer::new(
        agent_config().details(Details::Authorized),
        &instance.health,
    )
    .start()
    .await
    .unwrap();
    assert_says(&authorized, "down ready\n").await;
}

#[tokio::test]
async fn clients_that_send_anything_or_nothing_cannot_keep_haproxy_out() {
    // No database: ready with nothing to check.
    let health = HealthMonitor::spawn(fast()).unwrap();
    let agent = AgentServer::new(agent_config().max_connections(2), &health)
        .start()
        .await
        .unwrap();
    let addr = agent.local_addr();
    assert_says(&agent, "up ready 100%\n").await;
    // Connections that never read nor close, more than the limit.
    let mut silent = Vec::new();
    for _ in 0..6 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    // Clients that pour bytes (no line end, control characters, far more than an
    // `agent-send` string) and then leave.
    let mut floods = Vec::new();
    for _ in 0..8 {
        floods.push(tokio::spawn(async move {
            let Ok(mut stream) = TcpStream::connect(addr).await else {
                return;
            };
            let garbage: Vec<u8> = (0..256 * 1024).map(|i| (i % 256) as u8).collect();
            let _ = stream.write_all(&garbage).await;
        }));
    }
    // HAProxy still gets its line, once the places free up (each within the write timeout
    // and a second).
    assert_eq!(agent_line(addr).await, "up ready 100%\n");
    for flood in floods {
        let _ = bounded("a flooding client", flood).await;
    }
    drop(silent);
    assert_eq!(agent_line(addr).await, "up ready 100%\n");
}

/// Waits until `server`'s line of `show stat` satisfies `condition`; fails the test with
/// what HAProxy shows instead.
async fn wait_for_server(
    haproxy: &Haproxy,
    server: &str,
    what: &str,
    condition: impl Fn(&ServerStat) -> bool,
) {
    let reached = eventually(LIMIT, || async {
        haproxy
            .servers("app")
            .await
            .get(server)
            .is_some_and(&condition)
    })
    .await;
    assert!(
        reached,
        "{server}: expected {what}; HAProxy shows {:?}\n{}",
        haproxy.servers("app").await,
        haproxy.log()
    );
}

/// The application behind HAProxy: answers its name, `/slow` after 2 s (counted while in
/// flight, so that the test knows one is open on this server).
fn named_app(
    name: &'static str,
    slow_in_flight: Arc<AtomicUsize>,
) -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |request: Request<Incoming>| {
        let slow_in_flight = slow_in_flight.clone();
        async move {
            if request.uri().path() == "/slow" {
                slow_in_flight.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(2)).await;
                slow_in_flight.fetch_sub(1, Ordering::SeqCst);
            }
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
                name.as_bytes(),
            ))))
        }
    })
}

#[tokio::test]
async fn haproxy_follows_the_agent_and_a_drain_moves_new_sessions_without_a_failure() {
    require_postgres!();
    let binary = require_haproxy!();
    let slow = [Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0))];
    let app1 = instance(database(), named_app("app1", slow[0].clone())).await;
    let app2 = instance(database(), named_app("app2", slow[1].clone())).await;
    let mut agents = Vec::new();
    for instance in [&app1, &app2] {
        first_rounds(&instance.health).await;
        let agent = AgentServer::new(agent_config(), &instance.health)
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
                (app1.server.addr, agents[0].local_addr()),
                (app2.server.addr, agents[1].local_addr()),
            ],
        ),
    );
    let up = |stat: &ServerStat| stat.status == "UP" && stat.weight == 100;
    wait_for_server(&haproxy, "app1", "UP at weight 100", up).await;
    wait_for_server(&haproxy, "app2", "UP at weight 100", up).await;

    // Degraded: the weight falls to the default 50%, the server stays up; and comes back.
    app1.cache.store(REFUSED, Ordering::SeqCst);
    wait_for_server(&haproxy, "app1", "UP at weight 50", |stat| {
        stat.status == "UP" && stat.weight == 50
    })
    .await;
    app1.cache.store(OK, Ordering::SeqCst);
    wait_for_server(&haproxy, "app1", "UP at weight 100", up).await;

    // Held: maintenance; released: up again.
    assert!(app2.health.hold("maintenance window"));
    wait_for_server(&haproxy, "app2", "MAINT", |stat| stat.status == "MAINT").await;
    assert!(app2.health.release());
    wait_for_server(&haproxy, "app2", "UP at weight 100", up).await;

    // A steady stream of requests through the frontend, each on a connection of its own.
    let answers: Arc<Mutex<Vec<Result<String, String>>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stream = tokio::spawn({
        let (answers, stop) = (answers.clone(), stop.clone());
        async move {
            while !stop.load(Ordering::SeqCst) {
                let answer = get_through(frontend, "/").await;
                answers.lock().unwrap().push(answer);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let answered_by = |name: &str| {
        answers
            .lock()
            .unwrap()
            .iter()
            .filter(|answer| answer.as_deref() == Ok(name))
            .count()
    };
    assert!(
        eventually(LIMIT, || async {
            answered_by("app1") > 5 && answered_by("app2") > 5
        })
        .await,
        "both servers answer the stream: {:?}",
        answers.lock().unwrap()
    );

    // Slow requests open on app1 when its drain starts.
    let slow_requests: Vec<_> = (0..6)
        .map(|_| tokio::spawn(get_through(frontend, "/slow")))
        .collect();
    assert!(
        eventually(LIMIT, || async { slow[0].load(Ordering::SeqCst) > 0 }).await,
        "a slow request reached app1"
    );
    assert!(app1.drain.start());
    wait_for_server(&haproxy, "app1", "DRAIN", |stat| {
        stat.status.starts_with("DRAIN")
    })
    .await;
    // Settle: a session HAProxy sent just before it heard the drain is counted by now.
    let settled = answers.lock().unwrap().len() + 5;
    assert!(eventually(LIMIT, || async { answers.lock().unwrap().len() >= settled }).await);
    let sessions_then = haproxy.servers("app").await["app1"].sessions_total;
    let from = answers.lock().unwrap().len();
    assert!(
        eventually(LIMIT, || async {
            answers.lock().unwrap().len() >= from + 30
        })
        .await,
        "the stream goes on"
    );
    // New sessions went to app2 only: app1's counter stopped.
    let after: Vec<_> = answers.lock().unwrap()[from..].to_vec();
    assert!(
        after.iter().all(|answer| answer.as_deref() == Ok("app2")),
        "{after:?}"
    );
    assert_eq!(
        haproxy.servers("app").await["app1"].sessions_total,
        sessions_then,
        "app1 got new sessions while draining"
    );
    // The open ones finished, on both servers, app1 included.
    let mut slow_answers = Vec::new();
    for request in slow_requests {
        slow_answers.push(bounded("a slow request", request).await.unwrap());
    }
    assert!(
        slow_answers.iter().all(Result::is_ok),
        "a slow request failed: {slow_answers:?}"
    );
    assert!(
        slow_answers
            .iter()
            .any(|answer| answer.as_deref() == Ok("app1")),
        "{slow_answers:?}"
    );
    stop.store(true, Ordering::SeqCst);
    bounded("the stream", stream).await.unwrap();
    let answers = answers.lock().unwrap().clone();
    let failed: Vec<_> = answers.iter().filter(|answer| answer.is_err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {} requests failed: {failed:?}",
        failed.len(),
        answers.len()
    );
    // The agent, still answering `drain` once app1's requests are done.
    assert_eq!(agent_line(agents[0].local_addr()).await, "drain\n");
}

/// One server behind HAProxy set up as the HAProxy guide sets it (an HTTP check of
/// `/health/ready`, `inter 2s fall 2 rise 2`, the agent every second).
fn guide_config(frontend: u16, app: SocketAddr, agent: SocketAddr) -> String {
    format!(
        "global
    stats socket {{dir}}/stats mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 2s

frontend fe
    bind 127.0.0.1:{frontend}
    default_backend app

backend app
    option httpchk GET /health/ready
    http-check expect status 200
    default-server check inter 2s fall 2 rise 2 agent-check agent-inter 1s weight 100
    server app1 {app} agent-port {agent}
",
        agent = agent.port(),
    )
}

/// What one sample of the freeze tests saw: since the freeze, HAProxy's status of the
/// server, `/health/ready`'s status, and the agent's line.
type Sample = (Duration, String, u16, String);

/// Samples every 100 ms, timed from `started`, until `until` says stop (given what was seen
/// so far).
async fn sample(
    haproxy: &Haproxy,
    client: &Client,
    (server, agent): (&TestServer, SocketAddr),
    started: std::time::Instant,
    mut until: impl FnMut(&[Sample]) -> bool,
) -> Vec<Sample> {
    let mut samples: Vec<Sample> = Vec::new();
    bounded("sampling HAProxy, readiness and the agent", async {
        while !until(&samples) {
            let status = haproxy
                .servers("app")
                .await
                .get("app1")
                .map(|stat| stat.status.clone())
                .unwrap_or_default();
            let ready = ready_status(client, server).await.as_u16();
            let line = agent_line(agent).await.trim_end().to_owned();
            samples.push((started.elapsed(), status, ready, line));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    samples
}

/// The samples in a few lines, each change once, for the test's output and its failures.
fn changes(samples: &[Sample]) -> String {
    let mut lines = Vec::new();
    let mut last = None;
    for (at, status, ready, line) in samples {
        let now = (status, ready, line);
        if last != Some(now) {
            lines.push(format!(
                "{:>6} ms  haproxy {status:<14} ready {ready}  agent {line:?}",
                at.as_millis()
            ));
            last = Some(now);
        }
    }
    lines.join("\n")
}

/// One slow round never takes a server out, the agent no quicker than the HTTP check beside
/// it (issue: a rollout under overload lost 6,860 of 46,548 requests): the connection the
/// check uses goes dark for 1.5 s, readiness answers 503 for a round or two, the agent lowers
/// the weight instead of saying `down`, and HAProxy keeps the server `UP` throughout. A
/// database that stops answering for good takes it out, and its return brings it back.
#[tokio::test]
async fn one_slow_round_keeps_the_server_and_an_outage_takes_it_out() {
    require_postgres!();
    let binary = require_haproxy!();
    let proxy = support::PgProxy::start(support::pg_addr()).await;
    // The defaults users get: readiness every 1 s under a 500 ms deadline, debounce 4 s.
    let instance = instance(
        HealthConfig::new().database("default", postgres(&proxy.url())),
        app(),
    )
    .await;
    first_rounds(&instance.health).await;
    let agent = AgentServer::new(agent_config(), &instance.health)
        .start()
        .await
        .unwrap();
    let frontend = free_port();
    let haproxy = Haproxy::start(
        &binary,
        &guide_config(frontend, instance.server.addr, agent.local_addr()),
    );
    let up = |stat: &ServerStat| stat.status == "UP" && stat.weight == 100;
    wait_for_server(&haproxy, "app1", "UP at weight 100", up).await;
    let client = Client::new();

    // 1.5 s of silence on the check's connection, then it flows again.
    let watched = (&instance.server, agent.local_addr());
    let frozen_at = std::time::Instant::now();
    proxy.freeze();
    let mut all = sample(&haproxy, &client, watched, frozen_at, |seen| {
        seen.last()
            .is_some_and(|(at, ..)| *at >= Duration::from_millis(1500))
    })
    .await;
    proxy.thaw();
    all.extend(
        sample(&haproxy, &client, watched, frozen_at, |seen| {
            seen.len() >= 30
        })
        .await,
    );
    eprintln!(
        "a 1.5 s freeze of the check's connection:\n{}",
        changes(&all)
    );
    assert!(
        all.iter().any(|(_, _, ready, _)| *ready == 503),
        "the freeze failed no round: it tests nothing\n{}",
        changes(&all)
    );
    assert!(
        all.iter().all(|(_, status, ..)| status == "UP"),
        "one slow round took the server out\n{}",
        changes(&all)
    );
    assert!(
        all.iter().all(|(.., line)| !line.starts_with("down")),
        "the agent said down for one slow round\n{}",
        changes(&all)
    );
    wait_for_server(&haproxy, "app1", "UP at weight 100", up).await;

    // The database stops answering for good: the server goes out, and the agent says
    // `down` once the debounce is over.
    let frozen_at = std::time::Instant::now();
    proxy.freeze();
    let outage = sample(&haproxy, &client, watched, frozen_at, |seen| {
        seen.last().is_some_and(|(_, status, _, line)| {
            status.starts_with("DOWN") && line.starts_with("down")
        })
    })
    .await;
    let out_at = outage
        .iter()
        .find(|(_, status, ..)| status.starts_with("DOWN"))
        .map(|(at, ..)| *at);
    let down_at = outage
        .iter()
        .find(|(.., line)| line.starts_with("down"))
        .map(|(at, ..)| *at);
    eprintln!(
        "an outage (the check's connection dark for good): HAProxy out at {out_at:?}, the agent's down at {down_at:?} (bound: 1 s + 500 ms + 4 s + 1 s)\n{}",
        changes(&outage)
    );

    // A check past its limit is abandoned and the next one opens a new connection, which
    // flows: the database is back, and so is the server.
    proxy.thaw();
    wait_for_server(&haproxy, "app1", "UP at weight 100 again", up).await;
}

/// How often a [sitting client](sitting_clients) writes a byte to learn whether the agent
/// closed its connection.
const SITTER_PROBE: Duration = Duration::from_millis(50);

/// `count` clients that connect to the agent at `addr` and sit on the socket: they never
/// read (their line stays in their receive buffer) and never close. Every [`SITTER_PROBE`]
/// each writes a byte, the only way a client that does not read learns that the agent
/// closed its connection (the agent's side answers the byte with a reset), and then it
/// connects again at once. `connects` counts their connections.
fn sitting_clients(addr: SocketAddr, count: usize, connects: &Arc<AtomicUsize>) -> JoinSet<()> {
    let mut clients = JoinSet::new();
    for _ in 0..count {
        let connects = connects.clone();
        clients.spawn(async move {
            loop {
                let Ok(mut stream) = TcpStream::connect(addr).await else {
                    tokio::time::sleep(SITTER_PROBE).await;
                    continue;
                };
                connects.fetch_add(1, Ordering::Relaxed);
                // The first write after the close draws the reset; the next one fails.
                loop {
                    tokio::time::sleep(SITTER_PROBE).await;
                    if stream.write_all(b".").await.is_err() {
                        break;
                    }
                }
            }
        });
    }
    clients
}

/// One server with the guide's checks: `/health/ready` every 2 s and the agent every 500 ms,
/// whose line HAProxy waits for 2 s once connected (`timeout check`).
fn one_server_config(frontend: u16, app: SocketAddr, agent: SocketAddr) -> String {
    format!(
        "global
    stats socket {{dir}}/stats mode 600 level admin
    maxconn 512

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 2s

frontend fe
    bind 127.0.0.1:{frontend}
    default_backend app

backend app
    option httpchk GET /health/ready
    http-check expect status 200
    server app1 {app} check inter 2s fall 3 rise 1 agent-check agent-inter 500ms agent-port {port} weight 100
",
        port = agent.port(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_sitting_on_the_agent_port_cannot_freeze_a_hold_in_haproxy() {
    const SITTERS: usize = 400;
    let binary = require_haproxy!();
    // No database: ready with nothing to check. The default 64 places.
    let (health, server) = support::health_server(fast()).await;
    let agent = AgentServer::new(agent_config(), &health)
        .start()
        .await
        .unwrap();
    let haproxy = Haproxy::start(
        &binary,
        &one_server_config(free_port(), server.addr, agent.local_addr()),
    );
    wait_for_server(&haproxy, "app1", "UP", |stat| stat.status == "UP").await;
    assert!(health.hold("maintenance window"));
    wait_for_server(&haproxy, "app1", "MAINT", |stat| stat.status == "MAINT").await;

    // Far more clients than places, each back as soon as it is closed: every place is
    // taken, and the listen backlog holds the rest, HAProxy's own connection among them.
    let connects = Arc::new(AtomicUsize::new(0));
    let sitters = sitting_clients(agent.local_addr(), SITTERS, &connects);
    let cycling = eventually(LIMIT, || async {
        connects.load(Ordering::Relaxed) > SITTERS + 2 * 64
    })
    .await;
    assert!(cycling, "the sitting clients did not get going");

    // Released: HAProxy hears `up ready` through them, and takes the server out of MAINT.
    assert!(health.release());
    assert_eq!(ready_status(&Client::new(), &server).await, StatusCode::OK);
    let released = std::time::Instant::now();
    let connects_then = connects.load(Ordering::Relaxed);
    // `UP`, or `UP 1/3` while the HTTP check still counts the failures of the hold.
    wait_for_server(&haproxy, "app1", "UP after the release", |stat| {
        stat.status.starts_with("UP")
    })
    .await;
    eprintln!(
        "HAProxy saw the release after {:?}, {} connections of the sitting clients meanwhile",
        released.elapsed(),
        connects.load(Ordering::Relaxed) - connects_then
    );
    // The clients were still at it: on a loaded machine HAProxy can hear the release before
    // any of them has come back, so this waits rather than reads once.
    let still_cycling = eventually(LIMIT, || async {
        connects.load(Ordering::Relaxed) > connects_then
    })
    .await;
    assert!(still_cycling, "the sitting clients kept reconnecting");
    drop(sitters);
}

/// The slow start against a real HAProxy: after a hold's release, the server's weight, read
/// from HAProxy's stats socket, starts below 100, never goes down, and reaches 100 once the
/// window has passed.
#[tokio::test]
async fn after_a_release_haproxys_weight_rises_over_the_slow_start() {
    let binary = require_haproxy!();
    let window = Duration::from_secs(6);
    // No database: ready with nothing to check.
    let (health, server) = support::health_server(fast()).await;
    let agent = AgentServer::new(AgentConfig::new().port(0).slow_start(window), &health)
        .start()
        .await
        .unwrap();
    let haproxy = Haproxy::start(
        &binary,
        &one_server_config(free_port(), server.addr, agent.local_addr()),
    );
    // The start is a return too: the full weight once its window has passed.
    let up = |stat: &ServerStat| stat.status == "UP" && stat.weight == 100;
    wait_for_server(&haproxy, "app1", "UP at weight 100", up).await;
    assert!(health.hold("maintenance window"));
    wait_for_server(&haproxy, "app1", "MAINT", |stat| stat.status == "MAINT").await;

    assert!(health.release());
    let released = std::time::Instant::now();
    // Every 100 ms, from the first sample out of MAINT (HAProxy heard the release) until the
    // full weight.
    let mut samples: Vec<(Duration, String, u64)> = Vec::new();
    bounded("sampling HAProxy's weight", async {
        loop {
            let servers = haproxy.servers("app").await;
            if let Some(stat) = servers.get("app1").filter(|stat| stat.status != "MAINT") {
                samples.push((released.elapsed(), stat.status.clone(), stat.weight));
                if stat.weight == 100 {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let mut shown = Vec::new();
    for (at, status, weight) in &samples {
        if shown.last().is_none_or(|(_, _, last)| last != weight) {
            shown.push((at.as_millis(), status.clone(), *weight));
        }
    }
    eprintln!(
        "HAProxy's weight after the release (ms since it, status, weight), {} samples, each change:\n{shown:?}",
        samples.len()
    );
    let weights: Vec<u64> = samples.iter().map(|(_, _, weight)| *weight).collect();
    assert!(weights[0] < 100, "the weight jumped to 100: {shown:?}");
    assert!(
        weights.windows(2).all(|pair| pair[0] <= pair[1]),
        "the weight went down: {shown:?}"
    );
    assert_eq!(weights.last(), Some(&100));
    assert!(
        shown.len() > 2,
        "the weight rose in steps, not at once: {shown:?}"
    );
    assert!(
        samples
            .iter()
            .all(|(_, status, _)| status.starts_with("UP")),
        "{shown:?}"
    );
}

/// After an outage the agent agrees with readiness through the whole return: `down` while
/// the database is away (past the debounce) and while the return's jitter holds readiness
/// out, then a weight that starts below 100% and rises (the slow start from the return), over
/// a real TCP connection each time.
#[tokio::test]
async fn after_an_outage_the_agent_says_down_through_the_jitter_then_ramps() {
    require_postgres!();
    let addr = support::refused_addr().await;
    let proxy = support::tcp_proxy::TcpProxy::start_on(addr, support::pg_addr()).await;
    let debounce = Duration::from_millis(300);
    let config = fast()
        .debounce(debounce)
        .return_jitter(Duration::from_secs(3))
        .database(
            "default",
            postgres(&format!(
                "postgres://postgres@{addr}/postgres?sslmode=disable"
            )),
        );
    let (health, _server) = support::health_server(config).await;
    let agent = AgentServer::new(
        AgentConfig::new()
            .port(0)
            .slow_start(Duration::from_secs(20)),
        &health,
    )
    .start()
    .await
    .unwrap();
    first_rounds(&health).await;

    // The database goes away for longer than the debounce: `down`.
    drop(proxy);
    assert_says(&agent, "down ready\n").await;
    tokio::time::sleep(debounce * 3).await;

    // It comes back: while readiness waits out the return, still `down`.
    let _proxy = support::tcp_proxy::TcpProxy::start_on(addr, support::pg_addr()).await;
    let mut watch = health.watch();
    let returning = bounded("readiness returning", async {
        loop {
            let view = watch.changed().await.expect("the monitor is running");
            let answer = view.answer(tower_health::Probe::Ready);
            if answer.condition == tower_health::view::Condition::Returning {
                return agent_line(agent.local_addr()).await;
            }
            assert!(
                !answer.passing,
                "readiness passed without a return: {answer:?}"
            );
        }
    })
    .await;
    assert_eq!(returning, "down ready\n", "the agent during the return");

    // Back: a weight below 100%, rising with each read.
    let _ = bounded(
        "readiness passing",
        watch.wait_for(|view| view.answer(tower_health::Probe::Ready).passing),
    )
    .await;
    let mut weights = Vec::new();
    for _ in 0..6 {
        let line = agent_line(agent.local_addr()).await;
        let percent: u8 = line
            .strip_prefix("up ready ")
            .and_then(|rest| rest.strip_suffix("%\n"))
            .and_then(|digits| digits.parse().ok())
            .unwrap_or_else(|| panic!("not a weight: {line:?}"));
        weights.push(percent);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!("the agent's weights after the return, every 500 ms: {weights:?}");
    assert!(weights[0] < 100, "{weights:?}");
    assert!(
        weights.windows(2).all(|pair| pair[0] <= pair[1]),
        "{weights:?}"
    );
    assert!(weights.last() > weights.first(), "{weights:?}");
}

/// Issue 36 D: the HAProxy guide's configuration is one HAProxy accepts (`haproxy -c`), and
/// it keeps WebSockets open past `timeout client` with a `timeout tunnel`.
#[test]
fn the_guide_s_configuration_is_one_haproxy_accepts() {
    let Some(binary) = support::haproxy::binary() else {
        return;
    };
    let guide = include_str!("../../src/docs/haproxy.md");
    let section = &guide[guide.find("# The backend").unwrap()..];
    let block = &section[section.find("```text\n").unwrap() + "```text\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    assert!(block.contains("\n    timeout tunnel "), "{block}");
    let dir = std::env::temp_dir().join(format!("tower-health-guide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, block).unwrap();
    let checked = std::process::Command::new(binary)
        .arg("-c")
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        checked.status.success(),
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// Load feedback against a real HAProxy: with a capacity of 4, four requests held in flight
/// lower the weight HAProxy applies, down to the 10% floor and never out of `UP`; released,
/// the weight comes back to full (95% or more). HAProxy takes each line the agent says within two
/// `agent-inter` (500 ms each): the weight HAProxy shows is never below what the agent says
/// for longer than that, checked by reading both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_weighs_the_server_by_its_load_and_never_takes_it_out() {
    const CAPACITY: u32 = 4;
    /// The weight that counts as full again after the release.
    const FULL: u8 = 95;
    let binary = require_haproxy!();
    // No database: ready with nothing to check.
    let health = HealthMonitor::spawn(fast().load_capacity(CAPACITY)).unwrap();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let server = serve(
        ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .layer(DrainLayer::new(health.drain()))
            .service(gated_app(gate.clone())),
    )
    .await;
    // With the capacity as the server's `maxconn` too.
    let agent = AgentServer::new(agent_config().maxconn(true), &health)
        .start()
        .await
        .unwrap();
    let frontend = free_port();
    let haproxy = Haproxy::start(
        &binary,
        &one_server_config(frontend, server.addr, agent.local_addr()),
    );
    let full = |stat: &ServerStat| {
        stat.status == "UP"
            && stat.weight >= u64::from(FULL)
            && stat.session_limit == u64::from(CAPACITY)
    };
    wait_for_server(
        &haproxy,
        "app1",
        "UP at full weight and maxconn, idle",
        full,
    )
    .await;

    // Four requests through HAProxy, held by the app: the capacity, in flight.
    let frontend: SocketAddr = ([127, 0, 0, 1], frontend).into();
    let mut held = JoinSet::new();
    for _ in 0..CAPACITY {
        held.spawn(async move { get_through(frontend, "/wait").await });
    }
    let loaded = std::time::Instant::now();
    let in_flight = eventually(LIMIT, || async {
        health.drain().in_flight() == CAPACITY as usize
    })
    .await;
    assert!(in_flight, "the held requests did not reach the app");
    // Down to the floor, sampled every 100 ms: HAProxy's weight and the agent's line.
    let mut samples = Vec::new();
    let floor = sample_weights(
        &haproxy,
        agent.local_addr(),
        loaded,
        &mut samples,
        |weight| weight == 10,
    );
    bounded("HAProxy's weight falling to the floor", floor).await;
    report("loaded", &samples);
    assert!(
        samples
            .iter()
            .all(|(_, said, stat)| said.starts_with("up ready ") && stat.status == "UP"),
        "load alone never takes the server out: {samples:?}"
    );
    assert!(
        samples
            .windows(2)
            .all(|pair| pair[0].2.weight >= pair[1].2.weight),
        "the weight only falls while the load stays: {samples:?}"
    );
    assert!(
        samples
            .iter()
            .any(|(_, _, stat)| (11..100).contains(&stat.weight)),
        "the weight falls in steps, not at once: {samples:?}"
    );
    assert_eq!(
        agent_line(agent.local_addr()).await,
        format!("up ready 10% maxconn:{CAPACITY}\n")
    );
    // The agent says the floor from 0.895 on (round(100 x (1 - u)) <= 10).
    let utilization = health.utilization().unwrap();
    assert!(
        utilization > 0.89,
        "at the floor, utilization {utilization}"
    );

    // Released: the requests finish, and the weight comes back to 100.
    gate.add_permits(CAPACITY as usize);
    while let Some(answer) = held.join_next().await {
        assert_eq!(answer.unwrap().as_deref(), Ok("inner /wait"));
    }
    let released = std::time::Instant::now();
    let mut samples = Vec::new();
    let full = sample_weights(
        &haproxy,
        agent.local_addr(),
        released,
        &mut samples,
        |weight| weight >= u64::from(FULL),
    );
    let back = tokio::time::timeout(LIMIT, full).await;
    report("released", &samples);
    assert!(
        back.is_ok(),
        "not back to {FULL} within {LIMIT:?}; utilization {:?}, in flight {}",
        health.utilization(),
        health.drain().in_flight()
    );
    assert!(
        samples.iter().all(|(_, _, stat)| stat.status == "UP"),
        "{samples:?}"
    );
    // Back to full weight, less what a busy machine's late timer ticks still count (the
    // runtime's lag is load too: on the test machine, with every other test running, a tick
    // is now and then more than the 10 ms grace late). Not asserted to rise without a dip, for
    // the same reason.

    let said = agent_line(agent.local_addr()).await;
    let weight: u8 = said
        .strip_prefix("up ready ")
        .and_then(|rest| rest.strip_suffix(&format!("% maxconn:{CAPACITY}\n")))
        .and_then(|weight| weight.parse().ok())
        .unwrap_or_else(|| panic!("not `up ready N% maxconn:{CAPACITY}`: {said:?}"));
    assert!(weight >= FULL, "{said:?}");
}

/// Samples, every 100 ms until `done` says so of HAProxy's weight for `app1`, the agent's line
/// and HAProxy's view of the server, each with the time since `since`.
async fn sample_weights(
    haproxy: &Haproxy,
    agent: SocketAddr,
    since: std::time::Instant,
    samples: &mut Vec<(Duration, String, ServerStat)>,
    done: impl Fn(u64) -> bool,
) {
    loop {
        let said = agent_line(agent).await;
        let stat = haproxy
            .servers("app")
            .await
            .remove("app1")
            .unwrap_or_default();
        samples.push((since.elapsed(), said, stat.clone()));
        if done(stat.weight) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Prints each change of the agent's line and of HAProxy's weight, with the time since
/// `what`, and for each weight HAProxy applied, how long after the agent first said it: the
/// test's figures (printed, not asserted: the machine's load is not the agent's).
fn report(what: &str, samples: &[(Duration, String, ServerStat)]) {
    let mut changes: Vec<(u128, &str, u64)> = Vec::new();
    for (at, said, stat) in samples {
        let said = said.trim_end();
        if changes.last().is_none_or(|(_, last_said, last_weight)| {
            *last_said != said || *last_weight != stat.weight
        }) {
            changes.push((at.as_millis(), said, stat.weight));
        }
    }
    let mut applied: Vec<(u64, u128)> = Vec::new();
    for (at, _, stat) in samples {
        if applied
            .last()
            .is_some_and(|(weight, _)| *weight == stat.weight)
        {
            continue;
        }
        let line = format!("up ready {}%", stat.weight);
        // The weight's words, whatever follows them (`maxconn:`).
        let words = |said: &str| {
            said.trim_end()
                .split(" maxconn:")
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        if let Some((said_at, _, _)) = samples.iter().find(|(_, said, _)| words(said) == line) {
            applied.push((stat.weight, at.saturating_sub(*said_at).as_millis()));
        }
    }
    eprintln!(
        "{what}: {} samples; (ms since, the agent's line, HAProxy's weight) at each change:\n{changes:?}\n\
         (weight HAProxy applied, ms since the agent first said it): {applied:?}",
        samples.len()
    );
}

#[tokio::test]
async fn maxconn_without_a_load_capacity_is_refused_at_start_naming_the_setting() {
    let health = HealthMonitor::spawn(fast()).unwrap();
    let Err(error) = AgentServer::new(agent_config().maxconn(true), &health)
        .start()
        .await
    else {
        panic!("started with no capacity to say");
    };
    let said = error.to_string();
    assert!(said.contains("AgentConfig::maxconn"), "{said}");
    assert!(said.contains("TOWER_HEALTH_LOAD_CAPACITY"), "{said}");
}
