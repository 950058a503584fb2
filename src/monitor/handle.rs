use std::fmt;
use std::sync::Arc;

pub use super::counters::MonitorStats;
use super::state::MonitorState;
use crate::shutdown::DrainHandle;
use crate::verdict::HealthVerdict;
use crate::view::{View, ViewWatch};

/// A handle on the verdicts a [`HealthMonitor`](crate::HealthMonitor) publishes.
///
/// Cheap to clone; give one to every reader (a [`HealthLayer`](crate::HealthLayer), the admin
/// server, your own code). The monitor stops once every handle, and every layer and service
/// built from one, is gone.
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct HealthHandle {
    pub(super) state: Arc<MonitorState>,
}

impl HealthHandle {
    pub(crate) fn new(state: Arc<MonitorState>) -> Self {
        Self { state }
    }

    /// The monitor itself, for the crate's tests: readers ask the handle.
    #[cfg(test)]
    pub(crate) fn state(&self) -> &Arc<MonitorState> {
        &self.state
    }

    /// Computes a fresh health verdict now, as `?nocache=true` does: bounded by the readiness
    /// timeout, shared with any bypass already in flight, and published.
    ///
    /// Returns `None` only when the computation could not finish (the runtime is shutting
    /// down).
    pub async fn refresh(&self) -> Option<Arc<HealthVerdict>> {
        let fresh = self.state.fresh().fresh().await?;
        Some(fresh.health.verdict.clone())
    }

    /// Takes the pod out of rotation without a drain: readiness answers 503 `not_ready`
    /// with `reason` ("held by the operator: ...") until [`release`](Self::release). Liveness,
    /// startup and ping are untouched, health and pool too. Takes effect at once (readiness
    /// is republished), and is kept by every later round. Placing a hold with another reason
    /// replaces the reason.
    ///
    /// Returns whether anything changed.
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; the result is informational"
    )]
    pub fn hold(&self, reason: &str) -> bool {
        self.state.set_hold(Some(reason.into()))
    }

    /// Releases a [`hold`](Self::hold): readiness answers from the databases again, at once.
    ///
    /// Returns whether a hold was in place.
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; the result is informational"
    )]
    pub fn release(&self) -> bool {
        self.state.set_hold(None)
    }

    /// The reason of the hold in place, if any.
    #[must_use]
    pub fn held(&self) -> Option<Arc<str>> {
        self.state.held()
    }

    /// Whether the monitor is running (its [`run`](crate::HealthMonitor::run) future is being
    /// polled and has not finished).
    #[must_use]
    pub fn is_monitor_running(&self) -> bool {
        self.state.is_monitor_running()
    }

    /// What the monitor has done so far.
    #[must_use]
    pub fn stats(&self) -> MonitorStats {
        self.state.stats()
    }

    /// Declares the application started (migrations run, caches loaded): with
    /// [`HealthConfig::startup_waits_for_mark`](crate::HealthConfig::startup_waits_for_mark),
    /// `/health/startup` answers 503 until this is called and the first readiness round has
    /// completed, then 200 for the rest of the process's life. Without that setting it
    /// changes nothing. Calling it again does nothing.
    pub fn mark_started(&self) {
        if self.state.store.startup.mark() {
            tracing::info!("the application declared itself started");
            self.state.lifecycle_changed(self.state.held());
        }
    }

    /// Whether `/health/startup` answers 200.
    #[must_use]
    pub fn is_started(&self) -> bool {
        self.state.store.startup.is_started()
    }

    /// The monitor's drain, which every reader of it follows (its layers, the admin server,
    /// gRPC, the HAProxy agent, metrics): once it starts, readiness, health and pool answer
    /// 503 `draining`. Made with the monitor from
    /// [`HealthConfig::drain`](crate::HealthConfig::drain); start it with
    /// [`DrainHandle::serve`] (on SIGTERM) or [`DrainHandle::start`], and count the
    /// application's requests in it with [`DrainLayer::new`](crate::DrainLayer::new) below the
    /// [`HealthLayer`](crate::HealthLayer) (`HealthLayer::around` does it for an axum app).
    #[must_use]
    #[inline]
    pub fn drain(&self) -> &DrainHandle {
        self.state.store.drain()
    }

    /// Whether the process means to serve or to leave rotation (a drain, an operator's hold).
    #[inline]
    pub(crate) fn intent(&self) -> crate::view::Intent {
        self.state.store.intent()
    }

    /// The load estimate, in `[0, 1]`: the largest of the requests in flight over
    /// [`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity), the runtime's
    /// lag over its budget and the default database's pool in use over its size (its waiting
    /// checkouts counted), smoothed over about two seconds and sampled ten times a second
    /// by the monitor (see the [HAProxy guide](crate::guide::haproxy#load-feedback)). `None`
    /// when no capacity is set. What the HAProxy agent's weight and the application's ORCA
    /// load reports are made from; never NaN.
    #[must_use]
    pub fn utilization(&self) -> Option<f64> {
        self.load().map(crate::load::Utilization::get)
    }

    /// The load estimate, for the readers that pass it on; `None` when off.
    #[inline]
    pub(crate) fn load(&self) -> Option<crate::load::Utilization> {
        self.state.load.as_ref().map(crate::load::Gauge::load)
    }

    /// Application requests finished per second, server-wide: every response that went
    /// through this monitor's layers ([`HealthLayer`](crate::HealthLayer), with a
    /// [`DrainLayer`](crate::DrainLayer) below or not, and `HealthLayer::around`, feature
    /// `axum`), the crate's own 503s for a shed
    /// or refused request included, probes never. Smoothed over about two seconds as
    /// [`utilization`](Self::utilization) is, from counts the monitor samples ten times a
    /// second; `None` when no capacity is set (nothing is counted then). What the ORCA
    /// report's `rps_fractional` says; never NaN, never negative.
    #[must_use]
    pub fn requests_per_second(&self) -> Option<f64> {
        self.rates().map(|rates| rates.requests)
    }

    /// Of [`requests_per_second`](Self::requests_per_second), those answered with a 5xx
    /// status (a shed request's or a drain's 503 included), per second: what the ORCA
    /// report's `eps` says, and what a weighted round robin penalizes a server for. `None`
    /// when no capacity is set.
    #[must_use]
    pub fn errors_per_second(&self) -> Option<f64> {
        self.rates().map(|rates| rates.errors)
    }

    /// The capacity load feedback counts against; `None` when off.
    #[cfg(feature = "haproxy-agent")]
    pub(crate) fn load_capacity(&self) -> Option<std::num::NonZeroU32> {
        self.state.load.as_ref().map(crate::load::Gauge::capacity)
    }

    /// The request and error rates, for the readers that pass them on; `None` when off.
    pub(crate) fn rates(&self) -> Option<crate::load::Rates> {
        self.state.load.as_ref().map(crate::load::Gauge::rates)
    }

    /// Where an application request on this thread counts itself; `None` when load
    /// feedback is off.
    #[inline]
    pub(crate) fn tally(&self) -> Option<crate::load::Tally> {
        self.state.load.as_ref().map(crate::load::Gauge::tally)
    }

    /// What every reader may know of this monitor beside its verdicts: the names it checks,
    /// the readiness rules, the staleness bounds, the debounce.
    pub(crate) fn known(&self) -> &crate::view::Known {
        &self.state.store.known
    }

    /// Computes (or joins, or reuses within the rate limit) a fresh health and pool verdict,
    /// for `?nocache=true`.
    pub(crate) fn fresh(&self) -> super::fresh::FreshWait {
        self.state.fresh()
    }

    /// Registers what renders each verdict as it is published, unless one is registered
    /// already (the first HTTP reader registers it).
    pub(crate) fn render_with(
        &self,
        render: impl FnOnce() -> Arc<dyn crate::view::published::Prerender>,
    ) {
        self.state.store.render_with(render);
    }

    /// The registered renderer, if any.
    pub(crate) fn registered_render(&self) -> Option<&Arc<dyn crate::view::published::Prerender>> {
        self.state.store.registered_render()
    }

    /// This process's id, when it shares its verdicts through Redis.
    pub(crate) fn process_id(&self) -> Option<Arc<str>> {
        self.state.shared_process_id()
    }

    /// What the readers of this monitor answer on and show, unless each says otherwise.
    pub(crate) fn readers(&self) -> &crate::config::readers::Readers {
        &self.state.config.readers
    }

    /// Every probe's answer now, and the verdicts behind them: what the HTTP layers, the
    /// admin server and metrics answer from (see [`view`](crate::view)).
    #[must_use]
    pub fn view(&self) -> View {
        self.state.store.view()
    }

    /// Where the start is, for the readers that render `/health/startup`.
    pub(crate) fn startup_phase(&self) -> crate::view::StartupPhase {
        self.state.store.startup.phase()
    }

    /// What `probe` answers now, and the verdict it was judged from: the one reading of one
    /// probe (one pointer load), for the crate's readers.
    pub(crate) fn judge(&self, probe: crate::probe::Probe) -> crate::view::Judgement {
        self.state.store.judge(probe)
    }

    /// Follows the [`View`]: wakes on each publication, the drain starting, a hold, the
    /// start, and a verdict going stale.
    #[must_use]
    pub fn watch(&self) -> ViewWatch {
        ViewWatch::new(&self.state.store)
    }
}

/// What the crate's readers ask of a monitor beyond the one reading (never on a probe's
/// path): each is read by the optional reader its docs name, so a build without that reader
/// leaves it unread.
#[allow(
    dead_code,
    reason = "each is read by an optional reader (the admin server, the page, the metrics, the HAProxy agent)"
)]
impl HealthHandle {
    /// What the monitor remembers of each check's last rounds, for `/health/history` and the
    /// operator's page.
    pub(crate) fn histories(&self) -> Vec<super::history::CheckHistory> {
        self.state.histories()
    }

    /// The fleet as this process's fleet guard saw it at its last shared round, for the
    /// operator's page: this process's id, the fraction kept, the members read.
    #[cfg(feature = "redis")]
    pub(crate) fn fleet_seen(
        &self,
    ) -> Option<(std::sync::Arc<str>, f64, Option<crate::redis::FleetSeen>)> {
        self.state.fleet()
    }

    /// How many times what the view is read from has changed: a reader that renders ahead
    /// of time (metrics, the page's updates) renders again when it moves.
    pub(crate) fn generation(&self) -> u64 {
        self.state.store.generation()
    }

    /// The monitor's work so far, for the metrics.
    pub(crate) fn counters(&self) -> &super::counters::Counters {
        &self.state.counters
    }

    /// Failed checks so far, per database or component and category, for the metrics.
    pub(crate) fn check_failures(&self) -> Vec<(Arc<str>, crate::check::CheckErrorKind, u64)> {
        self.state.check_failures()
    }

    /// Every check's flap count, by name, for the metrics.
    pub(crate) fn flaps(&self) -> Vec<(Arc<str>, u32)> {
        self.state.flaps()
    }

    /// Whether `other` is a handle on the same monitor.
    pub(crate) fn same_monitor(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

impl fmt::Debug for HealthHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthHandle")
            .field("config", &self.state.config)
            .field("monitor_running", &self.is_monitor_running())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{DrainConfig, HealthConfig, HealthMonitor};

    #[test]
    fn every_monitor_has_its_drain_made_from_its_configuration() {
        let config = HealthConfig::new().drain(DrainConfig::new().delay(Duration::from_secs(7)));
        let (health, _monitor) = HealthMonitor::new(config).unwrap();
        assert_eq!(health.drain().config().delay, Duration::from_secs(7));
        assert!(
            health.clone().drain().same_drain(health.drain()),
            "every handle on the monitor has the one drain"
        );
        let (other, _monitor) = HealthMonitor::new(HealthConfig::new()).unwrap();
        assert!(
            !other.drain().same_drain(health.drain()),
            "another monitor's is another drain"
        );
    }
}
