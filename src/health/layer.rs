use tower_layer::Layer;

use super::Health;
use crate::drain::{DrainConfig, DrainHandle, DrainLayer};
use crate::monitor::{HealthHandle, MonitorSource};

/// Layer that answers the probe paths from a monitor's published verdicts and passes every
/// other request to the inner service untouched.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct HealthLayer {
    handle: HealthHandle,
}

impl HealthLayer {
    /// Answers the probes, on the paths under the configured
    /// [`path_prefix`](crate::HealthConfig::path_prefix), from:
    ///
    /// - a [`HealthConfig`](crate::HealthConfig): the layer starts a monitor of its own on the
    ///   current Tokio runtime. The monitor stops when this layer, every service it made and
    ///   every handle on it are gone. Two `HealthLayer::new(config)` calls start two
    ///   monitors, each checking every database.
    /// - a [`HealthHandle`]: the layer reads a monitor that is already running, so that one
    ///   monitor feeds several readers (this layer, the admin server, your own code).
    ///
    /// [`HealthLayer::handle`] returns the handle either way.
    ///
    /// # Panics
    ///
    /// With a `HealthConfig`, when called outside a Tokio runtime (as
    /// `tower::buffer::Buffer::new` does).
    pub fn new(source: impl MonitorSource) -> Self {
        Self {
            handle: source.into_handle(),
        }
    }

    /// The handle on the monitor this layer answers from: its verdicts, subscriptions,
    /// [`mark_started`](HealthHandle::mark_started), and a reader to give the admin server.
    #[must_use]
    pub fn handle(&self) -> &HealthHandle {
        &self.handle
    }

    /// Answers readiness, health and pool with 503 `draining` (and `Retry-After`) once
    /// `drain` has started; liveness, startup and ping keep answering 200. Every other reader
    /// of the same monitor follows the drain too (see [`HealthHandle::follow_drain`]).
    ///
    /// Defaults to no drain: the probes never report draining.
    ///
    /// # Panics
    ///
    /// When the monitor already follows a different drain.
    pub fn drain(self, drain: impl AsRef<DrainHandle>) -> Self {
        self.handle.follow_drain(drain.as_ref());
        self
    }

    /// A [`DrainLayer`] and its [`DrainHandle`] with the given settings, already followed by
    /// this monitor's readers: the way to get a drain that the probes cannot miss.
    ///
    /// # Panics
    ///
    /// When the monitor already follows a different drain, or under the conditions of
    /// [`DrainHandle::new`].
    pub fn drain_pair(&self, config: DrainConfig) -> (DrainLayer, DrainHandle) {
        let (layer, drain) = DrainLayer::pair(config);
        self.handle.follow_drain(&drain);
        (layer, drain)
    }
}

impl<S> Layer<S> for HealthLayer {
    type Service = Health<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Health::new(inner, self.handle.clone())
    }
}
