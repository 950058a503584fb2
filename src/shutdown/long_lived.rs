//! Long-lived connections registered with the drain: each is counted while it lives, and
//! told when its turn to close has come, the turns spread over the close window.
//!
//! Nothing here runs per message. A connection's [`LongLived`] guard is touched when it is
//! registered and when it is dropped, never in between; its [`Closing`] future, polled beside
//! the connection's reads (in a `select!` or by an [`UntilClosing`] stream), costs one atomic load and
//! a waker comparison per poll until the drain starts: no lock, no shared write. (tokio's
//! `Notify`, which [`DrainHandle::started`] uses, takes its waiter list's lock on every poll
//! of a pending `Notified`: fine for one waiter, not for every connection's every message.)

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use tokio::time::Sleep;

use super::DrainHandle;
use super::in_flight::InFlightGuard;
use crate::random::fraction;

/// How many batches the close window is cut into: connections are dealt to them in turn as
/// they learn that the drain has started, so that each tenth of the window closes a tenth of
/// the connections open then (within one), whatever order they registered and left in.
pub(super) const BATCHES: u32 = 10;

/// The drain's book of long-lived connections: how many are open, under which names, whose
/// turn is next, and who waits for the drain to start. Aligned so that a registration's
/// writes never share a cache line with the drain's fields every request reads.
#[repr(align(128))]
pub(super) struct Registry {
    /// Registered connections still open: the part of the in-flight count that is theirs.
    open: AtomicUsize,
    /// Registrations and drops so far: a reader that rendered the names (metrics, the page)
    /// renders again when it moves.
    changes: AtomicU64,
    /// The connections still open, by the name each was registered with, every name
    /// registered so far kept (at zero once its connections have closed, so that a metric's
    /// series never vanishes; the names are the program's own, `'static`, so they are few).
    /// Touched at a registration and a drop, never per message.
    named: Mutex<BTreeMap<&'static str, usize>>,
    /// Turns dealt so far (wrapping): the next one goes to batch `dealt % BATCHES`.
    dealt: AtomicU32,
    /// The wakers of the [`Closing`] futures waiting for the drain to start, by key.
    parked: Mutex<Parked>,
}

#[derive(Default)]
struct Parked {
    next_key: u64,
    wakers: HashMap<u64, Waker>,
}

impl Registry {
    pub(super) fn new() -> Self {
        Self {
            open: AtomicUsize::new(0),
            changes: AtomicU64::new(0),
            named: Mutex::new(BTreeMap::new()),
            dealt: AtomicU32::new(0),
            parked: Mutex::new(Parked::default()),
        }
    }

    /// Registered connections still open.
    pub(super) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Registrations and drops so far.
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry", feature = "page")),
        allow(dead_code)
    )]
    pub(super) fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// The connections still open under every name registered so far (zero for a name whose
    /// connections have all closed), in the order of the names.
    pub(super) fn named(&self) -> Vec<(&'static str, usize)> {
        let named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
        named.iter().map(|(&name, &open)| (name, open)).collect()
    }

    fn register(&self, name: &'static str) {
        let mut named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
        *named.entry(name).or_insert(0) += 1;
        self.open.fetch_add(1, Ordering::AcqRel);
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    fn unregister(&self, name: &'static str) {
        let mut named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = named.get_mut(name) {
            *open -= 1;
        }
        self.open.fetch_sub(1, Ordering::AcqRel);
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Wakes every [`Closing`] future waiting for the drain to start: called once the drain
    /// reads as started, so that a future parking after this sees it started.
    pub(super) fn wake_parked(&self) {
        let wakers = std::mem::take(&mut self.lock().wakers);
        for waker in wakers.into_values() {
            waker.wake();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Parked> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a connection's turn falls in the close window, as a fraction of it: the next batch
/// in turn, at a random point of it.
fn next_turn(registry: &Registry) -> f64 {
    let batch = registry.dealt.fetch_add(1, Ordering::Relaxed) % BATCHES;
    (f64::from(batch) + fraction()) / f64::from(BATCHES)
}

/// A long-lived connection (a WebSocket, an event stream, a gRPC server stream) registered
/// with a drain under a name, from [`DrainHandle::long_lived`]: hold it for the connection's
/// life.
///
/// While it is held, the connection counts in [`DrainHandle::in_flight`], so
/// [`DrainHandle::drained`] waits for it (within the timeout) and reports it
/// [abandoned](crate::drain::Drained::abandoned_long_lived) if the timeout ends the drain
/// first, by its name in the timeout's log line; the metrics and the operator's page count
/// the connections open under each name. [`closing`](Self::closing) resolves when the connection's turn to close has come:
/// close it then, with the protocol's own goodbye (a WebSocket close frame 1001 Going Away,
/// the end of an event stream's body, a gRPC stream's `UNAVAILABLE`), and drop the guard.
/// [`until_closing`](Self::until_closing) does that for a stream.
///
/// The turns are spread over the [close window](crate::DrainConfig::close_window), which
/// starts when the [drain delay](crate::DrainConfig::delay) has passed. A connection
/// registered after that is told to close at once.
///
/// A message the client sends while the close is on its way is not handled: a client that
/// must not lose one keeps it until the application acknowledges it, and sends again on its
/// next connection what was not acknowledged (see the [serving
/// guide](crate::guide::serving#long-lived-connections-websockets-event-streams-grpc-streams)).
///
/// See the [module docs](crate::drain#long-lived-connections) for an example.
#[must_use = "the connection counts only while the guard is held"]
pub struct LongLived {
    drain: DrainHandle,
    /// What it is: a route, a kind.
    name: &'static str,
    /// Registered after the drain delay: told to close at once, not paced.
    late: bool,
    /// The connection's count in the drain's in-flight requests.
    _in_flight: InFlightGuard,
}

impl LongLived {
    pub(super) fn new(drain: &DrainHandle, name: &'static str, in_flight: InFlightGuard) -> Self {
        drain.long_lived_registry().register(name);
        let late = drain
            .window_start()
            .is_some_and(|start| crate::clock::now() >= start);
        Self {
            drain: drain.clone(),
            name,
            late,
            _in_flight: in_flight,
        }
    }

    /// The name it was registered with.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Resolves when this connection's turn to close has come: at its point of the close
    /// window, once the drain has started and its delay passed. Resolves at once for a
    /// connection registered after the delay.
    ///
    /// Make it once per connection and poll it beside the connection's reads: a poll costs
    /// an atomic load until the drain starts, and a timer's check after. It is `Unpin`, so a
    /// `select!` loop can poll `&mut closing`, and once resolved it stays so.
    pub fn closing(&self) -> impl Future<Output = ()> + Send + Unpin + use<> {
        self.turn()
    }

    /// The future of [`closing`](Self::closing), by its name.
    fn turn(&self) -> Closing {
        Closing {
            drain: self.drain.clone(),
            late: self.late,
            turn: None,
            state: State::Waiting { parked: None },
        }
    }

    /// `stream`, ended at this connection's turn to close, taking the guard with it: the
    /// connection counts until the stream ends or is dropped. An event stream (axum's `Sse`)
    /// made of it ends its body cleanly at the turn; a gRPC stream should say why with a last
    /// item: see [`until_closing_with`](Self::until_closing_with).
    pub fn until_closing<S: futures_core::Stream>(
        self,
        stream: S,
    ) -> impl futures_core::Stream<Item = S::Item> + use<S> {
        UntilClosing::new(self, stream, None)
    }

    /// `stream`, ended at this connection's turn to close with `last`, taking the guard with
    /// it: for a tonic stream, `Err(Status::unavailable(..))`, which gRPC clients retry (a
    /// stream that just ends reads as a finished call, `OK`).
    pub fn until_closing_with<S: futures_core::Stream>(
        self,
        stream: S,
        last: S::Item,
    ) -> impl futures_core::Stream<Item = S::Item> + use<S> {
        UntilClosing::new(self, stream, Some(last))
    }
}

impl Drop for LongLived {
    fn drop(&mut self) {
        self.drain.long_lived_registry().unregister(self.name);
        // The in-flight guard drops after this, waking the drain's waiter if it waits.
    }
}

impl fmt::Debug for LongLived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            drain: _,
            name,
            late,
            _in_flight: _,
        } = self;
        f.debug_struct("LongLived")
            .field("name", name)
            .field("late", late)
            .finish()
    }
}

/// The future of [`LongLived::closing`]: resolves when the connection's turn to close has
/// come. `Unpin`, so a `select!` loop can poll `&mut closing`; once resolved, it stays so.
#[must_use = "futures do nothing unless polled"]
struct Closing {
    drain: DrainHandle,
    /// Registered after the drain delay: its turn is at once.
    late: bool,
    /// Its turn in the close window, as a fraction of it, once dealt (when it first sees the
    /// drain started).
    turn: Option<f64>,
    state: State,
}

enum State {
    /// The drain has not started: parked under a key, with the waker last given.
    Waiting {
        parked: Option<(u64, Waker)>,
    },
    /// The drain has started: the timer of the turn.
    Turn(Pin<Box<Sleep>>),
    Closed,
}

impl Closing {
    /// Parks `waker` to be woken at the drain's start, unless the waker parked last is the
    /// same task's (then nothing is locked).
    fn park(parked: &mut Option<(u64, Waker)>, registry: &Registry, waker: &Waker) {
        if let Some((_, last)) = parked
            && last.will_wake(waker)
        {
            return;
        }
        let mut book = registry.lock();
        let key = match parked {
            Some((key, _)) => *key,
            None => {
                book.next_key += 1;
                book.next_key
            }
        };
        book.wakers.insert(key, waker.clone());
        *parked = Some((key, waker.clone()));
    }

    fn unpark(&mut self) {
        if let State::Waiting {
            parked: Some((key, _)),
        } = &self.state
        {
            self.drain.long_lived_registry().lock().wakers.remove(key);
        }
    }

    /// Deals this connection its turn, and says when it comes: the window's start plus the
    /// turn's part of the window.
    fn deadline(&mut self, window_start: Instant) -> Instant {
        let turn = if self.late {
            0.0
        } else {
            next_turn(self.drain.long_lived_registry())
        };
        self.turn = Some(turn);
        let window = self.drain.config().close_window_or_default();
        window_start + window.mul_f64(turn)
    }
}

impl Future for Closing {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let State::Waiting { parked } = &mut this.state {
            let window_start = match this.drain.window_start() {
                Some(start) => start,
                None => {
                    Self::park(parked, this.drain.long_lived_registry(), cx.waker());
                    // Read again after parking: a start in between has woken no one.
                    match this.drain.window_start() {
                        Some(start) => start,
                        None => return Poll::Pending,
                    }
                }
            };
            let deadline = this.deadline(window_start);
            this.unpark();
            this.state = if crate::clock::now() >= deadline {
                State::Closed
            } else {
                State::Turn(Box::pin(tokio::time::sleep_until(deadline.into())))
            };
        }
        if let State::Turn(sleep) = &mut this.state {
            std::task::ready!(sleep.as_mut().poll(cx));
            this.state = State::Closed;
        }
        Poll::Ready(())
    }
}

impl Drop for Closing {
    fn drop(&mut self) {
        self.unpark();
    }
}

impl fmt::Debug for Closing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            drain: _,
            late,
            turn,
            state,
        } = self;
        let phase = match state {
            State::Waiting { .. } => "waiting for the drain",
            State::Turn(_) => "waiting for its turn",
            State::Closed => "closed",
        };
        f.debug_struct("Closing")
            .field("late", late)
            .field("turn", turn)
            .field("phase", &phase)
            .finish()
    }
}

pin_project_lite::pin_project! {
    /// A stream ended at its connection's turn to close: [`LongLived::until_closing`] and
    /// [`LongLived::until_closing_with`].
    ///
    /// It yields the inner stream's items until the turn comes, then the last item if one
    /// was given, then ends; the connection's guard is dropped when it ends (or is dropped).
    #[must_use = "streams do nothing unless polled"]
    struct UntilClosing<S: futures_core::Stream> {
        #[pin]
        stream: S,
        closing: Closing,
        last: Option<S::Item>,
        // `None` once the stream has ended.
        connection: Option<LongLived>,
    }
}

impl<S: futures_core::Stream> UntilClosing<S> {
    fn new(connection: LongLived, stream: S, last: Option<S::Item>) -> Self {
        Self {
            stream,
            closing: connection.turn(),
            last,
            connection: Some(connection),
        }
    }
}

impl<S: futures_core::Stream> futures_core::Stream for UntilClosing<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.project();
        if this.connection.is_none() {
            return Poll::Ready(None);
        }
        if Pin::new(this.closing).poll(cx).is_ready() {
            *this.connection = None;
            return Poll::Ready(this.last.take());
        }
        let next = std::task::ready!(this.stream.poll_next(cx));
        if next.is_none() {
            *this.connection = None;
        }
        Poll::Ready(next)
    }
}

impl<S: futures_core::Stream> fmt::Debug for UntilClosing<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            stream: _,
            closing,
            last,
            connection,
        } = self;
        f.debug_struct("UntilClosing")
            .field("closing", closing)
            .field("ends_with_an_item", &last.is_some())
            .field("ended", &connection.is_none())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;
    use std::time::Duration;

    use futures_core::Stream;

    use super::*;
    use crate::DrainConfig;

    fn drain(delay_ms: u64, window_ms: u64, timeout_ms: u64) -> DrainHandle {
        DrainHandle::new(
            DrainConfig::new()
                .delay(Duration::from_millis(delay_ms))
                .close_window(Duration::from_millis(window_ms))
                .timeout(Duration::from_millis(timeout_ms)),
        )
    }

    /// Whether `future` is ready on its first poll.
    fn ready_now(future: impl Future<Output = ()>) -> bool {
        let mut context = Context::from_waker(Waker::noop());
        std::pin::pin!(future).poll(&mut context).is_ready()
    }

    #[test]
    fn turns_are_dealt_to_the_batches_in_turn_each_at_a_point_inside_its_batch() {
        let registry = Registry::new();
        let mut per_batch = [0_usize; BATCHES as usize];
        for dealt in 0..1000_u32 {
            let turn = next_turn(&registry);
            assert!((0.0..1.0).contains(&turn), "{turn}");
            let batch = (turn * f64::from(BATCHES)) as u32;
            assert_eq!(batch, dealt % BATCHES, "{turn}");
            per_batch[batch as usize] += 1;
        }
        assert_eq!(per_batch, [100; BATCHES as usize]);
    }

    #[tokio::test]
    async fn closing_waits_for_the_start_then_the_delay_then_its_turn() {
        let drain = drain(50, 200, 5000);
        let connections: Vec<LongLived> = (0..20).map(|_| drain.long_lived("socket")).collect();
        assert_eq!(drain.in_flight(), 20);
        let waiting: Vec<_> = connections
            .iter()
            .map(|connection| {
                let mut closing = connection.turn();
                tokio::spawn(async move {
                    (&mut closing).await;
                    (closing.turn, Instant::now())
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            waiting.iter().all(|closing| !closing.is_finished()),
            "no turn before the drain starts"
        );
        let started = Instant::now();
        assert!(drain.start());
        for closing in waiting {
            let (turn, closed_at) = closing.await.unwrap();
            // Never before its turn: a timer does not fire early.
            let turn = turn.expect("dealt at the start");
            let due = Duration::from_millis(50) + Duration::from_millis(200).mul_f64(turn);
            assert!(closed_at - started >= due, "{turn}");
        }
        drop(connections);
        assert_eq!(drain.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_connection_registered_after_the_delay_closes_at_once() {
        let drain = drain(20, 1000, 5000);
        drain.start();
        let during_delay = drain.long_lived("socket");
        assert!(!during_delay.late, "paced with the others");
        tokio::time::sleep(Duration::from_millis(30)).await;
        let late = drain.long_lived("socket");
        assert!(ready_now(late.closing()));
        assert_eq!(drain.in_flight(), 2, "both count until dropped");
    }

    #[tokio::test]
    async fn the_batches_share_the_connections_open_at_the_start_whatever_left_before() {
        let drain = drain(10, 1000, 5000);
        let mut connections: Vec<LongLived> = (0..20).map(|_| drain.long_lived("socket")).collect();
        // Every other one leaves before the drain: dealt as they registered, the rest would
        // fall in every other batch.
        let mut index = 0;
        connections.retain(|_| {
            index += 1;
            index % 2 == 0
        });
        let mut closings: Vec<Closing> = connections.iter().map(LongLived::turn).collect();
        drain.start();
        let mut context = Context::from_waker(Waker::noop());
        let mut batches: Vec<u32> = closings
            .iter_mut()
            .map(|closing| {
                assert!(Pin::new(&mut *closing).poll(&mut context).is_pending());
                let turn = closing.turn.expect("dealt once the drain has started");
                (turn * f64::from(BATCHES)) as u32
            })
            .collect();
        batches.sort_unstable();
        assert_eq!(batches, (0..BATCHES).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn the_drain_waits_for_registered_connections_and_reports_those_abandoned() {
        let drain = drain(10, 50, 300);
        let polite = drain.long_lived("socket");
        let _ignores_the_close = drain.long_lived("socket");
        let request = drain.enter();
        drain.start();
        let closed = tokio::spawn(async move {
            polite.closing().await;
        });
        drop(request);
        let drained = drain.drained().await;
        assert!(closed.is_finished(), "the polite one closed at its turn");
        assert_eq!(drained.abandoned, 1);
        assert_eq!(drained.abandoned_long_lived, 1);
    }

    /// Issue 36 A3 and B: however many wait for the drain (the server's sequence, the admin
    /// server, the agent), the timeout is one warning, naming what it abandoned by name; and
    /// every waiter reads the same end.
    #[tokio::test(start_paused = true)]
    async fn the_timeout_is_one_line_naming_the_abandoned_connections() {
        let (guard, logs) = crate::test_helpers::Logs::capture();
        let drain = drain(10, 50, 300);
        let _chat = [drain.long_lived("/chat"), drain.long_lived("/chat")];
        let _events = drain.long_lived("/events");
        let polite = drain.long_lived("/polite");
        drain.start();
        let closed = tokio::spawn(async move {
            polite.closing().await;
        });
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let drain = drain.clone();
                tokio::spawn(async move { drain.drained().await })
            })
            .collect();
        let mut ends = Vec::new();
        for waiter in waiters {
            ends.push(waiter.await.unwrap());
        }
        closed.await.unwrap();
        assert!(drain.is_drained());
        drop(guard);
        assert!(ends.iter().all(|end| *end == ends[0]), "{ends:?}");
        assert_eq!(ends[0].abandoned, 3);
        assert_eq!(ends[0].abandoned_long_lived, 3);
        let text = logs.text();
        let lines: Vec<_> = text
            .lines()
            .filter(|line| line.contains("drain timed out"))
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert!(
            lines[0].contains(
                r#"abandoned=3 abandoned_long_lived=3 long_lived="/chat: 2, /events: 1""#
            ),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_drain_whose_connections_all_close_is_clean() {
        let drain = drain(10, 100, 10_000);
        for _ in 0..50 {
            let connection = drain.long_lived("socket");
            tokio::spawn(async move {
                connection.closing().await;
                drop(connection);
            });
        }
        drain.start();
        let drained = drain.drained().await;
        assert!(drained.is_clean(), "{drained:?}");
        assert_eq!(drain.in_flight(), 0);
    }

    #[tokio::test]
    async fn dropped_closing_futures_leave_no_waker_behind() {
        let drain = drain(10, 50, 1000);
        let connection = drain.long_lived("socket");
        for _ in 0..3 {
            assert!(!ready_now(connection.closing()));
        }
        assert!(drain.long_lived_registry().lock().wakers.is_empty());
        let parked = connection.closing();
        let mut parked = std::pin::pin!(parked);
        assert!(!ready_now(parked.as_mut()));
        assert_eq!(drain.long_lived_registry().lock().wakers.len(), 1);
        drain.start();
        assert!(drain.long_lived_registry().lock().wakers.is_empty());
    }

    #[tokio::test]
    async fn a_parked_closing_polled_again_by_its_task_takes_no_lock() {
        let drain = drain(10, 50, 1000);
        let connection = drain.long_lived("socket");
        let mut closing = connection.closing();
        // The task's waker, the same on every poll (`Waker::noop` is not: its vtable may
        // differ from one use to the next, and `will_wake` compares it).
        struct Task;
        impl std::task::Wake for Task {
            fn wake(self: std::sync::Arc<Self>) {}
        }
        let waker = Waker::from(std::sync::Arc::new(Task));
        let mut context = Context::from_waker(&waker);
        assert!(
            Pin::new(&mut closing).poll(&mut context).is_pending(),
            "parked"
        );
        // The book's lock, held by another thread while the connection's task polls again
        // (as it does on each of its messages): the poll must not wait for it.
        let registry = drain;
        let (locked, held) = std::sync::mpsc::channel();
        let (release, done) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let _book = registry.long_lived_registry().lock();
            locked.send(()).unwrap();
            let _ = done.recv();
        });
        held.recv().unwrap();
        let (polled, poll_result) = std::sync::mpsc::channel();
        let poller = std::thread::spawn(move || {
            let mut context = Context::from_waker(&waker);
            for _ in 0..1000 {
                assert!(Pin::new(&mut closing).poll(&mut context).is_pending());
            }
            polled.send(()).unwrap();
            closing
        });
        // A bound against hanging: a poll that locked would wait for the release below.
        let without_the_lock = poll_result.recv_timeout(Duration::from_secs(10)).is_ok();
        release.send(()).unwrap();
        holder.join().unwrap();
        drop(poller.join().unwrap());
        assert!(without_the_lock, "a poll waited for the book's lock");
    }

    #[tokio::test]
    async fn until_closing_ends_the_stream_at_the_turn_with_the_last_item() {
        struct Forever;
        impl futures_core::Stream for Forever {
            type Item = u32;
            fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<u32>> {
                Poll::Pending
            }
        }
        let drain = drain(10, 50, 1000);
        let stream = drain.long_lived("socket").until_closing_with(Forever, 7);
        let mut stream = std::pin::pin!(stream);
        assert_eq!(drain.in_flight(), 1);
        drain.start();
        let mut next = async || std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await;
        assert_eq!(next().await, Some(7));
        assert_eq!(drain.in_flight(), 0, "the guard goes when the stream ends");
        assert_eq!(next().await, None);
    }
}
