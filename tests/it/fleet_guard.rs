//! The fleet guard over a fleet of four OS processes (the example server) sharing one Redis,
//! their PostgreSQL reached through a fault proxy that refuses it: without the guard every
//! process leaves; with it at 50%, the first two by process id stay in rotation and every
//! process says why; a process that drains still leaves and the guard keeps another; with
//! Redis gone the guard is off; and it lets go when the database returns. And, with monitors
//! in this process, what the guard makes of untrusted members under the fleet's key and of
//! another configuration's members under the same prefix.
//!
//! Needs the example built: `cargo test --all-features` builds it; with `--test it`, build it
//! first (`cargo build --all-features --example server`).

use crate::support;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;

use http::StatusCode;
use redis::AsyncCommands;
use serde_json::Value;
use support::child::Example;
use support::fault_proxy::FaultProxy;
use support::redis_server::{connect, redis_url, unique_prefix};
use support::{Client, LIMIT, eventually, pg_addr, refused_addr};
use tower_health::redis::SharedCache;
use tower_health::view::Condition;
use tower_health::{HealthHandle, HealthMonitor, Probe};

/// The fleet's size, and how many the guard keeps at 50% when all of it fails.
const SIZE: usize = 4;

/// The example servers of one test, `fleet-0` to `fleet-3`; killed when dropped.
struct Fleet {
    processes: Vec<Example>,
    addrs: Vec<SocketAddr>,
}

/// What one process answers on `/health/ready`: its status code and body.
#[derive(Debug)]
struct Ready {
    code: StatusCode,
    body: Value,
    envoy_degraded: bool,
}

impl Ready {
    fn status(&self) -> &str {
        self.body["status"].as_str().unwrap_or_default()
    }

    fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or_default()
    }

    /// Kept in rotation by the guard, with the fleet's count `failing` of 4, `in_rotation`.
    fn is_kept(&self, failing: u64, in_rotation: u64) -> bool {
        self.code == StatusCode::OK
            && self.status() == "degraded"
            && self.envoy_degraded
            && self.counts(true, failing, in_rotation)
            && self.reason().starts_with(&format!(
                "fleet guard: database `default` failing on {failing} of 4 processes; staying in rotation to keep {in_rotation} of 4 (50%)"
            ))
    }

    /// Out, and saying that the guard let it go.
    fn is_let_go(&self, failing: u64, in_rotation: u64) -> bool {
        self.code == StatusCode::SERVICE_UNAVAILABLE
            && self.status() == "not_ready"
            && !self.envoy_degraded
            && self.counts(false, failing, in_rotation)
            && self.reason().ends_with("this process leaves")
    }

    fn counts(&self, kept: bool, failing: u64, in_rotation: u64) -> bool {
        let guard = &self.body["fleet_guard"];
        guard["kept"] == kept
            && guard["members"] == 4
            && guard["failing"] == failing
            && guard["in_rotation"] == in_rotation
            && guard["wanted"] == 2
            && self.body["checks"]["database_default"] == "not_ready"
    }

    /// Out on its own readiness, the guard off or not concerned.
    fn is_plainly_out(&self) -> bool {
        self.code == StatusCode::SERVICE_UNAVAILABLE
            && self.status() == "not_ready"
            && self.body.get("fleet_guard").is_none()
            && self.body["checks"]["database_default"] == "not_ready"
    }

    fn is_plainly_ready(&self) -> bool {
        self.code == StatusCode::OK
            && self.status() == "ready"
            && self.body.get("fleet_guard").is_none()
            && !self.envoy_degraded
    }

    fn is_draining(&self) -> bool {
        self.code == StatusCode::SERVICE_UNAVAILABLE && self.status() == "draining"
    }
}

impl Fleet {
    /// Starts [`SIZE`] servers on `database`, sharing through the Redis at `redis` under a
    /// key prefix of their own, with the fleet guard at `guard` if any; waits until each
    /// answers `/health/ready` 200.
    async fn start(database: &FaultProxy, redis: &str, guard: Option<&str>) -> Self {
        let prefix = unique_prefix("fleet-guard");
        let mut fleet = Self {
            processes: Vec::new(),
            addrs: Vec::new(),
        };
        for index in 0..SIZE {
            let addr = refused_addr().await;
            let mut env = vec![
                ("LISTEN_ADDR", addr.to_string()),
                (
                    "DATABASE_URL",
                    database.pg_url("postgres", "unused", "postgres"),
                ),
                ("TOWER_HEALTH_HEALTH_INTERVAL", "1s".to_owned()),
                ("TOWER_HEALTH_REDIS_URL", redis.to_owned()),
                ("TOWER_HEALTH_SHARED_KEY_PREFIX", prefix.clone()),
                ("TOWER_HEALTH_SHARED_PROCESS_ID", format!("fleet-{index}")),
                // A drain that lasts past the test: the drained process keeps answering.
                ("TOWER_HEALTH_DRAIN_DELAY", "10m".to_owned()),
                ("TOWER_HEALTH_DRAIN_TIMEOUT", "11m".to_owned()),
                ("RUST_LOG", "warn".to_owned()),
            ];
            if let Some(fraction) = guard {
                env.push(("TOWER_HEALTH_FLEET_GUARD", fraction.to_owned()));
            }
            fleet.processes.push(Example::spawn("server", &env));
            fleet.addrs.push(addr);
        }
        let client = Client::new();
        for addr in &fleet.addrs {
            let up = eventually(LIMIT, || async {
                readiness(&client, *addr)
                    .await
                    .is_some_and(|ready| ready.is_plainly_ready())
            })
            .await;
            assert!(up, "the server on {addr} did not become ready");
        }
        fleet
    }

    /// Every process's readiness now, `None` for one that did not answer.
    async fn readiness(&self, client: &Client) -> Vec<Option<Ready>> {
        let mut all = Vec::with_capacity(self.addrs.len());
        for addr in &self.addrs {
            all.push(readiness(client, *addr).await);
        }
        all
    }

    /// Waits until every process's readiness passes its test in `expected` at once; fails
    /// with what each answered last, and `what`.
    async fn wait_for(&self, what: &str, expected: [&dyn Fn(&Ready) -> bool; SIZE]) {
        let client = Client::new();
        let last = RefCell::new(Vec::new());
        let reached = eventually(LIMIT, || async {
            let now = self.readiness(&client).await;
            let reached = now
                .iter()
                .zip(&expected)
                .all(|(ready, test)| ready.as_ref().is_some_and(test));
            *last.borrow_mut() = now;
            reached
        })
        .await;
        assert!(
            reached,
            "{what}: the fleet answered {:#?} (an example built from another tree, in a shared \
             target directory, knows no fleet guard: `cargo build --all-features --example server`)",
            last.borrow()
        );
    }
}

async fn readiness(client: &Client, addr: SocketAddr) -> Option<Ready> {
    let reply = client.try_get(addr, "/health/ready").await.ok()?;
    Some(Ready {
        code: reply.status,
        body: serde_json::from_slice(&reply.body).ok()?,
        envoy_degraded: reply.header("x-envoy-degraded").is_some(),
    })
}

/// The database refused: the port closed and every open connection reset.
async fn refuse(database: &FaultProxy) {
    database.refuse().await;
    database.cut();
}

fn redis_upstream() -> SocketAddr {
    redis_url()
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .parse()
        .expect("TEST_REDIS_URL is redis://<ip>:<port>")
}

#[tokio::test]
async fn without_the_guard_every_process_leaves_when_the_database_is_refused() {
    require_postgres!();
    require_redis!();
    let database = FaultProxy::postgres(pg_addr()).await;
    let fleet = Fleet::start(&database, &redis_url(), None).await;
    refuse(&database).await;
    let out: &dyn Fn(&Ready) -> bool = &Ready::is_plainly_out;
    fleet
        .wait_for("the database refused, no guard", [out; SIZE])
        .await;
}

#[tokio::test]
async fn with_the_guard_at_half_two_of_four_stay_in_rotation_and_all_say_why() {
    require_postgres!();
    require_redis!();
    let database = FaultProxy::postgres(pg_addr()).await;
    // Redis through a proxy of its own, to take it away.
    let redis = FaultProxy::tcp(redis_upstream()).await;
    let redis_url = format!("redis://{}", redis.addr);
    let fleet = Fleet::start(&database, &redis_url, Some("0.5")).await;

    // The database refused to all four: the first two by process id stay in, `degraded`,
    // the other two leave, and each says so with the fleet's count.
    refuse(&database).await;
    fleet
        .wait_for(
            "the database refused, guard at 50%",
            [
                &|ready| ready.is_kept(4, 2),
                &|ready| ready.is_kept(4, 2),
                &|ready| ready.is_let_go(4, 2),
                &|ready| ready.is_let_go(4, 2),
            ],
        )
        .await;

    // `/health` lists the same conclusion last among its causes, its status the database's.
    let client = Client::new();
    for addr in &fleet.addrs {
        let listed = eventually(LIMIT, || async {
            let (Some(ready), Ok(health)) = (
                readiness(&client, *addr).await,
                client.try_get(*addr, "/health").await,
            ) else {
                return false;
            };
            let health = health.json();
            let last = health["causes"].as_array().and_then(|causes| causes.last());
            health["status"] == "unhealthy"
                && last.is_some_and(|last| {
                    last["kind"] == "fleet_guard" && last["text"] == ready.body["reason"]
                })
        })
        .await;
        assert!(listed, "{addr}: /health does not list the fleet guard");
    }
    // Kubernetes' list says the same: a kept process passes, its database degraded and the
    // guard's line last; a process let go fails on its database.
    let verbose = |addr: SocketAddr| {
        let client = &client;
        async move {
            eventually(LIMIT, || async {
                let Ok(reply) = client.try_get(addr, "/health/ready?verbose").await else {
                    return false;
                };
                let text = reply.text();
                match reply.status.as_u16() {
                    200 => {
                        text.contains("[+]database/default degraded: ")
                            && text.contains("[+]fleet-guard degraded: fleet guard: database `default` failing on 4 of 4 processes")
                            && text.ends_with("readyz check passed\n")
                    }
                    _ => {
                        text.contains("[-]database/default failed: ")
                            && !text.contains("fleet-guard")
                            && text.ends_with("readyz check failed\n")
                    }
                }
            })
            .await
        }
    };
    for addr in &fleet.addrs {
        assert!(
            verbose(*addr).await,
            "{addr}: ?verbose disagrees with the guard"
        );
    }

    // A local fault: `fleet-0` drains. It leaves whatever the guard says, and the guard
    // keeps `fleet-2` in its place.
    fleet.processes[0].sigterm();
    fleet
        .wait_for(
            "fleet-0 draining",
            [
                &Ready::is_draining,
                &|ready| ready.is_kept(3, 2),
                &|ready| ready.is_kept(3, 2),
                &|ready| ready.is_let_go(3, 2),
            ],
        )
        .await;

    // Redis gone: the guard is off, and readiness is each process's own.
    redis.refuse().await;
    redis.cut();
    let out: &dyn Fn(&Ready) -> bool = &Ready::is_plainly_out;
    fleet
        .wait_for("Redis refused", [&Ready::is_draining, out, out, out])
        .await;
    redis.pass().await;
    fleet
        .wait_for(
            "Redis back",
            [
                &Ready::is_draining,
                &|ready| ready.is_kept(3, 2),
                &|ready| ready.is_kept(3, 2),
                &|ready| ready.is_let_go(3, 2),
            ],
        )
        .await;

    // The database returns: the guard lets go, everyone is plainly ready (but the drained
    // one).
    database.pass().await;
    let ready: &dyn Fn(&Ready) -> bool = &Ready::is_plainly_ready;
    fleet
        .wait_for(
            "the database back",
            [&Ready::is_draining, ready, ready, ready],
        )
        .await;
    // `/health` tells the same once the fleet's shared verdict has caught up.
    for addr in &fleet.addrs[1..] {
        let healthy = eventually(LIMIT, || async {
            client
                .try_get(*addr, "/health")
                .await
                .is_ok_and(|reply| reply.status == StatusCode::OK)
        })
        .await;
        assert!(healthy, "{addr}: /health did not answer 200");
    }
}

/// This process's readiness now: its status and the guard's `(kept, members, in_rotation)`.
fn standing(health: &HealthHandle) -> (&'static str, Option<(bool, usize, usize)>) {
    let readiness = health.view().readiness;
    let guard = readiness
        .fleet_guard
        .as_ref()
        .map(|guard| (guard.kept, guard.members, guard.in_rotation));
    (readiness.status(), guard)
}

/// Waits until this process's readiness is `wanted`; fails with the last seen.
async fn becomes(
    health: &HealthHandle,
    what: &str,
    wanted: (&'static str, Option<(bool, usize, usize)>),
) {
    let reached = eventually(LIMIT, || async { standing(health) == wanted }).await;
    assert!(reached, "{what}: readiness is {:?}", standing(health));
}

/// Redis's clock, in milliseconds: what the members are stamped with.
async fn redis_now(redis: &mut redis::aio::MultiplexedConnection) -> u64 {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query_async(redis).await.unwrap();
    seconds * 1000 + micros / 1000
}

/// What another process (or anyone who reaches Redis) writes under the fleet's key is
/// untrusted: members that do not read, or that are too old or stamped in the future, are
/// not counted (and the script drops the old and unreadable ones); a valid member of this
/// configuration counts; a
/// key of another type or a hash past the cap turns the guard off, and readiness is this
/// process's own, until the key is usable again.
#[tokio::test]
async fn untrusted_fleet_members_are_not_counted_and_an_unreadable_fleet_turns_the_guard_off() {
    require_postgres!();
    require_redis!();
    let database = FaultProxy::postgres(pg_addr()).await;
    refuse(&database).await;
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(unique_prefix("fleet-guard-untrusted"))
        .process_id("m-1")
        .fleet_guard(0.5);
    let key = cache.fleet_key();
    let config = support::fast()
        .database(
            "default",
            support::postgres(&database.pg_url("postgres", "unused", "postgres")),
        )
        .shared_cache(cache);
    let health = HealthMonitor::spawn(config).unwrap();
    let mut redis = connect(&redis_url()).await;

    // Alone and out on the database: the fleet of one keeps it.
    let kept_alone = ("degraded", Some((true, 1, 1)));
    becomes(&health, "alone", kept_alone).await;

    // This process's configuration, as its own member names it: `<ms> <fingerprint> ...`.
    let own: String = redis.hget(&key, "m-1").await.unwrap();
    let fingerprint = own.split(' ').nth(1).unwrap().to_owned();

    // Junk beside it: a control character in an id (stamped far ahead, so that it stays),
    // a value that does not read, a member long gone, one from the future.
    let now = redis_now(&mut redis).await;
    let junk: [(&str, String); 4] = [
        (
            "junk\u{1}",
            format!("{} {fingerprint} ready", now + 3_600_000),
        ),
        ("garbage", "not a standing".to_owned()),
        ("gone", format!("{} {fingerprint} ready", now - 3_600_000)),
        ("future", format!("{} {fingerprint} ready", now + 3_600_000)),
    ];
    for (field, value) in &junk {
        let _: () = redis.hset(&key, field, value).await.unwrap();
    }
    // The script drops what does not read and what is too old, in the next round.
    let dropped = eventually(LIMIT, || {
        let mut redis = redis.clone();
        let key = key.clone();
        async move {
            let exists: (bool, bool) = redis::pipe()
                .hexists(&key, "garbage")
                .hexists(&key, "gone")
                .query_async(&mut redis)
                .await
                .unwrap();
            exists == (false, false)
        }
    })
    .await;
    assert!(
        dropped,
        "the unreadable and the old member are still under {key}"
    );
    // Nothing of it counted.
    assert_eq!(standing(&health), kept_alone);

    // A valid member that is ready, kept fresh: it counts, and the guard lets this one go.
    let writer = {
        let mut redis = redis.clone();
        let key = key.clone();
        let fingerprint = fingerprint.clone();
        tokio::spawn(async move {
            loop {
                let now = redis_now(&mut redis).await;
                let _: () = redis
                    .hset(&key, "m-0", format!("{now} {fingerprint} ready"))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    becomes(
        &health,
        "beside a ready member",
        ("not_ready", Some((false, 2, 1))),
    )
    .await;
    writer.abort();
    let _ = writer.await;
    let _: () = redis.hdel(&key, "m-0").await.unwrap();
    becomes(&health, "alone again", kept_alone).await;

    // The key holds another type: the guard is off, readiness this process's own.
    let _: () = redis.del(&key).await.unwrap();
    let _: () = redis.set(&key, "not a hash").await.unwrap();
    becomes(&health, "a string under the key", ("not_ready", None)).await;
    let _: () = redis.del(&key).await.unwrap();
    becomes(&health, "the key usable again", kept_alone).await;

    // More members than the guard counts: off, without writing or reading them.
    let crowd: Vec<(String, String)> = (0..1001)
        .map(|index| {
            (
                format!("crowd-{index}"),
                format!("{now} {fingerprint} ready"),
            )
        })
        .collect();
    let _: () = redis.hset_multiple(&key, &crowd).await.unwrap();
    becomes(&health, "1001 members", ("not_ready", None)).await;
    let _: () = redis.del(&key).await.unwrap();
    becomes(&health, "the crowd gone", kept_alone).await;
}

/// One process of a fleet of monitors in this process, under the prefix `prefix`, with the
/// guard at 50%: `id` on `database` (whose target decides the configuration), readiness
/// rounds every 100 ms, members counting for 2.3 s (a deadline of 2 s: a check refused
/// answers at once, and a member is not lost to one slow round of a busy machine).
fn member(prefix: &str, id: &str, database: &str) -> HealthHandle {
    let cache = SharedCache::connect(&redis_url())
        .unwrap()
        .key_prefix(prefix)
        .process_id(id)
        .fleet_guard(0.5);
    let config = support::fast()
        .readiness_timeout(Duration::from_secs(2))
        .database("default", support::postgres(database))
        .shared_cache(cache);
    HealthMonitor::spawn(config).unwrap()
}

/// Two configurations under one prefix: A's two processes (`a-0`, `a-1`) on a database that
/// refuses, B's two (`b-0`, `b-1`) on the real one. Returns A's, then B's.
async fn two_configurations(prefix: &str) -> ([HealthHandle; 2], [HealthHandle; 2]) {
    let refused = support::refused_addr().await;
    let refused = format!("postgres://postgres@{refused}/postgres");
    let ready = support::pg_url();
    (
        [
            member(prefix, "a-0", &refused),
            member(prefix, "a-1", &refused),
        ],
        [member(prefix, "b-0", &ready), member(prefix, "b-1", &ready)],
    )
}

/// A's fleet as the guard counts it at 50%: two members, one wanted, so `a-0` (first by id)
/// stays in rotation and `a-1` leaves.
async fn a_counts_only_its_own(a: &[HealthHandle; 2], what: &str) {
    becomes(
        &a[0],
        &format!("a-0, {what}"),
        ("degraded", Some((true, 2, 1))),
    )
    .await;
    becomes(
        &a[1],
        &format!("a-1, {what}"),
        ("not_ready", Some((false, 2, 1))),
    )
    .await;
}

/// Waits for ten more readiness rounds of each of `fleet`, unchanged, then checks that each
/// process warned once that members of another configuration are not counted, not once per
/// round.
///
/// Both tests that reach this warning capture the logs: `tracing` decides once for the whole
/// process whether a log line is wanted, when a thread first reaches it, and while one
/// subscriber is set anywhere it asks that thread's alone: a test without one could silence
/// the line for the other.
async fn warned_once_each(logs: &support::logs::Captured, fleet: &[&HealthHandle], ids: &[&str]) {
    let rounds: Vec<u64> = fleet
        .iter()
        .map(|health| health.stats().readiness_rounds)
        .collect();
    let later = eventually(LIMIT, || async {
        fleet
            .iter()
            .zip(&rounds)
            .all(|(health, before)| health.stats().readiness_rounds >= before + 10)
    })
    .await;
    assert!(later, "the monitors ran no more rounds");
    for id in ids {
        let field = format!("process_id={id}");
        let warnings = logs
            .matching("of another configuration")
            .into_iter()
            .filter(|line| line.split_whitespace().any(|word| word == field))
            .count();
        assert_eq!(warnings, 1, "{id}: {:#?}", logs.lines());
    }
}

/// Issue 29 C2: another application's ready processes under the same prefix do not meet
/// A's `wanted` on paper: A keeps the fraction of its own fleet in rotation, and each
/// process says once that members of another configuration are not counted.
#[tokio::test]
async fn another_configuration_s_ready_members_do_not_push_this_one_s_out() {
    require_postgres!();
    require_redis!();
    let (logs, _guard) = support::logs::Captured::start();
    let prefix = unique_prefix("fleet-guard-configurations");
    let (a, b) = two_configurations(&prefix).await;
    for (index, b) in b.iter().enumerate() {
        becomes(b, &format!("b-{index}"), ("ready", None)).await;
    }
    a_counts_only_its_own(&a, "beside B's ready processes").await;
    // Issue 29 D5: the keep shows in the metrics, where readiness passes alike for `a-0`,
    // kept, and `b-0`, ready on its own.
    #[cfg(feature = "metrics")]
    for (health, passing, kept) in [(&a[0], 1, 1), (&a[1], 0, 0), (&b[0], 1, 0)] {
        let metrics = tower_health::metrics::HealthMetrics::new(health);
        let text = String::from_utf8(metrics.exposition().to_vec()).unwrap();
        for line in [
            format!("\ntower_health_probe_passing{{probe=\"ready\"}} {passing}\n"),
            format!("\ntower_health_fleet_guard_kept {kept}\n"),
        ] {
            assert!(text.contains(&line), "{line:?} in\n{text}");
        }
    }
    warned_once_each(
        &logs,
        &[&a[0], &a[1], &b[0], &b[1]],
        &["a-0", "a-1", "b-0", "b-1"],
    )
    .await;
    a_counts_only_its_own(&a, "ten rounds later").await;
}

/// Issue 29 C2, the reverse: another configuration's held and draining processes do not
/// count in A's fleet, so they do not keep more of A in rotation than the fraction says.
#[tokio::test]
async fn another_configuration_s_held_or_draining_members_keep_no_more_of_this_one_in() {
    require_postgres!();
    require_redis!();
    let (logs, _guard) = support::logs::Captured::start();
    let prefix = unique_prefix("fleet-guard-configurations-out");
    let (a, b) = two_configurations(&prefix).await;
    assert!(b[0].hold("maintenance"));
    let drain = b[1].drain().clone();
    drain.start();
    becomes(&b[0], "b-0 held", ("not_ready", None)).await;
    a_counts_only_its_own(&a, "beside B's held and draining processes").await;
    warned_once_each(&logs, &[&a[0], &a[1]], &["a-0", "a-1"]).await;
    // Not a moment before B's standings were published: ten rounds on, the same.
    a_counts_only_its_own(&a, "ten rounds later").await;
}

/// Issue 29 C3: a hold or its release changes the hold and nothing else of the verdict. A
/// process the guard keeps in rotation, held and released between two rounds (nothing is
/// awaited in between, so no round runs), is kept again at once: a release once rebuilt
/// readiness from the outcomes and dropped the guard's decision, and the process read 503
/// `not_ready` until the next round.
#[tokio::test]
async fn a_release_restores_the_fleet_guards_keep_at_once() {
    require_postgres!();
    require_redis!();
    let refused = support::refused_addr().await;
    let refused = format!("postgres://postgres@{refused}/postgres");
    let alone = member(&unique_prefix("fleet-guard-hold"), "alone", &refused);
    // Alone in its fleet and failing on the shared database: kept, one of one.
    becomes(&alone, "kept", ("degraded", Some((true, 1, 1)))).await;
    assert!(alone.hold("deploy freeze"));
    let held = alone.view().readiness;
    assert_eq!((held.status(), held.passes()), ("not_ready", false));
    assert!(alone.release());
    assert_eq!(
        standing(&alone),
        ("degraded", Some((true, 1, 1))),
        "the release restored the round's verdict, the guard's keep included"
    );
    assert!(alone.view().readiness.passes());
}

/// A fleet of two under one prefix of its own, at 50%, every failure an outage (no
/// debounce), a return's delay of a minute; `a` first by id. Both ready.
async fn returning_fleet(database: &FaultProxy) -> (HealthHandle, HealthHandle, String) {
    let prefix = unique_prefix("fleet-guard-return");
    let url = database.pg_url("postgres", "unused", "postgres");
    let member = |id: &str| {
        let cache = SharedCache::connect(&redis_url())
            .unwrap()
            .key_prefix(&prefix)
            .process_id(id)
            .fleet_guard(0.5);
        let config = support::fast()
            .readiness_timeout(Duration::from_secs(2))
            .debounce(Duration::ZERO)
            .return_jitter(Duration::from_secs(60))
            .database("default", support::postgres(&url))
            .shared_cache(cache);
        HealthMonitor::spawn(config).unwrap()
    };
    let (a, b) = (member("a"), member("b"));
    for health in [&a, &b] {
        becomes(health, "at the start", ("ready", None)).await;
    }
    (a, b, prefix)
}

fn passing(health: &HealthHandle) -> bool {
    health.view().answer(Probe::Ready).passing
}

/// A process the guard keeps in comes back at once (issue 35 A1): with the shared database
/// refused, `a` kept and `b` let go, `a` drains and the guard keeps `b` in its place; `b`
/// answers 200 at once. It used to draw the return's delay as the guard kept it in (its
/// failure had lasted the debounce), and answered 503: the fleet had no process in rotation.
#[tokio::test]
async fn a_process_the_guard_keeps_in_does_not_wait_out_a_return() {
    require_postgres!();
    require_redis!();
    let database = FaultProxy::postgres(pg_addr()).await;
    let (a, b, _prefix) = returning_fleet(&database).await;
    refuse(&database).await;
    // For a round or two a process may read the other's `ready` from before the failure.
    becomes(&a, "a, kept", ("degraded", Some((true, 2, 1)))).await;
    becomes(&b, "b, let go", ("not_ready", Some((false, 2, 1)))).await;
    assert!(passing(&a) && !passing(&b));

    a.drain().start();
    let kept = eventually(LIMIT, || async { passing(&b) }).await;
    assert!(kept, "b kept in a's place answers 200: {:?}", b.view());
    assert_eq!(standing(&b), ("degraded", Some((true, 2, 1))));
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(passing(&b), "the kept process stays in rotation");
    }
}

/// A return never leaves the fleet below the guard's fraction (issue 35 A1): once the shared
/// database is back, `b` (let go during the outage) waits out its return's delay, answering
/// 503 and writing `returning` to the fleet (it used to write `ready` at once, and a process
/// the guard kept in on a round that still saw the failure let go: both out), while `a`
/// (kept in during the outage) stays in rotation.
#[tokio::test]
async fn a_process_on_its_way_back_is_not_in_rotation_for_the_fleet() {
    require_postgres!();
    require_redis!();
    let database = FaultProxy::postgres(pg_addr()).await;
    let (a, b, prefix) = returning_fleet(&database).await;
    refuse(&database).await;
    becomes(&a, "a, kept", ("degraded", Some((true, 2, 1)))).await;
    becomes(&b, "b, let go", ("not_ready", Some((false, 2, 1)))).await;

    database.pass().await;
    let returning = eventually(LIMIT, || async {
        b.view().answer(Probe::Ready).condition == Condition::Returning
    })
    .await;
    assert!(returning, "b waits out its return: {:?}", b.view());
    let mut redis = connect(&redis_url()).await;
    let written: String = redis
        .hget(format!("{prefix}fleet"), "b")
        .await
        .expect("b's standing");
    assert!(
        written.ends_with(" returning"),
        "b tells the fleet it is on its way back: {written:?}"
    );
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(passing(&a), "the process kept in stays in rotation");
        assert!(!passing(&b), "the returning one is out");
    }
}
