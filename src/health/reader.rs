//! What one [`HealthLayer`](super::HealthLayer) answers with: the monitor's handle and the
//! layer's own settings (paths, `?nocache` policy, who sees details), which default to the
//! monitor's configuration and can differ between two layers of one monitor.

use http::HeaderMap;

use crate::access::{AccessKeys, KeyDigests};
use crate::config::{Details, NoCache};
use crate::monitor::HealthHandle;
use crate::probe::ProbePaths;
use crate::verdict::Audience;

/// Shared by the layer and every service it makes, behind one `Arc`: one reference count per
/// request, as the handle alone cost.
#[derive(Clone, Debug)]
pub(crate) struct Reader {
    pub(crate) handle: HealthHandle,
    pub(crate) prefix: String,
    pub(crate) kubernetes_aliases: bool,
    pub(crate) paths: ProbePaths,
    pub(crate) nocache: NoCache,
    pub(crate) details: Details,
    pub(crate) keys: KeyDigests,
    /// The opt-in metrics path and its exposition; `None` (the default) answers nothing.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<(Box<str>, crate::metrics::HealthMetrics)>,
}

impl Reader {
    /// The settings of the monitor's configuration.
    pub(crate) fn new(handle: HealthHandle) -> Self {
        let config = handle.config();
        let prefix = config.path_prefix.clone();
        let kubernetes_aliases = config.kubernetes_aliases;
        Self {
            paths: ProbePaths::new(&prefix, kubernetes_aliases),
            prefix,
            kubernetes_aliases,
            nocache: config.nocache,
            details: config.details,
            keys: config.access_keys.digests(),
            #[cfg(feature = "metrics")]
            metrics: None,
            handle,
        }
    }

    pub(crate) fn set_paths(&mut self, prefix: String, kubernetes_aliases: bool) {
        self.paths = ProbePaths::new(&prefix, kubernetes_aliases);
        self.prefix = prefix;
        self.kubernetes_aliases = kubernetes_aliases;
    }

    pub(crate) fn set_keys(&mut self, keys: &AccessKeys) {
        self.keys = keys.digests();
    }

    /// Whether `path` is the opt-in metrics path.
    #[cfg(feature = "metrics")]
    pub(crate) fn metrics_at(&self, path: &str) -> Option<&crate::metrics::HealthMetrics> {
        self.metrics
            .as_ref()
            .filter(|(at, _)| crate::probe::trim_trailing_slash(path) == &**at)
            .map(|(_, metrics)| metrics)
    }

    /// Who a request is, for the bodies: only `authorized` looks at its credentials (and
    /// only for the probes that carry details).
    pub(crate) fn audience(&self, headers: &HeaderMap) -> Audience {
        match self.details {
            Details::Always => Audience::Full,
            Details::Never => Audience::Minimal,
            Details::Authorized if self.keys.grants_viewer(headers) => Audience::Full,
            Details::Authorized => Audience::Minimal,
        }
    }

    /// Whether a request that asks for `?nocache=true` gets a fresh computation. The
    /// layers know a caller only by its key: `authorized` bypasses for key holders.
    pub(crate) fn bypasses(&self, headers: &HeaderMap) -> bool {
        match self.nocache {
            NoCache::Allowed => true,
            NoCache::Authorized => self.keys.grants_viewer(headers),
            NoCache::Off => false,
        }
    }
}
