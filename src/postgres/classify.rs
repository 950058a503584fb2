//! What PostgreSQL's errors mean to an on-call engineer: a SQLSTATE, or a tokio-postgres
//! error, sorted into a [`CheckErrorKind`].
//!
//! Shared by every PostgreSQL backend, each of which builds without the others' features:
//! the bb8 `PostgresCheck` (feature `postgres`), `DeadpoolCheck` (`deadpool`: tokio-postgres
//! without bb8) and `SqlxCheck` (`sqlx-0-8`, `sqlx-0-9`: SQLSTATEs only).

use crate::check::CheckErrorKind;

/// Where a PostgreSQL error came from: it decides what an error the table does not know means.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Opening the connection (TCP, TLS, startup, authentication): an error the server
    /// answers here is the server refusing the session.
    Connect,
    /// The check's query, on an open connection.
    Query,
}

/// What a SQLSTATE says about a failed check. `fatal`: the server ended the session with it
/// (severity `FATAL` or `PANIC`).
pub(crate) fn sqlstate(code: &str, fatal: bool, phase: Phase) -> CheckErrorKind {
    match code {
        // invalid_authorization_specification (28000: no such role, pg_hba.conf rejects),
        // invalid_password (28P01).
        _ if code.starts_with("28") => CheckErrorKind::Auth,
        // insufficient_privilege at startup: the role lacks CONNECT on the database.
        "42501" if phase == Phase::Connect => CheckErrorKind::Auth,
        // invalid_catalog_name (no such database), too_many_connections, cannot_connect_now
        // (starting up, shutting down, in recovery), and the two refusals of class 08.
        "3D000" | "53300" | "57P03" | "08001" | "08004" => CheckErrorKind::Refused,
        // query_canceled: statement_timeout (or a cancel request) ended the query.
        "57014" => CheckErrorKind::Timeout,
        // admin_shutdown (pg_terminate_backend, a fast shutdown), crash_shutdown,
        // idle_session_timeout, idle_in_transaction_session_timeout, and connection_exception.
        "57P01" | "57P02" | "57P05" | "25P03" => CheckErrorKind::Closed,
        _ if code.starts_with("08") => CheckErrorKind::Closed,
        _ => match phase {
            Phase::Connect => CheckErrorKind::Refused,
            Phase::Query if fatal => CheckErrorKind::Closed,
            Phase::Query => CheckErrorKind::Query,
        },
    }
}

/// What a tokio-postgres error says about a failed check.
#[cfg(any(feature = "postgres", feature = "deadpool"))]
pub(crate) fn tokio_postgres(error: &tokio_postgres::Error, phase: Phase) -> CheckErrorKind {
    use std::io;
    use tokio_postgres::error::Severity;

    if let Some(db) = error.as_db_error() {
        let fatal = match db.parsed_severity() {
            Some(severity) => matches!(severity, Severity::Fatal | Severity::Panic),
            None => matches!(db.severity(), "FATAL" | "PANIC"),
        };
        return sqlstate(db.code().code(), fatal, phase);
    }
    if error.is_closed() {
        // Hung up on during startup (a proxy at its limit, say): a refusal.
        return match phase {
            Phase::Connect => CheckErrorKind::Refused,
            Phase::Query => CheckErrorKind::Closed,
        };
    }
    // tokio-postgres keeps its error kinds private; its Display names them, the cause apart.
    match error.to_string().as_str() {
        // Also "server does not support TLS" (its cause) under `sslmode=require`.
        "error performing TLS handshake" => return CheckErrorKind::Tls,
        // A password the server asks for and the configuration lacks, a failed SASL exchange.
        "authentication error" => return CheckErrorKind::Auth,
        "timeout waiting for server" => return CheckErrorKind::Timeout,
        _ => {}
    }
    let io =
        crate::verdict::error::chain(error).find_map(|error| error.downcast_ref::<io::Error>());
    match phase {
        Phase::Connect => {
            if let Some(kind) = CheckErrorKind::from_io_chain(error) {
                return kind;
            }
            match io.map(io::Error::kind) {
                // Every address of the host was tried ("could not resolve any addresses"):
                // the name resolved to nothing.
                Some(io::ErrorKind::InvalidInput) => CheckErrorKind::Dns,
                // The server hung up during startup, or is not what `target_session_attrs`
                // asks for ("database does not allow writes").
                Some(io::ErrorKind::UnexpectedEof | io::ErrorKind::PermissionDenied) => {
                    CheckErrorKind::Refused
                }
                _ => CheckErrorKind::Other,
            }
        }
        Phase::Query => match io.map(io::Error::kind) {
            // A network gone dark (`tcp_user_timeout`).
            Some(io::ErrorKind::TimedOut) => CheckErrorKind::Timeout,
            // Reset, broken pipe, end of file: the connection is gone.
            Some(_) => CheckErrorKind::Closed,
            None => CheckErrorKind::Other,
        },
    }
}

/// Whether a failed query means the connection is gone, so that a new connection could
/// answer where this one failed.
#[cfg(any(feature = "postgres", feature = "deadpool"))]
pub(crate) fn is_connection_gone(error: &tokio_postgres::Error) -> bool {
    if let Some(db) = error.as_db_error() {
        // The server ends a session with a FATAL error (terminated, idle_session_timeout,
        // shutting down); an ERROR answers a query on a connection that stays usable.
        return match db.parsed_severity() {
            Some(severity) => matches!(
                severity,
                tokio_postgres::error::Severity::Fatal | tokio_postgres::error::Severity::Panic
            ),
            None => matches!(db.severity(), "FATAL" | "PANIC"),
        };
    }
    if error.is_closed() {
        return true;
    }
    // A broken socket (reset, broken pipe) is gone; a timeout is a network gone dark, which a
    // second connection would wait on just as long.
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io.kind() != std::io::ErrorKind::TimedOut;
        }
        source = cause.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_by_category() {
        use CheckErrorKind as Kind;
        for (code, phase, expected) in [
            ("28000", Phase::Connect, Kind::Auth),
            ("28P01", Phase::Connect, Kind::Auth),
            ("42501", Phase::Connect, Kind::Auth),
            ("42501", Phase::Query, Kind::Query),
            ("3D000", Phase::Connect, Kind::Refused),
            ("53300", Phase::Connect, Kind::Refused),
            ("57P03", Phase::Connect, Kind::Refused),
            ("08004", Phase::Connect, Kind::Refused),
            ("57014", Phase::Query, Kind::Timeout),
            ("57P01", Phase::Query, Kind::Closed),
            ("57P05", Phase::Query, Kind::Closed),
            ("08006", Phase::Query, Kind::Closed),
            ("42601", Phase::Query, Kind::Query),
            ("53100", Phase::Query, Kind::Query),
            // An error the table does not know, answered to the startup message.
            ("XX000", Phase::Connect, Kind::Refused),
        ] {
            assert_eq!(sqlstate(code, false, phase), expected, "{code} {phase:?}");
        }
        assert_eq!(sqlstate("XX000", true, Phase::Query), Kind::Closed);
    }
}
