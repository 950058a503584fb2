//! The contract every backend keeps, written once: `tests/it/backends.rs` runs it for each.
//!
//! A backend is a database check (under `databases`, gating readiness) or a component (under
//! `components`): the contract drives both and reads the outcome of each round from the health
//! verdict, where both kinds report. Faults are real: a closed port, a listener that accepts
//! and never answers, the fault proxy in front of the real server, the application's own pool
//! held by its own traffic.
//!
//! Each case that passes writes one row of the results table to stderr (past the test
//! harness's capture): `cargo test --all-features --test it backends:: 2>&1 | grep '^contract'`.

use std::any::Any;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tower_health::check::{CheckErrorKind, DatabaseCheck};
use tower_health::verdict::{CheckStatus, HealthVerdict};
use tower_health::{HealthConfig, HealthHandle, HealthMonitor};

use super::fault_proxy::FaultProxy;
use super::{Client, LIMIT, StalledListener, bounded, fast, health_server, refused_addr};

/// A database check, or a component.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Database,
    Component,
}

/// The name the contract gives the check: the database `default`, the component `cache`.
pub const DATABASE: &str = "default";
pub const COMPONENT: &str = "cache";

/// The round's budget in these tests ([`fast`]'s deadline).
pub const BUDGET: Duration = Duration::from_millis(300);
/// What "on time" allows past the budget: a scheduling margin for a loaded 2-core machine,
/// wide on purpose (a bound, not a measurement).
pub const SLACK: Duration = Duration::from_secs(2);

const PASSWORD: &str = "hunter2-contract";

/// One backend under the contract.
pub trait Backend {
    const NAME: &'static str;
    const KIND: Kind;

    /// Whether the real server is there (under `CI`, its absence fails the test).
    fn available() -> impl Future<Output = bool> + Send;

    /// The real server.
    fn upstream() -> SocketAddr;

    /// A URL to `addr`, with the backend's usual user and no password, or with `credentials`.
    fn url(addr: SocketAddr, credentials: Option<(&str, &str)>) -> String;

    /// `config` with the check of `url` added (as [`DATABASE`] or [`COMPONENT`]), and the
    /// check's `Debug`.
    fn add(config: HealthConfig, url: &str) -> (HealthConfig, String);
}

/// A backend that checks beside the application's own pool.
pub trait PoolBackend: Backend {
    type Pool: Clone + Send + Sync + 'static;

    /// The application's pool, of `max_size` connections.
    fn pool(url: &str, max_size: u32) -> Self::Pool;

    /// The check beside `pool`.
    fn check_beside(pool: Self::Pool, url: &str) -> impl DatabaseCheck;

    /// One checkout of the application's, held as long as the returned value lives.
    fn checkout(pool: Self::Pool) -> impl Future<Output = Box<dyn Any + Send>> + Send + 'static;
}

/// What one round said about the check.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `"ok"`, `"failed"` or `"timed_out"`.
    pub last: &'static str,
    pub kind: Option<CheckErrorKind>,
    pub message: Option<String>,
    pub target: Option<String>,
}

impl Seen {
    pub fn ok(&self) -> bool {
        self.last == "ok"
    }
}

/// The check's outcome in `verdict`, if the round has one.
pub fn seen<B: Backend>(verdict: &HealthVerdict) -> Option<Seen> {
    let (outcome, target) = match B::KIND {
        Kind::Database => {
            // The default database has a field of its own; the others are listed.
            let outcome = verdict
                .database
                .iter()
                .chain(&verdict.databases)
                .find(|o| &*o.name == DATABASE)?;
            (outcome, outcome.target.as_deref().map(str::to_owned))
        }
        Kind::Component => {
            let report = verdict.components.iter().find(|r| &*r.name == COMPONENT)?;
            (report.outcome.as_ref()?, report.target.clone())
        }
    };
    let last = match outcome.status {
        CheckStatus::Passed => "ok",
        CheckStatus::TimedOut => "timed_out",
        _ => "failed",
    };
    Some(Seen {
        last,
        kind: outcome.error_kind(),
        message: outcome.error.as_ref().map(|e| e.message().to_owned()),
        target,
    })
}

/// Spawns a monitor for `config` (a readiness cadence of 100 ms, health 200 ms, a 300 ms
/// budget) and waits for its first health round: what it said, and when.
async fn first_round<B: Backend>(config: HealthConfig) -> (HealthHandle, Seen, Duration) {
    let started = Instant::now();
    let health = HealthMonitor::spawn(config).unwrap();
    let mut views = health.watch();
    let first = bounded("the first health round", async {
        views
            .wait_for(|view| view.health.checked_at.is_some())
            .await
            .map(|view| view.health)
            .expect("the monitor runs")
    })
    .await;
    let took = started.elapsed();
    let seen = seen::<B>(&first).unwrap_or_else(|| panic!("no outcome in {first:#?}"));
    (health, seen, took)
}

/// Waits (at most [`LIMIT`]) for a health round whose outcome satisfies `wanted`; returns it
/// and how many rounds were published before it.
async fn round_where<B: Backend>(
    health: &HealthHandle,
    what: &str,
    wanted: impl Fn(&Seen) -> bool,
) -> (Seen, usize) {
    let mut views = health.watch();
    let mut last = views.current().expect("the monitor runs").health;
    let mut rounds = 0;
    bounded(what, async {
        loop {
            let verdict = views.changed().await.expect("the monitor runs").health;
            // The view changes with readiness too: count the health verdicts only.
            if Arc::ptr_eq(&verdict, &last) {
                continue;
            }
            last = Arc::clone(&verdict);
            rounds += 1;
            if let Some(seen) = seen::<B>(&verdict).filter(|seen| wanted(seen)) {
                return (seen, rounds);
            }
        }
    })
    .await
}

/// One row of the results table.
fn row<B: Backend>(case: &str, observed: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "contract | {:<12} | {:<20} | pass | {observed}",
        B::NAME,
        case
    );
}

fn config_with<B: Backend>(url: &str) -> (HealthConfig, String) {
    B::add(fast(), url)
}

/// A closed port: the first round says `refused`, on time.
pub async fn refused<B: Backend>() {
    let closed = refused_addr().await;
    let (config, _) = config_with::<B>(&B::url(closed, None));
    let (_health, seen, took) = first_round::<B>(config).await;
    assert_eq!(seen.last, "failed", "{seen:?}");
    assert_eq!(seen.kind, Some(CheckErrorKind::Refused), "{seen:?}");
    assert!(took <= BUDGET + SLACK, "reported after {took:?}");
    row::<B>(
        "refused",
        &format!("refused in the first round, {took:.0?}"),
    );
}

/// A listener that accepts and never answers: the first round says `timed_out` (category
/// `timeout`) when the budget passes, not later.
pub async fn stalled<B: Backend>() {
    let stalled = StalledListener::start().await;
    let (config, _) = config_with::<B>(&B::url(stalled.addr, None));
    let (_health, seen, took) = first_round::<B>(config).await;
    assert_eq!(seen.last, "timed_out", "{seen:?}");
    assert_eq!(seen.kind, Some(CheckErrorKind::Timeout), "{seen:?}");
    assert!(took <= BUDGET + SLACK, "reported after {took:?}");
    assert!(stalled.accepted() >= 1, "the check connected");
    row::<B>(
        "stalled",
        &format!("timed_out in the first round, {took:.0?}"),
    );
}

/// Healthy through the fault proxy; the proxy cuts and refuses: failed; it passes again:
/// healthy within a round or two.
pub async fn recovered<B: Backend>() {
    if !B::available().await {
        return;
    }
    let proxy = FaultProxy::tcp(B::upstream()).await;
    let (config, _) = config_with::<B>(&B::url(proxy.addr, None));
    let health = HealthMonitor::spawn(config).unwrap();
    round_where::<B>(&health, "healthy through the proxy", Seen::ok).await;
    proxy.cut();
    proxy.refuse().await;
    let (down, _) = round_where::<B>(&health, "failed behind the fault", |s| !s.ok()).await;
    assert!(
        matches!(
            down.kind,
            Some(CheckErrorKind::Refused | CheckErrorKind::Closed)
        ),
        "{down:?}"
    );
    proxy.pass().await;
    let (_, rounds) = round_where::<B>(&health, "healthy again", Seen::ok).await;
    // The round running when the proxy passed again may still have failed; the next passes.
    assert!(rounds <= 2, "healthy again only after {rounds} rounds");
    row::<B>(
        "recovered",
        &format!(
            "{:?} behind the fault, healthy {rounds} round(s) after",
            down.kind.unwrap()
        ),
    );
}

/// One connection, reused round after round; the server closes it while it waits between
/// rounds (a restart, an idle timeout): the next check replaces it, and no round fails.
pub async fn closed_while_idle<B: Backend>() {
    if !B::available().await {
        return;
    }
    let proxy = FaultProxy::tcp(B::upstream()).await;
    let (config, _) = config_with::<B>(&B::url(proxy.addr, None));
    let health = HealthMonitor::spawn(config).unwrap();
    round_where::<B>(&health, "healthy through the proxy", Seen::ok).await;
    for _ in 0..5 {
        let (seen, _) = round_where::<B>(&health, "a round", |_| true).await;
        assert!(seen.ok(), "{seen:?}");
    }
    assert_eq!(proxy.accepted(), 1, "one connection for every round");
    proxy.close();
    for _ in 0..3 {
        let (seen, _) = round_where::<B>(&health, "a round", |_| true).await;
        assert!(
            seen.ok(),
            "a closed idle connection read as an outage: {seen:?}"
        );
    }
    assert_eq!(proxy.accepted(), 2, "replaced once");
    row::<B>(
        "closed_while_idle",
        "1 connection for 6 rounds; closed by the server: replaced, no round failed",
    );
}

/// The connection goes dark mid-check (a network path gone for good): the round says
/// `timed_out`; past the check limit the check is dropped and closes its connection, and a
/// new one answers the next rounds.
pub async fn abandoned<B: Backend>() {
    if !B::available().await {
        return;
    }
    let proxy = FaultProxy::tcp(B::upstream()).await;
    let (config, _) = B::add(
        fast().check_limit(Duration::from_secs(1)),
        &B::url(proxy.addr, None),
    );
    let health = HealthMonitor::spawn(config).unwrap();
    round_where::<B>(&health, "healthy through the proxy", Seen::ok).await;
    proxy.blackhole();
    let (dark, _) = round_where::<B>(&health, "timed out", |s| s.last == "timed_out").await;
    let (_, rounds) = round_where::<B>(&health, "healthy on a new connection", Seen::ok).await;
    assert_eq!(proxy.accepted(), 2, "one new connection");
    let closed = super::eventually(LIMIT, || async { proxy.open() == 1 }).await;
    assert!(
        closed,
        "the abandoned connection is still open: {}",
        proxy.open()
    );
    row::<B>(
        "abandoned",
        &format!(
            "{} while dark, its connection closed, healthy {rounds} round(s) later on a new one",
            dark.last
        ),
    );
}

/// A password in the URL never shows: not in the check's `Debug`, not in its `target`, not
/// in any rendered body (where the failed round's error is shown too).
pub async fn secret_free<B: Backend>() {
    let closed = refused_addr().await;
    let url = B::url(closed, Some(("app", PASSWORD)));
    let (config, debug) = config_with::<B>(&url);
    assert!(!debug.contains(PASSWORD), "Debug: {debug}");
    let (health, server) = health_server(config).await;
    let (seen, _) = round_where::<B>(&health, "a failed round", |s| !s.ok()).await;
    let target = seen.target.clone().expect("a target");
    assert!(!target.contains(PASSWORD), "target: {target}");
    assert!(
        target.contains(&closed.port().to_string()),
        "target: {target}"
    );
    let message = seen.message.clone().unwrap_or_default();
    assert!(!message.contains(PASSWORD), "error: {message}");
    let client = Client::new();
    for path in ["/health", "/health/ready", "/health/pool"] {
        let body = client.get(server.addr, path).await.text();
        assert!(!body.contains(PASSWORD), "{path}: {body}");
    }
    row::<B>(
        "secret_free",
        &format!("Debug, target {target:?}, error and 3 bodies clean"),
    );
}

/// The very first round fails for a cause other than the network (an unknown user): the
/// verdict names it.
pub async fn first_round_failure<B: Backend>() {
    if !B::available().await {
        return;
    }
    let url = B::url(B::upstream(), Some(("no_such_role", "nope")));
    let (config, _) = config_with::<B>(&url);
    let (_health, seen, took) = first_round::<B>(config).await;
    assert_eq!(seen.last, "failed", "{seen:?}");
    assert_eq!(seen.kind, Some(CheckErrorKind::Auth), "{seen:?}");
    let message = seen.message.clone().expect("the cause");
    assert!(!message.is_empty(), "{seen:?}");
    row::<B>(
        "first_round_failure",
        &format!("auth in the first round ({took:.0?}): {message}"),
    );
}

/// The application's pool held by its own traffic (every connection checked out, one more
/// checkout waiting): the check stays healthy round after round on its reserved connection,
/// and the pool figures are the application's pool's, saturated.
pub async fn pool_exhausted<B: PoolBackend>() {
    if !B::available().await {
        return;
    }
    let url = B::url(B::upstream(), None);
    let pool = B::pool(&url, 2);
    let config = fast().database(DATABASE, B::check_beside(pool.clone(), &url));
    let (health, server) = health_server(config).await;
    round_where::<B>(&health, "healthy", Seen::ok).await;

    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(bounded("a checkout of the application's", B::checkout(pool.clone())).await);
    }
    let waiter = tokio::spawn(B::checkout(pool.clone()));
    let saturated = super::eventually(LIMIT, || async { health.view().pool.is_saturated() }).await;
    assert!(saturated, "{:#?}", health.view().pool);
    // Rounds go on while the pool stays exhausted: each of them passes.
    for _ in 0..3 {
        let (seen, rounds) = round_where::<B>(&health, "a round", |_| true).await;
        assert!(seen.ok(), "{seen:?}");
        assert_eq!(rounds, 1);
    }
    let body = Client::new().get(server.addr, "/health/pool").await.json();
    let info = &body["pool_info"];
    assert_eq!(info["saturated"], true, "{body}");
    assert_eq!(info["status"], "degraded", "{body}");
    assert_eq!(info["check"], "ready", "{body}");
    assert_eq!(info["max_size"], 2, "{body}");
    assert_eq!(info["connections"], 2, "{body}");
    assert_eq!(info["in_use"], 2, "{body}");
    assert_eq!(info["reserved_connections_opened"], 1, "{body}");
    assert!(
        health.view().readiness.ready,
        "{:#?}",
        health.view().readiness
    );
    let waiting = info["pending_gets"].clone();
    waiter.abort();
    drop(held);
    row::<B>(
        "pool_exhausted",
        &format!(
            "healthy 3 rounds on its reserved connection; pool 2/2 in use, saturated, pending_gets {waiting}"
        ),
    );
}
