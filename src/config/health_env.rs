//! [`HealthConfig`] from the environment: the variables of the [module docs](super).

use super::{
    ConfigError, Env, HealthConfig, is_valid_check_name, unread_warnings, validate_prefix,
};
use crate::access::AccessKeys;

/// # The environment
///
/// Every variable is listed in the [module docs](crate::config).
impl HealthConfig {
    define_env_constructors!("the [module docs](crate::config)");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        let mut config = Self::new();
        config.warnings = unread_warnings(env);
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
        if let Some(debounce) = env.duration_or_zero("TOWER_HEALTH_DEBOUNCE")? {
            config.debounce = debounce;
        }
        if let Some(jitter) = env.duration_or_zero("TOWER_HEALTH_RETURN_JITTER")? {
            config.return_jitter = jitter;
        }
        if let Some((name, prefix)) = env.first(&["TOWER_HEALTH_PATH_PREFIX"]) {
            config.readers.prefix =
                validate_prefix(prefix).map_err(|reason| ConfigError::new(name, prefix, reason))?;
        }
        if let Some(policy) = env.parse(
            &["TOWER_HEALTH_NOCACHE"],
            "expected allowed, authorized or off",
        )? {
            config.readers.shown.nocache = policy;
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
        config.drain = crate::shutdown::DrainConfig::from_env_snapshot(env)?;
        if let Some(on) = env.flag("TOWER_HEALTH_ENVOY_IMMEDIATE_FAIL")? {
            config.readers.envoy_immediate_fail = on;
        }
        if let Some(aliases) = env.flag("TOWER_HEALTH_KUBERNETES_ALIASES")? {
            config.readers.kubernetes_aliases = aliases;
        }
        if let Some(details) = env.parse(
            &["TOWER_HEALTH_DETAILS"],
            "expected always, authorized or never",
        )? {
            config.readers.shown.details = details;
        }
        config.readers.shown.keys = AccessKeys::from_env_snapshot(env)?;
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
                if !is_valid_check_name(&name) {
                    return Err(ConfigError::new(
                        variable,
                        names,
                        "expected database names separated by commas (ASCII letters, digits, '_' or '-')",
                    ));
                }
                config.add_optional(&name);
            }
        }
        config
            .databases_from_env(env)?
            .components_from_env(env)?
            .groups_from_env(env)?
            .load_from_env(env)?
            .shared_from_env(env)
    }
}
