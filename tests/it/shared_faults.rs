//! Redis trouble never fails a probe: refused, stalled, stopped mid-run, or holding an entry
//! that must not be served, each process answers on time with its own verdict, the
//! component `shared_cache` reads `degraded` with the reason, and it recovers on its own.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use support::redis_server::{RedisServer, connect, redis_url, unique_prefix};
use support::tcp_proxy::TcpProxy;
use support::{Client, StalledListener, TestServer};
use tower_health::check::CheckErrorKind;
use tower_health::component::{self, ComponentSpec, ComponentStatus};
use tower_health::redis::SharedCache;
use tower_health::verdict::ComponentReport;
use tower_health::{HealthHandle, verdict::HealthVerdict};

/// One process on the real PostgreSQL, sharing through `cache`, served over HTTP.
async fn process(cache: SharedCache) -> (HealthHandle, TestServer) {
    let config = support::fast()
        .health_interval(Duration::from_millis(200))
        .database("default", support::postgres(&support::pg_url()))
        .shared_cache(cache.process_id("this-process"));
    support::health_server(config).await
}

fn shared_cache(verdict: &HealthVerdict) -> &ComponentReport {
    verdict
        .components
        .iter()
        .find(|report| &*report.name == "shared_cache")
        .expect("the shared_cache component is shown")
}

/// Waits (on every change of the view) until its health verdict satisfies `wanted`, checking
/// `always` on each on the way; returns it.
async fn until(
    health: &HealthHandle,
    wanted: impl Fn(&HealthVerdict) -> bool,
    always: impl Fn(&HealthVerdict),
) -> Arc<HealthVerdict> {
    let mut updates = health.watch();
    let found = support::bounded("the verdict awaited", async {
        updates
            .wait_for(|view| {
                always(&view.health);
                wanted(&view.health)
            })
            .await
            .map(|view| view.health)
    })
    .await;
    found.expect("the monitor is running")
}

/// Whether the verdict is a round's (not the placeholder before the first) whose
/// `shared_cache` is `status`.
fn cache_is(verdict: &HealthVerdict, status: ComponentStatus) -> bool {
    verdict.checked_at.is_some() && shared_cache(verdict).status == status
}

async fn cache_becomes(health: &HealthHandle, status: ComponentStatus) -> Arc<HealthVerdict> {
    until(health, |v| cache_is(v, status), |_| {}).await
}

fn error_kind(report: &ComponentReport) -> Option<CheckErrorKind> {
    report
        .outcome
        .as_ref()
        .and_then(|outcome| outcome.error_kind())
}

/// `/health` answers 200 `degraded` from this process's own verdict, readiness 200.
async fn answers_with_its_own_verdict(server: &TestServer, kind: CheckErrorKind) {
    let client = Client::new();
    let reply = client.get(server.addr, "/health").await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["status"], "degraded", "{body:#}");
    assert_eq!(body["_cache"]["hit"], true, "{body:#}");
    let component = &body["components"]["shared_cache"];
    assert_eq!(component["status"], "degraded", "{body:#}");
    assert_eq!(component["error_kind"], kind.as_str(), "{body:#}");
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, 200, "{}", ready.text());
}

#[tokio::test]
async fn a_closed_port_then_redis_starting_there() {
    require_postgres!();
    let mut redis = RedisServer::reserve().await;
    let (health, server) = process(SharedCache::connect(&redis.url()).unwrap()).await;
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    assert_eq!(
        error_kind(shared_cache(&verdict)),
        Some(CheckErrorKind::Refused)
    );
    assert_eq!(verdict.computed_by, None);
    answers_with_its_own_verdict(&server, CheckErrorKind::Refused).await;
    redis.start().await;
    cache_becomes(&health, ComponentStatus::Healthy).await;
}

#[tokio::test]
async fn a_listener_that_never_answers() {
    require_postgres!();
    let stalled = StalledListener::start().await;
    let cache = SharedCache::connect(&format!("redis://{}", stalled.addr)).unwrap();
    let (health, server) = process(cache).await;
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    assert_eq!(
        error_kind(shared_cache(&verdict)),
        Some(CheckErrorKind::Timeout)
    );
    answers_with_its_own_verdict(&server, CheckErrorKind::Timeout).await;
    // Later rounds keep answering, on the one connection.
    let rounds = health.stats().health_rounds + 3;
    until(&health, |_| health.stats().health_rounds >= rounds, |_| {}).await;
    assert_eq!(stalled.accepted(), 1, "one connection, not one per round");
}

#[tokio::test]
async fn redis_stalling_mid_run_then_answering_again() {
    require_postgres!();
    require_redis!();
    let redis: std::net::SocketAddr = redis_url().trim_start_matches("redis://").parse().unwrap();
    let proxy = TcpProxy::start(redis).await;
    let cache = SharedCache::connect(&proxy.url("redis"))
        .unwrap()
        .key_prefix(unique_prefix("stall-mid-run"));
    let (health, server) = process(cache).await;
    cache_becomes(&health, ComponentStatus::Healthy).await;
    proxy.freeze();
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    assert_eq!(
        error_kind(shared_cache(&verdict)),
        Some(CheckErrorKind::Timeout)
    );
    answers_with_its_own_verdict(&server, CheckErrorKind::Timeout).await;
    proxy.thaw();
    cache_becomes(&health, ComponentStatus::Healthy).await;
}

#[tokio::test]
async fn redis_stopped_mid_run_and_started_again() {
    require_postgres!();
    let mut redis = RedisServer::started(&[]).await;
    let (health, server) = process(SharedCache::connect(&redis.url()).unwrap()).await;
    cache_becomes(&health, ComponentStatus::Healthy).await;
    redis.stop();
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    let kind = error_kind(shared_cache(&verdict)).unwrap();
    // The connection dropped under a command, or reconnecting was refused.
    assert!(
        matches!(kind, CheckErrorKind::Closed | CheckErrorKind::Refused),
        "{verdict:#?}"
    );
    answers_with_its_own_verdict(&server, kind).await;
    redis.start().await;
    cache_becomes(&health, ComponentStatus::Healthy).await;
}

#[tokio::test]
async fn garbage_is_never_served_and_is_overwritten() {
    require_postgres!();
    require_redis!();
    let prefix = unique_prefix("garbage");
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(&prefix);
    let key = cache.entry_key();
    let (health, _server) = process(cache).await;
    cache_becomes(&health, ComponentStatus::Healthy).await;
    let mut redis = connect(&redis_url()).await;

    let _: () = redis.set(&key, "garbage").await.unwrap();
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    let outcome = shared_cache(&verdict).outcome.clone().unwrap();
    let reason = outcome.error.unwrap().message().to_owned();
    assert!(reason.contains("not a tower-health entry"), "{reason}");
    cache_becomes(&health, ComponentStatus::Healthy).await;
    let stored: String = redis.get(&key).await.unwrap();
    let entry: serde_json::Value = serde_json::from_str(&stored).expect("overwritten");
    assert_eq!(entry["format"], 2);
}

/// Keeps the lock under `cache`'s prefix for another process for a minute: this process
/// reads the entry every round and never writes it.
async fn hold_the_lock(redis: &mut redis::aio::MultiplexedConnection, cache: &SharedCache) {
    let _: () = redis::cmd("SET")
        .arg(cache.lock_key())
        .arg("another-process")
        .arg("PX")
        .arg(60_000)
        .query_async(redis)
        .await
        .unwrap();
}

/// The entry this process wrote, once it has written one.
async fn own_entry(redis: &mut redis::aio::MultiplexedConnection, key: &str) -> serde_json::Value {
    let written = support::eventually(support::LIMIT, || {
        let mut redis = redis.clone();
        async move {
            let stored: Option<String> = redis.get(key).await.unwrap();
            stored.is_some()
        }
    })
    .await;
    assert!(written, "the process never wrote its entry");
    let stored: String = redis.get(key).await.unwrap();
    serde_json::from_str(&stored).unwrap()
}

/// Stores `value` under `key` as a writer of this crate does: kept `keep_ms` (from the
/// entry), so that its age in Redis starts now.
async fn store(
    redis: &mut redis::aio::MultiplexedConnection,
    key: &str,
    value: &str,
    keep_ms: u64,
) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .arg("PX")
        .arg(keep_ms)
        .query_async(redis)
        .await
        .unwrap();
}

fn millis_since_epoch(at: std::time::SystemTime) -> u64 {
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap();
    u64::try_from(since.as_millis()).unwrap()
}

/// An entry's age is how long Redis has kept it, whatever the clocks of the processes say: a
/// writer whose clock is an hour behind (far more than the TTL) or ahead is served like any
/// other, fresh while Redis says it is.
#[tokio::test]
async fn an_entry_from_a_skewed_clock_is_served_by_its_age_in_redis() {
    require_postgres!();
    require_redis!();
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(unique_prefix("skewed-clock"));
    let key = cache.entry_key();
    let mut redis = connect(&redis_url()).await;
    let (health, server) = process(cache.clone()).await;
    let mut entry = own_entry(&mut redis, &key).await;
    hold_the_lock(&mut redis, &cache).await;
    let hour = Duration::from_secs(3600);
    let now = std::time::SystemTime::now();
    for (writer, computed_at) in [
        ("behind-by-an-hour", now - hour),
        ("ahead-by-an-hour", now + hour),
    ] {
        entry["computed_by"] = writer.into();
        entry["computed_at_ms"] = millis_since_epoch(computed_at).into();
        let keep = entry["keep_ms"].as_u64().unwrap();
        store(&mut redis, &key, &entry.to_string(), keep).await;
        until(
            &health,
            |verdict| verdict.computed_by.as_deref() == Some(writer),
            |_| {},
        )
        .await;
        let reply = Client::new().get(server.addr, "/health").await;
        let body = reply.json();
        assert_eq!(reply.status, 200, "{body:#}");
        assert_eq!(body["_cache"]["hit"], "shared", "{body:#}");
        assert!(
            body["_cache"]["age_ms"].as_u64().unwrap() < keep,
            "{body:#}"
        );
    }
}

/// A3: after `?nocache=true` published this process's own verdict, the fleet's entry (older
/// than that verdict) is served again at the next round, and `/health` never answers stale
/// meanwhile: serving a valid entry is a live round. A TTL past the staleness bound (5 s
/// against 900 ms here) is capped.
#[tokio::test]
async fn after_a_bypass_the_fleets_entry_is_served_again_and_never_goes_stale() {
    require_postgres!();
    require_redis!();
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(unique_prefix("bypass-then-shared"))
        .ttl(Duration::from_secs(5));
    let key = cache.entry_key();
    let mut redis = connect(&redis_url()).await;
    let (health, server) = process(cache.clone()).await;
    let mut entry = own_entry(&mut redis, &key).await;
    hold_the_lock(&mut redis, &cache).await;
    // Another process of the fleet, writing its entry every 100 ms.
    entry["computed_by"] = "fleet-writer".into();
    let keep = entry["keep_ms"].as_u64().unwrap();
    let writer = {
        let (mut redis, key, entry) = (redis.clone(), key.clone(), entry.to_string());
        tokio::spawn(async move {
            loop {
                store(&mut redis, &key, &entry, keep).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let served = |verdict: &HealthVerdict| verdict.computed_by.as_deref() == Some("fleet-writer");
    until(&health, served, |_| {}).await;
    let client = Client::new();
    let fresh = client.get(server.addr, "/health?nocache=true").await.json();
    assert_eq!(fresh["_cache"]["hit"], "bypassed", "{fresh:#}");
    assert_eq!(
        health.view().health.computed_by,
        None,
        "the bypass's own verdict"
    );
    until(&health, served, |_| {}).await;
    let rounds = health.stats().shared_rounds + 10;
    support::bounded("ten more shared rounds", async {
        while health.stats().shared_rounds < rounds {
            let reply = client.get(server.addr, "/health").await;
            assert_eq!(reply.status, 200, "{}", reply.text());
            assert!(!reply.text().contains("stale"), "{}", reply.text());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    writer.abort();
}

/// A single Redis demoted to a replica (a failover behind the name or proxy of the URL)
/// answers writes with `READONLY`: the connection is made anew and reaches the new primary,
/// instead of writing to the replica for good.
#[tokio::test]
async fn a_server_turned_replica_is_left_for_the_new_primary() {
    require_postgres!();
    let primary = RedisServer::started(&[]).await;
    let port = primary.addr.port().to_string();
    let replica = RedisServer::started(&["--replicaof", "127.0.0.1", &port]).await;
    let proxy = TcpProxy::start(replica.addr).await;
    let cache = SharedCache::connect(&proxy.url("redis"))
        .unwrap()
        .key_prefix(unique_prefix("readonly"));
    let (health, _server) = process(cache).await;
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    let error = shared_cache(&verdict)
        .outcome
        .clone()
        .unwrap()
        .error
        .unwrap();
    assert!(error.message().contains("read only replica"), "{error}");
    proxy.retarget(primary.addr);
    cache_becomes(&health, ComponentStatus::Healthy).await;
}

/// A1: an entry whose shared component has been in its state "since" the year 10000 (what
/// made the renderer panic and the monitor stop for good) is refused, and the monitor goes
/// on: readiness keeps its rounds and answers 200.
#[tokio::test]
async fn an_entry_from_the_year_10000_is_refused_and_the_monitor_runs_on() {
    require_postgres!();
    require_redis!();
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(unique_prefix("year-10000"));
    let key = cache.entry_key();
    let search = component::from_fn(|| async { Ok(()) });
    let config = support::fast()
        .health_interval(Duration::from_millis(200))
        .database("default", support::postgres(&support::pg_url()))
        .component(ComponentSpec::new("search", search).shared(true))
        .shared_cache(cache.clone().process_id("this-process"));
    let (health, server) = support::health_server(config).await;
    let mut redis = connect(&redis_url()).await;
    let mut entry = own_entry(&mut redis, &key).await;
    hold_the_lock(&mut redis, &cache).await;
    entry["components"][0]["since_ms"] = 253_402_300_800_000_u64.into();
    let keep = entry["keep_ms"].as_u64().unwrap();
    store(&mut redis, &key, &entry.to_string(), keep).await;
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    let reason = shared_cache(&verdict)
        .outcome
        .clone()
        .unwrap()
        .error
        .unwrap();
    assert!(reason.message().contains("since_ms"), "{reason}");
    let rounds = health.stats().readiness_rounds + 3;
    until(
        &health,
        |_| health.stats().readiness_rounds >= rounds,
        |_| {},
    )
    .await;
    assert!(health.is_monitor_running());
    let ready = Client::new().get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, 200, "{}", ready.text());
    let body = Client::new().get(server.addr, "/health").await;
    assert_eq!(body.status, 200, "{}", body.text());
}

/// Every kind of hostile entry: ignored with one warning (however many rounds read it),
/// never served, nothing of it in any body, the monitor running throughout.
#[tokio::test]
async fn a_corpus_of_hostile_entries_is_ignored_with_one_warning_each() {
    require_postgres!();
    require_redis!();
    const MARKER: &str = "HOSTILE-MARKER";
    let (logs, _guard) = support::logs::Captured::start();
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(unique_prefix("hostile"));
    let key = cache.entry_key();
    let search = component::from_fn(|| async { Ok(()) });
    let config = support::fast()
        .health_interval(Duration::from_millis(200))
        .database("default", support::postgres(&support::pg_url()))
        .component(ComponentSpec::new("search", search).shared(true))
        .shared_cache(cache.clone().process_id("this-process"));
    let (health, server) = support::health_server(config).await;
    let mut redis = connect(&redis_url()).await;
    let valid = own_entry(&mut redis, &key).await;
    hold_the_lock(&mut redis, &cache).await;
    let with = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut entry = valid.clone();
        change(&mut entry);
        entry.to_string()
    };
    let text = valid.to_string();
    let corpus: Vec<(&str, String)> = vec![
        ("wrong type", with(&|e| e["computed_at_ms"] = MARKER.into())),
        (
            "negative time",
            with(&|e| e["components"][0]["since_ms"] = (-1).into()),
        ),
        (
            "far future",
            with(&|e| e["computed_at_ms"] = 253_402_300_800_000_u64.into()),
        ),
        (
            "huge string",
            with(&|e| e["computed_by"] = MARKER.repeat(100_000).into()),
        ),
        (
            "long error",
            with(&|e| {
                e["database"]["status"] = "not_ready".into();
                e["database"]["error_kind"] = "refused".into();
                e["database"]["error"] = MARKER.repeat(1_000).into();
            }),
        ),
        (
            "unknown status",
            with(&|e| e["database"]["status"] = MARKER.into()),
        ),
        (
            "unknown detail",
            with(&|e| {
                e["database"]["status"] = "timed_out".into();
                e["database"]["detail"] = MARKER.into();
            }),
        ),
        (
            "another fingerprint",
            with(&|e| {
                e["fingerprint"] = "00000000000000000000000000000000".into();
                e["computed_by"] = MARKER.into();
            }),
        ),
        ("truncated JSON", text[..text.len() / 2].to_owned()),
    ];
    for (what, value) in &corpus {
        // Kept a minute (not the entry's own 400 ms): it is read round after round.
        store(&mut redis, &key, value, 60_000).await;
        let read_again = health.stats().health_rounds + 4;
        until(
            &health,
            |verdict| {
                verdict.checked_at.is_some()
                    && shared_cache(verdict).status == ComponentStatus::Degraded
                    && health.stats().health_rounds >= read_again
            },
            |verdict| assert_ne!(verdict.computed_by.as_deref(), Some(MARKER), "{what}"),
        )
        .await;
        assert!(health.is_monitor_running(), "{what}");
        for path in ["/health", "/health/ready", "/health/pool"] {
            let reply = Client::new().get(server.addr, path).await;
            assert!(
                !reply.text().contains(MARKER),
                "{what}: {path}: {}",
                reply.text()
            );
            assert_ne!(reply.status, 0, "{what}: {path}");
        }
        let warnings = logs.matching("the shared entry is ignored");
        assert_eq!(
            warnings.len(),
            1,
            "{what}: one warning per entry, however many rounds read it: {warnings:#?}"
        );
        assert!(
            !warnings[0].contains(MARKER) || *what == "another fingerprint",
            "{what}: {warnings:#?}"
        );
        logs.clear();
    }
    // The wrong Redis type: refused too, and overwritten once the lock is free.
    let _: () = redis.del(&key).await.unwrap();
    let _: () = redis.rpush(&key, MARKER).await.unwrap();
    let verdict = until(
        &health,
        |verdict| {
            verdict.checked_at.is_some()
                && shared_cache(verdict)
                    .outcome
                    .as_ref()
                    .and_then(|outcome| outcome.error.as_ref())
                    .is_some_and(|error| error.message().contains("another Redis type"))
        },
        |_| {},
    )
    .await;
    assert_eq!(verdict.computed_by, None);
    let _: () = redis.del(cache.lock_key()).await.unwrap();
    cache_becomes(&health, ComponentStatus::Healthy).await;
    let stored: String = redis.get(&key).await.unwrap();
    assert!(
        stored.starts_with('{') && !stored.contains(MARKER),
        "{stored}"
    );
}

#[tokio::test]
async fn a_dead_lock_holder_blocks_nobody_past_the_lock_expiry() {
    require_postgres!();
    require_redis!();
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(unique_prefix("dead-holder"));
    let (key, lock) = (cache.entry_key(), cache.lock_key());
    let mut redis = connect(&redis_url()).await;
    // A process took the lock and died before writing anything.
    let _: () = redis::cmd("SET")
        .arg(&lock)
        .arg("dead-process")
        .arg("PX")
        .arg(2000)
        .query_async(&mut redis)
        .await
        .unwrap();
    let (health, _server) = process(cache).await;
    // Rounds go on meanwhile, each with this process's own verdict, unwritten.
    let rounds = health.stats().health_rounds + 2;
    until(&health, |_| health.stats().health_rounds >= rounds, |_| {}).await;
    let held: i64 = redis.pttl(&lock).await.unwrap();
    let stored: Option<String> = redis.get(&key).await.unwrap();
    if held > 0 {
        assert_eq!(stored, None, "written while another process held the lock");
    }
    assert_eq!(health.view().health.computed_by, None);
    // Past the expiry, this process takes the lock and writes.
    let written = support::eventually(support::LIMIT, || async {
        let mut redis = redis.clone();
        let stored: Option<String> = redis.get(&key).await.unwrap();
        stored.is_some_and(|stored| stored.contains("\"computed_by\":\"this-process\""))
    })
    .await;
    assert!(written, "the entry was never written");
}
