//! The view: every probe's answer at one instant, with the verdicts behind them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Answer;
use super::published::Published;
use super::reading::{Reads, reads};
use crate::probe::Probe;
use crate::verdict::{HealthVerdict, PoolVerdict, ReadinessVerdict};

/// Every probe's answer at one instant, and the verdicts behind them: what every reader of
/// a monitor renders.
///
/// Read it with [`HealthHandle::view`](crate::HealthHandle::view), or follow it with
/// [`HealthHandle::watch`](crate::HealthHandle::watch). See the [module docs](super).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct View {
    /// The health verdict published last.
    pub health: Arc<HealthVerdict>,
    /// The readiness verdict published last.
    pub readiness: Arc<ReadinessVerdict>,
    /// The pool verdict published last.
    pub pool: Arc<PoolVerdict>,
    /// Whether the monitor's drain has started.
    pub draining: bool,
    /// The reason of the operator's hold, while one is in place.
    pub held: Option<Arc<str>>,
    /// Whether the process has finished starting (what `/health/startup` answers).
    pub started: bool,
    /// Whether the monitor is running.
    pub monitor_running: bool,
    answers: [Answer; Probe::ALL.len()],
    /// The store's generation it was read at: two views of one generation were read from
    /// the same publications.
    generation: u64,
    /// How many of readiness's failures (the verdict's, a database's, a group's) have lasted
    /// the debounce: what the readers whose consumers act on a single answer say changes
    /// when one more has, with no publication (see `dialect::debounce`).
    debounced: usize,
    /// The next instant its answers change without a publication: a verdict goes stale,
    /// readiness's return runs out, or a failure lasts the debounce.
    pub(crate) next_change_at: Option<Instant>,
    /// Whether each verdict is past its staleness bound, whatever the drain says.
    stale: Stale,
}

/// Whether each verdict of a view is past its staleness bound.
#[derive(Copy, Clone, Debug)]
struct Stale {
    health: bool,
    readiness: bool,
    pool: bool,
}

/// What a view is read from.
pub(crate) struct ViewInputs {
    /// The store's generation, read before the verdicts.
    pub(crate) generation: u64,
    pub(crate) readiness: Arc<Published<ReadinessVerdict>>,
    pub(crate) health: Arc<Published<HealthVerdict>>,
    pub(crate) pool: Arc<Published<PoolVerdict>>,
    pub(crate) draining: bool,
    pub(crate) started: bool,
    pub(crate) monitor_running: bool,
    /// [`HealthConfig::debounce`](crate::HealthConfig::debounce).
    pub(crate) debounce: Duration,
}

impl View {
    pub(crate) fn new(inputs: ViewInputs, now: Instant) -> Self {
        let ViewInputs {
            generation,
            readiness,
            health,
            pool,
            draining,
            started,
            monitor_running,
            debounce,
        } = inputs;
        let answers = Probe::ALL.map(|probe| {
            let read = reads(probe, || &readiness, || &health, || &pool);
            let (condition, passing, status) = read.answer(probe, || draining, || started, now);
            Answer {
                probe,
                passing,
                condition,
                status,
                age: read.age(now),
            }
        });
        let stale = Stale {
            health: health.is_stale(now),
            readiness: readiness.is_stale(now),
            pool: pool.is_stale(now),
        };
        // A verdict going stale, the end of a return and a failure lasting the debounce
        // change the answers without a publication.
        let streaks = &readiness.verdict.streaks;
        let failing = std::iter::once(streaks.verdict)
            .chain(streaks.databases.iter().map(|(_, failing)| *failing))
            .chain(streaks.groups.iter().map(|(_, failing)| *failing));
        let debounced = failing
            .clone()
            .filter(|failing| failing.lasted(debounce, now))
            .count();
        let next_change_at = [
            readiness.stale_at(),
            health.stale_at(),
            pool.stale_at(),
            readiness.verdict.returned.at,
        ]
        .into_iter()
        .chain(failing.map(|failing| failing.lasts_at(debounce)))
        .flatten()
        .filter(|at| *at >= now)
        .min();
        Self {
            held: readiness.verdict.held.clone(),
            health: health.verdict.clone(),
            readiness: readiness.verdict.clone(),
            pool: pool.verdict.clone(),
            draining,
            started,
            monitor_running,
            answers,
            generation,
            debounced,
            next_change_at,
            stale,
        }
    }

    /// Whether the verdict `probe` reads is older than its staleness bound (the monitor is
    /// stuck or stopped), whatever else decides its answer: a drain answers 503 `draining`
    /// first, and would hide it. `false` for the probes that read no verdict (liveness, ping,
    /// startup).
    #[must_use]
    pub fn is_stale(&self, probe: Probe) -> bool {
        let stale = &self.stale;
        match reads(probe, || stale.readiness, || stale.health, || stale.pool) {
            Reads::Readiness(stale) | Reads::Health(stale) | Reads::Pool(stale) => stale,
            Reads::Nothing | Reads::Start => false,
        }
    }

    /// How `probe` is answered.
    #[must_use]
    pub fn answer(&self, probe: Probe) -> &Answer {
        let index = Probe::ALL
            .iter()
            .position(|listed| *listed == probe)
            .expect("Probe::ALL lists every probe");
        &self.answers[index]
    }

    /// Every probe's answer, in the order of [`Probe::ALL`].
    #[must_use]
    pub fn answers(&self) -> &[Answer] {
        &self.answers
    }

    /// Whether `other` says the same: the same verdicts (as published) and the same answers.
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        self.generation == other.generation
            && self.draining == other.draining
            && self.started == other.started
            && self.monitor_running == other.monitor_running
            && self.debounced == other.debounced
            && self
                .answers
                .iter()
                .zip(&other.answers)
                .all(|(mine, theirs)| {
                    (mine.passing, mine.condition, mine.status)
                        == (theirs.passing, theirs.condition, theirs.status)
                })
    }
}
