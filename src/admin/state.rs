//! What every connection of one admin server shares: the requests are answered with it
//! (`service.rs`, and the page's in `page/`).

use crate::access::KeyDigests;
use crate::config::{Details, NoCache};
use crate::monitor::HealthHandle;

use super::host::HostPolicy;

/// What every connection of one admin server shares.
pub(crate) struct AdminState {
    pub(crate) health: HealthHandle,
    pub(crate) keys: KeyDigests,
    /// Who sees details: this server's setting, else the monitor's.
    pub(crate) details: Details,
    /// Who may bypass the cache: this server's setting, else the monitor's.
    pub(crate) nocache: NoCache,
    /// `/metrics`, rendered once per change of the view.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: crate::metrics::HealthMetrics,
    /// The `Host`/`Origin` allowlist; only on loopback binds.
    pub(crate) hosts: Option<HostPolicy>,
    /// Set once the server closes: the page's update requests it holds answer at once.
    #[cfg(feature = "page")]
    pub(crate) closing: tokio::sync::watch::Sender<bool>,
}
