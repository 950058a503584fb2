//! The debounce of the readers whose consumer acts on a single answer (HAProxy's agent, whose
//! `down` takes a server out whatever `fall` says; a gRPC `Watch` stream, whose client-side
//! health check stops at its first `NOT_SERVING`). The readers that are polled (the HTTP
//! probes, `Check`) answer the reading itself: their callers debounce (the kubelet's
//! `failureThreshold`, HAProxy's `fall`).

use std::time::{Duration, Instant};

use crate::verdict::Failing;
use crate::view::Condition;

/// Whether an answer passes for a reader whose consumer acts on a single answer: it passes,
/// or it fails on the verdict alone (`condition`) and has not failed (`failing`) for
/// `debounce` at `now`. A drain, a hold, a stale or missing verdict act at once, and so does a
/// failure that never passed.
pub(crate) fn passes_debounced(
    passing: bool,
    condition: Condition,
    failing: Failing,
    debounce: Duration,
    now: Instant,
) -> bool {
    passing || (condition == Condition::Verdict && !failing.lasted(debounce, now))
}
