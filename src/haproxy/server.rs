use std::fmt;
use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::AgentConfig;
use crate::config::{ConfigError, Details};
use crate::dialect::haproxy::{AgentState, Lines, degraded};
use crate::io::{StallWatch, WriteTimeout};
use crate::monitor::HealthHandle;
use crate::probe::Probe;
use crate::side_port::{Activity, Eviction, OpenConnections};

/// How long a connection may stay open after its line, to read what the client sent (its
/// `agent-send` string) until it closes: a socket closed with unread data is reset instead
/// of closed, and a reset may cost the client the line it has not read yet. Lingering holds
/// a place only while no newcomer needs it (see [`EVICTION`]).
const LINGER: Duration = Duration::from_secs(1);

/// How long a connection keeps its place, whoever else connects: after the accept, until its
/// task begins writing the line (on a busy runtime), and after the line is written, for its
/// client to read it.
///
/// What it buys: a connection closed at the limit is reset when its client has sent bytes
/// not read yet (an `agent-send` string) or sends some afterwards, and a reset that arrives
/// before the client has read its line may cost it the line (some stacks drop unread data
/// on a reset; a client that polls may see the error first). HAProxy reads its line as soon
/// as it is written and closes; 100 ms covers a client on a loaded machine, as the admin
/// server's grace does for a request head. What it costs: while every place is within its
/// grace, the accept loop waits for the first to leave it, so the places turn over at least
/// once per grace: 640 connections a second at the default 64. Clients that sit on their
/// connections delay HAProxy's check by their number over that rate (400: about half a
/// second), instead of by one `LINGER` per 64 of them (400: five seconds, past a
/// `timeout check`, and HAProxy keeps the last state it heard). Tested by
/// tests/it/haproxy.rs `clients_sitting_on_the_agent_port_cannot_freeze_a_hold_in_haproxy`.
const GRACE: Duration = Duration::from_millis(100);

/// Which connection gives its place up at the limit: a connection written its line and
/// lingering for the client's close is idle, one whose line waits on a client that does not
/// read is stalled; both once past [`GRACE`].
const EVICTION: Eviction = Eviction {
    server: "haproxy agent",
    before_answer: GRACE,
    after_answer: GRACE,
};

/// The most bytes read from a client after its line; the rest is left unread.
const MAX_DISCARD: usize = 4096;

/// HAProxy's agent check for the instance: one line of HAProxy's agent words per TCP
/// connection, from the view every other reader answers from.
///
/// See the [module docs](super) for what it answers and an example.
#[derive(Debug)]
#[must_use]
pub struct AgentServer {
    config: AgentConfig,
    health: HealthHandle,
}

/// Why the agent did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentError {
    /// A setter of the [`AgentConfig`] was given a value it cannot take.
    Config(ConfigError),
    /// The address could not be bound.
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(error) => write!(f, "haproxy agent: {error}"),
            Self::Bind { addr, source } => write!(f, "haproxy agent: cannot bind {addr}: {source}"),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(error) => Some(error),
            Self::Bind { source, .. } => Some(source),
        }
    }
}

impl AgentServer {
    /// An agent answering from the view of `health`'s monitor (started once with
    /// [`HealthMonitor::spawn`](crate::HealthMonitor::spawn), and read by the layers too). It
    /// says `drain` once the drain the monitor follows starts (see
    /// [`HealthHandle::follow_drain`]).
    pub fn new(config: AgentConfig, health: &HealthHandle) -> Self {
        Self {
            config,
            health: health.clone(),
        }
    }

    /// Checks the settings, binds, and starts answering in a task of its own.
    ///
    /// # Errors
    ///
    /// When a setter of the [`AgentConfig`] was given a value it cannot take (the first one,
    /// naming the setter), or the address cannot be bound.
    pub async fn start(self) -> Result<AgentHandle, AgentError> {
        let config = self.config;
        config.error.check().map_err(AgentError::Config)?;
        let addr = SocketAddr::new(config.bind, config.port);
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| AgentError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| AgentError::Bind { addr, source })?;
        let lines = Lines::new(config.degraded_weight, config.details == Details::Always);
        tracing::info!(%local_addr, "haproxy agent listening");
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, self.health, lines, stopped, config));
        Ok(AgentHandle {
            local_addr,
            stop,
            task,
        })
    }
}

/// A running agent. Dropping the handle closes it, as [`shutdown`](AgentHandle::shutdown)
/// does.
#[must_use = "dropping the handle closes the agent"]
pub struct AgentHandle {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl AgentHandle {
    /// The address the agent is bound to (with the port picked, for port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Closes the agent: no new connections; open ones (each a line long) are closed.
    ///
    /// Unlike the admin server, the agent does not close when the drain is over: it keeps
    /// saying `drain` until the process ends, so that an HAProxy that has not asked since the
    /// drain started (the drain ends at once with nothing in flight) still hears it.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// Waits until the agent has closed, after [`shutdown`](AgentHandle::shutdown).
    pub async fn closed(self) {
        let Self { stop, task, .. } = self;
        let _ = task.await;
        drop(stop);
    }
}

impl fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentHandle")
            .field("local_addr", &self.local_addr)
            .field("closed", &self.task.is_finished())
            .finish()
    }
}

/// The line for now: readiness's judgement and health's (two pointer loads and a clock
/// reading), then one of the lines rendered at start.
fn line_now(health: &HealthHandle, lines: &Lines) -> Bytes {
    let ready = health.judge(Probe::Ready);
    let state = AgentState::of(
        ready.condition,
        ready.passing,
        ready.passes_debounced(),
        || {
            // Readiness `degraded`: the fleet guard keeps this instance in rotation while a
            // dependency the fleet shares fails; it takes less traffic meanwhile.
            degraded(ready.condition, ready.status) || {
                let health = health.judge(Probe::Health);
                degraded(health.condition, health.status)
            }
        },
    );
    lines.line(state, || health.view())
}

async fn serve(
    listener: TcpListener,
    health: HealthHandle,
    lines: Lines,
    mut stop: watch::Receiver<bool>,
    config: AgentConfig,
) {
    let mut closing = pin!(async {
        // Closing also when the handle is gone (the channel closes).
        let _ = stop.wait_for(|stop| *stop).await;
    });
    let mut connections = JoinSet::new();
    let mut open = OpenConnections::new(EVICTION);
    loop {
        let accepted = poll_fn(|cx| {
            if closing.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            listener.poll_accept(cx).map(Some)
        })
        .await;
        let Some(accepted) = accepted else { break };
        while connections.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "haproxy agent: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // At the limit, a connection that has had its line makes room; the accept loop waits
        // only while every place is within its `GRACE`, never for a linger.
        if !open.make_room(config.max_connections).await {
            tracing::debug!(
                "haproxy agent: connection limit reached and every connection is being written its line; closing a new connection"
            );
            continue;
        }
        // Decided at the accept, before anything the client sends is read.
        let line = line_now(&health, &lines);
        let _ = stream.set_nodelay(true);
        let stall = Arc::new(StallWatch::default());
        let stream = WriteTimeout::new(stream, config.write_timeout).watched(stall.clone());
        let activity = Arc::new(Activity::new());
        let task = connections.spawn(answer(stream, line, activity.clone()));
        open.push(task, activity, stall);
    }
    drop(listener);
    connections.shutdown().await;
    tracing::info!("haproxy agent closed");
}

/// Writes `line`, half-closes, and reads what the client sent until it closes.
async fn answer(mut stream: WriteTimeout<TcpStream>, line: Bytes, activity: Arc<Activity>) {
    let answering = activity.answering();
    match stream.write_all(&line).await {
        Ok(()) => {}
        // The write timeout: no progress on a client that does not read.
        Err(error) if error.kind() == io::ErrorKind::TimedOut => {
            tracing::debug!("haproxy agent: the client did not take its line; closing");
            return;
        }
        Err(error) => {
            tracing::debug!(%error, "haproxy agent: the client left before its line");
            return;
        }
    }
    // HAProxy reads up to the end of the line or of the stream, and closes (with a reset,
    // as it does every check connection): errors from here on are the client's leaving.
    let _ = stream.shutdown().await;
    // Written: from here on the connection only lingers, and gives its place up to a
    // newcomer once its client has had the grace to read the line.
    drop(answering);
    let _ = tokio::time::timeout(LINGER, discard(&mut stream)).await;
}

async fn discard(stream: &mut WriteTimeout<TcpStream>) {
    let mut buffer = [0; 512];
    let mut read = 0;
    while read < MAX_DISCARD {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => read += n,
        }
    }
}
