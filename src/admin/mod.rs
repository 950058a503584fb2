//! The admin server: the same probes on a loopback port of their own, with keys.
//!
//! [`AdminServer`] answers, from the same published verdicts as
//! [`HealthLayer`](crate::HealthLayer):
//!
#![doc = include_str!("../docs/endpoints.md")]
//!
//! The admin server's paths are the second column. `/health` needs a key once an operator key
//! is configured (see below).
//!
//! Other paths get 404, whose `paths` list what it serves (a health group's as
//! `/health/group/<name>`, `/health/history`, and with the `page` feature `/health/page`), other methods 405; a request with two `Host` headers, or whose
//! target names a host (`GET http://host/path`), 400. It speaks HTTP/1.1 with keep-alive and bounds
//! every connection: one that stays idle or sends its request head too slowly is closed after
//! the [header timeout](AdminConfig::header_timeout), one whose answers wait on a client that
//! does not read them after the [write timeout](AdminConfig::write_timeout). At most
//! [`max_connections`](AdminConfig::max_connections) are served at once; at the limit, a
//! connection that is not being answered (silent, stalled or idle) makes room for the new one,
//! so such clients cannot keep probes out.
//!
//! The bind, these bounds, the keys, the details and the close are the
//! [side port](crate::side_port)'s, which the HAProxy agent shares: [`AdminServer::start`]
//! gives a [`SidePortHandle`](crate::side_port::SidePortHandle).
//!
//! # Safe by default
//!
//! - It binds `127.0.0.1:9090`. Binding any other address without an operator key is refused
//!   at start.
//! - With an operator key, `/health` and `?nocache=true` need a key:
//!   `Authorization: Bearer <key>` (or `X-Baldur-Admin-Key: <key>`), compared in constant
//!   time. The read-only key grants the viewer role, the operator key the operator role; both
//!   are enough for `/health`. Others get 401 with `WWW-Authenticate: Bearer`. Liveness,
//!   readiness, pool and ping stay public.
//! - On a loopback bind, `Host` and `Origin` must name the server (`localhost`, `127.0.0.1`,
//!   `[::1]`, the bind address, or a configured extra), else 403: a web page whose domain
//!   resolves to 127.0.0.1 cannot read it from a browser (DNS rebinding).
//!
//! # History and the operator's page
//!
//! `GET /health/history` answers every database's and component's last hour as JSON: the
//! rounds' outcomes (status, error category, and with details the latency), the last
//! transitions with their causes, and a flap count (see
//! [the operator's page](crate::guide::page) for the format). With the `page` feature,
//! `GET /health/page` shows the same as a page people would rather look at than read, kept
//! current while it is open by `GET /health/page/updates`. Both need the viewer role once
//! keys are set, as `/health` does, and show what this server's
//! [`details`](AdminConfig::details) allow; a browser presents the key as the password of
//! Basic credentials (any user name), and gets a Basic challenge without it.
//!
//! # Operator controls
//!
//! With the operator key (the viewer key gets 403, no key 401; with no operator key
//! configured, 403):
//!
//! - `POST /hold?reason=<text>` takes the pod out of rotation without a drain
//!   ([`HealthHandle::hold`](crate::HealthHandle::hold)): readiness answers 503 `not_ready`
//!   with `"reason": "held by the operator: <text>"`; liveness, startup, ping, health and pool
//!   are untouched. The reason is percent-decoded, redacted and cut to 200 characters.
//! - `POST /release` puts it back ([`HealthHandle::release`](crate::HealthHandle::release)).
//!
//! Both answer 200 `{"status": "held"|"released", "changed": bool, ...}`; any other method
//! 405 with `Allow: POST`.
//!
//! # Example
//!
//! ```
//! use tower_health::admin::{AdminConfig, AdminServer};
//! use tower_health::{HealthConfig, HealthLayer, HealthMonitor};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = HealthMonitor::spawn(HealthConfig::new())?;
//! let layer = HealthLayer::new(&health);
//! // The same monitor as the layer's: one set of checks, two readers.
//! let admin = AdminServer::new(AdminConfig::new().port(0), &health)
//!     .start()
//!     .await?;
//! println!("admin server on http://{}", admin.local_addr());
//! admin.shutdown();
//! admin.closed().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Drain
//!
//! Once its monitor's drain ([`HealthHandle::drain`](crate::HealthHandle::drain)) starts,
//! readiness, health and pool answer 503 `draining`, while liveness,
//! startup and ping keep answering, so that the orchestrator never restarts a pod that is
//! only draining; the server closes when the drain is over.
//!
//! # Keys on the application's port
//!
//! The same keys also work on the application's port, through the layers: under
//! [`Details::Authorized`](crate::config::Details::Authorized)
//! ([`HealthLayer::details`](crate::HealthLayer::details)), holders of a key see the details
//! and others the statuses only (and only holders get the layer's opt-in metrics path, others
//! 401). Once keys are set, only their holders may bypass the cache, under
//! [`NoCache::Allowed`](crate::config::NoCache::Allowed) and `Authorized` alike, on both
//! ports. The layers' keys are the monitor's
//! ([`HealthConfig::access_keys`](crate::HealthConfig::access_keys), read by `from_env` from
//! the same variables as this server's) unless
//! [`HealthLayer::access_keys`](crate::HealthLayer::access_keys) sets others. Two things
//! stay this server's own: on the application's port `/health` answers everyone (with details
//! only for key holders under `authorized`), and there is no hold or release.

mod config;
mod control;
pub(crate) mod fixed;
mod history;
mod host;
#[cfg(feature = "page")]
mod page;
pub(crate) mod route;
mod server;
mod service;
mod state;
mod strict;

pub use self::config::AdminConfig;
#[cfg(test)]
pub(crate) use self::control::Control;
pub use self::server::AdminServer;
/// What every connection of an admin server answers from, for the timeline test, which asks
/// it in-process (`src/timeline_tests/`).
#[cfg(test)]
pub(crate) use self::state::AdminState;
