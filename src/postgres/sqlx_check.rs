//! `SqlxCheck`, written once and compiled once per sqlx line: `sqlx_0_8.rs` and `sqlx_0_9.rs`
//! each declare this file as their `check` module beside `pub use ... as sqlx`, so `sqlx`
//! below is that module's line.

use std::fmt;

use super::sqlx;
use sqlx::postgres::{PgConnection, PgDatabaseError, PgSeverity};
use sqlx::{Connection, PgPool};

use crate::check::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};
use crate::postgres::classify::{self, Phase};
use crate::postgres::reserved::{PingFailure, Reserved, ReservedBackend};

/// A [`DatabaseCheck`] of PostgreSQL beside an sqlx `PgPool`: one ping (a `Sync`
/// message, one round trip) per check, on a connection of the check's own; the pool's figures
/// (`size`, `num_idle`, its `max_connections`) are reported under `pool_info`, saturation
/// included.
///
/// The check never queues behind your traffic for one of the pool's connections: it keeps one
/// connection beside the pool (not in it, and not counted in its `max_connections`), opened
/// with the pool's connect options (host, credentials, TLS) and reused every round. A
/// connection the server closed while it waited is replaced within the same check; a check
/// dropped mid-ping (past the monitor's [check limit](crate::HealthConfig::check_limit))
/// closes its connection. A refused database fails in the first round with its cause: the
/// check connects itself, so sqlx's retries until its `acquire_timeout` never hide it.
///
/// sqlx does not count the checkouts waiting for a connection: a pool with every connection
/// in use, at its `max_connections`, is reported saturated (`degraded`, not a stalled
/// database), its `pending_gets` 0 with
/// [`pending_gets_unknown`](PoolStats::pending_gets_unknown) set.
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct SqlxCheck {
    pool: PgPool,
    reserved: Reserved<AppPool, PgConnection>,
}

impl SqlxCheck {
    /// Checks the database beside `pool`, your application's pool. Nothing is connected
    /// until the first check.
    #[must_use]
    pub fn new(pool: PgPool) -> Self {
        Self {
            reserved: Reserved::new(AppPool(pool.clone())),
            pool,
        }
    }

    /// The pool the check reports on, beside which it keeps its connection.
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

impl DatabaseCheck for SqlxCheck {
    fn vendor(&self) -> &'static str {
        "postgresql"
    }

    fn check(&self) -> CheckFuture {
        self.reserved.check()
    }

    fn target(&self) -> Option<String> {
        // Host, port and database from the pool's options: never the password.
        let options = self.pool.connect_options();
        let database = options.get_database().unwrap_or_default();
        Some(format!(
            "{}:{}/{database}",
            options.get_host(),
            options.get_port()
        ))
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        let idle = u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX);
        let mut stats = PoolStats::new(
            self.pool.options().get_max_connections(),
            self.pool.size(),
            idle,
        );
        stats.pending_gets_unknown = true;
        stats.reserved_connections_opened = self.reserved.opened();
        Some(stats)
    }
}

/// The application's pool: only its connect options are used, to open the reserved
/// connection.
#[derive(Clone)]
struct AppPool(PgPool);

impl ReservedBackend for AppPool {
    type Connection = PgConnection;

    async fn open(&self) -> Result<PgConnection, CheckError> {
        let options = self.0.connect_options();
        PgConnection::connect_with(&options)
            .await
            .map_err(|error| sqlx_error(&error, Phase::Connect))
    }

    fn is_closed(&self, _connection: &PgConnection) -> bool {
        // sqlx cannot tell without a round trip: the ping finds out.
        false
    }

    async fn ping<'a>(&'a self, connection: &'a mut PgConnection) -> Result<(), PingFailure> {
        connection.ping().await.map_err(|error| PingFailure {
            gone: is_connection_gone(&error),
            error: sqlx_error(&error, Phase::Query),
        })
    }
}

/// Whether a failed ping means the connection is gone, so that a new connection could answer
/// where this one failed.
fn is_connection_gone(error: &sqlx::Error) -> bool {
    match error {
        // The server ends a session with a FATAL error (terminated, idle_session_timeout,
        // shutting down).
        sqlx::Error::Database(database) => is_fatal(database.as_ref()),
        // A timeout is a network gone dark, which a second connection would wait on as long.
        sqlx::Error::Io(io) => io.kind() != std::io::ErrorKind::TimedOut,
        // An answer out of place: the connection's state is lost.
        sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        _ => false,
    }
}

fn is_fatal(error: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    error
        .try_downcast_ref::<PgDatabaseError>()
        .is_some_and(|error| matches!(error.severity(), PgSeverity::Fatal | PgSeverity::Panic))
}

/// What an sqlx error says about the check.
fn sqlx_error(error: &sqlx::Error, phase: Phase) -> CheckError {
    let kind = match error {
        sqlx::Error::PoolTimedOut => CheckErrorKind::Timeout,
        sqlx::Error::PoolClosed => CheckErrorKind::Other,
        sqlx::Error::Database(database) => match database.code() {
            Some(code) => classify::sqlstate(&code, is_fatal(database.as_ref()), phase),
            None if phase == Phase::Connect => CheckErrorKind::Refused,
            None => CheckErrorKind::Query,
        },
        sqlx::Error::Tls(_) => CheckErrorKind::Tls,
        sqlx::Error::Io(_) => match (phase, CheckErrorKind::from_io_chain(error)) {
            (Phase::Connect, Some(kind)) => kind,
            (Phase::Connect, None) => CheckErrorKind::Other,
            (Phase::Query, Some(CheckErrorKind::Timeout)) => CheckErrorKind::Timeout,
            // Reset, broken pipe, end of file: the connection is gone.
            (Phase::Query, _) => CheckErrorKind::Closed,
        },
        sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed if phase == Phase::Query => {
            CheckErrorKind::Closed
        }
        _ => CheckErrorKind::Other,
    };
    CheckError::from_error(kind, error)
}

impl fmt::Debug for SqlxCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The pool's Debug shows its connect options, password included: only figures here.
        let Self { pool, reserved } = self;
        f.debug_struct("SqlxCheck")
            .field("size", &pool.size())
            .field("idle", &pool.num_idle())
            .field("reserved_connections_opened", &reserved.opened())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    fn kind(error: &sqlx::Error, phase: Phase) -> CheckErrorKind {
        sqlx_error(error, phase).kind()
    }

    #[test]
    fn sqlx_errors_by_category() {
        use CheckErrorKind as Kind;
        assert_eq!(
            kind(&sqlx::Error::PoolTimedOut, Phase::Connect),
            Kind::Timeout
        );
        assert_eq!(kind(&sqlx::Error::PoolClosed, Phase::Connect), Kind::Other);
        let io = |kind| sqlx::Error::Io(io::Error::from(kind));
        assert_eq!(
            kind(&io(io::ErrorKind::ConnectionRefused), Phase::Connect),
            Kind::Refused
        );
        assert_eq!(
            kind(&io(io::ErrorKind::TimedOut), Phase::Connect),
            Kind::Timeout
        );
        assert_eq!(
            kind(&io(io::ErrorKind::ConnectionReset), Phase::Query),
            Kind::Closed
        );
        assert_eq!(
            kind(&io(io::ErrorKind::TimedOut), Phase::Query),
            Kind::Timeout
        );
        assert_eq!(
            kind(&sqlx::Error::Tls("handshake".into()), Phase::Connect),
            Kind::Tls
        );
        let dns = sqlx::Error::Io(io::Error::other(
            "failed to lookup address information: Name or service not known",
        ));
        assert_eq!(kind(&dns, Phase::Connect), Kind::Dns);
    }

    #[test]
    fn a_broken_socket_is_gone_and_a_dark_network_is_not() {
        let io = |kind| sqlx::Error::Io(io::Error::from(kind));
        assert!(is_connection_gone(&io(io::ErrorKind::UnexpectedEof)));
        assert!(is_connection_gone(&io(io::ErrorKind::BrokenPipe)));
        assert!(!is_connection_gone(&io(io::ErrorKind::TimedOut)));
        assert!(!is_connection_gone(&sqlx::Error::PoolTimedOut));
    }

    #[tokio::test]
    async fn debug_and_target_never_show_the_password() {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://app:hunter2@db.internal:6432/orders")
            .unwrap();
        let check = SqlxCheck::new(pool);
        assert!(!format!("{check:?}").contains("hunter2"), "{check:?}");
        assert_eq!(
            DatabaseCheck::target(&check).as_deref(),
            Some("db.internal:6432/orders")
        );
    }
}
