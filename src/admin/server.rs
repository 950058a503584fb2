use std::convert::Infallible;
use std::fmt;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::AdminConfig;
use super::host::HostPolicy;
use super::service::AdminState;
use crate::config::ConfigError;
use crate::io::{StallWatch, WriteTimeout};
use crate::monitor::HealthHandle;
use crate::side_port::{Activity, Eviction, OpenConnections};
use crate::util::race;

/// How long open connections get to finish when the server closes.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// How long a new connection keeps its place without a request head, whoever else connects.
/// Long enough for a client on a loaded machine to write its request after connecting; short
/// enough that clients which never write give their places up quickly (all of them every
/// 100 ms: 640 a second at the default 64). Without the grace, clients that reconnect as soon
/// as they are closed would cycle the places faster than a probe can write its head
/// (tests/it/admin.rs `silent_clients_that_reconnect_cannot_keep_the_probes_out`).
const HEAD_GRACE: Duration = Duration::from_millis(100);

/// Which connection gives its place up at the limit: an idle keep-alive connection goes at
/// once, as between requests its client has nothing in flight.
const EVICTION: Eviction = Eviction {
    server: "admin server",
    before_answer: HEAD_GRACE,
    after_answer: Duration::ZERO,
};

/// How often a server started before the monitor had a drain looks for one.
const DRAIN_LOOKUP_INTERVAL: Duration = Duration::from_millis(100);

/// The admin server: the probes on a port of their own, for any process (an HTTP app, a
/// worker with no HTTP at all).
///
/// See the [module docs](super) for an example.
#[derive(Debug)]
#[must_use]
pub struct AdminServer {
    config: AdminConfig,
    health: HealthHandle,
}

/// Why the admin server did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum AdminError {
    /// A setter of the [`AdminConfig`] was given a value it cannot take, or the settings do
    /// not fit together (a non-loopback bind without an operator key, say).
    Config(ConfigError),
    /// The address could not be bound.
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(error) => write!(f, "admin server: {error}"),
            Self::Bind { addr, source } => write!(f, "admin server: cannot bind {addr}: {source}"),
        }
    }
}

impl std::error::Error for AdminError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(error) => Some(error),
            Self::Bind { source, .. } => Some(source),
        }
    }
}

impl AdminServer {
    /// An admin server answering from the verdicts of `health`'s monitor (started once with
    /// [`HealthMonitor::spawn`](crate::HealthMonitor::spawn), and read by the layers too). It
    /// follows the monitor's drain, if one is attached (see [`HealthHandle::follow_drain`]).
    pub fn new(config: AdminConfig, health: &HealthHandle) -> Self {
        Self {
            config,
            health: health.clone(),
        }
    }

    /// Checks the settings, binds, and starts serving in a task of its own.
    ///
    /// # Errors
    ///
    /// When a setter of the [`AdminConfig`] was given a value it cannot take (the first one,
    /// naming the setter), the settings do not fit together (a non-loopback bind without an
    /// operator key, say), or the address cannot be bound.
    pub async fn start(self) -> Result<AdminHandle, AdminError> {
        let config = self.config;
        config.validate().map_err(AdminError::Config)?;
        let addr = SocketAddr::new(config.bind.value, config.port);
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| AdminError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| AdminError::Bind { addr, source })?;
        let keys = config.keys.digests();
        let hosts = addr
            .ip()
            .is_loopback()
            .then(|| HostPolicy::new(addr.ip(), local_addr.port(), &config.allowed_hosts));
        tracing::info!(%local_addr, authentication = keys.enabled(), "admin server listening");
        if !addr.ip().is_loopback() {
            // The server speaks plain HTTP: off loopback, its keys cross the network in clear.
            tracing::warn!(
                %local_addr,
                "the admin server is bound off loopback and speaks plain HTTP: its keys travel in clear unless a TLS proxy fronts it"
            );
        }
        let monitor_config = self.health.config();
        let details = config.details.unwrap_or(monitor_config.details);
        let nocache = config.nocache.unwrap_or(monitor_config.nocache);
        let state = Arc::new(AdminState {
            #[cfg(feature = "metrics")]
            metrics: crate::metrics::HealthMetrics::new(&self.health),
            health: self.health,
            keys,
            details,
            nocache,
            hosts,
        });
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, state, stopped, config));
        Ok(AdminHandle {
            local_addr,
            stop,
            task,
        })
    }
}

/// A running admin server. Dropping the handle closes the server, as
/// [`shutdown`](AdminHandle::shutdown) does.
#[must_use = "dropping the handle closes the admin server"]
pub struct AdminHandle {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl AdminHandle {
    /// The address the server is bound to (with the port picked, for port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts closing: no new connections, idle ones closed, open requests given 5 s.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// Waits until the server has closed, after [`shutdown`](AdminHandle::shutdown) or, with
    /// a drain handle, once the drain is over.
    pub async fn closed(self) {
        let Self { stop, task, .. } = self;
        let _ = task.await;
        drop(stop);
    }
}

impl fmt::Debug for AdminHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminHandle")
            .field("local_addr", &self.local_addr)
            .field("closed", &self.task.is_finished())
            .finish()
    }
}

async fn serve(
    listener: TcpListener,
    state: Arc<AdminState>,
    mut stop: watch::Receiver<bool>,
    config: AdminConfig,
) {
    let health = state.health.clone();
    let mut closing = pin!(race(
        async {
            // Closing also when the handle is gone (the channel closes).
            let _ = stop.wait_for(|stop| *stop).await;
        },
        async {
            // The drain may be attached to the monitor after the server started.
            let drain = loop {
                if let Some(drain) = health.drain() {
                    break drain.clone();
                }
                tokio::time::sleep(DRAIN_LOOKUP_INTERVAL).await;
            };
            drain.drained().await;
        },
    ));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut open = OpenConnections::new(EVICTION);
    loop {
        let accepted = poll_fn(|cx| {
            if closing.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            listener.poll_accept(cx).map(Some)
        })
        .await;
        let Some(accepted) = accepted else { break };
        while connections.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "admin server: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if !open.make_room(config.max_connections).await {
            tracing::debug!(
                "admin server: connection limit reached and every connection is being answered; closing a new connection"
            );
            continue;
        }
        let _ = stream.set_nodelay(true);
        let stall = Arc::new(StallWatch::default());
        let io = WriteTimeout::new(stream, config.write_timeout).watched(stall.clone());
        let activity = Arc::new(Activity::new());
        let service = {
            let state = state.clone();
            let activity = activity.clone();
            service_fn(move |request: Request<Incoming>| {
                // From a complete head to a ready answer, the connection keeps its place.
                let answering = activity.answering();
                let response = state.handle(&request);
                async move {
                    let response = response.await;
                    drop(answering);
                    Ok::<_, Infallible>(response)
                }
            })
        };
        // Pipelining depth is bounded in bytes, not requests: hyper reads ahead at most
        // `max_buf_size` and makes the next answer only once the previous one is flushed
        // (`pipeline_flush` stays off, which would let answers pile up unflushed). A client
        // that does not read holds no more than that and the kernel's socket buffers, until
        // the write timeout or an eviction closes it.
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(config.header_timeout)
            .max_buf_size(16 * 1024)
            .serve_connection(TokioIo::new(io), service);
        let connection = graceful.watch(connection);
        let task = connections.spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "admin server: connection ended with an error");
            }
        });
        open.push(task, activity, stall);
    }
    drop(listener);
    if tokio::time::timeout(CLOSE_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "admin server: closing connections still open after 5 s"
        );
    }
    connections.shutdown().await;
    tracing::info!("admin server closed");
}
