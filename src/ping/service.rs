use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use super::PingLayer;
use crate::http::Marks;
use crate::http::render::fixed::{METHOD_NOT_ALLOWED, PING};
use crate::http::request::{BodyMode, trim_trailing_slash};
use crate::http::{Count, ProbeResponse, ResponseBody, ResponseFuture, WhenBusy, call_inner};

/// Middleware that answers the ping path before the inner service.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
pub struct Ping<S> {
    pub(super) inner: S,
    pub(super) path: Arc<str>,
}

impl<S> Ping<S> {
    /// Wraps `inner`, answering `/health/ping`.
    pub fn new(inner: S) -> Self {
        PingLayer::new().layer(inner)
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
        // Never shed here: shedding is `HealthLayer::shed_load`'s, its one place.
        call_inner(
            &mut self.inner,
            request,
            WhenBusy::Wait,
            Count::No,
            Marks::NONE,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::future::{Ready, poll_fn};
    use std::pin::pin;

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

    fn get(path: &str) -> Request<Empty<Bytes>> {
        Request::get(path).body(Empty::new()).unwrap()
    }

    async fn send<S>(service: &mut Ping<S>, path: &str) -> (StatusCode, String)
    where
        S: Service<Request<Empty<Bytes>>, Response = Response<Empty<Bytes>>> + Clone,
        S::Error: std::fmt::Debug,
    {
        poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
        let response = service.call(get(path)).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    /// Whether `path` waits for the saturated inner service (polled once: it is not answered).
    async fn waits(service: &mut Ping<Saturated>, path: &str) -> bool {
        poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
        let mut call = pin!(service.call(get(path)));
        poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx).is_pending())).await
    }

    #[tokio::test]
    async fn ping_answers_while_other_requests_wait_for_the_inner_service() {
        let mut service = PingLayer::new().layer(Saturated);
        let (status, body) = send(&mut service, "/health/ping/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, r#"{"ping":"pong","status":"alive"}"#);
        // Anything else keeps the inner service's backpressure: it waits, it is not shed.
        assert!(
            waits(&mut service, "/work").await,
            "an ordinary request was answered by PingLayer"
        );
    }

    /// `PingLayer` never sheds; under it alone, tower's `LoadShed` below it does, while the
    /// ping still answers.
    #[tokio::test]
    async fn tower_s_load_shed_below_it_sheds() {
        let mut service = PingLayer::new().layer(tower::load_shed::LoadShed::new(Saturated));
        assert_eq!(send(&mut service, "/health/ping").await.0, StatusCode::OK);
        poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
        let error = service.call(get("/work")).await.unwrap_err();
        assert!(error.is::<tower::load_shed::error::Overloaded>(), "{error}");
    }

    #[tokio::test]
    async fn the_path_is_configurable() {
        let mut service = PingLayer::new().path("/_ping/").layer(Saturated);
        assert_eq!(send(&mut service, "/_ping").await.0, StatusCode::OK);
        assert!(
            waits(&mut service, "/health/ping").await,
            "the default path, no longer the ping's, goes to the inner service"
        );
    }
}
