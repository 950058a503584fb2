use std::sync::Arc;

use tower_layer::Layer;

use super::Ping;

/// Layer that answers the ping path before the inner service.
///
/// See the [`ping` module](crate::ping) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct PingLayer {
    path: Arc<str>,
    shed_load: bool,
}

impl Default for PingLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl PingLayer {
    /// Answers `/health/ping`.
    pub fn new() -> Self {
        Self {
            path: "/health/ping".into(),
            shed_load: false,
        }
    }

    /// Answers 503 with `Retry-After: 1` to an ordinary request that arrives while the inner
    /// service is not ready, instead of letting it wait (tower's `LoadShed`).
    ///
    /// The probe layers are always ready, so only the one nearest the application sees its
    /// saturation: set this when `PingLayer` is directly above the application (or its
    /// limit); with a [`HealthLayer`](crate::HealthLayer) below it, shed there
    /// ([`HealthLayer::shed_load`](crate::HealthLayer::shed_load)).
    ///
    /// Defaults to off: ordinary requests keep the inner service's backpressure.
    pub fn shed_load(mut self) -> Self {
        self.shed_load = true;
        self
    }

    /// The path to answer; a trailing slash on requests is accepted either way. `PingLayer`
    /// does not read [`HealthConfig::path_prefix`](crate::HealthConfig::path_prefix): with a
    /// custom prefix, set the matching path here (`<prefix>/ping`).
    ///
    /// Defaults to `/health/ping`.
    ///
    /// # Panics
    ///
    /// When `path` does not start with `/`.
    pub fn path(mut self, path: &str) -> Self {
        assert!(path.starts_with('/'), "the ping path must start with '/'");
        let trimmed = path.trim_end_matches('/');
        self.path = if trimmed.is_empty() { "/" } else { trimmed }.into();
        self
    }
}

impl<S> Layer<S> for PingLayer {
    type Service = Ping<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Ping {
            inner,
            path: self.path.clone(),
            shed_load: self.shed_load,
        }
    }
}
