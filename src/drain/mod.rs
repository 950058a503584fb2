//! Graceful shutdown: stop being routed to before you stop serving.
//!
//! Every monitor has its drain, made with it ([`HealthHandle::drain`](crate::HealthHandle::drain),
//! set by [`HealthConfig::drain`](crate::HealthConfig::drain) or the `TOWER_HEALTH_DRAIN_*`
//! variables), and every reader of the monitor follows it. A rolling update without failed
//! requests goes in this order, and [`DrainHandle::serve`] runs the whole sequence around
//! your server:
//!
//! 1. SIGTERM arrives ([`DrainHandle::shutdown_signal`]) and the drain starts. Readiness,
//!    health and pool answer 503 `draining` with `Retry-After`; liveness, startup and ping
//!    keep answering 200, so the orchestrator does not restart a pod that is merely draining.
//! 2. For the [drain delay](crate::DrainConfig::delay) the server keeps serving ordinary requests
//!    (under [`DrainPolicy::Serve`]), adding `Connection: close` to HTTP/1 responses so that
//!    keep-alive clients move on, while load balancers notice and stop sending traffic.
//! 3. The delay over, `shutdown_signal` resolves and the server's graceful shutdown begins:
//!    no new connections, in-flight requests finish.
//! 4. [`DrainHandle::drained`] resolves when nothing is in flight, or at the
//!    [drain timeout](crate::DrainConfig::timeout) with the number of abandoned requests.
//!
//! [`Drain`] (and the axum stack, `HealthLayer::around`) counts a request as in flight until
//! its response body has ended or is dropped, streaming bodies included. The count is kept per
//! thread, on cache lines no other core writes, and summed when it is read.
//!
//! # Upgraded connections (WebSocket)
//!
//! A `101 Switching Protocols` response never gets `Connection: close`, nor does the answer to
//! a `CONNECT`: the drain must not undo an upgrade. Once the `101` is sent, the connection
//! belongs to the new protocol and the application's task serving it: the drain does not count
//! it as in flight (its response body, empty, has ended) and the server's graceful shutdown
//! does not wait for it. An application with long-lived upgraded connections should watch
//! [`DrainHandle::started`] and close them itself (a WebSocket close frame, then the socket),
//! within the [drain timeout](crate::DrainConfig::timeout).
//!
//! # Layer order
//!
//! Put [`HealthLayer`](crate::HealthLayer), which answers every probe (ping included),
//! *outside* [`DrainLayer`](crate::DrainLayer) (and a [`PingLayer`](crate::PingLayer), if any,
//! above both): probes are then answered before they reach the drain, so they are never
//! rejected and never counted as work that holds the drain open.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//!
//! use bytes::Bytes;
//! use http::{Request, StatusCode};
//! use http_body_util::Full;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use tower_health::{DrainConfig, DrainLayer, HealthConfig, HealthLayer, HealthMonitor};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HealthConfig::new().drain(DrainConfig::new().delay(Duration::ZERO));
//! let monitor = HealthMonitor::spawn(config)?;
//! // The monitor's drain: its probes report it, and the drain layer counts the
//! // application's requests in it.
//! let drain = monitor.drain();
//! let health = HealthLayer::new(&monitor);
//! let drain_layer = DrainLayer::new(&drain);
//! let app = service_fn(|_request: Request<Full<Bytes>>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from("hello"))))
//! });
//! let service = ServiceBuilder::new()
//!     .layer(health) // answers the probes, ping included
//!     .layer(drain_layer) // counts the application's requests
//!     .service(app);
//!
//! drain.start();
//! let ready = service.clone().oneshot(Request::get("/health/ready").body(Full::default())?).await?;
//! assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
//! let live = service.clone().oneshot(Request::get("/health/live").body(Full::default())?).await?;
//! assert_eq!(live.status(), StatusCode::OK);
//! assert!(drain.drained().await.is_clean());
//! # Ok(())
//! # }
//! ```
//!
//! [`DrainHandle`]: crate::DrainHandle
//! [`DrainHandle::serve`]: crate::DrainHandle::serve
//! [`DrainHandle::shutdown_signal`]: crate::DrainHandle::shutdown_signal
//! [`DrainHandle::drained`]: crate::DrainHandle::drained
//! [`DrainHandle::started`]: crate::DrainHandle::started
//! [`DrainConfig`]: crate::DrainConfig

pub(crate) mod layer;
mod service;

pub use self::service::Drain;
pub use crate::shutdown::config::DrainPolicy;
pub use crate::shutdown::handle::Drained;
