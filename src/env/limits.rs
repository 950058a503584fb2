//! The range every duration setting must lie in, checked by the builder setters and the
//! environment parsers alike.

use std::time::Duration;

use super::ConfigError;

/// The shortest duration a setting takes, zero aside where a setting allows it: one
/// millisecond.
///
/// Tokio's timers count in milliseconds, so a shorter interval would spin and a shorter
/// deadline would pass before any database could answer. It also catches a unit mistake, such
/// as `1e-10` seconds where milliseconds were meant.
pub(crate) const MIN_DURATION: Duration = Duration::from_millis(1);

/// The longest duration a setting takes: one year (365.25 days, humantime's `1y`).
///
/// Far beyond any sensible setting, and short enough that everything computed from the
/// settings (a staleness bound of three intervals plus the readiness timeout, a deadline of
/// now plus a timeout) stays representable: a setting accepted at start cannot overflow later.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(31_557_600);

/// Whether a setting may be zero: zero means "none" or "at once" for some settings (the drain
/// delay, the rate limit of cache bypasses) and is meaningless for the others.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Zero {
    Allowed,
    Refused,
}

/// Why `duration` is out of range, or `None` when it is fine.
pub(crate) fn out_of_range(duration: Duration, zero: Zero) -> Option<&'static str> {
    match zero {
        _ if duration > MAX_DURATION => Some("expected at most 1year"),
        Zero::Allowed if duration.is_zero() => None,
        _ if duration >= MIN_DURATION => None,
        Zero::Allowed => Some("expected 0 or at least 1ms"),
        Zero::Refused => Some("expected at least 1ms"),
    }
}

/// The range a setting must lie in, as a setter's error says it.
fn range(zero: Zero) -> &'static str {
    match zero {
        Zero::Allowed => "zero or from 1ms to 1year",
        Zero::Refused => "from 1ms to 1year",
    }
}

/// The check of a builder setter that never fails: the error, naming the setting, the value
/// and the range, when `duration` is out of range.
pub(crate) fn check_in_range(
    setting: &str,
    duration: Duration,
    zero: Zero,
) -> Result<(), ConfigError> {
    match out_of_range(duration, zero) {
        Some(_) => Err(ConfigError::new(
            setting,
            &format!("{duration:?}"),
            format!("must be {}", range(zero)),
        )),
        None => Ok(()),
    }
}

/// `duration` brought into the range, for a setter with no configuration to carry an error
/// (a wrapper, a backend's connection manager): below 1 ms (zero included) it is 1 ms, above
/// one year it is one year.
#[cfg(any(
    feature = "postgres",
    feature = "admin",
    feature = "haproxy-agent",
    test
))]
pub(crate) fn saturate(duration: Duration) -> Duration {
    duration.clamp(MIN_DURATION, MAX_DURATION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_are_what_their_names_say() {
        assert_eq!(humantime::parse_duration("1y").unwrap(), MAX_DURATION);
        assert_eq!(
            humantime::format_duration(MAX_DURATION).to_string(),
            "1year"
        );
        assert_eq!(humantime::format_duration(MIN_DURATION).to_string(), "1ms");
    }

    #[test]
    fn the_range_is_inclusive_and_zero_only_where_allowed() {
        for zero in [Zero::Allowed, Zero::Refused] {
            assert_eq!(out_of_range(MIN_DURATION, zero), None);
            assert_eq!(out_of_range(MAX_DURATION, zero), None);
            assert!(out_of_range(MAX_DURATION + Duration::from_nanos(1), zero).is_some());
            assert!(out_of_range(Duration::MAX, zero).is_some());
            assert!(out_of_range(Duration::from_micros(999), zero).is_some());
        }
        assert_eq!(out_of_range(Duration::ZERO, Zero::Allowed), None);
        assert_eq!(
            out_of_range(Duration::ZERO, Zero::Refused),
            Some("expected at least 1ms")
        );
    }

    #[test]
    fn a_setter_that_never_fails_names_itself_the_value_and_the_range() {
        let error = check_in_range(
            "HealthConfig::readiness_timeout",
            Duration::ZERO,
            Zero::Refused,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"HealthConfig::readiness_timeout="0ns": must be from 1ms to 1year"#
        );
        let error = check_in_range(
            "HealthConfig::nocache_min_interval",
            Duration::from_micros(10),
            Zero::Allowed,
        )
        .unwrap_err();
        assert_eq!(error.reason(), "must be zero or from 1ms to 1year");
        assert!(check_in_range("x", Duration::ZERO, Zero::Allowed).is_ok());
        assert!(check_in_range("x", MAX_DURATION, Zero::Refused).is_ok());
    }

    #[test]
    fn saturating_keeps_what_is_in_range_and_takes_the_nearest_bound_otherwise() {
        assert_eq!(saturate(Duration::ZERO), MIN_DURATION);
        assert_eq!(saturate(Duration::from_micros(999)), MIN_DURATION);
        assert_eq!(saturate(Duration::from_secs(3)), Duration::from_secs(3));
        assert_eq!(saturate(MAX_DURATION), MAX_DURATION);
        assert_eq!(saturate(Duration::MAX), MAX_DURATION);
    }

    #[test]
    fn what_the_monitor_computes_from_the_largest_settings_fits() {
        // A staleness bound (three intervals plus the timeout) and a deadline (now plus it).
        let bound = MAX_DURATION * 3 + MAX_DURATION;
        assert!(std::time::Instant::now().checked_add(bound).is_some());
    }
}
