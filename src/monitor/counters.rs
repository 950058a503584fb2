//! What the monitor has done so far, counted: read by its stats ([`MonitorStats`]) and its
//! metrics.

use std::sync::atomic::AtomicU64;

/// The monitor's work so far (the checks started are counted by each slot).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) readiness_rounds: AtomicU64,
    pub(crate) health_rounds: AtomicU64,
    /// Health rounds that served the shared cache's entry instead of computing.
    pub(crate) shared_rounds: AtomicU64,
    /// Health rounds in which Redis failed or the entry could not be served.
    pub(crate) shared_cache_errors: AtomicU64,
    /// Readiness rounds that panicked (reported, and the next round run).
    pub(crate) readiness_round_panics: AtomicU64,
    /// Health rounds that panicked (reported, and the next round run).
    pub(crate) health_round_panics: AtomicU64,
    pub(crate) fresh_rounds: AtomicU64,
    /// How long the last readiness round's checks took, in nanoseconds.
    pub(crate) readiness_round_nanos: AtomicU64,
    /// How long the last health round's checks took, in nanoseconds.
    pub(crate) health_round_nanos: AtomicU64,
    /// Readiness transitions logged, the first verdict included.
    pub(crate) readiness_transitions: AtomicU64,
    /// Health status transitions logged, the first verdict included.
    pub(crate) health_transitions: AtomicU64,
}

/// Counters of the monitor's work since it was created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MonitorStats {
    /// Readiness rounds completed.
    pub readiness_rounds: u64,
    /// Health rounds that ran the checks (with a shared cache, `redis::SharedCache`, the rounds
    /// that computed the verdict rather than serving another process's).
    pub health_rounds: u64,
    /// Health rounds that served the shared cache's entry (`redis::SharedCache`), computed by
    /// another process (or an earlier round of this one), instead of running the checks.
    pub shared_rounds: u64,
    /// Health rounds in which Redis failed (refused, slow, gone) or the shared cache's entry
    /// could not be served (malformed, another configuration's): each fell back to this
    /// process's own verdict.
    pub shared_cache_errors: u64,
    /// Rounds that panicked, of either cadence: each was reported as failed (cause
    /// `panicked`) and the next round ran.
    pub panicked_rounds: u64,
    /// Fresh computations run for `?nocache=true` (concurrent bypasses share one).
    pub fresh_rounds: u64,
    /// Database checks started, over every database. Each is one checkout and one
    /// `SELECT 1` for `postgres::PostgresCheck`; a round that finds a
    /// check still running joins it instead of starting another.
    pub checks_started: u64,
    /// [Component](crate::component) checks started, over every component. A component on a
    /// slower cadence, or still running from an earlier round, starts none.
    pub component_checks_started: u64,
}
