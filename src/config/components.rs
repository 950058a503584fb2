//! Components declared in the environment: `TOWER_HEALTH_TCP_<NAME>=host:port`,
//! `TOWER_HEALTH_HTTP_<NAME>=url`, `TOWER_HEALTH_REDIS_<NAME>=redis://...`, and `TOWER_HEALTH_CRITICAL=<name>,...` to make components
//! critical.

use std::sync::Arc;

use super::databases::name_after;
use super::{ConfigError, Env, HealthConfig, is_valid_check_name};
use crate::component::ComponentSpec;

/// A kind of component the environment can declare: the prefix of its variables
/// (`<prefix><NAME>=value`), and how a value becomes one named `name`.
struct Kind {
    prefix: &'static str,
    declare: fn(variable: &str, name: &str, value: &str) -> Result<ComponentSpec, ConfigError>,
}

/// Every kind, in the order the components are added.
const KINDS: [Kind; 3] = [
    Kind {
        prefix: "TOWER_HEALTH_TCP_",
        declare: tcp,
    },
    Kind {
        prefix: "TOWER_HEALTH_HTTP_",
        declare: http,
    },
    Kind {
        prefix: "TOWER_HEALTH_REDIS_",
        declare: redis,
    },
];

/// `TOWER_HEALTH_REDIS_URL` is the shared cache's, not a component named `url`.
const NOT_A_COMPONENT: [&str; 1] = ["TOWER_HEALTH_REDIS_URL"];

/// The variable listing the components that are critical.
const CRITICAL: &str = "TOWER_HEALTH_CRITICAL";

impl HealthConfig {
    /// Adds the components the environment declares, and reads which are critical.
    pub(super) fn components_from_env(mut self, env: &Env) -> Result<Self, ConfigError> {
        for kind in &KINDS {
            for (variable, suffix, value) in env.with_prefix(kind.prefix) {
                if NOT_A_COMPONENT.contains(&variable) {
                    continue;
                }
                let name = name_after(kind.prefix, variable, suffix, value)?;
                self = self.component((kind.declare)(variable, &name, value)?);
            }
        }
        if let Some((variable, names)) = env.first(&[CRITICAL]) {
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
                        "expected component names separated by commas (ASCII letters, digits, '_' or '-')",
                    ));
                }
                if !self
                    .critical_components
                    .iter()
                    .any(|known| **known == *name)
                {
                    self.critical_components.push(Arc::from(name));
                }
            }
        }
        Ok(self)
    }

    /// Whether the environment listed the component `name` as critical.
    pub(crate) fn is_listed_critical(&self, name: &str) -> bool {
        self.critical_components
            .iter()
            .any(|known| &**known == name)
    }
}

#[cfg(feature = "tcp")]
fn tcp(variable: &str, name: &str, target: &str) -> Result<ComponentSpec, ConfigError> {
    if !target.contains(':') {
        return Err(ConfigError::new(variable, target, "expected host:port"));
    }
    Ok(ComponentSpec::new(name, crate::component::Tcp::new(target)))
}

#[cfg(feature = "http-check")]
fn http(variable: &str, name: &str, url: &str) -> Result<ComponentSpec, ConfigError> {
    let component =
        crate::component::Http::new(url).map_err(|error| error.for_variable(variable))?;
    Ok(ComponentSpec::new(name, component))
}

#[cfg(feature = "redis")]
fn redis(variable: &str, name: &str, url: &str) -> Result<ComponentSpec, ConfigError> {
    let component =
        crate::redis::Redis::connect(url).map_err(|error| error.for_variable(variable))?;
    Ok(ComponentSpec::new(name, component))
}

/// Refuses rather than silently checking nothing.
#[cfg(not(feature = "tcp"))]
fn tcp(variable: &str, _name: &str, target: &str) -> Result<ComponentSpec, ConfigError> {
    Err(without_feature(variable, target, "a TCP", "tcp"))
}

/// Refuses rather than silently checking nothing.
#[cfg(not(feature = "http-check"))]
fn http(variable: &str, _name: &str, url: &str) -> Result<ComponentSpec, ConfigError> {
    Err(without_feature(variable, url, "an HTTP", "http-check"))
}

/// Refuses rather than silently checking nothing.
#[cfg(not(feature = "redis"))]
fn redis(variable: &str, _name: &str, url: &str) -> Result<ComponentSpec, ConfigError> {
    Err(without_feature(variable, url, "a Redis", "redis"))
}

#[cfg(not(all(feature = "tcp", feature = "http-check", feature = "redis")))]
fn without_feature(variable: &str, value: &str, kind: &str, feature: &str) -> ConfigError {
    ConfigError::new(
        variable,
        value,
        format!(
            "{kind} component is declared but tower-health was built without the `{feature}` feature"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "tcp")]
    #[test]
    fn tcp_components_and_critical_ones_from_the_environment() {
        let config = HealthConfig::from_vars([
            ("TOWER_HEALTH_TCP_CACHE", "127.0.0.1:6379"),
            ("TOWER_HEALTH_TCP_QUEUE", "queue.internal:5672"),
            ("TOWER_HEALTH_CRITICAL", "Queue"),
        ])
        .unwrap();
        assert_eq!(
            config.component_names().collect::<Vec<_>>(),
            ["cache", "queue"]
        );
        assert!(config.is_listed_critical("queue"));
        assert!(!config.is_listed_critical("cache"));
        let error = HealthConfig::from_vars([("TOWER_HEALTH_TCP_CACHE", "no-port")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_TCP_CACHE");
    }

    #[cfg(feature = "http-check")]
    #[test]
    fn http_components_from_the_environment() {
        let config =
            HealthConfig::from_vars([("TOWER_HEALTH_HTTP_SEARCH", "http://search.internal/")])
                .unwrap();
        assert_eq!(config.component_names().collect::<Vec<_>>(), ["search"]);
        let error = HealthConfig::from_vars([("TOWER_HEALTH_HTTP_SEARCH", "ftp://app:hunter2@x/")])
            .unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_HTTP_SEARCH");
        assert!(!error.to_string().contains("hunter2"), "{error}");
        // Credentials in the query string (issue 21), in a refused URL and an accepted one.
        let error = HealthConfig::from_vars([(
            "TOWER_HEALTH_HTTP_SEARCH",
            "ftp://search.internal/health?access_token=hunter3",
        )])
        .unwrap_err();
        assert_eq!(
            error.value(),
            "ftp://search.internal/health?access_token=***"
        );
        assert!(!format!("{error} {error:?}").contains("hunter3"), "{error}");
        let config = HealthConfig::from_vars([(
            "TOWER_HEALTH_HTTP_SEARCH",
            "http://search.internal/health?api_key=hunter3",
        )])
        .unwrap();
        assert!(!format!("{config:?}").contains("hunter3"), "{config:?}");
    }

    #[cfg(feature = "redis")]
    #[test]
    fn redis_components_from_the_environment() {
        let config = HealthConfig::from_vars([
            (
                "TOWER_HEALTH_REDIS_SESSIONS",
                "redis://:hunter2@sessions.internal:6379/1",
            ),
            ("TOWER_HEALTH_REDIS_URL", "redis://shared.internal"),
            ("TOWER_HEALTH_CRITICAL", "sessions"),
        ])
        .unwrap();
        // TOWER_HEALTH_REDIS_URL is the shared cache, not a component named `url`.
        assert_eq!(config.component_names().collect::<Vec<_>>(), ["sessions"]);
        assert!(config.is_listed_critical("sessions"));
        let debug = format!("{config:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        let error =
            HealthConfig::from_vars([("TOWER_HEALTH_REDIS_CACHE", "mysql://app:hunter2@x/")])
                .unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_REDIS_CACHE");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    #[cfg(not(feature = "redis"))]
    #[test]
    fn a_redis_component_without_the_feature_is_refused() {
        let error =
            HealthConfig::from_vars([("TOWER_HEALTH_REDIS_CACHE", "redis://cache")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_REDIS_CACHE");
        assert!(error.to_string().contains("`redis` feature"), "{error}");
    }

    #[test]
    fn how_unknown_components_count_comes_from_the_environment() {
        use crate::component::UnknownComponents;
        let config =
            HealthConfig::from_vars([("TOWER_HEALTH_UNKNOWN_COMPONENTS", "IN_TROUBLE")]).unwrap();
        assert_eq!(config.unknown_components, UnknownComponents::InTrouble);
        let error =
            HealthConfig::from_vars([("TOWER_HEALTH_UNKNOWN_COMPONENTS", "maybe")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_UNKNOWN_COMPONENTS");
        assert_eq!(error.reason(), "expected ignored or in_trouble");
    }

    #[test]
    fn a_bad_critical_list_names_the_variable() {
        let error = HealthConfig::from_vars([("TOWER_HEALTH_CRITICAL", "a b")]).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_CRITICAL");
    }

    #[cfg(not(feature = "tcp"))]
    #[test]
    fn a_tcp_component_without_the_feature_is_refused() {
        let error =
            HealthConfig::from_vars([("TOWER_HEALTH_TCP_CACHE", "127.0.0.1:6379")]).unwrap_err();
        assert!(error.to_string().contains("`tcp` feature"), "{error}");
    }
}
