//! Configuration: [`HealthConfig`] for the monitor and the probe endpoints.
//!
//! Every setting has a builder setter that documents its default, and every setting can come
//! from the environment through [`HealthConfig::from_env`]. A value that cannot be used is an
//! error at start that names the variable and the value; nothing falls back silently.
//!
//! # Environment variables
//!
//! Where a second name is given, it is the name the Python system this crate replaces reads;
//! it is used when the first is not set, so existing manifests carry over. Empty values count
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
//!
//! Durations of the `TOWER_HEALTH_` variables take a unit (`500ms`, `2s`, `1m`).
//!
//! `BALDUR_REDIS_URL` is read only to log a warning: there is no verdict cache shared across
//! processes yet, so each process answers with its own verdicts.

mod env;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use self::env::ConfigError;
pub(crate) use self::env::Env;
use crate::check::DatabaseCheck;

/// The name of the database the pool endpoint and the health status follow.
pub const DEFAULT_DATABASE: &str = "default";

/// What readiness answers while a database check has timed out.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailDirection {
    /// Report `timed_out` and answer 503: the pod leaves rotation (the default).
    #[default]
    NotReady,
    /// Report `timed_out` and answer 200: the pod stays in rotation. The case for pods that
    /// share one database, where depooling them all at once turns a database stall into a full
    /// outage.
    Ready,
}

impl FailDirection {
    /// The name used in configuration: `"not_ready"` or `"ready"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotReady => "not_ready",
            Self::Ready => "ready",
        }
    }
}

impl FromStr for FailDirection {
    type Err = UnknownValue;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "not_ready" => Ok(Self::NotReady),
            "ready" => Ok(Self::Ready),
            _ => Err(UnknownValue::new("not_ready or ready")),
        }
    }
}

/// Who may bypass the cache with `?nocache=true`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum NoCache {
    /// Anyone (the default). Bypasses are coalesced and rate-limited either way.
    #[default]
    Allowed,
    /// Only callers that present a key to the admin server. The layers have no notion of a
    /// caller, so for them this is the same as [`NoCache::Off`].
    Authorized,
    /// Nobody: the parameter is ignored and the published verdict is served.
    Off,
}

impl FromStr for NoCache {
    type Err = UnknownValue;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "allowed" => Ok(Self::Allowed),
            "authorized" => Ok(Self::Authorized),
            "off" => Ok(Self::Off),
            _ => Err(UnknownValue::new("allowed, authorized or off")),
        }
    }
}

/// A configuration value that is not one of the accepted names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownValue {
    expected: &'static str,
}

impl UnknownValue {
    pub(crate) const fn new(expected: &'static str) -> Self {
        Self { expected }
    }
}

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}", self.expected)
    }
}

impl std::error::Error for UnknownValue {}

/// A configured database: its name and its check.
#[derive(Clone, Debug)]
pub(crate) struct DatabaseEntry {
    pub(crate) name: Arc<str>,
    pub(crate) check: Arc<dyn DatabaseCheck>,
}

/// Settings of the monitor and of the probe endpoints.
///
/// ```
/// use std::time::Duration;
/// use tower_health::{FailDirection, HealthConfig};
///
/// let config = HealthConfig::new()
///     .readiness_timeout(Duration::from_millis(300))
///     .fail_direction(FailDirection::Ready);
/// # let _ = config;
/// ```
#[derive(Clone)]
#[must_use]
pub struct HealthConfig {
    pub(crate) databases: Vec<DatabaseEntry>,
    pub(crate) readiness_timeout: Duration,
    pub(crate) readiness_interval: Duration,
    pub(crate) health_interval: Duration,
    pub(crate) fail_direction: FailDirection,
    pub(crate) path_prefix: String,
    pub(crate) nocache: NoCache,
    pub(crate) nocache_min_interval: Duration,
    pub(crate) check_limit: Duration,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl HealthConfig {
    /// A configuration with every default and no database.
    pub fn new() -> Self {
        Self {
            databases: Vec::new(),
            readiness_timeout: Duration::from_millis(500),
            readiness_interval: Duration::from_secs(1),
            health_interval: Duration::from_secs(10),
            fail_direction: FailDirection::NotReady,
            path_prefix: "/health".to_owned(),
            nocache: NoCache::Allowed,
            nocache_min_interval: Duration::from_secs(1),
            check_limit: Duration::from_secs(10),
        }
    }

    /// Adds a database to check, or replaces the one with the same name.
    ///
    /// The database named `"default"` is the default database: the health status and the pool
    /// endpoint follow it. If none has that name, the first one added is the default.
    ///
    /// Defaults to no database. With none, readiness answers 200 with no checks, while health
    /// (unhealthy) and pool (degraded) answer 503: do not route traffic on those two then.
    ///
    /// # Panics
    ///
    /// When `name` is empty, longer than 63 bytes, or has characters other than ASCII letters,
    /// digits, `_` and `-`.
    pub fn database(mut self, name: &str, check: impl DatabaseCheck) -> Self {
        assert!(
            is_valid_database_name(name),
            "database name {name:?} must be 1 to 63 ASCII letters, digits, '_' or '-'"
        );
        let entry = DatabaseEntry {
            name: name.into(),
            check: Arc::new(check),
        };
        match self
            .databases
            .iter_mut()
            .find(|existing| *existing.name == *name)
        {
            Some(existing) => *existing = entry,
            None => self.databases.push(entry),
        }
        self
    }

    /// Removes every database added so far.
    pub fn without_databases(mut self) -> Self {
        self.databases.clear();
        self
    }

    /// The names of the configured databases, in the order they were added.
    pub fn database_names(&self) -> impl Iterator<Item = &str> {
        self.databases.iter().map(|entry| &*entry.name)
    }

    /// The one deadline of a round: every database is checked in parallel, and whatever has not
    /// answered when it passes is reported `timed_out`. Also bounds `?nocache=true`.
    ///
    /// Defaults to 500 milliseconds.
    ///
    /// # Panics
    ///
    /// When `timeout` is zero.
    pub fn readiness_timeout(mut self, timeout: Duration) -> Self {
        assert!(
            timeout > Duration::ZERO,
            "readiness_timeout must be non-zero"
        );
        self.readiness_timeout = timeout;
        self
    }

    /// How often the readiness round runs; it also refreshes the pool endpoint's verdict.
    ///
    /// Defaults to 1 second.
    ///
    /// # Panics
    ///
    /// When `interval` is zero.
    pub fn readiness_interval(mut self, interval: Duration) -> Self {
        assert!(
            interval > Duration::ZERO,
            "readiness_interval must be non-zero"
        );
        self.readiness_interval = interval;
        self
    }

    /// How often the health round runs.
    ///
    /// Defaults to 10 seconds.
    ///
    /// # Panics
    ///
    /// When `interval` is zero.
    pub fn health_interval(mut self, interval: Duration) -> Self {
        assert!(
            interval > Duration::ZERO,
            "health_interval must be non-zero"
        );
        self.health_interval = interval;
        self
    }

    /// What readiness answers when a database check times out.
    ///
    /// Defaults to [`FailDirection::NotReady`].
    pub fn fail_direction(mut self, direction: FailDirection) -> Self {
        self.fail_direction = direction;
        self
    }

    /// The prefix of the layer's probe paths: `<prefix>`, `<prefix>/live`, `<prefix>/ready`,
    /// `<prefix>/pool` and `<prefix>/ping`. A trailing slash is trimmed.
    ///
    /// Defaults to `/health`.
    ///
    /// # Panics
    ///
    /// When `prefix` does not start with `/`, is only `/`, or has a `?` or `#`.
    pub fn path_prefix(mut self, prefix: &str) -> Self {
        self.path_prefix = validate_prefix(prefix).unwrap_or_else(|reason| panic!("{reason}"));
        self
    }

    /// Who may bypass the cache with `?nocache=true` on the health and pool endpoints.
    ///
    /// Defaults to [`NoCache::Allowed`].
    pub fn nocache(mut self, policy: NoCache) -> Self {
        self.nocache = policy;
        self
    }

    /// The shortest time between two fresh computations for `?nocache=true`. A bypass that
    /// arrives sooner gets the latest fresh result (still marked bypassed, with its real age);
    /// concurrent bypasses always share one computation. Zero leaves only the coalescing.
    ///
    /// Defaults to 1 second.
    pub fn nocache_min_interval(mut self, interval: Duration) -> Self {
        self.nocache_min_interval = interval;
        self
    }

    /// How long one database check may keep running in the background after its round has
    /// reported it `timed_out`. Past this limit the check is dropped (a [`PostgresCheck`]
    /// discards its connection) and the next round starts a new one: a connection that went
    /// dark for good does not keep the database `timed_out` forever. Never shorter than the
    /// [readiness timeout](HealthConfig::readiness_timeout).
    ///
    /// Defaults to 10 seconds.
    ///
    /// [`PostgresCheck`]: crate::check::PostgresCheck
    ///
    /// # Panics
    ///
    /// When `limit` is zero.
    pub fn check_limit(mut self, limit: Duration) -> Self {
        assert!(limit > Duration::ZERO, "check_limit must be non-zero");
        self.check_limit = limit;
        self
    }

    define_env_constructors!("the [module docs](crate::config)");

    fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self::new();
        if let Some(timeout) = env.duration(
            "TOWER_HEALTH_READINESS_TIMEOUT",
            Some("BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS"),
        )? {
            config.readiness_timeout = timeout;
        }
        if let Some(interval) = env.duration(
            "TOWER_HEALTH_READINESS_INTERVAL",
            Some("BALDUR_HEALTH_CHECK_READINESS_CACHE_TTL_SECONDS"),
        )? {
            config.readiness_interval = interval;
        }
        if let Some(interval) = env.duration("TOWER_HEALTH_HEALTH_INTERVAL", None)? {
            config.health_interval = interval;
        }
        if let Some(direction) = env.parse(
            &[
                "TOWER_HEALTH_READINESS_TIMEOUT_FAIL_DIRECTION",
                "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
            ],
            "expected not_ready or ready",
        )? {
            config.fail_direction = direction;
        }
        if let Some((name, prefix)) = env.first(&["TOWER_HEALTH_PATH_PREFIX"]) {
            config.path_prefix =
                validate_prefix(prefix).map_err(|reason| ConfigError::new(name, prefix, reason))?;
        }
        if let Some(policy) = env.parse(
            &["TOWER_HEALTH_NOCACHE"],
            "expected allowed, authorized or off",
        )? {
            config.nocache = policy;
        }
        if let Some(interval) = env.duration_or_zero("TOWER_HEALTH_NOCACHE_MIN_INTERVAL")? {
            config.nocache_min_interval = interval;
        }
        if let Some(limit) = env.duration("TOWER_HEALTH_CHECK_LIMIT", None)? {
            config.check_limit = limit;
        }
        if env.first(&["BALDUR_REDIS_URL"]).is_some() {
            // Said out loud rather than ignored: an operator coming from the Python system
            // expects verdicts shared through Redis.
            tracing::warn!(
                "BALDUR_REDIS_URL is set, but tower-health has no shared verdict cache: each process answers with its own verdicts"
            );
        }
        config.databases_from_env(env)
    }

    #[cfg(feature = "postgres")]
    fn databases_from_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        use crate::check::PostgresCheck;

        let connect = |name: &str, dsn: &str| {
            PostgresCheck::connect(dsn)
                .map_err(|error| ConfigError::new(name, dsn, error.to_string()))
        };
        if let Some((name, dsn)) = env.first(&["TOWER_HEALTH_DATABASE_URL", "BALDUR_SQL_DSN"]) {
            self = self.database(DEFAULT_DATABASE, connect(name, dsn)?);
        }
        for (name, suffix, dsn) in env.with_prefix("TOWER_HEALTH_DATABASE_URL_") {
            let database = suffix.to_ascii_lowercase();
            if !is_valid_database_name(&database) {
                return Err(ConfigError::new(
                    name,
                    dsn,
                    "the name after TOWER_HEALTH_DATABASE_URL_ must be ASCII letters, digits, '_' or '-'",
                ));
            }
            self = self.database(&database, connect(name, dsn)?);
        }
        Ok(self)
    }

    #[cfg(not(feature = "postgres"))]
    fn databases_from_env(self, env: &Env) -> Result<Self, ConfigError> {
        // Refuse rather than silently run with no database: the Python system's worst
        // failure was a missing driver turning "database configured" into "ready forever".
        let mut names = vec!["TOWER_HEALTH_DATABASE_URL", "BALDUR_SQL_DSN"];
        let named = env.with_prefix("TOWER_HEALTH_DATABASE_URL_");
        names.extend(named.iter().map(|(name, _, _)| *name));
        match env.first(&names) {
            Some((name, dsn)) => Err(ConfigError::new(
                name,
                dsn,
                "a database is configured but tower-health was built without the `postgres` feature",
            )),
            None => Ok(self),
        }
    }

    /// The index of the default database: the one named `default`, else the first.
    pub(crate) fn default_database_index(&self) -> Option<usize> {
        if self.databases.is_empty() {
            return None;
        }
        Some(
            self.databases
                .iter()
                .position(|entry| &*entry.name == DEFAULT_DATABASE)
                .unwrap_or(0),
        )
    }
}

impl fmt::Debug for HealthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthConfig")
            .field("databases", &self.database_names().collect::<Vec<_>>())
            .field("readiness_timeout", &self.readiness_timeout)
            .field("readiness_interval", &self.readiness_interval)
            .field("health_interval", &self.health_interval)
            .field("fail_direction", &self.fail_direction)
            .field("path_prefix", &self.path_prefix)
            .field("nocache", &self.nocache)
            .field("nocache_min_interval", &self.nocache_min_interval)
            .field("check_limit", &self.check_limit)
            .finish()
    }
}

fn is_valid_database_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

fn validate_prefix(prefix: &str) -> Result<String, &'static str> {
    let trimmed = prefix.trim_end_matches('/');
    if !prefix.starts_with('/') || trimmed.is_empty() {
        return Err("the path prefix must start with '/' and not be '/' alone");
    }
    if trimmed.contains(['?', '#']) {
        return Err("the path prefix cannot contain '?' or '#'");
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckFuture, DatabaseCheck};

    #[derive(Debug)]
    struct Nothing;

    impl DatabaseCheck for Nothing {
        fn vendor(&self) -> &'static str {
            "none"
        }

        fn check(&self) -> CheckFuture {
            Box::pin(async { Ok(()) })
        }
    }

    #[test]
    fn defaults() {
        let config = HealthConfig::new();
        assert_eq!(config.readiness_timeout, Duration::from_millis(500));
        assert_eq!(config.readiness_interval, Duration::from_secs(1));
        assert_eq!(config.health_interval, Duration::from_secs(10));
        assert_eq!(config.fail_direction, FailDirection::NotReady);
        assert_eq!(config.path_prefix, "/health");
        assert_eq!(config.default_database_index(), None);
    }

    #[test]
    fn default_database_is_named_default_or_first() {
        let config = HealthConfig::new()
            .database("replica", Nothing)
            .database("default", Nothing);
        assert_eq!(config.default_database_index(), Some(1));
        let config = HealthConfig::new()
            .database("a", Nothing)
            .database("b", Nothing);
        assert_eq!(config.default_database_index(), Some(0));
        let config = config.database("a", Nothing);
        assert_eq!(config.database_names().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    #[should_panic(expected = "database name")]
    fn bad_database_name_panics() {
        let _ = HealthConfig::new().database("no spaces", Nothing);
    }

    #[test]
    fn prefix_is_validated_and_trimmed() {
        assert_eq!(
            HealthConfig::new().path_prefix("/probes/").path_prefix,
            "/probes"
        );
        assert!(validate_prefix("health").is_err());
        assert!(validate_prefix("/").is_err());
        assert!(validate_prefix("/a?b").is_err());
    }

    #[test]
    fn from_vars_reads_own_and_compat_names() {
        let config = HealthConfig::from_vars([
            (
                "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
                "0.25",
            ),
            ("BALDUR_HEALTH_CHECK_READINESS_CACHE_TTL_SECONDS", "3"),
            (
                "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
                "ready",
            ),
            ("TOWER_HEALTH_READINESS_INTERVAL", "2s"),
            ("TOWER_HEALTH_HEALTH_INTERVAL", "1m"),
            ("TOWER_HEALTH_PATH_PREFIX", "/probe/"),
            ("TOWER_HEALTH_NOCACHE", "off"),
            ("TOWER_HEALTH_NOCACHE_MIN_INTERVAL", "0"),
            ("TOWER_HEALTH_CHECK_LIMIT", "30s"),
        ])
        .unwrap();
        assert_eq!(config.readiness_timeout, Duration::from_millis(250));
        assert_eq!(
            config.readiness_interval,
            Duration::from_secs(2),
            "own name wins"
        );
        assert_eq!(config.health_interval, Duration::from_secs(60));
        assert_eq!(config.fail_direction, FailDirection::Ready);
        assert_eq!(config.path_prefix, "/probe");
        assert_eq!(config.nocache, NoCache::Off);
        assert_eq!(config.nocache_min_interval, Duration::ZERO);
        assert_eq!(config.check_limit, Duration::from_secs(30));
    }

    #[test]
    fn from_vars_names_the_bad_variable() {
        let cases = [
            (
                "BALDUR_HEALTH_CHECK_READINESS_TIMEOUT_FAIL_DIRECTION",
                "sideways",
            ),
            ("TOWER_HEALTH_READINESS_TIMEOUT", "-1s"),
            ("BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS", "-1"),
            ("TOWER_HEALTH_HEALTH_INTERVAL", "often"),
            ("TOWER_HEALTH_PATH_PREFIX", "health"),
            ("TOWER_HEALTH_NOCACHE", "sometimes"),
        ];
        for (variable, value) in cases {
            let error = HealthConfig::from_vars([(variable, value)]).unwrap_err();
            assert_eq!(error.variable(), variable);
            assert_eq!(error.value(), value);
            assert!(error.to_string().contains(variable), "{error}");
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn from_vars_reads_databases() {
        let config = HealthConfig::from_vars([
            ("BALDUR_SQL_DSN", "postgres://postgres@127.0.0.1/postgres"),
            (
                "TOWER_HEALTH_DATABASE_URL_REPLICA",
                "postgres://postgres@127.0.0.1/test",
            ),
        ])
        .unwrap();
        assert_eq!(
            config.database_names().collect::<Vec<_>>(),
            ["default", "replica"]
        );

        let error = HealthConfig::from_vars([(
            "TOWER_HEALTH_DATABASE_URL",
            "postgres://app:hunter2@db:port/app",
        )])
        .unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_DATABASE_URL");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }
}
