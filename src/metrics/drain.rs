//! The series of the drain: its phase with its times, the requests in flight and the
//! long-lived connections open by name. The families that read them are in `families.rs`.

use super::series::{Labels, unix_seconds};
use super::snapshot::Snapshot;
use crate::shutdown::progress::DrainPhase;

pub(super) fn phase(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, bool)) {
    for phase in DrainPhase::ALL {
        series(&[("phase", phase.as_str())], snapshot.drain.phase == phase);
    }
}

/// Absent before the drain starts; `ended` once it has.
pub(super) fn times(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, f64)) {
    let Some(times) = snapshot.drain.times else {
        return;
    };
    for (event, at) in [
        ("started", Some(times.started)),
        ("delay_over", Some(times.delay_over)),
        ("close_window_over", Some(times.close_window_over)),
        ("timeout", Some(times.timeout)),
        ("ended", times.ended),
    ] {
        if let Some(at) = at {
            series(&[("event", event)], unix_seconds(at));
        }
    }
}

pub(super) fn in_flight(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    series(&[], count(snapshot.drain.in_flight));
}

/// Every name registered so far, at zero once its connections have closed: a series never
/// vanishes while the process lives.
pub(super) fn long_lived_open(snapshot: &Snapshot, series: &mut dyn FnMut(Labels<'_>, u64)) {
    for (name, open) in &snapshot.drain.long_lived {
        series(&[("name", name)], count(*open));
    }
}

fn count(count: usize) -> u64 {
    u64::try_from(count).unwrap_or(u64::MAX)
}
