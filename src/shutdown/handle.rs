use std::fmt;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use http::header::HeaderValue;
use tokio::sync::Notify;

/// How often [`DrainHandle::drained`] reads the in-flight count again while it waits, besides
/// being woken when a request ends (see [`InFlight::idle`]).
const RECHECK: Duration = Duration::from_millis(50);

use super::DrainConfig;
use super::in_flight::{InFlight, InFlightGuard};
use super::long_lived::{LongLived, Registry};

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
    /// Set once the drain has been seen over, so that the phase never goes back.
    drained: AtomicBool,
    started_at: OnceLock<Instant>,
    /// Requests in flight, and what wakes [`DrainHandle::drained`] when one ends.
    in_flight: InFlight,
    /// Woken when the drain starts.
    started: Notify,
    /// The long-lived connections registered with the drain.
    long_lived: Registry,
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
                drained: AtomicBool::new(false),
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
        if self.state.started_at.set(crate::clock::now()).is_err() {
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

    /// Whether the drain is over: it has started, and the delay has passed with nothing in
    /// flight, or the timeout has passed (what [`drained`](Self::drained) waits for). Once
    /// `true`, it stays so, even if a late request arrives.
    ///
    /// With [`is_draining`](Self::is_draining): not draining, the server runs; draining and
    /// not drained, it drains; drained, it is done.
    #[must_use]
    pub fn is_drained(&self) -> bool {
        let Some(&started_at) = self.state.started_at.get() else {
            return false;
        };
        let elapsed = crate::clock::since(started_at);
        let over = self.state.drained.load(Ordering::Acquire)
            || elapsed >= self.state.config.timeout
            || (elapsed >= self.state.config.delay && self.in_flight() == 0);
        if over {
            self.state.drained.store(true, Ordering::Release);
        }
        over
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
        let started_at = *self
            .state
            .started_at
            .get()
            .expect("started() returns once the start time is set");
        let deadline = started_at + self.state.config.timeout;
        tokio::time::sleep_until(deadline.min(started_at + self.state.config.delay).into()).await;
        loop {
            // Register before reading the count, so that a request finishing in between
            // still wakes us.
            let mut idle = pin!(self.state.in_flight.idle().notified());
            idle.as_mut().enable();
            if self.in_flight() == 0 {
                self.state.drained.store(true, Ordering::Release);
                return Drained {
                    abandoned: 0,
                    abandoned_long_lived: 0,
                    elapsed: crate::clock::since(started_at),
                };
            }
            if crate::clock::now() >= deadline {
                let abandoned = self.in_flight();
                let abandoned_long_lived = self.state.long_lived.open();
                if abandoned > 0 {
                    tracing::warn!(
                        abandoned,
                        abandoned_long_lived,
                        "drain timed out with requests still in flight"
                    );
                }
                self.state.drained.store(true, Ordering::Release);
                return Drained {
                    abandoned,
                    abandoned_long_lived,
                    elapsed: crate::clock::since(started_at),
                };
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
        if let Some(&started_at) = self.state.started_at.get() {
            tokio::time::sleep_until((started_at + self.state.config.delay).into()).await;
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
        if let Some(&started_at) = self.state.started_at.get() {
            tokio::time::sleep_until((started_at + self.state.config.timeout).into()).await;
        }
    }

    /// Registers a long-lived connection (a WebSocket, an event stream, a gRPC server
    /// stream): the guard counts it in [`in_flight`](Self::in_flight) while it is held, and
    /// its [`closing`](LongLived::closing) future tells the connection when to close, the
    /// turns of all of them spread over the [close
    /// window](crate::DrainConfig::close_window) that follows the drain delay. Take it
    /// before answering (before the `101`, or in the streaming handler), so that the
    /// connection counts from its start; drop it when the connection has closed.
    ///
    /// A connection registered once the drain has started still counts; during the delay it
    /// gets a turn in the window like the others, after the delay it is told to close at
    /// once (the load balancers have stopped routing here: it is a straggler).
    ///
    /// See the [module docs](crate::drain#long-lived-connections) for an example.
    pub fn long_lived(&self) -> LongLived {
        LongLived::new(self, self.state.in_flight.enter())
    }

    /// The registered long-lived connections' book.
    pub(super) fn long_lived_registry(&self) -> &Registry {
        &self.state.long_lived
    }

    /// When the close window starts (the drain's start plus its delay), once it has started.
    pub(super) fn window_start(&self) -> Option<Instant> {
        let started_at = *self.state.started_at.get()?;
        Some(started_at + self.state.config.delay)
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
            .field("draining", &self.is_draining())
            .field("drained", &self.is_drained())
            .field("in_flight", &self.in_flight())
            .field("config", &self.state.config)
            .finish()
    }
}
