//! The application's own services: names it sets, served beside the crate's.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;
use tonic::server::NamedService;

use super::ServingStatus;
use crate::dialect::grpc::{AppStatuses, is_reserved};

/// Sets the status of the application's own services in a
/// [`HealthService`](super::HealthService), as tonic-health's `HealthReporter` does.
///
/// The names `""`, `database/<name>`, `component/<name>` and `group/<name>` are the crate's
/// (readiness, the databases, the components, the health groups) and cannot be set: setting
/// one changes nothing and returns `false`. Like every other service, the application's
/// answer `NOT_SERVING` once the drain has started, whatever was set.
///
/// Get one with [`HealthService::reporter`](super::HealthService::reporter). Cheap to clone.
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct HealthReporter {
    statuses: Arc<watch::Sender<AppStatuses>>,
}

impl HealthReporter {
    pub(crate) fn new(statuses: Arc<watch::Sender<AppStatuses>>) -> Self {
        Self { statuses }
    }

    /// Sets the status of the service `name`, adding it if it is new. This notifies every
    /// watcher of that name if its status changed. Returns `true`, or `false` when `name` is
    /// one of the crate's (`""`, or starting with `database/`, `component/` or `group/`): those are
    /// left as they are, and a warning is logged. To take the whole process out of
    /// rotation, use [`HealthHandle::hold`](crate::HealthHandle::hold).
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; `false` only for a name the crate reserves"
    )]
    pub fn set_service_status(&self, name: impl AsRef<str>, status: ServingStatus) -> bool {
        let name = name.as_ref();
        if is_reserved(name) {
            tracing::warn!(
                service = name,
                "the gRPC health service is tower-health's own; its status was not set: pick another name"
            );
            return false;
        }
        self.statuses.send_if_modified(|statuses| {
            if statuses.get(name) == Some(&status) {
                return false;
            }
            Arc::make_mut(statuses).insert(name.into(), status);
            true
        });
        true
    }

    /// Sets the status of the service `S` (its [`NamedService::NAME`]) to `Serving`. Returns
    /// what [`set_service_status`](Self::set_service_status) returns.
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; `false` only for a name the crate reserves"
    )]
    pub fn set_serving<S: NamedService>(&self) -> bool {
        self.set_service_status(S::NAME, ServingStatus::Serving)
    }

    /// Sets the status of the service `S` (its [`NamedService::NAME`]) to `NotServing`.
    /// Returns what [`set_service_status`](Self::set_service_status) returns.
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; `false` only for a name the crate reserves"
    )]
    pub fn set_not_serving<S: NamedService>(&self) -> bool {
        self.set_service_status(S::NAME, ServingStatus::NotServing)
    }

    /// Removes the service `name`: `Check` answers `NOT_FOUND` for it again, and its watchers
    /// get `SERVICE_UNKNOWN`. Returns whether it was there.
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; the result is informational"
    )]
    pub fn clear_service_status(&self, name: &str) -> bool {
        self.statuses.send_if_modified(|statuses| {
            if !statuses.contains_key(name) {
                return false;
            }
            Arc::make_mut(statuses).remove(name);
            true
        })
    }
}

impl fmt::Debug for HealthReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { statuses } = self;
        f.debug_struct("HealthReporter")
            .field("statuses", &**statuses.borrow())
            .finish()
    }
}
