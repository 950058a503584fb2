use std::sync::Arc;

use tower_layer::Layer;

use super::Health;
use super::reader::Reader;
use crate::access::AccessKeys;
use crate::config::HealthConfig;
use crate::config::{Details, NoCache};
use crate::monitor::HealthHandle;

/// Layer that answers the probe paths from a monitor's published verdicts and passes every
/// other request to the inner service untouched.
///
/// It answers on the monitor's paths
/// ([`HealthConfig::path_prefix`](crate::HealthConfig::path_prefix),
/// [`kubernetes_aliases`](crate::HealthConfig::kubernetes_aliases) and, feature `metrics`,
/// `metrics_path`). Its other settings (`?nocache` policy, who sees details, keys, shedding)
/// are its own: they default to the monitor's [`HealthConfig`](crate::HealthConfig), and two
/// layers of one monitor (an internet-facing port and an internal one, say) can differ.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct HealthLayer {
    reader: Arc<Reader>,
}

impl HealthLayer {
    /// Answers the probes, on the paths under the configured
    /// [`path_prefix`](crate::HealthConfig::path_prefix), from one monitor's verdicts:
    ///
    /// - given a [`HealthConfig`](crate::HealthConfig), the layer starts that
    ///   configuration's monitor on the current Tokio runtime, as
    ///   [`HealthMonitor::spawn`](crate::HealthMonitor::spawn) does, and
    ///   [`handle`](Self::handle) hands it to every other reader (the admin server, gRPC,
    ///   metrics, your own code): `.layer(HealthLayer::new(config))`;
    /// - given a [`HealthHandle`] (or `&HealthHandle`), it answers from that monitor, which
    ///   it shares with the handle's other readers.
    ///
    /// Either way the databases are checked once, however many readers answer: give the
    /// other readers this layer's [`handle`](Self::handle), never the configuration again
    /// (each configuration given to `new` starts a monitor of its own).
    ///
    /// # Panics
    ///
    /// Given a configuration, when a setter of it was given a value it cannot take (the
    /// message names the setter, as [`HealthMonitor::new`](crate::HealthMonitor::new)'s
    /// error does), and when called outside a Tokio runtime, as `tokio::spawn` does: a
    /// configuration the layer cannot serve is a mistake to fix before the service runs, as
    /// tower-http's `CorsLayer` treats rules it cannot use. To handle the error instead,
    /// start the monitor with [`HealthMonitor::spawn`](crate::HealthMonitor::spawn) and
    /// give its handle here.
    pub fn new(health: impl IntoHealthHandle) -> Self {
        Self {
            reader: Arc::new(Reader::new(health.into_health_handle())),
        }
    }

    /// A handle on the monitor this layer answers from: its verdicts, its
    /// [`view`](HealthHandle::view), [`mark_started`](HealthHandle::mark_started), and a
    /// reader to give the admin server. Yours to move (into a warm-up task, say).
    #[must_use]
    pub fn handle(&self) -> HealthHandle {
        self.reader.handle.clone()
    }

    /// Who may bypass the cache with `?nocache=true` on health and pool:
    /// [`NoCache::Authorized`] means holders of an admin key (see
    /// [`access_keys`](Self::access_keys)), and so does [`NoCache::Allowed`] once keys are
    /// set, as on the admin server.
    ///
    /// Defaults to the monitor's [`HealthConfig::nocache`](crate::HealthConfig::nocache)
    /// ([`NoCache::Allowed`]).
    pub fn nocache(mut self, policy: NoCache) -> Self {
        Arc::make_mut(&mut self.reader).set_own(|own| own.nocache = Some(policy));
        self
    }

    /// Who sees details (the redacted error text, targets, check details, pool figures,
    /// timings) in this layer's bodies. Statuses, error categories and configured names are
    /// shown at every level. [`Details::Never`] is for a port reachable from the internet.
    ///
    /// Defaults to the monitor's [`HealthConfig::details`](crate::HealthConfig::details)
    /// ([`Details::Always`]).
    pub fn details(mut self, details: Details) -> Self {
        Arc::make_mut(&mut self.reader).set_own(|own| own.details = Some(details));
        self
    }

    /// The keys whose holders see details under [`Details::Authorized`] and may bypass under
    /// [`NoCache::Authorized`].
    ///
    /// Defaults to the monitor's
    /// [`HealthConfig::access_keys`](crate::HealthConfig::access_keys) (from
    /// `TOWER_HEALTH_ADMIN_KEY` and `TOWER_HEALTH_ADMIN_READONLY_KEY` with `from_env`).
    ///
    /// Keys that are not usable (shorter than 16 characters, not printable ASCII, a read-only
    /// key alone or equal to the operator key) are not taken: the layer then holds no key at
    /// all, so that nobody gets in with a weak one, and logs why at error level.
    pub fn access_keys(mut self, keys: &AccessKeys) -> Self {
        let keys = match keys.validate() {
            Ok(()) => keys,
            Err(error) => {
                tracing::error!(%error, "HealthLayer::access_keys: keys refused; this layer holds none");
                &AccessKeys::new()
            }
        };
        let keys = keys.clone();
        Arc::make_mut(&mut self.reader).set_own(|own| own.keys = Some(keys));
        self
    }

    /// Answers 503 with `Retry-After: 1` to an application request that arrives while the
    /// inner service is not ready, instead of letting it wait (tower's `LoadShed`). Probes
    /// are answered either way.
    ///
    /// The one place shedding is set: the axum stack (`around`, feature `axum`) takes it, and
    /// under `ServiceBuilder` it sheds with a [`DrainLayer`](crate::DrainLayer) below this
    /// layer (which passes the application's readiness on) and a
    /// [`PingLayer`](crate::PingLayer) above it. Not with a `PingLayer` below it: the probe
    /// layers are always ready, so that one would hide the application's readiness from this
    /// layer, which would never shed (and this layer answers the ping itself).
    ///
    /// Defaults to off: application requests keep the inner service's backpressure.
    pub fn shed_load(mut self) -> Self {
        Arc::make_mut(&mut self.reader).shed_load = true;
        self
    }

    /// What answers the probes, for the fused axum stack.
    #[cfg(feature = "axum")]
    pub(crate) fn reader(&self) -> &Arc<Reader> {
        &self.reader
    }
}

/// What [`HealthLayer::new`] answers from: a [`HealthConfig`], whose monitor the layer
/// starts, or a [`HealthHandle`] on a monitor already started.
///
/// Sealed: implemented for those types only. Public in a private module, and so not
/// nameable: it is `new`'s bound alone, which `new`'s docs spell out.
pub trait IntoHealthHandle: sealed::Sealed {}

impl IntoHealthHandle for HealthConfig {}
impl IntoHealthHandle for HealthHandle {}
impl IntoHealthHandle for &HealthHandle {}

mod sealed {
    use crate::HealthConfig;
    use crate::monitor::HealthHandle;

    pub trait Sealed {
        /// The handle on the monitor to answer from, started here for a configuration.
        fn into_health_handle(self) -> HealthHandle;
    }

    impl Sealed for HealthConfig {
        fn into_health_handle(self) -> HealthHandle {
            crate::HealthMonitor::spawn(self).unwrap_or_else(|error| {
                panic!("HealthLayer::new: {error} (HealthMonitor::spawn returns this as an error)")
            })
        }
    }

    impl Sealed for HealthHandle {
        fn into_health_handle(self) -> HealthHandle {
            self
        }
    }

    impl Sealed for &HealthHandle {
        fn into_health_handle(self) -> HealthHandle {
            self.clone()
        }
    }
}

impl<S> Layer<S> for HealthLayer {
    type Service = Health<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Health::with_reader(inner, self.reader.clone())
    }
}
