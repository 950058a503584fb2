//! The shutdown sequence: a signal starts the drain, the drain delay passes, the server's
//! graceful shutdown runs bounded by the drain timeout, and the drain's end is awaited.

use std::future::{Future, IntoFuture, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

use super::{DrainHandle, Drained};
use crate::util::race;

impl DrainHandle {
    /// Runs a server through the whole shutdown sequence, and returns how the drain ended.
    ///
    /// `server` gets the signal to pass to its graceful shutdown (axum's
    /// `with_graceful_shutdown`, tonic's `serve_with_shutdown`, or your own loop with
    /// hyper-util's `GracefulShutdown`): [`shutdown_signal`](Self::shutdown_signal)'s future,
    /// boxed so that its type can be written here. Then:
    ///
    /// 1. SIGTERM or Ctrl-C (or [`start`](DrainHandle::start) from elsewhere) starts the
    ///    drain: readiness, health and pool answer 503 `draining`;
    /// 2. the [drain delay](crate::DrainConfig::delay) passes while requests are still served;
    /// 3. the signal resolves and the server's graceful shutdown begins, bounded by the
    ///    [drain timeout](crate::DrainConfig::timeout): past it, the server future is dropped
    ///    with whatever is still open;
    /// 4. [`drained`](DrainHandle::drained) is awaited, and its result returned. An admin
    ///    server following this drain closes on its own at this point.
    ///
    /// A server that stops by itself before any drain starts the drain (nothing serves any
    /// more) and returns at once.
    ///
    /// ```no_run
    /// # async fn run(listener: tokio::net::TcpListener, app: axum::Router) -> Result<(), Box<dyn std::error::Error>> {
    /// use tower_health::{HealthConfig, HealthMonitor};
    ///
    /// let health = HealthMonitor::spawn(HealthConfig::from_env()?)?;
    /// let drained = health
    ///     .drain()
    ///     .serve(|shutdown| axum::serve(listener, app).with_graceful_shutdown(shutdown))
    ///     .await?;
    /// assert!(drained.is_clean(), "{} requests abandoned", drained.abandoned);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// To run it on a task of its own, hand it axum's server as a future
    /// (`.into_future()`): `tokio::spawn` needs the whole future `Send`, which the compiler
    /// cannot prove through axum's `IntoFuture` and its bounds over every connection's
    /// lifetime (rust-lang/rust#64552), but proves for the future itself:
    ///
    /// ```no_run
    /// # async fn run(listener: tokio::net::TcpListener, app: axum::Router) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::future::IntoFuture;
    ///
    /// # let health = tower_health::HealthMonitor::spawn(Default::default())?;
    /// let drain = health.drain().clone();
    /// let server = tokio::spawn(async move {
    ///     drain
    ///         .serve(|shutdown| {
    ///             axum::serve(listener, app)
    ///                 .with_graceful_shutdown(shutdown)
    ///                 .into_future()
    ///         })
    ///         .await
    /// });
    /// let drained = server.await??;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// What the server returns, as soon as it does.
    pub async fn serve<F, S, E>(&self, server: F) -> Result<Drained, E>
    where
        F: FnOnce(Pin<Box<dyn Future<Output = ()> + Send>>) -> S,
        S: IntoFuture<Output = Result<(), E>>,
    {
        let mut server = pin!(server(Box::pin(self.shutdown_signal())).into_future());
        let mut timeout = pin!(self.timeout_elapsed());
        let finished = poll_fn(|cx| {
            if let Poll::Ready(result) = server.as_mut().poll(cx) {
                return Poll::Ready(Some(result));
            }
            timeout.as_mut().poll(cx).map(|()| None)
        })
        .await;
        match finished {
            Some(Err(error)) => return Err(error),
            Some(Ok(())) if !self.is_draining() => {
                self.start();
                tracing::info!("the server stopped on its own");
                return Ok(Drained {
                    abandoned: self.in_flight(),
                    abandoned_long_lived: self.long_lived_registry().open(),
                    elapsed: Duration::ZERO,
                });
            }
            Some(Ok(())) => {}
            // The timeout's warning, naming what is abandoned, is the drain's own (one line
            // however many wait for it): this says only what the server does about it.
            None => tracing::info!(
                in_flight = self.in_flight(),
                "drain timeout: closing the connections still open"
            ),
        }
        let drained = self.drained().await;
        tracing::info!(
            abandoned = drained.abandoned,
            abandoned_long_lived = drained.abandoned_long_lived,
            elapsed = ?drained.elapsed,
            "server closed"
        );
        Ok(drained)
    }

    /// A future for a server's graceful shutdown: waits for SIGTERM or Ctrl-C (or for the
    /// drain to be started some other way), starts the drain, waits the drain delay, then
    /// resolves so that the server stops accepting connections and lets the open ones finish.
    ///
    /// [`DrainHandle::serve`] runs the whole sequence around it, the bound by the drain
    /// timeout included; use this directly only to write that sequence yourself.
    pub fn shutdown_signal(&self) -> impl Future<Output = ()> + Send + 'static {
        let drain = self.clone();
        async move {
            race(termination_signal(), drain.started()).await;
            drain.start();
            drain.delay_elapsed().await;
            tracing::info!(
                in_flight = drain.in_flight(),
                "drain delay over: shutting the server down"
            );
        }
    }
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM (what Kubernetes sends to stop a pod).
async fn termination_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();

    race(ctrl_c, terminate).await;
    tracing::info!("termination signal received");
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::time::Duration;

    use super::*;
    use crate::DrainConfig;

    /// A bound against hanging, not a measurement.
    const LIMIT: Duration = Duration::from_secs(10);

    fn quick() -> DrainHandle {
        DrainHandle::new(
            DrainConfig::new()
                .delay(Duration::from_millis(10))
                .timeout(Duration::from_millis(200)),
        )
    }

    async fn bounded<F: Future>(future: F) -> F::Output {
        tokio::time::timeout(LIMIT, future)
            .await
            .expect("serve returned")
    }

    #[tokio::test]
    async fn a_started_drain_shuts_the_server_down_after_the_delay() {
        let drain = quick();
        drain.start();
        let drained = bounded(drain.serve(|shutdown| async move {
            shutdown.await;
            Ok::<_, Infallible>(())
        }))
        .await
        .unwrap();
        assert!(drained.is_clean());
        assert!(drained.elapsed >= Duration::from_millis(10), "{drained:?}");
    }

    #[tokio::test]
    async fn a_server_that_ignores_the_signal_is_dropped_at_the_timeout() {
        let drain = quick();
        drain.start();
        let _guard = drain.enter();
        let drained =
            bounded(drain.serve(|_shutdown| std::future::pending::<Result<(), Infallible>>()))
                .await
                .unwrap();
        assert_eq!(
            drained.abandoned, 1,
            "the request still in flight is reported"
        );
    }

    #[tokio::test]
    async fn a_server_error_is_returned_at_once() {
        let drain = quick();
        let error = bounded(drain.serve(|_shutdown| async { Err::<(), _>("bind failed") }))
            .await
            .unwrap_err();
        assert_eq!(error, "bind failed");
        assert!(!drain.is_draining(), "an error is not a drain");
    }

    #[tokio::test]
    async fn a_server_that_stops_by_itself_starts_the_drain() {
        let drain = quick();
        let drained = bounded(drain.serve(|_shutdown| async { Ok::<_, Infallible>(()) }))
            .await
            .unwrap();
        assert!(drained.is_clean());
        assert!(
            drain.is_draining(),
            "nothing serves any more: readiness must say so"
        );
    }
}
