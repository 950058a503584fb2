use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpStream;

use super::AdminConfig;
use super::host::HostPolicy;
use super::state::AdminState;
use crate::monitor::HealthHandle;
use crate::side_port::{Activity, Serve, SidePortError, SidePortHandle, WriteTimeout};

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

impl AdminServer {
    /// An admin server answering from the verdicts of `health`'s monitor (started once with
    /// [`HealthMonitor::spawn`](crate::HealthMonitor::spawn), and read by the layers too). It
    /// follows the monitor's drain ([`HealthHandle::drain`]).
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
    pub async fn start(self) -> Result<SidePortHandle, SidePortError> {
        let Self { config, health } = self;
        let listening = config.side_port.listen().await?;
        let local_addr = listening.local_addr;
        let hosts = local_addr
            .ip()
            .is_loopback()
            .then(|| HostPolicy::new(local_addr.ip(), local_addr.port(), &config.allowed_hosts));
        // Each verdict is rendered once, as it is published, from now on.
        crate::http::render::attach(&health);
        let shown = config.side_port.shown(&health.readers().shown);
        let state = Arc::new(AdminState {
            #[cfg(feature = "metrics")]
            metrics: crate::metrics::HealthMetrics::new(&health),
            health: health.clone(),
            keys: shown.keys.digests(),
            details: shown.details,
            nocache: shown.nocache,
            hosts,
            #[cfg(feature = "page")]
            closing: tokio::sync::watch::Sender::new(false),
        });
        let connections = Connections {
            state,
            header_timeout: config.header_timeout,
            graceful: GracefulShutdown::new(),
        };
        Ok(crate::side_port::spawn(
            listening,
            &config.side_port,
            health,
            connections,
        ))
    }
}

/// The admin server's connections: HTTP/1.1, each request answered by [`AdminState`].
struct Connections {
    state: Arc<AdminState>,
    header_timeout: Duration,
    graceful: GracefulShutdown,
}

impl Serve for Connections {
    // Inlined where the side port's accept loop calls it, the connection's poll gets tokio's
    // `watch::Receiver::changed` (hyper-util's graceful-shutdown watcher, polled with each
    // request) inlined too: 19 instructions per request on `/readiness` (9,384 without,
    // 9,365 with: `STORM_ONLY=instructions STORM_FILTER=admin`, benches/storm.rs).
    #[inline]
    fn connection(
        &mut self,
        stream: WriteTimeout<TcpStream>,
        activity: Arc<Activity>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let service = {
            let state = self.state.clone();
            service_fn(move |request: Request<Incoming>| {
                // From a complete head to a ready answer, the connection keeps its place.
                let answering = activity.answering();
                let response = state.handle(&request, &activity);
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
            .header_read_timeout(self.header_timeout)
            .max_buf_size(16 * 1024)
            .serve_connection(TokioIo::new(stream), service);
        let connection = self.graceful.watch(connection);
        async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "admin server: connection ended with an error");
            }
        }
    }

    /// Idle connections are closed, and answers under way finished (the page's update
    /// requests, which wait for a change, at once).
    fn finish(self) -> impl Future<Output = ()> + Send {
        #[cfg(feature = "page")]
        self.state.closing.send_replace(true);
        self.graceful.shutdown()
    }
}
