//! `Watch`: one stream per call, pushed by the view's changes and the application's, never
//! polled, ended when the server's graceful shutdown begins.

use std::fmt;
use std::future::{Future, pending};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use tokio::sync::watch;

use super::ServingStatus;
use super::pb::HealthCheckResponse;
use super::pb::health_check_response::ServingStatus as WireStatus;
use super::shared::Shared;
use crate::dialect::grpc::{AppStatuses, Services};
use crate::util::race;
use crate::view::{View, ViewWatch};

/// The stream of a `Watch` call: the service's status now, then each change of it. Handed
/// out boxed ([`BoxStream`](tonic::codegen::BoxStream), the `Watch` stream's type), as
/// tonic's generated servers expect; one allocation per call, which lasts as long as the
/// watch.
///
/// It sends only when the status changes; a client that reads slowly gets the status as it
/// is when the stream is next polled, never a queue of past ones. A name no service has
/// reads `SERVICE_UNKNOWN`, and the stream stays open until the service appears. It ends
/// when the server's graceful shutdown begins (see
/// [`HealthService`](super::HealthService#streams-and-the-shutdown)).
pub(crate) struct WatchStream {
    next: Option<NextStatus>,
}

/// The wait for the next status to send, and the watcher to wait with afterwards.
type NextStatus = Pin<Box<dyn Future<Output = Option<(WireStatus, Watcher)>> + Send>>;

impl WatchStream {
    pub(crate) fn new(shared: Arc<Shared>, service: String) -> Self {
        let watcher = Watcher {
            views: shared.handle.watch(),
            apps: shared.app.subscribe(),
            closed: shared.closed.subscribe(),
            shared,
            service,
            view: None,
            sent: None,
        };
        Self {
            next: Some(Box::pin(watcher.next())),
        }
    }
}

impl Stream for WatchStream {
    type Item = Result<HealthCheckResponse, tonic::Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(next) = self.next.as_mut() else {
            return Poll::Ready(None);
        };
        match ready!(next.as_mut().poll(cx)) {
            Some((status, watcher)) => {
                self.next = Some(Box::pin(watcher.next()));
                Poll::Ready(Some(Ok(HealthCheckResponse {
                    status: status.into(),
                })))
            }
            None => {
                self.next = None;
                Poll::Ready(None)
            }
        }
    }
}

impl fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream")
            .field("ended", &self.next.is_none())
            .finish()
    }
}

/// What one stream follows, and what it sent last.
struct Watcher {
    shared: Arc<Shared>,
    service: String,
    views: ViewWatch,
    apps: watch::Receiver<AppStatuses>,
    closed: watch::Receiver<bool>,
    view: Option<View>,
    sent: Option<WireStatus>,
}

impl Watcher {
    /// The next status to send, or `None` once the stream ends (the graceful shutdown has
    /// begun, the service or the monitor is gone).
    async fn next(mut self) -> Option<(WireStatus, Self)> {
        loop {
            if self.view.is_none() {
                // The first call returns the view now, without waiting.
                self.view = Some(self.views.changed().await?);
            }
            let status = self.status();
            if self.sent != Some(status) {
                self.sent = Some(status);
                return Some((status, self));
            }
            if !self.wait().await {
                return None;
            }
        }
    }

    /// The service's status in the last view read and the application's statuses now.
    fn status(&mut self) -> WireStatus {
        let view = self.view.as_ref().expect("read before");
        let apps = self.apps.borrow_and_update();
        let services = Services {
            view,
            known: self.shared.handle.known(),
            app: &apps,
            // A client-side health check acts on the first `NOT_SERVING`: one slow round
            // must not take the backend out through it.
            debounced_at: Some(crate::clock::now()),
        };
        services
            .status(&self.service)
            .map_or(WireStatus::ServiceUnknown, ServingStatus::into)
    }

    /// Waits for a change; `false` when the stream must end instead.
    async fn wait(&mut self) -> bool {
        let Self {
            shared,
            views,
            apps,
            closed,
            view,
            ..
        } = self;
        let drain = shared.handle.drain().clone();
        // Set by either branch that ends the stream (an atomic: the stream is `Send` across awaits).
        let ended = AtomicBool::new(false);
        race(
            race(
                async {
                    match views.changed().await {
                        Some(changed) => *view = Some(changed),
                        None => ended.store(true, Ordering::Relaxed),
                    }
                },
                async {
                    // The sender lives as long as `shared`, which this stream holds.
                    if apps.changed().await.is_err() {
                        pending::<()>().await;
                    }
                },
            ),
            async {
                let closed = async {
                    _ = closed.wait_for(|closed| *closed).await;
                };
                // The moment `DrainHandle::serve` begins the server's graceful shutdown.
                race(closed, drain.delay_elapsed()).await;
                ended.store(true, Ordering::Relaxed);
            },
        )
        .await;
        !ended.load(Ordering::Relaxed)
    }
}
