use std::future::Future;

use super::DrainHandle;
use crate::util::race;

impl DrainHandle {
    /// A future for `with_graceful_shutdown`: waits for SIGTERM or Ctrl-C (or for the drain to
    /// be started some other way), starts the drain, waits the drain delay, then resolves so
    /// that the server stops accepting connections and lets the open ones finish.
    ///
    /// ```no_run
    /// # async fn run(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    /// use tower_health::{DrainConfig, DrainHandle};
    ///
    /// let drain = DrainHandle::new(DrainConfig::from_env().expect("valid drain settings"));
    /// let server = axum::serve(listener, app).with_graceful_shutdown(drain.shutdown_signal());
    /// // The graceful shutdown waits for every connection; the drain timeout bounds it.
    /// tokio::select! {
    ///     result = server => result?,
    ///     () = drain.timeout_elapsed() => eprintln!("drain timeout: {} still in flight", drain.in_flight()),
    /// }
    /// # Ok(())
    /// # }
    /// ```
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
