//! What readers answer with unless they say otherwise: paths, `?nocache`, details and keys.
//! Each reader ([`HealthLayer`](crate::HealthLayer), the admin server) has the same setters
//! of its own; these are their defaults, for every reader of a monitor.

use super::{ConfigError, Details, HealthConfig, NoCache};
use crate::access::AccessKeys;

impl HealthConfig {
    /// The prefix of the layer's probe paths: `<prefix>`, `<prefix>/live`, `<prefix>/ready`,
    /// `<prefix>/startup`, `<prefix>/pool` and `<prefix>/ping`. A trailing slash is trimmed.
    ///
    /// Defaults to `/health`.
    ///
    /// A `prefix` that does not start with `/`, is only `/`, or has a `?` or `#` is an error
    /// of [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn path_prefix(mut self, prefix: &str) -> Self {
        match validate_prefix(prefix) {
            Ok(prefix) => self.path_prefix = prefix,
            Err(reason) => {
                self.error.passes(Err(ConfigError::new(
                    "HealthConfig::path_prefix",
                    prefix,
                    reason,
                )));
            }
        }
        self
    }
    /// Who may bypass the cache with `?nocache=true` on the health and pool endpoints.
    ///
    /// Defaults to [`NoCache::Allowed`].
    pub fn nocache(mut self, policy: NoCache) -> Self {
        self.nocache = policy;
        self
    }
    /// Whether the layer also answers the Kubernetes-style aliases `/livez` (liveness) and
    /// `/readyz` (readiness), at the root whatever the prefix.
    ///
    /// Defaults to `false`.
    pub fn kubernetes_aliases(mut self, aliases: bool) -> Self {
        self.kubernetes_aliases = aliases;
        self
    }
    /// Who sees details (error text, targets, check details, pool figures, timings) in probe
    /// bodies: the default of every reader of this monitor, which each can override
    /// ([`HealthLayer::details`](crate::HealthLayer::details)). Statuses, error categories
    /// and configured names are shown at every level.
    ///
    /// Defaults to [`Details::Always`].
    pub fn details(mut self, details: Details) -> Self {
        self.details = details;
        self
    }
    /// The keys whose holders see details under [`Details::Authorized`]: the admin keys,
    /// the same the admin server checks. `from_env` reads them from
    /// `TOWER_HEALTH_ADMIN_KEY` and `TOWER_HEALTH_ADMIN_READONLY_KEY` (see [`AccessKeys`]).
    ///
    /// Defaults to none: under `authorized`, nobody sees details.
    pub fn access_keys(mut self, keys: AccessKeys) -> Self {
        self.access_keys = keys;
        self
    }
}

/// `prefix` without trailing slashes, or why it cannot be a path prefix.
pub(crate) fn validate_prefix(prefix: &str) -> Result<String, &'static str> {
    let trimmed = prefix.trim_end_matches('/');
    if !prefix.starts_with('/') || trimmed.is_empty() {
        return Err("the path prefix must start with '/' and not be '/' alone");
    }
    if trimmed.contains(['?', '#']) {
        return Err("the path prefix cannot contain '?' or '#'");
    }
    Ok(trimmed.to_owned())
}
