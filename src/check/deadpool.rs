//! PostgreSQL through a `deadpool-postgres` pool.

use std::fmt;

use deadpool_postgres::{Pool, PoolError};

use super::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};

/// A [`DatabaseCheck`] of PostgreSQL through a `deadpool-postgres` pool: one checkout and
/// one empty simple query (`""`, one round trip) per check; the pool's figures (from
/// `Pool::status`) are reported under `pool_info`, saturation included.
///
/// The check takes its connection from the pool it is given, like any request: give it a
/// small pool of its own (`max_size` 1, a short `wait` timeout) so that a saturated
/// application pool does not make it wait, or the application's pool to see its figures
/// (a saturated pool then makes the check wait like a request, and it may be reported
/// `timed_out`). The `bb8`-based [`PostgresCheck::new`](super::PostgresCheck::new) keeps a
/// connection of its own beside the application's pool instead.
///
/// ```no_run
/// use tower_health::HealthConfig;
/// use tower_health::check::DeadpoolCheck;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use deadpool_postgres::tokio_postgres;
///
/// let pg: tokio_postgres::Config = "postgres://postgres@127.0.0.1/postgres".parse()?;
/// let manager = deadpool_postgres::Manager::new(pg, tokio_postgres::NoTls);
/// let pool = deadpool_postgres::Pool::builder(manager).max_size(1).build()?;
/// let config = HealthConfig::new().database("default", DeadpoolCheck::new(pool))?;
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct DeadpoolCheck {
    pool: Pool,
}

impl DeadpoolCheck {
    /// Checks the database through `pool`.
    #[must_use]
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// The pool the check goes through.
    #[must_use]
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

impl DatabaseCheck for DeadpoolCheck {
    fn vendor(&self) -> &'static str {
        "postgresql"
    }

    fn check(&self) -> CheckFuture {
        let pool = self.pool.clone();
        Box::pin(async move {
            let client = pool.get().await.map_err(|error| pool_error(&error))?;
            client
                .simple_query("")
                .await
                .map_err(|error| CheckError::new(CheckErrorKind::Query, error.to_string()))?;
            Ok(())
        })
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        let status = self.pool.status();
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut stats = PoolStats::new(
            count(status.max_size),
            count(status.size),
            count(status.available),
        );
        stats.pending_gets = u64::try_from(status.waiting).unwrap_or(u64::MAX);
        Some(stats)
    }
}

fn pool_error(error: &PoolError) -> CheckError {
    let kind = match error {
        PoolError::Timeout(_) => CheckErrorKind::PoolTimedOut,
        PoolError::Backend(_) => CheckErrorKind::Connect,
        PoolError::Closed | PoolError::NoRuntimeSpecified | PoolError::PostCreateHook(_) => {
            CheckErrorKind::Other
        }
    };
    CheckError::new(kind, error.to_string())
}

impl fmt::Debug for DeadpoolCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadpoolCheck")
            .field("status", &self.pool.status())
            .finish_non_exhaustive()
    }
}
