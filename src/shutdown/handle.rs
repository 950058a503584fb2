use std::fmt;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use http::header::HeaderValue;
use tokio::sync::Notify;

/// How often [`DrainHandle::drained`] reads the in-flight count again while it waits, besides
/// being woken when a request ends (see [`InFlight::idle`]).
const RECHECK: Duration = Duration::from_millis(50);

use super::DrainConfig;
use super::in_flight::{InFlight, InFlightGuard};
use super::long_lived::{LongLived, Registry};
use super::progress::{DrainPhase, DrainProgress, DrainStamp, DrainTimes, by_name};

/// A monitor's drain: start it, see where it stands, wait for it to finish.
///
/// Every monitor has one, made with it from its configuration's
/// [`HealthConfig::drain`](crate::HealthConfig::drain) settings, and every reader of the
/// monitor (its layers, the admin server, gRPC, the HAProxy agent, metrics) follows it: get
/// it with [`HealthHandle::drain`](crate::HealthHandle::drain). There is no other way to make
/// one, so no reader can follow a drain the monitor does not. Cheap to clone; count the
/// application's requests in it with [`DrainLayer::new`](crate::DrainLayer::new).
///
/// ```compile_fail
/// // A drain is a monitor's: this does not compile.
/// let drain = tower_health::DrainHandle::new(tower_health::DrainConfig::new());
/// ```
///
/// See the [module docs](crate::drain) for an example.
#[derive(Clone)]
pub struct DrainHandle {
    state: Arc<DrainState>,
}

struct DrainState {
    config: DrainConfig,
    retry_after: HeaderValue,
    draining: AtomicBool,
    /// How the drain ended, recorded by whoever saw it end first (a caller of
    /// [`DrainHandle::drained`] or [`DrainHandle::is_drained`]): every other caller reads
    /// the same, the phase never goes back, and the timeout's warning is logged once.
    ended: OnceLock<Drained>,
    started_at: OnceLock<Start>,
    /// Requests in flight, and what wakes [`DrainHandle::drained`] when one ends.
    in_flight: InFlight,
    /// Woken when the drain starts.
    started: Notify,
    /// The long-lived connections registered with the drain.
    long_lived: Registry,
}

/// When the drain started, on the drain's clock and on the wall clock (for the readers that
/// show its times).
#[derive(Copy, Clone, Debug)]
struct Start {
    at: Instant,
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry", feature = "page")),
        allow(dead_code)
    )]
    wall: SystemTime,
}

/// Why a drain ends.
#[derive(Copy, Clone, Debug)]
enum Ending {
    /// The delay has passed with nothing in flight.
    Clean,
    /// The timeout has passed: what is still in flight is abandoned.
    TimedOut,
}

/// How a drain ended: what [`DrainHandle::drained`] resolves to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Requests (and long-lived connections) still in flight when the timeout passed; zero
    /// for a clean drain.
    pub abandoned: usize,
    /// Of [`abandoned`](Self::abandoned), the long-lived connections
    /// ([`DrainHandle::long_lived`]) that had not closed. An event stream or gRPC stream
    /// served through [`DrainLayer`](crate::DrainLayer) counts twice in `abandoned`: as the
    /// request whose body it is, and as a long-lived connection.
    pub abandoned_long_lived: usize,
    /// Time from the start of the drain.
    pub elapsed: Duration,
}

impl Drained {
    /// Whether every request (and long-lived connection) finished before the timeout.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.abandoned == 0
    }
}

impl DrainHandle {
    /// The drain of a monitor whose configuration was checked (the monitor's one fallible
    /// point checks [`DrainConfig`] with the rest); no drain has started.
    pub(crate) fn new(config: DrainConfig) -> Self {
        let retry_after = HeaderValue::from(config.retry_after_secs());
        Self {
            state: Arc::new(DrainState {
                config,
                retry_after,
                draining: AtomicBool::new(false),
                ended: OnceLock::new(),
                started_at: OnceLock::new(),
                in_flight: InFlight::new(),
                started: Notify::new(),
                long_lived: Registry::new(),
            }),
        }
    }

    /// Starts the drain: from now on readiness, health and pool answer 503 `draining`.
    /// Returns `false` if it had already started (the first start counts).
    pub fn start(&self) -> bool {
        let start = Start {
            at: crate::clock::now(),
            wall: SystemTime::now(),
        };
        if self.state.started_at.set(start).is_err() {
            return false;
        }
        self.state.in_flight.start_draining();
        self.state.draining.store(true, Ordering::Release);
        self.state.started.notify_waiters();
        self.state.long_lived.wake_parked();
        tracing::info!(
            in_flight = self.in_flight(),
            long_lived = self.state.long_lived.open(),
            delay = ?self.state.config.delay,
            timeout = ?self.state.config.timeout,
            "drain started: readiness now answers 503"
        );
        true
    }

    /// Whether the drain has started.
    #[must_use]
    #[inline]
    pub fn is_draining(&self) -> bool {
        self.state.draining.load(Ordering::Acquire)
    }

    /// Requests in flight through [`Drain`](crate::drain::Drain) services (and the axum stack),
    /// counted until their response bodies end or are dropped, and the long-lived
    /// connections registered with [`long_lived`](Self::long_lived): the sum of the
    /// per-thread counts, exact for every request in flight while they are read.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.state.in_flight.count()
    }

    /// Requests in flight, without the long-lived connections: what the load estimate
    /// compares with the application's capacity. Read apart, the two counts may cross a
    /// request that starts or ends between them: never below zero.
    pub(crate) fn requests_in_flight(&self) -> usize {
        self.in_flight()
            .saturating_sub(self.long_lived_registry().open())
    }

    /// Whether the drain is over: it has started, and the delay has passed with nothing in
    /// flight, or the timeout has passed (what [`drained`](Self::drained) waits for). Once
    /// `true`, it stays so, even if a late request arrives.
    ///
    /// With [`is_draining`](Self::is_draining): not draining, the server runs; draining and
    /// not drained, it drains; drained, it is done.
    #[must_use]
    pub fn is_drained(&self) -> bool {
        let Some(&start) = self.state.started_at.get() else {
            return false;
        };
        if self.state.ended.get().is_some() {
            return true;
        }
        let elapsed = crate::clock::since(start.at);
        if elapsed >= self.state.config.timeout {
            self.end(start, Ending::TimedOut);
            true
        } else if elapsed >= self.state.config.delay && self.in_flight() == 0 {
            self.end(start, Ending::Clean);
            true
        } else {
            false
        }
    }

    /// Records how the drain ended, unless someone has already (then theirs stands), and
    /// returns the record. The one place the timeout's warning is logged: however many wait
    /// for the drain (the server's sequence, the admin server, the agent), it is logged once,
    /// naming the long-lived connections it abandoned.
    fn end(&self, start: Start, ending: Ending) -> Drained {
        let mut recorded = false;
        let drained = *self.state.ended.get_or_init(|| {
            recorded = true;
            let (abandoned, abandoned_long_lived) = match ending {
                Ending::Clean => (0, 0),
                Ending::TimedOut => (self.in_flight(), self.state.long_lived.open()),
            };
            Drained {
                abandoned,
                abandoned_long_lived,
                elapsed: crate::clock::since(start.at),
            }
        });
        if recorded && drained.abandoned > 0 {
            let named = self.state.long_lived.named();
            tracing::warn!(
                abandoned = drained.abandoned,
                abandoned_long_lived = drained.abandoned_long_lived,
                long_lived = ?by_name(&named),
                "drain timed out with requests still in flight"
            );
        }
        drained
    }

    /// The settings this handle was made with.
    #[inline]
    pub fn config(&self) -> &DrainConfig {
        &self.state.config
    }

    /// Resolves when the drain is over: it has started, the delay has passed and no request
    /// is in flight, or the timeout (counted from the start) has passed, in which case the
    /// requests still running are reported as abandoned.
    ///
    /// The delay is waited out because requests keep arriving until load balancers notice the
    /// drain; a moment with nothing in flight before then does not mean the work is done.
    pub async fn drained(&self) -> Drained {
        self.started().await;
        let start = *self
            .state
            .started_at
            .get()
            .expect("started() returns once the start time is set");
        let deadline = start.at + self.state.config.timeout;
        tokio::time::sleep_until(deadline.min(start.at + self.state.config.delay).into()).await;
        loop {
            if let Some(&drained) = self.state.ended.get() {
                return drained;
            }
            // Register before reading the count, so that a request finishing in between
            // still wakes us.
            let mut idle = pin!(self.state.in_flight.idle().notified());
            idle.as_mut().enable();
            if self.in_flight() == 0 {
                return self.end(start, Ending::Clean);
            }
            if crate::clock::now() >= deadline {
                return self.end(start, Ending::TimedOut);
            }
            // Woken when a request ends; the count is also read again after `RECHECK`,
            // for a request that was ending at the very instant the drain started.
            let recheck = deadline.min(crate::clock::now() + RECHECK);
            let _ = tokio::time::timeout_at(recheck.into(), idle).await;
        }
    }

    /// Resolves once the drain has started.
    pub async fn started(&self) {
        loop {
            let mut started = pin!(self.state.started.notified());
            started.as_mut().enable();
            if self.is_draining() {
                return;
            }
            started.await;
        }
    }

    /// Resolves when the drain delay has passed since the drain started (waiting for the
    /// start first).
    pub async fn delay_elapsed(&self) {
        self.started().await;
        if let Some(&start) = self.state.started_at.get() {
            tokio::time::sleep_until((start.at + self.state.config.delay).into()).await;
        }
    }

    /// Resolves when the drain timeout has passed since the drain started (waiting for the
    /// start first): the bound on a server's graceful shutdown.
    ///
    /// ```no_run
    /// # async fn run(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    /// # let health = tower_health::HealthMonitor::spawn(Default::default()).unwrap();
    /// let drain = health.drain();
    /// let server = axum::serve(listener, app).with_graceful_shutdown(drain.shutdown_signal());
    /// tokio::select! {
    ///     result = server => result?,
    ///     () = drain.timeout_elapsed() => eprintln!("drain timeout: closing what is still open"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn timeout_elapsed(&self) {
        self.started().await;
        if let Some(&start) = self.state.started_at.get() {
            tokio::time::sleep_until((start.at + self.state.config.timeout).into()).await;
        }
    }

    /// Registers a long-lived connection (a WebSocket, an event stream, a gRPC server
    /// stream) under `name`: the guard counts it in [`in_flight`](Self::in_flight) while it
    /// is held, and its [`closing`](LongLived::closing) future tells the connection when to
    /// close, the turns of all of them spread over the [close
    /// window](crate::DrainConfig::close_window) that follows the drain delay. Take it
    /// before answering (before the `101`, or in the streaming handler), so that the
    /// connection counts from its start; drop it when the connection has closed.
    ///
    /// `name` says what the connection is: its route or its kind (`"chat-websocket"`,
    /// `"events"`, `"greeter/KeepGreeting"`). The timeout's log line names the connections it
    /// abandoned by it, and the metrics (`tower_health_long_lived_open{name}`) and the
    /// operator's page count the connections open under each. Keep the names few and fixed,
    /// as a metric's label values should be: a route's pattern, never a path with an id in
    /// it.
    ///
    /// A connection registered once the drain has started still counts; during the delay it
    /// gets a turn in the window like the others, after the delay it is told to close at
    /// once (the load balancers have stopped routing here: it is a straggler).
    ///
    /// See the [module docs](crate::drain#long-lived-connections) for an example.
    pub fn long_lived(&self, name: &'static str) -> LongLived {
        LongLived::new(self, name, self.state.in_flight.enter())
    }

    /// The registered long-lived connections' book.
    pub(super) fn long_lived_registry(&self) -> &Registry {
        &self.state.long_lived
    }

    /// When the close window starts (the drain's start plus its delay), once it has started.
    pub(super) fn window_start(&self) -> Option<Instant> {
        let start = *self.state.started_at.get()?;
        Some(start.at + self.state.config.delay)
    }

    /// The phase the drain is in now (and, once it is over, how it ended).
    pub(crate) fn phase(&self) -> DrainPhase {
        let Some(&start) = self.state.started_at.get() else {
            return DrainPhase::Serving;
        };
        if self.is_drained() {
            return match self.state.ended.get() {
                Some(drained) if !drained.is_clean() => DrainPhase::TimedOut,
                _ => DrainPhase::Drained,
            };
        }
        let config = &self.state.config;
        let elapsed = crate::clock::since(start.at);
        if elapsed < config.delay {
            DrainPhase::Delay
        } else if elapsed < config.delay + config.close_window_or_default() {
            DrainPhase::CloseWindow
        } else {
            DrainPhase::Waiting
        }
    }

    /// What changes when the drain's figures do, read without a lock.
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry", feature = "page")),
        allow(dead_code)
    )]
    pub(crate) fn stamp(&self) -> DrainStamp {
        DrainStamp {
            phase: self.phase(),
            in_flight: self.in_flight(),
            long_lived_changes: self.state.long_lived.changes(),
        }
    }

    /// The drain's figures now: its phase with its times, the requests in flight, the
    /// long-lived connections open by name.
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry", feature = "page")),
        allow(dead_code)
    )]
    pub(crate) fn progress(&self) -> DrainProgress {
        let phase = self.phase();
        let config = &self.state.config;
        let times = self.state.started_at.get().map(|start| {
            DrainTimes::new(
                start.wall,
                config.delay,
                config.close_window_or_default(),
                config.timeout,
                self.state.ended.get().map(|drained| drained.elapsed),
            )
        });
        DrainProgress {
            phase,
            times,
            in_flight: self.in_flight(),
            long_lived: self.state.long_lived.named(),
        }
    }

    /// Resolves once the drain's figures differ from `seen` (a phase begins, a request or a
    /// connection ends): at the drain's start, and while it runs. Outside a running drain
    /// only its start is followed: requests ending then wake no one (see [`InFlight::idle`]).
    #[cfg_attr(not(feature = "page"), allow(dead_code))]
    pub(crate) async fn progressed(&self, seen: DrainStamp) {
        self.started().await;
        loop {
            let mut idle = pin!(self.state.in_flight.idle().notified());
            idle.as_mut().enable();
            let now = self.stamp();
            if now != seen {
                return;
            }
            if !now.phase.is_running() {
                return std::future::pending().await;
            }
            // The next phase's start, else a request's end (read again after `RECHECK`, as
            // `drained` does).
            let next = self.next_phase_at().min(crate::clock::now() + RECHECK);
            let _ = tokio::time::timeout_at(next.into(), idle).await;
        }
    }

    /// When the running drain's next phase begins at the latest.
    #[cfg_attr(not(feature = "page"), allow(dead_code))]
    fn next_phase_at(&self) -> Instant {
        let config = &self.state.config;
        let Some(&start) = self.state.started_at.get() else {
            return crate::clock::now() + RECHECK;
        };
        let window_over = config.delay + config.close_window_or_default();
        [config.delay, window_over, config.timeout]
            .into_iter()
            .map(|after| start.at + after)
            .find(|at| *at > crate::clock::now())
            .unwrap_or(start.at + config.timeout)
    }

    pub(crate) fn retry_after(&self) -> &HeaderValue {
        &self.state.retry_after
    }

    /// Whether `other` is a handle on the same drain.
    #[cfg(test)]
    pub(crate) fn same_drain(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }

    /// Counts a request in flight until the returned guard is dropped.
    #[inline]
    pub(crate) fn enter(&self) -> InFlightGuard {
        self.state.in_flight.enter()
    }
}

/// So that methods taking a drain accept a handle or a reference to one.
impl AsRef<Self> for DrainHandle {
    fn as_ref(&self) -> &Self {
        self
    }
}

impl fmt::Debug for DrainHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DrainHandle")
            .field("phase", &self.phase())
            .field("in_flight", &self.in_flight())
            .field("config", &self.state.config)
            .finish()
    }
}
