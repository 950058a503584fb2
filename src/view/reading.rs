//! The one reading every reader asks: which published verdict a probe reads (one `match`),
//! and what it answers now by the one rule ([`verdict_answer`](super::verdict_answer)), per
//! probe and per health group. A probe reads one verdict: one pointer load.

use std::any::Any;
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::Guard;

use super::decide::Judged;
use super::published::{Prerender, Prerendered, Published, Verdict};
use super::store::Store;
use super::{Condition, alive, startup, verdict_answer};
use crate::probe::Probe;
use crate::verdict::{GroupVerdict, HealthVerdict, PoolVerdict, ReadinessVerdict};

/// What a probe reads: the one place a probe is mapped to the verdict it answers from. The
/// pointers are whatever the caller loaded (guards for one probe, `Arc`s for a whole view).
#[derive(Clone, Debug)]
pub(crate) enum Reads<R, H, P> {
    /// Nothing: liveness and ping answer yes while the process answers.
    Nothing,
    /// The start (`/health/startup`).
    Start,
    /// The readiness verdict.
    Readiness(R),
    /// The health verdict.
    Health(H),
    /// The pool verdict.
    Pool(P),
}

/// What `probe` reads; `readiness`, `health` and `pool` load a verdict, and only the one
/// read is loaded.
pub(crate) fn reads<R, H, P>(
    probe: Probe,
    readiness: impl FnOnce() -> R,
    health: impl FnOnce() -> H,
    pool: impl FnOnce() -> P,
) -> Reads<R, H, P> {
    match probe {
        Probe::Live | Probe::Ping => Reads::Nothing,
        Probe::Startup => Reads::Start,
        Probe::Ready => Reads::Readiness(readiness()),
        Probe::Health => Reads::Health(health()),
        Probe::Pool => Reads::Pool(pool()),
    }
}

impl<R, H, P> Reads<R, H, P>
where
    R: Deref<Target = Arc<Published<ReadinessVerdict>>>,
    H: Deref<Target = Arc<Published<HealthVerdict>>>,
    P: Deref<Target = Arc<Published<PoolVerdict>>>,
{
    /// The verdict read, whatever its kind; `None` for the probes that read none.
    pub(crate) fn verdict(&self) -> Option<&dyn PublishedVerdict> {
        match self {
            Self::Nothing | Self::Start => None,
            Self::Readiness(published) => Some(&***published),
            Self::Health(published) => Some(&***published),
            Self::Pool(published) => Some(&***published),
        }
    }

    /// What `probe`, reading this, answers at `now`: what decided it, whether it passes, and
    /// its `status`. `draining` and `started` are asked only of the probes they concern.
    pub(crate) fn answer(
        &self,
        probe: Probe,
        draining: impl FnOnce() -> bool,
        started: impl FnOnce() -> bool,
        now: Instant,
    ) -> (Condition, bool, &'static str) {
        let answer = match (self, self.verdict()) {
            (_, Some(published)) => return published.answer(probe, draining(), now),
            (Self::Start, None) => startup(started()),
            (_, None) => alive(probe),
        };
        (answer.condition, answer.passing, answer.status)
    }

    /// How old the verdict read is at `now`; `None` when none is read, or before the first
    /// round.
    pub(crate) fn age(&self, now: Instant) -> Option<Duration> {
        self.verdict()
            .filter(|published| !published.is_placeholder())
            .map(|published| published.age(now))
    }
}

/// A published verdict of any of the three kinds, as a reader reads it: what the arms of a
/// [`Reads`] have in common, so that a reader writes one arm for the three.
pub(crate) trait PublishedVerdict {
    /// What a probe reading it answers at `now` ([`verdict_answer`]).
    fn answer(&self, probe: Probe, draining: bool, now: Instant)
    -> (Condition, bool, &'static str);
    /// Whether this is a placeholder (no round yet, monitor stopped) rather than a verdict.
    fn is_placeholder(&self) -> bool;
    /// Whether the verdict is older than its staleness bound at `now`.
    fn is_stale(&self, now: Instant) -> bool;
    /// How old the verdict's data is at `now` (zero for a placeholder).
    fn age(&self, now: Instant) -> Duration;
    /// What the registered [`Prerender`] made of it when it was published, if one was.
    fn prerendered(&self) -> Option<&(dyn Any + Send + Sync)>;
    /// What `render` makes of it now.
    fn prerender_now(&self, render: &dyn Prerender) -> Prerendered;
}

impl<V: Verdict + Judged> PublishedVerdict for Published<V> {
    fn answer(
        &self,
        probe: Probe,
        draining: bool,
        now: Instant,
    ) -> (Condition, bool, &'static str) {
        verdict_answer(probe, self, draining, now)
    }

    fn is_placeholder(&self) -> bool {
        Self::is_placeholder(self)
    }

    fn is_stale(&self, now: Instant) -> bool {
        Self::is_stale(self, now)
    }

    fn age(&self, now: Instant) -> Duration {
        Self::age(self, now)
    }

    fn prerendered(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.prerendered_any()
    }

    fn prerender_now(&self, render: &dyn Prerender) -> Prerendered {
        self.verdict.rendered_by(render)
    }
}

/// The verdicts one probe may read, as the store loads them.
pub(crate) type Loaded = Reads<
    Guard<Arc<Published<ReadinessVerdict>>>,
    Guard<Arc<Published<HealthVerdict>>>,
    Guard<Arc<Published<PoolVerdict>>>,
>;

/// One probe's answer now, and the published verdict it was judged from: what every reader
/// of one probe asks ([`Store::judge`]).
pub(crate) struct Judgement {
    /// What decided the answer.
    pub(crate) condition: Condition,
    /// Whether it passes: HTTP 200, gRPC `SERVING`.
    pub(crate) passing: bool,
    /// The `status` its body carries.
    #[cfg_attr(not(feature = "haproxy-agent"), allow(dead_code))]
    pub(crate) status: &'static str,
    /// The verdict judged, for the readers that render it.
    pub(crate) read: Loaded,
    /// When it was judged.
    pub(crate) now: Instant,
}

impl Judgement {
    /// How the health group `name` answers, judged as readiness is; `None` for a name that
    /// is no group, or when this is not readiness's judgement.
    pub(crate) fn group(&self, name: &str) -> Option<(&GroupVerdict, GroupAnswer)> {
        let Reads::Readiness(published) = &self.read else {
            return None;
        };
        let group = published.verdict.groups.iter().find(|g| *g.name == *name)?;
        Some((group, GroupAnswer::of(self.condition, group)))
    }
}

/// How a health group answers: its own verdict where readiness's answer is its verdict's, and
/// readiness's judgement otherwise (draining, held, stale: 503; no verdict yet:
/// unavailable). The one rule every reader of a group follows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupAnswer {
    /// What decided it: readiness's condition.
    pub(crate) condition: Condition,
    /// Whether it passes: HTTP 200, gRPC `SERVING`.
    pub(crate) passing: bool,
    /// The `status` its body carries: the group's own, `held`, `draining` or `unavailable`.
    pub(crate) status: &'static str,
}

impl GroupAnswer {
    /// The answer of `group` when readiness's judgement is `readiness`.
    pub(crate) fn of(readiness: Condition, group: &GroupVerdict) -> Self {
        let (passing, status) = match readiness {
            // A group is its own checks' answer: the return's jitter holds the process's
            // readiness out, not the group's.
            Condition::Verdict
            | Condition::Unavailable
            | Condition::Starting
            | Condition::Returning => (group.passes(), group.status.as_str()),
            Condition::Held => (false, "held"),
            Condition::Draining => (false, "draining"),
            Condition::Stale => (false, "unavailable"),
        };
        Self {
            condition: readiness,
            passing,
            status,
        }
    }
}

impl Store {
    /// What `probe` answers now: the one reading of one probe, one pointer load.
    pub(crate) fn judge(&self, probe: Probe) -> Judgement {
        let now = crate::clock::now();
        let read = reads(probe, || self.readiness(), || self.health(), || self.pool());
        let (condition, passing, status) = read.answer(
            probe,
            || self.is_draining(),
            || self.startup.is_started(),
            now,
        );
        Judgement {
            condition,
            passing,
            status,
            read,
            now,
        }
    }
}
