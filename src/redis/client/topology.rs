//! Which Redis a URL names, and what is shown of it.
//!
//! - One server: `redis://[user:password@]host[:port][/db]` (`rediss://` for TLS; `valkey://`,
//!   `valkeys://` and the `redis+unix://` socket forms too), as the `redis` crate reads it.
//! - A Redis Cluster (feature `redis-cluster`):
//!   `redis-cluster://[user:password@]host[:port][?node=host[:port]&...]`; `rediss-cluster://`
//!   for TLS. Every host is a seed node; the client learns the others from the cluster.
//! - A primary found through Sentinel (feature `redis-sentinel`):
//!   `redis-sentinel://[user:password@]host[:port][/db]?sentinelServiceName=<name>[&node=host[:port]...][&sentinelUsername=..][&sentinelPassword=..]`;
//!   `rediss-sentinel://` for TLS to the Sentinels and the primary. The hosts are Sentinels
//!   (port 26379 unless given); the user and password are the primary's.
//!
//! The cluster and Sentinel forms are `fred`'s (and Apollo Router's), so that one URL reads
//! the same in both clients. A form whose feature is not built is refused, never read as
//! something else.

use ::redis::Client;

use super::InvalidRedisUrl;

/// The forms a Redis URL may take, for error messages.
const FORMS: &str = "redis://[user:password@]host[:port][/db], \
     redis-cluster://host[:port]?node=host[:port]&..., \
     redis-sentinel://host[:port][/db]?sentinelServiceName=<name>&node=host[:port]&...";

/// Where a URL leads: one server, a cluster, or a primary that Sentinel names.
// One per connection, made once at start: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Topology {
    /// One server (or a managed endpoint that fails over behind one address).
    Single(Client),
    /// A Redis Cluster, reached through its seed nodes.
    #[cfg(feature = "redis-cluster")]
    Cluster(::redis::cluster::ClusterClient),
    /// The primary the Sentinels name, followed through failovers.
    #[cfg(feature = "redis-sentinel")]
    Sentinel(super::sentinel::SentinelConnection),
}

/// What a URL's scheme asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Single,
    Cluster,
    Sentinel,
}

/// The topology `url` names and its target (`host:port/db`, `cluster host:port,...`,
/// `sentinel <name>/<db> at host:port,...`: never a user name or a password).
pub(crate) fn parse(url: &str) -> Result<(Topology, String), InvalidRedisUrl> {
    let scheme = url
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase())
        .unwrap_or_default();
    let (kind, tls) = match scheme.as_str() {
        "redis-cluster" => (Kind::Cluster, false),
        "rediss-cluster" => (Kind::Cluster, true),
        "redis-sentinel" => (Kind::Sentinel, false),
        "rediss-sentinel" => (Kind::Sentinel, true),
        "rediss" | "valkeys" => (Kind::Single, true),
        _ => (Kind::Single, false),
    };
    if tls && !cfg!(feature = "rustls") {
        return Err(InvalidRedisUrl::new(format!(
            "a {scheme}:// URL asks for TLS, but tower-health was built without the `rustls` feature"
        )));
    }
    match kind {
        Kind::Single => single(url),
        Kind::Cluster => cluster(url, tls),
        Kind::Sentinel => sentinel(url, tls),
    }
}

fn single(url: &str) -> Result<(Topology, String), InvalidRedisUrl> {
    let client = Client::open(url)
        .map_err(|error| InvalidRedisUrl::new(format!("not a Redis URL ({FORMS}): {error}")))?;
    let target = single_target(&client);
    Ok((Topology::Single(client), target))
}

/// Where `client` connects, as `host:port/db`: never the user or the password.
pub(crate) fn single_target(client: &Client) -> String {
    let info = client.get_connection_info();
    // The address's Display is `host:port` or a socket's path: no credentials.
    format!("{}/{}", info.addr(), info.redis_settings().db())
}

#[cfg(feature = "redis-cluster")]
fn cluster(url: &str, tls: bool) -> Result<(Topology, String), InvalidRedisUrl> {
    let spec = nodes::Spec::parse(url, tls, 6379, &[])?;
    if spec.db != 0 {
        return Err(InvalidRedisUrl::new(
            "a Redis Cluster has only database 0: leave the path out of a redis-cluster:// URL",
        ));
    }
    let seeds: Vec<String> = spec
        .hosts
        .iter()
        .map(|(host, port)| spec.node_url(host, *port, true))
        .collect();
    let client = ::redis::cluster::ClusterClient::builder(seeds)
        .connection_timeout(super::CLIENT_TIMEOUT)
        .response_timeout(super::CLIENT_TIMEOUT)
        // A redirection (MOVED, ASK) or a reconnection is a retry; the round's deadline
        // bounds them all.
        .retries(3)
        .build()
        .map_err(|error| InvalidRedisUrl::new(format!("not a Redis Cluster URL: {error}")))?;
    Ok((
        Topology::Cluster(client),
        format!("cluster {}", spec.addresses()),
    ))
}

/// Refuses rather than reading a cluster's seed as one server.
#[cfg(not(feature = "redis-cluster"))]
fn cluster(_url: &str, _tls: bool) -> Result<(Topology, String), InvalidRedisUrl> {
    Err(InvalidRedisUrl::new(
        "a redis-cluster:// URL names a Redis Cluster, but tower-health was built without the `redis-cluster` feature",
    ))
}

// `SentinelClient::build` takes a `String` without `rustls`, `impl AsRef<str>` with it.
#[cfg_attr(feature = "rustls", allow(clippy::unnecessary_to_owned))]
#[cfg(feature = "redis-sentinel")]
fn sentinel(url: &str, tls: bool) -> Result<(Topology, String), InvalidRedisUrl> {
    use ::redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
    use ::redis::{IntoConnectionInfo, RedisConnectionInfo, TlsMode};

    const SERVICE: &str = "sentinelServiceName";
    const USERNAME: &str = "sentinelUsername";
    const PASSWORD: &str = "sentinelPassword";
    let spec = nodes::Spec::parse(url, tls, 26379, &[SERVICE, USERNAME, PASSWORD])?;
    let service = spec.param(SERVICE).filter(|name| !name.is_empty()).ok_or_else(|| {
        InvalidRedisUrl::new(
            "a redis-sentinel:// URL needs sentinelServiceName=<the name the Sentinels monitor the primary under>",
        )
    })?;
    let invalid = |error: ::redis::RedisError| {
        InvalidRedisUrl::new(format!("not a Redis Sentinel URL: {error}"))
    };
    // The primary's user, password and database, decoded as the `redis` crate decodes them.
    let (host, port) = &spec.hosts[0];
    let primary = spec
        .node_url(host, *port, true)
        .into_connection_info()
        .map_err(invalid)?
        .redis_settings()
        .clone();
    let mut node = SentinelNodeConnectionInfo::default().set_redis_connection_info(primary);
    if tls {
        node = node.set_tls_mode(TlsMode::Secure);
    }
    let mut to_sentinels = RedisConnectionInfo::default();
    if let Some(user) = spec.param(USERNAME) {
        to_sentinels = to_sentinels.set_username(user);
    }
    if let Some(password) = spec.param(PASSWORD) {
        to_sentinels = to_sentinels.set_password(password);
    }
    // One client per Sentinel, so that they are asked at once rather than in turn.
    let sentinels = spec
        .hosts
        .iter()
        .map(|(host, port)| {
            let info = spec.node_url(host, *port, false).into_connection_info()?;
            SentinelClient::build(
                vec![info.set_redis_settings(to_sentinels.clone())],
                service.to_owned(),
                Some(node.clone()),
                SentinelServerType::Master,
            )
        })
        .collect::<Result<Vec<_>, ::redis::RedisError>>()
        .map_err(invalid)?;
    let target = format!("sentinel {service}/{} at {}", spec.db, spec.addresses());
    Ok((
        Topology::Sentinel(super::sentinel::SentinelConnection::new(sentinels, spec.db)),
        target,
    ))
}

/// Refuses rather than reading a Sentinel as the primary.
#[cfg(not(feature = "redis-sentinel"))]
fn sentinel(_url: &str, _tls: bool) -> Result<(Topology, String), InvalidRedisUrl> {
    Err(InvalidRedisUrl::new(
        "a redis-sentinel:// URL names a primary behind Redis Sentinel, but tower-health was built without the `redis-sentinel` feature",
    ))
}

/// The hosts, credentials, database and parameters of a cluster or Sentinel URL.
#[cfg(any(feature = "redis-cluster", feature = "redis-sentinel"))]
mod nodes {
    use super::InvalidRedisUrl;

    pub(super) struct Spec {
        tls: bool,
        /// `user:password@` as written (percent-encoded), or empty.
        userinfo: String,
        /// The URL's host first, then each `node=`.
        pub(super) hosts: Vec<(String, u16)>,
        pub(super) db: i64,
        /// The parameters besides `node` (only Sentinel URLs have some).
        #[cfg_attr(not(feature = "redis-sentinel"), allow(dead_code))]
        params: Vec<(String, String)>,
    }

    impl Spec {
        /// Reads `url`; `known` are the parameters allowed besides `node`.
        pub(super) fn parse(
            url: &str,
            tls: bool,
            default_port: u16,
            known: &[&str],
        ) -> Result<Self, InvalidRedisUrl> {
            let parsed = url::Url::parse(url)
                .map_err(|error| InvalidRedisUrl::new(format!("not a URL: {error}")))?;
            let host = parsed
                .host_str()
                .filter(|host| !host.is_empty())
                .ok_or_else(|| InvalidRedisUrl::new("the URL names no host"))?;
            let mut hosts = vec![(host.to_owned(), parsed.port().unwrap_or(default_port))];
            let db = match parsed.path().trim_matches('/') {
                "" => 0,
                db => db.parse().map_err(|_| {
                    InvalidRedisUrl::new(format!("the URL's path is a database number, got {db:?}"))
                })?,
            };
            let mut params = Vec::new();
            for (key, value) in parsed.query_pairs() {
                if key == "node" {
                    hosts.push(node(&value, default_port)?);
                } else if known.contains(&&*key) {
                    params.push((key.into_owned(), value.into_owned()));
                } else {
                    let mut expected = vec!["node"];
                    expected.extend(known);
                    return Err(InvalidRedisUrl::new(format!(
                        "unknown URL parameter {key:?} (expected {})",
                        expected.join(", ")
                    )));
                }
            }
            let userinfo = match (parsed.username(), parsed.password()) {
                ("", None) => String::new(),
                (user, None) => format!("{user}@"),
                (user, Some(password)) => format!("{user}:{password}@"),
            };
            Ok(Self {
                tls,
                userinfo,
                hosts,
                db,
                params,
            })
        }

        /// A `redis://` (or `rediss://`) URL for one node, with the URL's credentials and
        /// database or without.
        pub(super) fn node_url(&self, host: &str, port: u16, credentials: bool) -> String {
            let scheme = if self.tls { "rediss" } else { "redis" };
            if credentials {
                format!("{scheme}://{}{host}:{port}/{}", self.userinfo, self.db)
            } else {
                format!("{scheme}://{host}:{port}")
            }
        }

        /// The value of parameter `key`, the last one given.
        #[cfg_attr(not(feature = "redis-sentinel"), allow(dead_code))]
        pub(super) fn param(&self, key: &str) -> Option<&str> {
            self.params
                .iter()
                .rev()
                .find(|(name, _)| name == key)
                .map(|(_, value)| &**value)
        }

        /// `host:port,host:port`.
        pub(super) fn addresses(&self) -> String {
            let addresses: Vec<String> = self
                .hosts
                .iter()
                .map(|(host, port)| format!("{host}:{port}"))
                .collect();
            addresses.join(",")
        }
    }

    /// A `node=host[:port]` parameter's host and port.
    fn node(value: &str, default_port: u16) -> Result<(String, u16), InvalidRedisUrl> {
        let bad = || InvalidRedisUrl::new(format!("node={value:?} is not host[:port]"));
        let parsed = url::Url::parse(&format!("redis://{value}")).map_err(|_| bad())?;
        let bare = parsed.username().is_empty()
            && parsed.password().is_none()
            && parsed.path().is_empty()
            && parsed.query().is_none()
            && parsed.fragment().is_none();
        match parsed.host_str() {
            Some(host) if bare && !host.is_empty() => {
                Ok((host.to_owned(), parsed.port().unwrap_or(default_port)))
            }
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests;
