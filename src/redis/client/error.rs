//! What a Redis error means for a check: its category.

use std::io;
use std::sync::Arc;

use ::redis::{ErrorKind, RedisError};

use crate::check::{CheckError, CheckErrorKind};

/// `error` as a check error of its category.
pub(crate) fn check_error(error: &RedisError) -> CheckError {
    CheckError::from_error(error_kind(error), error)
}

/// Whether Redis answered with the error `code`, to a command or to one of a pipeline's.
pub(crate) fn has_code(error: &RedisError, code: &str) -> bool {
    error.code() == Some(code)
        || error
            .clone()
            .into_server_errors()
            .is_some_and(|errors| errors.iter().any(|(_, error)| error.code() == code))
}

/// What a Redis error says about the check.
pub(crate) fn error_kind(error: &RedisError) -> CheckErrorKind {
    if error.kind() == ErrorKind::AuthenticationFailed
        || matches!(error.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"))
    {
        return CheckErrorKind::Auth;
    }
    // Loading its data set, or a replica without its primary: up, but not serving yet.
    if matches!(error.code(), Some("LOADING" | "MASTERDOWN")) {
        return CheckErrorKind::Refused;
    }
    if let Some(io) = io_error(error) {
        if is_tls(io) {
            return CheckErrorKind::Tls;
        }
        return match CheckErrorKind::from_io_chain(io) {
            Some(kind) => kind,
            // End of file, broken pipe: the connection went away under the command.
            None if error.is_connection_dropped() => CheckErrorKind::Closed,
            None => CheckErrorKind::Other,
        };
    }
    if let Some(kind) = flattened_kind(error) {
        return kind;
    }
    match error.kind() {
        ErrorKind::Server(_) | ErrorKind::Extension => CheckErrorKind::Query,
        // The client's own "connection dropped" errors carry no I/O error.
        ErrorKind::Io => CheckErrorKind::Closed,
        _ => CheckErrorKind::Other,
    }
}

/// The category of an error the cluster client flattened into text: when no node of a
/// Redis Cluster can be reached at first, it reports `Io`, "Failed to create initial
/// connections", with the last node's error as its detail (`Password authentication failed -
/// AuthenticationFailed`, `Connection refused (os error 111)`), the error itself dropped.
fn flattened_kind(error: &RedisError) -> Option<CheckErrorKind> {
    if error.kind() != ErrorKind::Io || io_error(error).is_some() {
        return None;
    }
    let detail = error.detail()?.to_ascii_lowercase();
    [
        ("authenticationfailed", CheckErrorKind::Auth),
        ("wrongpass", CheckErrorKind::Auth),
        ("noauth", CheckErrorKind::Auth),
        ("connection refused", CheckErrorKind::Refused),
        ("failed to lookup address", CheckErrorKind::Dns),
        ("certificate", CheckErrorKind::Tls),
        ("timed out", CheckErrorKind::Timeout),
    ]
    .into_iter()
    .find(|(text, _)| detail.contains(text))
    .map(|(_, kind)| kind)
}

/// The I/O error under `error`, if there is one: `redis` keeps it behind an `Arc`, which
/// hides it from a plain walk of the sources.
fn io_error(error: &RedisError) -> Option<&io::Error> {
    let source = std::error::Error::source(error)?;
    source
        .downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>()
        .and_then(|inner| inner.downcast_ref::<io::Error>())
        .or_else(|| source.downcast_ref::<io::Error>())
}

/// Whether a rustls error is behind `error` (tokio-rustls wraps it in the I/O error).
#[cfg(feature = "rustls")]
fn is_tls(error: &io::Error) -> bool {
    crate::tls::is_handshake_failure(error)
}

#[cfg(not(feature = "rustls"))]
fn is_tls(_error: &io::Error) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_by_category() {
        let io = |kind| RedisError::from(io::Error::from(kind));
        assert_eq!(
            error_kind(&io(io::ErrorKind::ConnectionRefused)),
            CheckErrorKind::Refused
        );
        assert_eq!(
            error_kind(&io(io::ErrorKind::TimedOut)),
            CheckErrorKind::Timeout
        );
        assert_eq!(
            error_kind(&io(io::ErrorKind::UnexpectedEof)),
            CheckErrorKind::Closed
        );
        let server = |code: &str| ::redis::make_extension_error(code.to_owned(), None);
        assert_eq!(error_kind(&server("NOAUTH")), CheckErrorKind::Auth);
        assert_eq!(error_kind(&server("WRONGPASS")), CheckErrorKind::Auth);
        assert_eq!(error_kind(&server("LOADING")), CheckErrorKind::Refused);
        assert_eq!(error_kind(&server("WHATEVER")), CheckErrorKind::Query);
        let flattened = |detail: &str| {
            RedisError::from((
                ErrorKind::Io,
                "Failed to create initial connections",
                detail.to_owned(),
            ))
        };
        assert_eq!(
            error_kind(&flattened(
                "Io: Password authentication failed - AuthenticationFailed"
            )),
            CheckErrorKind::Auth
        );
        assert_eq!(
            error_kind(&flattened("Connection refused (os error 111)")),
            CheckErrorKind::Refused
        );
        assert_eq!(error_kind(&flattened("whatever")), CheckErrorKind::Closed);
    }
}
