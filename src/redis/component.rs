//! Redis through the `redis` crate: a `PING` per check. The pieces it shares with the
//! shared cache (`shared/`: the URL, the target, the connection, what an error means) are in
//! `client/`.
//!
//! The `redis` crate (redis-rs) over `fred`: it is the client most Rust services already
//! hold (so [`Redis::new`] takes the application's own connection), it is maintained by an
//! organisation with regular releases, its `ConnectionManager` is one multiplexed connection
//! that reconnects by itself, TLS goes through rustls (the crate's `rustls` feature, as for
//! PostgreSQL), and it speaks Redis Cluster and Sentinel (this crate's `redis-cluster` and
//! `redis-sentinel` features).

use std::fmt;
use std::sync::{Arc, OnceLock};

use ::redis::aio::ConnectionLike;
use ::redis::{Client, InfoDict};

use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport};
use crate::component::Component;
use crate::env::ConfigError;
use crate::redis::client::{
    LazyConnection, Topology, cluster_state, error_kind, parse, query, single_target,
};

/// A [`Component`] that sends `PING` to Redis: is the server there and answering?
///
/// Through the application's own connection ([`Redis::new`] with a `ConnectionManager`, a
/// `MultiplexedConnection` or a cluster connection: no second connection, the check rides
/// the multiplexed one) or one of its own ([`Redis::connect`], [`Redis::from_client`]: one
/// multiplexed connection, opened on the first check and reconnecting by itself: a
/// `ConnectionManager` to one server, a cluster connection, or a connection to the primary
/// the Sentinels name). On a Redis Cluster of its own, `CLUSTER INFO` to one node must say
/// `cluster_state:ok` (every slot served; a primary gone with no replica to take over is
/// `refused`), and the `PING` goes to every primary the client knows. A failure is
/// of kind `refused`, `dns`, `auth` (`NOAUTH`, `WRONGPASS`), `tls`, `timeout`, `closed` (the
/// connection dropped under the command) or `other`. A multiplexed connection has no pool,
/// so there are no pool figures: the round's `elapsed_ms` is the `PING`'s round trip.
///
/// A check that passes reports the server's version and mode (`details.version`, such as
/// `"7.2.4"`, and `details.mode`: `standalone`, `cluster` or `sentinel`), read with one
/// `INFO server` after the first `PONG` and kept: later checks send `PING` alone. A server
/// that refuses `INFO` (an ACL) is asked once and reports no version.
///
/// ```
/// use tower_health::HealthConfig;
/// use tower_health::component::ComponentSpec;
/// use tower_health::redis::Redis;
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

impl Redis {
    /// Checks through `connection`, the application's own (a `ConnectionManager`, a
    /// `MultiplexedConnection`, a cluster connection): each check clones it and sends one
    /// `PING` on it. No target is shown: the connection does not say where it goes.
    #[must_use]
    pub fn new<C>(connection: C) -> Self
    where
        C: ConnectionLike + Clone + Send + Sync + 'static,
    {
        let server = Arc::new(ServerInfo::default());
        let ping = move || -> CheckFuture {
            let mut connection = connection.clone();
            let server = Arc::clone(&server);
            Box::pin(async move { ping(&mut connection, &server).await })
        };
        Self {
            ping: Arc::new(ping),
            target: None,
        }
    }

    /// Checks through a connection of its own to `url`, opened on the first check:
    /// `redis://[user:password@]host[:port][/db]` (`rediss://` with the `rustls` feature), a
    /// Redis Cluster's `redis-cluster://host[:port]?node=host[:port]&...` (feature
    /// `redis-cluster`), or the primary behind Sentinel,
    /// `redis-sentinel://host[:port][/db]?sentinelServiceName=<name>&node=host[:port]&...`
    /// (feature `redis-sentinel`). See [the module docs](crate::redis#beyond-one-redis) for the
    /// forms in full.
    ///
    /// # Errors
    ///
    /// When the URL does not parse, asks for TLS in a build without the `rustls` feature, or
    /// names a cluster or Sentinel in a build without its feature.
    pub fn connect(url: &str) -> Result<Self, ConfigError> {
        let (topology, target) = parse(url)
            .map_err(|error| ConfigError::new("Redis::connect", url, error.to_string()))?;
        Ok(Self::own(topology, target))
    }

    /// Checks through a connection of its own, opened from `client` on the first check.
    #[must_use]
    pub fn from_client(client: Client) -> Self {
        let target = single_target(&client);
        Self::own(Topology::Single(client), target)
    }

    fn own(topology: Topology, target: String) -> Self {
        let connection = LazyConnection::new(topology);
        let server = Arc::new(ServerInfo::default());
        let ping = move || -> CheckFuture {
            let connection = connection.clone();
            let server = Arc::clone(&server);
            Box::pin(async move {
                let cluster = connection.is_cluster();
                let mut connection = connection.get().await?;
                if cluster {
                    cluster_state(&mut connection).await?;
                }
                ping(&mut connection, &server).await
            })
        };
        Self {
            ping: Arc::new(ping),
            target: Some(Arc::from(target)),
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

/// What the server said about itself: asked once, after the first `PONG`.
#[derive(Debug, Default)]
struct ServerInfo(OnceLock<Option<(String, String)>>);

/// One `PING` (sent once more on a new connection when the kept one was refused or dropped:
/// see `client::query`), then, once in the component's life, the server's version.
async fn ping<C: ConnectionLike>(
    connection: &mut C,
    server: &ServerInfo,
) -> Result<CheckReport, CheckError> {
    let pong: String = query(connection, &::redis::cmd("PING"))
        .await
        .map_err(|error| CheckError::from_error(error_kind(&error), &error))?;
    if pong != "PONG" {
        return Err(CheckError::new(
            CheckErrorKind::Other,
            format!("PING answered {pong:?}, not PONG"),
        ));
    }
    let info = match server.0.get() {
        Some(info) => info,
        None => {
            // One query in the life of the component; a refusal (an ACL without `INFO`) or
            // an answer without the fields is kept too, so it is not asked again.
            let info: Option<InfoDict> = ::redis::cmd("INFO")
                .arg("server")
                .query_async(connection)
                .await
                .ok();
            let fields = info.and_then(|info| {
                let version = info.get::<String>("redis_version")?;
                let mode = info.get::<String>("redis_mode").unwrap_or_default();
                Some((version, mode))
            });
            server.0.get_or_init(|| fields)
        }
    };
    let report = CheckReport::new();
    Ok(match info {
        Some((version, mode)) if mode.is_empty() => report.detail("version", version.as_str()),
        Some((version, mode)) => report
            .detail("version", version.as_str())
            .detail("mode", mode.as_str()),
        None => report,
    })
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
}
