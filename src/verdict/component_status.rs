use std::fmt;

/// Where one component stands, after hysteresis.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ComponentStatus {
    /// No conclusive result yet: no check has finished, or the failures so far are fewer
    /// than the component's threshold and none succeeded.
    Unknown,
    /// Fine.
    Healthy,
    /// A non-critical component in trouble: `/health` answers 200 `degraded`.
    Degraded,
    /// A critical component in trouble: `/health` answers 503 `unhealthy`.
    Unhealthy,
}

impl ComponentStatus {
    /// The name used in JSON bodies: `"unknown"`, `"healthy"`, `"degraded"` or
    /// `"unhealthy"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Healthy => "healthy",
            Self::Degraded => "degraded",
            Self::Unhealthy => "unhealthy",
        }
    }

    /// Whether the component counts as in trouble (degraded or unhealthy).
    #[must_use]
    pub const fn is_in_trouble(self) -> bool {
        match self {
            Self::Degraded | Self::Unhealthy => true,
            Self::Unknown | Self::Healthy => false,
        }
    }
}

impl fmt::Display for ComponentStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a component that is still `unknown` counts toward the overall health status (and
/// readiness, for one that gates it). It is shown `unknown` either way.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnknownComponents {
    /// Counts as fine: a pod does not leave rotation, or read `degraded`, only because a
    /// component has not answered yet (its first check may be on a slow cadence). The
    /// default.
    #[default]
    Ignored,
    /// Counts as in trouble: `degraded` for a non-critical component, `unhealthy` for a
    /// critical one, `not_ready` for one that gates readiness.
    InTrouble,
}
