//! What one rendering of the metrics reads: the view and the monitor's counters, at one
//! instant, and nothing that runs a check.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::check::CheckErrorKind;
use crate::drain::DrainHandle;
use crate::monitor::MonitorState;
use crate::view::{View, ViewInputs};

/// The view and the monitor's counters, read once.
#[derive(Debug)]
pub(super) struct Snapshot {
    /// The view's generation, read before anything else: a rendering of this snapshot is
    /// current while the generation has not moved.
    pub(super) generation: u64,
    pub(super) view: View,
    /// Whether each verdict is past its staleness bound, whatever the drain says.
    pub(super) stale: Stale,
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
}

/// Whether each verdict is past its staleness bound.
#[derive(Copy, Clone, Debug)]
pub(super) struct Stale {
    pub(super) health: bool,
    pub(super) readiness: bool,
    pub(super) pool: bool,
}

impl Snapshot {
    /// Reads `state` at `now`. The view is built from the same published verdicts the
    /// staleness is read from, so the two never disagree.
    pub(super) fn read(state: &MonitorState, now: Instant) -> Self {
        let generation = state.view_generation();
        let readiness = state.readiness.load_full();
        let health = state.health.load_full();
        let pool = state.pool.load_full();
        let stale = Stale {
            health: health.is_stale(now),
            readiness: readiness.is_stale(now),
            pool: pool.is_stale(now),
        };
        let inputs = ViewInputs {
            readiness,
            health,
            pool,
            draining: state.drain.get().is_some_and(DrainHandle::is_draining),
            started: state.startup.is_started(),
            monitor_running: state.is_monitor_running(),
        };
        let counters = &state.counters;
        let count = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        Self {
            generation,
            view: View::new(inputs, now),
            stale,
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
            check_failures: state.check_failures(),
        }
    }
}
