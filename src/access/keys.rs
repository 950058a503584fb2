//! The configured keys: an operator key and, beside it, a read-only (viewer) key.

use std::fmt;

use super::role::KeyDigests;
use crate::env::{ConfigError, Env, misspelt_key};

/// The shortest key accepted: 16 characters. Generate one with `openssl rand -hex 32`.
pub(crate) const MIN_KEY_LEN: usize = 16;

/// A key and where it came from: the environment variable, or the builder method.
#[derive(Clone)]
struct Sourced {
    value: String,
    source: &'static str,
}

/// The admin keys: an operator key (role operator) and an optional read-only key (role
/// viewer). Read by the admin server and, for [`Details::Authorized`](crate::config::Details), by any
/// reader.
///
/// `HealthConfig::from_env` and `AdminConfig::from_env` read them from
/// `TOWER_HEALTH_ADMIN_KEY` and `TOWER_HEALTH_ADMIN_READONLY_KEY` (see [the environment
/// table](crate::config#the-keys-read-by-healthconfigfrom_env-and-adminconfigfrom_env)).
///
/// A set variable whose name is close to one of these (`TOWER_HEALTH_ADMIN_KYE`,
/// `BALDUR_ADMIN_KYE`) is an error at start, strict mode or not: read as no key, the typo would
/// leave the admin server and [`Details::Authorized`](crate::config::Details) without keys.
#[derive(Clone, Default)]
#[must_use]
pub struct AccessKeys {
    operator: Option<Sourced>,
    readonly: Option<Sourced>,
}

impl AccessKeys {
    /// No keys: nobody holds a role.
    pub fn new() -> Self {
        Self::default()
    }

    /// The operator key: grants the operator role (and everything the viewer sees).
    ///
    /// Defaults to none.
    pub fn operator(mut self, key: impl Into<String>) -> Self {
        self.operator = Some(Sourced {
            value: key.into(),
            source: "AccessKeys::operator",
        });
        self
    }

    /// The read-only key: grants the viewer role. Needs an operator key beside it.
    ///
    /// Defaults to none.
    pub fn readonly(mut self, key: impl Into<String>) -> Self {
        self.readonly = Some(Sourced {
            value: key.into(),
            source: "AccessKeys::readonly",
        });
        self
    }

    /// The operator key, errors naming `source` (the builder method that set it).
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    pub(crate) fn operator_from(mut self, key: String, source: &'static str) -> Self {
        self.operator = Some(Sourced { value: key, source });
        self
    }

    /// The read-only key, errors naming `source`.
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    pub(crate) fn readonly_from(mut self, key: String, source: &'static str) -> Self {
        self.readonly = Some(Sourced { value: key, source });
        self
    }

    /// Whether an operator key is configured (without one, nobody holds a role).
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.operator.is_some()
    }

    define_env_constructors!("the [type docs](AccessKeys)");

    pub(crate) fn from_env_snapshot(env: &Env) -> Result<Self, ConfigError> {
        // Refused in every mode: a key that is not read leaves the admin server, and a layer
        // with `Details::Authorized`, without keys (open, not closed).
        if let Some((misspelt, intended)) = misspelt_key(env) {
            return Err(secret_error(
                &misspelt,
                &format!(
                    "not read by any setting; did you mean {intended}? (a misspelt key variable is refused: it would leave the admin keys unset)"
                ),
            ));
        }
        let mut keys = Self::new();
        for (names, slot) in [
            (
                ["TOWER_HEALTH_ADMIN_KEY", "BALDUR_ADMIN_KEY"],
                &mut keys.operator,
            ),
            (
                [
                    "TOWER_HEALTH_ADMIN_READONLY_KEY",
                    "BALDUR_ADMIN_READONLY_KEY",
                ],
                &mut keys.readonly,
            ),
        ] {
            if let Some((name, value)) = env.first(&names) {
                *slot = Some(Sourced {
                    value: value.to_owned(),
                    source: name,
                });
            }
        }
        keys.validate()?;
        Ok(keys)
    }

    /// Checks the keys: at least 16 printable characters, a read-only key only beside an
    /// operator key and different from it. Asked where the keys are used:
    /// `HealthConfig::access_keys` (an error of `HealthMonitor::new`), `AdminServer::start`,
    /// `HealthLayer::access_keys` (which holds no key rather than an unusable one).
    ///
    /// The first problem found, naming the variable (or builder method) at fault, never the
    /// key.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        for key in [&self.operator, &self.readonly].into_iter().flatten() {
            if key.value.trim().is_empty() {
                return Err(secret_error(key.source, "the key is empty"));
            }
            if key.value.chars().count() < MIN_KEY_LEN {
                return Err(secret_error(
                    key.source,
                    "the key is shorter than 16 characters; generate one with `openssl rand -hex 32`",
                ));
            }
            if !key.value.bytes().all(|byte| byte.is_ascii_graphic()) {
                return Err(secret_error(
                    key.source,
                    "the key must be printable ASCII without spaces (it travels in an HTTP header)",
                ));
            }
        }
        match (&self.operator, &self.readonly) {
            (None, Some(readonly)) => Err(secret_error(
                readonly.source,
                "a read-only key needs an operator key beside it",
            )),
            (Some(operator), Some(readonly)) if operator.value == readonly.value => {
                Err(secret_error(
                    readonly.source,
                    "the read-only key must differ from the operator key",
                ))
            }
            _ => Ok(()),
        }
    }

    /// The keys' digests, what requests are checked against.
    pub(crate) fn digests(&self) -> KeyDigests {
        KeyDigests::new(
            self.operator.as_ref().map(|key| key.value.as_bytes()),
            self.readonly.as_ref().map(|key| key.value.as_bytes()),
        )
    }
}

fn secret_error(source: &str, reason: &str) -> ConfigError {
    ConfigError::new(source, "<hidden>", reason)
}

impl fmt::Debug for AccessKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keys are secrets: say whether they are set, never what they are.
        let Self { operator, readonly } = self;
        f.debug_struct("AccessKeys")
            .field("operator", &operator.as_ref().map(|_| "<hidden>"))
            .field("readonly", &readonly.as_ref().map(|_| "<hidden>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "operator-key-0123456789";

    #[test]
    fn a_misspelt_key_variable_is_refused_naming_both() {
        for (misspelt, intended) in [
            ("TOWER_HEALTH_ADMIN_KYE", "TOWER_HEALTH_ADMIN_KEY"),
            ("BALDUR_ADMIN_KYE", "BALDUR_ADMIN_KEY"),
            (
                "TOWER_HEALTH_ADMIN_READONLY_KYE",
                "TOWER_HEALTH_ADMIN_READONLY_KEY",
            ),
        ] {
            let error = AccessKeys::from_vars([(misspelt, KEY)]).unwrap_err();
            assert_eq!(error.variable(), misspelt);
            assert!(
                error
                    .reason()
                    .contains(&format!("did you mean {intended}?")),
                "{error}"
            );
            assert!(!error.to_string().contains(KEY), "{error}");
            // Even beside a key that is read: the misspelt one was meant for something.
            let error =
                AccessKeys::from_vars([(misspelt, KEY), ("BALDUR_ADMIN_KEY", KEY)]).unwrap_err();
            assert_eq!(error.variable(), misspelt);
            // And wherever the keys are read.
            let error = crate::HealthConfig::from_vars([(misspelt, KEY)]).unwrap_err();
            assert_eq!(error.variable(), misspelt);
        }
    }

    #[test]
    fn names_far_from_a_key_leave_the_keys_alone() {
        let keys = AccessKeys::from_vars([
            ("TOWER_HEALTH_ADMIN_KEY", KEY),
            // Baldur's own names, more than a typo away from its key names.
            ("BALDUR_API_KEY", "1"),
            ("BALDUR_ADMIN_TOKEN", "1"),
            // Closer to another setting than to a key.
            ("TOWER_HEALTH_ADMIN_PROT", "1"),
        ])
        .unwrap();
        assert!(keys.is_enabled());
    }
}
