//! The one multiplexed connection this crate opens to Redis, whatever the topology, made on
//! first use; and the application's connection, whatever its type.

use std::sync::Arc;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::OnceCell;

use super::{CLIENT_TIMEOUT, Topology, check_error};
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
    /// One server: its `ConnectionManager`.
    Single(ConnectionManager),
    /// A cluster: one multiplexed connection per node, routed by key slot, following the
    /// cluster's redirections.
    #[cfg(feature = "redis-cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
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
    let info: String = redis::cmd("CLUSTER")
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
        Topology::Single(client) => {
            let config = ConnectionManagerConfig::new()
                .set_number_of_retries(0)
                .set_connection_timeout(Some(CLIENT_TIMEOUT))
                .set_response_timeout(Some(CLIENT_TIMEOUT));
            ConnectionManager::new_lazy_with_config(client.clone(), config)
                .map(Connection::Single)
                .map_err(|error| check_error(&error))
        }
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
