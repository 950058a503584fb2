//! A bounded soak: a probe storm and application traffic against the full stack while the
//! database flaps through a fault proxy, watching what must not grow.
//!
//! Run with
//!
//! ```not_rust
//! SOAK_SECONDS=600 cargo bench --all-features --bench soak
//! ```
//!
//! (`SOAK_SECONDS` defaults to 600; `SOAK_SECONDS=120` is the two-minute form.) It needs
//! the local PostgreSQL (`TEST_DATABASE_URL`) and `redis-server` installed: it starts a Redis
//! of its own on a free port (so that the client count is its own), which both a Redis
//! component (`cache`) and the shared cache use. Every 30 s the database and Redis go away
//! together for 10 s through their proxies, in turn: a restart (every connection reset, the
//! port refused), a stall (connections held, established ones reset), a network path gone
//! dark (established connections blackholed). Meanwhile four clients storm the probes on the
//! application's port and the admin server, and two send application requests that query the
//! database through the application's own pool.
//!
//! At intervals it prints RSS, live tokio tasks, open file descriptors, PostgreSQL backends
//! of this process (`pg_stat_activity`, by `application_name`) and Redis clients (`INFO
//! clients` of its Redis, its own inspecting connection not counted), and at the end compares
//! the last quarter of the run with the second: each must stay flat (the largest sample of
//! the last quarter within a margin of the largest of the second).
//!
//! Traffic goes to 127.0.0.1 only; every loop ends with the run, and is bounded in count.

#[path = "../tests/it/support/fault_proxy.rs"]
mod fault_proxy;
#[path = "../tests/it/support/process.rs"]
mod process;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fault_proxy::FaultProxy;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_health::DrainLayer;
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::component::ComponentSpec;
use tower_health::postgres::PostgresCheck;
use tower_health::postgres::{bb8, bb8_postgres, tokio_postgres};
use tower_health::redis::{Redis, SharedCache};
use tower_health::{HealthConfig, HealthLayer, HealthMonitor};

use self::process::{open_fds, rss_kib};

/// The longest run accepted: a day.
const MAX_SECONDS: u64 = 24 * 60 * 60;
const FLAP_EVERY: Duration = Duration::from_secs(30);
const FAULT_LASTS: Duration = Duration::from_secs(10);
/// Requests per client, at most: the loops end with the run long before.
const MAX_REQUESTS_PER_CLIENT: u64 = 100_000_000;

type AppPool = bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>;

fn main() -> ExitCode {
    let seconds = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|value| value.parse::<u64>().ok())
        .unwrap_or(600)
        .clamp(20, MAX_SECONDS);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let metrics = runtime.metrics();
    runtime.block_on(soak(Duration::from_secs(seconds), metrics))
}

/// One sample of what must stay flat.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Duration,
    rss_kib: u64,
    tasks: usize,
    fds: usize,
    backends: i64,
    redis_clients: i64,
}

#[derive(Default)]
struct Counters {
    probes: AtomicU64,
    probe_errors: AtomicU64,
    unexpected: AtomicU64,
    probe_slowest_us: AtomicU64,
    app_ok: AtomicU64,
    app_unavailable: AtomicU64,
}

async fn soak(length: Duration, metrics: tokio::runtime::RuntimeMetrics) -> ExitCode {
    let pg_url = std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let pg_config: tokio_postgres::Config = pg_url.parse().expect("TEST_DATABASE_URL parses");
    let upstream: SocketAddr = match (&pg_config.get_hosts()[0], pg_config.get_ports().first()) {
        (tokio_postgres::config::Host::Tcp(host), port) => {
            let host = if host == "localhost" {
                "127.0.0.1"
            } else {
                host
            };
            format!("{host}:{}", port.copied().unwrap_or(5432))
                .parse()
                .expect("an IP address")
        }
        #[cfg(unix)]
        _ => panic!("the soak needs a TCP address"),
    };
    let (inspector, connection) = tokio_postgres::connect(&pg_url, tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL answers");
    tokio::spawn(connection);

    let application = format!("th_soak_{}", std::process::id());
    let proxy = Arc::new(FaultProxy::postgres(upstream).await);
    let redis = OwnRedis::start().await;
    let redis_proxy = Arc::new(FaultProxy::tcp(redis.addr).await);
    let redis_url = format!("redis://{}/0", redis_proxy.addr);
    let mut redis_inspector = redis::Client::open(format!("redis://{}/0", redis.addr))
        .expect("a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("the soak's Redis answers");
    let via_proxy = |role: &str| {
        format!(
            "postgres://postgres@{}/postgres?sslmode=disable&application_name={application}_{role}",
            proxy.addr
        )
    };
    let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
        via_proxy("app"),
        tokio_postgres::NoTls,
    )
    .unwrap();
    let pool: AppPool = bb8::Pool::builder()
        .max_size(4)
        .connection_timeout(Duration::from_secs(1))
        .build_unchecked(manager);
    let config = HealthConfig::new()
        .readiness_interval(Duration::from_millis(250))
        .health_interval(Duration::from_secs(1))
        .check_limit(Duration::from_secs(2))
        .database(
            "default",
            PostgresCheck::connect(&via_proxy("check")).unwrap(),
        )
        .database("app", PostgresCheck::new(pool.clone()))
        .component(ComponentSpec::new(
            "cache",
            Redis::connect(&redis_url).expect("a Redis URL"),
        ))
        .shared_cache(
            SharedCache::connect(&redis_url)
                .expect("a Redis URL")
                .process_id("soak"),
        );
    let monitor = HealthMonitor::spawn(config).expect("a valid configuration");
    let health = HealthLayer::new(&monitor);
    let drain_layer = DrainLayer::new(monitor.drain());
    let admin = AdminServer::new(AdminConfig::new().port(0), &monitor)
        .start()
        .await
        .expect("the admin server starts");
    let app = {
        let pool = pool.clone();
        tower::service_fn(move |_request: Request<Incoming>| {
            let pool = pool.clone();
            async move {
                let answered = tokio::time::timeout(Duration::from_secs(1), async {
                    let conn = pool.get().await.ok()?;
                    conn.simple_query("SELECT 1").await.ok()
                })
                .await;
                let status = match answered {
                    Ok(Some(_)) => StatusCode::OK,
                    _ => StatusCode::SERVICE_UNAVAILABLE,
                };
                let mut response = Response::new(Full::new(Bytes::from_static(b"app")));
                *response.status_mut() = status;
                Ok::<_, Infallible>(response)
            }
        })
    };
    let service = ServiceBuilder::new()
        .layer(health)
        .layer(drain_layer)
        .service(app);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(Counters::default());
    let mut load = Vec::new();
    for client in 0..4 {
        let target = if client % 2 == 0 {
            addr
        } else {
            admin.local_addr()
        };
        let paths: &'static [&'static str] = if client % 2 == 0 {
            &[
                "/health/ready",
                "/health",
                "/health/live",
                "/health/pool",
                "/health/ping",
            ]
        } else {
            &["/readiness", "/health", "/liveness", "/health/pool"]
        };
        load.push(tokio::spawn(storm(
            target,
            paths,
            stop.clone(),
            counters.clone(),
        )));
    }
    for _ in 0..2 {
        load.push(tokio::spawn(application_traffic(
            addr,
            stop.clone(),
            counters.clone(),
        )));
    }
    let flapper = tokio::spawn(flap(
        [proxy.clone(), redis_proxy.clone()],
        stop.clone(),
        started,
    ));

    let interval = (length / 40).clamp(Duration::from_secs(2), Duration::from_secs(15));
    println!(
        "soak: {}s, sampling every {}s; the database and Redis flap every {}s for {}s through their proxies",
        length.as_secs(),
        interval.as_secs(),
        FLAP_EVERY.as_secs(),
        FAULT_LASTS.as_secs()
    );
    println!(
        "| t (s) | RSS (KiB) | tokio tasks | open fds | PG backends | Redis clients | probes | app ok / 503 | proxy mode |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut samples = Vec::new();
    while started.elapsed() < length {
        tokio::time::sleep(interval.min(length.saturating_sub(started.elapsed()))).await;
        let backends: i64 = inspector
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1",
                &[&format!("{application}_%")],
            )
            .await
            .map_or(-1, |row| row.get(0));
        let redis_clients = redis_clients(&mut redis_inspector).await;
        let sample = Sample {
            at: started.elapsed(),
            rss_kib: rss_kib(),
            tasks: metrics.num_alive_tasks(),
            fds: open_fds(std::process::id()),
            backends,
            redis_clients,
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} / {} | {:?} |",
            sample.at.as_secs(),
            sample.rss_kib,
            sample.tasks,
            sample.fds,
            sample.backends,
            sample.redis_clients,
            counters.probes.load(Ordering::Relaxed),
            counters.app_ok.load(Ordering::Relaxed),
            counters.app_unavailable.load(Ordering::Relaxed),
            proxy.mode(),
        );
        samples.push(sample);
    }
    stop.store(true, Ordering::SeqCst);
    for task in load {
        let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(30), flapper).await;
    admin.shutdown();

    println!(
        "probes: {} answered, {} failed to answer, {} with a status no probe means, slowest {:.1} ms; application: {} ok, {} answered 503 by the app (database away)",
        counters.probes.load(Ordering::Relaxed),
        counters.probe_errors.load(Ordering::Relaxed),
        counters.unexpected.load(Ordering::Relaxed),
        counters.probe_slowest_us.load(Ordering::Relaxed) as f64 / 1000.0,
        counters.app_ok.load(Ordering::Relaxed),
        counters.app_unavailable.load(Ordering::Relaxed),
    );
    let flat = report_flatness(&samples, length);
    let answered = counters.probe_errors.load(Ordering::Relaxed) == 0
        && counters.unexpected.load(Ordering::Relaxed) == 0;
    if flat && answered {
        println!("soak: ok");
        ExitCode::SUCCESS
    } else {
        println!("soak: FAILED");
        ExitCode::FAILURE
    }
}

/// Compares the largest sample of the last quarter with the largest of the second, for
/// each figure; prints the comparison and returns whether all stayed flat.
fn report_flatness(samples: &[Sample], length: Duration) -> bool {
    let quarter = |from: f64, to: f64| -> Vec<Sample> {
        samples
            .iter()
            .filter(|sample| {
                let at = sample.at.as_secs_f64() / length.as_secs_f64();
                at > from && at <= to + 1e-9
            })
            .copied()
            .collect()
    };
    let second = quarter(0.25, 0.5);
    let last = quarter(0.75, 1.0);
    if second.is_empty() || last.is_empty() {
        println!("flatness: too few samples");
        return false;
    }
    // (name, figure, allowed growth: a share and an absolute margin)
    type Figure = fn(&Sample) -> f64;
    let figures: [(&str, Figure, f64, f64); 5] = [
        ("RSS (KiB)", |s| s.rss_kib as f64, 0.10, 2048.0),
        ("tokio tasks", |s| s.tasks as f64, 0.10, 8.0),
        ("open fds", |s| s.fds as f64, 0.10, 8.0),
        ("PG backends", |s| s.backends as f64, 0.0, 2.0),
        ("Redis clients", |s| s.redis_clients as f64, 0.0, 1.0),
    ];
    let mut flat = true;
    println!("| figure | largest, 2nd quarter | largest, last quarter | flat |");
    println!("|---|---|---|---|");
    for (name, figure, share, margin) in figures {
        let max = |samples: &[Sample]| samples.iter().map(figure).fold(f64::MIN, f64::max);
        let (before, after) = (max(&second), max(&last));
        let ok = after <= before * (1.0 + share) + margin;
        flat &= ok;
        println!(
            "| {name} | {before} | {after} | {} |",
            if ok { "yes" } else { "NO" }
        );
    }
    flat
}

/// Probes `paths` in turn on a keep-alive connection until the run stops.
async fn storm(
    addr: SocketAddr,
    paths: &'static [&'static str],
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
) {
    let client = client();
    for request in 0..MAX_REQUESTS_PER_CLIENT {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let path = paths[(request % paths.len() as u64) as usize];
        // Now and then a fresh computation (bounded by the budget, rate-limited).
        let path = if request % 1000 == 999 && path == "/health" {
            "/health?nocache=true"
        } else {
            path
        };
        let started = Instant::now();
        match get(&client, addr, path).await {
            Some(status) => {
                counters.probes.fetch_add(1, Ordering::Relaxed);
                if status != StatusCode::OK && status != StatusCode::SERVICE_UNAVAILABLE {
                    counters.unexpected.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                counters.probe_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        counters.probe_slowest_us.fetch_max(took, Ordering::Relaxed);
        // About 1,000 probes a second per client: a storm, with CPU left for the rest.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Application requests, each a query through the application's pool.
async fn application_traffic(addr: SocketAddr, stop: Arc<AtomicBool>, counters: Arc<Counters>) {
    let client = client();
    for _ in 0..MAX_REQUESTS_PER_CLIENT {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match get(&client, addr, "/").await {
            Some(StatusCode::OK) => counters.app_ok.fetch_add(1, Ordering::Relaxed),
            _ => counters.app_unavailable.fetch_add(1, Ordering::Relaxed),
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every `FLAP_EVERY`, the database and Redis go away for `FAULT_LASTS`, each time in
/// another way.
async fn flap(proxies: [Arc<FaultProxy>; 2], stop: Arc<AtomicBool>, started: Instant) {
    let mut cycle = 0u64;
    loop {
        let next = FLAP_EVERY * u32::try_from(cycle + 1).unwrap_or(u32::MAX);
        let fault_at = next.saturating_sub(FAULT_LASTS);
        if !sleep_until(started + fault_at, &stop).await {
            break;
        }
        for proxy in &proxies {
            match cycle % 3 {
                0 => {
                    proxy.refuse().await;
                    proxy.cut();
                }
                1 => {
                    proxy.freeze().await;
                    proxy.cut();
                }
                _ => proxy.blackhole(),
            }
        }
        let stopped = !sleep_until(started + next, &stop).await;
        for proxy in &proxies {
            proxy.pass().await;
            if cycle % 3 == 2 {
                // The dark connections stay dark: reset them, as the kernel eventually would.
                proxy.cut();
            }
        }
        if stopped {
            break;
        }
        cycle += 1;
    }
    for proxy in &proxies {
        proxy.pass().await;
    }
}

/// A `redis-server` of the soak's own on a free port, killed when dropped: its client count
/// is the soak's alone.
struct OwnRedis {
    addr: SocketAddr,
    child: std::process::Child,
}

impl OwnRedis {
    async fn start() -> Self {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port");
        let child = std::process::Command::new("redis-server")
            .args(["--port", &addr.port().to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed (the soak starts a Redis of its own)");
        let redis = Self { addr, child };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return redis;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("redis-server on {addr} did not start within 10 s");
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The clients connected to the soak's Redis, its inspecting connection not counted; -1
/// when it does not answer within 5 s.
async fn redis_clients(inspector: &mut redis::aio::MultiplexedConnection) -> i64 {
    let info = tokio::time::timeout(
        Duration::from_secs(5),
        redis::cmd("INFO")
            .arg("clients")
            .query_async::<String>(inspector),
    )
    .await;
    let Ok(Ok(info)) = info else {
        return -1;
    };
    info.lines()
        .find_map(|line| line.strip_prefix("connected_clients:"))
        .and_then(|count| count.trim().parse::<i64>().ok())
        .map_or(-1, |count| count - 1)
}

/// Sleeps until `at`, waking every 100 ms to look at `stop`; `false` when stopped first.
async fn sleep_until(at: Instant, stop: &AtomicBool) -> bool {
    while Instant::now() < at {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100).min(at - Instant::now())).await;
    }
    !stop.load(Ordering::Relaxed)
}

fn client() -> Client<HttpConnector, Empty<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(connector)
}

/// One GET, its status; `None` when it failed or took over 10 s.
async fn get(
    client: &Client<HttpConnector, Empty<Bytes>>,
    addr: SocketAddr,
    path: &str,
) -> Option<StatusCode> {
    let request = Request::get(format!("http://{addr}{path}"))
        .body(Empty::new())
        .ok()?;
    let exchange = async {
        let response = client.request(request).await.ok()?;
        let status = response.status();
        response.into_body().collect().await.ok()?;
        Some(status)
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
}
