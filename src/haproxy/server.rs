use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::AgentConfig;
use super::line::line_now;
use crate::config::ConfigError;
use crate::dialect::haproxy::Lines;
use crate::monitor::HealthHandle;
use crate::side_port::{Activity, Serve, SidePortError, SidePortHandle, WriteTimeout};
use crate::verdict::Audience;

/// How long a connection may stay open after its line, to read what the client sent (its
/// `agent-send` string) until it closes: a socket closed with unread data is reset instead
/// of closed, and a reset may cost the client the line it has not read yet. Lingering holds
/// a place only while no newcomer needs it (the agent's eviction grace after an answer, in
/// the side port's policy).
const LINGER: Duration = Duration::from_secs(1);

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

impl AgentServer {
    /// An agent answering from the view of `health`'s monitor (started once with
    /// [`HealthMonitor::spawn`](crate::HealthMonitor::spawn), and read by the layers too). It
    /// says `drain` once the monitor's drain starts ([`HealthHandle::drain`]).
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
    pub async fn start(self) -> Result<SidePortHandle, SidePortError> {
        let Self { config, health } = self;
        let listening = config.side_port.listen().await?;
        // The agent has no keys: nobody is a viewer, and only `always` shows reasons.
        let details = config.side_port.shown(&health.readers().shown).details;
        let reasons = crate::access::audience(details, false) == Audience::Full;
        let maxconn = match (config.maxconn, health.load_capacity()) {
            (false, _) => None,
            (true, Some(capacity)) => Some(capacity),
            (true, None) => {
                return Err(SidePortError::Config(ConfigError::new(
                    "AgentConfig::maxconn",
                    "true",
                    "a load capacity to say (HealthConfig::load_capacity, \
                     TOWER_HEALTH_LOAD_CAPACITY)",
                )));
            }
        };
        let lines = Lines::new(config.degraded_weight, reasons, maxconn);
        let connections = Connections {
            #[cfg(feature = "page")]
            _listed: super::running::register(
                &health,
                listening.local_addr,
                lines.clone(),
                config.slow_start,
            ),
            health: health.clone(),
            lines,
            slow_start: config.slow_start,
        };
        Ok(crate::side_port::spawn(
            listening,
            &config.side_port,
            health,
            connections,
        ))
    }
}

/// The agent's connections: each is written its line, decided at the accept.
struct Connections {
    health: HealthHandle,
    lines: Lines,
    slow_start: Duration,
    /// Lists the agent for the operator's page while it answers.
    #[cfg(feature = "page")]
    _listed: Arc<super::running::Running>,
}

impl Serve for Connections {
    fn connection(
        &mut self,
        stream: WriteTimeout<TcpStream>,
        activity: Arc<Activity>,
    ) -> impl Future<Output = ()> + Send + 'static {
        // Decided at the accept, before anything the client sends is read.
        let line = line_now(&self.health, &self.lines, self.slow_start);
        answer(stream, line, activity)
    }

    /// Nothing to finish: what is still open has had its line (or is closed before it, as a
    /// connection would be that came a moment later).
    fn finish(self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
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
