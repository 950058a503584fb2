//! What the Redis component and the shared cache share: the URL and the topology it names
//! (one server, a Redis Cluster, a primary found through Sentinel), the target shown (never a
//! password), one lazily made multiplexed connection, and what a Redis error means for a
//! check.

mod connection;
mod error;
mod retry;
#[cfg(feature = "redis-sentinel")]
mod sentinel;
mod topology;

use std::fmt;
use std::time::Duration;

pub(crate) use self::connection::{AnyConnection, LazyConnection, cluster_state};
pub(crate) use self::error::{check_error, error_kind, has_code};
pub(crate) use self::retry::{Command, query};
pub(crate) use self::topology::{Topology, parse, single_target};

/// How long a connection this crate opens to Redis may take to connect, and to answer one
/// command. The monitor's deadline cuts a round short well before.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// A Redis URL that cannot be used; its message never holds a password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InvalidRedisUrl(String);

impl InvalidRedisUrl {
    /// Why, redacted: a message may quote the URL.
    fn new(message: impl AsRef<str>) -> Self {
        Self(crate::redact(message.as_ref()))
    }
}

impl fmt::Display for InvalidRedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidRedisUrl {}
