//! The instance the HAProxy benches put behind the load balancer, shared by `benches/rollout.rs`
//! and `benches/weights.rs`, which include this file with `#[path]` and run it as a child
//! process of their own binary (`--instance <listen> <agent-port>`, [`main`]).
//!
//! It is the README's production form adapted to bb8: the application's pool (bb8's defaults
//! but `max_size`, `INSTANCE_POOL_SIZE`, 10 by default), `HealthConfig::from_env()` (every
//! `TOWER_HEALTH_*` variable, `TOWER_HEALTH_LOAD_CAPACITY` included) with the default database
//! checked beside that pool (`PostgresCheck::new`: a connection of its own, outside the pool),
//! `HealthMonitor::spawn` (its drain from the same variables), the HAProxy agent,
//! `HealthLayer::new(&health).details(Details::Never).around(router)`, a tracing subscriber
//! (info and up, to stderr) and `drain.serve(..)` around `axum::serve`, so that SIGTERM drains
//! as in production (the drain delay, 5 s by default, then the graceful shutdown).
//!
//! `/db` checks a connection out of the pool and runs `SELECT 1` with `query_one` (a prepare
//! and an execute: two round trips, as a handler written the obvious way does); a checkout or
//! query that fails answers 503. `INSTANCE_LATENCY` (a duration, `20ms`; none by default)
//! slows it: the handler keeps the connection that long after the query, as a slow query
//! would, so that requests queue for the pool and the requests in flight rise, as on an
//! instance whose database is slow. SIGUSR1 heals it: the latency is gone from the next
//! request on (`the injected latency is removed` in the log).

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use tokio::net::TcpListener;
use tower_health::config::Details;
use tower_health::haproxy::{AgentConfig, AgentServer};
use tower_health::postgres::PostgresCheck;
use tower_health::postgres::{bb8, bb8_postgres, tokio_postgres};
use tower_health::{HealthConfig, HealthLayer, HealthMonitor};

type AppPool = bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>;
type BoxError = Box<dyn Error>;

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// What the instance's log says of its last application request.
pub(crate) const LAST_REQUEST: &str = "the last application request";

/// What the instance's log says when SIGUSR1 has removed its injected latency.
pub(crate) const HEALED: &str = "the injected latency is removed";

/// Runs the instance if `args` (the program's, without its name) ask for one (`--instance
/// <listen> <agent-port>`), until SIGTERM has drained it; `None` otherwise.
pub(crate) fn main(args: &[String]) -> Option<Result<(), BoxError>> {
    let at = args.iter().position(|arg| arg == "--instance")?;
    Some(match (args.get(at + 1), args.get(at + 2)) {
        (Some(listen), Some(agent_port)) => agent_port
            .parse()
            .map_err(|_| format!("--instance: not a port: {agent_port:?}").into())
            .and_then(|agent_port| instance(listen, agent_port)),
        _ => Err("usage: --instance <listen> <agent-port>".into()),
    })
}

/// Serves one instance on `listen`, its HAProxy agent on 127.0.0.1:`agent_port`, until
/// SIGTERM has drained it.
fn instance(listen: &str, agent_port: u16) -> Result<(), BoxError> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    // What `#[tokio::main]` builds: a worker thread per core.
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let manager = bb8_postgres::PostgresConnectionManager::new_from_stringlike(
            database_url(),
            tokio_postgres::NoTls,
        )?;
        let pool: AppPool = bb8::Pool::builder()
            .max_size(env_or("INSTANCE_POOL_SIZE", 10))
            .build_unchecked(manager);

        let config = HealthConfig::from_env()? // the TOWER_HEALTH_* variables
            // One connection of its own beside the pool: a check never queues behind traffic.
            .database("default", PostgresCheck::new(pool.clone()));
        let health = HealthMonitor::spawn(config)?;
        let drain = health.drain().clone();

        let agent = AgentConfig::from_env()?.port(agent_port);
        let _agent = AgentServer::new(agent, &health).start().await?;
        let last_request = Arc::new(AtomicU64::new(0));
        let latency = env_duration("INSTANCE_LATENCY", Duration::ZERO);
        let latency_us = Arc::new(AtomicU64::new(
            u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
        ));
        heal_on_sigusr1(Arc::clone(&latency_us))?;
        let state = AppState {
            pool,
            last_request: Arc::clone(&last_request),
            latency_us,
        };
        let app = Router::new().route("/db", get(db)).with_state(state);
        let app = HealthLayer::new(&health)
            .details(Details::Never)
            .around(app);
        let listener = TcpListener::bind(listen).await?;
        drain
            .serve(|shutdown| axum::serve(listener, app).with_graceful_shutdown(shutdown))
            .await?;
        // When the load balancer last sent this instance a request: the orchestrator reads it
        // to time the depool.
        tracing::info!(
            unix_ms = last_request.load(Ordering::Relaxed),
            "{LAST_REQUEST}"
        );
        Ok(())
    })
}

/// Sets `latency_us` to zero at the first SIGUSR1, and says so.
fn heal_on_sigusr1(latency_us: Arc<AtomicU64>) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut healed = signal(SignalKind::user_defined1())?;
    tokio::spawn(async move {
        if healed.recv().await.is_some() {
            latency_us.store(0, Ordering::Relaxed);
            tracing::info!("{HEALED}");
        }
    });
    Ok(())
}

/// The application's state: its pool, when it last got a request (milliseconds since the
/// UNIX epoch), and how long a request keeps its connection after the query (microseconds).
#[derive(Clone)]
struct AppState {
    pool: AppPool,
    last_request: Arc<AtomicU64>,
    latency_us: Arc<AtomicU64>,
}

/// Milliseconds since the UNIX epoch.
pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

/// `GET /db`: one query through the application's pool, and the injected latency, if any,
/// with the connection kept.
async fn db(State(state): State<AppState>) -> Result<String, (StatusCode, String)> {
    state
        .last_request
        .fetch_max(unix_ms(SystemTime::now()), Ordering::Relaxed);
    let pool = state.pool;
    let unavailable = |error: String| (StatusCode::SERVICE_UNAVAILABLE, error);
    let conn = pool
        .get()
        .await
        .map_err(|error| unavailable(error.to_string()))?;
    let row = conn
        .query_one("SELECT 1", &[])
        .await
        .map_err(|error| unavailable(error.to_string()))?;
    let latency = state.latency_us.load(Ordering::Relaxed);
    if latency > 0 {
        tokio::time::sleep(Duration::from_micros(latency)).await;
    }
    drop(conn);
    let one: i32 = row.get(0);
    Ok(format!("{one}\n"))
}

fn database_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.to_owned())
}

/// `name` parsed, or `default` when it is unset; a value that does not parse is a mistake
/// worth stopping for.
pub(crate) fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} does not parse")),
        Err(_) => default,
    }
}

/// `name` as a duration (`25s`, `1500ms`), or `default` when it is unset.
pub(crate) fn env_duration(name: &str, default: Duration) -> Duration {
    match std::env::var(name) {
        Ok(value) => humantime::parse_duration(&value)
            .unwrap_or_else(|error| panic!("{name}={value:?}: {error}")),
        Err(_) => default,
    }
}
