//! HAProxy's agent check: the instance tells HAProxy its state and its weight.
//!
//! HAProxy's `agent-check` connects to `agent-port` every `agent-inter`, reads one line of
//! words, and acts on each: [`AgentServer`] answers it from the view every other reader
//! answers from, so the agent and `/health/ready` never disagree:
//!
//! | the instance | the line | what HAProxy does |
//! |---|---|---|
//! | ready, healthy | `up ready 100%` | serves it at its full configured weight |
//! | back in rotation for less than the [slow start](AgentConfig::slow_start) (10 s by default) | `up ready 1%` rising to `up ready 100%` | serves it at a weight that rises with each `agent-inter` |
//! | ready, `degraded` | `up ready 50%` ([`AgentConfig::degraded_weight`]) | keeps serving it, with a smaller share of new sessions |
//! | ready, busy, with a [load capacity](crate::HealthConfig::load_capacity) declared | `up ready N%`, N = `round(100 × (1 − load))`, never below 10% | keeps serving it, with a share that follows its load ([load feedback](crate::guide::haproxy#load-feedback)) |
//! | draining ([`HealthHandle::drain`](crate::HealthHandle::drain)) | `drain` | sends it no new sessions; those open finish |
//! | held ([`HealthHandle::hold`](crate::HealthHandle::hold)) | `maint` | sends it nothing at all (`MAINT` on the stats page) |
//! | not ready for less than the [debounce](crate::HealthConfig::debounce) (4 s by default) | `up ready 50%` | keeps serving it, with a smaller share, while its HTTP check (which debounces) decides |
//! | not ready for longer (a database, a panicked round); at once with no verdict yet, a stale verdict, or a process that has not passed since it started; after an outage, until the [return's jitter](crate::HealthConfig::return_jitter) has run out | `down ready` | marks it `DOWN (agent)` |
//!
//! Every line states the whole state, since HAProxy changes only what a line says and only
//! the agent undoes what the agent did: `ready` ends a `drain` or `maint` that an earlier
//! line set (this process's, or that of the process before it on the same address, which
//! drained before it exited), `up` ends a `down`, `100%` ends a lowered weight. The words
//! come from readiness's judgement, in its order: the drain, then a missing or stale
//! verdict, then the hold, then the verdict. The weight of a ready instance is lowered when
//! the health verdict is `degraded` (as Envoy's `x-envoy-degraded` is set), and by the load
//! estimate when a capacity is declared, never below 10%: load alone never changes a word.
//! HAProxy acts on `down` at once, whatever `fall` says; so that one slow round never takes
//! a server out through the agent, a verdict that fails says `down` only once it has failed
//! for the debounce (see the [HAProxy guide](crate::guide::haproxy#one-slow-round-and-a-real-outage)).
//! The weight of a ready instance is capped by the slow start from the instant readiness came
//! back into rotation, which the monitor records once for every reader (see the
//! [guide](crate::guide::haproxy#the-return-a-slow-start-and-a-jitter)).
//!
//! The line is the words alone, unless the agent's own [`details`](AgentConfig::details)
//! are [`Details::Always`](crate::config::Details::Always): then `down ready` carries its
//! reason after a `#` (`down ready #database default is not_ready (refused)`), which HAProxy
//! shows on its stats page and logs: configured names and error categories only, one line of
//! printable ASCII. The monitor's details do not count here: anyone who reaches the port
//! reads the line, and an HAProxy on another host needs the port bound beyond loopback.
//!
//! Answering costs what a probe costs: the line is chosen at the accept from readiness's
//! and health's published verdicts (two pointer loads) among lines rendered ahead (every
//! weight's at compile time), then written, and the connection is closed. What the client sends (HAProxy's `agent-send`) is
//! never parsed: it is read after the line, at most 4 KiB within a second, only so that the
//! close is not a reset. At most [`max_connections`](AgentConfig::max_connections) are open
//! at once, and none of them can hold its place against HAProxy's check (see
//! [below](#what-the-port-withstands)).
//!
//! The [HAProxy guide page](crate::guide::haproxy) has a backend using it beside an HTTP check
//! of `/health/ready`.
//!
//! # Example
//!
//! ```
//! use tokio::io::AsyncReadExt;
//! use tower_health::haproxy::{AgentConfig, AgentServer};
//! use tower_health::{HealthConfig, HealthMonitor};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = HealthMonitor::spawn(HealthConfig::new())?;
//! // The same monitor as the layers': one set of checks, one more reader.
//! let agent = AgentServer::new(AgentConfig::new().port(0), &health)
//!     .start()
//!     .await?;
//! # health.watch().wait_for(|view| view.started).await.expect("the monitor runs");
//! // What HAProxy does every `agent-inter`: connect, read a line.
//! let mut line = String::new();
//! tokio::net::TcpStream::connect(agent.local_addr())
//!     .await?
//!     .read_to_string(&mut line)
//!     .await?;
//! // No database configured: ready with nothing to check, and just started: the slow
//! // start's first steps, `up ready 1%` and up (see `AgentConfig::slow_start`).
//! assert!(line.starts_with("up ready ") && line.ends_with("%\n"), "{line}");
//! agent.shutdown();
//! agent.closed().await;
//! # Ok(())
//! # }
//! ```
//!
//! # What the port withstands
//!
//! Anyone who reaches the port can connect, and HAProxy's check is one connection among
//! theirs. A connection keeps one of the [places](AgentConfig::max_connections) only while no
//! newcomer needs it: at the limit, the one whose line waits longest on a client that does
//! not read gives its place up, else the one that has lingered longest after its line (for
//! its client's close). A lingering connection keeps its place for 100 ms after its line is
//! written, so that its client can read the line before a close could reset it; while every
//! place is that young, newcomers wait in the listen backlog, in the order they came. So
//! clients that connect and sit on the socket, however many and however quickly they come
//! back, cannot keep HAProxy's check out: at the limit the places turn over at least 640
//! times a second (at the default 64), and the check waits behind the clients queued before
//! it (400 of them: about half a second). Keep HAProxy's `timeout check` (or `agent-inter`
//! where it is unset) above that; more places shorten it.
//!
//! The bind, the cap and its rule, the write timeout, the details and the close are the
//! [side port](crate::side_port)'s, shared with the admin server, with the agent's graces
//! and defaults: [`AgentServer::start`] gives a
//! [`SidePortHandle`](crate::side_port::SidePortHandle).

mod config;
mod line;
// What the agents say, for the operator's page.
#[cfg(feature = "page")]
pub(crate) mod running;
mod server;

pub use self::config::AgentConfig;
/// The line the agent writes now, for the timeline test (`src/timeline_tests/`).
#[cfg(test)]
pub(crate) use self::line::line_now;
pub use self::server::AgentServer;
