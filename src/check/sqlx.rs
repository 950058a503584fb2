//! PostgreSQL through an `sqlx` `PgPool`.

use std::fmt;

use sqlx::postgres::PgConnection;
use sqlx::{Connection, PgPool};

use super::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};

/// A [`DatabaseCheck`] of PostgreSQL through an `sqlx` [`PgPool`]: one checkout and one ping
/// (an empty query, one round trip) per check; the pool's figures (`size`, `num_idle`, its
/// `max_connections`) are reported under `pool_info`, saturation included.
///
/// The check takes its connection from the pool it is given, like any request: give it a
/// small pool of its own (`max_connections(1)`, a short `acquire_timeout`) so that a
/// saturated application pool does not make it wait, or the application's pool to see its
/// figures (a saturated pool then makes the check wait like a request, and it may be
/// reported `timed_out`). The `bb8`-based [`PostgresCheck::new`](super::PostgresCheck::new)
/// keeps a connection of its own beside the application's pool instead.
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
            if pool.num_idle() == 0 && pool.size() < max {
                // sqlx retries a refused connection until its acquire_timeout and then says
                // only "timed out": opening one directly makes a refused database fail fast,
                // with its reason. The pool then opens its own for the next checks.
                let mut direct = PgConnection::connect_with(&pool.connect_options())
                    .await
                    .map_err(|error| sqlx_error(&error))?;
                direct.ping().await.map_err(|error| sqlx_error(&error))?;
                let _ = direct.close().await;
            }
            let mut connection = pool.acquire().await.map_err(|error| sqlx_error(&error))?;
            connection
                .ping()
                .await
                .map_err(|error| sqlx_error(&error))?;
            Ok(())
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

fn sqlx_error(error: &sqlx::Error) -> CheckError {
    match error {
        sqlx::Error::PoolTimedOut => CheckError::new(
            CheckErrorKind::PoolTimedOut,
            "the pool had no connection to give within its acquire_timeout",
        ),
        sqlx::Error::Tls(_) => CheckError::from_error(CheckErrorKind::Tls, error),
        sqlx::Error::Database(_) => CheckError::from_error(CheckErrorKind::Query, error),
        sqlx::Error::PoolClosed => CheckError::new(CheckErrorKind::Other, "the pool is closed"),
        _ => CheckError::connect(error),
    }
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
