use std::sync::Arc;

use tower_layer::Layer;

use super::Health;
use super::service::HealthState;
use crate::drain::DrainHandle;
use crate::monitor::HealthHandle;

/// Layer that answers the probe paths from a [`HealthHandle`]'s published verdicts and passes
/// every other request to the inner service untouched.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct HealthLayer {
    state: Arc<HealthState>,
}

impl HealthLayer {
    /// Answers the probes with `handle`'s verdicts, on the paths under the configured
    /// [`path_prefix`](crate::HealthConfig::path_prefix).
    pub fn new(handle: HealthHandle) -> Self {
        Self {
            state: HealthState::new(handle, None),
        }
    }

    /// Answers readiness, health and pool with 503 `draining` (and `Retry-After`) once
    /// `drain` has started; liveness and ping keep answering 200.
    ///
    /// Defaults to no drain handle: the probes never report draining.
    pub fn drain(self, drain: DrainHandle) -> Self {
        Self {
            state: HealthState::new(self.state.handle().clone(), Some(drain)),
        }
    }
}

impl<S> Layer<S> for HealthLayer {
    type Service = Health<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Health::with_state(inner, self.state.clone())
    }
}
