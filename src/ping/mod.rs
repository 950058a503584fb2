//! Middleware that answers the ping path at once, whatever is behind it.
//!
//! [`PingLayer`] answers `GET /health/ping` (or the path you set) with
//! `{"ping": "pong", "status": "alive"}` and 200: no database, no verdict, no lock, drain
//! included. Put it outermost, before authentication, tracing or rate limiting, so that a
//! load balancer polling it many times a second costs next to nothing and never gets a 401 or
//! a 429. [`HealthLayer`](crate::HealthLayer) answers the same path itself, so `PingLayer` is
//! for a service that wants ping alone (no monitor), or goes outermost, above a `HealthLayer`
//! that sits below layers the ping should skip; never below a `HealthLayer` (see
//! [Backpressure](#backpressure)).
//!
//! # Example
//!
//! ```
//! use bytes::Bytes;
//! use http::{Request, StatusCode};
//! use http_body_util::Full;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use tower_health::PingLayer;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = service_fn(|_request: Request<Full<Bytes>>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from("hello"))))
//! });
//! let service = ServiceBuilder::new().layer(PingLayer::new()).service(app);
//!
//! let response = service
//!     .oneshot(Request::get("/health/ping").body(Full::default())?)
//!     .await?;
//! assert_eq!(response.status(), StatusCode::OK);
//! # Ok(())
//! # }
//! ```
//!
//! # Backpressure
//!
//! [`Ping`] is always ready, and a ping never asks the inner service. Any other request keeps
//! the inner service's backpressure: it is asked in `call` and, when it is not ready, the
//! request waits for it in its response future (on the instance that was asked), as routers
//! do, so adding `PingLayer` changes nothing for the application's own requests.
//!
//! `PingLayer` never sheds: shedding has one place,
//! [`HealthLayer::shed_load`](crate::HealthLayer::shed_load), which sheds with a `PingLayer`
//! above it. Below a `HealthLayer`, a `PingLayer` would answer nothing (the health layer
//! answers the ping first) and, always ready, would hide the application's readiness from it,
//! so that it never sheds. Under a `PingLayer` alone, put tower's `LoadShed` below it (above
//! an always-ready layer it never sheds either); its `Overloaded` error becomes whatever
//! response your server makes of an error (axum's `HandleErrorLayer`, say).

pub(crate) mod layer;
mod service;

pub(crate) use self::layer::PingLayer;
pub use self::service::Ping;
