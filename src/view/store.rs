//! What the monitor publishes, in the one place that only the monitor writes: the three
//! verdicts, and the lifecycle every answer also depends on (the drain followed, the start,
//! whether the monitor runs). Every reader reads it through [`Store::judge`] and the
//! [`View`]; none keeps a copy.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arc_swap::{ArcSwap, Guard};
use tokio::sync::watch;

use super::published::{Published, publish_newer};
use super::startup::Startup;
use super::{View, ViewInputs};
use crate::shutdown::DrainHandle;
use crate::verdict::{HealthVerdict, PoolVerdict, ReadinessVerdict};

/// The published verdicts and the lifecycle of one monitor.
#[derive(Debug)]
pub(crate) struct Store {
    readiness: ArcSwap<Published<ReadinessVerdict>>,
    health: ArcSwap<Published<HealthVerdict>>,
    pool: ArcSwap<Published<PoolVerdict>>,
    /// The drain every reader of this monitor follows, once one is attached.
    drain: OnceLock<DrainHandle>,
    pub(crate) startup: Startup,
    running: AtomicBool,
    /// How long a failure lasts before the readers whose consumers act on a single answer
    /// say it ([`HealthConfig::debounce`](crate::HealthConfig::debounce)).
    pub(crate) debounce: Duration,
    /// Ticks on every change of what the view is read from (see
    /// [`ViewWatch`](super::ViewWatch)).
    changes: watch::Sender<()>,
    /// Bumped with every tick of `changes`: a reader that renders the view ahead of time
    /// (metrics) re-renders when it moves.
    generation: AtomicU64,
}

/// The three verdicts a monitor publishes before its first round or once it has stopped.
pub(crate) struct Placeholders {
    pub(crate) readiness: Published<ReadinessVerdict>,
    pub(crate) health: Published<HealthVerdict>,
    pub(crate) pool: Published<PoolVerdict>,
}

impl Store {
    /// A store holding `placeholders`, for a start that waits for the application's mark
    /// when `startup_waits_for_mark`.
    pub(crate) fn new(
        placeholders: Placeholders,
        startup_waits_for_mark: bool,
        debounce: Duration,
    ) -> Self {
        Self {
            readiness: ArcSwap::from_pointee(placeholders.readiness),
            health: ArcSwap::from_pointee(placeholders.health),
            pool: ArcSwap::from_pointee(placeholders.pool),
            drain: OnceLock::new(),
            startup: Startup::new(startup_waits_for_mark),
            running: AtomicBool::new(false),
            debounce,
            changes: watch::Sender::new(()),
            generation: AtomicU64::new(0),
        }
    }

    // ===== the monitor's side: publishing =====

    /// Publishes a readiness verdict unless a later round's is published (see
    /// [`publish_newer`]), and tells watchers. Returns what was published before, or `None`
    /// when `new` was refused.
    pub(crate) fn publish_readiness(
        &self,
        new: &Arc<Published<ReadinessVerdict>>,
    ) -> Option<Arc<Published<ReadinessVerdict>>> {
        self.publish(&self.readiness, new)
    }

    /// [`publish_readiness`](Self::publish_readiness) for the health verdict.
    pub(crate) fn publish_health(
        &self,
        new: &Arc<Published<HealthVerdict>>,
    ) -> Option<Arc<Published<HealthVerdict>>> {
        self.publish(&self.health, new)
    }

    /// [`publish_readiness`](Self::publish_readiness) for the pool verdict.
    pub(crate) fn publish_pool(
        &self,
        new: &Arc<Published<PoolVerdict>>,
    ) -> Option<Arc<Published<PoolVerdict>>> {
        self.publish(&self.pool, new)
    }

    fn publish<V>(
        &self,
        slot: &ArcSwap<Published<V>>,
        new: &Arc<Published<V>>,
    ) -> Option<Arc<Published<V>>> {
        let previous = publish_newer(slot, new, &self.running)?;
        self.notify();
        Some(previous)
    }

    /// Marks the monitor running or stopped; stopped, `placeholders` replace every verdict
    /// at once, so that none is served as if it were fresh.
    pub(crate) fn set_running(&self, running: bool, placeholders: impl FnOnce() -> Placeholders) {
        self.running.store(running, Ordering::Release);
        if !running {
            let Placeholders {
                readiness,
                health,
                pool,
            } = placeholders();
            self.readiness.store(Arc::new(readiness));
            self.pool.store(Arc::new(pool));
            self.health.store(Arc::new(health));
        }
        self.notify();
    }

    /// Attaches `drain`, unless one is attached already; returns the drain followed.
    pub(crate) fn follow_drain(&self, drain: &DrainHandle) -> &DrainHandle {
        let mut attached = false;
        let followed = self.drain.get_or_init(|| {
            attached = true;
            drain.clone()
        });
        if attached {
            // Watchers start following the drain's start from here.
            self.notify();
        }
        followed
    }

    /// Wakes the view's watchers: something it is read from changed.
    pub(crate) fn notify(&self) {
        self.generation.fetch_add(1, Ordering::Release);
        self.changes.send_replace(());
    }

    // ===== the readers' side =====

    /// The readiness verdict published last.
    pub(crate) fn readiness(&self) -> Guard<Arc<Published<ReadinessVerdict>>> {
        self.readiness.load()
    }

    /// The health verdict published last.
    pub(crate) fn health(&self) -> Guard<Arc<Published<HealthVerdict>>> {
        self.health.load()
    }

    /// The pool verdict published last.
    pub(crate) fn pool(&self) -> Guard<Arc<Published<PoolVerdict>>> {
        self.pool.load()
    }

    /// The drain followed, if one is attached.
    pub(crate) fn drain(&self) -> Option<&DrainHandle> {
        self.drain.get()
    }

    /// Whether the drain followed has started.
    pub(crate) fn is_draining(&self) -> bool {
        self.drain.get().is_some_and(DrainHandle::is_draining)
    }

    /// Whether the monitor is running.
    pub(crate) fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// A receiver woken on every change of what the view is read from.
    pub(crate) fn changes(&self) -> watch::Receiver<()> {
        self.changes.subscribe()
    }

    /// How many times what the view is read from has changed: read it before the view, and
    /// a rendering of that view is current while it has not moved (a drain's start and a
    /// verdict going stale aside, which the reader checks itself).
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every probe's answer now.
    pub(crate) fn view(&self) -> View {
        let inputs = ViewInputs {
            readiness: self.readiness.load_full(),
            health: self.health.load_full(),
            pool: self.pool.load_full(),
            draining: self.is_draining(),
            started: self.startup.is_started(),
            monitor_running: self.is_running(),
        };
        View::new(inputs, Instant::now())
    }
}
