//! What the Redis component and the shared cache share: the URL (TLS refused in a build
//! without `rustls`), the target shown (never the password), one lazily made
//! `ConnectionManager`, and what a Redis error means for a check.

use std::fmt;
use std::io;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Cmd, ErrorKind, FromRedisValue, RedisError, RedisResult};

use crate::check::{CheckError, CheckErrorKind};

/// How long a connection this crate opens to Redis may take to connect, and to answer one
/// command. The monitor's deadline cuts a round short well before.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// A Redis URL that cannot be used; its message never holds the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidRedisUrl(String);

impl fmt::Display for InvalidRedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidRedisUrl {}

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

/// Sends `command`, and once more on a new connection if the one it was given was gone.
///
/// A connection kept between checks can be closed while it waits (Redis restarted, a proxy's
/// idle timeout): the command sent on it fails at once, though Redis is there. And a
/// `ConnectionManager` whose reconnection failed hands that failure to the next command, and
/// only then starts a new attempt. Either way the error is about the connection the command
/// was handed, not Redis now: the manager starts a new connection on it, and the command is
/// sent once more on that one (as a PostgreSQL query is, see `check::postgres`). Without
/// this, the first check after Redis came back reported the refusal of the check before, and
/// the first after Redis went away the drop rather than the refusal, each a round late. A
/// refused or dropped connection almost never carried the command, and the commands sent here
/// bear a second send: `PING`, `GET` and `SET` alike, and a lock's `SET NX` that did take
/// the lock at the first send finds it taken and skips one computation, as when another
/// process holds it. If Redis is down, the second send fails as fast as the first.
pub(crate) async fn query<C, T>(connection: &mut C, command: &Cmd) -> RedisResult<T>
where
    C: ConnectionLike,
    T: FromRedisValue,
{
    match command.query_async(connection).await {
        Err(error)
            if error.code().is_none()
                && matches!(
                    error_kind(&error),
                    CheckErrorKind::Refused | CheckErrorKind::Closed
                ) =>
        {
            command.query_async(connection).await
        }
        result => result,
    }
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
    crate::tls::is_handshake_failure(error)
}

#[cfg(not(feature = "rustls"))]
fn is_tls(_error: &io::Error) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "rustls"))]
    #[test]
    fn tls_needs_the_rustls_feature() {
        let error = client("rediss://cache.internal").unwrap_err();
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
