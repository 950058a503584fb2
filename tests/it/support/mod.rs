//! Test helpers: a real server on 127.0.0.1, a real client, and real faults (a listener that
//! never answers, a closed port, a PostgreSQL proxy that can freeze or cut its connections).
//!
//! Each module here is built with the features of the tests that use it, so that every
//! feature set builds it without dead code. (`tests/fault_matrix.rs` and `tests/malformed.rs`,
//! binaries of their own, include this module too, and use a part of it.)
// `pub` for the test modules beside it; the crate's `unreachable_pub` is for the library.
#![allow(unreachable_pub)]

use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};
use tower::BoxError;
use tower_health::postgres::PostgresCheck;
use tower_health::{HealthConfig, HealthHandle, HealthLayer, HealthMonitor};

#[cfg(all(feature = "page", feature = "redis"))]
#[macro_use]
pub mod browser;
// The fleet (`redis`) starts the `server` example by its path only; the malformed corpus
// (`tests/malformed.rs`, `admin`) runs it too.
#[cfg(any(
    feature = "axum",
    feature = "grpc",
    feature = "redis",
    feature = "admin"
))]
#[cfg_attr(not(any(feature = "axum", feature = "grpc")), allow(dead_code))]
pub mod child;
#[cfg(all(
    feature = "deadpool",
    feature = "sqlx-0-8",
    feature = "sqlx-0-9",
    feature = "redis"
))]
pub mod contract;
// The backends' contract (`contract`), the tonic example's health check (`tonic_example`) and
// the fault matrix (`tests/fault_matrix.rs`, a binary of its own, whose features include
// `grpc`). The file allows what a build leaves unused itself, for the soak bench.
#[cfg(any(
    all(
        feature = "deadpool",
        feature = "sqlx-0-8",
        feature = "sqlx-0-9",
        feature = "redis"
    ),
    feature = "grpc"
))]
pub mod fault_proxy;
#[cfg(any(feature = "axum", feature = "grpc"))]
pub mod frames;
#[cfg(feature = "grpc")]
pub mod grpc;
#[cfg(feature = "haproxy-agent")]
#[macro_use]
pub mod haproxy;
#[cfg(feature = "redis")]
pub mod logs;
#[cfg(any(feature = "axum", feature = "grpc"))]
pub mod prober;
// The proxies users run, started from the guide's configurations for the axum example.
#[cfg(all(feature = "axum", feature = "admin"))]
#[macro_use]
pub mod proxy;
#[cfg(all(feature = "axum", feature = "admin"))]
pub mod proxy_config;
#[cfg(feature = "admin")]
pub mod raw;
#[cfg(feature = "redis")]
#[macro_use]
pub mod redis_server;
#[cfg(all(feature = "redis-cluster", feature = "redis-sentinel"))]
pub mod redis_topologies;
pub mod schema;
pub mod schema_errors;
#[cfg(any(feature = "admin", feature = "axum"))]
pub mod slow_reader;
#[cfg(feature = "redis")]
pub mod tcp_proxy;
#[cfg(feature = "grpc")]
pub mod venv;
#[cfg(feature = "axum")]
pub mod websocket;
// `process.rs` (what a process holds, from `/proc`) is not a module of the tests here: the
// fault matrix, the malformed corpus and the soak bench include it by path.

/// The bound on any single wait of a test (a request, a connection, a task): generous, a guard
/// against hanging rather than a measurement.
pub const LIMIT: Duration = Duration::from_secs(30);

/// Awaits `future` for at most [`LIMIT`], failing the test with `what` when it takes longer.
pub async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(LIMIT, future).await {
        Ok(output) => output,
        Err(_) => panic!("{what}: not done within {LIMIT:?}"),
    }
}

#[cfg(any(feature = "haproxy-agent", all(feature = "axum", feature = "admin")))]
/// The program `name` (a load balancer the tests start), if this machine has one on the
/// `PATH` (or in `/usr/sbin`). Under `CI` a missing one fails the test (`.ci/run` installs
/// it: `install` says how); elsewhere the test is skipped, saying so.
pub fn tool(name: &str, install: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is not installed and CI is set; install it ({install})"
        );
        // Written to the process's stderr directly: the harness captures `eprintln!`.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {name} is not installed ({install}); set CI to make this a failure"
        );
    }
    found
}

#[cfg(feature = "grpc")]
/// The Python of the tests' own virtual environment, with PyPI's `grpcio` (see
/// [`venv::python_with_grpcio`]), which `.ci/run` makes. Under `CI` a missing one fails the
/// test; elsewhere the test is skipped, saying so.
pub fn python_with_grpcio() -> Option<std::path::PathBuf> {
    match venv::python_with_grpcio() {
        Ok(python) => Some(python),
        Err(missing) => {
            assert!(std::env::var_os("CI").is_none(), "{missing}; CI is set");
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: {missing}; set CI to make this a failure"
            );
            None
        }
    }
}

#[cfg(any(feature = "haproxy-agent", all(feature = "axum", feature = "admin")))]
/// A GET through a load balancer's `frontend` on a connection of its own: the body of a 200
/// (the test applications answer their name), or why it failed.
pub async fn get_through(frontend: SocketAddr, path: &str) -> Result<String, String> {
    let client = HyperClient::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Empty<Bytes>>();
    let request = Request::get(format!("http://{frontend}{path}"))
        .body(Empty::new())
        .unwrap();
    let response = tokio::time::timeout(LIMIT, client.request(request))
        .await
        .map_err(|_| format!("{path}: no answer within {LIMIT:?}"))?
        .map_err(|error| format!("{path}: {error:?}"))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| format!("{path}: body: {error:?}"))?
        .to_bytes();
    let body = String::from_utf8_lossy(&body).into_owned();
    if status == StatusCode::OK {
        Ok(body)
    } else {
        Err(format!("{path}: {status} {body}"))
    }
}

/// The PostgreSQL the tests run against (`TEST_DATABASE_URL`, default the local one).
pub fn pg_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// [`pg_url`] with `params` (`key=value&...`) appended to its query.
pub fn pg_url_with(params: &str) -> String {
    let url = pg_url();
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{params}")
}

/// The address of [`pg_url`]'s server.
pub fn pg_addr() -> SocketAddr {
    let url = pg_url();
    let config: tokio_postgres::Config = url.parse().expect("TEST_DATABASE_URL parses");
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(host) => host.clone(),
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(_) => panic!("the tests need a TCP address"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let ip = if host == "localhost" {
        "127.0.0.1".to_owned()
    } else {
        host
    };
    format!("{ip}:{port}").parse().expect("an IP address")
}

/// Whether PostgreSQL answers. Under `CI` an unreachable server fails the test instead of
/// skipping it.
pub async fn postgres_available() -> bool {
    let url = pg_url();
    let connected = tokio::time::timeout(
        Duration::from_secs(5),
        tokio_postgres::connect(&url, tokio_postgres::NoTls),
    )
    .await;
    match connected {
        Ok(Ok((_client, connection))) => {
            drop(connection);
            true
        }
        other => {
            let why = match other {
                Ok(Err(error)) => error.to_string(),
                _ => "timed out".to_owned(),
            };
            assert!(
                std::env::var_os("CI").is_none(),
                "PostgreSQL at {url} is unreachable ({why}) and CI is set; start it (src/docs/architecture.md, 'Running the tests')"
            );
            // Written to the process's stderr directly: the test harness captures `eprintln!`
            // of a passing test, and a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: PostgreSQL at {url} is unreachable ({why}); set CI to make this a failure"
            );
            false
        }
    }
}

/// Skips the test (or, under CI, fails it) when PostgreSQL is not there.
#[macro_export]
macro_rules! require_postgres {
    () => {
        if !$crate::support::postgres_available().await {
            return;
        }
    };
}

/// A connection to the test database, for setup and inspection.
pub async fn pg_client() -> tokio_postgres::Client {
    let url = pg_url();
    let connect = tokio_postgres::connect(&url, tokio_postgres::NoTls);
    let (client, connection) = bounded("connecting to the test database", connect)
        .await
        .expect("connect to the test database");
    tokio::spawn(connection);
    client
}

pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A server on 127.0.0.1:0 serving a Tower service over HTTP/1.1; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve<S, B>(service: S) -> TestServer
where
    S: tower::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    TestServer { addr, task }
}

/// The inner application of the tests: answers `inner <path>` to everything.
pub fn app() -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(|request: Request<Incoming>| async move {
        let body = format!("inner {}", request.uri().path());
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
    })
}

/// Short cadences for tests: readiness every 100 ms, health every 200 ms, 300 ms deadline.
pub fn fast() -> HealthConfig {
    HealthConfig::new()
        .readiness_interval(Duration::from_millis(100))
        .health_interval(Duration::from_millis(200))
        .readiness_timeout(Duration::from_millis(300))
}

/// Spawns a monitor for `config` and serves `HealthLayer` over [`app`].
pub async fn health_server(config: HealthConfig) -> (HealthHandle, TestServer) {
    let health = HealthMonitor::spawn(config).unwrap();
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(HealthLayer::new(&health))
            .service(app()),
    )
    .await;
    (health, server)
}

/// A check through a dedicated pool to `url`.
pub fn postgres(url: &str) -> PostgresCheck {
    PostgresCheck::connect(url).expect("a valid connection string")
}

/// Waits until both cadences have published a real verdict.
pub async fn first_rounds(health: &HealthHandle) {
    let done = eventually(LIMIT, || async {
        health.view().readiness.checked_at.is_some()
            && health.view().health.checked_at.is_some()
            && health.view().pool.checked_at.is_some()
    })
    .await;
    assert!(done, "the monitor published no verdict within {LIMIT:?}");
}

/// Polls `condition` every 10 ms until it holds or `limit` passes; returns whether it held.
/// (A bound against hanging, not a measurement.)
pub async fn eventually<F, Fut>(limit: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A keep-alive HTTP/1.1 client.
#[derive(Clone)]
pub struct Client {
    inner: HyperClient<HttpConnector, Empty<Bytes>>,
}

/// A response, collected.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "body is not JSON ({error}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

impl Client {
    pub fn new() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Self {
            inner: HyperClient::builder(TokioExecutor::new()).build(connector),
        }
    }

    pub async fn get(&self, addr: SocketAddr, path: &str) -> Reply {
        self.request(Method::GET, addr, path).await
    }

    pub async fn request(&self, method: Method, addr: SocketAddr, path: &str) -> Reply {
        self.try_request(method, addr, path)
            .await
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// A GET whose failure (or lack of an answer within [`LIMIT`]) is reported, not a panic.
    pub async fn try_get(&self, addr: SocketAddr, path: &str) -> Result<Reply, String> {
        self.try_request(Method::GET, addr, path).await
    }

    pub async fn try_request(
        &self,
        method: Method,
        addr: SocketAddr,
        path: &str,
    ) -> Result<Reply, String> {
        self.try_request_with(method, addr, path, &[]).await
    }

    /// A GET with extra headers, its failure reported as [`Client::try_get`] does.
    pub async fn try_get_with(
        &self,
        addr: SocketAddr,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        self.try_request_with(Method::GET, addr, path, headers)
            .await
    }

    pub async fn try_request_with(
        &self,
        method: Method,
        addr: SocketAddr,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        let what = format!("{method} {path}");
        let mut request = Request::builder()
            .method(method)
            .uri(format!("http://{addr}{path}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Empty::new()).unwrap();
        let exchange = async {
            let response = self
                .inner
                .request(request)
                .await
                .map_err(|error| format!("{what}: request failed: {error:?}"))?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|error| format!("{what}: body failed: {error:?}"))?
                .to_bytes();
            if parts.headers.get(http::header::CONTENT_TYPE)
                == Some(&http::HeaderValue::from_static("application/json"))
            {
                schema::validate(path, parts.status.as_u16(), &body);
            }
            Ok(Reply {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(LIMIT, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("{what}: no answer within {LIMIT:?}")))
    }
}

/// A TCP listener that accepts connections and never answers on them: a stalled database.
pub struct StalledListener {
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl StalledListener {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        Self {
            addr,
            accepted,
            task,
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@{}/postgres", self.addr)
    }
}

impl Drop for StalledListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An address nothing listens on: connections are refused.
pub async fn refused_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

/// A TCP proxy in front of PostgreSQL that can freeze the traffic of its open connections (new
/// ones flow, as after a network path to one connection went dark), cut them, and counts the
/// simple-protocol queries (`Q` messages) clients send through it.
pub struct PgProxy {
    pub addr: SocketAddr,
    state: Arc<ProxyState>,
    task: JoinHandle<()>,
}

struct ProxyState {
    /// One switch per connection opened so far.
    frozen: Mutex<Vec<watch::Sender<bool>>>,
    queries: AtomicU64,
    connections: AtomicUsize,
    pumps: Mutex<Vec<AbortHandle>>,
}

impl PgProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(ProxyState {
            frozen: Mutex::new(Vec::new()),
            queries: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            pumps: Mutex::new(Vec::new()),
        });
        let accept_state = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                accept_state.connections.fetch_add(1, Ordering::SeqCst);
                let (frozen_tx, frozen) = watch::channel(false);
                accept_state.frozen.lock().unwrap().push(frozen_tx);
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let state = accept_state.clone();
                let to_server =
                    tokio::spawn(pump(client_read, server_write, state, frozen.clone(), true));
                let state = accept_state.clone();
                let to_client = tokio::spawn(pump(server_read, client_write, state, frozen, false));
                let mut pumps = accept_state.pumps.lock().unwrap();
                pumps.push(to_server.abort_handle());
                pumps.push(to_client.abort_handle());
            }
        });
        Self { addr, state, task }
    }

    /// In clear even with the `rustls` feature (whose default `prefer` would encrypt): the
    /// proxy counts the protocol messages it forwards.
    pub fn url(&self) -> String {
        format!("postgres://postgres@{}/postgres?sslmode=disable", self.addr)
    }

    /// Stops forwarding on the connections open now, in both directions; they stay open.
    /// Connections opened later flow.
    pub fn freeze(&self) {
        for frozen in self.state.frozen.lock().unwrap().iter() {
            frozen.send_replace(true);
        }
    }

    /// Lets every frozen connection flow again.
    pub fn thaw(&self) {
        for frozen in self.state.frozen.lock().unwrap().iter() {
            frozen.send_replace(false);
        }
    }

    /// Closes every proxied connection (new ones are still accepted).
    pub fn cut(&self) {
        for pump in self.state.pumps.lock().unwrap().drain(..) {
            pump.abort();
        }
    }

    /// Simple-protocol queries clients sent through the proxy.
    pub fn queries(&self) -> u64 {
        self.state.queries.load(Ordering::SeqCst)
    }

    /// Connections opened through the proxy.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.cut();
        self.task.abort();
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    state: Arc<ProxyState>,
    mut frozen: watch::Receiver<bool>,
    from_client: bool,
) {
    let mut parser = FrontendParser::default();
    let mut buf = vec![0; 16 * 1024];
    loop {
        let Ok(read) = from.read(&mut buf).await else {
            return;
        };
        if read == 0 {
            return;
        }
        if frozen.wait_for(|frozen| !frozen).await.is_err() {
            return;
        }
        if from_client {
            let queries = parser.feed(&buf[..read]);
            state.queries.fetch_add(queries, Ordering::SeqCst);
        }
        if to.write_all(&buf[..read]).await.is_err() {
            return;
        }
    }
}

/// Splits the client-to-server byte stream into PostgreSQL protocol messages.
#[derive(Default)]
struct FrontendParser {
    started: bool,
    pending: Vec<u8>,
}

impl FrontendParser {
    /// Feeds bytes; returns how many `Q` (simple query) messages they completed.
    fn feed(&mut self, bytes: &[u8]) -> u64 {
        const SSL_REQUEST: u32 = 80_877_103;
        const GSSENC_REQUEST: u32 = 80_877_104;
        self.pending.extend_from_slice(bytes);
        let mut queries = 0;
        loop {
            if !self.started {
                // Untyped messages: length (including itself), then a code.
                if self.pending.len() < 8 {
                    return queries;
                }
                let len = u32::from_be_bytes(self.pending[..4].try_into().unwrap()) as usize;
                if self.pending.len() < len {
                    return queries;
                }
                let code = u32::from_be_bytes(self.pending[4..8].try_into().unwrap());
                self.pending.drain(..len);
                self.started = code != SSL_REQUEST && code != GSSENC_REQUEST;
                continue;
            }
            if self.pending.len() < 5 {
                return queries;
            }
            let len = u32::from_be_bytes(self.pending[1..5].try_into().unwrap()) as usize;
            if self.pending.len() < len + 1 {
                return queries;
            }
            if self.pending[0] == b'Q' {
                queries += 1;
            }
            self.pending.drain(..=len);
        }
    }
}

/// An application for the load tests: `/wait` holds its request until the test adds a permit
/// to `gate` (each request takes one); every path answers `inner <path>`.
pub fn gated_app(
    gate: Arc<tokio::sync::Semaphore>,
) -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |request: Request<Incoming>| {
        let gate = gate.clone();
        async move {
            if request.uri().path() == "/wait" {
                gate.acquire().await.unwrap().forget();
            }
            let body = format!("inner {}", request.uri().path());
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
        }
    })
}
