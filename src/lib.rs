//! Health, readiness, liveness, pool and ping endpoints for any Tower service (axum, hyper,
//! tonic), answered from verdicts computed in the background.
//!
//! # Overview
//!
//! Load balancers and Kubernetes ask every instance two different questions: "are you alive?"
//! (should I restart you?) and "are you ready?" (should I send you traffic?). This crate
//! answers them, and three more, with the status code doing the talking:
//!
//! | Path | Question | Answer |
//! |---|---|---|
//! | `/health` | the full picture | 200 healthy or degraded; 503 unhealthy, error, unavailable, draining |
//! | `/health/live` | is the process alive? | always 200, drain included |
//! | `/health/ready` | can it serve traffic? | 200 when every database is usable; 503 when one is not, has timed out (by default), or while draining |
//! | `/health/pool` | is the default database usable? | 200 when it is; 503 when not, on error, or while draining |
//! | `/health/ping` | fastest possible yes | always 200, no database access |
//!
//! - A [`HealthMonitor`] checks every configured database in parallel under one deadline, on
//!   its own cadence, and publishes each verdict already rendered (status, headers, JSON
//!   bytes) through an `ArcSwap`. A probe costs a pointer load, not a database query, so the
//!   database sees the same load whether probes arrive once a minute or a thousand times a
//!   second.
//! - A database that accepts connections and never answers is reported `timed_out` when the
//!   deadline passes; no probe ever waits on a database.
//! - [`HealthLayer`] answers the probe paths in front of your service, [`DrainLayer`] turns
//!   SIGTERM into a drain that depools the instance before it stops, and [`PingLayer`] answers
//!   the cheapest probe of all.
//!
//! # Example
//!
//! ```no_run
//! use axum::{Router, response::IntoResponse, routing::get};
//! use tower::ServiceBuilder;
//! use tower_health::check::PostgresCheck;
//! use tower_health::{DrainConfig, DrainLayer, HealthConfig, HealthLayer, HealthMonitor, PingLayer};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HealthConfig::from_env()?
//!     .database("default", PostgresCheck::connect("postgres://postgres@127.0.0.1/postgres")?);
//! let health = HealthMonitor::spawn(config);
//! let (drain_layer, drain) = DrainLayer::pair(DrainConfig::from_env()?);
//!
//! let app = Router::new().route("/", get(|| async { "hello" }));
//! // Probe layers wrap the whole router, outside the drain.
//! let app = ServiceBuilder::new()
//!     .map_response(IntoResponse::into_response) // axum::serve wants axum's body
//!     .layer(PingLayer::new())
//!     .layer(HealthLayer::new(health).drain(drain.clone()))
//!     .layer(drain_layer)
//!     .service(app);
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, tower::make::Shared::new(app))
//!     .with_graceful_shutdown(drain.shutdown_signal())
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Verdicts
//!
//! Only genuine unhealthiness answers 503. `degraded` (something other than the default
//! database needs a look) keeps the instance in rotation. With no database configured,
//! readiness answers 200 with no checks while health (`unhealthy`) and pool (`degraded`)
//! answer 503, as the system this crate replaces documents: do not route on those two then.
//!
//! # Feature flags
//!
//! | Name | Description | Default? |
//! |---|---|---|
//! | `postgres` | [`check::PostgresCheck`], through `bb8` and `bb8-postgres` | Yes |
//! | `admin` | `admin::AdminServer`: the probes on a loopback port, with keys (hyper) | No |
//! | `full` | every feature | No |

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::dbg_macro))]

#[macro_use]
mod macros;

#[cfg(feature = "admin")]
#[cfg_attr(docsrs, doc(cfg(feature = "admin")))]
pub mod admin;
mod answer;
mod body;
pub mod check;
pub mod config;
pub mod drain;
mod future;
pub mod health;
pub mod monitor;
pub mod ping;
mod probe;
mod render;
mod status;
mod util;
pub mod verdict;

pub use self::body::ResponseBody;
pub use self::config::{FailDirection, HealthConfig, NoCache};
pub use self::drain::{DrainConfig, DrainHandle, DrainLayer, DrainPolicy};
pub use self::health::HealthLayer;
pub use self::monitor::{HealthHandle, HealthMonitor};
pub use self::ping::PingLayer;
pub use self::status::Status;
pub use self::verdict::{HealthVerdict, PoolVerdict, ReadinessVerdict};
