//! The agents running, for the operator's page: what each tells HAProxy now, by the function
//! that writes its lines (`line::line_now`), so that the page shows the agent's own words
//! and never decides them a second time.
//!
//! A monitor knows nothing of its readers, so the agents are listed here, process-wide, each
//! by the monitor it reads; an entry lives as long as its agent's server does.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use crate::dialect::haproxy::Lines;
use crate::monitor::HealthHandle;

/// One agent, held by its server for as long as it answers.
pub(super) struct Running {
    health: HealthHandle,
    local_addr: SocketAddr,
    lines: Lines,
    slow_start: Duration,
}

/// What one agent tells HAProxy now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AgentLine {
    /// The agent's address.
    pub(crate) local_addr: SocketAddr,
    /// The line, without its newline: `up ready 17%`, `drain`, `down ready`, ...
    pub(crate) line: String,
}

static RUNNING: Mutex<Vec<Weak<Running>>> = Mutex::new(Vec::new());

/// Lists an agent of `health`'s monitor until the returned entry is dropped.
pub(super) fn register(
    health: &HealthHandle,
    local_addr: SocketAddr,
    lines: Lines,
    slow_start: Duration,
) -> Arc<Running> {
    let running = Arc::new(Running {
        health: health.clone(),
        local_addr,
        lines,
        slow_start,
    });
    let mut list = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    list.retain(|entry| entry.strong_count() > 0);
    list.push(Arc::downgrade(&running));
    running
}

/// What each agent of `health`'s monitor tells HAProxy now, in the order they started.
pub(crate) fn lines_now(health: &HealthHandle) -> Vec<AgentLine> {
    let list = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    list.iter()
        .filter_map(Weak::upgrade)
        .filter(|running| running.health.same_monitor(health))
        .map(|running| {
            let line = super::line::line_now(health, &running.lines, running.slow_start);
            AgentLine {
                local_addr: running.local_addr,
                line: String::from_utf8_lossy(&line).trim_end().to_owned(),
            }
        })
        .collect()
}
