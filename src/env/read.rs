//! Reading settings from environment variables, with errors that name the variable.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::str::FromStr;
use std::time::Duration;

use super::ConfigError;
use super::limits::{Zero, out_of_range};

/// Whether a variable may be a setting: every `TOWER_HEALTH_` name is ours, and every
/// `BALDUR_` name is captured too, so that a parser asking for a `BALDUR_*` name finds it
/// without a second list to keep in step.
fn may_be_setting(name: &str) -> bool {
    name.starts_with("TOWER_HEALTH_") || name.starts_with("BALDUR_")
}

/// A snapshot of the environment variables to read settings from. Empty values count as
/// unset, as they do in most Kubernetes manifests.
#[derive(Debug, Default)]
pub(crate) struct Env {
    vars: HashMap<String, String>,
    /// Every name and prefix a parser asked for, set or not: what keeps the lists of
    /// [`known`](super::known) in step with the parsers (a unit test compares the two).
    asked: RefCell<Asked>,
}

/// The names and prefixes the parsers asked an [`Env`] for.
#[derive(Debug, Default)]
pub(crate) struct Asked {
    pub(crate) names: BTreeSet<&'static str>,
    pub(crate) prefixes: BTreeSet<&'static str>,
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
        Ok(Self {
            vars,
            asked: RefCell::default(),
        })
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
        Self {
            vars,
            asked: RefCell::default(),
        }
    }

    /// The names of the variables that are set (to a non-empty value), sorted.
    pub(crate) fn set_names(&self) -> Vec<&str> {
        let mut names: Vec<_> = self
            .vars
            .iter()
            .filter(|(_, value)| !value.trim().is_empty())
            .map(|(name, _)| name.as_str())
            .collect();
        names.sort_unstable();
        names
    }

    /// What the parsers asked for so far.
    #[cfg(test)]
    pub(crate) fn take_asked(&self) -> Asked {
        self.asked.take()
    }

    /// The first of `names` that is set, with its value.
    pub(crate) fn first<'e>(&'e self, names: &[&'static str]) -> Option<(&'static str, &'e str)> {
        self.asked.borrow_mut().names.extend(names);
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
    pub(crate) fn with_prefix(&self, prefix: &'static str) -> Vec<(&str, &str, &str)> {
        self.asked.borrow_mut().prefixes.insert(prefix);
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
    pub(crate) fn parse<T>(
        &self,
        names: &[&'static str],
        expected: &str,
    ) -> Result<Option<T>, ConfigError>
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

    /// A boolean: `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`, in any case.
    pub(crate) fn flag(&self, name: &'static str) -> Result<Option<bool>, ConfigError> {
        self.first(&[name])
            .map(|(name, value)| match value.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(ConfigError::new(
                    name,
                    value,
                    "expected true or false (also 1/0, yes/no, on/off)",
                )),
            })
            .transpose()
    }

    /// A duration from 1 ms to 1 year ([`MIN_DURATION`](super::MIN_DURATION) to
    /// [`MAX_DURATION`](super::MAX_DURATION)): `own` takes a human duration (`500ms`, `2s`,
    /// `1m 30s`), `seconds` (a name of the system this crate replaces) a number of seconds
    /// such as `0.5`. `own` wins when both are set.
    pub(crate) fn duration(
        &self,
        own: &'static str,
        seconds: Option<&'static str>,
    ) -> Result<Option<Duration>, ConfigError> {
        // Both are looked up, so that both are recorded as asked for.
        let own = self.first(&[own]);
        let seconds = seconds.and_then(|seconds| self.first(&[seconds]));
        if let Some((name, value)) = own {
            return human_duration(value, Zero::Refused)
                .map(Some)
                .map_err(|reason| ConfigError::new(name, value, reason));
        }
        seconds
            .map(|(name, value)| {
                seconds_duration(value).map_err(|reason| ConfigError::new(name, value, reason))
            })
            .transpose()
    }

    /// Like [`Env::duration`] without a second name, but zero is allowed (and may be written
    /// `0`).
    pub(crate) fn duration_or_zero(
        &self,
        own: &'static str,
    ) -> Result<Option<Duration>, ConfigError> {
        self.first(&[own])
            .map(|(name, value)| {
                human_duration(value, Zero::Allowed)
                    .map_err(|reason| ConfigError::new(name, value, reason))
            })
            .transpose()
    }
}

/// A human duration (`500ms`, `2s`, `1m 30s`) within the limits.
fn human_duration(value: &str, zero: Zero) -> Result<Duration, &'static str> {
    let duration = match humantime::parse_duration(value) {
        Ok(duration) => duration,
        Err(_) if zero == Zero::Allowed && value == "0" => Duration::ZERO,
        // Too large, or finer than a nanosecond: humantime says which no more than that.
        Err(humantime::DurationError::NumberOverflow) => {
            return Err("expected from 1ms to 1year");
        }
        Err(_) if zero == Zero::Allowed => {
            return Err("expected a duration with a unit, such as 0s, 500ms or 2s");
        }
        Err(_) => return Err("expected a positive duration with a unit, such as 500ms, 2s or 1m"),
    };
    match out_of_range(duration, zero) {
        Some(reason) => Err(reason),
        None => Ok(duration),
    }
}

/// A number of seconds such as `0.5`, within the limits (zero refused).
fn seconds_duration(value: &str) -> Result<Duration, &'static str> {
    let secs = match value.parse::<f64>() {
        Ok(secs) if secs > 0.0 => secs,
        // Negative, zero, NaN or not a number.
        _ => return Err("expected a positive number of seconds, such as 0.5 or 2"),
    };
    // Too large for a `Duration` (infinity included) is too long for a setting.
    let duration = Duration::try_from_secs_f64(secs).map_err(|_| "expected at most 1year")?;
    match out_of_range(duration, Zero::Refused) {
        Some(reason) => Err(reason),
        None => Ok(duration),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MAX_DURATION, MIN_DURATION};

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
    fn durations_out_of_range_are_refused_with_the_reason() {
        let env = env(&[
            ("HUGE", "1000000000000000s"),
            ("OVERFLOWING", "99999999999999999999999s"),
            ("SUB_NANOSECOND", "0.0000000001s"),
            ("YEAR", "1y"),
            ("TINY", "500us"),
            ("ZERO", "0s"),
            ("BARE_ZERO", "0"),
            ("SECS_TINY", "1e-10"),
            ("SECS_HUGE", "1e300"),
            ("SECS_INF", "inf"),
            ("SECS_MS", "0.001"),
        ]);
        for (name, reason) in [
            ("HUGE", "expected at most 1year"),
            ("OVERFLOWING", "expected from 1ms to 1year"),
            ("SUB_NANOSECOND", "expected from 1ms to 1year"),
            ("TINY", "expected at least 1ms"),
            ("ZERO", "expected at least 1ms"),
        ] {
            let error = env.duration(name, None).unwrap_err();
            assert_eq!((error.variable(), error.reason()), (name, reason));
        }
        assert_eq!(env.duration("YEAR", None).unwrap(), Some(MAX_DURATION));
        for (name, reason) in [
            ("SECS_TINY", "expected at least 1ms"),
            ("SECS_HUGE", "expected at most 1year"),
            ("SECS_INF", "expected at most 1year"),
        ] {
            let error = env.duration("UNSET", Some(name)).unwrap_err();
            assert_eq!((error.variable(), error.reason()), (name, reason));
        }
        assert_eq!(
            env.duration("UNSET", Some("SECS_MS")).unwrap(),
            Some(MIN_DURATION)
        );
        // Zero allowed, but not a duration that is neither zero nor a usable one.
        assert_eq!(env.duration_or_zero("ZERO").unwrap(), Some(Duration::ZERO));
        assert_eq!(
            env.duration_or_zero("BARE_ZERO").unwrap(),
            Some(Duration::ZERO)
        );
        let error = env.duration_or_zero("TINY").unwrap_err();
        assert_eq!(error.reason(), "expected 0 or at least 1ms");
        let error = env.duration_or_zero("HUGE").unwrap_err();
        assert_eq!(error.reason(), "expected at most 1year");
    }

    #[test]
    fn every_name_asked_for_is_recorded_set_or_not() {
        let env = env(&[("OWN", "1s"), ("P_X", "1")]);
        env.duration("OWN", Some("SECS")).unwrap();
        env.flag("FLAG").unwrap();
        env.with_prefix("P_");
        let asked = env.take_asked();
        assert_eq!(
            asked.names.into_iter().collect::<Vec<_>>(),
            ["FLAG", "OWN", "SECS"]
        );
        assert_eq!(asked.prefixes.into_iter().collect::<Vec<_>>(), ["P_"]);
    }

    #[test]
    fn flags_take_each_spelling_the_error_lists() {
        let env = env(&[
            ("T1", "TRUE"),
            ("T2", "1"),
            ("T3", "yes"),
            ("T4", "On"),
            ("F1", "false"),
            ("F2", "0"),
            ("F3", "NO"),
            ("F4", "off"),
            ("BAD", "y"),
        ]);
        for name in ["T1", "T2", "T3", "T4"] {
            assert_eq!(env.flag(name).unwrap(), Some(true), "{name}");
        }
        for name in ["F1", "F2", "F3", "F4"] {
            assert_eq!(env.flag(name).unwrap(), Some(false), "{name}");
        }
        let error = env.flag("BAD").unwrap_err();
        assert_eq!(
            error.to_string(),
            "BAD=\"y\": expected true or false (also 1/0, yes/no, on/off)"
        );
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
