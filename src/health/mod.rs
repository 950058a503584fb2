//! Middleware that answers the five probe paths before the inner service.
//!
//! [`HealthLayer`] answers, under the configured prefix (default `/health`):
//!
//! | Path | Question | Answer |
//! |---|---|---|
//! | `/health` | the full picture | 200 healthy or degraded; 503 unhealthy, error, unavailable, draining |
//! | `/health/live` | is the process alive? | always 200, drain included |
//! | `/health/ready` | can it serve traffic? | 200 when every database is usable; 503 when one is not, has timed out (by default), or while draining |
//! | `/health/pool` | is the default database usable? | 200 when it is; 503 when it is not, the check failed, or while draining |
//! | `/health/ping` | fastest possible yes | always 200, no database access |
//!
//! A trailing slash is accepted. GET and HEAD are answered; any other method gets 405 with
//! `Allow: GET, HEAD`. Every other path goes to the inner service, request and response
//! untouched and unbuffered. `?nocache=true` on health and pool computes a fresh verdict
//! (see [`HealthConfig::nocache`](crate::HealthConfig::nocache)).
//!
//! # Example
//!
//! ```
//! use http::{Request, StatusCode};
//! use http_body_util::Full;
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use tower_health::{HealthConfig, HealthLayer, HealthMonitor};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = HealthMonitor::spawn(HealthConfig::new());
//! let app = service_fn(|_request: Request<Full<Bytes>>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from("hello"))))
//! });
//! let service = ServiceBuilder::new()
//!     .layer(HealthLayer::new(health))
//!     .service(app);
//!
//! let response = service
//!     .oneshot(Request::get("/health/live").body(Full::default())?)
//!     .await?;
//! assert_eq!(response.status(), StatusCode::OK);
//! # Ok(())
//! # }
//! ```
//!
//! # Backpressure
//!
//! `poll_ready` is delegated to the inner service, as for any middleware, and probe requests
//! are then answered without calling it. An inner service that stays not-ready therefore
//! holds probes back too; put [`PingLayer`](crate::PingLayer) outermost for an answer that
//! never waits.

mod layer;
mod service;

pub use self::layer::HealthLayer;
pub use self::service::Health;
pub use crate::future::ResponseFuture;
