//! The overall status of a verdict and how it maps to HTTP.

use std::fmt;

use http::StatusCode;

/// The status of a health or pool verdict.
///
/// Only [`Healthy`](Status::Healthy) and [`Degraded`](Status::Degraded) answer 200: degraded
/// means "keep serving, but look into it" and never takes a pod out of rotation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// Every check passed.
    Healthy,
    /// The default database is fine but something else needs a look.
    Degraded,
    /// The default database is unreachable (or no database is configured).
    Unhealthy,
    /// Computing the verdict itself failed, for example because a check panicked.
    Error,
    /// No verdict exists: no round has completed yet, or the monitor is not running.
    Unavailable,
}

impl Status {
    /// The name used in JSON bodies: `"healthy"`, `"degraded"`, `"unhealthy"`, `"error"` or
    /// `"unavailable"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Healthy => "healthy",
            Self::Degraded => "degraded",
            Self::Unhealthy => "unhealthy",
            Self::Error => "error",
            Self::Unavailable => "unavailable",
        }
    }

    /// The HTTP status a probe answers with: 200 for healthy and degraded, 503 otherwise.
    #[must_use]
    pub const fn http_status(self) -> StatusCode {
        if self.is_serving() {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        }
    }

    /// Whether this status keeps the instance in rotation.
    #[must_use]
    pub const fn is_serving(self) -> bool {
        matches!(self, Self::Healthy | Self::Degraded)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_healthy_and_degraded_serve() {
        assert_eq!(Status::Healthy.http_status(), StatusCode::OK);
        assert_eq!(Status::Degraded.http_status(), StatusCode::OK);
        for status in [Status::Unhealthy, Status::Error, Status::Unavailable] {
            assert_eq!(
                status.http_status(),
                StatusCode::SERVICE_UNAVAILABLE,
                "{status}"
            );
        }
    }
}
