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
//!    no new connections, in-flight requests finish, and the registered [long-lived
//!    connections](#long-lived-connections) are told to close, their turns spread over the
//!    [close window](crate::DrainConfig::close_window).
//! 4. [`DrainHandle::drained`] resolves when nothing is in flight, or at the
//!    [drain timeout](crate::DrainConfig::timeout) with the number of abandoned requests.
//!
//! [`Drain`] (and the axum stack, `HealthLayer::around`) counts a request as in flight until
//! its response body has ended or is dropped, streaming bodies included. The count is kept per
//! thread, on cache lines no other core writes, and summed when it is read.
//!
//! # Long-lived connections
//!
//! A WebSocket, an event stream or a gRPC server stream does not end by itself, so a drain
//! must tell it to. Register each with [`DrainHandle::long_lived`]: the [`LongLived`] guard,
//! held for the connection's life, counts it in [`DrainHandle::in_flight`] (so
//! [`DrainHandle::drained`] waits for it within the timeout, and reports it in
//! [`Drained::abandoned_long_lived`] if the timeout comes first, by name in the timeout's
//! log line), and
//! [`LongLived::closing`] resolves when its turn to close has come. The turns are spread
//! over the [close window](crate::DrainConfig::close_window), which starts when the drain
//! delay has passed: the load balancers have stopped sending new connections here, and the
//! clients that reconnect reach the other instances a few at a time rather than all at once.
//!
//! Close each with its protocol's goodbye, so that no client sees a reset: a WebSocket close
//! frame 1001 (Going Away), the end of an event stream's body, a gRPC stream's
//! `UNAVAILABLE` (which clients retry). [`LongLived::until_closing`] does it for an event
//! stream, [`LongLived::until_closing_with`] for a tonic streaming method (ending with its
//! `UNAVAILABLE`).
//!
//! A registered connection costs nothing per message: the guard is not touched between its
//! registration and its drop, and polling [`closing`](LongLived::closing) beside the
//! connection's reads is an
//! atomic load (a timer's check once the drain has started), with no lock.
//!
//! ```
//! use std::time::Duration;
//!
//! use tower_health::{DrainConfig, HealthConfig, HealthMonitor};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let drain = DrainConfig::new()
//!     .delay(Duration::from_millis(10))
//!     .close_window(Duration::from_millis(100));
//! let monitor = HealthMonitor::spawn(HealthConfig::new().drain(drain))?;
//! let drain = monitor.drain().clone();
//!
//! // In the handler, before answering (axum: before `WebSocketUpgrade::on_upgrade`, then
//! // moved into the task serving the socket).
//! let connection = drain.long_lived("chat-websocket"); // its route, or its kind
//! let socket = tokio::spawn(async move {
//!     let mut closing = connection.closing();
//!     loop {
//!         tokio::select! {
//!             () = &mut closing => break, // send a close frame 1001, then return
//!             // message = socket.recv() => echo it
//!         }
//!     }
//!     drop(connection); // closed: it no longer holds the drain open
//! });
//!
//! drain.start();
//! let drained = drain.drained().await;
//! assert!(drained.is_clean());
//! # socket.await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Upgraded connections
//!
//! A `101 Switching Protocols` response never gets `Connection: close`, nor does the answer to
//! a `CONNECT`: the drain must not undo an upgrade. Once the `101` is sent, the connection
//! belongs to the new protocol and the application's task serving it: its request no longer
//! counts (its response body, empty, has ended) and the server's graceful shutdown does not
//! wait for it. Register it with [`DrainHandle::long_lived`], as above, so that the drain
//! counts it, waits for it and tells it when to close (with hyper-util, take the guard before
//! answering the `101` and move it into the task that awaits `hyper::upgrade::on`).
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
//! [`DrainHandle::long_lived`]: crate::DrainHandle::long_lived
//! [`DrainHandle::in_flight`]: crate::DrainHandle::in_flight
//! [`DrainConfig`]: crate::DrainConfig

pub(crate) mod layer;
mod service;

pub use self::service::Drain;
pub use crate::shutdown::config::DrainPolicy;
pub use crate::shutdown::handle::Drained;
pub use crate::shutdown::long_lived::LongLived;
