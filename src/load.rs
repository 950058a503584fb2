//! Load feedback: one smoothed estimate of how busy the process is, from what it already
//! measures, for the balancers that can weigh a server by it (HAProxy's agent weight, an
//! ORCA load report).
//!
//! Opt-in ([`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity)): the
//! application declares how many requests it can have in flight, and the monitor samples,
//! every [`SAMPLE_PERIOD`], the larger of two fractions, each read at no cost to a request:
//!
//! - the requests in flight (the drain's count, without the long-lived connections) over
//!   that capacity;
//! - how late the runtime woke the sampler's own timer beyond [`LAG_GRACE`], over the rest
//!   of [`LAG_BUDGET`]: a starved runtime is a busy process, whatever its count says.
//!
//! The sample is clamped to `[0, 1]` and smoothed with a time constant of
//! [`TIME_CONSTANT`], then published in one atomic that readers load: nothing is computed
//! per request. The estimate is never NaN. What it may do to a balancer's view is each
//! dialect's, within the rule that load alone never takes a server out of rotation.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

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

    /// One sample: the larger of `requests` in flight over `capacity` and the runtime's
    /// `lag` beyond [`LAG_GRACE`] over the rest of [`LAG_BUDGET`], clamped.
    pub(crate) fn sample(requests: usize, capacity: NonZeroU32, lag: Duration) -> Self {
        // Exact below 2^53 requests in flight.
        let requests = requests as f64 / f64::from(capacity.get());
        let lag =
            lag.saturating_sub(LAG_GRACE).as_secs_f64() / (LAG_BUDGET - LAG_GRACE).as_secs_f64();
        Self::new(requests.max(lag))
    }

    /// The fraction, in `[0, 1]`.
    pub(crate) fn get(self) -> f64 {
        f64::from(self.0)
    }
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
    /// `1 - e^(-elapsed / TIME_CONSTANT)` of the way, and returns it.
    pub(crate) fn update(&mut self, sample: Utilization, elapsed: Duration) -> Utilization {
        let share = 1.0 - (-elapsed.as_secs_f64() / TIME_CONSTANT.as_secs_f64()).exp();
        self.value += share * (sample.get() - self.value);
        Utilization::new(self.value)
    }
}

/// The estimate as published: written by the monitor's sampler, loaded by the readers (one
/// relaxed atomic load: the value is a hint that is as good a sample later).
#[derive(Debug)]
pub(crate) struct Gauge {
    capacity: NonZeroU32,
    /// The [`Utilization`]'s `f32` bits.
    bits: AtomicU32,
}

impl Gauge {
    /// An idle gauge for `capacity` requests in flight.
    pub(crate) fn new(capacity: NonZeroU32) -> Self {
        Self {
            capacity,
            bits: AtomicU32::new(Utilization::IDLE.0.to_bits()),
        }
    }

    /// The capacity the application declared.
    pub(crate) fn capacity(&self) -> NonZeroU32 {
        self.capacity
    }

    /// Publishes `utilization`.
    pub(crate) fn publish(&self, utilization: Utilization) {
        self.bits.store(utilization.0.to_bits(), Ordering::Relaxed);
    }

    /// The estimate published last.
    #[inline]
    pub(crate) fn load(&self) -> Utilization {
        // Only `publish` writes the bits, from a `Utilization`: never NaN.
        Utilization(f32::from_bits(self.bits.load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
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
            let sample = Utilization::sample(requests, capacity(cap), lag).get();
            assert!(
                (sample - expected).abs() < 1e-6,
                "{requests}/{cap} lag {lag:?}: {sample}, not {expected}"
            );
        }
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
        let gauge = Gauge::new(capacity(8));
        assert_eq!(gauge.capacity().get(), 8);
        assert_eq!(gauge.load(), Utilization::IDLE);
        gauge.publish(Utilization::new(0.375));
        assert_eq!(gauge.load().get(), 0.375);
    }
}
