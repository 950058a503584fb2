use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bb8::ManageConnection;
use tokio::task::AbortHandle;
use tokio_postgres::{Client, Config};

use super::DEFAULT_CONNECT_TIMEOUT;
use super::connector::{Connector, connector};
use super::error::connect_error;
use super::tls::TlsSettings;
use crate::check::{CheckError, CheckErrorKind};
use crate::env::saturate;

/// The connection manager of the pools [`PostgresCheck::connect`](crate::postgres::PostgresCheck::connect)
/// builds: `bb8-postgres`'s manager's work, with TLS as the connection string asks (feature
/// `rustls`; see the [module docs](super#tls)), every connection attempt bounded as a whole,
/// and connections that close their socket when dropped.
///
/// tokio-postgres's own `connect_timeout` covers only the TCP connect. Against a server that
/// accepts and never answers, the startup handshake would otherwise wait forever, and bb8
/// would keep that attempt (and the pool slot it holds) forever too. And a dropped
/// `tokio_postgres::Client` leaves its connection task (and socket) running while a query is
/// unanswered: a check abandoned on a connection gone dark would keep it open until the
/// network gives up.
///
/// Its connections dereference to a `tokio_postgres::Client` (`pool.get().await?` serves
/// queries as a `bb8-postgres` pool's do), and its errors are the checks' own
/// [`CheckError`], already sorted by [kind](CheckErrorKind): a refused database, a timed-out
/// attempt, a bad password.
pub struct PostgresCheckManager {
    config: Config,
    connector: Connector,
    connect_timeout: Duration,
}

impl PostgresCheckManager {
    /// A manager for the given configuration. With the `rustls` feature, TLS follows the
    /// configuration's `ssl_mode` (`prefer` by default) without verifying the certificate, as
    /// libpq's `require` does; [`PostgresCheck::connect`](crate::postgres::PostgresCheck::connect) reads
    /// `verify-ca` and `verify-full` from a connection string.
    #[must_use]
    pub fn new(config: Config) -> Self {
        let connector =
            connector(&TlsSettings::default()).expect("the default TLS settings need no file");
        Self::with_connector(config, connector)
    }

    pub(crate) fn with_connector(config: Config, connector: Connector) -> Self {
        Self {
            config,
            connector,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    /// Bounds each connection attempt, TCP connect and PostgreSQL startup together.
    ///
    /// Defaults to 5 seconds.
    ///
    /// The timeout is brought into 1 ms ..= 1 year (the range of every
    /// [duration](crate::config#durations)): zero, which would fail every attempt
    /// before it starts, is 1 ms. The manager goes into a pool of yours, which no
    /// configuration checks, so there is no later point at which to refuse it.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = saturate(timeout);
        self
    }
}

impl ManageConnection for PostgresCheckManager {
    type Connection = PostgresCheckClient;
    type Error = CheckError;

    async fn connect(&self) -> Result<PostgresCheckClient, CheckError> {
        #[allow(
            clippy::clone_on_copy,
            reason = "`NoTls` without rustls is `Copy`; the rustls connector is not"
        )]
        let connect = self.config.connect(self.connector.clone());
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok((client, connection))) => {
                let task = tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(PostgresCheckClient::new(client, task.abort_handle()))
            }
            Ok(Err(error)) => Err(connect_error(&error)),
            Err(_) => Err(CheckError::new(
                CheckErrorKind::Timeout,
                format!(
                    "connection attempt timed out after {:?}",
                    self.connect_timeout
                ),
            )),
        }
    }

    async fn is_valid(&self, conn: &mut PostgresCheckClient) -> Result<(), CheckError> {
        conn.client
            .simple_query("")
            .await
            .map(drop)
            .map_err(|error| connect_error(&error))
    }

    fn has_broken(&self, conn: &mut PostgresCheckClient) -> bool {
        conn.broken.load(Ordering::Acquire) || conn.client.is_closed()
    }
}

impl fmt::Debug for PostgresCheckManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The configuration's Debug prints the password.
        f.debug_struct("PostgresCheckManager")
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

/// A pooled connection [`PostgresCheck`](crate::postgres::PostgresCheck) can run its query on.
pub trait PostgresConnection: Send + Sync + 'static {
    /// The client to query.
    fn client(&self) -> &Client;

    /// Marks the connection as not to be reused: called when a check on it is abandoned
    /// mid-query. A plain `tokio_postgres::Client` cannot be marked (bb8 returns it to the
    /// pool); give such pools a `tcp_user_timeout` and a `max_lifetime`.
    fn mark_broken(&self) {}

    /// Whether the connection is closed (the server ended the session, or the socket broke):
    /// a check replaces such a connection before querying it.
    fn is_closed(&self) -> bool {
        self.client().is_closed()
    }
}

impl PostgresConnection for Client {
    fn client(&self) -> &Client {
        self
    }
}

/// The connections of [`PostgresCheckManager`] pools: a `tokio_postgres::Client` that can be
/// marked broken, so that a connection whose check was abandoned is discarded instead of
/// serving (and hanging) the next check, and whose socket is closed when it is dropped.
///
/// Public in a private module, and so not nameable: it is the manager's
/// `ManageConnection::Connection`, which a pool's user reaches through `Deref` to the client
/// and never writes (`<PostgresCheckManager as ManageConnection>::Connection` names it).
pub struct PostgresCheckClient {
    client: Client,
    broken: AtomicBool,
    /// The connection task, stopped (its socket closed) when the client is dropped.
    task: AbortHandle,
}

impl PostgresCheckClient {
    fn new(client: Client, task: AbortHandle) -> Self {
        Self {
            client,
            broken: AtomicBool::new(false),
            task,
        }
    }
}

impl Drop for PostgresCheckClient {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PostgresConnection for PostgresCheckClient {
    fn client(&self) -> &Client {
        &self.client
    }

    fn mark_broken(&self) {
        self.broken.store(true, Ordering::Release);
    }
}

impl Deref for PostgresCheckClient {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl fmt::Debug for PostgresCheckClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresCheckClient")
            .field("closed", &self.client.is_closed())
            .field("broken", &self.broken.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{MAX_DURATION, MIN_DURATION};

    #[test]
    fn a_connect_timeout_out_of_range_takes_the_nearest_bound() {
        for (timeout, taken) in [
            (Duration::ZERO, MIN_DURATION),
            (Duration::from_micros(1), MIN_DURATION),
            (Duration::from_millis(300), Duration::from_millis(300)),
            (Duration::MAX, MAX_DURATION),
        ] {
            let manager = PostgresCheckManager::new(Config::new()).connect_timeout(timeout);
            assert_eq!(manager.connect_timeout, taken, "{timeout:?}");
        }
    }
}
