use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bb8::{ManageConnection, Pool};
use tokio_postgres::Config;

use super::bb8_reserved::{AppPool, Reserved};
use super::connector::connector;
use super::own_pool::OwnPool;
use super::recycle;
use super::tls::split_tls_params;
use super::{DEFAULT_CONNECT_TIMEOUT, PostgresCheckManager, PostgresConnection};
use crate::check::{CheckFuture, CheckReport, DatabaseCheck, PoolStats};
use crate::env::ConfigError;
use crate::redact::redact;

/// Checks a PostgreSQL database through a `bb8` pool with one `SELECT 1` (simple query
/// protocol: one round trip, no prepared statement).
///
/// Three ways to build one:
///
/// - [`PostgresCheck::connect`] parses a connection string and builds a small pool of its own
///   (one connection, no test on checkout: the check is itself the test; every connection
///   attempt bounded by 5 s, TCP connect and startup together). This is the recommended setup:
///   the checks never compete with your traffic for connections.
/// - [`PostgresCheck::new`] takes your application's own pool, whose connections are
///   `tokio_postgres::Client`s. The check never queues behind your traffic for one of its
///   connections: it keeps one connection of its own beside the pool (not in it, and not
///   counted in its `max_size`), opened by the pool's connection manager and reused every
///   round. The pool endpoint reports the pool's figures, and a saturated pool (every
///   connection busy, checkouts waiting) as `degraded`, not as a stalled database.
/// - [`PostgresCheck::with_dedicated_pool`] takes a pool that is the check's own (a TLS pool,
///   say) and checks through it, as `connect`'s.
///
/// A connection the server closed while it waited between checks (a restart,
/// `pg_terminate_backend`, `idle_session_timeout`, a pooler reload) is replaced before the
/// query; a query that fails because such a kept connection is gone is run once more on a new
/// connection, within the same deadline. A connection opened in the check itself is never
/// retried: a refused, stalled or rejecting database is reported in the same round.
///
/// A check abandoned mid-query (it ran past the monitor's check limit) discards the connection
/// it was using, which never serves again (for a pool of your own given to
/// `with_dedicated_pool`, when its connections can be marked broken, as a
/// [`PostgresCheckManager`]'s can). A `PostgresCheckManager`'s connection also closes its
/// socket then; a plain `tokio_postgres::Client` (a `bb8-postgres` pool's) leaves it to its
/// connection task, which keeps it while the query is unanswered, until the network gives up:
/// give such pools a `tcp_user_timeout`.
///
/// When the connection has to be opened, the check opens it itself instead of waiting in
/// `Pool::get`: bb8 would otherwise hide a refused connection behind its own 30 s
/// `connection_timeout`, and a database that refuses must fail fast.
///
/// ```
/// use tower_health::{HealthConfig, postgres::PostgresCheck};
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
    through: Through<M>,
    /// `host:port/dbname`, when the check was built from a configuration.
    target: Option<Arc<str>>,
}

/// How the check gets its connection.
enum Through<M: ManageConnection> {
    /// Through the pool, which is the check's own.
    OwnPool {
        /// Connections the check opened itself and added to the pool.
        added: Arc<AtomicU64>,
    },
    /// On a connection reserved beside the application's pool.
    Reserved(Reserved<M>),
}

impl<M> PostgresCheck<M>
where
    M: ManageConnection,
    M::Connection: PostgresConnection,
    M::Error: std::error::Error + 'static,
{
    /// Checks the database beside your application's pool, on one connection of its own
    /// opened by the pool's connection manager and reused every round (see the
    /// [type docs](Self)). Nothing is connected until the first check.
    #[must_use]
    pub fn new(pool: Pool<M>) -> Self {
        Self {
            through: Through::Reserved(Reserved::new(AppPool(pool.clone()))),
            pool,
            target: None,
        }
    }

    /// Checks the database through a pool that is the check's own, as
    /// [`PostgresCheck::connect`] does: give it a small pool nothing else uses, with
    /// `test_on_check_out(false)` (the check is itself the test).
    #[must_use]
    pub fn with_dedicated_pool(pool: Pool<M>) -> Self {
        Self {
            pool,
            through: Through::OwnPool {
                added: Arc::default(),
            },
            target: None,
        }
    }

    /// Names what the check connects to, shown as `target` in the health body: a pool handed in
    /// cannot tell (bb8 keeps its manager's configuration to itself), so name it here, such as
    /// `db.internal:5432/app`. It is passed through [`redact`], so a connection string's
    /// password never shows.
    ///
    /// Defaults to none for a pool handed in; checks built from a connection string
    /// ([`PostgresCheck::connect`]) know theirs.
    #[must_use]
    pub fn with_target(mut self, target: &str) -> Self {
        self.target = Some(redact(target).into());
        self
    }

    /// The pool the check reports on: the one it goes through, or for
    /// [`PostgresCheck::new`], the application's pool beside which it keeps its connection.
    #[must_use]
    pub fn pool(&self) -> &Pool<M> {
        &self.pool
    }
}

impl PostgresCheck<PostgresCheckManager> {
    /// Parses a connection string (URL or key-value form) and builds a dedicated one-connection
    /// pool for the checks, with TLS as its `sslmode` and `sslrootcert` ask (libpq's meanings;
    /// see the [module docs](super#tls)).
    ///
    /// Nothing is connected yet: the first check opens the connection.
    ///
    /// # Errors
    ///
    /// When the connection string does not parse, or asks for TLS without the `rustls`
    /// feature, or names an `sslrootcert` that cannot be read. The error's message never
    /// repeats the password.
    pub fn connect(dsn: &str) -> Result<Self, ConfigError> {
        let invalid = |message: String| {
            let reason = format!("invalid postgresql connection string: {}", redact(&message));
            ConfigError::new("PostgresCheck::connect", dsn, reason)
        };
        let (rest, tls) = split_tls_params(dsn).map_err(invalid)?;
        let mut config = Config::from_str(&rest).map_err(|error| invalid(error.to_string()))?;
        config.ssl_mode(tls.mode.for_tokio_postgres());
        let connector = connector(&tls).map_err(invalid)?;
        Ok(Self::with_manager(config, |config| {
            PostgresCheckManager::with_connector(config, connector)
        }))
    }

    /// Builds a dedicated one-connection pool from a parsed configuration (TLS as for
    /// [`PostgresCheckManager::new`]).
    ///
    /// Settings the configuration leaves unset get health-check friendly values:
    /// `application_name` `tower-health`, a 5 s `connect_timeout` and a 10 s
    /// `tcp_user_timeout` (a connection whose peer vanished is dropped instead of hanging).
    #[must_use]
    pub fn from_config(config: Config) -> Self {
        Self::with_manager(config, PostgresCheckManager::new)
    }

    fn with_manager(
        mut config: Config,
        manager: impl FnOnce(Config) -> PostgresCheckManager,
    ) -> Self {
        if config.get_application_name().is_none() {
            config.application_name("tower-health");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(Duration::from_secs(10));
        }
        let target = target_of(&config);
        let manager = manager(config);
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
        Self {
            target: Some(target.into()),
            ..Self::with_dedicated_pool(pool)
        }
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

    fn target(&self) -> Option<String> {
        self.target.as_deref().map(str::to_owned)
    }

    fn check(&self) -> CheckFuture {
        match &self.through {
            Through::OwnPool { added } => {
                let source = OwnPool {
                    pool: self.pool.clone(),
                    added: Arc::clone(added),
                };
                Box::pin(async move { recycle::check(&source).await.map(CheckReport::from) })
            }
            Through::Reserved(reserved) => reserved.check(),
        }
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        // The pool's own figures, never the reserved connection's: they are what an operator
        // sizes the pool by.
        let state = self.pool.state();
        let statistics = &state.statistics;
        let mut stats = PoolStats::new(
            self.pool.config().max_size,
            state.connections,
            state.idle_connections,
        );
        stats.pending_gets = statistics.pending_gets();
        stats.gets_timed_out = statistics.get_timed_out;
        stats.connections_created = statistics.connections_created;
        stats.connections_closed_broken = statistics.connections_closed_broken;
        match &self.through {
            Through::OwnPool { added } => {
                stats.connections_created += added.load(Ordering::Relaxed);
            }
            Through::Reserved(reserved) => stats.reserved_connections_opened = reserved.opened(),
        }
        Some(stats)
    }
}

impl<M: ManageConnection> fmt::Debug for PostgresCheck<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let through = match self.through {
            Through::OwnPool { .. } => "own pool",
            Through::Reserved(_) => "reserved connection",
        };
        f.debug_struct("PostgresCheck")
            .field("through", &through)
            .field("state", &self.pool.state())
            .finish_non_exhaustive()
    }
}

/// `host:port[,host:port...]/dbname`: what the check connects to, never the user's password
/// (the configuration keeps it apart, and it is not read here).
fn target_of(config: &Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(index, host)| {
            let port = ports
                .get(index)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match host {
                tokio_postgres::config::Host::Tcp(host) => format!("{host}:{port}"),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "localhost:5432".to_owned()
    } else {
        hosts.join(",")
    };
    match config.get_dbname() {
        Some(dbname) => format!("{hosts}/{dbname}"),
        None => hosts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_handed_in_pool_is_named_without_its_password() {
        let manager = PostgresCheckManager::new(Config::from_str("host=db").unwrap());
        let pool = Pool::builder().build_unchecked(manager);
        let check = PostgresCheck::new(pool);
        assert_eq!(
            DatabaseCheck::target(&check),
            None,
            "a handed-in pool cannot tell"
        );
        let check = check.with_target("postgres://app:hunter2@db:5432/app");
        assert_eq!(
            DatabaseCheck::target(&check).as_deref(),
            Some("postgres://app:***@db:5432/app")
        );
    }

    #[test]
    fn the_target_names_host_port_and_database_never_the_password() {
        let check =
            PostgresCheck::connect("postgres://app:hunter2@db.internal:6432/orders").unwrap();
        assert_eq!(
            DatabaseCheck::target(&check).as_deref(),
            Some("db.internal:6432/orders")
        );
        let check = PostgresCheck::connect("host=a,b port=5433 dbname=x password=hunter2").unwrap();
        assert_eq!(
            DatabaseCheck::target(&check).as_deref(),
            Some("a:5433,b:5433/x")
        );
    }

    #[test]
    fn a_bad_dsn_is_refused_without_echoing_the_password() {
        let error = PostgresCheck::connect("postgres://app:hunter2@db:notaport/app").unwrap_err();
        assert_eq!(error.variable(), "PostgresCheck::connect");
        let message = error.to_string();
        assert!(
            error
                .reason()
                .starts_with("invalid postgresql connection string"),
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
