//! The health verdict shared through Redis, with several monitors in one process (each its
//! own pool, its own PostgreSQL proxy counting its queries) on the real Redis, under a key
//! prefix of each test's own.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use support::redis_server::{connect, redis_url, unique_prefix};
use support::{LIMIT, PgProxy, eventually, pg_addr};
use tower_health::check::{CheckFuture, DatabaseCheck, PoolStats};
use tower_health::component::{self, ComponentSpec};
use tower_health::monitor::MonitorStats;
use tower_health::postgres::PostgresCheck;
use tower_health::redis::SharedCache;
use tower_health::{HealthConfig, HealthHandle, HealthMonitor};

/// A process of the fleet: a monitor on a database proxy of its own.
struct Process {
    health: HealthHandle,
    proxy: PgProxy,
}

/// The database of the fleet, reached by each process through a proxy of its own (which
/// counts its queries), and configured alike in every process, as in the pods of one
/// Deployment: the target the fleet's entry is fingerprinted with is the same.
#[derive(Debug)]
struct ThroughOwnProxy(PostgresCheck);

impl DatabaseCheck for ThroughOwnProxy {
    fn vendor(&self) -> &'static str {
        self.0.vendor()
    }

    fn check(&self) -> CheckFuture {
        self.0.check()
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        self.0.pool_stats()
    }

    fn target(&self) -> Option<String> {
        Some("db.internal:5432/postgres".to_owned())
    }
}

/// Health rounds every 200 ms (the TTL too), readiness as given, a 500 ms deadline.
fn config(proxy: &PgProxy, name: &str, readiness: Duration, cache: SharedCache) -> HealthConfig {
    let url = format!("{}&application_name={name}", proxy.url());
    HealthConfig::new()
        .readiness_interval(readiness)
        .health_interval(Duration::from_millis(200))
        .readiness_timeout(Duration::from_millis(500))
        .database("default", ThroughOwnProxy(support::postgres(&url)))
        .shared_cache(
            cache
                .process_id(name)
                .lock_expiry(Duration::from_millis(100)),
        )
}

async fn fleet(
    size: usize,
    prefix: &str,
    readiness: Duration,
    add: impl Fn(HealthConfig) -> HealthConfig,
) -> Vec<Process> {
    let mut fleet = Vec::new();
    for index in 0..size {
        let proxy = PgProxy::start(pg_addr()).await;
        let cache = SharedCache::connect(&redis_url())
            .unwrap()
            .key_prefix(prefix);
        let name = format!("process-{index}");
        let health = HealthMonitor::spawn(add(config(&proxy, &name, readiness, cache))).unwrap();
        fleet.push(Process { health, proxy });
    }
    for process in &fleet {
        support::first_rounds(&process.health).await;
    }
    fleet
}

fn total(fleet: &[Process], count: impl Fn(&MonitorStats) -> u64) -> u64 {
    fleet
        .iter()
        .map(|process| count(&process.health.stats()))
        .sum()
}

fn queries(fleet: &[Process]) -> u64 {
    fleet.iter().map(|process| process.proxy.queries()).sum()
}

/// Waits until the fleet has run `rounds` more health rounds, computed or served.
async fn run_rounds(fleet: &[Process], rounds: u64) {
    let all = |stats: &MonitorStats| stats.health_rounds + stats.shared_rounds;
    let target = total(fleet, all) + rounds;
    let done = eventually(Duration::from_secs(60), || async {
        total(fleet, all) >= target
    })
    .await;
    assert!(done, "the fleet did not run {rounds} health rounds in time");
}

#[tokio::test]
async fn four_monitors_compute_about_once_per_window_and_the_others_serve_it() {
    require_postgres!();
    require_redis!();
    // Readiness once, at start: every query through the proxies after that is a health
    // round's.
    let fleet = fleet(
        4,
        &unique_prefix("window"),
        Duration::from_secs(3600),
        |c| c,
    )
    .await;
    run_rounds(&fleet, 8).await;
    let (computed, served, sent) = (
        total(&fleet, |s| s.health_rounds),
        total(&fleet, |s| s.shared_rounds),
        queries(&fleet),
    );
    run_rounds(&fleet, 80).await;
    let computed = total(&fleet, |s| s.health_rounds) - computed;
    let served = total(&fleet, |s| s.shared_rounds) - served;
    let sent = queries(&fleet) - sent;
    eprintln!(
        "4 monitors, 80+ health rounds: {computed} computed, {served} served shared, {sent} database queries"
    );
    // One computer per 200 ms window among four processes each reading every ~200 ms: about
    // a quarter of the rounds compute. Without the cache, every round would.
    assert!(
        computed * 2 < computed + served,
        "{computed} computed, {served} shared"
    );
    // The computing rounds are the only ones that query the database: one query each.
    assert!(
        sent <= computed + 4,
        "{sent} queries for {computed} computations"
    );
    for process in &fleet {
        assert!(
            process.health.stats().shared_rounds > 0,
            "every process serves the entry"
        );
    }
}

#[tokio::test]
async fn stalling_one_process_database_fails_only_its_readiness() {
    require_postgres!();
    require_redis!();
    let fleet = fleet(
        2,
        &unique_prefix("stall"),
        Duration::from_millis(100),
        |c| c,
    )
    .await;
    let (stalled, fine) = (&fleet[0], &fleet[1]);
    stalled.proxy.freeze();
    let failed = eventually(LIMIT, || async { !stalled.health.view().readiness.ready }).await;
    assert!(failed, "the stalled process's readiness never failed");
    // Several more readiness rounds of the other process, all ready.
    let rounds = fine.health.stats().readiness_rounds + 5;
    let ready_throughout = eventually(LIMIT, || async {
        assert!(
            fine.health.view().readiness.ready,
            "the other process's readiness failed"
        );
        fine.health.stats().readiness_rounds >= rounds
    })
    .await;
    assert!(ready_throughout);
    assert!(!stalled.health.view().readiness.ready);
    stalled.proxy.thaw();
}

#[tokio::test]
async fn a_shared_component_is_checked_once_per_window_a_local_one_by_every_process() {
    require_postgres!();
    require_redis!();
    let expensive = Arc::new(AtomicU64::new(0));
    let local = Arc::new(AtomicU64::new(0));
    let counting = |counter: &Arc<AtomicU64>| {
        let counter = counter.clone();
        component::from_fn(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            async { Ok(()) }
        })
    };
    let fleet = fleet(
        3,
        &unique_prefix("components"),
        Duration::from_secs(3600),
        |config| {
            config
                .component(ComponentSpec::new("expensive", counting(&expensive)).shared(true))
                .component(ComponentSpec::new("local", counting(&local)))
        },
    )
    .await;
    run_rounds(&fleet, 4).await;
    let (expensive_before, local_before) = (
        expensive.load(Ordering::Relaxed),
        local.load(Ordering::Relaxed),
    );
    let computed = total(&fleet, |s| s.health_rounds);
    run_rounds(&fleet, 60).await;
    let expensive_calls = expensive.load(Ordering::Relaxed) - expensive_before;
    let local_calls = local.load(Ordering::Relaxed) - local_before;
    let computed = total(&fleet, |s| s.health_rounds) - computed;
    eprintln!(
        "3 monitors: expensive (shared) checked {expensive_calls} times, local {local_calls} times, {computed} computations"
    );
    assert!(
        expensive_calls * 2 < local_calls,
        "{expensive_calls} vs {local_calls}"
    );
    assert!(
        expensive_calls <= computed + 3,
        "{expensive_calls} for {computed} computations"
    );
    // Served or computed, every process shows both, healthy.
    for process in &fleet {
        let verdict = process.health.view().health;
        let names: Vec<_> = verdict.components.iter().map(|r| &*r.name).collect();
        assert_eq!(names, ["expensive", "local", "shared_cache"]);
        assert!(
            verdict
                .components
                .iter()
                .all(|r| r.status.as_str() == "healthy")
        );
    }
}

/// A process whose rounds come an hour apart (its first at once), sharing under `prefix`
/// with a TTL of an hour, served over HTTP.
async fn slow_process(
    prefix: &str,
    name: &str,
    nocache_writes: bool,
) -> (HealthHandle, support::TestServer) {
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(prefix)
        .ttl(Duration::from_secs(3600))
        .process_id(name)
        .nocache_writes(nocache_writes);
    let config = HealthConfig::new()
        .health_interval(Duration::from_secs(3600))
        .database("default", support::postgres(&support::pg_url()))
        .shared_cache(cache);
    let (health, server) = support::health_server(config).await;
    support::first_rounds(&health).await;
    (health, server)
}

async fn stored_computed_by(key: &str) -> String {
    use redis::AsyncCommands;
    let mut redis = connect(&redis_url()).await;
    let stored: String = redis.get(key).await.unwrap();
    let entry: serde_json::Value = serde_json::from_str(&stored).unwrap();
    entry["computed_by"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_shared_verdict_says_so_and_nocache_gives_this_process_own() {
    require_postgres!();
    require_redis!();
    let prefix = unique_prefix("nocache");
    let key = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(&prefix)
        .entry_key();
    let (first, _first_server) = slow_process(&prefix, "first", false).await;
    assert_eq!(first.view().health.computed_by, None, "the first computes");
    assert_eq!(stored_computed_by(&key).await, "first");

    let (second, server) = slow_process(&prefix, "second", false).await;
    assert_eq!(second.view().health.computed_by.as_deref(), Some("first"));
    let client = support::Client::new();
    let body = client.get(server.addr, "/health").await.json();
    assert_eq!(body["_cache"]["hit"], "shared", "{body:#}");
    assert_eq!(body["_cache"]["computed_by"], "first", "{body:#}");
    assert!(body["_cache"]["age_ms"].is_u64(), "{body:#}");
    assert_eq!(
        body["components"]["shared_cache"]["status"], "healthy",
        "{body:#}"
    );

    let fresh = client.get(server.addr, "/health?nocache=true").await.json();
    assert_eq!(fresh["_cache"]["hit"], "bypassed", "{fresh:#}");
    assert_eq!(
        second.view().health.computed_by,
        None,
        "its own, now published"
    );
    assert_eq!(
        stored_computed_by(&key).await,
        "first",
        "the entry is left alone"
    );

    let (_third, server) = slow_process(&prefix, "third", true).await;
    let fresh = client.get(server.addr, "/health?nocache=true").await.json();
    assert_eq!(fresh["_cache"]["hit"], "bypassed", "{fresh:#}");
    assert_eq!(
        stored_computed_by(&key).await,
        "third",
        "configured to overwrite it"
    );
    // The monitors' next rounds are an hour away: the entry can go now.
    let mut redis = connect(&redis_url()).await;
    let _: () = redis::AsyncCommands::del(&mut redis, &key).await.unwrap();
}

/// A process sharing under `cache` whose `default` database is `database`, named `name`,
/// served over HTTP.
async fn application(
    cache: SharedCache,
    name: &str,
    database: &str,
    optional: bool,
) -> (HealthHandle, support::TestServer) {
    let mut config = support::fast()
        .database("default", support::postgres(database))
        .shared_cache(cache.process_id(name));
    if optional {
        config = config.optional_database("default");
    }
    support::health_server(config).await
}

/// Follows `health` for `rounds` of its health rounds, checking every verdict it publishes.
async fn every_verdict_for(
    health: &HealthHandle,
    rounds: u64,
    check: impl Fn(&tower_health::verdict::HealthVerdict),
) {
    let mut views = health.watch();
    let all = |stats: MonitorStats| stats.health_rounds + stats.shared_rounds;
    let target = all(health.stats()) + rounds;
    support::bounded("the rounds followed", async {
        while all(health.stats()) < target {
            check(&views.changed().await.expect("the monitor runs").health);
        }
    })
    .await;
}

/// A2: two applications that both call their database `default` and keep the default key
/// prefix (on a Redis database of this test's own: the key is the default one). Each serves
/// only its own configuration's verdict, and a warning says the prefix is shared.
#[tokio::test]
async fn two_applications_under_the_default_prefix_never_serve_each_others_verdict() {
    require_postgres!();
    require_redis!();
    let (logs, _guard) = support::logs::Captured::start();
    let url = format!("{}/9", redis_url());
    let refused = support::refused_addr().await;
    let (up, _up_server) = application(
        SharedCache::connect(&url).unwrap(),
        "app-a",
        &support::pg_url(),
        false,
    )
    .await;
    let (down, down_server) = application(
        SharedCache::connect(&url).unwrap(),
        "app-b",
        &format!("postgres://postgres@{refused}/postgres"),
        false,
    )
    .await;
    support::first_rounds(&up).await;
    every_verdict_for(&down, 10, |verdict| {
        assert_ne!(
            verdict.computed_by.as_deref(),
            Some("app-a"),
            "{verdict:#?}"
        );
    })
    .await;
    let reply = support::Client::new()
        .get(down_server.addr, "/health")
        .await;
    let body = reply.json();
    assert_eq!(reply.status, 503, "{body:#}");
    assert_eq!(body["status"], "unhealthy", "{body:#}");
    // Computed by itself (served from its own entry, or not): never by the other one.
    assert_eq!(body["_cache"]["computed_by"], "app-b", "{body:#}");
    let warnings = logs.matching("share the default key prefix");
    assert!(!warnings.is_empty(), "{:#?}", logs.lines());
    assert!(
        warnings.len() <= 2,
        "once per foreign configuration and process, not once per round: {warnings:#?}"
    );
    let mut redis = connect(&url).await;
    let key = SharedCache::connect(&redis_url()).unwrap().entry_key();
    let _: () = redis::AsyncCommands::del(&mut redis, &key).await.unwrap();
}

/// A2: a configuration rollout with the database down: the writer had `default` optional
/// (`degraded`), the reader has it critical and answers `unhealthy`, as it would alone.
#[tokio::test]
async fn during_a_rollout_each_process_decides_by_its_own_configuration() {
    require_postgres!();
    require_redis!();
    let prefix = unique_prefix("rollout");
    let cache = || {
        SharedCache::connect(&redis_url())
            .unwrap()
            .key_prefix(&prefix)
    };
    let refused = support::refused_addr().await;
    let database = format!("postgres://postgres@{refused}/postgres");
    let (old, _old_server) = application(cache(), "old-config", &database, true).await;
    support::first_rounds(&old).await;
    let (new, new_server) = application(cache(), "new-config", &database, false).await;
    every_verdict_for(&new, 10, |verdict| {
        assert_ne!(
            verdict.computed_by.as_deref(),
            Some("old-config"),
            "{verdict:#?}"
        );
        if verdict.checked_at.is_some() {
            assert_eq!(
                verdict.status,
                tower_health::verdict::Status::Unhealthy,
                "{verdict:#?}"
            );
        }
    })
    .await;
    let reply = support::Client::new().get(new_server.addr, "/health").await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    // And the old configuration's process keeps its own answer: degraded, in rotation.
    assert_eq!(
        old.view().health.status,
        tower_health::verdict::Status::Degraded
    );
}

/// The value of the series `series` in a metrics exposition.
fn series(exposition: &[u8], series: &str) -> u64 {
    let text = std::str::from_utf8(exposition).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in {text}"))
        .parse()
        .unwrap()
}

/// B5: each process's metrics count the health rounds it computed, those it served from the
/// fleet's entry, and those Redis failed or the entry could not be served, apart.
#[tokio::test]
async fn metrics_count_computed_shared_and_failed_rounds_apart() {
    require_postgres!();
    require_redis!();
    use tower_health::metrics::HealthMetrics;
    let prefix = unique_prefix("metrics");
    let fleet = fleet(2, &prefix, Duration::from_millis(100), |c| c).await;
    run_rounds(&fleet, 20).await;
    let computed = r#"tower_health_rounds_total{round="health",source="computed"}"#;
    let shared = r#"tower_health_rounds_total{round="health",source="shared"}"#;
    let errors = "tower_health_shared_cache_errors_total";
    let metrics: Vec<_> = fleet
        .iter()
        .map(|p| HealthMetrics::new(&p.health))
        .collect();
    let metric =
        |name: &str| -> u64 { metrics.iter().map(|m| series(&m.exposition(), name)).sum() };
    let stats = |count: fn(&MonitorStats) -> u64| total(&fleet, count);
    assert!(metric(computed) > 0 && metric(shared) > 0);
    assert_eq!(metric(computed), stats(|s| s.health_rounds));
    assert_eq!(metric(shared), stats(|s| s.shared_rounds));
    assert_eq!(metric(errors), 0);
    // An entry that cannot be served: counted as such, by the process that read it.
    let key = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(&prefix)
        .entry_key();
    let redis = connect(&redis_url()).await;
    // Written again until a process reads it: one that computes at that moment may replace it
    // with a valid entry before any reads it.
    let counted = eventually(LIMIT, || {
        let mut redis = redis.clone();
        let key = key.clone();
        async move {
            let _: () = redis::AsyncCommands::set(&mut redis, &key, "garbage")
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            stats(|s| s.shared_cache_errors) > 0
        }
    })
    .await;
    assert!(counted, "no shared cache error counted");
    assert_eq!(metric(errors), stats(|s| s.shared_cache_errors));
}
