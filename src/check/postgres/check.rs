use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bb8::{ManageConnection, Pool, RunError};
use tokio_postgres::Config;

use super::{
    DEFAULT_CONNECT_TIMEOUT, InvalidPostgresDsn, PostgresCheckManager, PostgresConnection,
};
use crate::check::{CheckError, CheckErrorKind, CheckFuture, DatabaseCheck, PoolStats};
use crate::redact::redact;

/// Checks a PostgreSQL database through a `bb8` pool with one `SELECT 1` (simple query
/// protocol: one round trip, no prepared statement).
///
/// Two ways to build one:
///
/// - [`PostgresCheck::connect`] parses a connection string and builds a small pool of its own
///   (one connection, no test on checkout: the check is itself the test; every connection
///   attempt bounded by 5 s, TCP connect and startup together). This is the recommended setup:
///   the checks never compete with your traffic for connections.
/// - [`PostgresCheck::new`] takes any pool whose connections are `tokio_postgres::Client`s,
///   such as your application's own pool. The check then also tells whether that pool can hand
///   out a connection in time, and the pool endpoint reports its saturation.
///
/// A check abandoned mid-query (it ran past the monitor's check limit) discards the
/// connection it was using when the pool is one of ours; a connection of your own pool goes
/// back to it, so give that pool a `tcp_user_timeout` and a `max_lifetime`.
///
/// When the pool has no idle connection and room for one, the check opens it itself (and adds
/// it to the pool) instead of waiting in `Pool::get`: bb8 would otherwise hide a refused
/// connection behind its own 30 s `connection_timeout`, and a database that refuses must fail
/// fast.
///
/// ```
/// use tower_health::{HealthConfig, check::PostgresCheck};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = HealthConfig::new()
///     .database("default", PostgresCheck::connect("postgres://postgres@127.0.0.1:5432/postgres")?);
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
pub struct PostgresCheck<M: ManageConnection = PostgresCheckManager> {
    pool: Pool<M>,
    /// Connections the check opened itself and added to the pool: bb8 counts those in
    /// `connections` but not in `connections_created`.
    added: Arc<AtomicU64>,
}

impl<M> PostgresCheck<M>
where
    M: ManageConnection,
    M::Connection: PostgresConnection,
    M::Error: std::error::Error + 'static,
{
    /// Checks the database through an existing pool.
    #[must_use]
    pub fn new(pool: Pool<M>) -> Self {
        Self {
            pool,
            added: Arc::default(),
        }
    }

    /// The pool the check goes through.
    #[must_use]
    pub fn pool(&self) -> &Pool<M> {
        &self.pool
    }
}

impl PostgresCheck<PostgresCheckManager> {
    /// Parses a connection string (URL or key-value form) and builds a dedicated one-connection
    /// pool for the checks, without TLS.
    ///
    /// Nothing is connected yet: the first check opens the connection. For TLS, build a pool
    /// with a TLS-capable `PostgresConnectionManager` and use [`PostgresCheck::new`].
    ///
    /// # Errors
    ///
    /// When the connection string does not parse. The error's message never repeats the
    /// password.
    pub fn connect(dsn: &str) -> Result<Self, InvalidPostgresDsn> {
        let config = Config::from_str(dsn)
            .map_err(|error| InvalidPostgresDsn::new(redact(&error.to_string())))?;
        Ok(Self::from_config(config))
    }

    /// Builds a dedicated one-connection pool from a parsed configuration, without TLS.
    ///
    /// Settings the configuration leaves unset get health-check friendly values:
    /// `application_name` `tower-health`, a 5 s `connect_timeout` and a 10 s
    /// `tcp_user_timeout` (a connection whose peer vanished is dropped instead of hanging).
    #[must_use]
    pub fn from_config(mut config: Config) -> Self {
        if config.get_application_name().is_none() {
            config.application_name("tower-health");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(Duration::from_secs(10));
        }
        let manager = PostgresCheckManager::new(config);
        // No reaper (idle_timeout and max_lifetime off) means building spawns nothing, so
        // this works outside a runtime.
        let pool = Pool::builder()
            .max_size(1)
            .test_on_check_out(false)
            .retry_connection(false)
            .connection_timeout(DEFAULT_CONNECT_TIMEOUT)
            .idle_timeout(None)
            .max_lifetime(None)
            .build_unchecked(manager);
        Self::new(pool)
    }
}

impl<M> DatabaseCheck for PostgresCheck<M>
where
    M: ManageConnection,
    M::Connection: PostgresConnection,
    M::Error: std::error::Error + 'static,
{
    fn vendor(&self) -> &'static str {
        "postgresql"
    }

    fn check(&self) -> CheckFuture {
        let pool = self.pool.clone();
        let added = Arc::clone(&self.added);
        Box::pin(async move {
            let state = pool.state();
            if state.idle_connections == 0 && state.connections < pool.config().max_size {
                let conn = pool
                    .dedicated_connection()
                    .await
                    .map_err(|error| CheckError::connect(&error))?;
                // Another checkout may have filled the pool meanwhile; then this connection
                // is simply dropped.
                if pool.add(conn).is_ok() {
                    added.fetch_add(1, Ordering::Relaxed);
                }
            }
            let conn = pool.get_owned().await.map_err(|error| match error {
                RunError::User(error) => CheckError::connect(&error),
                RunError::TimedOut => CheckError::new(
                    CheckErrorKind::PoolTimedOut,
                    "the pool had no connection to give within its connection_timeout",
                ),
            })?;
            // Dropped mid-query, the check was abandoned: the connection is in an unknown state
            // (a frozen network, say) and must not serve the next check.
            let abandoned = MarkBrokenOnDrop(Some(&*conn));
            let answered = conn.client().simple_query("SELECT 1").await;
            abandoned.disarm();
            answered.map_err(|error| {
                let kind = if error.as_db_error().is_some() {
                    CheckErrorKind::Query
                } else {
                    CheckErrorKind::Closed
                };
                CheckError::from_error(kind, &error)
            })?;
            Ok(())
        })
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        let state = self.pool.state();
        let statistics = &state.statistics;
        let mut stats = PoolStats::new(
            self.pool.config().max_size,
            state.connections,
            state.idle_connections,
        );
        stats.pending_gets = statistics.pending_gets();
        stats.gets_timed_out = statistics.get_timed_out;
        stats.connections_created =
            statistics.connections_created + self.added.load(Ordering::Relaxed);
        stats.connections_closed_broken = statistics.connections_closed_broken;
        Some(stats)
    }
}

impl<M: ManageConnection> fmt::Debug for PostgresCheck<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresCheck")
            .field("state", &self.pool.state())
            .finish_non_exhaustive()
    }
}

/// Marks a connection broken if dropped before [`MarkBrokenOnDrop::disarm`].
struct MarkBrokenOnDrop<'a, C: PostgresConnection>(Option<&'a C>);

impl<C: PostgresConnection> MarkBrokenOnDrop<'_, C> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl<C: PostgresConnection> Drop for MarkBrokenOnDrop<'_, C> {
    fn drop(&mut self) {
        if let Some(conn) = self.0 {
            conn.mark_broken();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_dsn_is_refused_without_echoing_the_password() {
        let error = PostgresCheck::connect("postgres://app:hunter2@db:notaport/app").unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("invalid postgresql connection string"),
            "{message}"
        );
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn a_password_with_a_quote_is_never_echoed() {
        let check = PostgresCheck::connect("postgres://app:it's@db/app").unwrap();
        assert!(!format!("{check:?}").contains("it'"));
        for dsn in [
            "postgres://app:it's@db:notaport/app",
            "postgres://app:it's@db/app?sslmode=sometimes",
            "host=db password='it's",
        ] {
            let error = PostgresCheck::connect(dsn).unwrap_err();
            for text in [error.to_string(), format!("{error:?}")] {
                assert!(!text.contains("it'"), "{dsn}: {text}");
            }
        }
    }

    #[test]
    fn debug_output_hides_the_configuration() {
        let check = PostgresCheck::connect("postgres://app:hunter2@db/app").unwrap();
        assert!(!format!("{check:?}").contains("hunter2"));
        let manager = PostgresCheckManager::new(Config::from_str("password=hunter2").unwrap());
        assert!(!format!("{manager:?}").contains("hunter2"));
    }
}
