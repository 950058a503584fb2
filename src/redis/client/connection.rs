//! The one multiplexed connection this crate opens to Redis, whatever the topology, made on
//! first use; and the application's connection, whatever its type.

use std::sync::{Arc, Mutex, PoisonError};

use ::redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use ::redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::OnceCell;

use super::{CLIENT_TIMEOUT, Topology, check_error, has_code};
use crate::check::CheckError;

/// A connection made on first use, from within the runtime (making one spawns a task): one
/// multiplexed connection, whoever clones this.
#[derive(Clone)]
pub(crate) struct LazyConnection(Arc<Lazy>);

struct Lazy {
    topology: Topology,
    connection: OnceCell<Connection>,
}

/// A connection of this crate's own: every kind multiplexes, and reconnects by itself.
#[derive(Clone)]
enum Connection {
    /// One server: its `ConnectionManager`, made anew when the server turns replica.
    Single(SingleConnection),
    /// A cluster: one multiplexed connection per node, routed by key slot, following the
    /// cluster's redirections.
    #[cfg(feature = "redis-cluster")]
    Cluster(::redis::cluster_async::ClusterConnection),
    /// The primary the Sentinels name, asked again after a failover.
    #[cfg(feature = "redis-sentinel")]
    Sentinel(super::sentinel::SentinelConnection),
}

impl LazyConnection {
    pub(crate) fn new(topology: Topology) -> Self {
        Self(Arc::new(Lazy {
            topology,
            connection: OnceCell::new(),
        }))
    }

    /// The connection. One server's connects on its first command; a cluster's connects to
    /// a seed node and learns the slots here, once: a failed attempt is reported at once
    /// (no retries) and the next call tries again.
    pub(crate) async fn get(&self) -> Result<AnyConnection, CheckError> {
        let connection = self
            .0
            .connection
            .get_or_try_init(|| connect(&self.0.topology))
            .await?;
        Ok(AnyConnection::new(connection.clone()))
    }

    /// Whether it goes to a Redis Cluster, whose own state a check also asks for.
    pub(crate) fn is_cluster(&self) -> bool {
        match self.0.topology {
            Topology::Single(_) => false,
            #[cfg(feature = "redis-cluster")]
            Topology::Cluster(_) => true,
            #[cfg(feature = "redis-sentinel")]
            Topology::Sentinel(_) => false,
        }
    }
}

/// Asks one node of a Redis Cluster for the cluster's state (`CLUSTER INFO`): `fail` when a
/// slot has no server (a primary is gone and no replica took over), though every node the
/// client still knows answers `PING`.
pub(crate) async fn cluster_state<C: ConnectionLike>(connection: &mut C) -> Result<(), CheckError> {
    let info: String = ::redis::cmd("CLUSTER")
        .arg("INFO")
        .query_async(connection)
        .await
        .map_err(|error| check_error(&error))?;
    let state = info
        .lines()
        .find_map(|line| line.strip_prefix("cluster_state:"))
        .map(str::trim);
    match state {
        Some("ok") => Ok(()),
        Some(state) => Err(CheckError::new(
            crate::check::CheckErrorKind::Refused,
            format!("the cluster's state is {state}: not every slot is served"),
        )),
        None => Err(CheckError::new(
            crate::check::CheckErrorKind::Other,
            "CLUSTER INFO answered without a cluster_state",
        )),
    }
}

async fn connect(topology: &Topology) -> Result<Connection, CheckError> {
    match topology {
        Topology::Single(client) => SingleConnection::new(client.clone())
            .map(Connection::Single)
            .map_err(|error| check_error(&error)),
        #[cfg(feature = "redis-cluster")]
        Topology::Cluster(client) => client
            .get_async_connection()
            .await
            .map(Connection::Cluster)
            .map_err(|error| check_error(&error)),
        #[cfg(feature = "redis-sentinel")]
        Topology::Sentinel(sentinel) => Ok(Connection::Sentinel(sentinel.clone())),
    }
}

/// One server through a `ConnectionManager`, which reconnects to where it was connected.
/// When that server answers `READONLY` (a failover demoted it, and the name or proxy in the
/// URL now leads to the new primary), the manager is made anew: the next command connects
/// again, through the URL, instead of writing to a replica for good.
#[derive(Clone)]
pub(crate) struct SingleConnection(Arc<SingleState>);

struct SingleState {
    client: ::redis::Client,
    /// The manager in use, numbered: a command that saw `READONLY` replaces only its own.
    current: Mutex<(u64, ConnectionManager)>,
}

impl SingleConnection {
    fn new(client: ::redis::Client) -> ::redis::RedisResult<Self> {
        let manager = manager(&client)?;
        Ok(Self(Arc::new(SingleState {
            client,
            current: Mutex::new((0, manager)),
        })))
    }

    fn current(&self) -> (u64, ConnectionManager) {
        self.0
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// After the answer to a command sent on manager `number`: a `READONLY` (an error, or a
    /// server error among the values, as the manager hands them over) makes a new one.
    fn after(&self, number: u64, readonly: bool) {
        if !readonly {
            return;
        }
        let mut current = self
            .0
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if current.0 == number
            && let Ok(manager) = manager(&self.0.client)
        {
            *current = (number + 1, manager);
            tracing::debug!("the Redis server answered READONLY: the next command connects again");
        }
    }
}

/// Whether `value` is the server's `READONLY` error.
fn is_readonly(value: &Value) -> bool {
    matches!(value, Value::ServerError(error) if error.code() == "READONLY")
}

fn manager(client: &::redis::Client) -> ::redis::RedisResult<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(0)
        .set_connection_timeout(Some(CLIENT_TIMEOUT))
        .set_response_timeout(Some(CLIENT_TIMEOUT));
    ConnectionManager::new_lazy_with_config(client.clone(), config)
}

impl ConnectionLike for SingleConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (number, mut manager) = self.current();
            let result = manager.req_packed_command(cmd).await;
            let readonly = match &result {
                Ok(value) => is_readonly(value),
                Err(error) => has_code(error, "READONLY"),
            };
            self.after(number, readonly);
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (number, mut manager) = self.current();
            let result = manager.req_packed_commands(pipeline, offset, count).await;
            let readonly = match &result {
                Ok(values) => values.iter().any(is_readonly),
                Err(error) => has_code(error, "READONLY"),
            };
            self.after(number, readonly);
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.current().1.get_db()
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(cmd),
            #[cfg(feature = "redis-cluster")]
            Self::Cluster(connection) => connection.req_packed_command(cmd),
            #[cfg(feature = "redis-sentinel")]
            Self::Sentinel(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            #[cfg(feature = "redis-cluster")]
            Self::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
            #[cfg(feature = "redis-sentinel")]
            Self::Sentinel(connection) => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection) => connection.get_db(),
            #[cfg(feature = "redis-cluster")]
            Self::Cluster(connection) => connection.get_db(),
            #[cfg(feature = "redis-sentinel")]
            Self::Sentinel(connection) => connection.get_db(),
        }
    }
}

/// Any connection of the `redis` crate, this crate's own or the application's (a
/// `ConnectionManager`, a `MultiplexedConnection`, a cluster connection), as one type.
pub(crate) struct AnyConnection(Box<dyn ConnectionLike + Send>);

impl AnyConnection {
    pub(crate) fn new<C: ConnectionLike + Send + 'static>(connection: C) -> Self {
        Self(Box::new(connection))
    }
}

impl ConnectionLike for AnyConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.0.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}
