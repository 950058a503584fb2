//! The accept loop both servers run, and when it stops.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::config::{Listening, SidePortConfig};
use super::connections::{Activity, OpenConnections};
use super::handle::SidePortHandle;
use super::policy::{Close, Policy};
use super::{StallWatch, WriteTimeout};
use crate::monitor::HealthHandle;
use crate::util::race;

/// How long the accept loop waits after an accept fails (out of file descriptors and the
/// like) instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What a server does with the connections its side port accepts.
pub(crate) trait Serve: Send + 'static {
    /// Serves one connection, accepted with room made for it, its writes bounded by the
    /// write timeout: the returned future runs in a task of its own. It tells `activity`
    /// when each answer begins and ends (see [`Activity::answering`]). Called in the accept
    /// loop: what it decides before returning is decided at the accept.
    fn connection(
        &mut self,
        stream: WriteTimeout<TcpStream>,
        activity: Arc<Activity>,
    ) -> impl Future<Output = ()> + Send + 'static;

    /// Once the listener is closed: tells the connections still open to finish, and waits
    /// for them (for at most the policy's `close_grace`; those left are then ended).
    fn finish(self) -> impl Future<Output = ()> + Send;
}

/// Serves `listening` with `server` in a task of its own, until the handle's `shutdown` (or
/// its drop) or, under [`Close::WhenDrained`], the end of the drain `health` follows.
pub(crate) fn spawn(
    listening: Listening,
    config: &SidePortConfig,
    health: HealthHandle,
    server: impl Serve,
) -> SidePortHandle {
    let Listening {
        listener,
        local_addr,
    } = listening;
    let (stop, stopped) = watch::channel(false);
    let limits = Limits {
        policy: config.policy,
        max_connections: config.max_connections,
        write_timeout: config.write_timeout,
    };
    let closing = closing(config.policy.close, health, stopped);
    let task = tokio::spawn(accept_loop(listener, limits, server, closing));
    SidePortHandle::new(local_addr, stop, task)
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    policy: &'static Policy,
    max_connections: usize,
    write_timeout: Duration,
}

/// Resolves when the server is to close: once `stop` says so or its sender is dropped, or,
/// under [`Close::WhenDrained`], once the drain of `health`'s monitor is over.
async fn closing(close: Close, health: HealthHandle, mut stop: watch::Receiver<bool>) {
    let drained = async {
        match close {
            Close::OnShutdown => std::future::pending().await,
            Close::WhenDrained => {
                health.drain().drained().await;
            }
        }
    };
    race(
        async {
            // Closing also when the handle is gone (the channel closes).
            let _ = stop.wait_for(|stop| *stop).await;
        },
        drained,
    )
    .await;
}

async fn accept_loop(
    listener: TcpListener,
    limits: Limits,
    mut server: impl Serve,
    closing: impl Future<Output = ()>,
) {
    let Limits {
        policy,
        max_connections,
        write_timeout,
    } = limits;
    let name = policy.server;
    let mut closing = pin!(closing);
    let mut connections = JoinSet::new();
    let mut open = OpenConnections::new(name, policy.eviction);
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
                tracing::warn!(%error, "{name}: accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // At the cap, a connection that is not being answered makes room; the loop waits
        // only while every place is within its grace.
        if !open.make_room(max_connections).await {
            tracing::debug!(
                "{name}: connection limit reached and every connection is being answered; closing a new connection"
            );
            continue;
        }
        let _ = stream.set_nodelay(true);
        let stall = Arc::new(StallWatch::default());
        let stream = WriteTimeout::new(stream, write_timeout).watched(stall.clone());
        let activity = Arc::new(Activity::new());
        let task = connections.spawn(server.connection(stream, activity.clone()));
        open.push(task, activity, stall);
    }
    drop(listener);
    if tokio::time::timeout(policy.close_grace, server.finish())
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "{name}: closing connections still open after {:?}",
            policy.close_grace
        );
    }
    connections.shutdown().await;
    tracing::info!("{name} closed");
}

#[cfg(test)]
mod tests {
    use std::task::Context;

    use super::*;
    use crate::{HealthConfig, HealthMonitor};

    /// Whether `future` has resolved, polled once now.
    fn resolved(future: std::pin::Pin<&mut impl Future<Output = ()>>) -> bool {
        future
            .poll(&mut Context::from_waker(std::task::Waker::noop()))
            .is_ready()
    }

    /// The close rule: under `WhenDrained` (the admin server) the end of the monitor's drain
    /// closes; under `OnShutdown` (the agent) only the handle does.
    #[tokio::test(start_paused = true)]
    async fn the_admin_server_closes_when_the_drain_ends_the_agent_on_shutdown_only() {
        let health = HealthMonitor::spawn(HealthConfig::new()).unwrap();
        let (stop, stopped) = watch::channel(false);
        let mut admin = pin!(closing(Close::WhenDrained, health.clone(), stopped.clone()));
        let mut agent = pin!(closing(Close::OnShutdown, health.clone(), stopped));
        assert!(!resolved(admin.as_mut()) && !resolved(agent.as_mut()));

        assert!(health.drain().start());
        // Paused time: the drain's end comes at once.
        admin.await;
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(
            !resolved(agent.as_mut()),
            "a drain does not close the agent"
        );

        stop.send_replace(true);
        agent.await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_handle_closes_either_server() {
        let health = HealthMonitor::spawn(HealthConfig::new()).unwrap();
        for close in [Close::WhenDrained, Close::OnShutdown] {
            let (stop, stopped) = watch::channel(false);
            let mut closing = pin!(closing(close, health.clone(), stopped));
            assert!(!resolved(closing.as_mut()));
            drop(stop);
            closing.await;
        }
    }
}
