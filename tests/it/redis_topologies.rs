//! `redis::Redis` and the shared cache beyond one Redis: on a Redis Cluster of three
//! primaries, and on a primary behind Redis Sentinel through a failover. Every server is the
//! test's own, on free ports (never the shared Redis on 6379), killed when the test ends.

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use support::redis_topologies::{RedisCluster, RedisSentinel, command};
use support::{LIMIT, eventually};
use tower_health::check::CheckErrorKind;
use tower_health::component::{self, Component, ComponentSpec, ComponentStatus};
use tower_health::redis::Redis;
use tower_health::redis::SharedCache;
use tower_health::verdict::ComponentReport;
use tower_health::{HealthConfig, HealthHandle, HealthMonitor};

/// A monitor checking `redis` as the component `cache`, every 100 ms under a 300 ms deadline.
fn component_monitor(redis: Redis) -> HealthHandle {
    HealthMonitor::spawn(
        HealthConfig::new()
            .readiness_interval(Duration::from_millis(100))
            .health_interval(Duration::from_millis(100))
            .readiness_timeout(Duration::from_millis(300))
            .component(ComponentSpec::new("cache", redis)),
    )
    .unwrap()
}

fn report(health: &HealthHandle, name: &str) -> Option<ComponentReport> {
    health
        .view()
        .health
        .components
        .iter()
        .find(|report| &*report.name == name)
        .cloned()
}

/// Waits until component `name` is reported as `wanted`; returns its report.
async fn becomes(health: &HealthHandle, name: &str, wanted: ComponentStatus) -> ComponentReport {
    let reached = eventually(LIMIT, || async {
        report(health, name).is_some_and(|report| report.status == wanted)
    })
    .await;
    let last = report(health, name);
    assert!(reached, "{name} never became {wanted}: {last:#?}");
    last.unwrap()
}

/// A process of the fleet, with no database: its health rounds (every `interval`, the
/// entry's TTL too) check one shared component, `expensive`, counted in `checks`.
fn process(
    name: &str,
    cache: SharedCache,
    interval: Duration,
    checks: &Arc<AtomicU64>,
) -> HealthConfig {
    let counter = checks.clone();
    let expensive = component::from_fn(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        async { Ok(()) }
    });
    HealthConfig::new()
        .readiness_interval(interval)
        .health_interval(interval)
        .readiness_timeout(Duration::from_millis(500))
        .component(ComponentSpec::new("expensive", expensive).shared(true))
        .shared_cache(cache.process_id(name).ttl(interval))
}

/// Waits until `health` has published its first health verdict.
async fn first_health_round(health: &HealthHandle) {
    let done = eventually(LIMIT, || async {
        health.view().health.checked_at.is_some()
    })
    .await;
    assert!(done, "no health round within {LIMIT:?}");
}

/// Waits until every process has served `rounds` more shared rounds, its `shared_cache`
/// healthy at the end.
async fn share_again(fleet: &[HealthHandle], rounds: u64) {
    for health in fleet {
        let target = health.stats().shared_rounds + rounds;
        let served = eventually(LIMIT, || async { health.stats().shared_rounds >= target }).await;
        assert!(
            served,
            "{rounds} more shared rounds not served within {LIMIT:?}: {:#?}",
            report(health, "shared_cache")
        );
        becomes(health, "shared_cache", ComponentStatus::Healthy).await;
    }
}

/// The connections `servers` have accepted so far.
async fn connections_accepted(servers: &[SocketAddr]) -> u64 {
    let mut total = 0;
    for &server in servers {
        let info: String = command(server, redis::cmd("INFO").arg("stats"))
            .await
            .unwrap();
        total += info
            .lines()
            .find_map(|line| line.strip_prefix("total_connections_received:"))
            .and_then(|count| count.trim().parse::<u64>().ok())
            .expect("INFO stats has total_connections_received");
    }
    total
}

fn millis_since_epoch() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since.as_millis()).unwrap()
}

#[tokio::test]
async fn on_a_redis_cluster_the_component_checks_the_cluster_state_and_the_fleet_shares_one_verdict()
 {
    let mut cluster = RedisCluster::start().await;
    let url = cluster.url();

    // The component: healthy, its target the seed nodes.
    let redis = Redis::connect(&url).unwrap();
    let seeds: Vec<String> = cluster.nodes.iter().map(ToString::to_string).collect();
    assert_eq!(
        redis.target().as_deref(),
        Some(&*format!("cluster {}", seeds.join(",")))
    );
    support::bounded("PING", redis.check()).await.unwrap();
    let component = component_monitor(redis);
    becomes(&component, "cache", ComponentStatus::Healthy).await;

    // The shared cache: the first process computes, the next ones serve its verdict, one
    // through a connection of its own, one through the application's cluster connection.
    let prefix = "topologies:cluster:";
    let checks = Arc::new(AtomicU64::new(0));
    let hour = Duration::from_secs(3600);
    let cache = || SharedCache::connect(&url).unwrap().key_prefix(prefix);
    let first = HealthMonitor::spawn(process("first", cache(), hour, &checks)).unwrap();
    first_health_round(&first).await;
    assert_eq!(first.view().health.computed_by, None, "the first computes");
    assert_eq!(checks.load(Ordering::Relaxed), 1);

    let (second, server) = support::health_server(process("second", cache(), hour, &checks)).await;
    first_health_round(&second).await;
    let body = support::Client::new()
        .get(server.addr, "/health")
        .await
        .json();
    assert_eq!(body["_cache"]["hit"], "shared", "{body:#}");
    assert_eq!(body["_cache"]["computed_by"], "first", "{body:#}");
    assert_eq!(
        body["components"]["shared_cache"]["status"], "healthy",
        "{body:#}"
    );

    let nodes = seeds.iter().map(|seed| format!("redis://{seed}"));
    let client = redis::cluster::ClusterClient::new(nodes).unwrap();
    let application = support::bounded("connecting", client.get_async_connection())
        .await
        .unwrap();
    let through_the_app = SharedCache::with_connection(application.clone()).key_prefix(prefix);
    let third = HealthMonitor::spawn(process("third", through_the_app, hour, &checks)).unwrap();
    first_health_round(&third).await;
    assert_eq!(third.view().health.computed_by.as_deref(), Some("first"));
    assert_eq!(
        checks.load(Ordering::Relaxed),
        1,
        "computed once for all three"
    );

    // The entry is where the cluster keeps its key, as the client routes it.
    let mut application = application;
    let stored: String = redis::AsyncCommands::get(&mut application, format!("{prefix}health"))
        .await
        .unwrap();
    let entry: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(entry["computed_by"], "first");

    // Rounds every 100 ms: each process keeps its one connection per node, whatever the
    // number of rounds.
    let fast: Vec<HealthHandle> = ["fast-a", "fast-b"]
        .into_iter()
        .map(|name| {
            let cache = SharedCache::connect(&url)
                .unwrap()
                .key_prefix("topologies:cluster-fast:");
            HealthMonitor::spawn(process(name, cache, Duration::from_millis(100), &checks)).unwrap()
        })
        .collect();
    share_again(&fast, 2).await;
    let accepted = connections_accepted(&cluster.nodes).await;
    share_again(&fast, 10).await;
    let opened = connections_accepted(&cluster.nodes).await - accepted;
    // The second count's own three connections, and nothing else.
    assert!(opened <= 3, "{opened} connections opened in 20 rounds");

    // A primary goes, with no replica to take over: its slots have no server. The client
    // may stop sending it the PING; CLUSTER INFO says `cluster_state:fail`.
    cluster.kill(2);
    becomes(&component, "cache", ComponentStatus::Degraded).await;
    let said = eventually(LIMIT, || async {
        report(&component, "cache")
            .and_then(|report| report.outcome)
            .and_then(|outcome| outcome.error)
            .is_some_and(|error| {
                error.kind() == CheckErrorKind::Refused
                    && error.message().contains("the cluster's state is fail")
            })
    })
    .await;
    assert!(said, "{:#?}", report(&component, "cache"));
}

#[tokio::test]
async fn behind_sentinel_the_component_and_the_shared_cache_follow_a_failover() {
    let setup = RedisSentinel::start().await;
    let url = format!(
        "redis-sentinel://{}?sentinelServiceName={}&node={}",
        // A Sentinel that is gone first: the next one is asked.
        support::refused_addr().await,
        RedisSentinel::NAME,
        setup.sentinel,
    );

    let redis = Redis::connect(&url).unwrap();
    assert!(
        redis
            .target()
            .unwrap()
            .starts_with(&format!("sentinel {}/0 at ", RedisSentinel::NAME)),
        "{:?}",
        redis.target()
    );
    let component = component_monitor(redis);
    becomes(&component, "cache", ComponentStatus::Healthy).await;

    let checks = Arc::new(AtomicU64::new(0));
    let interval = Duration::from_millis(200);
    let fleet: Vec<HealthHandle> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let cache = SharedCache::connect(&url)
                .unwrap()
                .key_prefix("topologies:sentinel:");
            HealthMonitor::spawn(process(name, cache, interval, &checks)).unwrap()
        })
        .collect();
    share_again(&fleet, 3).await;
    let primary = setup.primary().await;
    let accepted = connections_accepted(&[primary]).await;
    share_again(&fleet, 5).await;
    let opened = connections_accepted(&[primary]).await - accepted;
    assert!(opened <= 1, "{opened} connections opened in 10 rounds");

    let promoted = setup.failover().await;
    assert_ne!(promoted, primary);
    let demoted_at = millis_since_epoch();

    // The old primary is a replica now: an entry computed since was written to the new one.
    let fresh = eventually(LIMIT, || async {
        let stored: Option<String> = command(
            promoted,
            redis::cmd("GET").arg("topologies:sentinel:health"),
        )
        .await
        .unwrap_or_default();
        stored
            .and_then(|stored| serde_json::from_str::<serde_json::Value>(&stored).ok())
            .and_then(|entry| entry["computed_at_ms"].as_u64())
            .is_some_and(|computed| computed > demoted_at)
    })
    .await;
    assert!(
        fresh,
        "no entry written to the new primary within {LIMIT:?}"
    );
    share_again(&fleet, 3).await;
    becomes(&component, "cache", ComponentStatus::Healthy).await;
}

#[tokio::test]
async fn the_passwords_of_a_cluster_and_of_sentinel_are_used_and_never_shown() {
    let cluster = RedisCluster::start_with(Some("cluster-secret")).await;
    let right = Redis::connect(&cluster.url()).unwrap();
    support::bounded("PING", right.check()).await.unwrap();
    let wrong = Redis::connect(&cluster.url().replace("cluster-secret", "hunter2")).unwrap();
    let error = support::bounded("PING", wrong.check()).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Auth, "{error}");
    let shown = format!("{error} {wrong:?} {:?}", wrong.target());
    assert!(!shown.contains("hunter2"), "{shown}");
    drop(cluster);
    let closed = support::refused_addr().await;
    let refused = Redis::connect(&format!("redis-cluster://{closed}")).unwrap();
    let error = support::bounded("PING", refused.check()).await.unwrap_err();
    assert_eq!(error.kind(), CheckErrorKind::Refused, "{error}");

    let setup = RedisSentinel::start_with(Some("primary-secret"), Some("sentinel-secret")).await;
    let url = setup.url();
    let right = Redis::connect(&url).unwrap();
    support::bounded("PING", right.check()).await.unwrap();
    let fleet = [
        HealthMonitor::spawn(process(
            "a",
            SharedCache::connect(&url)
                .unwrap()
                .key_prefix("topologies:auth:"),
            Duration::from_millis(200),
            &Arc::new(AtomicU64::new(0)),
        ))
        .unwrap(),
        HealthMonitor::spawn(process(
            "b",
            SharedCache::connect(&url)
                .unwrap()
                .key_prefix("topologies:auth:"),
            Duration::from_millis(200),
            &Arc::new(AtomicU64::new(0)),
        ))
        .unwrap(),
    ];
    share_again(&fleet, 2).await;
    for secret in ["primary-secret", "sentinel-secret"] {
        let wrong = Redis::connect(&url.replace(secret, "hunter2")).unwrap();
        let error = support::bounded("PING", wrong.check()).await.unwrap_err();
        assert_eq!(error.kind(), CheckErrorKind::Auth, "{secret}: {error}");
        let shown = format!("{error} {wrong:?} {:?}", wrong.target());
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}

#[tokio::test]
async fn behind_sentinel_one_listed_first_that_never_answers_costs_nothing() {
    let setup = RedisSentinel::start().await;
    let stalled = support::StalledListener::start().await;
    let url = format!(
        "redis-sentinel://{}?sentinelServiceName={}&node={}",
        stalled.addr,
        RedisSentinel::NAME,
        setup.sentinel,
    );

    let component = component_monitor(Redis::connect(&url).unwrap());
    let fleet: Vec<HealthHandle> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let cache = SharedCache::connect(&url)
                .unwrap()
                .key_prefix("topologies:stalled-sentinel:");
            let checks = Arc::new(AtomicU64::new(0));
            HealthMonitor::spawn(process(name, cache, Duration::from_millis(200), &checks)).unwrap()
        })
        .collect();
    share_again(&fleet, 3).await;
    becomes(&component, "cache", ComponentStatus::Healthy).await;
    assert!(
        stalled.accepted() > 0,
        "the stalled Sentinel was never asked"
    );
}

/// The ids of the clients of the server at `addr` that gave no name and last sent a command
/// other than `CLIENT` (this crate's; not a Sentinel's, nor the test's own).
async fn unnamed_clients(addr: SocketAddr) -> Vec<String> {
    let list: String = command(
        addr,
        redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("normal"),
    )
    .await
    .unwrap();
    list.lines()
        .filter(|line| line.split(' ').any(|field| field == "name="))
        .filter(|line| {
            !line
                .split(' ')
                .any(|field| field.starts_with("cmd=client|"))
        })
        .filter_map(|line| line.split(' ').find_map(|field| field.strip_prefix("id=")))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn behind_sentinel_the_primary_found_last_is_kept_while_every_sentinel_is_dark() {
    let setup = RedisSentinel::start().await;
    let sentinel = support::tcp_proxy::TcpProxy::start(setup.sentinel).await;
    let url = format!(
        "redis-sentinel://{}?sentinelServiceName={}",
        sentinel.addr,
        RedisSentinel::NAME,
    );
    let component = component_monitor(Redis::connect(&url).unwrap());
    becomes(&component, "cache", ComponentStatus::Healthy).await;

    // The Sentinel accepts and never answers; the primary's connection is cut, which puts
    // the primary in doubt.
    sentinel.freeze();
    let primary = setup.primary().await;
    let ours = unnamed_clients(primary).await;
    assert!(!ours.is_empty(), "no connection of the component's");
    for id in &ours {
        let _: redis::Value = command(primary, redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id))
            .await
            .unwrap();
    }

    // The component connects again to the primary it found last, which still says it is.
    let back = eventually(LIMIT, || async {
        unnamed_clients(primary)
            .await
            .iter()
            .any(|id| !ours.contains(id))
    })
    .await;
    assert!(
        back,
        "the component did not connect to the primary again within {LIMIT:?}: {:#?}",
        report(&component, "cache")
    );
    becomes(&component, "cache", ComponentStatus::Healthy).await;
}
