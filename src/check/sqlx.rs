//! PostgreSQL through an `sqlx` `PgPool`.

use std::fmt;

use sqlx::postgres::{PgConnection, PgDatabaseError, PgSeverity};
use sqlx::{Connection, PgPool};

use super::postgres_classify::{self, Phase};
use super::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};

/// A [`DatabaseCheck`] of PostgreSQL through an `sqlx` [`PgPool`]: one checkout and one ping
/// (an empty query, one round trip) per check; the pool's figures (`size`, `num_idle`, its
/// `max_connections`) are reported under `pool_info`, saturation included.
///
/// The check takes its connection from the pool it is given, like any request: give it a
/// small pool of its own (`max_connections(1)`, a short `acquire_timeout`) so that a
/// saturated application pool does not make it wait, or the application's pool to see its
/// figures (a saturated pool then makes the check wait like a request: `timed_out` when the
/// round's deadline passes first, `not_ready` with the error kind `pool_saturated` when the
/// `acquire_timeout` does, every connection being in use). The `bb8`-based
/// [`PostgresCheck::new`](super::PostgresCheck::new) keeps a connection of its own beside the
/// application's pool instead.
///
/// ```no_run
/// use std::time::Duration;
/// use tower_health::HealthConfig;
/// use tower_health::check::SqlxCheck;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = sqlx::postgres::PgPoolOptions::new()
///     .max_connections(1)
///     .acquire_timeout(Duration::from_secs(2))
///     .connect_lazy("postgres://postgres@127.0.0.1/postgres")?;
/// let config = HealthConfig::new().database("default", SqlxCheck::new(pool))?;
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SqlxCheck {
    pool: PgPool,
}

impl SqlxCheck {
    /// Checks the database through `pool`.
    #[must_use]
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The pool the check goes through.
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
        let pool = self.pool.clone();
        Box::pin(async move {
            let max = pool.options().get_max_connections();
            let idle = pool.num_idle();
            // Every connection taken when the check asks: a pool timeout then is saturation.
            let full = idle == 0 && pool.size() >= max;
            if idle == 0 && !full {
                // sqlx retries a refused connection until its acquire_timeout and then says
                // only "timed out": opening one directly makes a refused database fail fast,
                // with its reason. The pool then opens its own for the next checks.
                let mut direct = PgConnection::connect_with(&pool.connect_options())
                    .await
                    .map_err(|error| sqlx_error(&error, Phase::Connect, full))?;
                direct
                    .ping()
                    .await
                    .map_err(|error| sqlx_error(&error, Phase::Query, full))?;
                let _ = direct.close().await;
            }
            let mut connection = pool
                .acquire()
                .await
                .map_err(|error| sqlx_error(&error, Phase::Connect, full))?;
            connection
                .ping()
                .await
                .map_err(|error| sqlx_error(&error, Phase::Query, full))?;
            Ok(super::CheckReport::default())
        })
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
        Some(PoolStats::new(
            self.pool.options().get_max_connections(),
            self.pool.size(),
            idle,
        ))
    }
}

/// What an sqlx error says about the check. `full`: every connection of the pool was taken
/// when the check asked for one.
fn sqlx_error(error: &sqlx::Error, phase: Phase, full: bool) -> CheckError {
    let kind = match error {
        // sqlx counts a connection it is still opening in `size`: a pool that was not full
        // timed out opening one, the database not answering.
        sqlx::Error::PoolTimedOut if full => {
            return CheckError::new(
                CheckErrorKind::PoolSaturated,
                "the pool had no connection to give within its acquire_timeout: all in use",
            );
        }
        sqlx::Error::PoolTimedOut => {
            return CheckError::new(
                CheckErrorKind::Timeout,
                "the pool had no connection to give within its acquire_timeout",
            );
        }
        sqlx::Error::PoolClosed => {
            return CheckError::new(CheckErrorKind::Other, "the pool is closed");
        }
        sqlx::Error::Database(database) => {
            let fatal = database
                .try_downcast_ref::<PgDatabaseError>()
                .is_some_and(|error| {
                    matches!(error.severity(), PgSeverity::Fatal | PgSeverity::Panic)
                });
            match database.code() {
                Some(code) => postgres_classify::sqlstate(&code, fatal, phase),
                None if phase == Phase::Connect => CheckErrorKind::Refused,
                None => CheckErrorKind::Query,
            }
        }
        sqlx::Error::Tls(_) => CheckErrorKind::Tls,
        sqlx::Error::Io(_) => match (phase, CheckErrorKind::from_io_chain(error)) {
            (Phase::Connect, Some(kind)) => kind,
            (Phase::Connect, None) => CheckErrorKind::Other,
            (Phase::Query, Some(CheckErrorKind::Timeout)) => CheckErrorKind::Timeout,
            // Reset, broken pipe, end of file: the connection is gone.
            (Phase::Query, _) => CheckErrorKind::Closed,
        },
        _ => CheckErrorKind::Other,
    };
    CheckError::from_error(kind, error)
}

impl fmt::Debug for SqlxCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The pool's Debug shows its connect options, password included.
        f.debug_struct("SqlxCheck")
            .field("size", &self.pool.size())
            .field("idle", &self.pool.num_idle())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    fn kind(error: &sqlx::Error, phase: Phase, full: bool) -> CheckErrorKind {
        sqlx_error(error, phase, full).kind()
    }

    #[test]
    fn sqlx_errors_by_category() {
        use CheckErrorKind as Kind;
        assert_eq!(
            kind(&sqlx::Error::PoolTimedOut, Phase::Connect, true),
            Kind::PoolSaturated
        );
        assert_eq!(
            kind(&sqlx::Error::PoolTimedOut, Phase::Connect, false),
            Kind::Timeout
        );
        assert_eq!(
            kind(&sqlx::Error::PoolClosed, Phase::Connect, false),
            Kind::Other
        );
        let io = |kind| sqlx::Error::Io(io::Error::from(kind));
        assert_eq!(
            kind(&io(io::ErrorKind::ConnectionRefused), Phase::Connect, false),
            Kind::Refused
        );
        assert_eq!(
            kind(&io(io::ErrorKind::TimedOut), Phase::Connect, false),
            Kind::Timeout
        );
        assert_eq!(
            kind(&io(io::ErrorKind::ConnectionReset), Phase::Query, false),
            Kind::Closed
        );
        assert_eq!(
            kind(&io(io::ErrorKind::TimedOut), Phase::Query, false),
            Kind::Timeout
        );
        assert_eq!(
            kind(&sqlx::Error::Tls("handshake".into()), Phase::Connect, false),
            Kind::Tls
        );
        let dns = sqlx::Error::Io(io::Error::other(
            "failed to lookup address information: Name or service not known",
        ));
        assert_eq!(kind(&dns, Phase::Connect, false), Kind::Dns);
    }
}
