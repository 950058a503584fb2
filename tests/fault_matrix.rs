//! The fault matrix: the faults checks meet in production, injected through a TCP proxy in
//! front of the real PostgreSQL (or inside the check), with 1 database and with 4.
//!
//! For each cell, while probes hammer every endpoint at every detail level:
//!
//! - every probe is answered (before [`LIMIT`]; the slowest answer per endpoint is printed,
//!   not asserted: a loaded machine must not fail the suite);
//! - the verdict names the outcome and the category by the round after the fault is in place
//!   (rounds counted by the monitor, not by a clock), in the verdict and in the body;
//! - it recovers by the round after the fault ends;
//! - no body, at any detail level, and no log line carries the password or a connection
//!   string; at `details = never`, no body names a host, a user or driver text either.
//!
//! With 4 databases the fault hits two of them (`default` and `db1`) and the other two must
//! stay ready: the round's one deadline covers all four in parallel.
//!
//! The Redis cells put the fault proxy in front of a `redis-server` of the test's own, started
//! with a password (`--requirepass`, so that the secret search has a Redis password to look
//! for; the shared Redis has none, and is not reconfigured), used both by a check
//! (`redis::Redis`, component `sessions`) and as the shared cache (declared as operators
//! do, with `TOWER_HEALTH_REDIS_URL`): both must read `degraded` with the reason while the
//! local verdict is served and readiness stays ready, and after recovery Redis holds one
//! connection of each, none left behind by the fault.
//!
//! The gRPC cell storms one `Watch` service with status changes while two watchers never read
//! their streams: the reading watcher gets every change, `Check` and the probes answer, what a
//! never-reading stream holds is bounded by its HTTP/2 window (not a queue of every change),
//! and the server's tasks go back to what they were once the clients go.
//!
//! `cargo test --all-features --test fault_matrix -- --nocapture` prints the table.

// A file of the integration tests' helpers on its own, as the soak bench includes it, and the
// helpers (tests/it/support), of which this binary uses a part.
#[allow(dead_code)] // `open_fds` is the malformed corpus's
#[path = "it/support/process.rs"]
mod process;
#[allow(dead_code)]
#[path = "it/support/mod.rs"]
mod support;

use std::future::Future;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use http::StatusCode;
use process::rss_kib;
use support::fault_proxy::FaultProxy;
use support::grpc::next_status;
use support::logs::Captured;
use support::redis_server::RedisServer;
use support::{Client, LIMIT, TestServer, eventually, serve};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tonic::Streaming;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use tower::ServiceBuilder;
use tower_health::access::AccessKeys;
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::check::{
    CheckError, CheckErrorKind, CheckFuture, CheckReport, DatabaseCheck, PoolStats,
};
use tower_health::component::{self, ComponentSpec, ComponentStatus};
use tower_health::grpc::pb::health_check_response::ServingStatus as Wire;
use tower_health::grpc::pb::health_client::HealthClient;
use tower_health::grpc::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_health::grpc::{HealthService, ServingStatus};
use tower_health::postgres::PostgresCheck;
use tower_health::postgres::{bb8, bb8_postgres, tokio_postgres};
use tower_health::redis::Redis;
use tower_health::side_port::SidePortHandle;
use tower_health::verdict::{Cause, CheckStatus};
use tower_health::{
    HealthConfig, HealthHandle, HealthLayer, HealthMonitor, Probe, config::Details, verdict::Status,
};

/// The password of every connection string (the local server trusts every login and ignores
/// it): the one secret that must never show.
const PASSWORD: &str = "Matrix-Pw-7f3a9c1e";
/// A role the server does not know: the authentication failure.
const UNKNOWN_ROLE: &str = "th_matrix_no_such_role";
/// The password of the Redis cells' own server (`--requirepass`) and of their Redis URL.
const REDIS_PASSWORD: &str = "Redis-Pw-c41d9e07b2";
/// The Redis check's component name; the shared cache shows as `shared_cache`.
const REDIS_COMPONENT: &str = "sessions";
const SHARED_CACHE: &str = "shared_cache";
const VIEWER_KEY: &str = "matrix-viewer-key-0123456789";
const OPERATOR_KEY: &str = "matrix-operator-key-0123456789";

const BUDGET: Duration = Duration::from_millis(300);
const READINESS_EVERY: Duration = Duration::from_millis(100);
const HEALTH_EVERY: Duration = Duration::from_millis(200);
const CHECK_LIMIT: Duration = Duration::from_secs(1);
/// The slow query's sleep: past the budget, within the check limit (so it ends by itself).
const SLOW_QUERY: Duration = Duration::from_millis(700);

/// Flapping Redis: down (every connection reset, the port refused) until the verdict and the
/// body have named it, then up and down again faster than the health rounds (every 200 ms,
/// plus the round), so that checks land in either phase.
const FLAP_DOWN: Duration = Duration::from_millis(150);
const FLAP_UP: Duration = Duration::from_millis(150);
/// The fast flaps the fault lasts at least, and at most.
const MIN_FLAPS: usize = 8;
const MAX_FLAPS: usize = 1_000;

/// The gRPC cell: the changes of the stormed service's status, each awaited by the reading
/// watcher before the next.
const STORM_CHANGES: usize = 2_000;
const STORM_SERVICE: &str = "storm.v1.Storm";
/// The HTTP/2 stream window of the clients that never read (bytes). Small, so that the
/// window fills within the storm: from then on the server sends nothing more on their
/// streams, and holds only the latest status. (The default window, 2 MiB in hyper's client,
/// would take some 300,000 changes to fill.)
const NEVER_READER_WINDOW: u32 = 1024;
/// The smallest `Watch` message on the wire: the gRPC prefix (5 bytes) of an empty
/// `HealthCheckResponse` (`UNKNOWN` is proto3's default, encoded as nothing).
const SMALLEST_MESSAGE: u32 = 5;

/// The round after the fault: the round in progress when it took hold may have checked
/// before it, the next one cannot have.
const ROUNDS_TO_SHOW: u64 = 2;
const ROUNDS_TO_RECOVER: u64 = 2;

// ===== the cells =====

type Action = fn(Arc<Rig>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// One row of the matrix.
struct Cell {
    name: &'static str,
    /// How the databases are checked.
    checks: Checks,
    /// What the rig has besides the databases.
    with: With,
    /// What the verdict says while the fault lasts.
    expect: Expect,
    /// Puts the fault in place; returns once it is.
    start: Action,
    /// Ends the fault; returns once what it left running has drained.
    end: Action,
}

/// How each database is checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Checks {
    /// `PostgresCheck::connect` through the database's proxy.
    Connect,
    /// As `Connect`, switchable to a login as a role the server does not know.
    SwitchToUnknownRole,
    /// As `Connect`, switchable to `sslmode=verify-full` against a name the server's
    /// certificate does not carry.
    SwitchToWrongTlsName,
    /// `SELECT pg_sleep(..)` through a bb8 pool, whose sleep the cell sets.
    SlowQuery,
    /// The default database through `PostgresCheck::new(application pool)`.
    ApplicationPool,
}

/// What a cell's rig has besides the databases, the `worker` component and the servers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum With {
    Nothing,
    /// A `redis-server` of its own behind a fault proxy, as a check and as the shared cache.
    Redis,
    /// A tonic server of `grpc.health.v1`, on a runtime of its own.
    Grpc,
}

#[derive(Copy, Clone, Debug)]
enum Expect {
    /// The faulted databases read `status` with `kind`; the others stay ready.
    Databases(CheckStatus, CheckErrorKind),
    /// Readiness stays ready; health is degraded by the saturated pool.
    Saturated,
    /// The component's last check reads `check` with `kind`; health is degraded.
    Component(&'static str, CheckErrorKind),
    /// The Redis component and the shared cache read `degraded` with one of the kinds;
    /// health is degraded, the verdict is this process's own, readiness stays ready.
    Redis(&'static [CheckErrorKind]),
    /// The verdict does not change: health stays healthy, readiness ready (the fault is the
    /// gRPC cell's, whose observations are its own).
    Unaffected,
}

impl Expect {
    /// The cadence whose rounds decide it.
    fn cadence(self) -> Cadence {
        match self {
            Self::Databases(..) => Cadence::Readiness,
            Self::Saturated | Self::Component(..) | Self::Redis(..) | Self::Unaffected => {
                Cadence::Health
            }
        }
    }
}

fn matrix() -> Vec<Cell> {
    vec![
        Cell {
            name: "refused (server shut down)",
            checks: Checks::Connect,
            with: With::Nothing,
            expect: Expect::Databases(CheckStatus::Failed, CheckErrorKind::Refused),
            start: |rig| {
                Box::pin(async move {
                    for proxy in rig.faulted() {
                        proxy.refuse().await;
                        proxy.close();
                    }
                })
            },
            end: |rig| Box::pin(async move { rig.pass_all().await }),
        },
        Cell {
            name: "stalled at connect",
            checks: Checks::Connect,
            with: With::Nothing,
            expect: Expect::Databases(CheckStatus::TimedOut, CheckErrorKind::Timeout),
            start: |rig| {
                Box::pin(async move {
                    for proxy in rig.faulted() {
                        proxy.freeze().await;
                        proxy.cut();
                    }
                })
            },
            end: |rig| Box::pin(async move { rig.pass_all().await }),
        },
        Cell {
            name: "pooled connection dark mid-query",
            checks: Checks::Connect,
            with: With::Nothing,
            expect: Expect::Databases(CheckStatus::TimedOut, CheckErrorKind::Timeout),
            start: |rig| {
                Box::pin(async move {
                    rig.mark_accepted();
                    for proxy in rig.faulted() {
                        proxy.blackhole();
                    }
                })
            },
            // The dark connection never answers again: the check limit abandons it, and the
            // next check opens a new connection.
            end: |rig| {
                Box::pin(async move {
                    let replaced = eventually(LIMIT, || async {
                        rig.faulted()
                            .zip(rig.marked_accepted())
                            .all(|(proxy, before)| proxy.accepted() > before)
                    })
                    .await;
                    assert!(
                        replaced,
                        "{}: the dark connections were not replaced",
                        rig.cell
                    );
                })
            },
        },
        Cell {
            name: "slow query (pg_sleep past the budget)",
            checks: Checks::SlowQuery,
            with: With::Nothing,
            expect: Expect::Databases(CheckStatus::TimedOut, CheckErrorKind::Timeout),
            start: |rig| {
                Box::pin(async move {
                    for knobs in rig.faulted_knobs() {
                        knobs.sleep_ms.store(millis(SLOW_QUERY), Ordering::SeqCst);
                    }
                })
            },
            end: |rig| {
                Box::pin(async move {
                    for knobs in rig.faulted_knobs() {
                        knobs.sleep_ms.store(0, Ordering::SeqCst);
                    }
                    let drained = eventually(LIMIT, || async {
                        rig.knobs
                            .iter()
                            .all(|knobs| knobs.slow_in_flight.load(Ordering::SeqCst) == 0)
                    })
                    .await;
                    assert!(drained, "{}: a slow query never ended", rig.cell);
                })
            },
        },
        Cell {
            name: "authentication failure (unknown role)",
            checks: Checks::SwitchToUnknownRole,
            with: With::Nothing,
            expect: Expect::Databases(CheckStatus::Failed, CheckErrorKind::Auth),
            start: |rig| Box::pin(async move { rig.switch_faulted(true) }),
            end: |rig| Box::pin(async move { rig.switch_faulted(false) }),
        },
        Cell {
            name: "TLS failure (verify-full, wrong name)",
            checks: Checks::SwitchToWrongTlsName,
            with: With::Nothing,
            expect: Expect::Databases(CheckStatus::Failed, CheckErrorKind::Tls),
            start: |rig| Box::pin(async move { rig.switch_faulted(true) }),
            end: |rig| Box::pin(async move { rig.switch_faulted(false) }),
        },
        Cell {
            name: "database restart (RST all, refuse, accept)",
            checks: Checks::Connect,
            with: With::Nothing,
            expect: Expect::Databases(CheckStatus::Failed, CheckErrorKind::Refused),
            start: |rig| {
                Box::pin(async move {
                    for proxy in rig.faulted() {
                        proxy.refuse().await;
                        proxy.cut();
                    }
                })
            },
            end: |rig| Box::pin(async move { rig.pass_all().await }),
        },
        Cell {
            name: "application pool exhausted by its own traffic",
            checks: Checks::ApplicationPool,
            with: With::Nothing,
            expect: Expect::Saturated,
            start: |rig| Box::pin(async move { rig.exhaust_application_pool().await }),
            end: |rig| Box::pin(async move { rig.release_application_pool().await }),
        },
        Cell {
            name: "component panics",
            checks: Checks::Connect,
            with: With::Nothing,
            expect: Expect::Component("error", CheckErrorKind::Panicked),
            start: |rig| Box::pin(async move { rig.component.store(PANICS, Ordering::SeqCst) }),
            end: |rig| Box::pin(async move { rig.component.store(OK, Ordering::SeqCst) }),
        },
        Cell {
            name: "component never returns",
            checks: Checks::Connect,
            with: With::Nothing,
            expect: Expect::Component("timed_out", CheckErrorKind::Timeout),
            start: |rig| Box::pin(async move { rig.component.store(HANGS, Ordering::SeqCst) }),
            // The hanging check is abandoned at the check limit; the next one answers.
            end: |rig| {
                Box::pin(async move {
                    rig.component.store(OK, Ordering::SeqCst);
                    let started = rig.health.stats().component_checks_started;
                    let replaced = eventually(LIMIT, || async {
                        rig.health.stats().component_checks_started > started
                    })
                    .await;
                    assert!(
                        replaced,
                        "{}: the hanging check was never replaced",
                        rig.cell
                    );
                })
            },
        },
        Cell {
            name: "Redis refused (check and shared cache)",
            checks: Checks::Connect,
            with: With::Redis,
            expect: Expect::Redis(&[CheckErrorKind::Refused]),
            start: |rig| {
                Box::pin(async move {
                    let proxy = &rig.redis().proxy;
                    proxy.refuse().await;
                    proxy.close();
                })
            },
            end: |rig| Box::pin(async move { rig.redis().proxy.pass().await }),
        },
        Cell {
            name: "Redis stalled (check and shared cache)",
            checks: Checks::Connect,
            with: With::Redis,
            expect: Expect::Redis(&[CheckErrorKind::Timeout]),
            start: |rig| Box::pin(async move { rig.redis().proxy.stall().await }),
            // What waited is delivered, late, in order; the next commands are answered.
            end: |rig| Box::pin(async move { rig.redis().proxy.pass().await }),
        },
        Cell {
            name: "Redis flapping (check and shared cache)",
            checks: Checks::Connect,
            with: With::Redis,
            // A flap resets the connections (closed under a command) and refuses new ones.
            expect: Expect::Redis(&[CheckErrorKind::Refused, CheckErrorKind::Closed]),
            start: |rig| Box::pin(async move { rig.start_flapping().await }),
            end: |rig| Box::pin(async move { rig.stop_flapping().await }),
        },
        Cell {
            name: "gRPC Watch clients that never read",
            checks: Checks::Connect,
            with: With::Grpc,
            expect: Expect::Unaffected,
            start: |rig| Box::pin(async move { rig.grpc_storm().await }),
            end: |rig| Box::pin(async move { rig.grpc_clients_go().await }),
        },
    ]
}

// ===== the tests =====

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_matrix_one_database() {
    require_postgres!();
    run_matrix(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_matrix_four_databases() {
    require_postgres!();
    run_matrix(4).await;
}

async fn run_matrix(databases: usize) {
    let logs = capture_logs();
    quiet_component_panics();
    let certificate = server_certificate().await;
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let mut secrets = Vec::new();
    for cell in matrix() {
        if cell.checks == Checks::SwitchToWrongTlsName && certificate.is_none() {
            // As tests/it/tls.rs does: a skip outside CI, a failure under it.
            let why = "the server's certificate (SHOW ssl_cert_file) cannot be read here";
            if std::env::var_os("CI").is_some() {
                failures.push(format!("{}: {why}", cell.name));
            }
            rows.push(Row::skipped(
                cell.name,
                format!("SKIPPED: {why}"),
                "skipped",
            ));
            continue;
        }
        let (row, problems) = run_cell(&cell, databases, certificate.as_deref()).await;
        failures.extend(
            problems
                .iter()
                .map(|problem| format!("{}: {problem}", cell.name)),
        );
        secrets.extend(row.secrets.iter().cloned());
        rows.push(row);
    }
    // Every log line so far (both matrices share the process's subscriber).
    let lines = search(&logs, &secrets);
    let table = render(databases, &rows, &lines);
    let _ = writeln!(std::io::stderr(), "{table}");
    failures.extend(lines.leaks);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ===== one cell =====

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Cadence {
    Readiness,
    Health,
}

fn rounds(health: &HealthHandle, cadence: Cadence) -> u64 {
    let stats = health.stats();
    match cadence {
        Cadence::Readiness => stats.readiness_rounds,
        Cadence::Health => stats.health_rounds,
    }
}

/// The rounds completed when `condition` first holds, waiting on each change of the view
/// (bounded by [`LIMIT`]); `None` if it never does.
async fn rounds_when(
    health: &HealthHandle,
    cadence: Cadence,
    condition: impl Fn(&HealthHandle) -> bool,
) -> Option<u64> {
    let mut views = health.watch();
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if condition(health) {
            return Some(rounds(health, cadence));
        }
        match tokio::time::timeout_at(deadline, views.changed()).await {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return None,
        }
    }
}

async fn run_cell(cell: &Cell, databases: usize, certificate: Option<&str>) -> (Row, Vec<String>) {
    let mut problems = Vec::new();
    let cadence = cell.expect.cadence();
    let rig = Arc::new(Rig::build(cell, databases, certificate).await);
    let probes = Prober::start(&rig);

    let baseline = rounds_when(&rig.health, cadence, |health| {
        rig.recovered(health, cadence)
    })
    .await;
    if baseline.is_none() {
        problems.push(format!(
            "never healthy before the fault: {}",
            rig.describe(cadence)
        ));
    }
    (cell.start)(rig.clone()).await;
    let in_place = rounds(&rig.health, cadence);
    let shown = rounds_when(&rig.health, cadence, |health| {
        rig.faulty(health, cell.expect)
    })
    .await;
    let during = rig.describe(cadence);
    match shown {
        None => problems.push(format!("the fault never showed: {during}")),
        Some(round) if round > in_place + ROUNDS_TO_SHOW => problems.push(format!(
            "the fault showed {} rounds after it took hold, not by the round after",
            round - in_place
        )),
        Some(_) => {}
    }
    if shown.is_some()
        && let Err(problem) = rig.body_names(cell.expect).await
    {
        problems.push(problem);
    }
    rig.named.send_replace(true);
    (cell.end)(rig.clone()).await;
    let ended = rounds(&rig.health, cadence);
    let recovered = rounds_when(&rig.health, cadence, |health| {
        rig.recovered(health, cadence)
    })
    .await;
    match recovered {
        None => problems.push(format!("never recovered: {}", rig.describe(cadence))),
        Some(round) if round > ended + ROUNDS_TO_RECOVER => problems.push(format!(
            "recovered {} rounds after the fault ended, not by the round after",
            round - ended
        )),
        Some(_) => {}
    }
    if cell.with == With::Redis {
        rig.redis_connections_back().await;
    }
    let record = probes.stop().await;
    problems.extend(record.failures.iter().cloned());
    problems.extend(record.leaks.iter().cloned());
    problems.extend(rig.problems.lock().unwrap().drain(..));
    let notes = rig.notes.lock().unwrap().join("; ");
    let row = Row {
        name: cell.name,
        verdict: if notes.is_empty() {
            during
        } else {
            format!("{during}; {notes}")
        },
        shown: shown.map(|round| round.saturating_sub(in_place)),
        recovered: recovered.map(|round| round.saturating_sub(ended)),
        record: Some(record),
        ok: problems.is_empty(),
        skipped: None,
        secrets: rig.secrets(),
    };
    rig.teardown().await;
    (row, problems)
}

// ===== the rig: proxies, checks, monitor, servers =====

const OK: u8 = 0;
const HANGS: u8 = 1;
const PANICS: u8 = 2;

/// What the cells turn, per database.
struct Knobs {
    /// Auth and TLS cells: the check goes through its faulty side.
    faulty: Arc<AtomicBool>,
    /// Slow-query cell: the sleep of the next query.
    sleep_ms: Arc<AtomicU64>,
    slow_in_flight: Arc<AtomicUsize>,
}

struct Rig {
    cell: &'static str,
    names: Vec<String>,
    proxies: Vec<FaultProxy>,
    knobs: Vec<Knobs>,
    /// How many databases the database cells fault: the first half.
    faulted: usize,
    accepted_mark: Mutex<Vec<usize>>,
    /// Every connection string the checks use.
    urls: Vec<String>,
    application_name: String,
    application_pool:
        Option<bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>>,
    holders: Mutex<Vec<JoinHandle<()>>>,
    component: Arc<AtomicU8>,
    health: HealthHandle,
    servers: Vec<(Level, TestServer)>,
    admin: SidePortHandle,
    redis: Option<RedisRig>,
    grpc: Option<GrpcRig>,
    /// Set once the fault of an [`Expect::Unaffected`] cell has run its course.
    fault_done: AtomicBool,
    /// Set once the verdict and the body have named the fault (or failed to in time).
    named: watch::Sender<bool>,
    /// What the cell's own actions saw, for the table.
    notes: Mutex<Vec<String>>,
    /// What the cell's own actions found wrong.
    problems: Mutex<Vec<String>>,
}

/// The Redis cells' Redis: a server of their own, with a password, behind the fault proxy.
struct RedisRig {
    server: RedisServer,
    proxy: FaultProxy,
    /// Through the proxy, with the password: what the check and the shared cache use.
    url: String,
    flapper: Mutex<Option<(watch::Sender<bool>, JoinHandle<()>)>>,
    flaps: AtomicUsize,
}

/// The gRPC cell's server, on a runtime (and thread) of its own: that runtime's live tasks
/// are the server's alone (one per connection, one per stream).
struct GrpcRig {
    addr: std::net::SocketAddr,
    service: HealthService,
    runtime: tokio::runtime::Handle,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
    /// The server's live tasks before any client came.
    tasks_before: AtomicUsize,
    /// The watchers that never read: their channels and streams, kept until the fault ends.
    never_reading: Mutex<Vec<(HealthClient<Channel>, Streaming<HealthCheckResponse>)>>,
}

impl GrpcRig {
    async fn start(health: &HealthHandle) -> Self {
        let service = HealthService::new(health);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the gRPC port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (runtime_tx, runtime_rx) = oneshot::channel();
        let (shutdown, shutdown_rx) = oneshot::channel::<()>();
        let server = service.clone().server();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the gRPC server");
            let _ = runtime_tx.send(runtime.handle().clone());
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
                let _ = tonic::transport::Server::builder()
                    .add_service(server)
                    .serve_with_incoming_shutdown(incoming, async {
                        let _ = shutdown_rx.await;
                    })
                    .await;
            });
        });
        let runtime = support::bounded("the gRPC server's runtime", runtime_rx)
            .await
            .expect("the gRPC server's thread starts");
        Self {
            addr,
            service,
            runtime,
            shutdown: Mutex::new(Some(shutdown)),
            tasks_before: AtomicUsize::new(0),
            never_reading: Mutex::default(),
        }
    }

    /// The server's live tasks now.
    fn tasks(&self) -> usize {
        self.runtime.metrics().num_alive_tasks()
    }

    /// A client over a connection of its own; `window` sets its HTTP/2 stream window.
    async fn client(&self, window: Option<u32>) -> HealthClient<Channel> {
        let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))
            .expect("a valid URI")
            .initial_stream_window_size(window);
        let channel = support::bounded("connecting over HTTP/2", endpoint.connect())
            .await
            .expect("an HTTP/2 connection");
        HealthClient::new(channel)
    }
}

async fn watch_stream(
    client: &mut HealthClient<Channel>,
    service: &str,
) -> Streaming<HealthCheckResponse> {
    let request = HealthCheckRequest {
        service: service.into(),
    };
    support::bounded("Watch", client.watch(request))
        .await
        .expect("Watch is answered")
        .into_inner()
}

/// Clients connected to the Redis at `addr` (`INFO clients`), this one not counted.
async fn redis_clients(addr: std::net::SocketAddr) -> Result<u64, String> {
    let url = format!("redis://:{REDIS_PASSWORD}@{addr}/0");
    let ask = async {
        let client = redis::Client::open(url).map_err(|error| error.to_string())?;
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|error| error.to_string())?;
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query_async(&mut connection)
            .await
            .map_err(|error| error.to_string())?;
        info.lines()
            .find_map(|line| line.strip_prefix("connected_clients:"))
            .and_then(|count| count.trim().parse::<u64>().ok())
            .map(|count| count.saturating_sub(1))
            .ok_or_else(|| format!("no connected_clients in {info:?}"))
    };
    support::bounded("INFO clients", ask).await
}

impl Rig {
    async fn build(cell: &Cell, databases: usize, certificate: Option<&str>) -> Self {
        let application_name = format!(
            "th_matrix_{}_{databases}_{}",
            std::process::id(),
            cell.name.split(' ').next().unwrap_or("cell")
        );
        let redis = match cell.with {
            With::Redis => {
                let server = RedisServer::started(&["--requirepass", REDIS_PASSWORD]).await;
                let proxy = FaultProxy::tcp(server.addr).await;
                let url = format!("redis://:{REDIS_PASSWORD}@{}/0", proxy.addr);
                Some(RedisRig {
                    server,
                    proxy,
                    url,
                    flapper: Mutex::default(),
                    flaps: AtomicUsize::new(0),
                })
            }
            With::Nothing | With::Grpc => None,
        };
        // The shared cache as operators declare it; the check in code, as applications do.
        let config = match &redis {
            Some(redis) => HealthConfig::from_vars([
                ("TOWER_HEALTH_REDIS_URL", redis.url.as_str()),
                ("TOWER_HEALTH_SHARED_PROCESS_ID", "fault-matrix"),
            ])
            .expect("the shared cache's variables")
            .component(ComponentSpec::new(
                REDIS_COMPONENT,
                Redis::connect(&redis.url).expect("a valid Redis URL"),
            )),
            None => HealthConfig::new(),
        };
        let mut config = config
            .readiness_interval(READINESS_EVERY)
            .health_interval(HEALTH_EVERY)
            .readiness_timeout(BUDGET)
            .check_limit(CHECK_LIMIT);
        let mut names = Vec::new();
        let mut proxies = Vec::new();
        let mut knobs = Vec::new();
        let mut urls = Vec::new();
        let mut application_pool = None;
        for index in 0..databases {
            let name = if index == 0 {
                "default".to_owned()
            } else {
                format!("db{index}")
            };
            let proxy = FaultProxy::postgres(support::pg_addr()).await;
            let url = format!(
                "{}&application_name={application_name}_{index}",
                proxy.pg_url("postgres", PASSWORD, "postgres")
            );
            let knob = Knobs {
                faulty: Arc::default(),
                sleep_ms: Arc::default(),
                slow_in_flight: Arc::default(),
            };
            let connect =
                |url: &str| PostgresCheck::connect(url).expect("a valid connection string");
            config = match cell.checks {
                Checks::Connect => config.database(&name, connect(&url)),
                Checks::SwitchToUnknownRole => {
                    let faulty = format!(
                        "{}&application_name={application_name}_{index}",
                        proxy.pg_url(UNKNOWN_ROLE, PASSWORD, "postgres")
                    );
                    let check = Switch {
                        faulty: connect(&faulty),
                        good: connect(&url),
                        on: knob.faulty.clone(),
                    };
                    urls.push(faulty);
                    config.database(&name, check)
                }
                Checks::SwitchToWrongTlsName => {
                    let certificate = certificate.unwrap_or("/nonexistent/server.crt");
                    // The certificate names `localhost`; `127.0.0.1` is not it.
                    let faulty = format!(
                        "postgres://postgres:{PASSWORD}@{}/postgres?sslmode=verify-full&sslrootcert={certificate}&application_name={application_name}_{index}",
                        proxy.addr
                    );
                    let check = Switch {
                        faulty: connect(&faulty),
                        good: connect(&url),
                        on: knob.faulty.clone(),
                    };
                    urls.push(faulty);
                    config.database(&name, check)
                }
                Checks::SlowQuery => {
                    let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
                        url.as_str(),
                        tokio_postgres::NoTls,
                    )
                    .unwrap();
                    let pool = bb8::Pool::builder()
                        .max_size(1)
                        .test_on_check_out(false)
                        .connection_timeout(Duration::from_secs(5))
                        .build_unchecked(manager);
                    let check = SlowQuery {
                        pool,
                        sleep_ms: knob.sleep_ms.clone(),
                        in_flight: knob.slow_in_flight.clone(),
                    };
                    config.database(&name, check)
                }
                Checks::ApplicationPool if index == 0 => {
                    let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
                        url.as_str(),
                        tokio_postgres::NoTls,
                    )
                    .unwrap();
                    let pool = bb8::Pool::builder()
                        .max_size(2)
                        .connection_timeout(LIMIT)
                        .build_unchecked(manager);
                    application_pool = Some(pool.clone());
                    config.database(&name, PostgresCheck::new(pool))
                }
                Checks::ApplicationPool => config.database(&name, connect(&url)),
            };
            urls.push(url);
            names.push(name);
            proxies.push(proxy);
            knobs.push(knob);
        }
        let component = Arc::new(AtomicU8::new(OK));
        config = config.component(ComponentSpec::new("worker", switchable(&component)));
        let health = HealthMonitor::spawn(config).unwrap();
        let keys = AccessKeys::new()
            .operator(OPERATOR_KEY)
            .readonly(VIEWER_KEY);
        let mut servers = Vec::new();
        for level in [Level::Always, Level::Authorized, Level::Never] {
            let layer = HealthLayer::new(&health).details(level.details());
            let layer = match level {
                Level::Authorized => layer.access_keys(&keys),
                _ => layer,
            };
            let server = serve(ServiceBuilder::new().layer(layer).service(support::app())).await;
            servers.push((level, server));
        }
        let admin = AdminServer::new(AdminConfig::new().port(0).details(Details::Never), &health)
            .start()
            .await
            .expect("the admin server starts");
        let grpc = match cell.with {
            With::Grpc => Some(GrpcRig::start(&health).await),
            With::Nothing | With::Redis => None,
        };
        Self {
            cell: cell.name,
            faulted: databases.div_ceil(2),
            names,
            proxies,
            knobs,
            accepted_mark: Mutex::default(),
            urls,
            application_name,
            application_pool,
            holders: Mutex::default(),
            component,
            health,
            servers,
            admin,
            redis,
            grpc,
            fault_done: AtomicBool::new(false),
            named: watch::Sender::new(false),
            notes: Mutex::default(),
            problems: Mutex::default(),
        }
    }

    fn redis(&self) -> &RedisRig {
        self.redis.as_ref().expect("a Redis cell")
    }

    fn grpc(&self) -> &GrpcRig {
        self.grpc.as_ref().expect("the gRPC cell")
    }

    fn note(&self, note: String) {
        self.notes.lock().unwrap().push(note);
    }

    fn problem(&self, problem: String) {
        self.problems.lock().unwrap().push(problem);
    }

    /// Redis goes down (every connection reset, the port refused) and stays down until the
    /// fault is named; then it comes back and goes again, every [`FLAP_DOWN`] and
    /// [`FLAP_UP`], until [`Rig::stop_flapping`].
    async fn start_flapping(self: &Arc<Self>) {
        let proxy = &self.redis().proxy;
        proxy.refuse().await;
        proxy.cut();
        let (stop, mut stopped) = watch::channel(false);
        let rig = Arc::clone(self);
        let flapper = tokio::spawn(async move {
            let redis = rig.redis();
            let mut named = rig.named.subscribe();
            let _ = tokio::time::timeout(LIMIT, named.wait_for(|named| *named)).await;
            for _ in 0..MAX_FLAPS {
                redis.proxy.pass().await;
                let _ = tokio::time::timeout(FLAP_UP, stopped.changed()).await;
                if *stopped.borrow() {
                    break;
                }
                redis.proxy.refuse().await;
                redis.proxy.cut();
                redis.flaps.fetch_add(1, Ordering::SeqCst);
                let _ = tokio::time::timeout(FLAP_DOWN, stopped.changed()).await;
            }
        });
        *self.redis().flapper.lock().unwrap() = Some((stop, flapper));
    }

    /// Stops the flapping with Redis up, once it has flapped [`MIN_FLAPS`] times.
    async fn stop_flapping(&self) {
        let redis = self.redis();
        let flapped = eventually(LIMIT, || async {
            redis.flaps.load(Ordering::SeqCst) >= MIN_FLAPS
        })
        .await;
        if !flapped {
            self.problem(format!("Redis did not flap {MIN_FLAPS} times"));
        }
        let flapper = redis.flapper.lock().unwrap().take();
        if let Some((stop, flapper)) = flapper {
            stop.send_replace(true);
            if let Err(error) = support::bounded("stopping the flaps", flapper).await {
                self.problem(format!("the flapping task failed: {error}"));
            }
        }
        redis.proxy.pass().await;
        self.note(format!(
            "then {} flaps of {FLAP_DOWN:?} down, {FLAP_UP:?} up",
            redis.flaps.load(Ordering::SeqCst)
        ));
    }

    /// After recovery, Redis has no more connections of the check's and the shared cache's
    /// than the one each keeps: none left behind by the fault.
    async fn redis_connections_back(&self) {
        let addr = self.redis().server.addr;
        let last = Mutex::new(Err(String::new()));
        let back = eventually(LIMIT, || async {
            let clients = redis_clients(addr).await;
            let back = matches!(clients, Ok(clients) if clients <= 2);
            *last.lock().unwrap() = clients;
            back
        })
        .await;
        let last = last.into_inner().unwrap();
        match last {
            Ok(clients) if back => self.note(format!("Redis clients after: {clients}")),
            Ok(clients) => self.problem(format!(
                "Redis kept {clients} clients after the fault, not the check's and the shared cache's one each"
            )),
            Err(error) => self.problem(format!("INFO clients: {error}")),
        }
    }

    /// The gRPC cell's fault: two watchers that never read, while one service's status changes
    /// [`STORM_CHANGES`] times, each change awaited by a watcher that reads.
    async fn grpc_storm(&self) {
        let grpc = self.grpc();
        let reporter = grpc.service.reporter();
        reporter.set_service_status(STORM_SERVICE, ServingStatus::Serving);
        grpc.tasks_before.store(grpc.tasks(), Ordering::SeqCst);
        let rss_before = rss_kib();
        let logs_before = capture_logs().text().len();
        for _ in 0..2 {
            let mut client = grpc.client(Some(NEVER_READER_WINDOW)).await;
            let stream = watch_stream(&mut client, STORM_SERVICE).await;
            grpc.never_reading.lock().unwrap().push((client, stream));
        }
        let mut reader = grpc.client(None).await;
        let mut changes = watch_stream(&mut reader, STORM_SERVICE).await;
        if next_status(&mut changes).await != Some(Wire::Serving) {
            self.problem("the reading watcher's first status is not SERVING".to_owned());
            return;
        }
        let mut slowest_change = Duration::ZERO;
        let mut slowest_check = Duration::ZERO;
        let mut most_tasks = grpc.tasks();
        let mut delivered = 0;
        for change in 0..STORM_CHANGES {
            let status = if change % 2 == 0 {
                ServingStatus::NotServing
            } else {
                ServingStatus::Serving
            };
            let started = Instant::now();
            reporter.set_service_status(STORM_SERVICE, status);
            let seen = next_status(&mut changes).await;
            slowest_change = slowest_change.max(started.elapsed());
            if seen != Some(Wire::from(status)) {
                self.problem(format!(
                    "change {change}: the reading watcher saw {seen:?}, not {status}"
                ));
                break;
            }
            delivered += 1;
            if change % 50 == 0 {
                // `Check("")` answers readiness, as the view has it around the call: under
                // the storm's load a round may miss its budget, and readiness then honestly
                // answers NOT_SERVING.
                let readiness = || match self.health.view().answer(Probe::Ready).passing {
                    true => Wire::Serving,
                    false => Wire::NotServing,
                };
                let before = readiness();
                let started = Instant::now();
                let request = HealthCheckRequest {
                    service: String::new(),
                };
                let answered = support::bounded("Check", reader.check(request)).await;
                slowest_check = slowest_check.max(started.elapsed());
                let answered = answered.map(|reply| reply.into_inner().status());
                let after = readiness();
                if !matches!(&answered, Ok(status) if *status == before || *status == after) {
                    self.problem(format!(
                        "change {change}: Check(\"\") answered {answered:?}, readiness was {before:?} before the call and {after:?} after"
                    ));
                }
                most_tasks = most_tasks.max(grpc.tasks());
            }
        }
        self.note(format!(
            "reading watcher: {delivered} of {STORM_CHANGES} changes, slowest {:.1} ms; Check slowest {:.1} ms; server tasks {} before, at most {most_tasks} during; RSS {rss_before} -> {} KiB, of which the captured log lines {} KiB",
            slowest_change.as_secs_f64() * 1000.0,
            slowest_check.as_secs_f64() * 1000.0,
            grpc.tasks_before.load(Ordering::SeqCst),
            rss_kib(),
            capture_logs().text().len().saturating_sub(logs_before) / 1024,
        ));
        self.fault_done.store(true, Ordering::SeqCst);
    }

    /// The end of the gRPC cell's fault: one never-reading client goes without a read, the
    /// other reads what its stream held (at most its window's worth, then the latest status:
    /// no queue of every change), then goes too; the server's tasks go back to what they were.
    async fn grpc_clients_go(&self) {
        let grpc = self.grpc();
        // The latest status, told apart from every status of the storm.
        grpc.service
            .reporter()
            .set_service_status(STORM_SERVICE, ServingStatus::Unknown);
        let mut never_reading: Vec<_> = grpc.never_reading.lock().unwrap().drain(..).collect();
        let Some((client, mut stream)) = never_reading.pop() else {
            self.problem("no never-reading watcher".to_owned());
            return;
        };
        drop(never_reading);
        let mut held = 0;
        loop {
            match next_status(&mut stream).await {
                Some(Wire::Unknown) => break,
                Some(_) => held += 1,
                None => {
                    self.problem("a never-reading stream ended".to_owned());
                    break;
                }
            }
        }
        let most = NEVER_READER_WINDOW / SMALLEST_MESSAGE;
        if held > most {
            self.problem(format!(
                "the never-reading stream held {held} statuses before the latest, more than its window holds ({most}): a queue"
            ));
        }
        drop((client, stream));
        let before = grpc.tasks_before.load(Ordering::SeqCst);
        let back = eventually(LIMIT, || async { grpc.tasks() <= before }).await;
        if !back {
            self.problem(format!(
                "the gRPC server kept {} tasks after its clients went, against {before} before",
                grpc.tasks()
            ));
        }
        self.note(format!(
            "a never-reading stream held {held} of {STORM_CHANGES} changes, then the latest; server tasks after the clients went: {}",
            grpc.tasks()
        ));
    }

    fn faulted(&self) -> impl Iterator<Item = &FaultProxy> {
        self.proxies.iter().take(self.faulted)
    }

    fn faulted_knobs(&self) -> impl Iterator<Item = &Knobs> {
        self.knobs.iter().take(self.faulted)
    }

    fn mark_accepted(&self) {
        *self.accepted_mark.lock().unwrap() =
            self.proxies.iter().map(FaultProxy::accepted).collect();
    }

    fn marked_accepted(&self) -> impl Iterator<Item = usize> {
        self.accepted_mark.lock().unwrap().clone().into_iter()
    }

    async fn pass_all(&self) {
        for proxy in &self.proxies {
            proxy.pass().await;
        }
    }

    fn switch_faulted(&self, on: bool) {
        for knobs in self.faulted_knobs() {
            knobs.faulty.store(on, Ordering::SeqCst);
        }
    }

    /// Two requests of the application hold both connections of its pool on a long query,
    /// and a third waits for one; returns once the pool shows it.
    async fn exhaust_application_pool(&self) {
        let pool = self.application_pool.clone().expect("an application pool");
        for _ in 0..2 {
            let pool = pool.clone();
            let holder = tokio::spawn(async move {
                if let Ok(conn) = pool.get().await {
                    // Cancelled when the fault ends.
                    let _ = conn.simple_query("SELECT pg_sleep(60)").await;
                }
            });
            self.holders.lock().unwrap().push(holder);
        }
        let busy = eventually(LIMIT, || async {
            let state = pool.state();
            state.connections == 2 && state.idle_connections == 0
        })
        .await;
        assert!(busy, "{}: {:?}", self.cell, pool.state());
        let waiter = pool.clone();
        let waiter = tokio::spawn(async move {
            let _ = waiter.get().await;
        });
        self.holders.lock().unwrap().push(waiter);
        let queued = eventually(LIMIT, || async {
            pool.state().statistics.pending_gets() >= 1
        })
        .await;
        assert!(queued, "{}: {:?}", self.cell, pool.state());
    }

    /// Cancels the long queries; returns once every request of the application is done.
    async fn release_application_pool(&self) {
        let inspector = support::pg_client().await;
        let pattern = format!("{}_%", self.application_name);
        let holders: Vec<_> = self.holders.lock().unwrap().drain(..).collect();
        for holder in holders {
            // Cancelled until it ends: a query may not have reached the server yet.
            let mut holder = holder;
            let done = eventually(LIMIT, || {
                let inspector = &inspector;
                let pattern = &pattern;
                let finished = holder.is_finished();
                async move {
                    if !finished {
                        let _ = inspector
                            .execute(
                                "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1 AND query LIKE 'SELECT pg_sleep(60)%'",
                                &[pattern],
                            )
                            .await;
                    }
                    finished
                }
            })
            .await;
            assert!(done, "{}: an application request never ended", self.cell);
            let _ = (&mut holder).await;
        }
    }

    /// Whether every database is ready (readiness cells) or health is plainly healthy
    /// (health cells): each cadence judged by its own verdict.
    fn recovered(&self, health: &HealthHandle, cadence: Cadence) -> bool {
        match cadence {
            Cadence::Readiness => {
                let readiness = health.view().readiness;
                readiness.ready
                    && readiness.databases.len() == self.names.len()
                    && readiness.databases.iter().all(|outcome| outcome.passed())
            }
            Cadence::Health => health.view().health.status == Status::Healthy,
        }
    }

    /// Whether the verdict names the fault as `expect` says.
    fn faulty(&self, health: &HealthHandle, expect: Expect) -> bool {
        match expect {
            Expect::Databases(status, kind) => {
                let readiness = health.view().readiness;
                readiness.databases.len() == self.names.len()
                    && readiness
                        .databases
                        .iter()
                        .enumerate()
                        .all(|(index, outcome)| {
                            if index < self.faulted {
                                outcome.status == status && outcome.error_kind() == Some(kind)
                            } else {
                                outcome.passed()
                            }
                        })
            }
            Expect::Saturated => {
                let verdict = health.view().health;
                health.view().readiness.ready
                    && verdict.status == Status::Degraded
                    && verdict
                        .causes
                        .iter()
                        .any(|cause| matches!(cause, Cause::PoolSaturated { .. }))
            }
            Expect::Component(check, kind) => {
                let verdict = health.view().health;
                let Some(report) = component_report(&verdict, "worker") else {
                    return false;
                };
                verdict.status == Status::Degraded
                    && report.last_check() == Some(check)
                    && report
                        .outcome
                        .as_ref()
                        .and_then(|outcome| outcome.error_kind())
                        == Some(kind)
            }
            Expect::Redis(kinds) => {
                let verdict = health.view().health;
                let degraded = |name: &str| {
                    component_report(&verdict, name).is_some_and(|report| {
                        report.status == ComponentStatus::Degraded
                            && report
                                .outcome
                                .as_ref()
                                .and_then(|outcome| outcome.error_kind())
                                .is_some_and(|kind| kinds.contains(&kind))
                    })
                };
                health.view().readiness.ready
                    && verdict.status == Status::Degraded
                    && verdict.computed_by.is_none()
                    && degraded(REDIS_COMPONENT)
                    && degraded(SHARED_CACHE)
            }
            Expect::Unaffected => {
                self.fault_done.load(Ordering::SeqCst) && self.recovered(health, Cadence::Health)
            }
        }
    }

    /// The body of the detailed answer names the outcome and the category too.
    async fn body_names(&self, expect: Expect) -> Result<(), String> {
        let addr = self.server(Level::Always);
        let client = Client::new();
        let path = match expect {
            Expect::Databases(..) => "/health/ready",
            Expect::Saturated | Expect::Component(..) | Expect::Redis(..) | Expect::Unaffected => {
                "/health"
            }
        };
        let deadline = Instant::now() + LIMIT;
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Ok(reply) = client.try_get(addr, path).await {
                let body = reply.json();
                last = body.to_string();
                let named = match expect {
                    Expect::Databases(status, kind) => {
                        reply.status == StatusCode::SERVICE_UNAVAILABLE
                            && self.names.iter().take(self.faulted).all(|name| {
                                let key = format!("database_{name}");
                                body["checks"][&key] == status.database_word()
                                    && body["details"][&key]["error_kind"] == kind.as_str()
                            })
                    }
                    Expect::Saturated => {
                        reply.status == StatusCode::OK
                            && body["status"] == "degraded"
                            && body["causes"].as_array().is_some_and(|causes| {
                                causes.iter().any(|cause| cause["kind"] == "pool_saturated")
                            })
                    }
                    Expect::Component(check, kind) => {
                        reply.status == StatusCode::OK
                            && body["components"]["worker"]["check"] == check
                            && body["components"]["worker"]["error_kind"] == kind.as_str()
                    }
                    Expect::Redis(kinds) => {
                        let degraded = |name: &str| {
                            let component = &body["components"][name];
                            component["status"] == "degraded"
                                && kinds
                                    .iter()
                                    .any(|kind| component["error_kind"] == kind.as_str())
                        };
                        // Served from this process's own verdict, not a shared entry.
                        reply.status == StatusCode::OK
                            && body["status"] == "degraded"
                            && body["_cache"]["hit"] == true
                            && body["_cache"]["computed_by"] == "fault-matrix"
                            && degraded(REDIS_COMPONENT)
                            && degraded(SHARED_CACHE)
                    }
                    Expect::Unaffected => {
                        reply.status == StatusCode::OK && body["status"] == "healthy"
                    }
                };
                if named {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(format!("the body never named the fault: {last}"))
    }

    /// The verdict in a few words, for the table.
    fn describe(&self, cadence: Cadence) -> String {
        let readiness = self.health.view().readiness;
        let health = self.health.view().health;
        let mut words = Vec::new();
        for (index, outcome) in readiness.databases.iter().enumerate() {
            if index < self.faulted || !outcome.passed() {
                let kind = outcome.error_kind().map_or("-", |kind| kind.as_str());
                words.push(format!(
                    "{} {} {kind}",
                    outcome.name,
                    outcome.status.database_word()
                ));
            }
        }
        if readiness.databases.len() > self.faulted
            && readiness.databases[self.faulted..]
                .iter()
                .all(|outcome| outcome.passed())
        {
            words.push("others ready".to_owned());
        }
        for report in health
            .components
            .iter()
            .filter(|report| report.status.is_in_trouble())
        {
            let kind = report
                .outcome
                .as_ref()
                .and_then(|outcome| outcome.error_kind())
                .map_or("-", |kind| kind.as_str());
            words.push(format!(
                "{} {} {kind}",
                report.name,
                report.last_check().unwrap_or("-")
            ));
        }
        if self.redis.is_some() {
            words.push(match &health.computed_by {
                None => "own verdict".to_owned(),
                Some(by) => format!("shared entry of {by}"),
            });
        }
        if !health.saturated_pools.is_empty() {
            words.push("pool saturated".to_owned());
        }
        // Health follows the default database on its own (slower) cadence: shown for the
        // cells it decides.
        if cadence == Cadence::Health {
            words.push(format!("health {}", health.status));
        }
        words.join(", ")
    }

    fn server(&self, level: Level) -> std::net::SocketAddr {
        self.servers
            .iter()
            .find(|(each, _)| *each == level)
            .map(|(_, server)| server.addr)
            .expect("a server per level")
    }

    /// What must never show anywhere: the password and every connection string.
    fn secrets(&self) -> Vec<String> {
        let mut secrets = vec![PASSWORD.to_owned()];
        secrets.extend(self.urls.iter().cloned());
        if let Some(redis) = &self.redis {
            secrets.push(REDIS_PASSWORD.to_owned());
            secrets.push(redis.url.clone());
        }
        secrets
    }

    /// What must never show at `details = never`, beyond [`Rig::secrets`]: hosts, ports,
    /// users, and the drivers' words.
    fn never_shown(&self) -> Vec<String> {
        let mut words = self.secrets();
        words.extend(
            [
                "127.0.0.1",
                "localhost",
                UNKNOWN_ROLE,
                "postgres@",
                "user \"",
                "role \"",
                "user=",
                "error connecting",
                "db error",
                "FATAL",
                "onnection refused",
                "onnection reset",
                "connection closed",
                "os error",
                "certificate",
                "pg_sleep",
                "does not exist",
                "the component panics",
                "timed out",
            ]
            .map(str::to_owned),
        );
        words.extend(
            self.proxies
                .iter()
                .map(|proxy| format!(":{}", proxy.addr.port())),
        );
        if let Some(redis) = &self.redis {
            words.extend(
                [
                    "redis://",
                    "NOAUTH",
                    "WRONGPASS",
                    "roken pipe",
                    "dropped",
                    "An error was signalled",
                ]
                .map(str::to_owned),
            );
            words.push(format!(":{}", redis.proxy.addr.port()));
            words.push(format!(":{}", redis.server.addr.port()));
        }
        words
    }

    async fn teardown(&self) {
        self.pass_all().await;
        self.admin.shutdown();
        if let Some(grpc) = &self.grpc
            && let Some(shutdown) = grpc.shutdown.lock().unwrap().take()
        {
            let _ = shutdown.send(());
        }
    }
}

/// A database check that goes through its faulty side while `on` is set: a login as an
/// unknown role, or TLS against the wrong name, as after a bad deploy of the settings.
#[derive(Debug)]
struct Switch {
    faulty: PostgresCheck,
    good: PostgresCheck,
    on: Arc<AtomicBool>,
}

impl DatabaseCheck for Switch {
    fn vendor(&self) -> &'static str {
        "postgresql"
    }

    fn check(&self) -> CheckFuture {
        if self.on.load(Ordering::SeqCst) {
            self.faulty.check()
        } else {
            self.good.check()
        }
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        self.good.pool_stats()
    }

    fn target(&self) -> Option<String> {
        self.good.target()
    }
}

/// A check whose query the test controls: `SELECT pg_sleep(<sleep_ms>)`.
#[derive(Debug)]
struct SlowQuery {
    pool: bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>,
    sleep_ms: Arc<AtomicU64>,
    in_flight: Arc<AtomicUsize>,
}

/// Counts a query in flight until dropped (finished or abandoned).
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl DatabaseCheck for SlowQuery {
    fn vendor(&self) -> &'static str {
        "postgresql"
    }

    fn check(&self) -> CheckFuture {
        let pool = self.pool.clone();
        let sleep_ms = self.sleep_ms.load(Ordering::SeqCst);
        let in_flight = self.in_flight.clone();
        Box::pin(async move {
            in_flight.fetch_add(1, Ordering::SeqCst);
            let _in_flight = InFlight(in_flight);
            let conn = pool
                .get()
                .await
                .map_err(|error| CheckError::new(CheckErrorKind::Refused, error.to_string()))?;
            // Milliseconds as seconds, with no float formatting to go wrong.
            let query = format!(
                "SELECT pg_sleep({}.{:03})",
                sleep_ms / 1000,
                sleep_ms % 1000
            );
            conn.simple_query(&query)
                .await
                .map_err(|error| CheckError::new(CheckErrorKind::Query, error.to_string()))?;
            Ok(CheckReport::default())
        })
    }
}

fn component_report<'v>(
    verdict: &'v tower_health::verdict::HealthVerdict,
    name: &str,
) -> Option<&'v tower_health::verdict::ComponentReport> {
    verdict
        .components
        .iter()
        .find(|report| &*report.name == name)
}

fn switchable(behaviour: &Arc<AtomicU8>) -> impl component::Component {
    let behaviour = Arc::clone(behaviour);
    component::from_fn(move || {
        let now = behaviour.load(Ordering::SeqCst);
        async move {
            match now {
                OK => Ok(()),
                HANGS => std::future::pending().await,
                _ => std::panic::panic_any(COMPONENT_PANIC),
            }
        }
    })
}

/// The component's own panics are expected: they are not printed (with `RUST_BACKTRACE`
/// set, the default hook resolves a backtrace, which can take longer than a round and
/// would measure the hook, not the monitor). Every other panic is.
fn quiet_component_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&COMPONENT_PANIC) {
                default(info);
            }
        }));
    });
}

const COMPONENT_PANIC: &str = "the component panics";

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap()
}

/// The server's own certificate (`SHOW ssl_cert_file`), if this process can read it.
async fn server_certificate() -> Option<String> {
    let client = support::pg_client().await;
    let row = client.query_one("SHOW ssl_cert_file", &[]).await.ok()?;
    let path: String = row.get(0);
    std::fs::read(&path).is_ok().then_some(path)
}

// ===== the probes =====

/// Who reads, at which detail level.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Level {
    Always,
    Authorized,
    Never,
}

impl Level {
    fn details(self) -> Details {
        match self {
            Self::Always => Details::Always,
            Self::Authorized => Details::Authorized,
            Self::Never => Details::Never,
        }
    }
}

/// The endpoints the probes ask, as the table's columns.
const CLASSES: [&str; 5] = ["ready", "health", "pool", "nocache", "live"];

fn class_of(path: &str) -> usize {
    if path.contains("nocache") {
        3
    } else if path.ends_with("ready") || path.ends_with("readiness") {
        0
    } else if path.ends_with("pool") {
        2
    } else if path.ends_with("live") || path.ends_with("liveness") {
        4
    } else {
        1
    }
}

/// What the probes saw during one cell.
#[derive(Default)]
struct Record {
    answered: u64,
    slowest: [Duration; CLASSES.len()],
    failures: Vec<String>,
    leaks: Vec<String>,
    bodies: u64,
}

struct Prober {
    stop: watch::Sender<bool>,
    task: JoinHandle<Record>,
}

/// A bound on the probe loop, besides the stop signal: a cell that hangs does not probe
/// forever.
const MAX_PROBE_LOOPS: usize = 20_000;

impl Prober {
    fn start(rig: &Rig) -> Self {
        let (stop, stopped) = watch::channel(false);
        let viewer = format!("Bearer {VIEWER_KEY}");
        // (address, path, Authorization, whether the body may show details)
        let mut targets: Vec<(std::net::SocketAddr, &'static str, Option<String>, bool)> =
            Vec::new();
        for (level, server) in &rig.servers {
            for path in [
                "/health/ready",
                "/health",
                "/health/pool",
                "/health?nocache=true",
                "/health/live",
            ] {
                match level {
                    Level::Always => targets.push((server.addr, path, None, true)),
                    Level::Never => targets.push((server.addr, path, None, false)),
                    Level::Authorized => {
                        targets.push((server.addr, path, None, false));
                        targets.push((server.addr, path, Some(viewer.clone()), true));
                    }
                }
            }
        }
        for path in ["/readiness", "/health", "/health/pool", "/liveness"] {
            targets.push((rig.admin.local_addr(), path, None, false));
        }
        let secrets = rig.secrets();
        let never_shown = rig.never_shown();
        let task = tokio::spawn(async move {
            let client = support::Client::new();
            let mut record = Record::default();
            for _ in 0..MAX_PROBE_LOOPS {
                if *stopped.borrow() {
                    break;
                }
                for (addr, path, authorization, detailed) in &targets {
                    let started = Instant::now();
                    let reply = match authorization {
                        None => client.try_get(*addr, path).await,
                        Some(value) => {
                            client
                                .try_get_with(*addr, path, &[("authorization", value)])
                                .await
                        }
                    };
                    let took = started.elapsed();
                    let class = class_of(path);
                    record.slowest[class] = record.slowest[class].max(took);
                    match reply {
                        Err(error) => record.failures.push(error),
                        Ok(reply) => {
                            record.answered += 1;
                            if reply.status != StatusCode::OK
                                && reply.status != StatusCode::SERVICE_UNAVAILABLE
                            {
                                record.failures.push(format!(
                                    "{path}: {} {}",
                                    reply.status,
                                    reply.text()
                                ));
                            }
                            record.bodies += 1;
                            let body = reply.text();
                            let words = if *detailed { &secrets } else { &never_shown };
                            for word in words {
                                if body.contains(word.as_str()) && record.leaks.len() < 20 {
                                    record.leaks.push(format!(
                                        "{addr}{path} ({}) shows {word:?}: {body}",
                                        if *detailed { "detailed" } else { "short" }
                                    ));
                                }
                            }
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            record
        });
        Self { stop, task }
    }

    async fn stop(self) -> Record {
        self.stop.send_replace(true);
        support::bounded("stopping the probes", self.task)
            .await
            .expect("the probes do not panic")
    }
}

// ===== the logs =====

/// The result of searching the logs.
struct LogSearch {
    lines: usize,
    leaks: Vec<String>,
}

fn search(logs: &Captured, secrets: &[String]) -> LogSearch {
    let text = logs.text();
    let mut leaks = Vec::new();
    let mut lines = 0;
    for line in text.lines() {
        lines += 1;
        for secret in secrets {
            if line.contains(secret.as_str()) && leaks.len() < 20 {
                leaks.push(format!("a log line shows {secret:?}: {line}"));
            }
        }
    }
    LogSearch { lines, leaks }
}

/// Captures every log line of the process from now on: the crate's at TRACE, the rest at
/// DEBUG (drivers, pools, hyper).
fn capture_logs() -> Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Captured::default();
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "tower_health=trace,debug",
            ))
            .with_writer(buffer.clone())
            .with_ansi(false)
            .init();
        buffer
    })
    .clone()
}

// ===== the table =====

struct Row {
    name: &'static str,
    verdict: String,
    shown: Option<u64>,
    recovered: Option<u64>,
    record: Option<Record>,
    ok: bool,
    /// For a row that did not run: what it says, and the result column.
    skipped: Option<(String, &'static str)>,
    secrets: Vec<String>,
}

impl Row {
    fn skipped(name: &'static str, note: String, result: &'static str) -> Self {
        Self {
            name,
            verdict: String::new(),
            shown: None,
            recovered: None,
            record: None,
            ok: true,
            skipped: Some((note, result)),
            secrets: Vec::new(),
        }
    }
}

fn render(databases: usize, rows: &[Row], logs: &LogSearch) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nfault matrix, {databases} database{} (budget {BUDGET:?}, readiness every {READINESS_EVERY:?}, health every {HEALTH_EVERY:?}, check limit {CHECK_LIMIT:?}; rounds counted from the fault in place / its end; slowest answers in ms)",
        if databases == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "| cell | verdict during the fault | shown (rounds) | recovered (rounds) | answers | slowest ready / health / pool / nocache / live | secrets | result |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let mut bodies = 0;
    for row in rows {
        if let Some((note, result)) = &row.skipped {
            let _ = writeln!(out, "| {} | {note} | | | | | | {result} |", row.name);
            continue;
        }
        let record = row.record.as_ref().expect("a record for a cell that ran");
        bodies += record.bodies;
        let slowest: Vec<String> = record
            .slowest
            .iter()
            .map(|took| format!("{:.1}", took.as_secs_f64() * 1000.0))
            .collect();
        let rounds =
            |rounds: Option<u64>| rounds.map_or("never".to_owned(), |rounds| rounds.to_string());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.name,
            row.verdict,
            rounds(row.shown),
            rounds(row.recovered),
            record.answered,
            slowest.join(" / "),
            if record.leaks.is_empty() {
                "clean"
            } else {
                "LEAK"
            },
            if row.ok { "ok" } else { "FAILED" },
        );
    }
    let _ = writeln!(
        out,
        "secret search: {bodies} bodies (always, authorized with and without a key, never, admin never) and {} log lines: {}",
        logs.lines,
        if logs.leaks.is_empty() {
            "no password, no connection string"
        } else {
            "LEAKS"
        }
    );
    out
}
