use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::ConnectionLike;

use crate::env::{ConfigError, FirstError, Zero, check_in_range, validate_key_prefix};
use crate::redis::client::{AnyConnection, LazyConnection, Topology, parse, single_target};
use crate::verdict::Fraction;

/// The default key prefix: keys `tower-health:health` and `tower-health:health:lock`.
pub(crate) const DEFAULT_KEY_PREFIX: &str = "tower-health:";

/// Where and how the health verdict is shared across processes: the Redis connection, the
/// keys, how long an entry is served, and who this process is. Register it with
/// [`HealthConfig::shared_cache`](crate::HealthConfig::shared_cache), or set
/// `TOWER_HEALTH_REDIS_URL`.
///
/// See the [module docs](crate::redis) for what is shared and an example.
#[derive(Clone)]
#[must_use]
pub struct SharedCache {
    pub(crate) connection: SharedConnection,
    /// Where the connection goes (`host:port/db`, `cluster host:port,...`,
    /// `sentinel <name>/<db> at host:port,...`), when this crate opens it.
    pub(crate) target: Option<Arc<str>>,
    pub(crate) key_prefix: String,
    pub(crate) ttl: Option<Duration>,
    pub(crate) lock_expiry: Option<Duration>,
    pub(crate) process_id: Option<Arc<str>>,
    pub(crate) nocache_writes: bool,
    /// The fleet guard's fraction, when it is on.
    pub(crate) fleet_guard: Option<Fraction>,
    /// The first invalid value a setter was given, for
    /// [`HealthMonitor::new`](crate::HealthMonitor::new) to return.
    pub(crate) error: FirstError,
}

/// The one multiplexed connection the shared cache uses.
#[derive(Clone)]
pub(crate) enum SharedConnection {
    /// One of its own, opened on the first round and reconnecting by itself.
    Own(LazyConnection),
    /// The application's own, cloned for each command.
    Application(Arc<dyn Fn() -> AnyConnection + Send + Sync>),
}

impl SharedConnection {
    /// The connection, to send one command on.
    pub(crate) async fn get(&self) -> Result<AnyConnection, crate::check::CheckError> {
        match self {
            Self::Own(connection) => connection.get().await,
            Self::Application(connection) => Ok(connection()),
        }
    }
}

impl SharedCache {
    /// Shares through a connection of its own to `url`, opened on the first health round:
    /// `redis://[user:password@]host[:port][/db]` (`rediss://` with the `rustls` feature), a
    /// Redis Cluster's `redis-cluster://host[:port]?node=host[:port]&...` (feature
    /// `redis-cluster`), or the primary behind Sentinel,
    /// `redis-sentinel://host[:port][/db]?sentinelServiceName=<name>&node=host[:port]&...`
    /// (feature `redis-sentinel`). See [Beyond one Redis](crate::redis#beyond-one-redis).
    ///
    /// # Errors
    ///
    /// When the URL does not parse, asks for TLS in a build without the `rustls` feature, or
    /// names a cluster or Sentinel in a build without its feature.
    pub fn connect(url: &str) -> Result<Self, ConfigError> {
        let (topology, target) = parse(url)
            .map_err(|error| ConfigError::new("SharedCache::connect", url, error.to_string()))?;
        Ok(Self::own(topology, target))
    }

    /// Shares through a connection of its own to one server, opened from `client` on the
    /// first health round.
    pub fn from_client(client: ::redis::Client) -> Self {
        let target = single_target(&client);
        Self::own(Topology::Single(client), target)
    }

    fn own(topology: Topology, target: String) -> Self {
        let connection = SharedConnection::Own(LazyConnection::new(topology));
        Self::with(connection, Some(Arc::from(target)))
    }

    /// Shares through the application's own connection (a `ConnectionManager`, a cluster
    /// connection, any multiplexed connection of the `redis` crate): no second connection.
    /// Each command is sent on a clone of it. Its response timeout, if shorter than the
    /// round's deadline, applies; whether it reconnects is its own affair (a
    /// `MultiplexedConnection` does not, a `ConnectionManager` and a cluster connection do).
    pub fn with_connection<C>(connection: C) -> Self
    where
        C: ConnectionLike + Clone + Send + Sync + 'static,
    {
        let connection = move || AnyConnection::new(connection.clone());
        Self::with(SharedConnection::Application(Arc::new(connection)), None)
    }

    fn with(connection: SharedConnection, target: Option<Arc<str>>) -> Self {
        Self {
            connection,
            target,
            key_prefix: DEFAULT_KEY_PREFIX.to_owned(),
            ttl: None,
            lock_expiry: None,
            process_id: None,
            nocache_writes: false,
            fleet_guard: None,
            error: FirstError::default(),
        }
    }

    /// The prefix of the two keys: the entry under `<prefix>health`, the lock under
    /// `<prefix>health:lock`. Give each fleet (each application) sharing one Redis its own.
    ///
    /// Defaults to `tower-health:`.
    ///
    /// A `prefix` that is empty, longer than 200 bytes, or holds whitespace or control
    /// characters is an error of [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        let check = validate_key_prefix(&prefix)
            .map_err(|reason| ConfigError::new("SharedCache::key_prefix", &prefix, reason));
        if self.error.passes(check) {
            self.key_prefix = prefix;
        }
        self
    }

    /// How long an entry is served by the other processes after the round that computed it:
    /// past it, the next health round of any process computes a new one. Redis keeps the
    /// entry for twice as long, so that the processes that lose the race for the lock keep
    /// serving it while the winner computes.
    ///
    /// Defaults to the health round's interval
    /// ([`HealthConfig::health_interval`](crate::HealthConfig::health_interval)); capped, with
    /// a warning, at the health verdict's staleness bound (three health intervals plus the
    /// readiness timeout), so that an entry served as fresh is never older than this
    /// process's own verdict may get.
    ///
    /// A `ttl` shorter than 1 ms or longer than 1 year is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        if self
            .error
            .passes(check_in_range("SharedCache::ttl", ttl, Zero::Refused))
        {
            self.ttl = Some(ttl);
        }
        self
    }

    /// How long the lock a computing process takes is held at most: a process that died
    /// holding it blocks nobody past it. Kept below the TTL (capped at half of it).
    ///
    /// Defaults to twice the round's deadline
    /// ([`HealthConfig::readiness_timeout`](crate::HealthConfig::readiness_timeout)): the
    /// computation and the write each take one at most.
    ///
    /// An `expiry` shorter than 1 ms or longer than 1 year is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn lock_expiry(mut self, expiry: Duration) -> Self {
        if self.error.passes(check_in_range(
            "SharedCache::lock_expiry",
            expiry,
            Zero::Refused,
        )) {
            self.lock_expiry = Some(expiry);
        }
        self
    }

    /// How this process signs the entries it computes (`"computed_by"` in the entry and in
    /// the bodies that serve it).
    ///
    /// Defaults to `<hostname>/<pid>` (the hostname from `HOSTNAME`, else the kernel's: the
    /// pod's name on Kubernetes).
    pub fn process_id(mut self, id: impl Into<String>) -> Self {
        self.process_id = Some(Arc::from(id.into()));
        self
    }

    /// Whether a `?nocache=true` computation also overwrites the shared entry. Without it,
    /// the bypass's verdict is this process's alone.
    ///
    /// Defaults to `false`.
    pub fn nocache_writes(mut self, writes: bool) -> Self {
        self.nocache_writes = writes;
        self
    }

    /// Turns the fleet guard on: a process whose readiness fails only on a dependency the
    /// whole fleet shares (a database refused or timing out, a
    /// [shared](crate::component::ComponentSpec::shared) component gating readiness) stays in
    /// rotation, readiness 200 `degraded` with a reason naming the guard and the fleet's
    /// count, while answering 503 would leave less than `fraction` of the fleet in rotation.
    /// A cause of the process's own (its drain, a hold, its own pool saturated, a component
    /// of its own, a stale monitor) still takes it out. Environment:
    /// `TOWER_HEALTH_FLEET_GUARD`. See [The fleet guard](crate::redis#the-fleet-guard).
    ///
    /// Each readiness round, the process publishes its readiness and its cause under
    /// `<prefix>fleet` and reads the fleet's (the processes of its own configuration:
    /// another application under the same prefix does not count): one Redis round trip per readiness round,
    /// bounded by the readiness timeout (so a readiness round takes at most two). With Redis
    /// unreachable, slow or in error, the guard is off for that round and readiness is this
    /// process's own, as without it.
    ///
    /// Defaults to off.
    ///
    /// A `fraction` outside (0, 1] is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn fleet_guard(mut self, fraction: f64) -> Self {
        match Fraction::new(fraction) {
            Some(fraction) => self.fleet_guard = Some(fraction),
            None => {
                self.error.passes(Err(ConfigError::new(
                    "SharedCache::fleet_guard",
                    &fraction.to_string(),
                    Fraction::EXPECTED,
                )));
            }
        }
        self
    }

    /// The key of the fleet's members, for the fleet guard: a hash of process ids to their
    /// last readiness and their configuration's fingerprint. Every configuration under the
    /// prefix writes it; each process counts its own configuration's members.
    #[must_use]
    pub fn fleet_key(&self) -> String {
        format!("{}fleet", self.key_prefix)
    }

    /// The key the entry is stored under.
    #[must_use]
    pub fn entry_key(&self) -> String {
        format!("{}health", self.key_prefix)
    }

    /// The key of the lock a computing process takes.
    #[must_use]
    pub fn lock_key(&self) -> String {
        format!("{}health:lock", self.key_prefix)
    }
}

/// `<hostname>/<pid>`.
pub(crate) fn default_process_id() -> Arc<str> {
    let hostname = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    Arc::from(format!("{hostname}/{}", std::process::id()))
}

impl fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured: a new field does not compile until it is shown or skipped on purpose.
        // The connection is not shown: its Debug holds the password.
        let Self {
            connection,
            target,
            key_prefix,
            ttl,
            lock_expiry,
            process_id,
            nocache_writes,
            fleet_guard,
            error,
        } = self;
        let connection = match connection {
            SharedConnection::Own(_) => "own",
            SharedConnection::Application(_) => "the application's",
        };
        f.debug_struct("SharedCache")
            .field("connection", &connection)
            .field("target", target)
            .field("key_prefix", key_prefix)
            .field("ttl", ttl)
            .field("lock_expiry", lock_expiry)
            .field("process_id", process_id)
            .field("nocache_writes", nocache_writes)
            .field("fleet_guard", &fleet_guard.map(Fraction::as_f64))
            .field("error", error)
            .finish()
    }
}
