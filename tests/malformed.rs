//! The malformed-input corpus, over real sockets, against the three servers an operator
//! runs: the layer stack behind a real hyper server (HTTP/1 and h2c), the admin server
//! (HTTP/1 only), and the `server` example as a child process (axum, HTTP/1 and h2c).
//!
//! Dot segments and encoded slashes in probe paths, odd `nocache` queries, an 8 KB query,
//! invalid UTF-8 and control bytes, 150 headers, oversized headers, HTTP/1.0, pipelining,
//! slow-loris headers, garbage credentials, and HTTP/2 floods of streams and resets. The
//! outcome: no panic, no 5xx but a probe's meant 503, and every connection cleaned up once
//! the clients are gone (the server's sockets counted in `/proc/net/tcp`, and the example's
//! open file descriptors). `-- --nocapture` prints each server's outcomes.

// A file of the integration tests' helpers on its own, as the soak bench includes it, and the
// helpers (tests/it/support), of which this binary uses a part.
#[allow(dead_code)] // `rss_kib` is the fault matrix's
#[path = "it/support/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "it/support/mod.rs"]
mod support;

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use process::open_fds;
use support::child::Example;
use support::raw::RawConnection;
use support::{Client, LIMIT, bounded, eventually};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tower::ServiceBuilder;
use tower_health::DrainLayer;
use tower_health::access::AccessKeys;
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::{HealthConfig, HealthLayer, PingLayer};

const OPERATOR_KEY: &str = "corpus-operator-key-0123456789";
const VIEWER_KEY: &str = "corpus-viewer-key-0123456789";

/// Streams per HTTP/2 flood (and per reset storm): bounded, well past the server's
/// concurrent-stream limit.
const H2_STREAMS: usize = 1000;

/// How long an entry waits for an answer before it counts as "the server waits for the
/// rest of the request" (a bound, not a measurement).
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

// ===== the servers =====

/// One server under test.
struct Target {
    name: &'static str,
    addr: SocketAddr,
    /// Its readiness and health paths.
    ready: &'static str,
    health: &'static str,
    /// Whether it speaks h2c (prior knowledge).
    h2: bool,
    /// The example's process, whose file descriptors are counted.
    pid: Option<u32>,
}

/// The layer stack users build, behind hyper-util's auto server (HTTP/1 and h2c), with
/// details for key holders only: the stack of the README.
struct LayerServer {
    addr: SocketAddr,
    accept: JoinHandle<()>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    drain: tower_health::DrainHandle,
}

impl LayerServer {
    async fn start() -> Self {
        let keys = AccessKeys::new()
            .operator(OPERATOR_KEY)
            .readonly(VIEWER_KEY);
        let config = support::fast().database("default", support::postgres(&support::pg_url()));
        let health = HealthLayer::new(tower_health::HealthMonitor::spawn(config).unwrap())
            .details(tower_health::config::Details::Authorized)
            .access_keys(&keys);
        let drain = health.handle().drain().clone();
        let drain_layer = DrainLayer::new(&drain);
        support::first_rounds(&health.handle()).await;
        let service = ServiceBuilder::new()
            .layer(PingLayer::new())
            .layer(health)
            .layer(drain_layer)
            .service(support::app());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = tokio::spawn({
            let connections = connections.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let service = TowerToHyperService::new(service.clone());
                    let task = tokio::spawn(async move {
                        let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                    connections.lock().unwrap().push(task);
                }
            }
        });
        Self {
            addr,
            accept,
            connections,
            drain,
        }
    }

    /// Connection tasks that panicked.
    async fn panicked(&self) -> usize {
        let tasks: Vec<_> = self.connections.lock().unwrap().drain(..).collect();
        let mut panicked = 0;
        for task in tasks {
            if task.is_finished() && task.await.is_err_and(|error| error.is_panic()) {
                panicked += 1;
            }
        }
        panicked
    }
}

impl Drop for LayerServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

// ===== counting what is left open =====

/// Sockets of the server listening on `port` that are still open: every `/proc/net/tcp`
/// entry with that local port, but the listener itself and `TIME_WAIT` (which holds no
/// descriptor).
fn server_sockets(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields
                .get(1)
                .and_then(|local| local.rsplit(':').next())
                .and_then(|hex| u16::from_str_radix(hex, 16).ok());
            let state = fields.get(3).copied().unwrap_or("");
            local_port == Some(port) && state != "0A" && state != "06"
        })
        .count()
}

/// Counts panics anywhere in this test process.
fn panics() -> &'static AtomicUsize {
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
    &PANICS
}

// ===== the corpus =====

/// What one entry sends.
enum Send {
    /// Raw bytes on a fresh connection; up to `responses` answers are read.
    Raw { bytes: Vec<u8>, responses: usize },
    /// Headers a byte at a time, never finished; the client leaves after 2 s.
    SlowLoris,
    /// `H2_STREAMS` concurrent h2c requests on one connection.
    H2Flood,
    /// `H2_STREAMS` h2c requests, each reset (dropped) right after it is sent.
    H2Resets,
}

struct Entry {
    name: String,
    send: Send,
}

fn request(path: &[u8], host: &str, headers: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = b"GET ".to_vec();
    bytes.extend_from_slice(path);
    bytes.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    bytes.extend_from_slice(host.as_bytes());
    bytes.extend_from_slice(b"\r\n");
    for header in headers {
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"\r\n");
    bytes
}

fn raw(name: impl Into<String>, bytes: Vec<u8>) -> Entry {
    Entry {
        name: name.into(),
        send: Send::Raw {
            bytes,
            responses: 1,
        },
    }
}

fn corpus(target: &Target) -> Vec<Entry> {
    let host = target.addr.to_string();
    let get = |path: &str| request(path.as_bytes(), &host, &[]);
    let ready = target.ready;
    let health = target.health;
    let (ready_dir, ready_last) = ready.rsplit_once('/').unwrap();
    let mut entries = vec![
        raw("dot segments", get(&format!("{health}/..{ready}"))),
        raw("dot segment ./", get(&format!("/.{ready}"))),
        raw(
            "encoded dot segments",
            get(&format!("{health}/%2e%2e{ready}")),
        ),
        raw("encoded slash", get(&format!("{ready_dir}%2F{ready_last}"))),
        raw("doubled slash", get(&format!("/{ready}"))),
        raw("upper case", get(&ready.to_uppercase())),
        raw(
            "nocache=true&nocache=false",
            get(&format!("{health}?nocache=true&nocache=false")),
        ),
        raw(
            "nocache=false&nocache=true",
            get(&format!("{health}?nocache=false&nocache=true")),
        ),
        raw("nocache=TRUE", get(&format!("{health}?nocache=TRUE"))),
        raw("nocache=yes", get(&format!("{health}?nocache=yes"))),
        raw("nocache= (empty)", get(&format!("{health}?nocache="))),
        raw("nocache=%74rue", get(&format!("{health}?nocache=%74rue"))),
        raw("=&&&nocache", get(&format!("{health}?=&&&nocache"))),
        raw(
            "8 KB query",
            get(&format!("{health}?{}", "a=b&".repeat(2048))),
        ),
        raw(
            "8 KB query on readiness",
            get(&format!("{ready}?nocache&{}", "x".repeat(8192))),
        ),
        raw("invalid UTF-8 in the path", {
            let mut path = ready.as_bytes().to_vec();
            path.extend_from_slice(b"\xff\xfe");
            request(&path, &host, &[])
        }),
        raw("encoded invalid UTF-8", get(&format!("{ready}%ff%fe"))),
        raw("control byte in the path", {
            let mut path = ready.as_bytes().to_vec();
            path.insert(2, 0x01);
            request(&path, &host, &[])
        }),
        raw("NUL in the path", {
            let mut path = ready.as_bytes().to_vec();
            path.push(0);
            request(&path, &host, &[])
        }),
        raw("DEL in the path", {
            let mut path = ready.as_bytes().to_vec();
            path.push(0x7f);
            request(&path, &host, &[])
        }),
        raw("150 headers", {
            let headers: Vec<Vec<u8>> = (0..150)
                .map(|index| format!("X-Header-{index}: value").into_bytes())
                .collect();
            request(ready.as_bytes(), &host, &headers)
        }),
        raw("one 64 KB header", {
            let header = format!("X-Big: {}", "a".repeat(64 * 1024)).into_bytes();
            request(ready.as_bytes(), &host, &[header])
        }),
        raw("headers of 640 KB in all", {
            let headers: Vec<Vec<u8>> = (0..40)
                .map(|index| format!("X-Big-{index}: {}", "b".repeat(16 * 1024)).into_bytes())
                .collect();
            request(ready.as_bytes(), &host, &headers)
        }),
        raw(
            "HTTP/1.0 without Host",
            format!("GET {ready} HTTP/1.0\r\n\r\n").into_bytes(),
        ),
        raw(
            "HTTP/1.0 keep-alive",
            format!("GET {ready} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").into_bytes(),
        ),
        raw("HTTP/0.9", format!("GET {ready}\r\n").into_bytes()),
        raw(
            "HTTP/2.0 in an HTTP/1 request line",
            format!("GET {ready} HTTP/2.0\r\nHost: {host}\r\n\r\n").into_bytes(),
        ),
        raw(
            "no method",
            format!(" {ready} HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes(),
        ),
        raw("absolute form", get(&format!("http://{host}{ready}"))),
        raw("asterisk form", get("*")),
        raw(
            "two Host headers",
            request(ready.as_bytes(), &host, &[b"Host: evil.example".to_vec()]),
        ),
        raw(
            "header without a colon",
            request(ready.as_bytes(), &host, &[b"X-No-Colon".to_vec()]),
        ),
        raw(
            "obsolete line folding",
            request(ready.as_bytes(), &host, &[b"X-Folded: a\r\n b".to_vec()]),
        ),
        raw(
            "bare LF line ends",
            format!("GET {ready} HTTP/1.1\nHost: {host}\n\n").into_bytes(),
        ),
        raw(
            "Content-Length and chunked",
            request(
                ready.as_bytes(),
                &host,
                &[
                    b"Content-Length: 5".to_vec(),
                    b"Transfer-Encoding: chunked".to_vec(),
                ],
            ),
        ),
        raw(
            "negative Content-Length",
            request(ready.as_bytes(), &host, &[b"Content-Length: -1".to_vec()]),
        ),
        raw("body on a GET probe", {
            let mut bytes = request(ready.as_bytes(), &host, &[b"Content-Length: 5".to_vec()]);
            bytes.extend_from_slice(b"hello");
            bytes
        }),
        raw(
            "unknown method on a probe",
            format!("BREW {ready} HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes(),
        ),
        raw(
            "HTTP/2 preface on HTTP/1",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        ),
        raw("binary garbage", (0..=255u8).cycle().take(4096).collect()),
        Entry {
            name: "64 pipelined requests".into(),
            send: Send::Raw {
                bytes: get(ready).repeat(64),
                responses: 64,
            },
        },
        Entry {
            name: "slow-loris headers".into(),
            send: Send::SlowLoris,
        },
    ];
    let authorization: Vec<(&str, Vec<u8>)> = vec![
        ("Authorization: Bearer", b"Authorization: Bearer".to_vec()),
        (
            "Authorization: Bearer (space)",
            b"Authorization: Bearer ".to_vec(),
        ),
        (
            "Authorization: Bearer <invalid UTF-8>",
            b"Authorization: Bearer \xff\xfe\x80".to_vec(),
        ),
        (
            "Authorization: Bearer <16 KB>",
            format!("Authorization: Bearer {}", "k".repeat(16 * 1024)).into_bytes(),
        ),
        (
            "Authorization: Basic",
            b"Authorization: Basic Zm9vOmJhcg==".to_vec(),
        ),
        (
            "Authorization: Bearer a b",
            b"Authorization: Bearer a b".to_vec(),
        ),
        (
            "Authorization: Bearer<TAB>key",
            format!("Authorization: Bearer\t{VIEWER_KEY}").into_bytes(),
        ),
        (
            "Authorization: Bearer Bearer",
            b"Authorization: Bearer Bearer".to_vec(),
        ),
        ("Authorization: ,,,,", b"Authorization: ,,,,".to_vec()),
        ("Authorization: (empty)", b"Authorization:".to_vec()),
        (
            "Authorization: key prefix",
            format!("Authorization: Bearer {}", &VIEWER_KEY[..10]).into_bytes(),
        ),
        (
            "X-Baldur-Admin-Key: <0x80>",
            b"X-Baldur-Admin-Key: \x80\x81".to_vec(),
        ),
        (
            "X-Baldur-Admin-Key: (empty)",
            b"X-Baldur-Admin-Key:".to_vec(),
        ),
    ];
    for (name, header) in authorization {
        entries.push(raw(name, request(health.as_bytes(), &host, &[header])));
    }
    entries.push(raw(
        "two Authorization headers",
        request(
            health.as_bytes(),
            &host,
            &[
                format!("Authorization: Bearer {VIEWER_KEY}").into_bytes(),
                b"Authorization: Bearer wrong-key-0123456789".to_vec(),
            ],
        ),
    ));
    if target.h2 {
        entries.push(Entry {
            name: format!("h2c: {H2_STREAMS} concurrent streams"),
            send: Send::H2Flood,
        });
        entries.push(Entry {
            name: format!("h2c: {H2_STREAMS} streams reset at once"),
            send: Send::H2Resets,
        });
    }
    entries
}

/// What one entry got back.
#[derive(Default)]
struct Outcome {
    statuses: Vec<u16>,
    closed: bool,
    note: String,
    /// Bodies of 5xx answers, for the failure message.
    errors: Vec<String>,
}

impl Outcome {
    fn summary(&self) -> String {
        let mut parts = Vec::new();
        let mut statuses = self.statuses.clone();
        statuses.dedup();
        if !statuses.is_empty() {
            let mut counted: Vec<String> = Vec::new();
            let mut sorted = self.statuses.clone();
            sorted.sort_unstable();
            let mut index = 0;
            while index < sorted.len() {
                let status = sorted[index];
                let count = sorted[index..].iter().take_while(|&&s| s == status).count();
                counted.push(if count == 1 {
                    status.to_string()
                } else {
                    format!("{status} x{count}")
                });
                index += count;
            }
            parts.push(counted.join(", "));
        }
        if self.closed {
            parts.push("closed".to_owned());
        }
        if !self.note.is_empty() {
            parts.push(self.note.clone());
        }
        parts.join("; ")
    }
}

async fn send(target: &Target, entry: &Entry) -> Outcome {
    match &entry.send {
        Send::Raw { bytes, responses } => {
            let mut outcome = Outcome::default();
            let mut connection = RawConnection::open(target.addr).await;
            // The server may answer and close before it has read it all.
            let _ = tokio::time::timeout(ANSWER_WITHIN, connection.try_send_raw(bytes)).await;
            for _ in 0..*responses {
                let Ok(response) =
                    tokio::time::timeout(ANSWER_WITHIN, connection.response(false)).await
                else {
                    outcome.note =
                        format!("no answer within {ANSWER_WITHIN:?} (waits for the rest)");
                    break;
                };
                match response {
                    Some(response) => {
                        if response.status >= 500 {
                            outcome.errors.push(response.body.clone());
                        }
                        outcome.statuses.push(response.status);
                    }
                    None => {
                        outcome.closed = true;
                        break;
                    }
                }
            }
            outcome
        }
        Send::SlowLoris => slow_loris(target).await,
        Send::H2Flood => h2_flood(target, false).await,
        Send::H2Resets => h2_flood(target, true).await,
    }
}

async fn slow_loris(target: &Target) -> Outcome {
    let mut stream = bounded("connecting", TcpStream::connect(target.addr))
        .await
        .unwrap();
    let started = Instant::now();
    let head = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nX-Slow: ",
        target.ready, target.addr
    );
    let mut outcome = Outcome::default();
    if stream.write_all(head.as_bytes()).await.is_err() {
        outcome.closed = true;
        return outcome;
    }
    // A byte every 100 ms for 2 s, then the client gives up.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if stream.write_all(b"a").await.is_err() {
            outcome.closed = true;
            outcome.note = format!(
                "closed by the server after {:.1} s",
                started.elapsed().as_secs_f64()
            );
            return outcome;
        }
    }
    // Still open? (Reading on the whole stream: closing our half would tell the server we
    // are done.)
    let mut byte = [0u8; 1];
    let answered = tokio::time::timeout(
        Duration::from_millis(200),
        tokio::io::AsyncReadExt::read(&mut stream, &mut byte),
    )
    .await;
    outcome.note = match answered {
        Ok(Ok(0) | Err(_)) => "closed by the server within 2.2 s".to_owned(),
        Ok(Ok(_)) => "answered within 2.2 s".to_owned(),
        Err(_) => {
            "held for 2 s, until the client left (the server sets no header timeout)".to_owned()
        }
    };
    outcome
}

async fn h2_flood(target: &Target, reset: bool) -> Outcome {
    let stream = bounded("connecting", TcpStream::connect(target.addr))
        .await
        .unwrap();
    let mut outcome = Outcome::default();
    let (sender, connection) = match hyper::client::conn::http2::handshake::<_, _, Empty<Bytes>>(
        TokioExecutor::new(),
        TokioIo::new(stream),
    )
    .await
    {
        Ok(pair) => pair,
        Err(error) => {
            outcome.note = format!("no h2c: {error}");
            return outcome;
        }
    };
    let driver = tokio::spawn(connection);
    let uri = format!("http://{}{}", target.addr, target.ready);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..H2_STREAMS {
        let mut sender = sender.clone();
        let request = Request::get(&uri).body(Empty::<Bytes>::new()).unwrap();
        tasks.spawn(async move {
            if reset {
                // Sent, then dropped at once: the client resets the stream.
                let _ = tokio::time::timeout(Duration::ZERO, sender.send_request(request)).await;
                return None;
            }
            let response = tokio::time::timeout(LIMIT, sender.send_request(request)).await;
            match response {
                Ok(Ok(response)) => {
                    let status = response.status().as_u16();
                    let _ = response.into_body().collect().await;
                    Some(Ok(status))
                }
                Ok(Err(error)) => Some(Err(error.to_string())),
                Err(_) => Some(Err("no answer".to_owned())),
            }
        });
    }
    let mut refused = 0;
    while let Some(result) = bounded("the h2c streams", tasks.join_next()).await {
        match result.expect("a stream task does not panic") {
            Some(Ok(status)) => outcome.statuses.push(status),
            Some(Err(_)) => refused += 1,
            None => {}
        }
    }
    // The connection still answers after the storm; if the server closed it (h2's defence
    // against reset floods sends GOAWAY), a new connection does.
    let mut sender = sender;
    let last = Request::get(&uri).body(Empty::<Bytes>::new()).unwrap();
    match tokio::time::timeout(LIMIT, sender.send_request(last)).await {
        Ok(Ok(response)) => outcome.note = format!("then {}", response.status().as_u16()),
        Ok(Err(_)) | Err(_) => {
            let reply = Client::new().try_get(target.addr, target.ready).await;
            outcome.note = match reply {
                Ok(reply) => format!(
                    "connection closed by the server (GOAWAY); a new connection answers {}",
                    reply.status.as_u16()
                ),
                Err(error) => format!("then failed: {error}"),
            };
        }
    }
    if refused > 0 {
        outcome
            .note
            .push_str(&format!("; {refused} streams refused"));
    }
    drop(sender);
    driver.abort();
    outcome
}

/// Whether `status` is one the crate means: anything under 500, or a probe's 503.
fn meant(status: u16, body: &str) -> bool {
    status < 500
        || (status == StatusCode::SERVICE_UNAVAILABLE.as_u16() && body.contains("\"status\""))
}

/// Runs the corpus against `target`, prints the outcomes, and returns the problems.
async fn run_corpus(target: &Target) -> Vec<String> {
    let panics_before = panics().load(Ordering::SeqCst);
    let fds_before = target.pid.map(open_fds);
    let sockets_before = server_sockets(target.addr.port());
    let mut problems = Vec::new();
    let mut table = format!(
        "\nmalformed-input corpus against {} ({})\n| input | answer |\n|---|---|\n",
        target.name, target.addr
    );
    for entry in corpus(target) {
        let outcome = send(target, &entry).await;
        for (index, status) in outcome.statuses.iter().enumerate() {
            let body = outcome.errors.get(index).map_or("", String::as_str);
            if !meant(*status, body) {
                problems.push(format!("{}: {}: {status} {body}", target.name, entry.name));
            }
        }
        if outcome.note.contains("then failed") || outcome.note.contains("then no answer") {
            problems.push(format!("{}: {}: {}", target.name, entry.name, outcome.note));
        }
        table.push_str(&format!("| {} | {} |\n", entry.name, outcome.summary()));
    }
    // Still answering after the corpus.
    let client = Client::new();
    match client.try_get(target.addr, target.ready).await {
        Ok(reply) if reply.status == StatusCode::OK => {}
        other => problems.push(format!(
            "{}: readiness after the corpus: {other:?}",
            target.name
        )),
    }
    drop(client);
    // Every connection cleaned up once the clients are gone.
    let port = target.addr.port();
    let cleaned = eventually(LIMIT, || async { server_sockets(port) <= sockets_before }).await;
    let sockets_after = server_sockets(port);
    if !cleaned {
        problems.push(format!(
            "{}: {sockets_after} connections still open (before: {sockets_before})",
            target.name
        ));
    }
    let mut fds = String::new();
    if let (Some(pid), Some(before)) = (target.pid, fds_before) {
        let settled = eventually(LIMIT, || async { open_fds(pid) <= before }).await;
        let after = open_fds(pid);
        fds = format!(", open file descriptors {before} -> {after}");
        if !settled {
            problems.push(format!(
                "{}: {after} file descriptors open (before: {before})",
                target.name
            ));
        }
    }
    let panicked = panics().load(Ordering::SeqCst) - panics_before;
    if panicked > 0 {
        problems.push(format!("{}: {panicked} panics", target.name));
    }
    table.push_str(&format!(
        "server connections {sockets_before} -> {sockets_after}{fds}; panics: {panicked}\n"
    ));
    let _ = writeln!(std::io::stderr(), "{table}");
    problems
}

// ===== the tests =====

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_against_the_layer_stack() {
    require_postgres!();
    panics();
    let server = LayerServer::start().await;
    let target = Target {
        name: "the layer stack (hyper-util auto: HTTP/1 and h2c)",
        addr: server.addr,
        ready: "/health/ready",
        health: "/health",
        h2: true,
        pid: None,
    };
    let mut problems = run_corpus(&target).await;
    let panicked = server.panicked().await;
    if panicked > 0 {
        problems.push(format!("{panicked} connection tasks panicked"));
    }
    // Every request was counted out of the drain, resets included.
    let idle = eventually(LIMIT, || async { server.drain.in_flight() == 0 }).await;
    if !idle {
        problems.push(format!(
            "{} requests still counted in flight",
            server.drain.in_flight()
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_against_the_admin_server() {
    require_postgres!();
    panics();
    let config: HealthConfig =
        support::fast().database("default", support::postgres(&support::pg_url()));
    let health = tower_health::HealthMonitor::spawn(config).unwrap();
    support::first_rounds(&health).await;
    let admin = AdminServer::new(
        AdminConfig::new()
            .port(0)
            .operator_key(OPERATOR_KEY)
            .readonly_key(VIEWER_KEY)
            .details(tower_health::config::Details::Authorized)
            .header_timeout(Duration::from_millis(500)),
        &health,
    )
    .start()
    .await
    .unwrap();
    let target = Target {
        name: "the admin server (HTTP/1)",
        addr: admin.local_addr(),
        ready: "/readiness",
        health: "/health",
        h2: false,
        pid: None,
    };
    let problems = run_corpus(&target).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Which of two credentials counts is ambiguous: neither does (the first used to).
    let mut connection = RawConnection::open(admin.local_addr()).await;
    let viewer = format!("Authorization: Bearer {VIEWER_KEY}");
    let response = connection
        .get(
            "/health",
            &[
                viewer.as_bytes(),
                b"Authorization: Bearer wrong-key-0123456789",
            ],
        )
        .await;
    assert_eq!(response.status, 401, "{}", response.body);
    assert_eq!(
        connection.get("/health", &[viewer.as_bytes()]).await.status,
        200
    );
}

// The server example is built with the `axum` feature only.
#[cfg(feature = "axum")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_against_the_server_example() {
    require_postgres!();
    panics();
    let addr = support::refused_addr().await;
    let process = Example::spawn(
        "server",
        &[
            ("LISTEN_ADDR", addr.to_string()),
            ("DATABASE_URL", support::pg_url()),
            ("TOWER_HEALTH_READINESS_INTERVAL", "100ms".into()),
            ("TOWER_HEALTH_DETAILS", "authorized".into()),
            ("TOWER_HEALTH_ADMIN_KEY", OPERATOR_KEY.into()),
            ("TOWER_HEALTH_ADMIN_READONLY_KEY", VIEWER_KEY.into()),
            ("RUST_LOG", "warn".into()),
        ],
    );
    let client = Client::new();
    let up = eventually(LIMIT, || async {
        client
            .try_get(addr, "/health/ready")
            .await
            .is_ok_and(|reply| reply.status == StatusCode::OK)
    })
    .await;
    assert!(up, "the server example did not become ready");
    drop(client);
    let target = Target {
        name: "the server example (axum::serve: HTTP/1 and h2c)",
        addr,
        ready: "/health/ready",
        health: "/health",
        h2: true,
        pid: Some(process.id()),
    };
    let mut problems = run_corpus(&target).await;
    let stderr = process.kill();
    if stderr.contains("panicked") {
        problems.push(format!("the example panicked:\n{stderr}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
