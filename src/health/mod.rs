//! Middleware that answers the probe paths before the inner service.
//!
//! [`HealthLayer`] answers, under the configured prefix (default `/health`):
//!
#![doc = include_str!("../docs/endpoints.md")]
//!
//! With [`HealthConfig::kubernetes_aliases`](crate::HealthConfig::kubernetes_aliases), `/livez`
//! and `/readyz` are answered too.
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
//! use tower_health::{HealthConfig, HealthLayer};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = service_fn(|_request: Request<Full<Bytes>>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from("hello"))))
//! });
//! let service = ServiceBuilder::new()
//!     .layer(HealthLayer::new(HealthConfig::new()))
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
