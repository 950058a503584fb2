//! What one rendering of the metrics reads: the view and the monitor's counters, at one
//! instant, and nothing that runs a check.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::check::CheckErrorKind;
use crate::monitor::HealthHandle;
use crate::shutdown::progress::{DrainProgress, DrainStamp};
use crate::view::View;

/// The view and the monitor's counters, read once.
#[derive(Debug)]
pub(super) struct Snapshot {
    /// The view's generation, read before anything else: a rendering of this snapshot is
    /// current while the generation has not moved.
    pub(super) generation: u64,
    /// The drain's stamp, read before its figures: they are current while it has not moved.
    pub(super) drain_stamp: DrainStamp,
    /// The drain's phase and times, the requests in flight, the long-lived connections.
    pub(super) drain: DrainProgress,
    pub(super) view: View,
    pub(super) readiness_rounds: u64,
    /// Health rounds that ran the checks here.
    pub(super) health_rounds: u64,
    /// Health rounds that served the fleet's shared entry.
    pub(super) shared_rounds: u64,
    /// Health rounds in which Redis failed or the entry could not be served.
    pub(super) shared_cache_errors: u64,
    pub(super) readiness_round_panics: u64,
    pub(super) health_round_panics: u64,
    pub(super) fresh_rounds: u64,
    pub(super) readiness_round: Duration,
    pub(super) health_round: Duration,
    pub(super) readiness_transitions: u64,
    pub(super) health_transitions: u64,
    /// Checks that finished with an error, per database or component and category.
    pub(super) check_failures: Vec<(Arc<str>, CheckErrorKind, u64)>,
    /// Each database's and component's flap count, from its history.
    pub(super) check_flaps: Vec<(Arc<str>, u32)>,
}

impl Snapshot {
    /// Reads the view behind `health` and the monitor's counters now. The staleness is the
    /// view's own, read from the same published verdicts, so the two never disagree.
    pub(super) fn read(health: &HealthHandle) -> Self {
        // Before the view: a rendering of this snapshot is current while it has not moved.
        let generation = health.generation();
        let drain_stamp = health.drain().stamp();
        let drain = health.drain().progress();
        let view = health.view();
        let counters = health.counters();
        let count = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        Self {
            generation,
            drain_stamp,
            drain,
            view,
            readiness_rounds: count(&counters.readiness_rounds),
            health_rounds: count(&counters.health_rounds),
            shared_rounds: count(&counters.shared_rounds),
            shared_cache_errors: count(&counters.shared_cache_errors),
            readiness_round_panics: count(&counters.readiness_round_panics),
            health_round_panics: count(&counters.health_round_panics),
            fresh_rounds: count(&counters.fresh_rounds),
            readiness_round: Duration::from_nanos(count(&counters.readiness_round_nanos)),
            health_round: Duration::from_nanos(count(&counters.health_round_nanos)),
            readiness_transitions: count(&counters.readiness_transitions),
            health_transitions: count(&counters.health_transitions),
            check_failures: health.check_failures(),
            check_flaps: health.flaps(),
        }
    }

    /// Whether this snapshot still says what one read now would: the view has not moved, the
    /// drain's figures have not moved (its start, its phases, the requests in flight and the
    /// long-lived connections change without a publication), no verdict it shows fresh has
    /// gone stale (a stuck monitor publishes nothing), and no return it shows has run out.
    pub(super) fn is_current(&self, health: &HealthHandle) -> bool {
        self.generation == health.generation()
            && self.drain_stamp == health.drain().stamp()
            && (self.view.next_change_at).is_none_or(|until| crate::clock::now() <= until)
    }
}
