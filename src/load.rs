//! Load feedback: one smoothed estimate of how busy the process is, from what it already
//! measures, for the balancers that can weigh a server by it (HAProxy's agent weight, an
//! ORCA load report).
//!
//! Opt-in ([`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity)): the
//! application declares how many requests it can have in flight, and the monitor samples,
//! every [`SAMPLE_PERIOD`], three fractions, each read at no cost to a request:
//!
//! - the requests in flight (the drain's count, without the long-lived connections) over
//!   that capacity;
//! - how late the runtime woke the sampler's own timer beyond [`LAG_GRACE`], over the rest
//!   of [`LAG_BUDGET`]: a starved runtime is a busy process, whatever its count says;
//! - the default database's pool in use over its size, the checkouts waiting for a
//!   connection counted as in use ([`pool_use`]): a queue in front of the pool is a process
//!   that cannot take more work, however few requests it holds.
//!
//! The sample is the largest of the three, clamped to `[0, 1]` and smoothed with a time constant of
//! [`TIME_CONSTANT`], then published in one atomic that readers load: nothing is computed
//! per request. The estimate is never NaN. What it may do to a balancer's view is each
//! dialect's, within the rule that load alone never takes a server out of rotation.
//!
//! Beside it, the server-wide rates of application requests and of errors (a response with
//! a 5xx status, the crate's own 503s for a shed or refused request included), which a
//! weighted round robin needs as much as the utilization (gRPC's and Envoy's weigh a backend
//! by `qps / (utilization + eps / qps × penalty)`). A request only adds one to a counter or
//! two ([`Tally`], sharded by thread as the drain's in-flight count is); the sampler turns
//! the counts into rates, smoothed with the same time constant, and publishes them with the
//! ORCA reports the responses carry, rendered once per sample ([`Tally::reports`]).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use http::{HeaderValue, StatusCode};

use crate::util::{shard_count, thread_index};
use crate::verdict::PoolStats;

/// The largest capacity [`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity)
/// takes: a million requests in flight in one process is a typo, not a capacity.
pub(crate) const MAX_CAPACITY: u32 = 1_000_000;

/// How often the monitor samples the load: ten cheap wake-ups a second, fine enough for the
/// lateness of a timer to show a runtime that stalls for a fraction of a second.
pub(crate) const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// The lateness of the sampler's timer that reads as a fully loaded process: the lateness
/// past which [`RuntimeWatcher`](crate::component::RuntimeWatcher) calls a runtime starved
/// by default.
pub(crate) const LAG_BUDGET: Duration = Duration::from_millis(100);

/// The lateness that reads as no load at all: Tokio's timers count whole milliseconds, and a
/// runtime at ease wakes a timer a millisecond or two late. Counted from zero, that noise
/// alone held an idle process at 1-2% (HAProxy's weight at 98-99%, never back to 100).
pub(crate) const LAG_GRACE: Duration = Duration::from_millis(10);

/// The smoothing's time constant: after a step in load, the estimate has moved 63% of the
/// way in this long, 95% in three times as long. Two seconds: one slow sample (a burst, a
/// pause of the collector) moves it by a few percent, a load that lasts shows within two of
/// HAProxy's `agent-inter 1s`.
pub(crate) const TIME_CONSTANT: Duration = Duration::from_secs(2);

/// A fraction of the process's capacity in use, in `[0, 1]`, never NaN.
#[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
pub(crate) struct Utilization(f32);

impl Utilization {
    /// Nothing in flight, no lag.
    pub(crate) const IDLE: Self = Self(0.0);

    /// `fraction`, clamped to `[0, 1]`. NaN reads as idle: a reading that says nothing
    /// lowers nothing.
    pub(crate) fn new(fraction: f64) -> Self {
        if fraction.is_nan() {
            return Self::IDLE;
        }
        // Clamped first: the cast only rounds.
        Self(fraction.clamp(0.0, 1.0) as f32)
    }

    /// One sample: the largest of `requests` in flight over `capacity`, the runtime's `lag`
    /// beyond [`LAG_GRACE`] over the rest of [`LAG_BUDGET`], and the `pool`'s use (see
    /// [`pool_use`]; 0 without a pool), clamped.
    pub(crate) fn sample(requests: usize, capacity: NonZeroU32, lag: Duration, pool: f64) -> Self {
        // Exact below 2^53 requests in flight.
        let requests = requests as f64 / f64::from(capacity.get());
        let lag =
            lag.saturating_sub(LAG_GRACE).as_secs_f64() / (LAG_BUDGET - LAG_GRACE).as_secs_f64();
        Self::new(requests.max(lag).max(pool))
    }

    /// The fraction, in `[0, 1]`.
    pub(crate) fn get(self) -> f64 {
        f64::from(self.0)
    }
}

/// A pool's use: its connections in use plus the checkouts waiting for one, over its size
/// (0 for a pool of no size). A pool that does not count its waiting checkouts (sqlx's)
/// reads its connections in use alone. Above 1 while checkouts wait: the sample clamps it.
pub(crate) fn pool_use(stats: &PoolStats) -> f64 {
    if stats.max_size == 0 {
        return 0.0;
    }
    let in_use = stats.connections.saturating_sub(stats.idle_connections);
    (f64::from(in_use) + stats.pending_gets as f64) / f64::from(stats.max_size)
}

/// The largest rate, per second, the estimate reports: a hundred million requests a second
/// in one process is a miscount, and the bound keeps a report's figure to a few digits.
pub(crate) const MAX_RATE: f64 = 1e8;

/// The share of the way an estimate moves towards a sample that covers `elapsed`:
/// `1 - e^(-elapsed / TIME_CONSTANT)`, in `[0, 1]`.
fn share(elapsed: Duration) -> f64 {
    1.0 - (-elapsed.as_secs_f64() / TIME_CONSTANT.as_secs_f64()).exp()
}

/// The smoothed estimate: an exponentially weighted moving average over time, so that it
/// does not depend on how regularly it is sampled (a sample the runtime delayed weighs as
/// much as the time it covers).
#[derive(Debug)]
pub(crate) struct Smoothed {
    value: f64,
}

impl Smoothed {
    /// Starts idle.
    pub(crate) fn new() -> Self {
        Self { value: 0.0 }
    }

    /// Moves the estimate towards `sample`, taken `elapsed` after the one before, by
    /// [`share`] of the way, and returns it.
    pub(crate) fn update(&mut self, sample: Utilization, elapsed: Duration) -> Utilization {
        self.value += share(elapsed) * (sample.get() - self.value);
        Utilization::new(self.value)
    }
}

/// Requests and errors per second, each in `[0, MAX_RATE]`, never NaN.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Rates {
    pub(crate) requests: f64,
    pub(crate) errors: f64,
}

impl Rates {
    /// No request, no error.
    pub(crate) const IDLE: Self = Self {
        requests: 0.0,
        errors: 0.0,
    };

    /// Each rate clamped to `[0, MAX_RATE]`, NaN read as 0 (a rate that says nothing
    /// claims nothing), and `-0` as `0` (a report never shows `-0.0`).
    fn bounded(self) -> Self {
        let bound = |rate: f64| {
            if rate.is_nan() {
                0.0
            } else {
                rate.clamp(0.0, MAX_RATE) + 0.0
            }
        };
        Self {
            requests: bound(self.requests),
            errors: bound(self.errors),
        }
    }
}

/// The smoothed rates, from the running totals of requests and errors finished: each sample
/// is what the totals grew by over the time it covers, averaged as [`Smoothed`] does.
#[derive(Debug)]
pub(crate) struct SmoothedRates {
    /// The totals at the sample before; `None` before the first.
    last: Option<Totals>,
    rates: Rates,
}

impl SmoothedRates {
    /// Starts idle; the first sample only sets where counting starts from.
    pub(crate) fn new() -> Self {
        Self {
            last: None,
            rates: Rates::IDLE,
        }
    }

    /// Moves the rates towards what `totals` grew by since the sample before, `elapsed`
    /// ago, and returns them. A sample that covers no time moves nothing (and divides by
    /// nothing).
    pub(crate) fn update(&mut self, totals: Totals, elapsed: Duration) -> Rates {
        let Some(last) = self.last.replace(totals) else {
            return self.rates;
        };
        let seconds = elapsed.as_secs_f64();
        if seconds > 0.0 {
            // The totals only grow; `saturating_sub` in case a count wrapped all the same.
            let per_second = |now: u64, before: u64| now.saturating_sub(before) as f64 / seconds;
            let sample = Rates {
                requests: per_second(totals.requests, last.requests),
                errors: per_second(totals.errors, last.errors),
            }
            .bounded();
            let share = share(elapsed);
            self.rates = Rates {
                requests: self.rates.requests + share * (sample.requests - self.rates.requests),
                errors: self.rates.errors + share * (sample.errors - self.rates.errors),
            }
            .bounded();
        }
        self.rates
    }
}

/// Application requests finished and errors among them, since the gauge was made.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) requests: u64,
    pub(crate) errors: u64,
}

/// The per-call load reports of one sample, rendered once by the dialect for every response
/// until the next sample: a response clones the one its form asks for (a reference count, no
/// byte copied).
#[derive(Clone, Debug)]
pub(crate) struct Reports {
    /// For an HTTP response's head (`endpoint-load-metrics`, Envoy's `TEXT` form).
    pub(crate) text: HeaderValue,
    /// For a gRPC response's trailers (`endpoint-load-metrics-bin`).
    pub(crate) binary: HeaderValue,
}

/// One shard of the counts of finished requests, with what the responses of its requests
/// read. Aligned so that the counters sit on a cache line that only the requests of the
/// threads that share this shard write (see `shutdown::in_flight`).
#[repr(align(128))]
#[derive(Debug)]
struct Shard {
    requests: AtomicU64,
    errors: AtomicU64,
    /// The gauge's reports (shared by every shard: only the sampler writes them).
    reports: Arc<ArcSwap<Reports>>,
}

/// What an application request carries, with load feedback on, to count itself when its
/// response is ready: its thread's shard of the counts. Taking one is one reference count
/// on that shard's line; counting is one or two relaxed increments there; nothing is
/// computed.
#[derive(Clone, Debug)]
pub(crate) struct Tally(Arc<Shard>);

impl Tally {
    /// Counts one finished application request with `status`: an error when it is a 5xx
    /// (the crate's own 503 for a shed or refused request included: the balancer sent a
    /// request this server did not serve).
    #[inline]
    pub(crate) fn count(&self, status: StatusCode) {
        self.0.requests.fetch_add(1, Ordering::Relaxed);
        if status.is_server_error() {
            self.count_error();
        }
    }

    /// Counts an error learnt after the request was counted: a gRPC call's status, which
    /// comes in its trailers, after a `200` head.
    #[inline]
    pub(crate) fn count_error(&self) {
        self.0.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// The ORCA reports the sampler rendered last.
    #[inline]
    pub(crate) fn reports(&self) -> arc_swap::Guard<Arc<Reports>> {
        self.0.reports.load()
    }
}

/// The estimate as published: written by the monitor's sampler, loaded by the readers (one
/// relaxed atomic load: the value is a hint that is as good a sample later). With it, the
/// counts the application's requests add to and the rates the sampler makes of them.
#[derive(Debug)]
pub(crate) struct Gauge {
    capacity: NonZeroU32,
    /// The [`Utilization`]'s `f32` bits.
    bits: AtomicU32,
    /// The [`Rates`]' `f64` bits: requests, then errors, per second.
    rates: [AtomicU64; 2],
    /// A power of two in length, indexed by [`thread_index`].
    shards: Box<[Arc<Shard>]>,
    /// The ORCA reports of the estimate published last, shared with every shard.
    reports: Arc<ArcSwap<Reports>>,
}

impl Gauge {
    /// An idle gauge for `capacity` requests in flight, whose responses carry `idle_reports`
    /// until the first sample (the reports are the dialect's: the monitor renders them).
    pub(crate) fn new(capacity: NonZeroU32, idle_reports: Reports) -> Self {
        let reports = Arc::new(ArcSwap::from_pointee(idle_reports));
        let shards = (0..shard_count())
            .map(|_| {
                Arc::new(Shard {
                    requests: AtomicU64::new(0),
                    errors: AtomicU64::new(0),
                    reports: Arc::clone(&reports),
                })
            })
            .collect();
        Self {
            capacity,
            bits: AtomicU32::new(Utilization::IDLE.0.to_bits()),
            rates: [AtomicU64::new(0), AtomicU64::new(0)],
            shards,
            reports,
        }
    }

    /// The capacity the application declared.
    pub(crate) fn capacity(&self) -> NonZeroU32 {
        self.capacity
    }

    /// Publishes `utilization` and `rates`, and `reports`, what the responses carry from now
    /// on (rendered once per sample: a response's report is a clone, never written).
    pub(crate) fn publish(&self, utilization: Utilization, rates: Rates, reports: Reports) {
        let rates = rates.bounded();
        self.bits.store(utilization.0.to_bits(), Ordering::Relaxed);
        self.rates[0].store(rates.requests.to_bits(), Ordering::Relaxed);
        self.rates[1].store(rates.errors.to_bits(), Ordering::Relaxed);
        self.reports.store(Arc::new(reports));
    }

    /// The estimate published last.
    #[inline]
    pub(crate) fn load(&self) -> Utilization {
        // Only `publish` writes the bits, from a `Utilization`: never NaN.
        Utilization(f32::from_bits(self.bits.load(Ordering::Relaxed)))
    }

    /// The rates published last.
    pub(crate) fn rates(&self) -> Rates {
        // Only `publish` writes the bits, from bounded rates: never NaN.
        Rates {
            requests: f64::from_bits(self.rates[0].load(Ordering::Relaxed)),
            errors: f64::from_bits(self.rates[1].load(Ordering::Relaxed)),
        }
    }

    /// What a request on this thread counts itself in.
    #[inline]
    pub(crate) fn tally(&self) -> Tally {
        Tally(Arc::clone(
            &self.shards[thread_index() & (self.shards.len() - 1)],
        ))
    }

    /// The totals now: the sum of the shards, read one after the other.
    pub(crate) fn totals(&self) -> Totals {
        self.shards
            .iter()
            .fold(Totals::default(), |sum, shard| Totals {
                requests: sum.requests + shard.requests.load(Ordering::Relaxed),
                errors: sum.errors + shard.errors.load(Ordering::Relaxed),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

    fn reports(text: &'static str) -> Reports {
        Reports {
            text: HeaderValue::from_static(text),
            binary: HeaderValue::from_static("binary"),
        }
    }

    fn gauge(n: u32) -> Gauge {
        Gauge::new(capacity(n), reports("idle"))
    }

    #[test]
    fn a_sample_is_the_larger_fraction_clamped() {
        let ms = Duration::from_millis;
        // (in flight, capacity, lag): the sample.
        for (requests, cap, lag, expected) in [
            (0, 10, ms(0), 0.0),
            (5, 10, ms(0), 0.5),
            (10, 10, ms(0), 1.0),
            // Past the capacity (queued work): full, never more.
            (25, 10, ms(0), 1.0),
            // A lagging runtime reads as load whatever the count says.
            (1, 10, ms(55), 0.5),
            (9, 10, ms(55), 0.9),
            // A timer's ordinary lateness is no load.
            (0, 10, ms(2), 0.0),
            (0, 10, LAG_GRACE, 0.0),
            (3, 10, ms(10), 0.3),
            (0, 10, ms(100), 1.0),
            (0, 10, Duration::from_secs(3600), 1.0),
            (usize::MAX, 1, Duration::MAX, 1.0),
            (1, MAX_CAPACITY, ms(0), 1e-6),
        ] {
            let sample = Utilization::sample(requests, capacity(cap), lag, 0.0).get();
            assert!(
                (sample - expected).abs() < 1e-6,
                "{requests}/{cap} lag {lag:?}: {sample}, not {expected}"
            );
        }
    }

    #[test]
    fn a_pool_in_use_or_queued_reads_as_load() {
        let pool = |max_size, connections, idle, pending| {
            let mut stats = PoolStats::new(max_size, connections, idle);
            stats.pending_gets = pending;
            pool_use(&stats)
        };
        // (max size, connections, idle, waiting): the pool's use.
        for (stats, expected) in [
            (pool(10, 0, 0, 0), 0.0),
            (pool(10, 4, 4, 0), 0.0),
            (pool(10, 4, 1, 0), 0.3),
            (pool(10, 10, 0, 0), 1.0),
            // A queue: more than the pool can serve.
            (pool(10, 10, 0, 5), 1.5),
            (pool(0, 0, 0, 3), 0.0),
            // Figures read one after the other may disagree: never negative.
            (pool(10, 2, 5, 0), 0.0),
        ] {
            assert!(
                (stats - expected).abs() < 1e-9,
                "{stats} against {expected}"
            );
        }
        let cap = capacity(100);
        // The largest fraction wins, clamped.
        let sample =
            |requests, pool| Utilization::sample(requests, cap, Duration::ZERO, pool).get();
        assert!((sample(10, 0.3) - 0.3).abs() < 1e-6);
        assert!((sample(50, 0.3) - 0.5).abs() < 1e-6);
        assert_eq!(sample(0, 1.5), 1.0);
        assert_eq!(sample(0, f64::NAN), 0.0, "NaN says nothing");
    }

    #[test]
    fn never_nan_never_out_of_range() {
        for fraction in [
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.5,
            1.5,
            f64::MIN_POSITIVE,
        ] {
            let utilization = Utilization::new(fraction).get();
            assert!(
                (0.0..=1.0).contains(&utilization),
                "{fraction}: {utilization}"
            );
        }
        assert_eq!(Utilization::new(f64::NAN), Utilization::IDLE);
        assert_eq!(Utilization::new(f64::INFINITY).get(), 1.0);
        let mut smoothed = Smoothed::new();
        for elapsed in [Duration::ZERO, Duration::MAX, Duration::from_nanos(1)] {
            let value = smoothed.update(Utilization::new(1.0), elapsed).get();
            assert!((0.0..=1.0).contains(&value), "{elapsed:?}: {value}");
        }
    }

    #[test]
    fn smoothing_follows_a_step_with_its_time_constant() {
        let mut smoothed = Smoothed::new();
        let full = Utilization::new(1.0);
        // Sampled every period for one time constant: 1 - 1/e of the way.
        let steps = TIME_CONSTANT.as_millis() / SAMPLE_PERIOD.as_millis();
        let mut value = 0.0;
        for _ in 0..steps {
            value = smoothed.update(full, SAMPLE_PERIOD).get();
        }
        assert!((value - (1.0 - (-1.0f64).exp())).abs() < 1e-3, "{value}");
        // One late sample covering the same time moves it as far as the many.
        let mut late = Smoothed::new();
        let once = late.update(full, TIME_CONSTANT).get();
        assert!((once - value).abs() < 1e-3, "{once} against {value}");
        // A single slow sample barely moves an idle estimate.
        let mut blip = Smoothed::new();
        let moved = blip.update(full, SAMPLE_PERIOD).get();
        assert!(moved < 0.05, "{moved}");
        // And back down the same way once the load is gone.
        for _ in 0..steps * 10 {
            value = smoothed.update(Utilization::IDLE, SAMPLE_PERIOD).get();
        }
        assert!(value < 1e-4, "{value}");
        // No time, no move.
        assert_eq!(
            smoothed.update(full, Duration::ZERO).get(),
            value,
            "a sample that covers no time weighs nothing"
        );
    }

    #[test]
    fn the_gauge_publishes_what_it_is_given() {
        let gauge = gauge(8);
        assert_eq!(gauge.capacity().get(), 8);
        assert_eq!(gauge.tally().reports().text, "idle");
        assert_eq!(gauge.load(), Utilization::IDLE);
        assert_eq!(gauge.rates(), Rates::IDLE);
        gauge.publish(
            Utilization::new(0.375),
            Rates {
                requests: 120.5,
                errors: f64::NAN,
            },
            reports("sampled"),
        );
        assert_eq!(gauge.load().get(), 0.375);
        assert_eq!(
            gauge.rates(),
            Rates {
                requests: 120.5,
                errors: 0.0
            }
        );
        assert_eq!(gauge.tally().reports().text, "sampled");
    }

    #[test]
    fn requests_count_in_their_thread_s_shard_and_sum_across_threads() {
        let gauge = gauge(8);
        gauge.tally().count(StatusCode::OK);
        gauge.tally().count(StatusCode::SERVICE_UNAVAILABLE);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                gauge.tally().count(StatusCode::INTERNAL_SERVER_ERROR);
                // A client's error is the client's, not the server's.
                gauge.tally().count(StatusCode::NOT_FOUND);
                // A gRPC call's `200` head, then the failure its trailers tell.
                gauge.tally().count(StatusCode::OK);
                gauge.tally().count_error();
            });
        });
        assert_eq!(
            gauge.totals(),
            Totals {
                requests: 5,
                errors: 3
            }
        );
    }

    #[test]
    fn rates_are_what_the_totals_grew_by_over_the_time_smoothed() {
        let mut rates = SmoothedRates::new();
        // The first sample sets where counting starts from, whatever came before.
        let first = rates.update(
            Totals {
                requests: 1_000,
                errors: 1_000,
            },
            SAMPLE_PERIOD,
        );
        assert_eq!(first, Rates::IDLE);
        // 50 requests a period (500 a second), one in ten an error, for 20 time constants.
        let mut totals = Totals {
            requests: 1_000,
            errors: 1_000,
        };
        let mut now = Rates::IDLE;
        for _ in 0..20 * TIME_CONSTANT.as_millis() / SAMPLE_PERIOD.as_millis() {
            totals.requests += 50;
            totals.errors += 5;
            now = rates.update(totals, SAMPLE_PERIOD);
        }
        assert!((now.requests - 500.0).abs() < 0.01, "{now:?}");
        assert!((now.errors - 50.0).abs() < 0.01, "{now:?}");
        // No time, no move, no division by zero.
        totals.requests += 1_000;
        assert_eq!(rates.update(totals, Duration::ZERO), now);
        // Totals that went back (they never do) read as nothing happened, not as negative.
        let back = rates.update(Totals::default(), TIME_CONSTANT * 50);
        assert!(back.requests < 1e-9 && back.errors < 1e-9, "{back:?}");
        assert!(back.requests >= 0.0 && back.errors >= 0.0, "{back:?}");
        // A count beyond any real rate is bounded.
        let huge = rates.update(
            Totals {
                requests: u64::MAX,
                errors: u64::MAX,
            },
            Duration::from_nanos(1),
        );
        assert!(huge.requests <= MAX_RATE && huge.requests > 0.0, "{huge:?}");
    }
}
