//! The `grpc.health.v1.Health` service, answered from a monitor's view.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;
use tonic::codegen::BoxStream;
use tonic::{Request, Response, Status};

use super::pb::health_server::{Health, HealthServer};
use super::pb::{HealthCheckRequest, HealthCheckResponse, HealthListRequest, HealthListResponse};
use super::shared::Shared;
use super::watch::WatchStream;
use super::{HealthReporter, ServingStatus};
use crate::dialect::grpc::{AppStatuses, MAX_LISTED, Services};
use crate::monitor::HealthHandle;
use crate::probe::Probe;

/// `grpc.health.v1.Health` (`Check`, `Watch` and `List`), answered from the same
/// [view](crate::view) as the HTTP probes: it reads what the monitor published and never runs
/// a check.
///
/// Add it to a tonic server with [`server`](Self::server). The services it answers for are in
/// the [module docs](super#services).
///
/// # Streams and the shutdown
///
/// `Watch` streams end when the server's graceful shutdown begins, so that they never hold it
/// open: when the [drain delay](crate::DrainConfig::delay) of the monitor's drain has
/// passed (the moment [`DrainHandle::serve`](crate::DrainHandle::serve) begins the shutdown),
/// or at [`close_streams`](Self::close_streams), whichever comes first. A client sees its
/// stream end with `OK`, and retries elsewhere, as the protocol asks.
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct HealthService {
    shared: Arc<Shared>,
}

impl HealthService {
    /// Answers from the verdicts of `health`'s monitor (started once with
    /// [`HealthMonitor::spawn`](crate::HealthMonitor::spawn), and read by the HTTP layers too).
    #[must_use]
    pub fn new(health: &HealthHandle) -> Self {
        Self {
            shared: Arc::new(Shared {
                handle: health.clone(),
                app: Arc::new(watch::Sender::new(AppStatuses::default())),
                closed: watch::Sender::new(false),
            }),
        }
    }

    /// The service to add to a tonic server (`Server::builder().add_service(..)`).
    #[must_use]
    pub fn server(self) -> HealthServer<Self> {
        HealthServer::new(self)
    }

    /// A handle that sets the application's own services.
    #[must_use]
    pub fn reporter(&self) -> HealthReporter {
        HealthReporter::new(self.shared.app.clone())
    }

    /// The handle on the monitor this service answers from.
    #[must_use]
    pub fn handle(&self) -> &HealthHandle {
        &self.shared.handle
    }

    /// Ends every `Watch` stream of this service (and its clones) now; a later `Watch` sends
    /// the status and ends. For a server whose graceful shutdown does not come from
    /// [`DrainHandle::serve`](crate::DrainHandle::serve): call it when its shutdown begins.
    pub fn close_streams(&self) {
        self.shared.closed.send_replace(true);
    }

    /// What `Check` answers for `service` now; `None` for a name no service has
    /// (`NOT_FOUND`).
    #[must_use]
    pub fn status(&self, service: &str) -> Option<ServingStatus> {
        if service.is_empty() {
            // The overall status, which load balancers ask for on every check: readiness's
            // verdict judged alone (a pointer load and a clock reading), by the rule the whole
            // view follows.
            let handle = &self.shared.handle;
            let judgement = handle.judge(Probe::Ready);
            return Some(ServingStatus::of_judged(
                judgement.condition,
                judgement.passing,
                handle.is_monitor_running(),
            ));
        }
        self.with_services(|services| services.status(service))
    }

    /// Every service and its status now, by name: what `List` answers.
    #[must_use]
    pub fn statuses(&self) -> BTreeMap<String, ServingStatus> {
        self.with_services(|services| services.all())
    }

    fn with_services<T>(&self, read: impl FnOnce(&Services<'_>) -> T) -> T {
        let view = self.shared.handle.view();
        let app = self.shared.app.borrow();
        read(&Services {
            view: &view,
            known: self.shared.handle.known(),
            app: &app,
            debounced_at: None,
        })
    }
}

#[tonic::async_trait]
impl Health for HealthService {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = &request.get_ref().service;
        match self.status(service) {
            Some(status) => Ok(Response::new(status.into())),
            None => Err(Status::not_found(unknown_service(service))),
        }
    }

    async fn list(
        &self,
        _request: Request<HealthListRequest>,
    ) -> Result<Response<HealthListResponse>, Status> {
        let statuses = self.statuses();
        if statuses.len() > MAX_LISTED {
            return Err(Status::resource_exhausted(format!(
                "{} services, more than the {MAX_LISTED} List may return",
                statuses.len()
            )));
        }
        let statuses = statuses
            .into_iter()
            .map(|(name, status)| (name, status.into()))
            .collect();
        Ok(Response::new(HealthListResponse { statuses }))
    }

    type WatchStream = BoxStream<HealthCheckResponse>;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let service = request.into_inner().service;
        Ok(Response::new(Box::pin(WatchStream::new(
            self.shared.clone(),
            service,
        ))))
    }
}

/// The most characters of a requested name that `NOT_FOUND` echoes. A client may ask for a
/// name of any length (up to the message size limit, 4 MiB by default), and the status
/// message travels in the `grpc-message` header: echoed whole, a long name would make an
/// answer of megabytes that the client's header limit refuses.
const MAX_ECHOED_NAME: usize = 64;

/// `unknown service "name"`, with a name longer than [`MAX_ECHOED_NAME`] characters cut there
/// and followed by `...` and its length.
fn unknown_service(service: &str) -> String {
    match service.char_indices().nth(MAX_ECHOED_NAME) {
        None => format!("unknown service {service:?}"),
        Some((cut, _)) => format!(
            "unknown service {:?}... ({} bytes)",
            &service[..cut],
            service.len()
        ),
    }
}

impl fmt::Debug for HealthService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Shared {
            handle,
            app,
            closed,
        } = &*self.shared;
        f.debug_struct("HealthService")
            .field("handle", handle)
            .field("application_statuses", &**app.borrow())
            .field("streams_closed", &*closed.borrow())
            .finish()
    }
}
