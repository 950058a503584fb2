//! The settings that are a choice between names: fail direction, the `?nocache` policy and
//! who sees details.

use std::str::FromStr;

use super::ConfigError;
use crate::verdict::component_status::UnknownComponents;
pub use crate::verdict::rules::FailDirection;

/// The error of a setting's value that is none of the accepted names: the one configuration
/// error, naming the setting's type (`config::Details`), the value and the names it takes.
pub(crate) fn not_a_name(setting: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::new(setting, value, format!("expected {expected}"))
}

impl FromStr for FailDirection {
    type Err = ConfigError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "not_ready" => Ok(Self::NotReady),
            "ready" => Ok(Self::Ready),
            _ => Err(not_a_name(
                "config::FailDirection",
                value,
                "not_ready or ready",
            )),
        }
    }
}

/// Who may bypass the cache with `?nocache=true`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum NoCache {
    /// Anyone (the default), or, on a reader with keys (the admin server's, or a layer's
    /// [access keys](crate::HealthConfig::access_keys)), their holders. Bypasses are
    /// coalesced and rate-limited either way.
    #[default]
    Allowed,
    /// Only callers that present a key (the viewer's or the operator's), on every reader.
    Authorized,
    /// Nobody: the parameter is ignored and the published verdict is served.
    Off,
}

impl FromStr for NoCache {
    type Err = ConfigError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "allowed" => Ok(Self::Allowed),
            "authorized" => Ok(Self::Authorized),
            "off" => Ok(Self::Off),
            _ => Err(not_a_name(
                "config::NoCache",
                value,
                "allowed, authorized or off",
            )),
        }
    }
}

/// Who sees more than statuses, error categories and configured names in probe bodies: the
/// redacted error text (drivers name hosts, users and databases), targets, what passing
/// checks report ([`CheckReport`](crate::check::CheckReport)'s `details`), pool figures and
/// timings. Set per reader ([`HealthLayer::details`](crate::HealthLayer::details),
/// `AdminConfig::details`); the monitor's [`HealthConfig::details`](crate::HealthConfig::details)
/// is their default.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Details {
    /// Everyone (the default: bodies carry the error messages dashboards already read).
    #[default]
    Always,
    /// Holders of an admin key (`Authorization: Bearer <key>`, viewer or operator); everyone
    /// else gets the short form. Without keys configured, nobody.
    Authorized,
    /// Nobody: for endpoints reachable from the internet.
    Never,
}

impl Details {
    /// The name used in configuration: `"always"`, `"authorized"` or `"never"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Authorized => "authorized",
            Self::Never => "never",
        }
    }
}

impl FromStr for Details {
    type Err = ConfigError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "always" => Ok(Self::Always),
            "authorized" => Ok(Self::Authorized),
            "never" => Ok(Self::Never),
            _ => Err(not_a_name(
                "config::Details",
                value,
                "always, authorized or never",
            )),
        }
    }
}

impl FromStr for UnknownComponents {
    type Err = ConfigError;

    /// `ignored` or `in_trouble` (`TOWER_HEALTH_UNKNOWN_COMPONENTS`).
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "ignored" => Ok(Self::Ignored),
            "in_trouble" => Ok(Self::InTrouble),
            _ => Err(not_a_name(
                "component::UnknownComponents",
                value,
                "ignored or in_trouble",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_none_of_the_values_take_is_a_config_error_naming_the_setting() {
        let error = "sideways".parse::<FailDirection>().unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"config::FailDirection="sideways": expected not_ready or ready"#
        );
        assert_eq!("NEVER".parse::<Details>(), Ok(Details::Never));
        let error = "sometimes".parse::<Details>().unwrap_err();
        assert_eq!(error.variable(), "config::Details");
        assert_eq!(error.reason(), "expected always, authorized or never");
        assert!("nobody".parse::<NoCache>().is_err());
        assert!("maybe".parse::<UnknownComponents>().is_err());
    }
}
