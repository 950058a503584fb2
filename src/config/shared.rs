//! The shared verdict cache: [`HealthConfig::shared_cache`] and its variables
//! (`TOWER_HEALTH_REDIS_URL`, `TOWER_HEALTH_SHARED_*`, `TOWER_HEALTH_FLEET_GUARD`).

use std::time::Duration;

use super::{ConfigError, ConfigWarning, Env, HealthConfig};
use crate::env::validate_key_prefix;
use crate::verdict::Fraction;

/// The variables naming the shared cache's Redis: ours, then the compatibility name.
const URL_VARIABLES: [&str; 2] = ["TOWER_HEALTH_REDIS_URL", "BALDUR_REDIS_URL"];
const KEY_PREFIX: &str = "TOWER_HEALTH_SHARED_KEY_PREFIX";
const TTL: &str = "TOWER_HEALTH_SHARED_TTL";
const LOCK_EXPIRY: &str = "TOWER_HEALTH_SHARED_LOCK_EXPIRY";
const PROCESS_ID: &str = "TOWER_HEALTH_SHARED_PROCESS_ID";
const NOCACHE_WRITES: &str = "TOWER_HEALTH_SHARED_NOCACHE_WRITES";
const FLEET_GUARD: &str = "TOWER_HEALTH_FLEET_GUARD";

/// The shared cache's settings as the environment gives them.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
struct SharedVariables<'e> {
    prefix: Option<&'e str>,
    ttl: Option<Duration>,
    lock_expiry: Option<Duration>,
    process_id: Option<&'e str>,
    nocache_writes: Option<bool>,
    fleet_guard: Option<f64>,
}

/// # The fleet
///
/// The health verdict shared across processes through Redis (feature `redis`).
impl HealthConfig {
    /// Shares the health verdict across the processes on one Redis: see
    /// [`redis`](crate::redis). Environment: `TOWER_HEALTH_REDIS_URL` (or
    /// `BALDUR_REDIS_URL`) and the `TOWER_HEALTH_SHARED_*` variables.
    ///
    /// Defaults to none: each process computes its own verdict.
    ///
    /// The first invalid value `cache`'s setters were given is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn shared_cache(mut self, cache: crate::redis::SharedCache) -> Self {
        self.error.absorb(&cache.error);
        self.shared_cache = Some(cache);
        self
    }

    /// Reads the shared cache's variables. Every one is read and checked whether a URL is
    /// set or not; without one, the others are unused.
    pub(super) fn shared_from_env(self, env: &Env) -> Result<Self, ConfigError> {
        let url = env.first(&URL_VARIABLES);
        let prefix = env.first(&[KEY_PREFIX]);
        if let Some((variable, prefix)) = prefix {
            validate_key_prefix(prefix)
                .map_err(|reason| ConfigError::new(variable, prefix, reason))?;
        }
        let variables = SharedVariables {
            prefix: prefix.map(|(_, prefix)| prefix),
            ttl: env.duration(TTL, None)?,
            lock_expiry: env.duration(LOCK_EXPIRY, None)?,
            process_id: env.first(&[PROCESS_ID]).map(|(_, id)| id),
            nocache_writes: env.flag(NOCACHE_WRITES)?,
            fleet_guard: fleet_guard(env)?,
        };
        if let Some(ttl) = variables.ttl {
            // An entry served as fresh must not be older than this process's own verdict may
            // get before it is stale.
            let bound = super::stale_bound(self.health_interval, self.readiness_timeout);
            if ttl > bound {
                return Err(ConfigError::new(
                    TTL,
                    &humantime::format_duration(ttl).to_string(),
                    format!(
                        "expected at most the health verdict's staleness bound, three health intervals plus the readiness timeout ({})",
                        humantime::format_duration(bound)
                    ),
                ));
            }
        }
        if let Some(expiry) = variables.lock_expiry {
            let ttl = variables.ttl.unwrap_or(self.health_interval);
            if expiry > ttl / 2 {
                return Err(ConfigError::new(
                    LOCK_EXPIRY,
                    &humantime::format_duration(expiry).to_string(),
                    format!(
                        "expected at most half the TTL ({})",
                        humantime::format_duration(ttl)
                    ),
                ));
            }
        }
        match url {
            Some((variable, url)) => with_url(self, variable, url, &variables),
            None if variables.fleet_guard.is_some() => {
                // Set on its own, the guard would be off without a word.
                let mut config = self;
                config.warnings.push(ConfigWarning::new(
                    FLEET_GUARD,
                    format!(
                        "{FLEET_GUARD} is set but no Redis URL is ({}): the fleet guard counts the fleet through the shared cache, and is off",
                        URL_VARIABLES.join(", ")
                    ),
                ));
                Ok(config)
            }
            None => Ok(self),
        }
    }
}

/// `TOWER_HEALTH_FLEET_GUARD`: a fraction in (0, 1].
fn fleet_guard(env: &Env) -> Result<Option<f64>, ConfigError> {
    let Some((variable, value)) = env.first(&[FLEET_GUARD]) else {
        return Ok(None);
    };
    let refused = || ConfigError::new(variable, value, Fraction::EXPECTED);
    let fraction: f64 = value.parse().map_err(|_| refused())?;
    Fraction::new(fraction).ok_or_else(refused)?;
    Ok(Some(fraction))
}

#[cfg(feature = "redis")]
fn with_url(
    config: HealthConfig,
    variable: &str,
    url: &str,
    variables: &SharedVariables<'_>,
) -> Result<HealthConfig, ConfigError> {
    let mut cache =
        crate::redis::SharedCache::connect(url).map_err(|error| error.for_variable(variable))?;
    if let Some(prefix) = variables.prefix {
        cache = cache.key_prefix(prefix);
    }
    if let Some(ttl) = variables.ttl {
        cache = cache.ttl(ttl);
    }
    if let Some(expiry) = variables.lock_expiry {
        cache = cache.lock_expiry(expiry);
    }
    if let Some(id) = variables.process_id {
        cache = cache.process_id(id);
    }
    if let Some(writes) = variables.nocache_writes {
        cache = cache.nocache_writes(writes);
    }
    if let Some(fraction) = variables.fleet_guard {
        cache = cache.fleet_guard(fraction);
    }
    Ok(config.shared_cache(cache))
}

/// Refuses rather than silently computing alone: an operator who set a Redis URL expects
/// the fleet to share one verdict.
#[cfg(not(feature = "redis"))]
fn with_url(
    _config: HealthConfig,
    variable: &str,
    url: &str,
    _variables: &SharedVariables<'_>,
) -> Result<HealthConfig, ConfigError> {
    Err(ConfigError::new(
        variable,
        url,
        "a Redis URL is set to share the health verdict, but tower-health was built without the `redis` feature",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "redis")]
    #[test]
    fn a_cluster_or_sentinel_url_is_read_with_its_feature_and_refused_without() {
        for (url, feature, built) in [
            (
                "redis-cluster://:hunter2@a:7000?node=b:7001",
                "`redis-cluster`",
                cfg!(feature = "redis-cluster"),
            ),
            (
                "redis-sentinel://:hunter2@s:26379?sentinelServiceName=m",
                "`redis-sentinel`",
                cfg!(feature = "redis-sentinel"),
            ),
        ] {
            for variable in ["TOWER_HEALTH_REDIS_URL", "TOWER_HEALTH_REDIS_CACHE"] {
                match HealthConfig::from_vars([(variable, url)]) {
                    Ok(_) => assert!(built, "{url} accepted without the {feature} feature"),
                    Err(error) => {
                        assert!(!built, "{url}: {error}");
                        assert_eq!(error.variable(), variable);
                        assert!(error.reason().contains(feature), "{error}");
                        assert!(!error.to_string().contains("hunter2"), "{error}");
                    }
                }
            }
        }
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (variable, value) in [
            (KEY_PREFIX, "has space"),
            (TTL, "10"),
            (LOCK_EXPIRY, "-1s"),
            (NOCACHE_WRITES, "maybe"),
            (FLEET_GUARD, "0"),
            (FLEET_GUARD, "1.5"),
            (FLEET_GUARD, "-0.5"),
            (FLEET_GUARD, "half"),
            (FLEET_GUARD, "NaN"),
        ] {
            let error = HealthConfig::from_vars([(variable, value)]).unwrap_err();
            assert_eq!(error.variable(), variable, "{error}");
        }
        let error = HealthConfig::from_vars([(TTL, "10s"), (LOCK_EXPIRY, "6s")]).unwrap_err();
        assert_eq!(error.variable(), LOCK_EXPIRY);
        assert_eq!(error.reason(), "expected at most half the TTL (10s)");
    }

    #[test]
    fn a_fleet_guard_without_a_redis_url_is_worth_a_warning() {
        let config = HealthConfig::from_vars([(FLEET_GUARD, "0.5")]).unwrap();
        let warnings = config.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].variable(), FLEET_GUARD);
        assert!(
            warnings[0].to_string().contains("TOWER_HEALTH_REDIS_URL"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_ttl_past_the_staleness_bound_is_refused() {
        // Health every 10 s, deadline 500 ms: verdicts go stale after 30.5 s.
        assert!(HealthConfig::from_vars([(TTL, "30s")]).is_ok());
        let error = HealthConfig::from_vars([(TTL, "31s")]).unwrap_err();
        assert_eq!(error.variable(), TTL);
        assert!(error.reason().ends_with("(30s 500ms)"), "{error}");
        // The bound follows the intervals set beside it.
        let config = HealthConfig::from_vars([
            (TTL, "20s"),
            ("TOWER_HEALTH_HEALTH_INTERVAL", "1s"),
            ("TOWER_HEALTH_READINESS_TIMEOUT", "200ms"),
        ]);
        assert_eq!(config.unwrap_err().variable(), TTL);
    }

    #[cfg(not(feature = "redis"))]
    #[test]
    fn a_redis_url_without_the_feature_is_refused() {
        let error = HealthConfig::from_vars([("BALDUR_REDIS_URL", "redis://:hunter2@cache/0")])
            .unwrap_err();
        assert_eq!(error.variable(), "BALDUR_REDIS_URL");
        assert!(error.to_string().contains("`redis` feature"), "{error}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    #[cfg(feature = "redis")]
    #[test]
    fn the_shared_cache_from_the_environment() {
        let config = HealthConfig::from_vars([
            ("BALDUR_REDIS_URL", "redis://:hunter2@cache.internal:6380/2"),
            (KEY_PREFIX, "checkout:"),
            (TTL, "20s"),
            (LOCK_EXPIRY, "2s"),
            (PROCESS_ID, "web-1"),
            (NOCACHE_WRITES, "true"),
            (FLEET_GUARD, "0.5"),
        ])
        .unwrap();
        let cache = config.shared_cache.as_ref().expect("a shared cache");
        assert_eq!(cache.entry_key(), "checkout:health");
        assert_eq!(cache.lock_key(), "checkout:health:lock");
        let debug = format!("{config:?}");
        assert!(debug.contains("cache.internal:6380/2"), "{debug}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("ttl: Some(20s)"), "{debug}");
        assert!(debug.contains("fleet_guard: Some(0.5)"), "{debug}");
        assert_eq!(cache.fleet_key(), "checkout:fleet");
        let error =
            HealthConfig::from_vars([("TOWER_HEALTH_REDIS_URL", "http://cache")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_REDIS_URL");
    }
}
