//! The admin server's open connections, and which one gives up its place when they are all
//! taken.
//!
//! The rule: when full, close the oldest connection that has not sent a complete request head
//! (silent since it connected, or trickling its first head), else the one whose writes have
//! waited longest on a client that does not read, else the keep-alive connection idle longest
//! between requests. A connection whose request is being answered is never closed; the new
//! connection is, only when every place has one. Anyone who reaches the port can open
//! connections, and liveness and readiness need no key: clients that do not finish a request
//! must not keep the kubelet's probes out.
//!
//! A connection keeps its place for [`HEAD_GRACE`] however many others arrive, so that a client
//! that connects and then writes its request is not closed in between. While every candidate
//! is that new, the accept loop waits, and newcomers queue in the listen backlog in the order
//! they came, their requests already sent when they are accepted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::io::StallWatch;

/// How long a new connection keeps its place without a request head, whoever else connects.
/// Long enough for a client on a loaded machine to write its request after connecting; short
/// enough that clients which never write give their places up quickly (all of them every
/// 100 ms: 640 a second at the default 64). Without the grace, clients that reconnect as soon
/// as they are closed would cycle the places faster than a probe can write its head (tests/it/admin.rs
/// `silent_clients_that_reconnect_cannot_keep_the_probes_out`).
const HEAD_GRACE: Duration = Duration::from_millis(100);

/// The connections being served.
#[derive(Default)]
pub(super) struct OpenConnections(Vec<Open>);

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
    /// Every candidate is within its [`HEAD_GRACE`]; the first leaves it then.
    Wait(Instant),
    /// Every place has a request being answered: the new connection must be closed.
    Full,
}

impl OpenConnections {
    pub(super) fn push(
        &mut self,
        task: AbortHandle,
        activity: Arc<Activity>,
        stall: Arc<StallWatch>,
    ) {
        self.0.push(Open {
            task,
            activity,
            stall,
        });
    }

    /// Waits until one more connection fits under `max`, closing one by the
    /// [module's rule](self) if needed; `false` when none can be closed and the new one must
    /// be. The wait (at most [`HEAD_GRACE`]) also delays a shutdown by as much.
    pub(super) async fn make_room(&mut self, max: usize) -> bool {
        loop {
            match self.try_make_room(max, Instant::now()) {
                Room::Made => return true,
                Room::Wait(until) => tokio::time::sleep_until(until).await,
                Room::Full => return false,
            }
        }
    }

    fn try_make_room(&mut self, max: usize, now: Instant) -> Room {
        self.0.retain(|open| !open.task.is_finished());
        if self.0.len() < max {
            return Room::Made;
        }
        let standings = self.0.iter().map(|open| Standing {
            accepted: open.activity.accepted,
            phase: open.activity.phase(),
            stalled_since: open.stall.since(),
        });
        let Some((index, reason, since)) = victim(standings, now) else {
            return Room::Full;
        };
        let reason = match reason {
            Reason::NoHeadYet => return Room::Wait(since + HEAD_GRACE),
            Reason::NoHead | Reason::Stalled | Reason::IdleKeepAlive => reason,
        };
        let open = self.0.swap_remove(index);
        // Dropping the task closes the socket; its place is the new connection's from now.
        open.task.abort();
        tracing::debug!(
            for_ = ?now.saturating_duration_since(since),
            "admin server: connection limit reached; closing {}",
            reason.describe()
        );
        Room::Made
    }
}

/// Where one connection is in its requests, published by its service: one atomic, stored
/// once when a request head arrives and once when its response is ready, never locked.
#[derive(Debug)]
pub(super) struct Activity {
    accepted: Instant,
    /// [`NEVER_SERVED`], [`ANSWERING`], or when the last response was ready, in nanoseconds
    /// after `accepted`.
    state: AtomicU64,
}

const NEVER_SERVED: u64 = 0;
const ANSWERING: u64 = u64::MAX;

impl Activity {
    /// A connection accepted now.
    pub(super) fn new() -> Self {
        Self {
            accepted: Instant::now(),
            state: AtomicU64::new(NEVER_SERVED),
        }
    }

    /// The service was called with a request; the connection counts as answering until the
    /// returned guard is dropped (with the response ready, or with the connection).
    pub(super) fn answering(self: &Arc<Self>) -> Answering {
        self.state.store(ANSWERING, Ordering::Relaxed);
        Answering(self.clone())
    }

    fn phase(&self) -> Phase {
        match self.state.load(Ordering::Relaxed) {
            NEVER_SERVED => Phase::NeverServed,
            ANSWERING => Phase::Answering,
            nanos => Phase::IdleSince(self.accepted + Duration::from_nanos(nanos)),
        }
    }
}

/// A request being answered on a connection; see [`Activity::answering`].
#[must_use = "the connection counts as answering until this is dropped"]
pub(super) struct Answering(Arc<Activity>);

impl Drop for Answering {
    fn drop(&mut self) {
        let activity = &self.0;
        let nanos = u64::try_from(activity.accepted.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // The two ends are the other phases; nothing ends within 1 ns of the accept or 584
        // years after it.
        let idle_since = nanos.clamp(NEVER_SERVED + 1, ANSWERING - 1);
        activity.state.store(idle_since, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No complete request head yet.
    NeverServed,
    /// The service was called and its response is not ready yet.
    Answering,
    /// Between requests, the last response ready at this instant.
    IdleSince(Instant),
}

/// Why a connection may be closed to make room, in the order the rule tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reason {
    /// No complete request head, and accepted more than [`HEAD_GRACE`] ago.
    NoHead,
    /// Its writes wait on a client that does not read.
    Stalled,
    /// Between requests.
    IdleKeepAlive,
    /// No complete request head yet, within [`HEAD_GRACE`]: not closed before it is over.
    NoHeadYet,
}

impl Reason {
    fn describe(self) -> &'static str {
        match self {
            Self::NoHead => "the oldest connection without a complete request head",
            Self::Stalled => {
                "the connection that has waited longest on a client that does not read"
            }
            Self::IdleKeepAlive => "the keep-alive connection idle longest",
            Self::NoHeadYet => "a connection still within its grace to send a request head",
        }
    }
}

/// One connection, as the rule sees it.
#[derive(Debug, Clone, Copy)]
struct Standing {
    accepted: Instant,
    phase: Phase,
    /// Since when its writes have waited on the client, if they are waiting.
    stalled_since: Option<Instant>,
}

impl Standing {
    /// Why it may be closed and since when that has been so (the older, the sooner it goes);
    /// `None` while its request is being answered.
    fn closable(self, now: Instant) -> Option<(Reason, Instant)> {
        match (self.phase, self.stalled_since) {
            (Phase::NeverServed, _) if now < self.accepted + HEAD_GRACE => {
                Some((Reason::NoHeadYet, self.accepted))
            }
            (Phase::NeverServed, _) => Some((Reason::NoHead, self.accepted)),
            // Before `Answering`: hyper does not poll the next answer while the previous one
            // waits to be written, so a client that does not read holds its connection there.
            (Phase::Answering | Phase::IdleSince(_), Some(since)) => Some((Reason::Stalled, since)),
            (Phase::Answering, None) => None,
            (Phase::IdleSince(since), None) => Some((Reason::IdleKeepAlive, since)),
        }
    }
}

/// The connection to close (its index, why, and since when), or `None` when every one is
/// being answered.
fn victim(
    standings: impl Iterator<Item = Standing>,
    now: Instant,
) -> Option<(usize, Reason, Instant)> {
    standings
        .enumerate()
        .filter_map(|(index, standing)| {
            let (reason, since) = standing.closable(now)?;
            Some((index, reason, since))
        })
        .min_by_key(|&(_, reason, since)| (reason, since))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, seconds: u64) -> Instant {
        start + Duration::from_secs(seconds)
    }

    /// Connections accepted one second apart, the first at `start`.
    fn standings(start: Instant, phases: &[(Phase, Option<u64>)]) -> Vec<Standing> {
        phases
            .iter()
            .zip(0..)
            .map(|(&(phase, stalled), second)| Standing {
                accepted: at(start, second),
                phase,
                stalled_since: stalled.map(|second| at(start, second)),
            })
            .collect()
    }

    #[test]
    fn the_rule_tries_each_kind_in_turn_oldest_first() {
        let start = Instant::now();
        let now = at(start, 100);
        let idle = |second| Phase::IdleSince(at(start, second));
        let mut open = standings(
            start,
            &[
                (Phase::Answering, None),
                (idle(10), None),
                (idle(5), None),
                (idle(20), Some(30)),
                (Phase::Answering, Some(25)),
                (Phase::NeverServed, None),
                (Phase::NeverServed, Some(40)),
            ],
        );
        open.push(Standing {
            accepted: now - HEAD_GRACE / 2,
            phase: Phase::NeverServed,
            stalled_since: None,
        });
        let mut closed = Vec::new();
        while let Some((index, reason, since)) = victim(open.iter().copied(), now) {
            closed.push((open[index].accepted, reason, since));
            open.remove(index);
        }
        assert_eq!(
            closed,
            [
                (at(start, 5), Reason::NoHead, at(start, 5)),
                (at(start, 6), Reason::NoHead, at(start, 6)),
                (at(start, 4), Reason::Stalled, at(start, 25)),
                (at(start, 3), Reason::Stalled, at(start, 30)),
                (at(start, 2), Reason::IdleKeepAlive, at(start, 5)),
                (at(start, 1), Reason::IdleKeepAlive, at(start, 10)),
                (
                    now - HEAD_GRACE / 2,
                    Reason::NoHeadYet,
                    now - HEAD_GRACE / 2
                ),
            ]
        );
        assert_eq!(open.len(), 1, "the request being answered stays");
        assert_eq!(open[0].phase, Phase::Answering);
    }

    #[test]
    fn when_every_request_is_being_answered_nothing_is_closed() {
        let start = Instant::now();
        let open = standings(start, &[(Phase::Answering, None); 3]);
        assert_eq!(victim(open.into_iter(), at(start, 100)), None);
        assert_eq!(victim(std::iter::empty(), start), None);
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
        let mut open = OpenConnections::default();
        let (task, _) = connection(&mut open);
        let now = Instant::now();
        assert_eq!(open.try_make_room(2, now), Room::Made, "a free place");
        assert_eq!(open.try_make_room(1, now), Room::Wait(now + HEAD_GRACE));
        assert!(!task.is_finished());
        // Paused time: the wait ends at once, and the connection is closed then.
        assert!(open.make_room(1).await);
        assert_eq!(Instant::now(), now + HEAD_GRACE);
        assert!(task.await.unwrap_err().is_cancelled());
        assert!(open.0.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_new_connection_is_closed_when_every_request_is_being_answered() {
        let mut open = OpenConnections::default();
        let (task, activity) = connection(&mut open);
        let answering = activity.answering();
        assert!(!open.make_room(1).await);
        assert!(!task.is_finished());
        drop(answering);
        assert!(open.make_room(1).await, "idle between requests");
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
    }
}
