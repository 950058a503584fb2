//! [`HealthConfig`]'s setters of what the readers answer on and show ([`Readers`]): the
//! layers' paths, and who sees what, which each reader can set for itself (the one rule is
//! [`Shown::for_reader`]).
//!
//! [`Readers`]: super::readers::Readers
//! [`Shown::for_reader`]: super::readers::Shown::for_reader

use super::{ConfigError, Details, HealthConfig, NoCache};
use crate::access::AccessKeys;

/// # The readers
///
/// What the layers and the servers answer on and show. Each is a default: a layer's or a
/// server's own setter overrides it for that reader.
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
            Ok(prefix) => self.readers.prefix = prefix,
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
        self.readers.shown.nocache = policy;
        self
    }
    /// Whether the layer also answers the Kubernetes-style aliases `/livez` (liveness) and
    /// `/readyz` (readiness), at the root whatever the prefix.
    ///
    /// Defaults to `false`.
    pub fn kubernetes_aliases(mut self, aliases: bool) -> Self {
        self.readers.kubernetes_aliases = aliases;
        self
    }
    /// Whether [`HealthLayer`](crate::HealthLayer) and `HealthLayer::around` (feature `axum`)
    /// add
    /// `x-envoy-immediate-health-check-fail: true` to the application's responses while the
    /// process is held ([`HealthHandle::hold`](crate::HealthHandle::hold)) or draining: every
    /// Envoy that routes a request here then takes the host out at once, without waiting
    /// for its next health check (Envoy honours it on clusters with active health checking).
    /// Probe answers never carry it: they say 503 themselves.
    ///
    /// Defaults to `false`: the header names a proxy the application may not sit behind.
    pub fn envoy_immediate_fail(mut self, on: bool) -> Self {
        self.readers.envoy_immediate_fail = on;
        self
    }
    /// Makes every [`HealthLayer`](crate::HealthLayer) of this monitor also answer `GET <path>`
    /// with its Prometheus metrics ([`HealthMetrics`](crate::metrics::HealthMetrics)):
    /// rendered once per round, so a scrape costs what a probe costs and never runs a check.
    /// Under [`Details::Authorized`] (the layer's), only holders of an admin key get them
    /// (others get 401), since they name every database and component. A trailing slash is
    /// trimmed.
    ///
    /// Defaults to none: the application may serve its own `/metrics`. The admin server
    /// serves its `/metrics` whatever this says.
    ///
    /// A `path` that does not start with `/`, is only `/`, or has a `?` or `#` is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics_path(mut self, path: &str) -> Self {
        match validate_path("the metrics path", path) {
            Ok(path) => self.readers.metrics_path = Some(path.into()),
            Err(reason) => {
                self.error.passes(Err(ConfigError::new(
                    "HealthConfig::metrics_path",
                    path,
                    reason,
                )));
            }
        }
        self
    }
    /// Who sees details (error text, targets, check details, pool figures, timings) in probe
    /// bodies: the default of every reader of this monitor, which each can override
    /// ([`HealthLayer::details`](crate::HealthLayer::details)), except the HAProxy agent,
    /// which has its own (`never` unless set). Statuses, error categories and configured names
    /// are shown at every level.
    ///
    /// Defaults to [`Details::Always`].
    pub fn details(mut self, details: Details) -> Self {
        self.readers.shown.details = details;
        self
    }
    /// The keys whose holders see details under [`Details::Authorized`]: the admin keys,
    /// the same the admin server checks. `from_env` reads them from
    /// `TOWER_HEALTH_ADMIN_KEY` and `TOWER_HEALTH_ADMIN_READONLY_KEY` (see [`AccessKeys`]).
    ///
    /// Defaults to none: under `authorized`, nobody sees details.
    ///
    /// Keys that are not usable (shorter than 16 characters, not printable ASCII, a read-only
    /// key alone or equal to the operator key) are an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new), naming the setter, never the key.
    pub fn access_keys(mut self, keys: AccessKeys) -> Self {
        if self.error.passes(keys.validate()) {
            self.readers.shown.keys = keys;
        }
        self
    }
    /// The instance's name, as the operator's page (feature `page`) shows it at its top and in
    /// its title, beside the host, the process id, the version and the uptime: your service's
    /// name, say, with its version (`"chat 1.4.2"`).
    ///
    /// Defaults to the program's name (its executable's file name).
    ///
    /// A `name` that is empty, longer than 100 characters or holds a control character is an
    /// error of [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn instance(mut self, name: &str) -> Self {
        match validate_instance(name) {
            Ok(()) => self.readers.instance = Some(name.into()),
            Err(reason) => {
                self.error.passes(Err(ConfigError::new(
                    "HealthConfig::instance",
                    name,
                    reason,
                )));
            }
        }
        self
    }
}

/// The longest instance name, in characters: a title's worth.
const MAX_INSTANCE: usize = 100;

/// Whether `name` can name the instance: one line of text, of a title's length.
fn validate_instance(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("an instance name cannot be empty".to_owned());
    }
    if name.chars().count() > MAX_INSTANCE {
        return Err(format!(
            "an instance name has at most {MAX_INSTANCE} characters"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("an instance name cannot hold a control character".to_owned());
    }
    Ok(())
}

/// `prefix` without trailing slashes, or why it cannot be a path prefix.
pub(crate) fn validate_prefix(prefix: &str) -> Result<String, String> {
    validate_path("the path prefix", prefix).map(str::to_owned)
}

/// `path` without trailing slashes, or why it cannot be `what` (a path the probe layers
/// answer on): it must start with `/` and hold more than that, and a request's path never
/// holds a query or a fragment.
fn validate_path<'a>(what: &str, path: &'a str) -> Result<&'a str, String> {
    let trimmed = path.trim_end_matches('/');
    if !path.starts_with('/') || trimmed.is_empty() {
        return Err(format!("{what} must start with '/' and not be '/' alone"));
    }
    if trimmed.contains(['?', '#']) {
        return Err(format!("{what} cannot contain '?' or '#'"));
    }
    Ok(trimmed)
}
