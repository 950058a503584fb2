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
    /// The check ran past the monitor's [check limit](crate::HealthConfig::check_limit) and
    /// was abandoned.
    TimedOut,
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
            Self::TimedOut => "timed_out",
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

    /// Creates an error from another error, its message being the whole chain of sources
    /// (`error connecting to server: Connection refused (os error 111)`), redacted.
    pub fn from_error(kind: CheckErrorKind, error: &(dyn std::error::Error + 'static)) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            // Wrappers often repeat their cause's message; say it once.
            if !message.ends_with(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Self::new(kind, message)
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

    #[test]
    fn from_error_spells_out_the_chain() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("error connecting to server")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error = CheckError::from_error(CheckErrorKind::Connect, &Outer(io));
        assert_eq!(
            error.message(),
            "error connecting to server: connection refused"
        );
    }
}
