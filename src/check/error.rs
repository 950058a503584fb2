use std::fmt;

use crate::redact::redact;

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
    /// Opening a connection failed (refused, unreachable, authentication).
    Connect,
    /// The TLS handshake failed: the server offers no TLS, or its certificate is not trusted
    /// or not valid for the host name. The message says why, never the certificate chain.
    Tls,
    /// Opening a connection took too long (the server accepted and did not answer).
    ConnectTimedOut,
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
            Self::Tls => "tls",
            Self::ConnectTimedOut => "connect_timed_out",
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

impl CheckErrorKind {
    /// Whether the check failed by waiting too long rather than by being refused: such a
    /// failure is reported `timed_out`, like a check the round's deadline cut short.
    #[must_use]
    pub const fn is_timeout(self) -> bool {
        matches!(
            self,
            Self::ConnectTimedOut | Self::PoolTimedOut | Self::TimedOut
        )
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

    /// Creates a connect error, of kind [`CheckErrorKind::ConnectTimedOut`] when anything in
    /// the chain of sources is a timeout (an I/O timeout, or [`ConnectError::TimedOut`]), and
    /// [`CheckErrorKind::Tls`] when it is a failed TLS handshake.
    ///
    /// [`ConnectError::TimedOut`]: crate::check::PostgresConnectError::TimedOut
    pub fn connect(error: &(dyn std::error::Error + 'static)) -> Self {
        let chain = || std::iter::successors(Some(error), |error| error.source());
        let kind = if chain().any(is_timeout) {
            CheckErrorKind::ConnectTimedOut
        } else if chain().any(is_tls) {
            CheckErrorKind::Tls
        } else {
            CheckErrorKind::Connect
        };
        Self::from_error(kind, error)
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

fn is_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(io) = error.downcast_ref::<std::io::Error>() {
        return io.kind() == std::io::ErrorKind::TimedOut;
    }
    #[cfg(feature = "postgres")]
    if let Some(crate::check::PostgresConnectError::TimedOut(_)) = error.downcast_ref() {
        return true;
    }
    false
}

fn is_tls(error: &(dyn std::error::Error + 'static)) -> bool {
    #[cfg(feature = "rustls")]
    {
        // An I/O error's `source` skips the error it wraps, so look inside it.
        let inner = error
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn std::error::Error + 'static));
        if error.is::<rustls::Error>() || inner.is_some_and(|inner| inner.is::<rustls::Error>()) {
            return true;
        }
    }
    // tokio-postgres does not expose its error kinds; its TLS errors say so.
    #[cfg(feature = "postgres")]
    if error.is::<tokio_postgres::Error>() {
        let message = error.to_string();
        return message.starts_with("error performing TLS handshake")
            || message == "server does not support TLS";
    }
    let _ = error;
    false
}

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
