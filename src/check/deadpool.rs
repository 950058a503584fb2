//! PostgreSQL through a `deadpool-postgres` pool.

use std::fmt;

use deadpool_postgres::{HookError, Pool, PoolError, TimeoutType};

use super::postgres_classify::{self, Phase};
use super::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};

/// A [`DatabaseCheck`] of PostgreSQL through a `deadpool-postgres` pool: one checkout and
/// one empty simple query (`""`, one round trip) per check; the pool's figures (from
/// `Pool::status`) are reported under `pool_info`, saturation included.
///
/// The check takes its connection from the pool it is given, like any request: give it a
/// small pool of its own (`max_size` 1, a short `wait` timeout) so that a saturated
/// application pool does not make it wait, or the application's pool to see its figures
/// (a saturated pool then makes the check wait like a request: `timed_out` when the round's
/// deadline passes first, `not_ready` with the error kind `pool_saturated` when the `wait`
/// timeout does, every connection being in use). The `bb8`-based
/// [`PostgresCheck::new`](super::PostgresCheck::new) keeps a connection of its own beside the
/// application's pool instead.
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
            let client = pool
                .get()
                .await
                .map_err(|error| pool_error(&pool, &error))?;
            client.simple_query("").await.map_err(|error| {
                CheckError::from_error(
                    postgres_classify::tokio_postgres(&error, Phase::Query),
                    &error,
                )
            })?;
            Ok(super::CheckReport::default())
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

/// What a failed `Pool::get` says about the check.
fn pool_error(pool: &Pool, error: &PoolError) -> CheckError {
    let connect = |error: &tokio_postgres::Error| {
        CheckError::from_error(
            postgres_classify::tokio_postgres(error, Phase::Connect),
            error,
        )
    };
    let kind = match error {
        PoolError::Timeout(TimeoutType::Wait) => {
            // No slot came free. deadpool counts an object in `size` once it is created: a
            // full pool with none available had every connection in use; otherwise a slot
            // was held by a connection still being opened, the database not answering.
            let status = pool.status();
            if status.size >= status.max_size && status.available == 0 {
                CheckErrorKind::PoolSaturated
            } else {
                CheckErrorKind::Timeout
            }
        }
        PoolError::Timeout(TimeoutType::Create | TimeoutType::Recycle) => CheckErrorKind::Timeout,
        PoolError::Backend(error) => return connect(error),
        PoolError::PostCreateHook(HookError::Backend(error)) => return connect(error),
        PoolError::PostCreateHook(HookError::Message(_))
        | PoolError::Closed
        | PoolError::NoRuntimeSpecified => CheckErrorKind::Other,
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

#[cfg(test)]
mod tests {
    use deadpool_postgres::{Manager, tokio_postgres};

    use super::*;

    fn pool() -> Pool {
        let config: tokio_postgres::Config = "host=127.0.0.1 user=postgres".parse().unwrap();
        let manager = Manager::new(config, tokio_postgres::NoTls);
        Pool::builder(manager).max_size(1).build().unwrap()
    }

    #[tokio::test]
    async fn pool_errors_by_category() {
        use CheckErrorKind as Kind;
        let pool = pool();
        // No connection exists: the one slot was held by a connection being opened.
        let kind = |error: PoolError| pool_error(&pool, &error).kind();
        assert_eq!(kind(PoolError::Timeout(TimeoutType::Wait)), Kind::Timeout);
        assert_eq!(kind(PoolError::Timeout(TimeoutType::Create)), Kind::Timeout);
        assert_eq!(kind(PoolError::Closed), Kind::Other);
        assert_eq!(kind(PoolError::NoRuntimeSpecified), Kind::Other);

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let dsn = format!("host=127.0.0.1 port={port} user=postgres");
        let Err(refused) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls).await else {
            panic!("nothing listens there");
        };
        let error = pool_error(&pool, &PoolError::Backend(refused));
        assert_eq!(error.kind(), Kind::Refused, "{error}");
        assert!(error.message().contains("refused"), "{error}");
    }
}
