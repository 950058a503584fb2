use std::fmt;

use super::redact;

/// Why a database check failed.
///
/// The message is redacted when the error is built: it never carries a password or a full
/// connection string, so it is safe to put in a response body or a log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    kind: CheckErrorKind,
    message: String,
}

/// The category of a [`CheckError`], stable enough for dashboards and alerts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckErrorKind {
    /// Opening a connection failed (refused, unreachable, authentication, TLS).
    Connect,
    /// The pool had no connection to give within its own timeout.
    PoolTimedOut,
    /// The database answered the query with an error.
    Query,
    /// The connection closed under the check.
    Closed,
    /// The check panicked.
    Panicked,
    /// The check was cancelled before it finished, for example at runtime shutdown.
    Cancelled,
    /// Anything else.
    Other,
}

impl CheckErrorKind {
    /// The name used in JSON bodies, such as `"connect"` or `"pool_timed_out"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::PoolTimedOut => "pool_timed_out",
            Self::Query => "query",
            Self::Closed => "closed",
            Self::Panicked => "panicked",
            Self::Cancelled => "cancelled",
            Self::Other => "other",
        }
    }
}

impl fmt::Display for CheckErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CheckError {
    /// Creates an error of the given kind; the message is passed through [`redact`].
    pub fn new(kind: CheckErrorKind, message: impl AsRef<str>) -> Self {
        Self {
            kind,
            message: redact(message.as_ref()),
        }
    }

    /// The category of the failure.
    #[must_use]
    pub fn kind(&self) -> CheckErrorKind {
        self.kind
    }

    /// The redacted message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for CheckError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_is_redacted_on_construction() {
        let error = CheckError::new(
            CheckErrorKind::Connect,
            "cannot reach postgres://app:hunter2@db.internal:5432/app",
        );
        assert!(!error.message().contains("hunter2"), "{error}");
        assert_eq!(error.kind(), CheckErrorKind::Connect);
        assert!(error.to_string().starts_with("connect: "));
    }
}
