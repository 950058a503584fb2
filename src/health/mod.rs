//! Middleware that answers the probe paths before the inner service.
//!
//! [`HealthLayer`](crate::HealthLayer) answers, under the configured prefix (default `/health`):
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
//! // The layer starts the configuration's monitor; `layer.handle()` is for every other reader.
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
//! A probe's answer never depends on the application's load: [`Health`] is always ready, and
//! a probe never even asks the inner service. An application request asks it in `call`; when
//! it is not ready, the request waits for it inside its response future, on the instance that
//! was asked (a clone stays behind), as routers do. So with a `ConcurrencyLimit`, `Buffer` or `RateLimit` under the stack and the
//! application saturated, liveness, readiness and ping still answer at once, and the
//! application's own requests keep their backpressure.
//!
//! This needs the inner service to be `Clone` (axum routers, tonic servers, hyper-util's
//! `service_fn`, and tower's `Buffer` are). A service that is not: put it behind
//! `tower::buffer::Buffer`, which is cloneable and keeps its backpressure.

pub(crate) mod layer;
mod reader;
mod service;

#[cfg(feature = "axum")]
pub(crate) use self::reader::Reader;
pub use self::service::Health;
