//! What starting a server on a side port gives: its handle, or why it did not start.

use std::fmt;
use std::net::SocketAddr;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::ConfigError;

/// A running server on a port of its own: the admin server
/// (`AdminServer::start`, feature `admin`) or the HAProxy agent (`AgentServer::start`,
/// feature `haproxy-agent`). Dropping the handle closes the server, as
/// [`shutdown`](SidePortHandle::shutdown) does.
///
/// See the [module docs](super) for when each closes.
#[must_use = "dropping the handle closes the server"]
pub struct SidePortHandle {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl SidePortHandle {
    pub(super) fn new(
        local_addr: SocketAddr,
        stop: watch::Sender<bool>,
        task: JoinHandle<()>,
    ) -> Self {
        Self {
            local_addr,
            stop,
            task,
        }
    }

    /// The address the server is bound to (with the port picked, for port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts closing: no new connections, idle ones closed; the admin server gives the
    /// requests it is answering 5 s, and the agent closes the connections still open (each
    /// has had its line).
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// Waits until the server has closed: after [`shutdown`](SidePortHandle::shutdown), or,
    /// for the admin server, once the drain its monitor follows is over. (The agent keeps
    /// saying `drain` until it is shut down: an HAProxy that has not asked since the drain
    /// began, which ends at once with nothing in flight, still hears it.)
    pub async fn closed(self) {
        let Self { stop, task, .. } = self;
        let _ = task.await;
        drop(stop);
    }
}

impl fmt::Debug for SidePortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            local_addr,
            stop: _,
            task,
        } = self;
        f.debug_struct("SidePortHandle")
            .field("local_addr", local_addr)
            .field("closed", &task.is_finished())
            .finish()
    }
}

/// Why a server on a side port did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum SidePortError {
    /// A setter of its settings (`AdminConfig`, `AgentConfig`) was given a value it cannot
    /// take, or the settings do not fit together (an admin server bound off loopback without
    /// an operator key, say). The error names the setter or the variable.
    Config(ConfigError),
    /// The address could not be bound.
    Bind {
        /// The server that could not: `admin server` or `haproxy agent`.
        server: &'static str,
        /// The address.
        addr: SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
}

impl fmt::Display for SidePortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(error) => error.fmt(f),
            Self::Bind {
                server,
                addr,
                source,
            } => write!(f, "the {server} cannot bind {addr}: {source}"),
        }
    }
}

impl std::error::Error for SidePortError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(error) => Some(error),
            Self::Bind { source, .. } => Some(source),
        }
    }
}
