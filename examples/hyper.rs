//! The same stack as the `server` example on hyper and hyper-util alone, without axum:
//! tower-health in front of a plain `service_fn`, a graceful shutdown driven by the drain.
//!
//! Run with
//!
//! ```not_rust
//! cargo run --example hyper
//! ```
//!
//! Settings as for the `server` example: `LISTEN_ADDR`, `DATABASE_URL`,
//! `DATABASE_URL_<NAME>`, `TOWER_HEALTH_*` (or `BALDUR_*`), `RUST_LOG`; and `CLIENT_TIMEOUT`
//! (default `10s`): how long a client may take to send a request head, or leave an answer
//! unread, before its connection is closed.
//!
//! This example owns its accept loop, so bounding slow clients is its job: hyper's
//! `header_read_timeout` covers reading. A client that pipelines requests and never reads the
//! answers is another matter: the server's writes wait on its full socket, the server stops
//! reading, and no read timeout sees it. hyper and hyper-util have no setting for that, so
//! [`WriteTimeout`] below (a few lines) fails a write that has made no progress for
//! `CLIENT_TIMEOUT`, which ends the connection. (The crate's admin server and HAProxy agent
//! bound their connections the same way.)

mod common;

use std::convert::Infallible;
use std::error::Error;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::process::ExitCode;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::time::Sleep;
use tower::{ServiceBuilder, service_fn};
use tower_health::DrainLayer;
use tower_health::{HealthLayer, HealthMonitor};

#[tokio::main]
async fn main() -> ExitCode {
    common::run(serve()).await
}

async fn serve() -> Result<(), Box<dyn Error>> {
    common::init_tracing();
    let client_timeout = client_timeout()?;
    let monitor = HealthMonitor::spawn(common::health_config()?)?;
    let drain = monitor.drain().clone();
    let health = HealthLayer::new(&monitor);
    let drain_layer = DrainLayer::new(&drain);

    let app = service_fn(|_request: Request<Incoming>| async {
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
            b"hello from hyper\n",
        ))))
    });
    // The health layer answers every probe (ping included) before the app; the drain layer
    // below it counts the app's requests.
    let service = ServiceBuilder::new()
        .layer(health)
        .layer(drain_layer)
        .service(app);

    let listener = TcpListener::bind(common::listen_addr()).await?;
    tracing::info!("listening on http://{}", listener.local_addr()?);
    drain
        .serve(|shutdown| async move {
            let graceful = GracefulShutdown::new();
            let mut shutdown = pin!(shutdown);
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let (stream, _) = match accepted {
                            Ok(accepted) => accepted,
                            Err(error) => {
                                tracing::warn!(%error, "accept failed");
                                continue;
                            }
                        };
                        if let Err(error) = stream.set_nodelay(true) {
                            tracing::warn!(%error, "cannot set TCP_NODELAY");
                        }
                        let service = TowerToHyperService::new(service.clone());
                        let stream = WriteTimeout::new(TokioIo::new(stream), client_timeout);
                        let connection = hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(client_timeout)
                            .serve_connection(stream, service);
                        let connection = graceful.watch(connection);
                        tokio::spawn(async move {
                            if let Err(error) = connection.await {
                                tracing::debug!(%error, "connection ended with an error");
                            }
                        });
                    }
                    () = &mut shutdown => break,
                }
            }
            // Stop accepting; let the open connections finish (`serve` bounds this by the
            // drain timeout).
            drop(listener);
            graceful.shutdown().await;
            Ok::<_, Infallible>(())
        })
        .await?;
    Ok(())
}

/// `CLIENT_TIMEOUT`, a human duration such as `10s` or `500ms`, from 1 ms to 1 year (the
/// range of tower-health's own durations).
fn client_timeout() -> Result<Duration, Box<dyn Error>> {
    let Ok(value) = std::env::var("CLIENT_TIMEOUT") else {
        return Ok(Duration::from_secs(10));
    };
    let range = Duration::from_millis(1)..=Duration::from_secs(31_557_600);
    match humantime::parse_duration(&value) {
        Ok(timeout) if range.contains(&timeout) => Ok(timeout),
        Ok(_) => Err(format!("CLIENT_TIMEOUT={value:?}: expected from 1ms to 1year").into()),
        Err(error) => Err(format!("CLIENT_TIMEOUT={value:?}: {error}").into()),
    }
}

/// A connection whose writes (and flushes, and its shutdown) fail with `TimedOut` after
/// waiting `timeout` on the client without any progress; any progress starts the wait over,
/// so a client that reads, however slowly, keeps its connection. Reads pass through.
struct WriteTimeout<IO> {
    io: IO,
    timeout: Duration,
    /// Armed by the first write that waits, dropped by the next one that completes.
    stall: Option<Pin<Box<Sleep>>>,
}

impl<IO> WriteTimeout<IO> {
    fn new(io: IO, timeout: Duration) -> Self {
        Self {
            io,
            timeout,
            stall: None,
        }
    }

    /// Passes a completed write through (ending any wait), and times one that waits.
    fn timed<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stall = None;
            return poll;
        }
        let timeout = self.timeout;
        let stall = self
            .stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::ErrorKind::TimedOut.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<IO: Read + Unpin> Read for WriteTimeout<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: Write + Unpin> Write for WriteTimeout<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        self.timed(cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_flush(cx);
        self.timed(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_shutdown(cx);
        self.timed(cx, poll)
    }
}
