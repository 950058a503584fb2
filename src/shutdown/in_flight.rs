//! The in-flight count, sharded so that no cache line is written by every request on every
//! core.
//!
//! A request counts in the shard of the thread that admits it and leaves that same shard when
//! its guard drops, on whatever thread that happens. So each shard's count is exact on its own,
//! never below zero, and the total is their sum: a request in flight while the shards are read
//! is always seen, whichever order they are read in.
//!
//! A shard's count is the reference count of its `Arc`: admitting a request clones it and
//! ending one drops the clone, one atomic read-modify-write each, on a line that only the
//! requests of one thread write. So a request pays two atomic writes, on a line no other core
//! contends for; a shared counter beside the guard's own reference count would cost four, on
//! lines every core writes.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use crate::util::{shard_count, thread_index};

/// Every shard of one drain, and what wakes the drain's waiter.
pub(super) struct InFlight {
    /// A power of two in length, indexed by [`thread_index`].
    shards: Box<[Arc<Shard>]>,
    idle: Arc<Notify>,
}

/// One shard. Aligned so that its reference count (the count) sits on a cache line of its
/// own, away from the other shards' and from the flag below, which every request reads.
#[repr(align(128))]
struct Shard {
    /// Set when the drain starts: from then on a request that ends wakes the drain's waiter.
    draining: AtomicBool,
    idle: Arc<Notify>,
}

impl InFlight {
    pub(super) fn new() -> Self {
        let count = shard_count();
        let idle = Arc::new(Notify::new());
        let shards = (0..count)
            .map(|_| {
                Arc::new(Shard {
                    draining: AtomicBool::new(false),
                    idle: Arc::clone(&idle),
                })
            })
            .collect();
        Self { shards, idle }
    }

    /// Counts a request in flight, in this thread's shard, until the guard drops.
    #[inline]
    pub(super) fn enter(&self) -> InFlightGuard {
        let shard = &self.shards[thread_index() & (self.shards.len() - 1)];
        InFlightGuard {
            shard: Some(Arc::clone(shard)),
        }
    }

    /// Requests in flight now: the sum of the shards, read one after the other.
    pub(super) fn count(&self) -> usize {
        // Each shard's `Arc` is held once here, and once by each guard.
        self.shards
            .iter()
            .map(|shard| Arc::strong_count(shard) - 1)
            .sum()
    }

    /// From now on, a request that ends wakes [`idle`](Self::idle)'s waiters.
    pub(super) fn start_draining(&self) {
        for shard in &*self.shards {
            shard.draining.store(true, Ordering::Release);
        }
    }

    /// Woken when a request ends during the drain. A request that was ending at the very
    /// moment the drain started may not wake it: waiters read [`count`](Self::count) again
    /// now and then as well.
    pub(super) fn idle(&self) -> &Notify {
        &self.idle
    }
}

/// One request in flight; dropping it (when the response body finishes or is dropped) ends
/// the request's count.
pub(crate) struct InFlightGuard {
    /// `Some` until the count ends (released or dropped): taken then, so that the count
    /// falls before the waiter is woken.
    shard: Option<Arc<Shard>>,
}

impl InFlightGuard {
    /// Ends the request's count now, rather than when the guard is dropped.
    #[inline]
    pub(crate) fn release(&mut self) {
        self.end();
    }

    /// Whether the request still counts (it has not been [released](Self::release)).
    pub(crate) fn is_counting(&self) -> bool {
        self.shard.is_some()
    }

    fn end(&mut self) {
        let Some(shard) = self.shard.take() else {
            return;
        };
        if shard.draining.load(Ordering::Acquire) {
            let idle = Arc::clone(&shard.idle);
            drop(shard);
            idle.notify_waiters();
        }
    }

    /// Whether the drain has started (read from this request's shard, a line no other core
    /// writes but at the start of the drain).
    #[inline]
    pub(crate) fn is_draining(&self) -> bool {
        self.shard
            .as_ref()
            .is_some_and(|shard| shard.draining.load(Ordering::Acquire))
    }
}

impl Drop for InFlightGuard {
    #[inline]
    fn drop(&mut self) {
        self.end();
    }
}

impl fmt::Debug for InFlightGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InFlightGuard").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_counts_until_its_guard_drops_wherever_it_drops() {
        let in_flight = Arc::new(InFlight::new());
        let here = in_flight.enter();
        let there = std::thread::scope(|scope| {
            scope
                .spawn(|| (in_flight.enter(), in_flight.enter()))
                .join()
                .unwrap()
        });
        assert_eq!(in_flight.count(), 3);
        // Dropped on other threads than the ones that admitted them.
        std::thread::scope(|scope| {
            scope.spawn(move || drop(here));
        });
        assert_eq!(in_flight.count(), 2);
        drop(there);
        assert_eq!(in_flight.count(), 0);
    }

    #[test]
    fn the_shards_are_a_power_of_two() {
        let in_flight = InFlight::new();
        assert!(in_flight.shards.len().is_power_of_two());
        assert!(in_flight.shards.len() <= 64);
    }
}
