use std::fmt;
use std::io;

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

/// The category of a [`CheckError`]: what an on-call engineer acts on, stable enough for
/// dashboards and alerts. Every reader sees it, whatever the detail level (`error_kind` in
/// JSON bodies, [`as_str`](Self::as_str)).
///
/// Each backend sorts its own errors into these (a PostgreSQL SQLSTATE, a pool's timeout, an
/// I/O error's kind); [`CheckErrorKind::from_io_chain`] sorts the I/O errors any check meets.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckErrorKind {
    /// `refused`: the server could not be reached or would not take the connection: refused,
    /// unreachable, reset while connecting, or the server refusing the session (PostgreSQL:
    /// the database does not exist `3D000`, too many connections `53300`, starting up or
    /// shutting down `57P03`). Check the address, the port and that the server is up.
    Refused,
    /// `dns`: the host name did not resolve. Check the name and the resolver.
    Dns,
    /// `auth`: the server rejected the credentials (PostgreSQL: SQLSTATE class `28`, a
    /// missing password, a failed SASL exchange, no `CONNECT` privilege). Check the user,
    /// the password and the server's access rules (`pg_hba.conf`).
    Auth,
    /// `tls`: the TLS handshake failed: the server offers no TLS, or its certificate is not
    /// trusted or not valid for the host name. The message says why, never the certificate
    /// chain. Check the certificates and `sslmode`.
    Tls,
    /// `timeout`: something waited too long: the connection attempt, a pool that could not
    /// open a connection because the server did not answer, a statement timeout, or the
    /// monitor's [check limit](crate::HealthConfig::check_limit). The server is slow or
    /// unreachable without a refusal (a firewall dropping packets, a stalled host). The only
    /// kind for which [`is_timeout`](Self::is_timeout) is true.
    Timeout,
    /// `pool_saturated`: the application's pool had no connection to give because every one
    /// was in use (as its figures showed), not because the server stalled. Grow the pool or
    /// look at what holds its connections.
    PoolSaturated,
    /// `closed`: the connection closed under the check: the server ended the session (a
    /// restart, `pg_terminate_backend`) or the socket broke mid-query. A connection found
    /// closed before the query is replaced within the check, so this one was fresh, or its
    /// replacement failed too. Read the server's log.
    Closed,
    /// `query`: the server answered the check's query with an error. Read the message.
    Query,
    /// `panicked`: the check panicked (a bug in the check).
    Panicked,
    /// `other`: anything else, a check cancelled before it finished (at runtime shutdown,
    /// say) included, and a component's own verdict (an HTTP dependency answering a non-2xx
    /// status, a disk below its minimum, a blocked runtime). Read the message.
    Other,
}

impl CheckErrorKind {
    /// The name used in JSON bodies (`error_kind`), such as `"refused"` or `"pool_saturated"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Dns => "dns",
            Self::Auth => "auth",
            Self::Tls => "tls",
            Self::Timeout => "timeout",
            Self::PoolSaturated => "pool_saturated",
            Self::Closed => "closed",
            Self::Query => "query",
            Self::Panicked => "panicked",
            Self::Other => "other",
        }
    }

    /// Whether the check failed by waiting too long rather than by being refused
    /// ([`Timeout`](Self::Timeout)): such a failure is reported `timed_out`, like a check the
    /// round's deadline cut short.
    #[must_use]
    pub const fn is_timeout(self) -> bool {
        match self {
            Self::Timeout => true,
            Self::Refused
            | Self::Dns
            | Self::Auth
            | Self::Tls
            | Self::PoolSaturated
            | Self::Closed
            | Self::Query
            | Self::Panicked
            | Self::Other => false,
        }
    }

    /// The category of a failure to reach a server, read from the I/O errors in `error`'s
    /// chain of sources (the error itself included), the first that says one:
    /// [`Refused`](Self::Refused) for a refused, reset or aborted connection and an
    /// unreachable host or network,
    /// [`Timeout`](Self::Timeout) for a timed-out one, [`Dns`](Self::Dns) for a host name
    /// that did not resolve. `None` when the chain holds no I/O error of those kinds.
    ///
    /// Meant for connecting: a connection reset in the middle of a query is
    /// [`Closed`](Self::Closed), which the caller knows and this does not.
    #[must_use]
    pub fn from_io_chain(error: &(dyn std::error::Error + 'static)) -> Option<Self> {
        chain(error)
            .filter_map(|error| error.downcast_ref::<io::Error>())
            .find_map(Self::from_io)
    }

    fn from_io(error: &io::Error) -> Option<Self> {
        match error.kind() {
            io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable => Some(Self::Refused),
            io::ErrorKind::TimedOut => Some(Self::Timeout),
            // The standard library reports a failed getaddrinfo (EAI_NONAME, EAI_AGAIN...)
            // with a kind of no stable name and this message; tokio and the drivers pass it on.
            _ if error
                .to_string()
                .starts_with("failed to lookup address information") =>
            {
                Some(Self::Dns)
            }
            _ => None,
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

/// `error` and its sources, the error an I/O error wraps included: an I/O error's `source`
/// skips the error it wraps (a TLS library's, say) and goes on with that error's source.
pub(crate) fn chain<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    let mut next = Some(error);
    std::iter::from_fn(move || {
        let error = next?;
        next = match error
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
        {
            Some(wrapped) => Some(wrapped as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
        Some(error)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CheckErrorKind; 10] = [
        CheckErrorKind::Refused,
        CheckErrorKind::Dns,
        CheckErrorKind::Auth,
        CheckErrorKind::Tls,
        CheckErrorKind::Timeout,
        CheckErrorKind::PoolSaturated,
        CheckErrorKind::Closed,
        CheckErrorKind::Query,
        CheckErrorKind::Panicked,
        CheckErrorKind::Other,
    ];

    #[test]
    fn the_wire_names_and_the_one_timeout() {
        let names: Vec<&str> = ALL.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(
            names,
            [
                "refused",
                "dns",
                "auth",
                "tls",
                "timeout",
                "pool_saturated",
                "closed",
                "query",
                "panicked",
                "other"
            ]
        );
        for kind in ALL {
            assert_eq!(kind.to_string(), kind.as_str());
            assert_eq!(kind.is_timeout(), kind == CheckErrorKind::Timeout, "{kind}");
        }
    }

    #[test]
    fn message_is_redacted_on_construction() {
        let error = CheckError::new(
            CheckErrorKind::Refused,
            "cannot reach postgres://app:hunter2@db.internal:5432/app",
        );
        assert!(!error.message().contains("hunter2"), "{error}");
        assert_eq!(error.kind(), CheckErrorKind::Refused);
        assert!(error.to_string().starts_with("refused: "));
    }

    /// `error connecting to server`, caused by another error, as drivers wrap theirs.
    #[derive(Debug)]
    struct Outer(Box<dyn std::error::Error + Send + Sync>);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("error connecting to server")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.0)
        }
    }

    fn io(kind: io::ErrorKind, message: &str) -> Outer {
        Outer(io::Error::new(kind, message.to_owned()).into())
    }

    #[test]
    fn from_error_spells_out_the_chain() {
        let error = CheckError::from_error(
            CheckErrorKind::Refused,
            &io(io::ErrorKind::ConnectionRefused, "connection refused"),
        );
        assert_eq!(
            error.message(),
            "error connecting to server: connection refused"
        );
    }

    #[test]
    fn io_errors_in_the_chain_are_sorted() {
        use io::ErrorKind as Io;
        for (kind, expected) in [
            (Io::ConnectionRefused, Some(CheckErrorKind::Refused)),
            (Io::ConnectionReset, Some(CheckErrorKind::Refused)),
            (Io::ConnectionAborted, Some(CheckErrorKind::Refused)),
            (Io::HostUnreachable, Some(CheckErrorKind::Refused)),
            (Io::NetworkUnreachable, Some(CheckErrorKind::Refused)),
            (Io::TimedOut, Some(CheckErrorKind::Timeout)),
            (Io::PermissionDenied, None),
            (Io::InvalidData, None),
        ] {
            assert_eq!(
                CheckErrorKind::from_io_chain(&io(kind, "x")),
                expected,
                "{kind:?}"
            );
        }
        let refused = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(std::net::TcpStream::connect)
            .expect("a free port")
            .expect_err("nothing listens on a port just freed");
        assert_eq!(
            CheckErrorKind::from_io_chain(&refused),
            Some(CheckErrorKind::Refused),
            "{refused}"
        );
        assert_eq!(CheckErrorKind::from_io_chain(&fmt::Error), None);
    }

    #[test]
    fn a_name_that_does_not_resolve_is_dns() {
        // What the standard library says for EAI_NONAME (constructed: a real lookup depends
        // on the machine's resolver).
        let error = Outer(
            io::Error::other("failed to lookup address information: Name or service not known")
                .into(),
        );
        assert_eq!(
            CheckErrorKind::from_io_chain(&error),
            Some(CheckErrorKind::Dns)
        );
    }

    #[test]
    fn an_io_error_wrapped_in_an_io_error_is_seen() {
        let inner = io::Error::new(io::ErrorKind::TimedOut, "deadline");
        let outer = io::Error::other(inner);
        assert_eq!(
            CheckErrorKind::from_io_chain(&outer),
            Some(CheckErrorKind::Timeout)
        );
        // The outer error, the inner one, and the inner one's message.
        assert_eq!(chain(&outer).count(), 3);
    }
}
