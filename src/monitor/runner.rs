use std::fmt;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::{MissedTickBehavior, interval};

use super::handle::HealthHandle;
use super::rounds::Cadence;
use super::state::MonitorState;
use super::transitions::log_returned;
use crate::config::{ConfigError, HealthConfig};
use crate::dialect::orca;
use crate::load::{Gauge, Rates, SAMPLE_PERIOD, Smoothed, SmoothedRates, Utilization};
use crate::probe::Probe;
use crate::util::join;
use crate::view::{Condition, ViewWatch};

/// The background task that checks the databases and publishes the verdicts.
///
/// Create it with [`HealthMonitor::new`], which also returns the [`HealthHandle`] the layers
/// read, and spawn [`HealthMonitor::run`]; or do both with [`HealthMonitor::spawn`].
///
/// See the [module docs](super) for an example.
pub struct HealthMonitor {
    shared: Weak<MonitorState>,
}

impl HealthMonitor {
    /// Creates the monitor and the first handle on its verdicts: the one monitor of `config`,
    /// whose handle every reader takes (the layers, the admin server, gRPC, metrics). Until
    /// the first round completes, every verdict is `unavailable` and probes that depend on one
    /// answer 503.
    ///
    /// # Errors
    ///
    /// The first invalid value a setter of `config` was given (its components' and shared
    /// cache's setters included), naming the setter: the setters never fail, this is where
    /// a configuration built in code is checked.
    pub fn new(config: HealthConfig) -> Result<(HealthHandle, Self), ConfigError> {
        config.checked()?;
        let shared = Arc::new(MonitorState::new(config));
        let monitor = Self {
            shared: Arc::downgrade(&shared),
        };
        Ok((HealthHandle::new(shared), monitor))
    }

    /// Creates the monitor, spawns it on the current Tokio runtime, and returns the handle.
    /// Start it once, and give its handle to every reader.
    ///
    /// # Errors
    ///
    /// As [`HealthMonitor::new`]: the first invalid value a setter of `config` was given.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime, as `tokio::spawn` does.
    pub fn spawn(config: HealthConfig) -> Result<HealthHandle, ConfigError> {
        let (handle, monitor) = Self::new(config)?;
        tokio::spawn(monitor.run());
        Ok(handle)
    }

    /// Runs readiness rounds and health rounds, each on its own cadence, until every
    /// [`HealthHandle`] has been dropped.
    ///
    /// No round ends it: a round that panics (in a user's callback, on a malformed input, in
    /// a renderer) is reported as such (readiness `not_ready`, health `error`, cause
    /// `panicked`, logged at error level) and the next round runs on time.
    ///
    /// If this future is dropped (its task aborted, its runtime shut down), the verdicts
    /// become `unavailable` at once, rather than being served as if they were fresh;
    /// liveness keeps answering 200, as it does for any state of the verdicts (see
    /// [Staleness](super#staleness)). Spawned by [`HealthMonitor::spawn`], it runs until its
    /// runtime shuts down: nothing else holds its task.
    pub async fn run(self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        crate::config::log_warnings(shared.config.warnings());
        let readiness_interval = shared.config.readiness_interval;
        let health_interval = shared.config.health_interval;
        #[cfg(feature = "redis")]
        let jitter = shared.shared.is_some();
        shared.spawner.attach_to_current_runtime();
        shared.set_monitor_running(true);
        drop(shared);
        let _running = RunningGuard(self.shared.clone());
        join(
            join(
                every(readiness_interval, &self.shared, |shared| async move {
                    shared.guarded(Cadence::Readiness).await;
                }),
                join(follow_returns(&self.shared), sample_load(&self.shared)),
            ),
            async {
                let health = |shared: Arc<MonitorState>| async move {
                    shared.guarded(Cadence::Health).await;
                };
                #[cfg(feature = "redis")]
                if jitter {
                    return every_jittered(health_interval, &self.shared, health).await;
                }
                every(health_interval, &self.shared, health).await;
            },
        )
        .await;
    }
}

impl fmt::Debug for HealthMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthMonitor").finish_non_exhaustive()
    }
}

/// Runs `round` every `period`, until the shared state is gone.
async fn every<F, Fut>(period: Duration, shared: &Weak<MonitorState>, mut round: F)
where
    F: FnMut(Arc<MonitorState>) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut ticks = interval(period);
    // After a slow round, wait a full period rather than firing the missed ticks in a burst.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        round(shared).await;
    }
}

/// Runs `round` at once, then after a random part of `period` (processes started together
/// spread over the period), then every `period` give or take 10 %, until the shared state is
/// gone: the health rounds of a fleet that shares one verdict (see [`crate::redis`]).
#[cfg(feature = "redis")]
async fn every_jittered<F, Fut>(period: Duration, shared: &Weak<MonitorState>, mut round: F)
where
    F: FnMut(Arc<MonitorState>) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut wait = crate::redis::first_round_phase(period);
    loop {
        let started = tokio::time::Instant::now();
        let Some(state) = shared.upgrade() else {
            return;
        };
        round(state).await;
        tokio::time::sleep_until(started + wait).await;
        wait = crate::redis::next_round_wait(period);
    }
}

/// Logs each return's end as it comes, and writes it to the fleet (the rounds log and write
/// the other changes of readiness as they publish them): the end of a return's delay changes
/// readiness's answer, and no publication marks it. Woken by the view's watch, which wakes at
/// that instant.
async fn follow_returns(shared: &Weak<MonitorState>) {
    let mut views = {
        let Some(state) = shared.upgrade() else {
            return;
        };
        ViewWatch::new(&state.store)
    };
    let mut returning = false;
    while let Some(view) = views.changed().await {
        let ready = view.answer(Probe::Ready);
        if returning && ready.passing && ready.condition == Condition::Verdict {
            let Some(state) = shared.upgrade() else {
                return;
            };
            log_returned(&state.counters, &view.readiness);
            #[cfg(feature = "redis")]
            state.standing_changed().await;
        }
        returning = ready.condition == Condition::Returning;
    }
}

/// Samples the load every [`SAMPLE_PERIOD`] and publishes the smoothed estimate with the
/// smoothed request and error rates, until the shared state is gone; returns at once when no
/// capacity is set (see [`crate::load`]). The runtime's lag is how late its own timer fires.
async fn sample_load(shared: &Weak<MonitorState>) {
    let capacity = match shared.upgrade() {
        Some(state) => match &state.load {
            Some(gauge) => gauge.capacity(),
            None => return,
        },
        None => return,
    };
    let mut ticks = interval(SAMPLE_PERIOD);
    // A late tick is the lag measured: the next one is due a period after it, not at once.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut smoothed = Smoothed::new();
    let mut rates = SmoothedRates::new();
    let mut last = ticks.tick().await;
    // Counting starts here: what came before the first sample is not a rate.
    if let Some(gauge) = shared
        .upgrade()
        .as_ref()
        .and_then(|state| state.load.as_ref())
    {
        rates.update(gauge.totals(), Duration::ZERO);
    }
    loop {
        let due = ticks.tick().await;
        let now = tokio::time::Instant::now();
        let Some(state) = shared.upgrade() else {
            return;
        };
        let Some(gauge) = &state.load else {
            return;
        };
        let requests = state.store.drain().requests_in_flight();
        let lag = now.saturating_duration_since(due);
        // The default database's pool, as `/health/pool` reads it (one short lock, for bb8).
        let pool = state
            .default_index
            .and_then(|index| state.slots[index].pool_stats())
            .map_or(0.0, |stats| crate::load::pool_use(&stats));
        let sample = Utilization::sample(requests, capacity, lag, pool);
        let elapsed = now.saturating_duration_since(last);
        publish(
            gauge,
            smoothed.update(sample, elapsed),
            rates.update(gauge.totals(), elapsed),
        );
        last = now;
    }
}

/// Publishes `utilization` and `rates` with the ORCA reports of them, rendered here once for
/// every response until the next sample.
fn publish(gauge: &Gauge, utilization: Utilization, rates: Rates) {
    gauge.publish(utilization, rates, orca::reports(utilization, rates));
}

/// Marks the monitor stopped when `run` ends or is dropped, and its load estimate idle: a
/// figure no sampler keeps up to date says nothing, and lowers nothing.
struct RunningGuard(Weak<MonitorState>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Some(shared) = self.0.upgrade() {
            shared.set_monitor_running(false);
            if let Some(gauge) = &shared.load {
                publish(gauge, Utilization::IDLE, Rates::IDLE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{HealthConfig, HealthMonitor};

    /// Lets the monitor's tasks run at the instant the clock stands at.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_estimate_follows_the_requests_in_flight_and_is_off_without_a_capacity() {
        let off = HealthMonitor::spawn(HealthConfig::new()).unwrap();
        let health = HealthMonitor::spawn(HealthConfig::new().load_capacity(4)).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(off.utilization(), None, "off by default");
        assert_eq!(health.utilization(), Some(0.0), "idle");
        // Three of four in flight, and a long-lived connection that is not a request.
        let requests: Vec<_> = (0..3).map(|_| health.drain().enter()).collect();
        let _socket = health.drain().long_lived("websocket");
        // One time constant: 1 - 1/e of the way to 0.75.
        tokio::time::sleep(crate::load::TIME_CONSTANT).await;
        let one = health.utilization().unwrap();
        assert!((one - 0.75 * (1.0 - (-1.0f64).exp())).abs() < 0.03, "{one}");
        tokio::time::sleep(Duration::from_secs(20)).await;
        let settled = health.utilization().unwrap();
        assert!((settled - 0.75).abs() < 1e-3, "{settled}");
        drop(requests);
        tokio::time::sleep(Duration::from_secs(20)).await;
        let idle = health.utilization().unwrap();
        assert!(idle < 1e-3, "{idle}");
        assert_eq!(off.utilization(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_monitor_s_estimate_is_idle() {
        let (health, monitor) = HealthMonitor::new(HealthConfig::new().load_capacity(2)).unwrap();
        let running = tokio::spawn(monitor.run());
        let _requests: Vec<_> = (0..2).map(|_| health.drain().enter()).collect();
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(health.utilization().unwrap() > 0.99);
        running.abort();
        let _ = running.await;
        assert_eq!(health.utilization(), Some(0.0), "no sampler, no figure");
    }

    /// An application that answers its request's path: `/fail` with 500, `/missing` with
    /// 404, anything else with 200.
    fn app() -> impl tower::Service<
        http::Request<http_body_util::Empty<bytes::Bytes>>,
        Response = http::Response<http_body_util::Empty<bytes::Bytes>>,
        Error = std::convert::Infallible,
        Future = impl Future<
            Output = Result<
                http::Response<http_body_util::Empty<bytes::Bytes>>,
                std::convert::Infallible,
            >,
        >,
    > + Clone {
        tower::service_fn(
            |request: http::Request<http_body_util::Empty<bytes::Bytes>>| async move {
                let status = match request.uri().path() {
                    "/fail" => http::StatusCode::INTERNAL_SERVER_ERROR,
                    "/missing" => http::StatusCode::NOT_FOUND,
                    _ => http::StatusCode::OK,
                };
                let mut response = http::Response::new(http_body_util::Empty::new());
                *response.status_mut() = status;
                Ok(response)
            },
        )
    }

    /// Sends `path` through `service`, returning the status and the ORCA report.
    async fn send<S, B>(service: &S, path: &str) -> (http::StatusCode, Option<String>)
    where
        S: tower::Service<
                http::Request<http_body_util::Empty<bytes::Bytes>>,
                Response = http::Response<B>,
                Error = std::convert::Infallible,
            > + Clone,
    {
        use tower::ServiceExt;
        let request = http::Request::get(path)
            .body(http_body_util::Empty::new())
            .unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        let report = response
            .headers()
            .get("endpoint-load-metrics")
            .map(|value| value.to_str().unwrap().to_owned());
        (response.status(), report)
    }

    #[tokio::test(start_paused = true)]
    async fn the_rates_count_the_application_s_responses_and_its_errors_never_a_probe() {
        use tower_layer::Layer;
        let health = HealthMonitor::spawn(HealthConfig::new().load_capacity(100)).unwrap();
        let service = crate::HealthLayer::new(&health).layer(app());
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(health.requests_per_second(), Some(0.0));
        assert_eq!(health.errors_per_second(), Some(0.0));
        // Twenty seconds (ten time constants) of ten application requests a second, one in
        // ten a 500 and one in ten a 404 (the client's error, not the server's), with a probe
        // and a ping beside each, which count for nothing.
        for request in 0..200 {
            let path = match request % 10 {
                0 => "/fail",
                5 => "/missing",
                _ => "/work",
            };
            let (status, report) = send(&service, path).await;
            assert!(report.is_some(), "{path}: {status}");
            let (status, report) = send(&service, "/health/ready").await;
            assert_eq!(status, http::StatusCode::OK);
            assert_eq!(report, None, "a probe's answer is not the app's");
            assert_eq!(send(&service, "/health/ping").await.1, None);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let requests = health.requests_per_second().unwrap();
        let errors = health.errors_per_second().unwrap();
        assert!(
            (requests - 10.0).abs() < 1.5,
            "{requests} requests/s, not 10"
        );
        assert!((errors - 1.0).abs() < 0.6, "{errors} errors/s, not 1");
        // The report says the same, with two decimals.
        let (_, report) = send(&service, "/work").await;
        let report = report.unwrap();
        let rps = format!("rps_fractional={requests:.2}");
        assert!(report.contains(&rps), "{report} against {rps}");
        // Quiet for twenty seconds: both rates fall back to nothing.
        tokio::time::sleep(Duration::from_secs(20)).await;
        let requests = health.requests_per_second().unwrap();
        let errors = health.errors_per_second().unwrap();
        assert!(requests < 0.01 && errors < 0.01, "{requests} {errors}");
        assert!(requests >= 0.0 && errors >= 0.0, "{requests} {errors}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_shed_or_refused_request_counts_as_an_error_and_nothing_counts_when_off() {
        use tower_layer::Layer;
        // An application that is never ready: every request is shed with a 503.
        let never_ready =
            tower::service_fn(|_: http::Request<http_body_util::Empty<bytes::Bytes>>| {
                std::future::ready(Ok::<_, std::convert::Infallible>(http::Response::new(
                    http_body_util::Empty::<bytes::Bytes>::new(),
                )))
            });
        let never_ready = tower::ServiceBuilder::new()
            .concurrency_limit(0)
            .service(never_ready);
        let config = HealthConfig::new()
            .load_capacity(100)
            .drain(crate::DrainConfig::new().policy(crate::drain::DrainPolicy::Reject));
        let health = HealthMonitor::spawn(config).unwrap();
        let shed = crate::HealthLayer::new(&health)
            .shed_load()
            .layer(never_ready);
        // The same monitor's drain, refusing once started, below a health layer.
        let refusing = crate::HealthLayer::new(&health)
            .layer(crate::DrainLayer::new(health.drain()).layer(app()));
        let off = HealthMonitor::spawn(HealthConfig::new()).unwrap();
        let uncounted = crate::HealthLayer::new(&off).shed_load().layer(app());
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Ten shed requests a second for twenty seconds.
        for _ in 0..200 {
            let (status, report) = send(&shed, "/work").await;
            assert_eq!(status, http::StatusCode::SERVICE_UNAVAILABLE);
            assert!(report.is_some());
            assert_eq!(
                send(&uncounted, "/work").await,
                (http::StatusCode::OK, None)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let requests = health.requests_per_second().unwrap();
        let errors = health.errors_per_second().unwrap();
        assert!(
            (requests - 10.0).abs() < 1.5,
            "{requests} requests/s, not 10"
        );
        assert!(
            (errors - requests).abs() < 1e-9,
            "every one an error: {errors}"
        );
        assert_eq!(off.requests_per_second(), None, "off: nothing counted");
        assert_eq!(off.errors_per_second(), None);
        // Quiet, then a drain refuses ten requests a second.
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(health.errors_per_second().unwrap() < 0.01);
        assert!(health.drain().start());
        for _ in 0..200 {
            let (status, report) = send(&refusing, "/work").await;
            assert_eq!(status, http::StatusCode::SERVICE_UNAVAILABLE);
            assert!(report.is_some());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let errors = health.errors_per_second().unwrap();
        assert!((errors - 10.0).abs() < 1.5, "{errors} refusals/s, not 10");
    }

    #[tokio::test(start_paused = true)]
    async fn a_lagging_runtime_reads_as_load() {
        let health = HealthMonitor::spawn(HealthConfig::new().load_capacity(100)).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Nothing in flight; each of the sampler's ticks fires 300 ms late, three times the
        // lag budget, for ten seconds.
        for _ in 0..25 {
            tokio::time::advance(Duration::from_millis(400)).await;
            settle().await;
        }
        let lagging = health.utilization().unwrap();
        assert!(lagging > 0.95, "{lagging}");
        // On time again.
        tokio::time::sleep(Duration::from_secs(20)).await;
        let idle = health.utilization().unwrap();
        assert!(idle < 1e-3, "{idle}");
    }
}
