use tower_layer::Layer;

use super::Health;
use crate::drain::DrainHandle;
use crate::monitor::HealthHandle;

/// Layer that answers the probe paths from a [`HealthHandle`]'s published verdicts and passes
/// every other request to the inner service untouched.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct HealthLayer {
    handle: HealthHandle,
    drain: Option<DrainHandle>,
}

impl HealthLayer {
    /// Answers the probes with `handle`'s verdicts, on the paths under the configured
    /// [`path_prefix`](crate::HealthConfig::path_prefix).
    pub fn new(handle: HealthHandle) -> Self {
        Self {
            handle,
            drain: None,
        }
    }

    /// Answers readiness, health and pool with 503 `draining` (and `Retry-After`) once
    /// `drain` has started; liveness and ping keep answering 200.
    ///
    /// Defaults to no drain handle: the probes never report draining.
    pub fn drain(mut self, drain: DrainHandle) -> Self {
        self.drain = Some(drain);
        self
    }
}

impl<S> Layer<S> for HealthLayer {
    type Service = Health<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let health = Health::new(inner, self.handle.clone());
        match &self.drain {
            Some(drain) => health.drain(drain.clone()),
            None => health,
        }
    }
}
