//! A verdict as published: the verdict itself, when it was made, and what the readers that
//! answer with bytes rendered of it then.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::verdict::{HealthVerdict, PoolVerdict, ReadinessVerdict};

#[derive(Debug)]
pub(crate) struct Published<V> {
    pub(crate) verdict: Arc<V>,
    /// When the verdict was made; `None` for a placeholder (no round yet, monitor stopped):
    /// a response of its own rather than a round's verdict, which never goes stale.
    made: Option<Made>,
    /// What the [`Prerender`] registered on the store made of the verdict when it was published;
    /// `None` before one is registered.
    rendering: Option<Prerendered>,
}

/// What a [`Prerender`] makes of a verdict: the readers' own type, behind `Any`, so that what
/// is published names no reader's type.
pub(crate) type Prerendered = Arc<dyn Any + Send + Sync>;

/// Renders each verdict as it is published, for the readers that answer with bytes (the
/// HTTP side): registered once on the [`Store`](super::Store), so that answering a probe
/// never renders, and that neither the monitor nor the view knows what a byte looks like.
pub(crate) trait Prerender: Send + Sync + fmt::Debug {
    fn readiness(&self, verdict: &ReadinessVerdict) -> Prerendered;
    fn health(&self, verdict: &HealthVerdict) -> Prerendered;
    fn pool(&self, verdict: &PoolVerdict) -> Prerendered;
}

/// A verdict the store publishes: which of [`Prerender`]'s methods renders it.
pub(crate) trait Verdict: Send + Sync + fmt::Debug + 'static {
    fn rendered_by(&self, render: &dyn Prerender) -> Prerendered;
}

impl Verdict for ReadinessVerdict {
    fn rendered_by(&self, render: &dyn Prerender) -> Prerendered {
        render.readiness(self)
    }
}

impl Verdict for HealthVerdict {
    fn rendered_by(&self, render: &dyn Prerender) -> Prerendered {
        render.health(self)
    }
}

impl Verdict for PoolVerdict {
    fn rendered_by(&self, render: &dyn Prerender) -> Prerendered {
        render.pool(self)
    }
}

/// When a published verdict was made: what orders publications, what `age_ms` counts from,
/// and when the verdict goes stale.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Made {
    /// When the round that produced it started. Of two publications, the later round's wins,
    /// whatever the age of their data: a round serving the fleet's entry after this process
    /// computed its own is the newer answer, a slow round finishing after a bypass is not.
    pub(crate) round_started: Instant,
    /// When its data was computed, the origin of `age_ms`: the round's end, or for an entry
    /// of the shared cache, that entry's round (its age by Redis's clock).
    pub(crate) computed_at: Instant,
    /// From this instant on the verdict is served as stale: its bound after it was
    /// published, since a publication is the monitor's proof of life (serving the fleet's
    /// entry included). An instant rather than a duration, so that a probe compares two
    /// clock readings instead of subtracting them; `None` for a bound too far to represent.
    pub(crate) stale_at: Option<Instant>,
}

impl Made {
    /// A verdict of the round started at `round_started`, whose data was computed at
    /// `computed_at`, published now and stale `stale_after` from now.
    pub(crate) fn now(round_started: Instant, computed_at: Instant, stale_after: Duration) -> Self {
        Self {
            round_started,
            computed_at,
            stale_at: crate::clock::now().checked_add(stale_after),
        }
    }
}

impl<V: Verdict> Published<V> {
    /// A round's verdict (`made`), or a placeholder (`None`: no round yet, or the monitor
    /// stopped), rendered by `render` if one is registered.
    pub(crate) fn new(verdict: V, made: Option<Made>, render: Option<&dyn Prerender>) -> Self {
        Self {
            rendering: render.map(|render| verdict.rendered_by(render)),
            verdict: Arc::new(verdict),
            made,
        }
    }

    /// This publication rendered by `render`: the same verdict, made at the same instant.
    pub(crate) fn rendered_by(&self, render: &dyn Prerender) -> Self {
        Self {
            verdict: Arc::clone(&self.verdict),
            made: self.made,
            rendering: Some(self.verdict.rendered_by(render)),
        }
    }
}

impl<V> Published<V> {
    /// What the registered [`Prerender`] made of the verdict, whatever the reader's type.
    pub(crate) fn prerendered_any(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.rendering.as_deref()
    }

    /// Whether a [`Prerender`] rendered it.
    pub(crate) fn is_rendered(&self) -> bool {
        self.rendering.is_some()
    }

    /// When the verdict was made; `None` for a placeholder.
    pub(crate) fn when_made(&self) -> Option<Made> {
        self.made
    }

    /// Whether this is a placeholder (no round yet, monitor stopped) rather than a verdict.
    pub(crate) fn is_placeholder(&self) -> bool {
        self.made.is_none()
    }

    /// Whether the verdict is older than its staleness bound at `now`.
    pub(crate) fn is_stale(&self, now: Instant) -> bool {
        self.stale_at().is_some_and(|stale_at| now > stale_at)
    }

    /// When the verdict goes stale, if ever.
    pub(crate) fn stale_at(&self) -> Option<Instant> {
        self.made.and_then(|made| made.stale_at)
    }

    /// How old the verdict's data is at `now` (zero for a placeholder).
    pub(crate) fn age(&self, now: Instant) -> Duration {
        self.made.map_or(Duration::ZERO, |made| {
            now.saturating_duration_since(made.computed_at)
        })
    }
}

/// Publishes `new` unless what is published comes from a later round (two cadences and the
/// bypass publish the same verdict; a slow round must not overwrite a fresher one), or the
/// monitor is not running (then the "not running" placeholder must stay: a bypass's verdict
/// goes to its requester only). Returns what was published before, or `None` when `new` was
/// refused: watchers and transition logs follow exactly what readers were served.
pub(crate) fn publish_newer<V>(
    slot: &ArcSwap<Published<V>>,
    new: &Arc<Published<V>>,
    monitor_running: &AtomicBool,
) -> Option<Arc<Published<V>>> {
    let mut published = false;
    let previous = slot.rcu(|current| {
        // Read inside the closure: `rcu` retries if the monitor stopped (and stored its
        // placeholder) in between, and the last try is the one that counts.
        // A placeholder ("no round yet") gives way to any round's verdict.
        published = monitor_running.load(Ordering::Acquire)
            && match (current.made, new.made) {
                (None, _) => true,
                (Some(current), Some(new)) => current.round_started <= new.round_started,
                (Some(_), None) => false,
            };
        if published {
            Arc::clone(new)
        } else {
            Arc::clone(current)
        }
    });
    published.then_some(previous)
}
