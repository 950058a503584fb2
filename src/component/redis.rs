//! Redis through the `redis` crate: a `PING` per check.
//!
//! The `redis` crate (redis-rs) over `fred`: it is the client most Rust services already
//! hold (so [`Redis::new`] takes the application's own connection), it is maintained by an
//! organisation with regular releases, its `ConnectionManager` is one multiplexed connection
//! that reconnects by itself, TLS goes through rustls (the crate's `rustls` feature, as for
//! PostgreSQL), and Redis Cluster and Sentinel connections implement the same
//! `ConnectionLike` trait (through the application's own `redis` features).

use std::fmt;
use std::io;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Client, ErrorKind, RedisError};

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture};

/// How long a connection this crate opens to Redis may take to connect, and to answer one
/// command. The monitor's deadline cuts a round short well before.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// A [`Component`] that sends `PING` to Redis: is the server there and answering?
///
/// Through the application's own connection ([`Redis::new`] with a `ConnectionManager`, a
/// `MultiplexedConnection` or a cluster connection: no second connection, the check rides
/// the multiplexed one) or one of its own ([`Redis::connect`], [`Redis::from_client`]: one
/// `ConnectionManager`, opened on the first check and reconnecting by itself). A failure is
/// of kind `refused`, `dns`, `auth` (`NOAUTH`, `WRONGPASS`), `tls`, `timeout`, `closed` (the
/// connection dropped under the command) or `other`. A multiplexed connection has no pool,
/// so there are no pool figures: the round's `elapsed_ms` is the `PING`'s round trip.
///
/// ```
/// use tower_health::HealthConfig;
/// use tower_health::component::{ComponentSpec, Redis};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cache = Redis::connect("redis://:secret@127.0.0.1:6379/0")?;
/// assert_eq!(cache.to_string(), "127.0.0.1:6379/0"); // what `target` shows: no password
/// let config = HealthConfig::new().component(ComponentSpec::new("cache", cache));
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
///
/// Operators can declare one without code: `TOWER_HEALTH_REDIS_<NAME>=redis://...` adds a
/// non-critical component `<name>` (lower-cased); see [`crate::config`].
#[derive(Clone)]
pub struct Redis {
    ping: Arc<dyn Fn() -> CheckFuture + Send + Sync>,
    target: Option<Arc<str>>,
}

/// A Redis URL that cannot be used; its message never holds the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidRedisUrl(String);

impl fmt::Display for InvalidRedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidRedisUrl {}

impl Redis {
    /// Checks through `connection`, the application's own (a `ConnectionManager`, a
    /// `MultiplexedConnection`, a cluster connection): each check clones it and sends one
    /// `PING` on it. No target is shown: the connection does not say where it goes.
    #[must_use]
    pub fn new<C>(connection: C) -> Self
    where
        C: ConnectionLike + Clone + Send + Sync + 'static,
    {
        let ping = move || -> CheckFuture {
            let mut connection = connection.clone();
            Box::pin(async move { ping(&mut connection).await })
        };
        Self {
            ping: Arc::new(ping),
            target: None,
        }
    }

    /// Checks through a connection of its own to `url` (`redis://[user:password@]host[:port][/db]`;
    /// `rediss://` with the `rustls` feature), opened on the first check.
    ///
    /// # Errors
    ///
    /// When the URL does not parse, or asks for TLS in a build without the `rustls` feature.
    pub fn connect(url: &str) -> Result<Self, InvalidRedisUrl> {
        Ok(Self::from_client(client(url)?))
    }

    /// Checks through a connection of its own, opened from `client` on the first check.
    #[must_use]
    pub fn from_client(client: Client) -> Self {
        let target = Some(Arc::from(target(&client)));
        let manager = LazyManager::new(client);
        let ping = move || -> CheckFuture {
            let manager = manager.clone();
            Box::pin(async move { ping(&mut manager.get()?).await })
        };
        Self {
            ping: Arc::new(ping),
            target,
        }
    }
}

impl Component for Redis {
    fn check(&self) -> CheckFuture {
        (self.ping)()
    }

    fn target(&self) -> Option<String> {
        self.target.as_deref().map(str::to_owned)
    }
}

impl fmt::Display for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            self.target
                .as_deref()
                .unwrap_or("the application's connection"),
        )
    }
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The client's own Debug shows its connection info, password included.
        let Self { ping: _, target } = self;
        f.debug_struct("Redis")
            .field("target", target)
            .finish_non_exhaustive()
    }
}

async fn ping<C: ConnectionLike>(connection: &mut C) -> Result<(), CheckError> {
    let pong: String = redis::cmd("PING")
        .query_async(connection)
        .await
        .map_err(|error| CheckError::from_error(error_kind(&error), &error))?;
    match pong.as_str() {
        "PONG" => Ok(()),
        other => Err(CheckError::new(
            CheckErrorKind::Other,
            format!("PING answered {other:?}, not PONG"),
        )),
    }
}

/// A `ConnectionManager` made on first use, from within the runtime (making one spawns a
/// task): one multiplexed connection, whoever clones this.
#[derive(Clone)]
pub(crate) struct LazyManager(Arc<(Client, OnceLock<ConnectionManager>)>);

impl LazyManager {
    pub(crate) fn new(client: Client) -> Self {
        Self(Arc::new((client, OnceLock::new())))
    }

    /// The connection; it connects on its first command. Each failed attempt is reported
    /// at once (no retries) and the next command tries again.
    pub(crate) fn get(&self) -> Result<ConnectionManager, CheckError> {
        let (client, manager) = &*self.0;
        if let Some(manager) = manager.get() {
            return Ok(manager.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(0)
            .set_connection_timeout(Some(CLIENT_TIMEOUT))
            .set_response_timeout(Some(CLIENT_TIMEOUT));
        let made = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|error| CheckError::from_error(error_kind(&error), &error))?;
        Ok(manager.get_or_init(|| made).clone())
    }
}

/// A client for `url`, refusing a TLS URL in a build that cannot speak TLS.
pub(crate) fn client(url: &str) -> Result<Client, InvalidRedisUrl> {
    let tls = ["rediss://", "valkeys://"].iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    });
    if tls && !cfg!(feature = "rustls") {
        return Err(InvalidRedisUrl(
            "a rediss:// URL asks for TLS, but tower-health was built without the `rustls` feature"
                .to_owned(),
        ));
    }
    Client::open(url).map_err(|error| {
        InvalidRedisUrl(crate::redact(&format!(
            "not a Redis URL (redis://[user:password@]host[:port][/db]): {error}"
        )))
    })
}

/// Where `client` connects, as `host:port/db`: never the user or the password.
pub(crate) fn target(client: &Client) -> String {
    let info = client.get_connection_info();
    // The address's Display is `host:port` or a socket's path: no credentials.
    format!("{}/{}", info.addr(), info.redis_settings().db())
}

/// What a Redis error says about the check.
pub(crate) fn error_kind(error: &RedisError) -> CheckErrorKind {
    if error.kind() == ErrorKind::AuthenticationFailed
        || matches!(error.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"))
    {
        return CheckErrorKind::Auth;
    }
    // Loading its data set, or a replica without its primary: up, but not serving yet.
    if matches!(error.code(), Some("LOADING" | "MASTERDOWN")) {
        return CheckErrorKind::Refused;
    }
    if let Some(io) = io_error(error) {
        if is_tls(io) {
            return CheckErrorKind::Tls;
        }
        return match CheckErrorKind::from_io_chain(io) {
            Some(kind) => kind,
            // End of file, broken pipe: the connection went away under the command.
            None if error.is_connection_dropped() => CheckErrorKind::Closed,
            None => CheckErrorKind::Other,
        };
    }
    match error.kind() {
        ErrorKind::Server(_) | ErrorKind::Extension => CheckErrorKind::Query,
        // The client's own "connection dropped" errors carry no I/O error.
        ErrorKind::Io => CheckErrorKind::Closed,
        _ => CheckErrorKind::Other,
    }
}

/// The I/O error under `error`, if there is one: `redis` keeps it behind an `Arc`, which
/// hides it from a plain walk of the sources.
fn io_error(error: &RedisError) -> Option<&io::Error> {
    let source = std::error::Error::source(error)?;
    source
        .downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>()
        .and_then(|inner| inner.downcast_ref::<io::Error>())
        .or_else(|| source.downcast_ref::<io::Error>())
}

/// Whether a rustls error is behind `error` (tokio-rustls wraps it in the I/O error).
#[cfg(feature = "rustls")]
fn is_tls(error: &io::Error) -> bool {
    let mut next = error
        .get_ref()
        .map(|inner| inner as &(dyn std::error::Error + 'static));
    while let Some(error) = next {
        if error.is::<rustls::Error>() {
            return true;
        }
        next = error.source();
    }
    false
}

#[cfg(not(feature = "rustls"))]
fn is_tls(_error: &io::Error) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_and_debug_show_no_password() {
        let redis = Redis::connect("redis://app:hunter2@cache.internal:6380/3").unwrap();
        assert_eq!(redis.target().as_deref(), Some("cache.internal:6380/3"));
        let debug = format!("{redis:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        let error = Redis::connect("redis://app:hunter2@cache.internal:port").unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    #[cfg(not(feature = "rustls"))]
    #[test]
    fn tls_needs_the_rustls_feature() {
        let error = Redis::connect("rediss://cache.internal").unwrap_err();
        assert!(error.to_string().contains("`rustls` feature"), "{error}");
    }

    #[test]
    fn errors_by_category() {
        let io = |kind| RedisError::from(io::Error::from(kind));
        assert_eq!(
            error_kind(&io(io::ErrorKind::ConnectionRefused)),
            CheckErrorKind::Refused
        );
        assert_eq!(
            error_kind(&io(io::ErrorKind::TimedOut)),
            CheckErrorKind::Timeout
        );
        assert_eq!(
            error_kind(&io(io::ErrorKind::UnexpectedEof)),
            CheckErrorKind::Closed
        );
        let server = |code: &str| redis::make_extension_error(code.to_owned(), None);
        assert_eq!(error_kind(&server("NOAUTH")), CheckErrorKind::Auth);
        assert_eq!(error_kind(&server("WRONGPASS")), CheckErrorKind::Auth);
        assert_eq!(error_kind(&server("LOADING")), CheckErrorKind::Refused);
        assert_eq!(error_kind(&server("WHATEVER")), CheckErrorKind::Query);
    }
}
