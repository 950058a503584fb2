//! What every family's series are written with: their labels, and the unit of an instant.

use std::time::SystemTime;

/// The label names and values of one series.
pub(super) type Labels<'a> = &'a [(&'static str, &'a str)];

/// `at` in seconds since the Unix epoch (negative before it).
pub(super) fn unix_seconds(at: SystemTime) -> f64 {
    match at.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => since.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}
