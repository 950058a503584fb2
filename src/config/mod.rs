//! Configuration: [`HealthConfig`] for the monitor and the probe endpoints.
//!
//! Every setting has a builder setter that documents its default, and every setting can come
//! from the environment through [`HealthConfig::from_env`]. A value that cannot be used is an
//! error at start that names the variable and the value; nothing falls back silently.
//!
//! # Environment variables
//!
//! Where a second name is given, it is used when the first is not set, so existing manifests
//! carry over (see [migrating](crate::guide::migrating)). Empty values count
//! as unset.
//!
//! | Variable | Also read | Meaning | Default |
//! |---|---|---|---|
//! | `TOWER_HEALTH_DATABASE_URL` | `BALDUR_SQL_DSN` | PostgreSQL connection string of the `default` database | none |
//! | `TOWER_HEALTH_DATABASE_URL_<NAME>` | | connection string of database `<name>` (lower-cased) | none |
//! | `TOWER_HEALTH_READINESS_TIMEOUT` | `BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS` (seconds) | the one deadline of a round | `500ms` |
//! | `TOWER_HEALTH_READINESS_INTERVAL` | `BALDUR_HEALTH_CHECK_READINESS_CACHE_TTL_SECONDS` (seconds) | cadence of readiness rounds | `1s` |
//! | `TOWER_HEALTH_READINESS_TIMEOUT_FAIL_DIRECTION` | `BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION` | `not_ready` or `ready` | `not_ready` |
//! | `TOWER_HEALTH_HEALTH_INTERVAL` | | cadence of health rounds | `10s` |
//! | `TOWER_HEALTH_PATH_PREFIX` | | prefix of the layer's probe paths | `/health` |
//! | `TOWER_HEALTH_NOCACHE` | | `allowed`, `authorized` or `off` | `allowed` |
//! | `TOWER_HEALTH_NOCACHE_MIN_INTERVAL` | | shortest time between two fresh computations | `1s` |
//! | `TOWER_HEALTH_CHECK_LIMIT` | | how long a timed-out check may keep running before it is abandoned | `10s` |
//! | `TOWER_HEALTH_STARTUP_WAITS_FOR_MARK` | | `/health/startup` also waits for `HealthHandle::mark_started()` | `false` |
//! | `TOWER_HEALTH_KUBERNETES_ALIASES` | | also answer `/livez` and `/readyz` | `false` |
//! | `TOWER_HEALTH_DETAILS` | | who sees error text, targets, pool figures and timings: `always`, `authorized` (admin key holders) or `never` | `always` |
//! | `TOWER_HEALTH_TCP_<NAME>` | | `host:port` of a non-critical TCP component `<name>` (lower-cased; feature `tcp`) | none |
//! | `TOWER_HEALTH_HTTP_<NAME>` | | `http://` URL of a non-critical HTTP component `<name>` (lower-cased; feature `http-check`): `GET`, 2xx expected, redirects not followed | none |
//! | `TOWER_HEALTH_REDIS_<NAME>` | | `redis://` URL of a non-critical Redis component `<name>` (lower-cased; feature `redis`; `rediss://` with `rustls`); `TOWER_HEALTH_REDIS_URL` is not a component | none |
//! | `TOWER_HEALTH_CRITICAL` | | components that are critical (comma-separated names) | none |
//! | `TOWER_HEALTH_SELF_MONITORING` | | the monitor watches its own round lag (component `monitor`) | `false` |
//! | `TOWER_HEALTH_UNKNOWN_COMPONENTS` | | how a component without a result yet counts: `ignored` or `in_trouble` | `ignored` |
//! | `TOWER_HEALTH_OPTIONAL` | | databases that are optional (comma-separated names): down, they make health `degraded` and leave readiness alone | none |
//! | `TOWER_HEALTH_REDIS_URL` | `BALDUR_REDIS_URL` | Redis to share the health verdict through (module `shared`; feature `redis`, `rediss://` with `rustls`) | none |
//! | `TOWER_HEALTH_SHARED_KEY_PREFIX` | | prefix of the shared entry's keys (`<prefix>health`, `<prefix>health:lock`) | `tower-health:` |
//! | `TOWER_HEALTH_SHARED_TTL` | | how long a shared verdict is served before one process computes the next; at most three health intervals plus the readiness timeout | the health interval |
//! | `TOWER_HEALTH_SHARED_LOCK_EXPIRY` | | longest hold of the computing process's lock; at most half the TTL | twice the readiness timeout |
//! | `TOWER_HEALTH_SHARED_PROCESS_ID` | | how this process signs the verdicts it computes (`computed_by`) | `<hostname>/<pid>` |
//! | `TOWER_HEALTH_SHARED_NOCACHE_WRITES` | | `?nocache=true` also overwrites the shared entry | `false` |
//! | `TOWER_HEALTH_STRICT_ENV` | | strict mode: a set variable that no setting reads is an error at start (see below) | `false` |
//!
//! Durations of the `TOWER_HEALTH_` variables take a unit (`500ms`, `2s`, `1m`). Every duration,
//! from a variable or a builder setter, lies between [`MIN_DURATION`] (1 ms) and
//! [`MAX_DURATION`] (1 year), or is zero where the setting allows it: a mistaken unit stops
//! the program at start instead of making a timer spin or a sum overflow later.
//!
//! Booleans take `true` or `false`, and also `1`/`0`, `yes`/`no`, `on`/`off`, in any case.
//!
//! # Variables that no setting reads
//!
//! A set `TOWER_HEALTH_*` variable that no setting reads (a misspelt name, or one read by a
//! feature this build leaves out) is a [warning](ConfigWarning) naming the closest known name:
//! [`HealthConfig::warnings`] returns it, `from_env` logs it if a `tracing` subscriber is
//! installed, and the monitor logs it when it starts (each warning once per process), so it
//! is not lost when `from_env` runs before the subscriber. `BALDUR_*` names are left alone:
//! a carried-over manifest sets many that this crate has no use for.
//!
//! Two cases are errors at start instead:
//!
//! - A variable close to an admin key variable (`TOWER_HEALTH_ADMIN_KYE`, `BALDUR_ADMIN_KYE`):
//!   read as no key, it would start the admin server, and a layer with
//!   [`Details::Authorized`], without keys. Always, wherever the keys are read
//!   ([`HealthConfig`], `AdminConfig`, [`AccessKeys`](crate::access::AccessKeys)). A
//!   `BALDUR_*` name counts when it is a typo away (two edits), so that names a carried-over
//!   manifest sets for other uses (`BALDUR_API_KEY`) do not.
//! - In strict mode (`TOWER_HEALTH_STRICT_ENV=true`), every set `TOWER_HEALTH_*` or `BALDUR_*`
//!   variable that no setting of this build reads, named with the closest known name. Every
//!   `from_env` (and `from_vars`) checks. Strict mode is opt-in because it refuses `BALDUR_*`
//!   names too: a carried-over manifest sets many that this crate does not read,
//!   and must be cleared of them first.
//!
//! A Redis URL in a build without the `redis` feature (or a `rediss://` one without `rustls`)
//! is an error at start naming the variable, like a database without `postgres`.

mod components;
mod databases;
mod env;
mod health;
mod health_env;
mod known;
mod limits;
#[cfg(test)]
mod proptests;
mod reader_defaults;
mod registry;
mod shared;
mod timing;
mod unknown;
mod values;
mod warning;

pub use self::databases::DEFAULT_DATABASE;
pub(crate) use self::databases::{DatabaseEntry, is_valid_check_name};
pub use self::env::ConfigError;
pub(crate) use self::env::Env;
pub use self::health::HealthConfig;
pub use self::limits::{MAX_DURATION, MIN_DURATION};
pub(crate) use self::limits::{Zero, assert_in_range};
pub(crate) use self::reader_defaults::validate_prefix;
#[cfg(feature = "redis")]
pub(crate) use self::shared::validate_key_prefix;
pub(crate) use self::timing::stale_bound;
pub(crate) use self::unknown::{misspelt_key, refuse_unread_if_strict, unread_warnings};
pub use self::values::{Details, FailDirection, NoCache, UnknownValue};
pub use self::warning::ConfigWarning;
pub(crate) use self::warning::log_warnings;
