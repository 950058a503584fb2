//! What the service, its clones, its reporter and its streams share.

use std::sync::Arc;

use tokio::sync::watch;

use crate::dialect::grpc::AppStatuses;
use crate::monitor::HealthHandle;

/// What the service, its clones, its reporter and its streams share.
pub(crate) struct Shared {
    pub(crate) handle: HealthHandle,
    pub(crate) app: Arc<watch::Sender<AppStatuses>>,
    pub(crate) closed: watch::Sender<bool>,
}
