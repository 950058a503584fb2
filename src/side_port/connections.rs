//! A side port's open connections, and which one gives up its place when they are all taken.
//!
//! The rule: when full, close the oldest connection that has not had an answer begun (an
//! admin client silent since it connected, or trickling its first request head), else the one
//! whose writes have waited longest on a client that does not read, else the one idle longest
//! since its last answer (a keep-alive connection between requests, an agent connection
//! lingering after its line for the client's close), else the one waiting longest for a
//! change (the operator's page asking for its next update: a request that waits is not an
//! answer being made). A connection being answered is never closed; the new connection is,
//! only when every place has one. Anyone who reaches the port can open connections: clients
//! that do not finish a request, sit on their answer, or wait for a change (open pages) must
//! not keep the kubelet's probes or HAProxy's check out.
//!
//! Each server sets the graces of its [`Eviction`]: how long a connection keeps its place,
//! however many others arrive, before its first answer begins and after each answer. While
//! every candidate is within a grace, the accept loop waits until the first leaves it, and
//! newcomers queue in the listen backlog in the order they came.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::StallWatch;

/// How a server's connections give up their places when every place is taken: the rule of
/// the [module](self), with this server's graces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Eviction {
    /// How long a new connection keeps its place until its first answer begins.
    pub(crate) before_answer: Duration,
    /// How long a connection keeps its place after each answer, once it is idle.
    pub(crate) after_answer: Duration,
}

/// The connections being served.
pub(crate) struct OpenConnections {
    /// The server, for the log line of each eviction.
    server: &'static str,
    eviction: Eviction,
    open: Vec<Open>,
}

struct Open {
    task: AbortHandle,
    activity: Arc<Activity>,
    stall: Arc<StallWatch>,
}

/// What [`OpenConnections::try_make_room`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Room {
    /// A place is free, or was freed.
    Made,
    /// Every candidate is within a grace; the first leaves it then.
    Wait(Instant),
    /// Every place has an answer being made: the new connection must be closed.
    Full,
}

impl OpenConnections {
    /// No connection of `server` yet; places given up by `eviction`.
    pub(crate) fn new(server: &'static str, eviction: Eviction) -> Self {
        Self {
            server,
            eviction,
            open: Vec::new(),
        }
    }

    /// A connection accepted (with room made for it), served by `task`.
    pub(crate) fn push(
        &mut self,
        task: AbortHandle,
        activity: Arc<Activity>,
        stall: Arc<StallWatch>,
    ) {
        self.open.push(Open {
            task,
            activity,
            stall,
        });
    }

    /// Waits until one more connection fits under `max`, closing one by the
    /// [module's rule](self) if needed; `false` when none can be closed and the new one must
    /// be. The wait (about a grace) also delays a shutdown by as much.
    pub(crate) async fn make_room(&mut self, max: usize) -> bool {
        loop {
            match self.try_make_room(max, Instant::now()) {
                Room::Made => return true,
                Room::Wait(until) => tokio::time::sleep_until(until).await,
                Room::Full => return false,
            }
        }
    }

    fn try_make_room(&mut self, max: usize, now: Instant) -> Room {
        self.open.retain(|open| !open.task.is_finished());
        if self.open.len() < max {
            return Room::Made;
        }
        let ranks = self.open.iter().map(|open| EvictionRank {
            accepted: open.activity.accepted,
            phase: open.activity.phase(),
            stalled_since: open.stall.since(),
        });
        let Some((index, reason, since)) = victim(ranks, self.eviction, now) else {
            return Room::Full;
        };
        let reason = match reason {
            Reason::InGrace => return Room::Wait(since),
            Reason::NotAnswered | Reason::Stalled | Reason::Idle | Reason::Waiting => reason,
        };
        let open = self.open.swap_remove(index);
        // Dropping the task closes the socket; its place is the new connection's from now.
        open.task.abort();
        tracing::debug!(
            for_ = ?now.saturating_duration_since(since),
            "{}: connection limit reached; closing {}",
            self.server,
            reason.describe()
        );
        Room::Made
    }
}

/// Where one connection is in its answers, published by the server: one atomic, stored once
/// when an answer begins and once when it ends (and around a long poll's wait), never locked.
#[derive(Debug)]
pub(crate) struct Activity {
    accepted: Instant,
    /// [`NEVER_SERVED`], [`ANSWERING`], [`WAITING`] with when the wait began, or when the last
    /// answer ended; instants in nanoseconds after `accepted`.
    state: AtomicU64,
}

const NEVER_SERVED: u64 = 0;
const ANSWERING: u64 = u64::MAX;
/// The flag of a request waiting for a change; the bits below it say since when.
const WAITING: u64 = 1 << 63;
/// The most nanoseconds an instant is told in (146 years): below the flag.
const MAX_NANOS: u64 = WAITING - 2;

impl Activity {
    /// A connection accepted now.
    pub(crate) fn new() -> Self {
        Self {
            accepted: Instant::now(),
            state: AtomicU64::new(NEVER_SERVED),
        }
    }

    /// An answer begins (the admin server: its service was called with a request; the agent:
    /// its line is being written); the connection counts as answering until the returned
    /// guard is dropped (with the answer done, or with the connection).
    pub(crate) fn answering(self: &Arc<Self>) -> Answering {
        self.state.store(ANSWERING, Ordering::Relaxed);
        Answering(self.clone())
    }

    /// The request being answered waits for a change (the page's long poll) until the
    /// returned guard is dropped: meanwhile the connection counts as waiting, which gives its
    /// place up after the idle ones, and as answering again afterwards.
    #[cfg_attr(
        not(feature = "page"),
        allow(
            dead_code,
            reason = "the page's updates are the only requests that wait"
        )
    )]
    pub(crate) fn waiting(self: &Arc<Self>) -> Waiting {
        self.state.store(WAITING | self.nanos(), Ordering::Relaxed);
        Waiting(self.clone())
    }

    /// Now, in nanoseconds after the accept, within the range the state tells.
    fn nanos(&self) -> u64 {
        let nanos = u64::try_from(self.accepted.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // The ends are the other phases; nothing ends within 1 ns of the accept or 146 years
        // after it.
        nanos.clamp(NEVER_SERVED + 1, MAX_NANOS)
    }

    fn phase(&self) -> Phase {
        let at = |nanos: u64| self.accepted + Duration::from_nanos(nanos);
        match self.state.load(Ordering::Relaxed) {
            NEVER_SERVED => Phase::NeverServed,
            ANSWERING => Phase::Answering,
            waiting if waiting & WAITING != 0 => Phase::Waiting(at(waiting & !WAITING)),
            nanos => Phase::IdleSince(at(nanos)),
        }
    }
}

/// A request waiting for a change; see [`Activity::waiting`].
#[must_use = "the request counts as waiting until this is dropped"]
#[cfg_attr(
    not(feature = "page"),
    allow(
        dead_code,
        reason = "the page's updates are the only requests that wait"
    )
)]
pub(crate) struct Waiting(Arc<Activity>);

impl Drop for Waiting {
    fn drop(&mut self) {
        // The wait is over: the answer is being made.
        self.0.state.store(ANSWERING, Ordering::Relaxed);
    }
}

/// An answer being made on a connection; see [`Activity::answering`].
#[must_use = "the connection counts as answering until this is dropped"]
pub(crate) struct Answering(Arc<Activity>);

impl Drop for Answering {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.state.store(activity.nanos(), Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No answer begun yet (the admin server: no complete request head).
    NeverServed,
    /// An answer is being made.
    Answering,
    /// Between answers (or after the only one), the last ended at this instant.
    IdleSince(Instant),
    /// A request waits for a change (a long poll), since this instant: no answer is being
    /// made meanwhile.
    Waiting(Instant),
}

/// Why a connection may be closed to make room, in the order the rule tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reason {
    /// No answer begun, and accepted longer ago than [`Eviction::before_answer`].
    NotAnswered,
    /// Its writes wait on a client that does not read.
    Stalled,
    /// Idle for longer than [`Eviction::after_answer`].
    Idle,
    /// Waiting for a change: someone looks at it, so it goes after the idle ones, but a
    /// place for a probe comes first.
    Waiting,
    /// Within a grace: not closed before it is over (`since` is when it ends).
    InGrace,
}

impl Reason {
    fn describe(self) -> &'static str {
        match self {
            Self::NotAnswered => {
                "the oldest connection not answered yet (no complete request head)"
            }
            Self::Stalled => {
                "the connection that has waited longest on a client that does not read"
            }
            Self::Idle => "the connection idle longest since its last answer",
            Self::Waiting => "the request waiting longest for a change (an open page)",
            Self::InGrace => "a connection still within its grace",
        }
    }
}

/// One connection, as the rule sees it.
#[derive(Debug, Clone, Copy)]
struct EvictionRank {
    accepted: Instant,
    phase: Phase,
    /// Since when its writes have waited on the client, if they are waiting.
    stalled_since: Option<Instant>,
}

impl EvictionRank {
    /// Why it may be closed and since when that has been so (the older, the sooner it goes;
    /// for [`Reason::InGrace`], when the grace ends); `None` while an answer is being made.
    fn closable(self, eviction: Eviction, now: Instant) -> Option<(Reason, Instant)> {
        match (self.phase, self.stalled_since) {
            (Phase::NeverServed, _) => Some(
                within(self.accepted, eviction.before_answer, now)
                    .unwrap_or((Reason::NotAnswered, self.accepted)),
            ),
            // Before `Answering`: hyper does not poll the next answer while the previous one
            // waits to be written, so a client that does not read holds its connection there.
            (Phase::Answering | Phase::IdleSince(_) | Phase::Waiting(_), Some(since)) => {
                Some((Reason::Stalled, since))
            }
            (Phase::Answering, None) => None,
            (Phase::Waiting(since), None) => Some((Reason::Waiting, since)),
            (Phase::IdleSince(since), None) => {
                Some(within(since, eviction.after_answer, now).unwrap_or((Reason::Idle, since)))
            }
        }
    }
}

/// [`Reason::InGrace`] with the end of the grace, while less than `grace` has passed since
/// `start` (none when it is zero).
fn within(start: Instant, grace: Duration, now: Instant) -> Option<(Reason, Instant)> {
    (now.saturating_duration_since(start) < grace).then(|| (Reason::InGrace, start + grace))
}

/// The connection to close (its index, why, and since when), or `None` when every one is
/// being answered.
fn victim(
    ranks: impl Iterator<Item = EvictionRank>,
    eviction: Eviction,
    now: Instant,
) -> Option<(usize, Reason, Instant)> {
    ranks
        .enumerate()
        .filter_map(|(index, standing)| {
            let (reason, since) = standing.closable(eviction, now)?;
            Some((index, reason, since))
        })
        .min_by_key(|&(_, reason, since)| (reason, since))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_millis(100);

    /// The admin server's shape: a grace to send a request, none after an answer.
    const KEEP_ALIVE: Eviction = Eviction {
        before_answer: GRACE,
        after_answer: Duration::ZERO,
    };

    /// The agent's shape: a grace to read the answer too.
    const ONE_ANSWER: Eviction = Eviction {
        after_answer: GRACE,
        ..KEEP_ALIVE
    };

    fn at(start: Instant, seconds: u64) -> Instant {
        start + Duration::from_secs(seconds)
    }

    /// Connections accepted one second apart, the first at `start`.
    fn ranks(start: Instant, phases: &[(Phase, Option<u64>)]) -> Vec<EvictionRank> {
        phases
            .iter()
            .zip(0..)
            .map(|(&(phase, stalled), second)| EvictionRank {
                accepted: at(start, second),
                phase,
                stalled_since: stalled.map(|second| at(start, second)),
            })
            .collect()
    }

    /// What `eviction` closes, in order, until only answers being made are left.
    fn closed_in_turn(
        open: &mut Vec<EvictionRank>,
        eviction: Eviction,
        now: Instant,
    ) -> Vec<(Instant, Reason, Instant)> {
        let mut closed = Vec::new();
        while let Some((index, reason, since)) = victim(open.iter().copied(), eviction, now) {
            closed.push((open[index].accepted, reason, since));
            open.remove(index);
        }
        closed
    }

    #[test]
    fn the_rule_tries_each_kind_in_turn_oldest_first() {
        let start = Instant::now();
        let now = at(start, 100);
        let idle = |second| Phase::IdleSince(at(start, second));
        let mut open = ranks(
            start,
            &[
                (Phase::Answering, None),
                (idle(10), None),
                (idle(5), None),
                (idle(20), Some(30)),
                (Phase::Answering, Some(25)),
                (Phase::NeverServed, None),
                (Phase::NeverServed, Some(40)),
                (Phase::Waiting(at(start, 3)), None),
            ],
        );
        let new = now - GRACE / 2;
        open.push(EvictionRank {
            accepted: new,
            phase: Phase::NeverServed,
            stalled_since: None,
        });
        assert_eq!(
            closed_in_turn(&mut open, KEEP_ALIVE, now),
            [
                (at(start, 5), Reason::NotAnswered, at(start, 5)),
                (at(start, 6), Reason::NotAnswered, at(start, 6)),
                (at(start, 4), Reason::Stalled, at(start, 25)),
                (at(start, 3), Reason::Stalled, at(start, 30)),
                (at(start, 2), Reason::Idle, at(start, 5)),
                (at(start, 1), Reason::Idle, at(start, 10)),
                (at(start, 7), Reason::Waiting, at(start, 3)),
                (new, Reason::InGrace, new + GRACE),
            ]
        );
        assert_eq!(open.len(), 1, "the request being answered stays");
        assert_eq!(open[0].phase, Phase::Answering);
    }

    #[test]
    fn a_grace_after_the_answer_keeps_a_just_answered_connection_to_the_end() {
        let start = Instant::now();
        let now = at(start, 100);
        let mut open = ranks(
            start,
            &[
                (Phase::IdleSince(now - GRACE / 2), None),
                (Phase::IdleSince(at(start, 50)), None),
                (Phase::IdleSince(now - GRACE / 4), Some(99)),
            ],
        );
        open.push(EvictionRank {
            accepted: now - GRACE / 4,
            phase: Phase::NeverServed,
            stalled_since: None,
        });
        assert_eq!(
            closed_in_turn(&mut open, ONE_ANSWER, now),
            [
                (at(start, 2), Reason::Stalled, at(start, 99)),
                (at(start, 1), Reason::Idle, at(start, 50)),
                // The grace that ends first, whichever it is.
                (at(start, 0), Reason::InGrace, now + GRACE / 2),
                (now - GRACE / 4, Reason::InGrace, now + GRACE * 3 / 4),
            ]
        );
    }

    #[test]
    fn when_every_request_is_being_answered_nothing_is_closed() {
        let start = Instant::now();
        let open = ranks(start, &[(Phase::Answering, None); 3]);
        assert_eq!(victim(open.into_iter(), KEEP_ALIVE, at(start, 100)), None);
        assert_eq!(victim(std::iter::empty(), KEEP_ALIVE, start), None);
    }

    /// A connection of a task that never ends.
    fn connection(open: &mut OpenConnections) -> (tokio::task::JoinHandle<()>, Arc<Activity>) {
        let task = tokio::spawn(std::future::pending());
        let activity = Arc::new(Activity::new());
        open.push(task.abort_handle(), activity.clone(), Arc::default());
        (task, activity)
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_keeps_its_place_for_the_grace() {
        let mut open = OpenConnections::new("test", KEEP_ALIVE);
        let (task, _) = connection(&mut open);
        let now = Instant::now();
        assert_eq!(open.try_make_room(2, now), Room::Made, "a free place");
        assert_eq!(open.try_make_room(1, now), Room::Wait(now + GRACE));
        assert!(!task.is_finished());
        // Paused time: the wait ends at once, and the connection is closed then.
        assert!(open.make_room(1).await);
        assert_eq!(Instant::now(), now + GRACE);
        assert!(task.await.unwrap_err().is_cancelled());
        assert!(open.open.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_new_connection_is_closed_when_every_request_is_being_answered() {
        let mut open = OpenConnections::new("test", KEEP_ALIVE);
        let (task, activity) = connection(&mut open);
        let answering = activity.answering();
        assert!(!open.make_room(1).await);
        assert!(!task.is_finished());
        drop(answering);
        let answered = Instant::now();
        assert!(open.make_room(1).await, "idle between requests");
        assert_eq!(
            Instant::now(),
            answered,
            "at once, with no grace after an answer"
        );
        assert!(task.await.unwrap_err().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn an_answered_connection_keeps_its_place_for_the_grace_after_its_answer() {
        let mut open = OpenConnections::new("test", ONE_ANSWER);
        let (task, activity) = connection(&mut open);
        tokio::time::advance(GRACE * 3).await;
        drop(activity.answering());
        let answered = Instant::now();
        assert_eq!(
            open.try_make_room(1, answered),
            Room::Wait(answered + GRACE)
        );
        assert!(open.make_room(1).await);
        assert_eq!(Instant::now(), answered + GRACE);
        assert!(task.await.unwrap_err().is_cancelled());
    }

    #[test]
    fn the_activity_follows_the_requests() {
        let activity = Arc::new(Activity::new());
        assert_eq!(activity.phase(), Phase::NeverServed);
        let answering = activity.answering();
        assert_eq!(activity.phase(), Phase::Answering);
        drop(answering);
        let Phase::IdleSince(first) = activity.phase() else {
            panic!("{:?}", activity.phase());
        };
        assert!(first > activity.accepted && first <= Instant::now());
        let answering = activity.answering();
        assert_eq!(activity.phase(), Phase::Answering);
        drop(answering);
        let Phase::IdleSince(second) = activity.phase() else {
            panic!("{:?}", activity.phase());
        };
        assert!(second >= first);
        let answering = activity.answering();
        let waiting = activity.waiting();
        let Phase::Waiting(since) = activity.phase() else {
            panic!("{:?}", activity.phase());
        };
        assert!(since >= second);
        drop(waiting);
        assert_eq!(activity.phase(), Phase::Answering, "the wait is over");
        drop(answering);
        assert!(matches!(activity.phase(), Phase::IdleSince(_)));
    }
}
