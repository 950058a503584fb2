//! Redis trouble never fails a probe: refused, stalled, stopped mid-run, or holding an entry
//! that must not be served, each process answers on time with its own verdict, the
//! component `shared_cache` reads `degraded` with the reason, and it recovers on its own.

mod support;

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use support::redis_server::{RedisServer, redis_url, unique_prefix};
use support::tcp_proxy::TcpProxy;
use support::{Client, StalledListener, TestServer};
use tower_health::check::CheckErrorKind;
use tower_health::component::ComponentStatus;
use tower_health::shared::SharedCache;
use tower_health::verdict::ComponentReport;
use tower_health::{HealthHandle, HealthVerdict};

/// One process on the real PostgreSQL, sharing through `cache`, served over HTTP.
async fn process(cache: SharedCache) -> (HealthHandle, TestServer) {
    let config = support::fast()
        .health_interval(Duration::from_millis(200))
        .database("default", support::postgres(&support::pg_url()))
        .unwrap()
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

/// Waits (on every published verdict) until one satisfies `wanted`, checking `always` on
/// each on the way; returns it.
async fn until(
    health: &HealthHandle,
    wanted: impl Fn(&HealthVerdict) -> bool,
    always: impl Fn(&HealthVerdict),
) -> Arc<HealthVerdict> {
    let mut updates = health.subscribe();
    let found = support::bounded("the verdict awaited", async {
        updates
            .wait_for(|verdict| {
                always(verdict);
                wanted(verdict)
            })
            .await
            .map(|verdict| verdict.clone())
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
async fn garbage_and_a_future_entry_are_never_served_and_are_overwritten() {
    require_postgres!();
    require_redis!();
    let prefix = unique_prefix("garbage");
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(&prefix);
    let key = cache.entry_key();
    let (health, _server) = process(cache).await;
    cache_becomes(&health, ComponentStatus::Healthy).await;
    let client = redis::Client::open(redis_url()).unwrap();
    let mut redis = support::bounded("connecting", client.get_multiplexed_async_connection())
        .await
        .unwrap();

    let _: () = redis.set(&key, "garbage").await.unwrap();
    let verdict = cache_becomes(&health, ComponentStatus::Degraded).await;
    let outcome = shared_cache(&verdict).outcome.clone().unwrap();
    let reason = outcome.error.unwrap().message().to_owned();
    assert!(reason.contains("not a tower-health entry"), "{reason}");
    cache_becomes(&health, ComponentStatus::Healthy).await;
    let stored: String = redis.get(&key).await.unwrap();
    let mut entry: serde_json::Value = serde_json::from_str(&stored).expect("overwritten");
    assert_eq!(entry["format"], 1);

    let an_hour_ahead = std::time::SystemTime::now() + Duration::from_secs(3600);
    let millis = an_hour_ahead
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    entry["computed_at_ms"] = u64::try_from(millis).unwrap().into();
    entry["computed_by"] = "time-traveller".into();
    let _: () = redis.set(&key, entry.to_string()).await.unwrap();
    let never_served = |verdict: &HealthVerdict| {
        assert_ne!(verdict.computed_by.as_deref(), Some("time-traveller"));
    };
    let verdict = until(
        &health,
        |v| cache_is(v, ComponentStatus::Degraded),
        never_served,
    )
    .await;
    let outcome = shared_cache(&verdict).outcome.clone().unwrap();
    let reason = outcome.error.unwrap().message().to_owned();
    assert!(
        reason.contains("in the future by time-traveller"),
        "{reason}"
    );
    until(
        &health,
        |v| cache_is(v, ComponentStatus::Healthy),
        never_served,
    )
    .await;
    let stored: String = redis.get(&key).await.unwrap();
    assert!(!stored.contains("time-traveller"), "{stored}");
}

#[tokio::test]
async fn a_dead_lock_holder_blocks_nobody_past_the_lock_expiry() {
    require_postgres!();
    require_redis!();
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(unique_prefix("dead-holder"));
    let (key, lock) = (cache.entry_key(), cache.lock_key());
    let client = redis::Client::open(redis_url()).unwrap();
    let mut redis = support::bounded("connecting", client.get_multiplexed_async_connection())
        .await
        .unwrap();
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
    assert_eq!(health.health().computed_by, None);
    // Past the expiry, this process takes the lock and writes.
    let written = support::eventually(support::LIMIT, || async {
        let mut redis = redis.clone();
        let stored: Option<String> = redis.get(&key).await.unwrap();
        stored.is_some_and(|stored| stored.contains("\"computed_by\":\"this-process\""))
    })
    .await;
    assert!(written, "the entry was never written");
}
