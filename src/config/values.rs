//! The settings that are a choice between names: fail direction and the `?nocache` policy.

use std::fmt;
use std::str::FromStr;

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
