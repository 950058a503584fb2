//! What the servers on ports of their own share: the admin server (feature `admin`) and the
//! HAProxy agent (feature `haproxy-agent`) are one piece, configured twice.
//!
//! Starting either gives a [`SidePortHandle`], or a [`SidePortError`] saying why it did not
//! start. What they share, each under its settings' setters (`AdminConfig`, `AgentConfig`)
//! and variables (`TOWER_HEALTH_ADMIN_*`, `TOWER_HEALTH_AGENT_*`):
//!
//! - **The bind**: `127.0.0.1` and a port of its own by default (`bind`, `port`; `_BIND`,
//!   `_PORT`). The admin server refuses any other address without an operator key; the
//!   agent, which has no keys and tells everyone the same words, binds where it is told.
//! - **A cap on open connections** (`max_connections`, `_MAX_CONNECTIONS`, 64 by default).
//!   Anyone who reaches the port can open connections to it, and the client that matters
//!   (the kubelet's probe, HAProxy's check) is one of many. So at the cap, a connection that
//!   is not being answered (silent, stalled on a client that does not read, idle, or
//!   lingering after its answer) gives its place to the newcomer, once it has had 100 ms to
//!   ask (or, on the agent, to read its line); a connection being answered never does.
//!   Clients that connect and sit on the socket cannot keep the probes out.
//! - **A write timeout** (`write_timeout`, `_WRITE_TIMEOUT`): an answer that waits that long
//!   on a client that does not read closes its connection; any progress starts the wait over,
//!   so a client that reads, however slowly, keeps it.
//! - **Who sees details** (`details`, `_DETAILS`): the admin server follows the monitor's
//!   unless told otherwise, and its keys decide under `authorized`; the agent's are `never`
//!   unless told otherwise, and `authorized` shows details to nobody, since it has no keys.
//! - **The close**: [`SidePortHandle::shutdown`] (or dropping the handle) closes either; the
//!   admin server also closes once the drain its monitor follows is over, while the agent
//!   keeps saying `drain` until it is shut down, so that an HAProxy that has not asked since
//!   the drain began still hears it.
//!
//! The [environment table](crate::config#environment-variables) lists each server's
//! variables and defaults.

mod config;
mod connections;
mod handle;
pub(crate) mod policy;
mod serve;
mod write_timeout;

pub(crate) use self::config::SidePortConfig;
pub(crate) use self::connections::Activity;
pub use self::handle::{SidePortError, SidePortHandle};
pub(crate) use self::serve::{Serve, spawn};
use self::write_timeout::StallWatch;
pub(crate) use self::write_timeout::WriteTimeout;
