//! The stack around an axum app, outside routing, in one service.
//!
//! [`HealthLayer::around`](crate::HealthLayer::around) puts the probes, the ping and the drain's
//! count in front of an axum `Router` (or any service of axum requests), and the result is
//! what [`axum::serve()`] takes:
//!
//! ```no_run
//! use axum::{Router, routing::get};
//! use tower_health::{HealthConfig, HealthLayer, HealthMonitor};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = HealthMonitor::spawn(HealthConfig::from_env()?)?;
//!
//! let app = Router::new().route("/", get(|| async { "hello" }));
//! // Probes and ping before routing; the app's work is counted.
//! let app = HealthLayer::new(&health).around(app);
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! health
//!     .drain()
//!     .serve(|shutdown| axum::serve(listener, app).with_graceful_shutdown(shutdown))
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`Stack`] answers the probe paths of [`HealthLayer`] (ping included,
//! under the same prefix) without the router ever seeing them. Every other request goes to the
//! app, counted in flight in the monitor's drain until its response body ends,
//! refused under [`DrainPolicy::Reject`](crate::drain::DrainPolicy::Reject) and answered with
//! `Connection: close` during the drain, as [`DrainLayer`](crate::DrainLayer) does.
//!
//! # Why around the router, and not `Router::layer`
//!
//! axum runs a layer added with `Router::layer` after routing, around each route and the
//! fallback, and clones and boxes each route's layered service for every request, once per
//! `Router::layer` call: the three layers that way add that work to every application
//! request, and a probe goes through routing first. Around the router, in one service, a
//! probe never reaches the router, and an application request pays a path check, the drain's
//! count and, when its response has a body, one allocation (axum's body is boxed, so the body
//! that holds the count until the response has been sent is boxed again; a response without a
//! body ends its count with its head and allocates nothing). The benches' README
//! (`benches/README.md`) has the figures.
//!
//! # Backpressure
//!
//! As with the layers: [`Stack`] is always ready, a probe never asks the app, and an
//! application request asks it in `call` and, when it is not ready, waits for it inside its
//! response future (counted in flight while it waits). With
//! [`HealthLayer::shed_load`] it gets 503 with `Retry-After: 1` instead.
//!
//! # Serving
//!
//! `axum::serve(listener, app)` takes the stack as it takes a `Router`: for each connection it
//! asks the app for its service (a `Router` prepares its routes then; a `Router`, a
//! `MethodRouter` and a handler's service all answer at once) and wraps it. With another
//! server, with `into_make_service_with_connect_info`, or around a service that is not one
//! of axum's, use [`axum::ServiceExt`]'s `into_make_service*` methods on the stack, as on any
//! service of axum requests.

use std::sync::Arc;

use crate::health::layer::HealthLayer;

mod future;
mod service;

pub use self::service::Stack;

#[cfg(test)]
mod tests;

// The fused form is built from the layer here, so that `health/` knows nothing of axum.
impl HealthLayer {
    /// `app` (an axum `Router`, say) with this layer's probes and ping answered in front of
    /// it, outside routing, and its requests counted in the monitor's drain (see
    /// [`HealthHandle::drain`](crate::HealthHandle::drain)): the whole stack in
    /// one service, which [`axum::serve()`] takes as it takes the router.
    ///
    /// A probe then never reaches routing, and an application request pays a path check and
    /// the drain's count, where three `Router::layer` calls run after routing, once per route;
    /// see the [`axum` module docs](crate::axum).
    pub fn around<S>(&self, app: S) -> Stack<S> {
        Stack::new(app, Arc::clone(self.reader()))
    }
}
