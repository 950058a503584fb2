//! Reading settings from environment variables, with errors that name the variable.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::redact::redact;

/// A setting that could not be used: names the variable (or setting), the offending value
/// (redacted) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    variable: String,
    value: String,
    reason: String,
}

impl ConfigError {
    pub(crate) fn new(variable: &str, value: &str, reason: impl Into<String>) -> Self {
        Self {
            variable: variable.to_owned(),
            value: redact(value),
            reason: reason.into(),
        }
    }

    /// The environment variable (or setting) at fault.
    #[must_use]
    pub fn variable(&self) -> &str {
        &self.variable
    }

    /// The value it had, with any password masked.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What was expected instead.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}: {}", self.variable, self.value, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// Whether a variable may be a setting: every `TOWER_HEALTH_` name is ours, and every
/// `BALDUR_` name is captured too, so that a parser asking for a Python-system name finds it
/// without a second list to keep in step.
fn may_be_setting(name: &str) -> bool {
    name.starts_with("TOWER_HEALTH_") || name.starts_with("BALDUR_")
}

/// A snapshot of the environment variables to read settings from. Empty values count as
/// unset, as they do in most Kubernetes manifests.
#[derive(Debug, Default)]
pub(crate) struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    pub(crate) fn from_process() -> Result<Self, ConfigError> {
        let mut vars = HashMap::new();
        for (key, value) in std::env::vars_os() {
            let Some(key) = key.to_str().filter(|key| may_be_setting(key)) else {
                continue;
            };
            // Not echoed: it may be a key or a connection string.
            let value = value.into_string().map_err(|_| {
                ConfigError::new(key, "<not UTF-8>", "the value is not valid UTF-8")
            })?;
            vars.insert(key.to_owned(), value);
        }
        Ok(Self { vars })
    }

    pub(crate) fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let vars = vars
            .into_iter()
            .map(|(key, value)| (key.into(), value.into()))
            .collect();
        Self { vars }
    }

    /// The first of `names` that is set, with its value.
    pub(crate) fn first<'e, 'n>(&'e self, names: &[&'n str]) -> Option<(&'n str, &'e str)> {
        names.iter().find_map(|&name| {
            self.vars
                .get(name)
                .map(|value| value.trim())
                .filter(|value| !value.is_empty())
                .map(|value| (name, value))
        })
    }

    /// Every set variable whose name starts with `prefix`, as (name, suffix, value), sorted by
    /// name so that the order does not depend on the hash map.
    pub(crate) fn with_prefix<'a>(&'a self, prefix: &str) -> Vec<(&'a str, &'a str, &'a str)> {
        let mut found: Vec<_> = self
            .vars
            .iter()
            .filter_map(|(name, value)| {
                let suffix = name.strip_prefix(prefix)?;
                let value = value.trim();
                (!value.is_empty()).then_some((name.as_str(), suffix, value))
            })
            .collect();
        found.sort_unstable();
        found
    }

    /// A value parsed with `FromStr`, read from the first of `names` that is set.
    pub(crate) fn parse<T>(&self, names: &[&str], expected: &str) -> Result<Option<T>, ConfigError>
    where
        T: FromStr,
    {
        self.first(names)
            .map(|(name, value)| {
                value
                    .parse()
                    .map_err(|_| ConfigError::new(name, value, expected))
            })
            .transpose()
    }

    /// A boolean: `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`.
    pub(crate) fn flag(&self, name: &str) -> Result<Option<bool>, ConfigError> {
        self.first(&[name])
            .map(|(name, value)| match value.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(ConfigError::new(name, value, "expected true or false")),
            })
            .transpose()
    }

    /// A positive duration: `own` takes a human duration (`500ms`, `2s`, `1m 30s`), `seconds`
    /// (a name of the system this crate replaces) a number of seconds such as `0.5`. `own`
    /// wins when both are set.
    pub(crate) fn duration(
        &self,
        own: &str,
        seconds: Option<&str>,
    ) -> Result<Option<Duration>, ConfigError> {
        if let Some((name, value)) = self.first(&[own]) {
            return match humantime::parse_duration(value) {
                Ok(duration) if duration > Duration::ZERO => Ok(Some(duration)),
                Ok(_) => Err(ConfigError::new(
                    name,
                    value,
                    "the duration must be greater than zero",
                )),
                Err(_) => Err(ConfigError::new(
                    name,
                    value,
                    "expected a positive duration with a unit, such as 500ms, 2s or 1m",
                )),
            };
        }
        let Some((name, value)) = seconds.and_then(|seconds| self.first(&[seconds])) else {
            return Ok(None);
        };
        match value.parse::<f64>() {
            Ok(secs) if secs.is_finite() && secs > 0.0 && secs < 1e9 => {
                Ok(Some(Duration::from_secs_f64(secs)))
            }
            _ => Err(ConfigError::new(
                name,
                value,
                "expected a positive number of seconds, such as 0.5 or 2",
            )),
        }
    }

    /// Like [`Env::duration`], but zero is allowed.
    pub(crate) fn duration_or_zero(&self, own: &str) -> Result<Option<Duration>, ConfigError> {
        self.first(&[own])
            .map(|(name, value)| {
                if value == "0" {
                    return Ok(Duration::ZERO);
                }
                humantime::parse_duration(value).map_err(|_| {
                    ConfigError::new(
                        name,
                        value,
                        "expected a duration with a unit, such as 0s, 500ms or 2s",
                    )
                })
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_vars(vars.iter().copied())
    }

    #[test]
    fn own_names_take_human_durations() {
        let env = env(&[
            ("A", "750ms"),
            ("B", "2s"),
            ("C", "-1s"),
            ("D", "0s"),
            ("E", "5"),
        ]);
        assert_eq!(
            env.duration("A", None).unwrap(),
            Some(Duration::from_millis(750))
        );
        assert_eq!(
            env.duration("B", None).unwrap(),
            Some(Duration::from_secs(2))
        );
        for name in ["C", "D", "E"] {
            let error = env.duration(name, None).unwrap_err();
            assert_eq!(error.variable(), name);
        }
        assert_eq!(env.duration("MISSING", None).unwrap(), None);
    }

    #[test]
    fn compat_names_take_seconds_and_lose_to_own_names() {
        let env = env(&[
            ("OWN", "1s"),
            ("SECS", "0.25"),
            ("NEG", "-2"),
            ("NAN", "NaN"),
        ]);
        assert_eq!(
            env.duration("X", Some("SECS")).unwrap(),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            env.duration("OWN", Some("SECS")).unwrap(),
            Some(Duration::from_secs(1))
        );
        let error = env.duration("X", Some("NEG")).unwrap_err();
        assert_eq!((error.variable(), error.value()), ("NEG", "-2"));
        assert!(env.duration("X", Some("NAN")).is_err());
    }

    #[test]
    fn empty_values_count_as_unset() {
        let env = env(&[("A", ""), ("B", "  ")]);
        assert_eq!(env.first(&["A", "B"]), None);
        assert_eq!(env.flag("A").unwrap(), None);
    }

    #[test]
    fn error_names_variable_and_redacted_value() {
        let error = ConfigError::new("DSN", "postgres://u:secret@h/db", "bad");
        assert_eq!(error.to_string(), "DSN=\"postgres://u:***@h/db\": bad");
    }
}
