//! Probe storm: real servers on 127.0.0.1, each in a child process of its own, driven by many
//! concurrent keep-alive HTTP/1.1 connections from an in-process hyper client (and, for the
//! gRPC rows, HTTP/2 connections).
//!
//! ```text
//! cargo bench --bench storm --all-features
//! STORM_SECONDS=3 STORM_ROUNDS=5 cargo bench --bench storm --all-features   # longer
//! ```
//!
//! Every figure is reported beside a baseline measured in the same run: the servers are run
//! interleaved (a, x, a, y, ...) over several rounds, and each ratio is the median of the
//! per-round ratios. Server CPU per request is the child's utime + stime over the measured
//! window divided by the requests answered in it; it is far steadier than requests/s on a
//! shared machine. Database transactions are read from `pg_stat_database` (commits +
//! rollbacks of a database only the servers use) after the server has exited, since a
//! backend publishes its counters when it disconnects; health checks are also counted inside
//! the monitor.
//!
//! The servers:
//!
//! - `bare-hyper`: hyper-util answering 200 `ok` to everything: the ceiling of this stack.
//! - `stack-hyper`: `HealthLayer` + `DrainLayer` in front of a `service_fn`, served by
//!   hyper-util, as `examples/hyper.rs` stacks them.
//! - `stack-hyper-metrics`, `stack-hyper-never`: the same stack with the opt-in metrics path
//!   (`HealthConfig::metrics_path("/metrics")`), and with `HealthLayer::details(Details::Never)`.
//! - `around-axum`: the form the README recommends, `health.around(router)` (the stack around
//!   the router, outside routing, in one service), served by `axum::serve`.
//! - `layered-axum`: the form the README recommended in 0.2.0, three `Router::layer` calls.
//! - `static-axum`: the bare router with a hand-written static `/health/ready` route answering
//!   the stack's readiness bytes (status, `Content-Type`, `Cache-Control`, body).
//! - `stack-axum`, `plain-axum`: an axum `Router` with the stack around it under
//!   `ServiceBuilder` (and `map_response(IntoResponse::into_response)`), and the bare router,
//!   served by `axum::serve` (with `TCP_NODELAY`).
//! - `handrolled-axum`: what most teams write: an axum handler that checks out a bb8-postgres
//!   connection (bb8 defaults) and runs `SELECT 1` per request.
//! - `admin`: the admin server (`/readiness`, and `/metrics` from the `metrics` feature).
//! - `grpc-constant`, `grpc-tower-health` (the instruction table only, and only when PostgreSQL
//!   is reachable): `grpc.health.v1.Health/Check` on a bare `tonic::transport::Server::builder()`
//!   whose `Health` answers `SERVING` as a constant, and on the same builder with
//!   `grpc::HealthService` answering `Check("")` from the monitor (as `examples/tonic.rs` wires
//!   it); both from `support/grpc_servers.rs`, which `benches/grpc.rs` measures too. The client
//!   makes unary calls (the 5-byte frame header of an empty `HealthCheckRequest`,
//!   `content-type: application/grpc`, `te: trailers`), sequential on each of 16 h2c (HTTP/2
//!   prior knowledge) hyper connections, reads each answer to its trailers, and fails the bench
//!   unless it is `grpc-status: 0` with `SERVING`. The table prints the ratio of the two.
//! - `agent` (the instruction table only, and only when PostgreSQL is reachable): the HAProxy
//!   agent (`haproxy::AgentServer`), answering each connection its line, as HAProxy's
//!   `agent-check` asks: the client connects, reads to the end, fails the bench unless the
//!   line is `up ready 100%`, and closes; 16 connections at a time. A request is a connection.
//!
//! Settings: `STORM_SECONDS` (measured seconds per run, default 2), `STORM_ROUNDS` (default 3),
//! `STORM_DATABASE_URL` (a server to create the `tower_health_bench` database on, default the
//! local PostgreSQL), `STORM_ONLY` (`main`, `scale` or `instructions`: the callgrind rows
//! alone; default all), `STORM_FILTER` (only the servers whose name contains it, or one of a
//! comma-separated list: `plain-axum,around-axum`; `grpc` for the gRPC rows),
//! `STORM_CLIENT_THREADS` (load generator threads, default 1; the server always runs on one),
//! `STORM_KEEP_CALLGRIND` (a folder to keep the callgrind files in, named
//! `<server><path>-<requests>.callgrind`, for `callgrind_annotate`). The callgrind runs raise
//! glibc's per-thread cache (`GLIBC_TUNABLES`), so that which chunks it happens to hold does
//! not move a row between builds.

use std::convert::Infallible;
use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::ListenerExt;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::server::TcpIncoming;
use tower::ServiceBuilder;
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::haproxy::{AgentConfig, AgentServer};
use tower_health::postgres::PostgresCheck;
use tower_health::{
    DrainLayer, HealthConfig, HealthHandle, HealthLayer, HealthMonitor, PingLayer, config::Details,
};

#[path = "support/grpc_servers.rs"]
mod grpc_servers;

const BENCH_DATABASE: &str = "tower_health_bench";

fn main() -> Result<(), Box<dyn Error>> {
    if let Ok(server) = std::env::var("STORM_SERVE") {
        return serve(&server);
    }
    if std::env::args().any(|arg| arg == "--list" || arg == "--test") {
        return Ok(()); // `cargo bench -- --list`, `cargo test --benches`
    }
    drive()
}

// ------------------------------------------------------------------------------------------
// The server side: one child process per measurement.
// ------------------------------------------------------------------------------------------

/// Runs server `kind` on 127.0.0.1:0, prints `PORT <port>`, serves until stdin closes, then
/// prints `CHECKS <n>` (health checks started) and exits.
fn serve(kind: &str) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // Only the servers that answer from verdicts run a monitor.
        let health = match kind {
            "stack-hyper"
            | "stack-hyper-metrics"
            | "stack-hyper-never"
            | "stack-axum"
            | "around-axum"
            | "layered-axum"
            | "static-axum"
            | "admin"
            | "agent"
            | "floor-hyper"
            | "grpc-tower-health" => Some(monitor(kind).await?),
            _ => None,
        };
        let checked = health.clone();
        let health = health.unwrap_or_else(|| HealthMonitor::new(HealthConfig::new()).unwrap().0);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        // The admin server binds its own port, before the port is announced.
        let admin = match kind {
            "admin" => Some(
                AdminServer::new(AdminConfig::new().port(0), &health)
                    .start()
                    .await?,
            ),
            _ => None,
        };
        let agent = match kind {
            // The steady state's answer: without the slow start, whose first 10 s would
            // answer below the `up ready 100%` the client insists on.
            "agent" => Some(
                AgentServer::new(
                    AgentConfig::new().port(0).slow_start(Duration::ZERO),
                    &health,
                )
                .start()
                .await?,
            ),
            _ => None,
        };
        let port = match (&admin, &agent) {
            (Some(admin), _) => admin.local_addr().port(),
            (_, Some(agent)) => agent.local_addr().port(),
            (None, None) => listener.local_addr()?.port(),
        };
        let server = async {
            match kind {
                "bare-hyper" => {
                    let ok = tower::service_fn(|_: Request<Incoming>| async {
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    });
                    hyper_loop(listener, ok).await
                }
                "floor-hyper" => {
                    // The least a pre-rendered answer can cost: the stack's own readiness
                    // answer (same status, headers and bytes), served from an ArcSwap.
                    let rendered = Arc::new(arc_swap::ArcSwap::from_pointee(
                        rendered_readiness(&health).await,
                    ));
                    let floor = tower::service_fn(move |_: Request<Incoming>| {
                        let rendered = rendered.load();
                        let mut response = Response::new(Full::new(rendered.2.clone()));
                        *response.status_mut() = rendered.0;
                        *response.headers_mut() = rendered.1.clone();
                        async move { Ok::<_, Infallible>(response) }
                    });
                    hyper_loop(listener, floor).await
                }
                "stack-hyper" | "stack-hyper-metrics" | "stack-hyper-never" => {
                    let ok = tower::service_fn(|_: Request<Incoming>| async {
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    });
                    let drain = health.drain().clone();
                    let drain_layer = DrainLayer::new(&drain);
                    let layer = HealthLayer::new(&health);
                    // `stack-hyper-metrics`' metrics path is its monitor's: see `monitor`.
                    let layer = match kind {
                        "stack-hyper-never" => layer.details(Details::Never),
                        _ => layer,
                    };
                    // As `examples/hyper.rs` and the serving guide stack it.
                    let stack = ServiceBuilder::new()
                        .layer(layer)
                        .layer(drain_layer)
                        .service(ok);
                    hyper_loop(listener, stack).await
                }
                "around-axum" => {
                    // The README's form.
                    let health = HealthLayer::new(&health);
                    let app = health.around(router());
                    let listener = listener.tap_io(|tcp| {
                        let _ = tcp.set_nodelay(true);
                    });
                    axum::serve(listener, app).await?;
                    Ok(())
                }
                "layered-axum" => {
                    // 0.2.0's README form: three `Router::layer` calls.
                    let health = HealthLayer::new(&health);
                    let drain_layer = DrainLayer::new(health.handle().drain());
                    let app = router()
                        .layer(drain_layer)
                        .layer(health)
                        .layer(PingLayer::new());
                    let listener = listener.tap_io(|tcp| {
                        let _ = tcp.set_nodelay(true);
                    });
                    axum::serve(listener, app).await?;
                    Ok(())
                }
                "static-axum" => {
                    // A hand-written route answering the stack's readiness bytes.
                    let (status, headers, body) = rendered_readiness(&health).await;
                    let content_type = headers[http::header::CONTENT_TYPE].clone();
                    let cache_control = headers[http::header::CACHE_CONTROL].clone();
                    let ready = move || {
                        let answer = (
                            status,
                            [
                                (http::header::CONTENT_TYPE, content_type.clone()),
                                (http::header::CACHE_CONTROL, cache_control.clone()),
                            ],
                            body.clone(),
                        );
                        async move { answer }
                    };
                    let listener = listener.tap_io(|tcp| {
                        let _ = tcp.set_nodelay(true);
                    });
                    axum::serve(listener, router().route("/health/ready", get(ready))).await?;
                    Ok(())
                }
                "plain-axum" => {
                    // As an application serves its router: `axum::serve` prepares the routes
                    // once per connection (`Router::with_state`), not per request.
                    let listener = listener.tap_io(|tcp| {
                        let _ = tcp.set_nodelay(true);
                    });
                    axum::serve(listener, router()).await?;
                    Ok(())
                }
                "stack-axum" => {
                    let drain = health.drain().clone();
                    let drain_layer = DrainLayer::new(&drain);
                    let stack = ServiceBuilder::new()
                        .map_response(IntoResponse::into_response)
                        .layer(HealthLayer::new(&health))
                        .layer(drain_layer)
                        .service(router());
                    axum_serve(listener, stack).await
                }
                "handrolled-axum" => {
                    let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
                        bench_url(),
                        tokio_postgres::NoTls,
                    )?;
                    // bb8's defaults, as a hand-written handler would have them.
                    let pool = bb8::Pool::builder().build(manager).await?;
                    let app = Router::new()
                        .route("/health", get(handrolled))
                        .with_state(pool);
                    axum_serve(listener, app).await
                }
                "grpc-constant" => {
                    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
                    grpc_servers::serve_constant(incoming, std::future::pending()).await?;
                    Ok(())
                }
                "grpc-tower-health" => {
                    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
                    grpc_servers::serve_health_service(
                        health.clone(),
                        incoming,
                        std::future::pending(),
                    )
                    .await?;
                    Ok(())
                }
                "admin" | "agent" => std::future::pending().await,
                other => Err(format!("unknown server {other}").into()),
            }
        };
        println!("PORT {port}");
        std::io::stdout().flush()?;
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            while std::io::stdin()
                .read_line(&mut line)
                .is_ok_and(|read| read > 0)
            {}
        });
        tokio::select! {
            result = server => result?,
            _ = stdin_closed => {}
        }
        if let Some(checked) = checked {
            println!("CHECKS {}", checked.stats().checks_started);
        }
        Ok::<_, Box<dyn Error>>(())
    })?;
    // Exiting closes every pooled connection, which publishes their statistics.
    drop(runtime);
    Ok(())
}

/// The monitor of server `kind`: `STORM_DATABASES` real databases and `STORM_STALLED`
/// listeners that accept and never answer; for `stack-hyper-metrics`, the layers' metrics path.
async fn monitor(kind: &str) -> Result<HealthHandle, Box<dyn Error>> {
    let databases: usize = env_or("STORM_DATABASES", 1);
    let stalled: usize = env_or("STORM_STALLED", 0);
    // The parent may stretch the cadence (for instruction counts) through the environment.
    let mut config = HealthConfig::from_env()?;
    for index in 0..databases {
        let name = if index == 0 {
            "default".to_owned()
        } else {
            format!("db{index}")
        };
        config = config.database(&name, PostgresCheck::connect(&bench_url())?);
    }
    for index in 0..stalled {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("postgres://postgres@{}/postgres", listener.local_addr()?);
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        config = config.database(&format!("stalled{index}"), PostgresCheck::connect(&url)?);
    }
    if kind == "stack-hyper-metrics" {
        config = config.metrics_path("/metrics");
    }
    let health = HealthMonitor::spawn(config).unwrap();
    while health.view().readiness.checked_at.is_none() || health.view().health.checked_at.is_none()
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(health)
}

/// The readiness answer the stack gives: status, headers and body bytes.
async fn rendered_readiness(health: &HealthHandle) -> (StatusCode, http::HeaderMap, Bytes) {
    use tower::{Layer, ServiceExt};
    let inner = tower::service_fn(|_: Request<Empty<Bytes>>| async {
        Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    });
    let request = Request::get("/health/ready").body(Empty::new()).unwrap();
    let response = HealthLayer::new(health)
        .layer(inner)
        .oneshot(request)
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (parts.status, parts.headers, body)
}

fn router() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

async fn handrolled(
    State(pool): State<bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>>,
) -> StatusCode {
    let Ok(conn) = pool.get().await else {
        return StatusCode::SERVICE_UNAVAILABLE;
    };
    match conn.query_one("SELECT 1", &[]).await {
        Ok(_) => StatusCode::OK,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

async fn hyper_loop<S, B>(listener: TcpListener, service: S) -> Result<(), Box<dyn Error>>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn Error + Send + Sync>>,
{
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn axum_serve<S>(listener: TcpListener, service: S) -> Result<(), Box<dyn Error>>
where
    S: tower::Service<
            Request<axum::body::Body>,
            Response = axum::response::Response,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, tower::make::Shared::new(service)).await?;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// The driving side.
// ------------------------------------------------------------------------------------------

/// One server to measure: which binary mode, which path, how it is asked, how many
/// connections, and the monitor's databases.
#[derive(Clone, Debug)]
struct Setup {
    label: &'static str,
    server: &'static str,
    path: &'static str,
    protocol: Protocol,
    connections: usize,
    databases: usize,
    stalled: usize,
}

/// How the client asks.
#[derive(Copy, Clone, Debug)]
enum Protocol {
    /// `GET <path>` over HTTP/1.1 keep-alive connections.
    Http1,
    /// A unary gRPC call to `<path>` with an empty message, over h2c (HTTP/2 with prior
    /// knowledge); the answer must be `grpc-status: 0` and `SERVING`. Measured in the
    /// instruction table only.
    Grpc,
    /// A TCP connection read to its end, which must be the HAProxy agent's `up ready 100%`
    /// line. Measured in the instruction table only.
    AgentLine,
}

impl Setup {
    const fn new(label: &'static str, server: &'static str, path: &'static str) -> Self {
        Self {
            label,
            server,
            path,
            protocol: Protocol::Http1,
            connections: 64,
            databases: 1,
            stalled: 0,
        }
    }

    fn baseline(&self) -> Self {
        Self {
            label: "(a) bare hyper, 200 ok",
            server: "bare-hyper",
            path: "/",
            protocol: Protocol::Http1,
            ..self.clone()
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
struct Run {
    /// Requests over the server's whole life, warm-up included: what the transactions were
    /// spent on.
    lifetime_requests: u64,
    failures: u64,
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    cpu_us_per_request: f64,
    transactions: Option<i64>,
    checks: Option<u64>,
}

fn drive() -> Result<(), Box<dyn Error>> {
    let seconds: f64 = env_or("STORM_SECONDS", 2.0);
    let rounds: usize = env_or("STORM_ROUNDS", 3);
    let only = std::env::var("STORM_ONLY").unwrap_or_default();
    let filter = std::env::var("STORM_FILTER").unwrap_or_default();
    let threads: usize = env_or("STORM_CLIENT_THREADS", 1);
    let runtime = if threads > 1 {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    };
    let stats = runtime.block_on(DatabaseStats::connect());
    if stats.is_none() {
        eprintln!("PostgreSQL is unreachable: database rows and transaction counts are skipped");
    }
    let measure = Duration::from_secs_f64(seconds);
    println!("# probe storm: {seconds} s per run, {rounds} interleaved rounds, median of each\n");

    if only.is_empty() || only == "main" {
        let mut setups = main_setups(stats.is_some());
        setups.retain(|setup| filter.split(',').any(|name| setup.server.contains(name)));
        let results = runtime.block_on(interleaved(&setups, rounds, measure, stats.as_ref()))?;
        print_main_table(&setups, &results);
    }
    if only.is_empty() || only == "instructions" {
        let valgrind = Command::new("valgrind").arg("--version").output();
        if valgrind.is_ok_and(|output| output.status.success()) {
            let mut setups = main_setups(stats.is_some());
            // The monitor behind `grpc::HealthService` needs its database to answer `SERVING`.
            if stats.is_some() {
                setups.extend(grpc_setups());
                setups.push(Setup {
                    protocol: Protocol::AgentLine,
                    ..Setup::new("(i) HAProxy agent: its line", "agent", "")
                });
            }
            setups.retain(|setup| filter.split(',').any(|name| setup.server.contains(name)));
            runtime.block_on(print_instruction_table(&setups))?;
        } else {
            eprintln!("valgrind is not installed: instruction counts are skipped");
        }
    }
    if (only.is_empty() || only == "scale") && stats.is_some() {
        let mut setups = Vec::new();
        for connections in [64, 256] {
            for (databases, stalled) in [(1, 0), (4, 0), (3, 1)] {
                setups.push(Setup {
                    label: "",
                    connections,
                    databases,
                    stalled,
                    ..Setup::new("", "stack-hyper", "/health/ready")
                });
            }
        }
        let results = runtime.block_on(interleaved(&setups, rounds, measure, stats.as_ref()))?;
        print_scale_table(&setups, &results);
    }
    Ok(())
}

/// The servers of the main table: (b), (c), (e), (f), (g), and (d) when PostgreSQL is there.
fn main_setups(with_database: bool) -> Vec<Setup> {
    let mut setups = vec![
        Setup::new(
            "floor: the same readiness answer from an ArcSwap, hyper-util",
            "floor-hyper",
            "/health/ready",
        ),
        Setup::new(
            "(b) stack, hyper-util: /health/ready",
            "stack-hyper",
            "/health/ready",
        ),
        Setup::new(
            "(b) stack, hyper-util: /health/ping",
            "stack-hyper",
            "/health/ping",
        ),
        Setup::new("(b) stack, hyper-util: /health", "stack-hyper", "/health"),
        Setup::new(
            "(b) stack, hyper-util: /health/ready?verbose",
            "stack-hyper",
            "/health/ready?verbose",
        ),
        Setup::new(
            "(b) stack, hyper-util: /health/ready?exclude=hold",
            "stack-hyper",
            "/health/ready?exclude=hold",
        ),
        Setup::new(
            "(b) stack, axum::serve: /health/ready",
            "stack-axum",
            "/health/ready",
        ),
        Setup::new(
            "(b) stack, axum::serve: /health/ping",
            "stack-axum",
            "/health/ping",
        ),
        Setup::new("(b) stack, axum::serve: /health", "stack-axum", "/health"),
        Setup::new("(c) axum, no stack: GET /", "plain-axum", "/"),
        Setup::new("(c) axum, with stack: GET /", "stack-axum", "/"),
        Setup::new("(e) admin server: /readiness", "admin", "/readiness"),
        Setup::new("(e) admin server: /metrics", "admin", "/metrics"),
        Setup::new(
            "(b) stack + metrics path, hyper-util: /metrics",
            "stack-hyper-metrics",
            "/metrics",
        ),
        Setup::new(
            "(b) stack, details never, hyper-util: /health/ready",
            "stack-hyper-never",
            "/health/ready",
        ),
        Setup::new(
            "(b) stack, details never, hyper-util: /health",
            "stack-hyper-never",
            "/health",
        ),
        Setup::new(
            "(f) axum, static route: /health/ready",
            "static-axum",
            "/health/ready",
        ),
        Setup::new(
            "(f) axum, health.around(router): /health/ready",
            "around-axum",
            "/health/ready",
        ),
        Setup::new(
            "(f) axum, health.around(router): /health/ping",
            "around-axum",
            "/health/ping",
        ),
        Setup::new(
            "(f) axum, health.around(router): /health",
            "around-axum",
            "/health",
        ),
        Setup::new("(f) axum, health.around(router): GET /", "around-axum", "/"),
        Setup::new(
            "(g) axum, Router::layer x3: /health/ready",
            "layered-axum",
            "/health/ready",
        ),
        Setup::new(
            "(g) axum, Router::layer x3: /health/ping",
            "layered-axum",
            "/health/ping",
        ),
        Setup::new("(g) axum, Router::layer x3: GET /", "layered-axum", "/"),
    ];
    if with_database {
        setups.push(Setup::new(
            "(d) hand-rolled SELECT 1 per request",
            "handrolled-axum",
            "/health",
        ));
    }
    setups
}

/// The gRPC rows of the instruction table: `grpc.health.v1.Health/Check` on a bare tonic
/// server answering a constant `SERVING`, and on the same builder with `grpc::HealthService`
/// answering `Check("")` from the monitor.
fn grpc_setups() -> Vec<Setup> {
    const CHECK: &str = "/grpc.health.v1.Health/Check";
    vec![
        Setup {
            protocol: Protocol::Grpc,
            ..Setup::new(
                "(h) bare tonic, constant SERVING: gRPC Check",
                "grpc-constant",
                CHECK,
            )
        },
        Setup {
            protocol: Protocol::Grpc,
            ..Setup::new(
                "(h) tonic + grpc::HealthService: gRPC Check(\"\")",
                "grpc-tower-health",
                CHECK,
            )
        },
    ]
}

/// Instructions the server executes per request, counted by callgrind: the difference
/// between a run of `MANY` requests and a run of `FEW`, divided by the difference, so that
/// start-up and shut-down cancel out. Repeatable whatever else the machine is doing.
async fn instructions_per_request(setup: &Setup) -> Result<f64, Box<dyn Error>> {
    const FEW: u64 = 2_000;
    const MANY: u64 = 12_000;
    let few = instructions(setup, FEW).await?;
    let many = instructions(setup, MANY).await?;
    Ok((many as f64 - few as f64) / (MANY - FEW) as f64)
}

/// Total instructions of one server run under callgrind that answers `requests` requests.
async fn instructions(setup: &Setup, requests: u64) -> Result<u64, Box<dyn Error>> {
    let output = std::env::temp_dir().join(format!(
        "tower-health-storm-{}.callgrind",
        std::process::id()
    ));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", output.display()))
        .arg(std::env::current_exe()?)
        // No monitor round during the count: only the requests differ between the two runs.
        .env("TOWER_HEALTH_READINESS_INTERVAL", "1h")
        // glibc's per-thread cache large enough to hold every chunk a request frees, so that
        // which size classes happen to be cached (it moved a row by up to 2% between two
        // builds of the same code) does not count; allocations still cost their fast path.
        .env("GLIBC_TUNABLES", "glibc.malloc.tcache_count=4096")
        .env("TOWER_HEALTH_HEALTH_INTERVAL", "1h")
        // The first round, the one every request is answered from, runs under valgrind (many
        // times slower): a deadline it cannot miss, so that it is `ready` in every run.
        .env("TOWER_HEALTH_READINESS_TIMEOUT", "30s")
        .stderr(Stdio::null());
    let server = ServerProcess::spawn(command, setup)?;
    let addr: SocketAddr = ([127, 0, 0, 1], server.port).into();
    match setup.protocol {
        Protocol::Http1 => http1_requests(addr, setup.path, requests).await?,
        Protocol::Grpc => grpc_checks(addr, setup.path, requests).await?,
        Protocol::AgentLine => agent_lines(addr, requests).await?,
    }
    server.stop()?;
    let report = std::fs::read_to_string(&output)?;
    match std::env::var_os("STORM_KEEP_CALLGRIND") {
        // For `callgrind_annotate`: where the instructions go.
        Some(dir) => std::fs::rename(
            &output,
            std::path::Path::new(&dir).join(format!(
                "{}{}-{requests}.callgrind",
                setup.server,
                setup.path.replace('/', "_")
            )),
        )?,
        None => std::fs::remove_file(&output)?,
    }
    report
        .lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })
        .and_then(|total| total.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| "no instruction total in the callgrind output".into())
}

/// `requests` sequential `GET path` requests spread over 16 HTTP/1.1 keep-alive connections,
/// each read to its end; every answer must be 200 (a run that counted another answer, a
/// readiness that timed out under valgrind say, would compare other work).
async fn http1_requests(
    addr: SocketAddr,
    path: &'static str,
    requests: u64,
) -> Result<(), Box<dyn Error>> {
    let connections = open(addr, 16).await?;
    let per_connection = requests / connections.len() as u64;
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|sender| {
            tokio::spawn(async move {
                let mut sender = sender.lock().await;
                for _ in 0..per_connection {
                    let mut request = Request::new(Empty::new());
                    *request.uri_mut() = http::Uri::from_static(path);
                    sender.ready().await?;
                    let response = sender.send_request(request).await?;
                    let status = response.status();
                    let mut body = response.into_body();
                    while let Some(frame) = body.frame().await {
                        frame?;
                    }
                    if status != StatusCode::OK {
                        return Err(format!("{path} answered {status}, not 200").into());
                    }
                }
                Ok::<_, Box<dyn Error + Send + Sync>>(())
            })
        })
        .collect();
    for task in tasks {
        task.await?.map_err(|error| error as Box<dyn Error>)?;
    }
    Ok(())
}

/// `requests` unary gRPC calls to `path` (`grpc.health.v1.Health/Check` with an empty
/// `HealthCheckRequest`), sequential on each of 16 h2c connections, as a tonic client sends
/// them; every answer is read to its trailers and must be `grpc-status: 0` with `SERVING`.
async fn grpc_checks(
    addr: SocketAddr,
    path: &'static str,
    requests: u64,
) -> Result<(), Box<dyn Error>> {
    // The 5-byte gRPC frame header (not compressed, length 0) of the empty request message.
    const EMPTY_REQUEST: &[u8] = &[0, 0, 0, 0, 0];
    // `HealthCheckResponse { status: SERVING }` (field 1, varint 1) in its frame.
    const SERVING: &[u8] = &[0, 0, 0, 0, 2, 0x08, 0x01];
    const CONNECTIONS: u64 = 16;
    let uri: http::Uri = format!("http://{addr}{path}").parse()?;
    let mut tasks = Vec::new();
    for _ in 0..CONNECTIONS {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await?;
        tokio::spawn(connection);
        let uri = uri.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..requests / CONNECTIONS {
                let request = Request::post(uri.clone())
                    .header(http::header::CONTENT_TYPE, "application/grpc")
                    .header(http::header::TE, "trailers")
                    .body(Full::new(Bytes::from_static(EMPTY_REQUEST)))
                    .map_err(|error| error.to_string())?;
                sender.ready().await.map_err(|error| error.to_string())?;
                let response = sender
                    .send_request(request)
                    .await
                    .map_err(|error| error.to_string())?;
                let (parts, mut body) = response.into_parts();
                let mut message = Vec::new();
                let mut trailers = None;
                while let Some(frame) = body.frame().await {
                    match frame.map_err(|error| error.to_string())?.into_data() {
                        Ok(data) => message.extend_from_slice(&data),
                        Err(frame) => trailers = frame.into_trailers().ok(),
                    }
                }
                // A trailers-only answer (an error) carries its status in the headers.
                let status = trailers
                    .as_ref()
                    .and_then(|trailers| trailers.get("grpc-status"))
                    .or_else(|| parts.headers.get("grpc-status"));
                if parts.status != StatusCode::OK
                    || status.is_none_or(|status| status != "0")
                    || message != SERVING
                {
                    return Err(format!(
                        "{path} answered HTTP {}, grpc-status {status:?}, message {message:?} \
                         (grpc-message {:?}), not grpc-status 0 and SERVING {SERVING:?}",
                        parts.status,
                        trailers
                            .as_ref()
                            .and_then(|trailers| trailers.get("grpc-message"))
                            .or_else(|| parts.headers.get("grpc-message")),
                    ));
                }
            }
            Ok::<_, String>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// `requests` connections to the HAProxy agent, 16 at a time, each read to its end as
/// HAProxy's `agent-check` reads it; every line must be `up ready 100%`.
async fn agent_lines(addr: SocketAddr, requests: u64) -> Result<(), Box<dyn Error>> {
    use tokio::io::AsyncReadExt;
    const CONNECTIONS: u64 = 16;
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            tokio::spawn(async move {
                let mut line = Vec::new();
                for _ in 0..requests / CONNECTIONS {
                    let mut stream = TcpStream::connect(addr).await?;
                    stream.set_nodelay(true)?;
                    line.clear();
                    stream.read_to_end(&mut line).await?;
                    if line != b"up ready 100%\n" {
                        let line = String::from_utf8_lossy(&line).into_owned();
                        return Err(format!("the agent said {line:?}, not up ready 100%").into());
                    }
                }
                Ok::<_, Box<dyn Error + Send + Sync>>(())
            })
        })
        .collect();
    for task in tasks {
        task.await?.map_err(|error| error as Box<dyn Error>)?;
    }
    Ok(())
}

async fn print_instruction_table(setups: &[Setup]) -> Result<(), Box<dyn Error>> {
    println!("## Server instructions per request (callgrind)\n");
    println!("| server | instructions/req | x (a) |");
    println!("|---|---|---|");
    eprintln!("callgrind: (a) bare hyper");
    let baseline = instructions_per_request(&setups[0].baseline()).await?;
    println!("| (a) bare hyper, 200 ok | {baseline:.0} | 1.00 |");
    let mut by_label = Vec::new();
    for setup in setups {
        eprintln!("callgrind: {} {}", setup.server, setup.path);
        let per_request = instructions_per_request(setup).await?;
        println!(
            "| {} | {per_request:.0} | {:.3} |",
            setup.label,
            per_request / baseline
        );
        by_label.push((setup.label, per_request));
    }
    let find = |label: &str| {
        by_label
            .iter()
            .find(|(name, _)| *name == label)
            .map(|(_, value)| *value)
    };
    // The ratios the targets are stated in, each between two rows of this run.
    let ratios = [
        (
            "Ordinary route, the stack under ServiceBuilder / the bare router",
            "(c) axum, with stack: GET /",
            "(c) axum, no stack: GET /",
        ),
        (
            "Ordinary route, health.around(router) / the bare router",
            "(f) axum, health.around(router): GET /",
            "(c) axum, no stack: GET /",
        ),
        (
            "Ordinary route, Router::layer x3 / the bare router",
            "(g) axum, Router::layer x3: GET /",
            "(c) axum, no stack: GET /",
        ),
        (
            "/health/ready, health.around(router) / the static route",
            "(f) axum, health.around(router): /health/ready",
            "(f) axum, static route: /health/ready",
        ),
        (
            "/health/ready, Router::layer x3 / the static route",
            "(g) axum, Router::layer x3: /health/ready",
            "(f) axum, static route: /health/ready",
        ),
        (
            "/health/ready?verbose / /health/ready (hyper-util)",
            "(b) stack, hyper-util: /health/ready?verbose",
            "(b) stack, hyper-util: /health/ready",
        ),
        (
            "/health/ready?exclude=hold / /health/ready (hyper-util)",
            "(b) stack, hyper-util: /health/ready?exclude=hold",
            "(b) stack, hyper-util: /health/ready",
        ),
        (
            "/metrics on the layer / /health/ready (hyper-util)",
            "(b) stack + metrics path, hyper-util: /metrics",
            "(b) stack, hyper-util: /health/ready",
        ),
        (
            "/metrics on the admin server / /health/ready (hyper-util)",
            "(e) admin server: /metrics",
            "(b) stack, hyper-util: /health/ready",
        ),
        (
            "gRPC Check, tonic + grpc::HealthService / bare tonic answering a constant",
            "(h) tonic + grpc::HealthService: gRPC Check(\"\")",
            "(h) bare tonic, constant SERVING: gRPC Check",
        ),
        (
            "details never, /health/ready / the default's (hyper-util)",
            "(b) stack, details never, hyper-util: /health/ready",
            "(b) stack, hyper-util: /health/ready",
        ),
    ];
    println!();
    for (what, numerator, denominator) in ratios {
        if let (Some(numerator), Some(denominator)) = (find(numerator), find(denominator)) {
            println!("- {what}: **{:.3}**", numerator / denominator);
        }
    }
    println!();
    Ok(())
}

/// Per setup: its runs and the baseline runs measured just before each of them.
type Results = Vec<(Vec<Run>, Vec<Run>)>;

async fn interleaved(
    setups: &[Setup],
    rounds: usize,
    measure: Duration,
    stats: Option<&DatabaseStats>,
) -> Result<Results, Box<dyn Error>> {
    let mut results: Results = vec![(Vec::new(), Vec::new()); setups.len()];
    for round in 0..rounds {
        for (index, setup) in setups.iter().enumerate() {
            eprintln!(
                "round {}/{rounds}: {} {} ({} connections)",
                round + 1,
                setup.server,
                setup.path,
                setup.connections
            );
            let baseline = run(&setup.baseline(), measure, stats).await?;
            let measured = run(setup, measure, stats).await?;
            results[index].0.push(measured);
            results[index].1.push(baseline);
        }
    }
    Ok(results)
}

/// Starts the server, warms up, measures, stops the server and reads what it cost.
async fn run(
    setup: &Setup,
    measure: Duration,
    stats: Option<&DatabaseStats>,
) -> Result<Run, Box<dyn Error>> {
    let before = match stats {
        Some(stats) => Some(stats.transactions().await?),
        None => None,
    };
    let server = ServerProcess::start(setup)?;
    let addr: SocketAddr = ([127, 0, 0, 1], server.port).into();
    let connections = open(addr, setup.connections).await?;

    let (warmup, _) = load(&connections, setup.path, Duration::from_millis(500)).await;
    let cpu_before = server.cpu_time()?;
    let started = Instant::now();
    let (latencies, failures) = load(&connections, setup.path, measure).await;
    let elapsed = started.elapsed();
    let cpu = server.cpu_time()? - cpu_before;
    drop(connections);
    let checks = server.stop()?;

    let transactions = match (stats, before) {
        (Some(stats), Some(before)) => Some(stats.settled_transactions(before).await?),
        _ => None,
    };
    let requests = latencies.len() as u64;
    let mut sorted = latencies;
    sorted.sort_unstable();
    let percentile = |p: f64| {
        sorted
            .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
            .map_or(0.0, |&micros| f64::from(micros))
    };
    Ok(Run {
        lifetime_requests: requests + warmup.len() as u64,
        failures,
        rps: requests as f64 / elapsed.as_secs_f64(),
        p50_us: percentile(0.50),
        p99_us: percentile(0.99),
        max_us: percentile(1.0),
        cpu_us_per_request: cpu.as_secs_f64() * 1e6 / requests.max(1) as f64,
        transactions,
        checks,
    })
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

async fn open(
    addr: SocketAddr,
    count: usize,
) -> Result<Vec<Arc<tokio::sync::Mutex<Sender>>>, Box<dyn Error>> {
    let mut senders = Vec::with_capacity(count);
    for _ in 0..count {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        senders.push(Arc::new(tokio::sync::Mutex::new(sender)));
    }
    Ok(senders)
}

/// Sends requests on every connection, back to back, for `duration`; returns the latency of
/// each answered request in microseconds (whatever its status: a 503 from a stalled database
/// is an answer), and the number of transport failures.
async fn load(
    connections: &[Arc<tokio::sync::Mutex<Sender>>],
    path: &'static str,
    duration: Duration,
) -> (Vec<u32>, u64) {
    let until = Instant::now() + duration;
    let uri = http::Uri::from_static(path);
    let tasks: Vec<_> = connections
        .iter()
        .map(|sender| {
            let (sender, uri) = (sender.clone(), uri.clone());
            tokio::spawn(async move {
                let mut sender = sender.lock().await;
                let mut latencies = Vec::with_capacity(16 * 1024);
                let mut failures = 0;
                while Instant::now() < until {
                    // No Host header: hyper's server does not need one, and leaving it out keeps
                    // the client's own cost (which shares the machine) down.
                    let mut request = Request::new(Empty::new());
                    *request.uri_mut() = uri.clone();
                    let sent = Instant::now();
                    let answered = async {
                        sender.ready().await?;
                        let mut body = sender.send_request(request).await?.into_body();
                        while let Some(frame) = body.frame().await {
                            frame?;
                        }
                        Ok::<_, hyper::Error>(())
                    }
                    .await;
                    match answered {
                        Ok(()) => latencies
                            .push(u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX)),
                        Err(_) => {
                            failures += 1;
                            break;
                        }
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut failures = 0;
    for task in tasks {
        let (latencies, failed) = task.await.unwrap();
        all.extend(latencies);
        failures += failed;
    }
    (all, failures)
}

struct ServerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    port: u16,
    clock_ticks: f64,
}

impl ServerProcess {
    fn start(setup: &Setup) -> Result<Self, Box<dyn Error>> {
        let mut command = Command::new(std::env::current_exe()?);
        command.stderr(Stdio::inherit());
        Self::spawn(command, setup)
    }

    /// Starts `command` (this binary, or a wrapper such as valgrind running it) as `setup`'s
    /// server and reads the port it listens on.
    fn spawn(mut command: Command, setup: &Setup) -> Result<Self, Box<dyn Error>> {
        let mut child = command
            .env("STORM_SERVE", setup.server)
            .env("STORM_DATABASES", setup.databases.to_string())
            .env("STORM_STALLED", setup.stalled.to_string())
            .env("STORM_DATABASE_URL", bench_url())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let port = line
            .strip_prefix("PORT ")
            .and_then(|port| port.trim().parse().ok())
            .ok_or_else(|| format!("the server said {line:?}"))?;
        let ticks = Command::new("getconf").arg("CLK_TCK").output()?;
        let clock_ticks = String::from_utf8(ticks.stdout)?.trim().parse()?;
        Ok(Self {
            child,
            stdin,
            stdout,
            port,
            clock_ticks,
        })
    }

    /// utime + stime of the server process.
    fn cpu_time(&self) -> Result<Duration, Box<dyn Error>> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        let after_name = &stat[stat.rfind(')').ok_or("bad stat")? + 2..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
        Ok(Duration::from_secs_f64(ticks / self.clock_ticks))
    }

    /// Closes stdin, waits for the exit, returns the health checks the server started.
    fn stop(mut self) -> Result<Option<u64>, Box<dyn Error>> {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest)?;
        self.child.wait()?;
        Ok(rest
            .lines()
            .find_map(|line| line.strip_prefix("CHECKS "))
            .and_then(|checks| checks.trim().parse().ok()))
    }
}

/// Reads the transactions of the bench database, connected to another database so that the
/// readings do not count themselves.
struct DatabaseStats {
    client: tokio_postgres::Client,
}

impl DatabaseStats {
    async fn connect() -> Option<Self> {
        let url = std::env::var("STORM_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .ok()?;
        tokio::spawn(connection);
        let exists = client
            .query_opt(
                "SELECT 1 FROM pg_database WHERE datname = $1",
                &[&BENCH_DATABASE],
            )
            .await
            .ok()?;
        if exists.is_none() {
            client
                .batch_execute(&format!("CREATE DATABASE {BENCH_DATABASE}"))
                .await
                .ok()?;
        }
        Some(Self { client })
    }

    async fn transactions(&self) -> Result<i64, Box<dyn Error>> {
        let row = self
            .client
            .query_one(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1",
                &[&BENCH_DATABASE],
            )
            .await?;
        Ok(row.get(0))
    }

    /// Transactions since `before`, once the server's backends have published theirs (they
    /// do when they disconnect, a moment after the server exits).
    async fn settled_transactions(&self, before: i64) -> Result<i64, Box<dyn Error>> {
        let mut last = self.transactions().await?;
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = self.transactions().await?;
            if now == last {
                break;
            }
            last = now;
        }
        Ok(last - before)
    }
}

fn bench_url() -> String {
    let base = std::env::var("STORM_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    match base.rfind('/') {
        Some(slash)
            if base[..slash].contains("://") && base[..slash].ends_with(|c: char| c != '/') =>
        {
            format!("{}/{BENCH_DATABASE}", &base[..slash])
        }
        _ => base,
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

// ------------------------------------------------------------------------------------------
// Reporting.
// ------------------------------------------------------------------------------------------

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

fn print_main_table(setups: &[Setup], results: &Results) {
    let handrolled = setups
        .iter()
        .position(|setup| setup.server == "handrolled-axum");
    println!("## Main table: 64 connections, one database\n");
    println!(
        "| server | req/s | x (a) req/s | CPU µs/req | x (a) CPU | p50 µs | p99 µs | max µs | x (d) req/s | DB xacts / requests (whole run) | checks |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let baseline_runs: Vec<Run> = results
        .iter()
        .flat_map(|(_, baselines)| baselines.clone())
        .collect();
    print_row("(a) bare hyper, 200 ok", &baseline_runs, None, None);
    for (index, setup) in setups.iter().enumerate() {
        let (runs, baselines) = &results[index];
        let handrolled_runs = handrolled.map(|index| &results[index].0);
        print_row(setup.label, runs, Some(baselines), handrolled_runs);
    }
    println!();
    // (c) as one figure: the ordinary route with the stack against the same app without it,
    // each normalised by the baseline run just before it.
    let position = |label: &str| setups.iter().position(|setup| setup.label == label);
    if let (Some(with), Some(without)) = (
        position("(c) axum, with stack: GET /"),
        position("(c) axum, no stack: GET /"),
    ) {
        let normalised = |index: usize| -> Vec<f64> {
            let (runs, baselines) = &results[index];
            runs.iter()
                .zip(baselines)
                .map(|(run, base)| run.cpu_us_per_request / base.cpu_us_per_request)
                .collect()
        };
        let ratios = normalised(with)
            .iter()
            .zip(normalised(without))
            .map(|(with, without)| with / without)
            .collect();
        println!(
            "Ordinary route, CPU per request with the stack / without: {:.3}\n",
            median(ratios)
        );
    }
}

fn print_row(
    label: &str,
    runs: &[Run],
    baselines: Option<&Vec<Run>>,
    handrolled: Option<&Vec<Run>>,
) {
    let pick = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
    let ratio = |f: fn(&Run) -> f64, against: &[Run]| {
        median(
            runs.iter()
                .zip(against)
                .map(|(run, base)| f(run) / f(base))
                .collect(),
        )
    };
    let rps_a = baselines.map_or("1.00".to_owned(), |base| {
        format!("{:.2}", ratio(|run| run.rps, base))
    });
    let cpu_a = baselines.map_or("1.00".to_owned(), |base| {
        format!("{:.2}", ratio(|run| run.cpu_us_per_request, base))
    });
    let rps_d = handrolled.map_or("".to_owned(), |handrolled| {
        format!("{:.1}", ratio(|run| run.rps, handrolled))
    });
    let transactions = median(
        runs.iter()
            .map(|run| run.transactions.unwrap_or(-1) as f64)
            .collect(),
    );
    let requests = median(
        runs.iter()
            .map(|run| run.lifetime_requests as f64)
            .collect(),
    );
    let xacts = if transactions < 0.0 {
        "n/a".to_owned()
    } else {
        format!("{transactions:.0} / {requests:.0} req")
    };
    let checks = median(
        runs.iter()
            .map(|run| run.checks.unwrap_or(0) as f64)
            .collect(),
    );
    let failures: u64 = runs.iter().map(|run| run.failures).sum();
    let label = if failures > 0 {
        format!("{label} ({failures} failed)")
    } else {
        label.to_owned()
    };
    println!(
        "| {label} | {:.0} | {rps_a} | {:.2} | {cpu_a} | {:.0} | {:.0} | {:.0} | {rps_d} | {xacts} | {checks:.0} |",
        pick(|run| run.rps),
        pick(|run| run.cpu_us_per_request),
        pick(|run| run.p50_us),
        pick(|run| run.p99_us),
        pick(|run| run.max_us),
    );
}

fn print_scale_table(setups: &[Setup], results: &Results) {
    println!("## Scale: `/health/ready` through the stack (hyper-util)\n");
    println!(
        "| connections | databases | stalled | req/s | x (a) req/s | CPU µs/req | x (a) CPU | p50 µs | p99 µs | max µs | DB xacts | checks |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (setup, (runs, baselines)) in setups.iter().zip(results) {
        let pick = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
        let ratio = |f: fn(&Run) -> f64| {
            median(
                runs.iter()
                    .zip(baselines)
                    .map(|(run, base)| f(run) / f(base))
                    .collect(),
            )
        };
        let failures: u64 = runs.iter().map(|run| run.failures).sum();
        println!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |{}",
            setup.connections,
            setup.databases + setup.stalled,
            setup.stalled,
            pick(|run| run.rps),
            ratio(|run| run.rps),
            pick(|run| run.cpu_us_per_request),
            ratio(|run| run.cpu_us_per_request),
            pick(|run| run.p50_us),
            pick(|run| run.p99_us),
            pick(|run| run.max_us),
            pick(|run| run.transactions.unwrap_or(0) as f64),
            pick(|run| run.checks.unwrap_or(0) as f64),
            if failures > 0 {
                format!(" {failures} failed")
            } else {
                String::new()
            },
        );
    }
    println!();
}
