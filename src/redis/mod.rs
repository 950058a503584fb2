//! Redis (feature `redis`), through the `redis` crate: [`Redis`], a component that checks a
//! Redis server, and [`SharedCache`], one health verdict for the whole fleet, shared through
//! Redis. Both take the same URLs, one server, a Redis Cluster or a primary found through
//! Sentinel ([Beyond one Redis](#beyond-one-redis)), and sort Redis's errors the same way.
//!
//! # One verdict for the fleet
//!
//! With a [`SharedCache`] configured (or `TOWER_HEALTH_REDIS_URL` set), the part of the
//! health verdict that is the same for every process is one entry in Redis: the databases'
//! outcomes and the [components marked shared](crate::component::ComponentSpec::shared)
//! (an expensive dependency check, say). Each health round first reads the entry:
//!
//! - **fresh** (younger than the [TTL](SharedCache::ttl)): the round serves it as its own,
//!   and `/health` says so: `"_cache": {"hit": "shared", "computed_by": "web-7d9f/12",
//!   "age_ms": 2140}`, the age being the time Redis has kept the entry (its clock, not the
//!   processes'). A round that serves the entry is a live round: the verdict goes stale only
//!   when no round has published for its staleness bound, as for one computed here;
//! - **stale, missing or unusable**: the processes race for a short lock
//!   (`SET <prefix>health:lock <id> NX PX <lock expiry>`). The winner runs the checks,
//!   publishes its verdict and writes the entry, if the lock is still its own by then; the
//!   others keep serving the entry they have (Redis keeps it twice the TTL) and read the new
//!   one next round. One process computes per window, whatever the size of the fleet. A
//!   winner that dies blocks nobody past the lock's expiry. A process's own verdict says who
//!   computed it too (`"_cache": {"hit": true, "computed_by": "web-7d9f/12", ...}`).
//!
//! The health rounds of a process with a shared cache are spread over the interval at
//! random, then drift by up to 10 % each, so that a fleet started together does not read,
//! race and compute in lockstep.
//!
//! ## What stays this process's own
//!
//! - **Readiness**, always: each process's readiness follows its own connections, so a pod
//!   whose own network path to the database broke leaves rotation alone.
//! - The process-local watchers, merged on top of the shared part: round lag (`monitor`),
//!   pool saturation, runtime starvation, the components not marked shared, and the cache
//!   itself (`shared_cache`).
//! - `?nocache=true`: this process's verdict, computed fresh; it does not overwrite the
//!   entry unless [`SharedCache::nocache_writes`] says so.
//!
//! ## When Redis is in trouble
//!
//! Redis never fails a probe. Every Redis command is bounded by the round's deadline;
//! refused, slow, stalled or gone, the round falls back to computing its own verdict (a
//! round then takes at most two deadlines), and the component `shared_cache` reads
//! `degraded` with the reason until a round gets through again.
//!
//! ## The entry, an untrusted input
//!
//! Under `<prefix>health` (default prefix `tower-health:`), JSON, kept twice the TTL:
//! `format` (2), `fingerprint` (of the configuration that computed it), `computed_at_ms`
//! (the end of the computing round, milliseconds since the Unix epoch), `computed_by` (the
//! [process id](SharedCache::process_id)), `keep_ms` (how long Redis keeps it), `database`
//! (the default database's outcome), `databases` (the others'), `components` (the shared
//! ones' reports). Error messages in it are redacted like every error of this crate.
//!
//! Whoever reaches Redis can write under the key, so a process reads the entry as untrusted
//! input:
//!
//! - at most 64 KiB of it is read;
//! - its **fingerprint** must be this process's own: a hash of the format and of each
//!   database's name, target and criticality and each shared component's, in order. Two
//!   applications that both call their database `default`, or two configurations during a
//!   rollout (a database optional in one, critical in the other), never serve each other's
//!   verdict, and each process's own criticality decides. Under the default prefix, another
//!   configuration's entry is worth a warning: give each application its own
//!   [prefix](SharedCache::key_prefix);
//! - every field must hold a valid value: statuses and error categories among the known
//!   words, timestamps no later than the year 9999, durations within a year, strings within
//!   their caps, details scalar, the databases and shared components this process's own;
//! - an entry that fails (or a key holding another type than a string) is not served,
//!   whole: it is logged once as a warning, `shared_cache` reads `degraded` with why (never
//!   quoting the entry), and the next computation overwrites it.
//!
//! [`SharedCache::ttl`] is capped at the health verdict's staleness bound (three health
//! intervals plus the readiness timeout; `TOWER_HEALTH_SHARED_TTL` beyond it is refused at
//! start): an entry served as fresh is never older than this process's own verdict may get.
//!
//! # The fleet guard
//!
//! Opt-in ([`SharedCache::fleet_guard`], `TOWER_HEALTH_FLEET_GUARD`): a process whose
//! readiness fails only on a dependency the whole fleet shares (a critical database refused
//! or timing out, a [shared](crate::component::ComponentSpec::shared) component gating
//! readiness) stays in rotation, readiness 200 `degraded` with a reason naming the guard and
//! the fleet's count, while answering 503 would leave less than the configured fraction of
//! the fleet in rotation. Its own drain, a hold, its own pool saturated, a component of its
//! own, a round that panicked or a stale monitor still take it out.
//!
//! Each readiness round, the process writes its standing (`ready`, `local` or
//! `shared <cause>`) into the hash `<prefix>fleet` under its [id](SharedCache::process_id),
//! stamped with Redis's clock and its configuration's fingerprint (the entry's), and reads
//! the others' in the same round trip (one script); members older than the readiness
//! verdict's staleness bound do not count and are dropped. Members of another configuration
//! (another application under the same prefix, the other side of a rollout) do not count
//! either, with one warning: each configuration is a fleet of its own, whose standings its
//! own criticality judged. Of `members`, ceil(fraction × members) should be in rotation; when fewer are ready on
//! their own, the processes failing on a shared cause are ranked by id and the first ones
//! stay in. Every process computes the same ranking from the same standings, so the fleet
//! agrees without talking. Redis in trouble, or a hash of more than 1,000 members, turns
//! the guard off for the round: readiness is then the process's own. What Redis returns is
//! untrusted: bounded, validated, and a member that fails is not counted. The
//! [fleet page](crate::guide::fleet#the-fleet-guard) of the guide has the rule in full.
//!
//! # Beyond one Redis
//!
//! [`SharedCache::connect`] and [`Redis::connect`] take
//! any of these URLs (`TOWER_HEALTH_REDIS_URL` and `TOWER_HEALTH_REDIS_<NAME>` too):
//!
//! | topology | URL | feature |
//! |---|---|---|
//! | one server | `redis://[user:password@]host[:port][/db]`; `rediss://` for TLS | `redis`; TLS: `rustls` |
//! | Redis Cluster | `redis-cluster://[user:password@]host[:port][?node=host[:port]&...]`; `rediss-cluster://` for TLS | `redis-cluster` |
//! | Sentinel | `redis-sentinel://[user:password@]host[:port][/db]?sentinelServiceName=<name>[&node=host[:port]...][&sentinelUsername=...&sentinelPassword=...]`; `rediss-sentinel://` for TLS | `redis-sentinel` |
//!
//! The cluster and Sentinel forms are those of `fred` (another Rust client) and Apollo
//! Router, so one URL reads alike in both. In a cluster URL every host is a seed node (port
//! 6379 unless given); the client learns the others and routes each command by its key's
//! slot. In a Sentinel URL the hosts are Sentinels (port 26379 unless given), all asked at
//! once for the primary named `sentinelServiceName` (the first answer that the primary
//! confirms wins, so a Sentinel that never answers delays nothing, wherever it is listed);
//! the user, password and database are the primary's, `sentinelUsername` and
//! `sentinelPassword` the Sentinels' own. Passwords are masked wherever a URL or an error is
//! shown, and the target shows no credentials (`cluster host:port,...`,
//! `sentinel <name>/<db> at host:port,...`).
//!
//! Every command of the shared cache touches one key (`GET` and `SET ... PX` of the entry,
//! `SET ... NX PX` of the lock, the fleet guard's script on `<prefix>fleet`), so the keys may
//! live in different slots of a cluster.
//! A connection of this crate's own is one multiplexed connection per process on every
//! topology: on a cluster, one per node; behind Sentinel, one to the primary, dropped and
//! found again through the Sentinels when the primary is in doubt (the connection failed,
//! `READONLY` from a demoted primary, or a command abandoned at the round's deadline), so
//! that the cache works again after a failover. While every Sentinel is dark, the primary
//! found last is used again if it still says it is the primary. A URL of a topology whose
//! feature the build lacks is refused at start with an error naming the feature, never read
//! as one server.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use tower_health::HealthConfig;
//! use tower_health::redis::SharedCache;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let cache = SharedCache::connect("redis://127.0.0.1:6379/0")?
//!     .key_prefix("checkout:")
//!     .ttl(Duration::from_secs(10));
//! assert_eq!(cache.entry_key(), "checkout:health");
//! let config = HealthConfig::new().shared_cache(cache);
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

mod client;
mod component;
mod shared;

pub use self::component::Redis;
pub(crate) use self::shared::FleetSeen;
pub use self::shared::SharedCache;
pub(crate) use self::shared::{
    CacheStatus, Entry, Expected, FleetMembers, Lock, Read, SHARED_CACHE_COMPONENT, SharedVerdicts,
    Subject, first_round_phase, next_round_wait,
};
