//! What the monitor publishes, in the one place that only the monitor writes: the three
//! verdicts, and the lifecycle every answer also depends on (the monitor's drain, the start,
//! whether the monitor runs). Every reader reads it through [`Store::judge`] and the
//! [`View`]; none keeps a copy.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::{ArcSwap, Guard};
use tokio::sync::watch;

use super::published::{Made, Prerender, Published, Verdict, publish_newer};
use super::startup::Startup;
use super::{View, ViewInputs};
use crate::shutdown::DrainHandle;
use crate::verdict::{HealthVerdict, PoolVerdict, ReadinessRules, ReadinessVerdict};

/// What every reader may need to know of the monitor beside its verdicts, fixed when it is
/// made: the names it checks (known before any round), the readiness rules, how long a
/// verdict stays fresh, and the debounce. Readers read this, never the monitor's
/// configuration.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "grpc"), allow(dead_code))]
pub(crate) struct Known {
    /// The names of the databases, components and groups, in the order configured.
    pub(crate) databases: Box<[Arc<str>]>,
    pub(crate) components: Box<[Arc<str>]>,
    pub(crate) groups: Box<[Arc<str>]>,
    pub(crate) rules: ReadinessRules,
    /// The staleness bound of readiness's and pool's verdicts.
    pub(crate) readiness_stale: Duration,
    /// The staleness bound of health's verdict.
    pub(crate) health_stale: Duration,
    /// How long a failure lasts before the readers whose consumers act on a single answer
    /// say it ([`HealthConfig::debounce`](crate::HealthConfig::debounce)).
    pub(crate) debounce: Duration,
}

/// The published verdicts and the lifecycle of one monitor.
#[derive(Debug)]
pub(crate) struct Store {
    readiness: ArcSwap<Published<ReadinessVerdict>>,
    health: ArcSwap<Published<HealthVerdict>>,
    pool: ArcSwap<Published<PoolVerdict>>,
    /// The monitor's drain, which every reader of it follows.
    drain: DrainHandle,
    pub(crate) startup: Startup,
    running: AtomicBool,
    pub(crate) known: Known,
    /// Ticks on every change of what the view is read from (see
    /// [`ViewWatch`](super::ViewWatch)).
    changes: watch::Sender<()>,
    /// Bumped with every tick of `changes`: a reader that renders the view ahead of time
    /// (metrics) re-renders when it moves.
    generation: AtomicU64,
    /// What renders each verdict as it is published, once a reader that answers with bytes
    /// registered it ([`render_with`](Self::render_with)).
    render: OnceLock<Arc<dyn Prerender>>,
}

/// Whether the process means to serve, or to leave rotation of its own accord (a drain, an
/// operator's hold): what the reading decided that an application's response can carry to a
/// proxy at once, without waiting for its next health check.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Intent {
    Serve,
    Leave,
}

/// The three verdicts a monitor publishes before its first round or once it has stopped.
pub(crate) struct Placeholders {
    pub(crate) readiness: ReadinessVerdict,
    pub(crate) health: HealthVerdict,
    pub(crate) pool: PoolVerdict,
}

impl Store {
    /// A store holding `placeholders`, for a start that waits for the application's mark
    /// when `startup_waits_for_mark`, and the monitor's `drain`.
    pub(crate) fn new(
        placeholders: Placeholders,
        startup_waits_for_mark: bool,
        known: Known,
        drain: DrainHandle,
    ) -> Self {
        Self {
            readiness: ArcSwap::from_pointee(Published::new(placeholders.readiness, None, None)),
            health: ArcSwap::from_pointee(Published::new(placeholders.health, None, None)),
            pool: ArcSwap::from_pointee(Published::new(placeholders.pool, None, None)),
            drain,
            startup: Startup::new(startup_waits_for_mark),
            running: AtomicBool::new(false),
            known,
            changes: watch::Sender::new(()),
            generation: AtomicU64::new(0),
            render: OnceLock::new(),
        }
    }

    // ===== the monitor's side: publishing =====

    /// `verdict`, made as `made` says, ready to publish: rendered by the registered
    /// [`Prerender`], if any.
    pub(crate) fn made<V: Verdict>(&self, verdict: V, made: Made) -> Arc<Published<V>> {
        Arc::new(Published::new(verdict, Some(made), self.render()))
    }

    fn render(&self) -> Option<&dyn Prerender> {
        self.render.get().map(|render| &**render)
    }

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
            let render = self.render();
            self.readiness
                .store(Arc::new(Published::new(readiness, None, render)));
            self.pool
                .store(Arc::new(Published::new(pool, None, render)));
            self.health
                .store(Arc::new(Published::new(health, None, render)));
        }
        self.notify();
    }

    /// Registers what renders each verdict as it is published, unless one is registered
    /// already (the first reader that answers with bytes registers it), and renders what is
    /// published now, so that no reader finds a verdict unrendered but one published in
    /// between (which the reader then renders itself, once).
    pub(crate) fn render_with(&self, render: impl FnOnce() -> Arc<dyn Prerender>) {
        let mut registered = false;
        let render = self.render.get_or_init(|| {
            registered = true;
            render()
        });
        if registered {
            rerender(&self.readiness, &**render);
            rerender(&self.health, &**render);
            rerender(&self.pool, &**render);
        }
    }

    /// The registered [`Prerender`], if any.
    pub(crate) fn registered_render(&self) -> Option<&Arc<dyn Prerender>> {
        self.render.get()
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

    /// The monitor's drain.
    pub(crate) fn drain(&self) -> &DrainHandle {
        &self.drain
    }

    /// Whether the monitor's drain has started.
    pub(crate) fn is_draining(&self) -> bool {
        self.drain.is_draining()
    }

    /// Whether the process means to serve or to leave rotation (a drain, an operator's hold),
    /// read from the drain and the readiness verdict published last.
    #[inline]
    pub(crate) fn intent(&self) -> Intent {
        if self.is_draining() || self.readiness.load().verdict.held.is_some() {
            Intent::Leave
        } else {
            Intent::Serve
        }
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
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every probe's answer now.
    pub(crate) fn view(&self) -> View {
        // Before the verdicts: a view is as new as the generation it says, or newer.
        let generation = self.generation();
        let inputs = ViewInputs {
            generation,
            readiness: self.readiness.load_full(),
            health: self.health.load_full(),
            pool: self.pool.load_full(),
            draining: self.is_draining(),
            started: self.startup.is_started(),
            monitor_running: self.is_running(),
            debounce: self.known.debounce,
        };
        View::new(inputs, crate::clock::now())
    }
}

/// Replaces the publication in `slot` by itself rendered by `render`, unless it is rendered.
fn rerender<V: Verdict>(slot: &ArcSwap<Published<V>>, render: &dyn Prerender) {
    slot.rcu(|current| {
        if current.is_rendered() {
            Arc::clone(current)
        } else {
            Arc::new(current.rendered_by(render))
        }
    });
}
