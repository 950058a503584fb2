//! When and how long the monitor checks, and its lifecycle: [`HealthConfig`]'s cadences,
//! deadlines and limits, its start and its drain.

use std::time::Duration;

use super::{FailDirection, HealthConfig, Zero, check_in_range};
use crate::shutdown::DrainConfig;

/// The staleness bound of verdicts refreshed every `interval` under `deadline`: three
/// missed rounds. Saturating, so that no setting can make it panic.
pub(crate) fn stale_bound(interval: Duration, deadline: Duration) -> Duration {
    interval.saturating_mul(3).saturating_add(deadline)
}

/// # The rounds, the return and the drain
///
/// When the checks run, how long they may take, how a failure is said and how the process
/// comes back and leaves.
impl HealthConfig {
    /// The one deadline of a round: every database is checked in parallel, and whatever has not
    /// answered when it passes is reported `timed_out`. Also bounds `?nocache=true`.
    ///
    /// Defaults to 500 milliseconds.
    ///
    /// A `timeout` that is shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn readiness_timeout(mut self, timeout: Duration) -> Self {
        if self.error.passes(check_in_range(
            "HealthConfig::readiness_timeout",
            timeout,
            Zero::Refused,
        )) {
            self.readiness_timeout = timeout;
        }
        self
    }
    /// How often the readiness round runs; it also refreshes the pool endpoint's verdict.
    ///
    /// Defaults to 1 second.
    ///
    /// An `interval` that is shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn readiness_interval(mut self, interval: Duration) -> Self {
        if self.error.passes(check_in_range(
            "HealthConfig::readiness_interval",
            interval,
            Zero::Refused,
        )) {
            self.readiness_interval = interval;
        }
        self
    }
    /// How often the health round runs.
    ///
    /// Defaults to 10 seconds.
    ///
    /// An `interval` that is shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn health_interval(mut self, interval: Duration) -> Self {
        if self.error.passes(check_in_range(
            "HealthConfig::health_interval",
            interval,
            Zero::Refused,
        )) {
            self.health_interval = interval;
        }
        self
    }
    /// What readiness answers when a database check times out.
    ///
    /// Defaults to [`FailDirection::NotReady`].
    pub fn fail_direction(mut self, direction: FailDirection) -> Self {
        self.fail_direction = direction;
        self
    }
    /// How long readiness must fail without a break before the readers whose consumers act
    /// on a single answer say so: HAProxy's agent (its `down` takes a server out at once,
    /// whatever `fall` says) and gRPC `Watch` streams (a client-side health check stops
    /// sending to a backend at its first `NOT_SERVING`). Until then the agent lowers the
    /// weight and `Watch` keeps `SERVING`, so that one slow round is never a server out of
    /// rotation; the HTTP probes and `Check` answer at once, for their callers debounce
    /// themselves (the kubelet's `failureThreshold`, HAProxy's `fall`, Envoy's
    /// `unhealthy_threshold`). Set it to the debounce of the check beside the agent
    /// (HAProxy's `fall × inter`). A drain, an operator's hold, a stale verdict and a process
    /// that has not passed since it started are never debounced; nor is a recovery.
    ///
    /// Defaults to 4 seconds (`fall 2`, `inter 2s`, as the HAProxy guide sets them). Zero
    /// acts on every answer at once.
    ///
    /// A `debounce` that is neither zero nor from 1 ms to 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn debounce(mut self, debounce: Duration) -> Self {
        if self.error.passes(check_in_range(
            "HealthConfig::debounce",
            debounce,
            Zero::Allowed,
        )) {
            self.debounce = debounce;
        }
        self
    }
    /// The longest random delay before readiness passes again after an outage: when its
    /// checks pass after failing for the [debounce](Self::debounce) or longer, readiness
    /// stays `not_ready` for a random part of `jitter` (drawn once per return, in `[0,
    /// jitter)`), so that a fleet recovering from an outage it shares (its database came
    /// back) does not return on one tick and open every pool against the database at once.
    /// While it waits, every reader says so: `/health/ready` answers 503 with the reason and
    /// a `returning` object (the delay drawn and when it ends), the view's
    /// [`Condition::Returning`](crate::view::Condition::Returning), the HAProxy agent keeps
    /// `down`, gRPC keeps `NOT_SERVING`.
    ///
    /// Only the way back is delayed, never the way out, and only after an outage: a failure
    /// shorter than the debounce (one slow round), the start (the orchestrator staggers
    /// starts already: a rolling update's `maxSurge`, a startup probe), the release of a
    /// hold and a verdict that was stale come back at once. Zero turns it off.
    ///
    /// Defaults to 5 seconds: five readiness rounds at the default cadence, enough to spread
    /// a fleet's pools over the database's recovery, and little beside the outage before it
    /// (at least the 4-second debounce) and the HTTP check's own `rise` (HAProxy's `rise 2`,
    /// `inter 2s`: 4 seconds).
    ///
    /// A `jitter` that is neither zero nor from 1 ms to 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn return_jitter(mut self, jitter: Duration) -> Self {
        if self.error.passes(check_in_range(
            "HealthConfig::return_jitter",
            jitter,
            Zero::Allowed,
        )) {
            self.return_jitter = jitter;
        }
        self
    }
    /// The shortest time between two fresh computations for `?nocache=true`. A bypass that
    /// arrives sooner gets the latest fresh result (still marked bypassed, with its real age);
    /// concurrent bypasses always share one computation. Zero leaves only the coalescing.
    ///
    /// Defaults to 1 second.
    ///
    /// An `interval` that is neither zero nor from 1 ms to 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn nocache_min_interval(mut self, interval: Duration) -> Self {
        if self.error.passes(check_in_range(
            "HealthConfig::nocache_min_interval",
            interval,
            Zero::Allowed,
        )) {
            self.nocache_min_interval = interval;
        }
        self
    }
    /// How long one database check may keep running in the background after its round has
    /// reported it `timed_out`. Past this limit the check is dropped (a `PostgresCheck`
    /// discards its connection) and the next round starts a new one: a connection that went
    /// dark for good does not keep the database `timed_out` forever. Never shorter than the
    /// [readiness timeout](HealthConfig::readiness_timeout).
    ///
    /// Defaults to 10 seconds.
    ///
    /// A `limit` that is shorter than 1 ms (zero included) or longer than 1 year (see
    /// [durations](crate::config#durations)) is an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new).
    pub fn check_limit(mut self, limit: Duration) -> Self {
        if self.error.passes(check_in_range(
            "HealthConfig::check_limit",
            limit,
            Zero::Refused,
        )) {
            self.check_limit = limit;
        }
        self
    }
    /// Whether `/health/startup` also waits for the application to call
    /// [`HealthHandle::mark_started`](crate::HealthHandle::mark_started) (for warm-up such as
    /// migrations or cache loading), besides the first readiness round.
    ///
    /// Defaults to `false`: started once the first readiness round has completed.
    pub fn startup_waits_for_mark(mut self, waits: bool) -> Self {
        self.startup_waits_for_mark = waits;
        self
    }

    /// The settings of the monitor's drain ([`HealthHandle::drain`](crate::HealthHandle::drain)):
    /// its delay, timeout, policy for ordinary requests, `Connection: close` and
    /// `Retry-After`. Every monitor has a drain, and every reader of the monitor follows it,
    /// so a drain cannot be left out of one: starting it (SIGTERM, through
    /// [`DrainHandle::serve`](crate::DrainHandle::serve)) turns readiness 503 everywhere.
    ///
    /// Defaults to [`DrainConfig::new`]; [`from_env`](Self::from_env) reads the
    /// `TOWER_HEALTH_DRAIN_*` variables. Invalid settings are an error of
    /// [`HealthMonitor::new`](crate::HealthMonitor::new), naming the `DrainConfig` setter.
    pub fn drain(mut self, drain: DrainConfig) -> Self {
        self.drain = drain;
        self
    }
}
