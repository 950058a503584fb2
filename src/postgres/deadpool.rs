//! PostgreSQL beside a `deadpool-postgres` pool.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use deadpool::managed::Manager as _;
use deadpool_postgres::{ClientWrapper, Pool};

use super::classify::{self, Phase};
use super::reserved::{PingFailure, Reserved, ReservedBackend};
use crate::check::{CheckError, CheckFuture, DatabaseCheck, PoolStats};
use crate::redact::redact;

/// A [`DatabaseCheck`] of PostgreSQL beside a `deadpool-postgres` pool: one empty simple query
/// (`""`, one round trip) per check, on a connection of the check's own; the pool's figures
/// (from `Pool::status`, waiting checkouts included) are reported under `pool_info`,
/// saturation included.
///
/// The check never queues behind your traffic for one of the pool's connections: it keeps one
/// connection beside the pool (not in it, and not counted in its `max_size`), opened by the
/// pool's own manager (same configuration and TLS) and reused every round. A connection the
/// server closed while it waited is replaced within the same check; a check dropped mid-query
/// (past the monitor's [check limit](crate::HealthConfig::check_limit)) closes its
/// connection. A refused database fails in the first round with its cause.
///
/// The pool must come from this crate's `deadpool-postgres` (0.14).
///
/// ```no_run
/// use tower_health::HealthConfig;
/// use tower_health::postgres::DeadpoolCheck;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use deadpool_postgres::tokio_postgres;
///
/// // The application's own pool.
/// let pg: tokio_postgres::Config = "postgres://postgres@127.0.0.1/postgres".parse()?;
/// let manager = deadpool_postgres::Manager::new(pg, tokio_postgres::NoTls);
/// let pool = deadpool_postgres::Pool::builder(manager).max_size(16).build()?;
/// let config = HealthConfig::new().database("default", DeadpoolCheck::new(pool.clone()));
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct DeadpoolCheck {
    pool: Pool,
    reserved: Reserved<AppPool, ReservedClient>,
    /// `host:port/dbname` or a redacted URL, when named.
    target: Option<Arc<str>>,
}

impl DeadpoolCheck {
    /// Checks the database beside `pool`, your application's pool. Nothing is connected
    /// until the first check.
    #[must_use]
    pub fn new(pool: Pool) -> Self {
        Self {
            reserved: Reserved::new(AppPool(pool.clone())),
            pool,
            target: None,
        }
    }

    /// Names what the check connects to, shown as `target` in the health body: the pool
    /// cannot tell (deadpool keeps its manager's configuration to itself), so name it here,
    /// such as `db.internal:5432/app`. It is passed through [`redact`], so a connection
    /// string's password never shows.
    ///
    /// Defaults to none.
    #[must_use]
    pub fn with_target(mut self, target: &str) -> Self {
        self.target = Some(redact(target).into());
        self
    }

    /// The pool the check reports on, beside which it keeps its connection.
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
        self.reserved.check()
    }

    fn target(&self) -> Option<String> {
        self.target.as_deref().map(str::to_owned)
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
        stats.reserved_connections_opened = self.reserved.opened();
        Some(stats)
    }
}

/// The application's pool: only its manager is used, to open the reserved connection.
#[derive(Clone)]
struct AppPool(Pool);

/// The reserved connection: a client of the pool's manager, handed back to the manager when
/// dropped (so that its statement cache is detached) and closed.
struct ReservedClient {
    client: Option<ClientWrapper>,
    pool: Pool,
}

impl Deref for ReservedClient {
    type Target = ClientWrapper;

    fn deref(&self) -> &ClientWrapper {
        self.client.as_ref().expect("present until dropped")
    }
}

impl DerefMut for ReservedClient {
    fn deref_mut(&mut self) -> &mut ClientWrapper {
        self.client.as_mut().expect("present until dropped")
    }
}

impl Drop for ReservedClient {
    fn drop(&mut self) {
        if let Some(mut client) = self.client.take() {
            self.pool.manager().detach(&mut client);
        }
    }
}

impl ReservedBackend for AppPool {
    type Connection = ReservedClient;

    async fn open(&self) -> Result<ReservedClient, CheckError> {
        let client = self.0.manager().create().await.map_err(|error| {
            CheckError::from_error(classify::tokio_postgres(&error, Phase::Connect), &error)
        })?;
        Ok(ReservedClient {
            client: Some(client),
            pool: self.0.clone(),
        })
    }

    fn is_closed(&self, connection: &ReservedClient) -> bool {
        connection.is_closed()
    }

    async fn ping<'a>(&'a self, connection: &'a mut ReservedClient) -> Result<(), PingFailure> {
        match connection.simple_query("").await {
            Ok(_) => Ok(()),
            Err(error) => Err(PingFailure {
                gone: classify::is_connection_gone(&error),
                error: CheckError::from_error(
                    classify::tokio_postgres(&error, Phase::Query),
                    &error,
                ),
            }),
        }
    }
}

impl fmt::Debug for DeadpoolCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The pool's manager holds the configuration, password included: only figures here.
        let Self {
            pool,
            reserved,
            target,
        } = self;
        f.debug_struct("DeadpoolCheck")
            .field("status", &pool.status())
            .field("reserved_connections_opened", &reserved.opened())
            .field("target", target)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use deadpool_postgres::{Manager, tokio_postgres};

    use super::*;
    use crate::check::CheckErrorKind;

    fn pool(dsn: &str) -> Pool {
        let config: tokio_postgres::Config = dsn.parse().unwrap();
        let manager = Manager::new(config, tokio_postgres::NoTls);
        Pool::builder(manager).max_size(1).build().unwrap()
    }

    #[tokio::test]
    async fn a_refused_connection_is_refused_with_its_cause() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let dsn = format!("postgres://postgres:hunter2@127.0.0.1:{port}/postgres");
        let check = DeadpoolCheck::new(pool(&dsn)).with_target(&dsn);
        let error = check.check().await.unwrap_err();
        assert_eq!(error.kind(), CheckErrorKind::Refused, "{error}");
        assert!(error.message().contains("refused"), "{error}");
        assert!(!format!("{check:?}").contains("hunter2"), "{check:?}");
        let target = check.target().unwrap();
        assert!(
            target.contains("127.0.0.1") && !target.contains("hunter2"),
            "{target}"
        );
        assert_eq!(check.pool_stats().unwrap().reserved_connections_opened, 0);
    }
}
