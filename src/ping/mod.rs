//! Middleware that answers the ping path at once, whatever is behind it.
//!
//! [`PingLayer`] answers `GET /health/ping` (or the path you set) with
//! `{"ping": "pong", "status": "alive"}` and 200: no database, no verdict, no lock, drain
//! included. Put it outermost, before authentication, tracing or rate limiting, so that a
//! load balancer polling it many times a second costs next to nothing and never gets a 401 or
//! a 429.
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
//! To shed them instead, as tower's `LoadShed` does, ask the probe layer nearest the
//! application: [`PingLayer::shed_load`] when `PingLayer` is directly above it, else
//! [`HealthLayer::shed_load`](crate::HealthLayer::shed_load). A request that arrives while
//! the inner service is not ready then gets 503 with `Retry-After: 1`.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use tower_layer::Layer;
use tower_service::Service;

pub(crate) mod layer;

pub(crate) use self::layer::PingLayer;
use crate::http::{Count, ProbeResponse, ResponseBody, ResponseFuture, WhenBusy, call_inner};
use crate::probe::{BodyMode, trim_trailing_slash};
use crate::rendered::fixed::{METHOD_NOT_ALLOWED, PING};

/// Middleware that answers the ping path before the inner service.
///
/// See the [module docs](self) for an example.
#[derive(Debug, Clone)]
pub struct Ping<S> {
    inner: S,
    path: Arc<str>,
    shed_load: bool,
}

impl<S> Ping<S> {
    /// Wraps `inner`, answering `/health/ping`.
    pub fn new(inner: S) -> Self {
        PingLayer::new().layer(inner)
    }

    /// Returns a new [`Layer`] that wraps services with a [`Ping`] middleware.
    pub fn layer() -> PingLayer {
        PingLayer::new()
    }

    define_inner_service_accessors!();

    fn is_ping(&self, path: &str) -> bool {
        trim_trailing_slash(path) == &*self.path
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Ping<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone,
    ResBody: http_body::Body<Data = Bytes>,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqBody>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Always ready: the inner service is asked in `call`, for ordinary requests only.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        if self.is_ping(request.uri().path()) {
            let response = match BodyMode::of(request.method()) {
                Some(mode) => ProbeResponse::fixed(&PING, mode),
                None => ProbeResponse::fixed(&METHOD_NOT_ALLOWED, BodyMode::Full),
            };
            return ResponseFuture::probe(response);
        }
        let when_busy = WhenBusy::shed(self.shed_load);
        call_inner(&mut self.inner, request, when_busy, Count::No)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::future::Ready;

    use http::StatusCode;
    use http_body_util::{BodyExt, Empty};

    use super::*;

    /// An inner service that is never ready, as one behind a saturated concurrency limit.
    #[derive(Clone)]
    struct Saturated;

    impl Service<Request<Empty<Bytes>>> for Saturated {
        type Response = Response<Empty<Bytes>>;
        type Error = Infallible;
        type Future = Ready<Result<Self::Response, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Pending
        }

        fn call(&mut self, _: Request<Empty<Bytes>>) -> Self::Future {
            unreachable!("never ready, never called")
        }
    }

    async fn send(service: &mut Ping<Saturated>, path: &str) -> (StatusCode, String) {
        std::future::poll_fn(|cx| service.poll_ready(cx))
            .await
            .unwrap();
        let request = Request::get(path).body(Empty::new()).unwrap();
        let response = service.call(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn ping_answers_while_other_requests_wait_for_the_inner_service() {
        let mut service = PingLayer::new().layer(Saturated);
        let (status, body) = send(&mut service, "/health/ping/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, r#"{"ping":"pong","status":"alive"}"#);
        // Anything else keeps the inner service's backpressure: it waits, it is not shed.
        std::future::poll_fn(|cx| service.poll_ready(cx))
            .await
            .unwrap();
        let mut work =
            std::pin::pin!(service.call(Request::get("/work").body(Empty::new()).unwrap()));
        let polled = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
        assert!(
            polled.is_pending(),
            "an ordinary request was answered by PingLayer"
        );
    }

    #[tokio::test]
    async fn shedding_is_asked_for() {
        let mut service = PingLayer::new().shed_load().layer(Saturated);
        assert_eq!(send(&mut service, "/health/ping").await.0, StatusCode::OK);
        let (status, body) = send(&mut service, "/work").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, r#"{"error":"service overloaded"}"#);
    }

    #[tokio::test]
    async fn the_path_is_configurable() {
        let mut service = PingLayer::new()
            .path("/_ping/")
            .shed_load()
            .layer(Saturated);
        assert_eq!(send(&mut service, "/_ping").await.0, StatusCode::OK);
        assert_eq!(
            send(&mut service, "/health/ping").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
