use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::databases::{DEFAULT_DATABASE, DatabaseEntry, is_valid_check_name};
use super::{ConfigError, Env, FailDirection, NoCache, Zero, assert_in_range};

use crate::check::DatabaseCheck;
use crate::component::{ComponentSpec, UnknownComponents};

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
    pub(crate) startup_waits_for_mark: bool,
    pub(crate) kubernetes_aliases: bool,
    pub(crate) components: Vec<ComponentSpec>,
    pub(crate) optional_databases: Vec<Arc<str>>,
    /// Components the environment lists as critical (`TOWER_HEALTH_CRITICAL`).
    pub(crate) critical_components: Vec<Arc<str>>,
    pub(crate) unknown_components: UnknownComponents,
    pub(crate) self_monitoring: bool,
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
            startup_waits_for_mark: false,
            kubernetes_aliases: false,
            components: Vec::new(),
            optional_databases: Vec::new(),
            critical_components: Vec::new(),
            unknown_components: UnknownComponents::Ignored,
            self_monitoring: false,
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
    /// # Errors
    ///
    /// When `name` is empty, longer than 63 bytes, or has characters other than ASCII letters,
    /// digits, `_` and `-` (it becomes part of JSON keys and metric labels).
    pub fn database(mut self, name: &str, check: impl DatabaseCheck) -> Result<Self, ConfigError> {
        if !is_valid_check_name(name) {
            return Err(ConfigError::new(
                "HealthConfig::database",
                name,
                "a database name must be 1 to 63 ASCII letters, digits, '_' or '-'",
            ));
        }
        self.insert_database(name.into(), Arc::new(check));
        Ok(self)
    }

    /// Adds or replaces a database whose name is known to be valid.
    pub(super) fn insert_database(&mut self, name: Arc<str>, check: Arc<dyn DatabaseCheck>) {
        let entry = DatabaseEntry { name, check };
        match self
            .databases
            .iter_mut()
            .find(|existing| existing.name == entry.name)
        {
            Some(existing) => *existing = entry,
            None => self.databases.push(entry),
        }
    }

    /// Declares the database `name` optional (non-critical): down, it makes `/health`
    /// answer 200 `degraded` and leaves readiness alone, for a read replica, say, whose loss
    /// should not depool every pod that shares it. Applies whether the database is added
    /// before or after this call; a name no database has is logged as a warning when the
    /// monitor starts.
    ///
    /// Defaults to none: every database gates readiness, and the default one decides
    /// `unhealthy`.
    ///
    /// # Errors
    ///
    /// When `name` is not a valid database name (see [`HealthConfig::database`]).
    pub fn optional_database(mut self, name: &str) -> Result<Self, ConfigError> {
        if !is_valid_check_name(name) {
            return Err(ConfigError::new(
                "HealthConfig::optional_database",
                name,
                "a database name must be 1 to 63 ASCII letters, digits, '_' or '-'",
            ));
        }
        if !self.is_optional(name) {
            self.optional_databases.push(name.into());
        }
        Ok(self)
    }

    /// Whether the database `name` was declared optional.
    pub(crate) fn is_optional(&self, name: &str) -> bool {
        self.optional_databases
            .iter()
            .any(|optional| &**optional == name)
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

    /// Adds a component the health round checks, or replaces the one with the same name:
    /// see [`component`](crate::component).
    ///
    /// Defaults to no component; `components` is then `null` in the health body.
    pub fn component(mut self, spec: ComponentSpec) -> Self {
        match self
            .components
            .iter_mut()
            .find(|existing| existing.name == spec.name)
        {
            Some(existing) => *existing = spec,
            None => self.components.push(spec),
        }
        self
    }

    /// The names of the registered components, in the order they were added.
    pub fn component_names(&self) -> impl Iterator<Item = &str> {
        self.components.iter().map(|spec| &*spec.name)
    }

    /// How a component counts toward the overall status before its first conclusive
    /// result; it is shown `unknown` either way. Environment:
    /// `TOWER_HEALTH_UNKNOWN_COMPONENTS=ignored|in_trouble`.
    ///
    /// Defaults to [`UnknownComponents::Ignored`]: counted as fine.
    pub fn unknown_components(mut self, policy: UnknownComponents) -> Self {
        self.unknown_components = policy;
        self
    }

    /// Whether the monitor also watches itself: a non-critical component named `monitor`
    /// reports readiness rounds that lag (none finished for two intervals plus the
    /// deadline), so `/health` reads `degraded` with the lag before the verdicts go stale.
    /// A component registered under the name `monitor` takes its place.
    ///
    /// Defaults to `false` (the health body's `components` stays `null` without components).
    pub fn self_monitoring(mut self, enabled: bool) -> Self {
        self.self_monitoring = enabled;
        self
    }

    /// The one deadline of a round: every database is checked in parallel, and whatever has not
    /// answered when it passes is reported `timed_out`. Also bounds `?nocache=true`.
    ///
    /// Defaults to 500 milliseconds.
    ///
    /// # Panics
    ///
    /// When `timeout` is shorter than 1 ms (zero included) or longer than 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn readiness_timeout(mut self, timeout: Duration) -> Self {
        assert_in_range("HealthConfig::readiness_timeout", timeout, Zero::Refused);
        self.readiness_timeout = timeout;
        self
    }

    /// How often the readiness round runs; it also refreshes the pool endpoint's verdict.
    ///
    /// Defaults to 1 second.
    ///
    /// # Panics
    ///
    /// When `interval` is shorter than 1 ms (zero included) or longer than 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn readiness_interval(mut self, interval: Duration) -> Self {
        assert_in_range("HealthConfig::readiness_interval", interval, Zero::Refused);
        self.readiness_interval = interval;
        self
    }

    /// How often the health round runs.
    ///
    /// Defaults to 10 seconds.
    ///
    /// # Panics
    ///
    /// When `interval` is shorter than 1 ms (zero included) or longer than 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn health_interval(mut self, interval: Duration) -> Self {
        assert_in_range("HealthConfig::health_interval", interval, Zero::Refused);
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
    /// `<prefix>/startup`, `<prefix>/pool` and `<prefix>/ping`. A trailing slash is trimmed.
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
    ///
    /// # Panics
    ///
    /// When `interval` is neither zero nor from 1 ms to 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn nocache_min_interval(mut self, interval: Duration) -> Self {
        assert_in_range(
            "HealthConfig::nocache_min_interval",
            interval,
            Zero::Allowed,
        );
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
    /// When `limit` is shorter than 1 ms (zero included) or longer than 1 year: see
    /// [`MIN_DURATION`](crate::config::MIN_DURATION) and
    /// [`MAX_DURATION`](crate::config::MAX_DURATION).
    pub fn check_limit(mut self, limit: Duration) -> Self {
        assert_in_range("HealthConfig::check_limit", limit, Zero::Refused);
        self.check_limit = limit;
        self
    }

    /// Whether `/health/startup` also waits for the application to call
    /// [`HealthHandle::mark_started`](crate::HealthHandle::mark_started) (for warm-up such as
    /// migrations or cache loading), besides the first readiness round.
    ///
    /// Defaults to `false`: started once the first readiness round has completed.
    pub fn startup_waits_for_mark(mut self, waits: bool) -> Self {
        self.startup_waits_for_mark = waits;
        self
    }

    /// Whether the layer also answers the Kubernetes-style aliases `/livez` (liveness) and
    /// `/readyz` (readiness), at the root whatever the prefix.
    ///
    /// Defaults to `false`.
    pub fn kubernetes_aliases(mut self, aliases: bool) -> Self {
        self.kubernetes_aliases = aliases;
        self
    }

    define_env_constructors!("the [module docs](crate::config)");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
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
        if let Some(waits) = env.flag("TOWER_HEALTH_STARTUP_WAITS_FOR_MARK")? {
            config.startup_waits_for_mark = waits;
        }
        if let Some(aliases) = env.flag("TOWER_HEALTH_KUBERNETES_ALIASES")? {
            config.kubernetes_aliases = aliases;
        }
        if let Some(policy) = env.parse(
            &["TOWER_HEALTH_UNKNOWN_COMPONENTS"],
            "expected ignored or in_trouble",
        )? {
            config.unknown_components = policy;
        }
        if let Some(enabled) = env.flag("TOWER_HEALTH_SELF_MONITORING")? {
            config.self_monitoring = enabled;
        }
        if let Some((variable, names)) = env.first(&["TOWER_HEALTH_OPTIONAL"]) {
            for name in names
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
            {
                let name = name.to_ascii_lowercase();
                config = config.optional_database(&name).map_err(|_| {
                    ConfigError::new(
                        variable,
                        names,
                        "expected database names separated by commas (ASCII letters, digits, '_' or '-')",
                    )
                })?;
            }
        }
        if env.first(&["BALDUR_REDIS_URL"]).is_some() {
            // Said out loud rather than ignored: an operator coming from the Python system
            // expects verdicts shared through Redis.
            tracing::warn!(
                "BALDUR_REDIS_URL is set, but tower-health has no shared verdict cache: each process answers with its own verdicts"
            );
        }
        config.databases_from_env(env)?.components_from_env(env)
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
            .field("startup_waits_for_mark", &self.startup_waits_for_mark)
            .field("kubernetes_aliases", &self.kubernetes_aliases)
            .field("components", &self.component_names().collect::<Vec<_>>())
            .field("optional_databases", &self.optional_databases)
            .field("critical_components", &self.critical_components)
            .field("unknown_components", &self.unknown_components)
            .field("self_monitoring", &self.self_monitoring)
            .finish()
    }
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
            .unwrap()
            .database("default", Nothing)
            .unwrap();
        assert_eq!(config.default_database_index(), Some(1));
        let config = HealthConfig::new()
            .database("a", Nothing)
            .unwrap()
            .database("b", Nothing)
            .unwrap();
        assert_eq!(config.default_database_index(), Some(0));
        let config = config.database("a", Nothing).unwrap();
        assert_eq!(config.database_names().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    #[should_panic(expected = "database name")]
    fn bad_database_name_panics() {
        let _ = HealthConfig::new().database("no spaces", Nothing).unwrap();
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
    fn optional_databases_from_the_environment_and_the_builder() {
        let config =
            HealthConfig::from_vars([("TOWER_HEALTH_OPTIONAL", "Replica, analytics,")]).unwrap();
        assert!(config.is_optional("replica") && config.is_optional("analytics"));
        assert!(!config.is_optional("default"));
        let config = config.optional_database("reports").unwrap();
        assert!(config.is_optional("reports"));
        let error = HealthConfig::from_vars([("TOWER_HEALTH_OPTIONAL", "no spaces")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_OPTIONAL");
        assert!(HealthConfig::new().optional_database("").is_err());
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

    #[test]
    fn from_vars_refuses_durations_out_of_range() {
        for (variable, value, reason) in [
            (
                "TOWER_HEALTH_READINESS_INTERVAL",
                "1000000000000000s",
                "expected at most 1year",
            ),
            (
                "BALDUR_HEALTH_CHECK_READINESS_PROBE_TIMEOUT_SECONDS",
                "1e-10",
                "expected at least 1ms",
            ),
            (
                "BALDUR_HEALTH_CHECK_READINESS_CACHE_TTL_SECONDS",
                "1e20",
                "expected at most 1year",
            ),
            (
                "TOWER_HEALTH_HEALTH_INTERVAL",
                "0s",
                "expected at least 1ms",
            ),
            ("TOWER_HEALTH_CHECK_LIMIT", "100us", "expected at least 1ms"),
            (
                "TOWER_HEALTH_NOCACHE_MIN_INTERVAL",
                "10us",
                "expected 0 or at least 1ms",
            ),
        ] {
            let error = HealthConfig::from_vars([(variable, value)]).unwrap_err();
            assert_eq!(
                (error.variable(), error.value(), error.reason()),
                (variable, value, reason)
            );
        }
        let config = HealthConfig::from_vars([("TOWER_HEALTH_READINESS_INTERVAL", "1y")]).unwrap();
        assert_eq!(config.readiness_interval, crate::config::MAX_DURATION);
    }

    #[test]
    #[should_panic(expected = "HealthConfig::readiness_interval must be from 1ms to 1year")]
    fn an_interval_longer_than_a_year_panics() {
        let _ = HealthConfig::new().readiness_interval(Duration::from_secs(1_000_000_000_000_000));
    }

    #[test]
    #[should_panic(expected = "HealthConfig::readiness_timeout must be from 1ms to 1year")]
    fn a_timeout_shorter_than_a_millisecond_panics() {
        let _ = HealthConfig::new().readiness_timeout(Duration::from_nanos(100));
    }

    #[test]
    #[should_panic(
        expected = "HealthConfig::nocache_min_interval must be zero or from 1ms to 1year"
    )]
    fn a_rate_limit_longer_than_a_year_panics() {
        let _ = HealthConfig::new().nocache_min_interval(Duration::MAX);
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

    #[cfg(feature = "postgres")]
    #[test]
    fn a_password_with_a_quote_is_never_echoed() {
        // tokio-postgres takes this one as it is: the password is `it's`.
        let dsn = "postgres://app:it's@db/app";
        let config = HealthConfig::from_vars([("TOWER_HEALTH_DATABASE_URL", dsn)]).unwrap();
        assert!(!format!("{config:?}").contains("it'"), "{config:?}");
        // Ones that do not parse: the error names the variable and masks the password.
        for dsn in [
            "postgres://app:it's@db:notaport/app",
            "postgres://app:it's@db/app?sslmode=sometimes",
            "postgres://app:it s@db:notaport/app",
            "host=db password='it's",
        ] {
            let error = HealthConfig::from_vars([("TOWER_HEALTH_DATABASE_URL", dsn)]).unwrap_err();
            assert_eq!(error.variable(), "TOWER_HEALTH_DATABASE_URL");
            for text in [
                error.to_string(),
                format!("{error:?}"),
                error.value().to_owned(),
            ] {
                assert!(
                    !text.contains("it'") && !text.contains("it s"),
                    "{dsn}: {text}"
                );
            }
            assert!(error.value().contains("***"), "{dsn}: {error}");
        }
    }
}
