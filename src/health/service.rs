use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use tower_service::Service;

use super::reader::Reader;
use crate::http::{Count, ResponseBody, ResponseFuture, WhenBusy, call_inner};
use crate::monitor::HealthHandle;

/// Middleware that answers the probe paths from published verdicts and passes every other
/// request to the inner service untouched.
///
/// Always ready: probes never wait on the inner service (see the
/// [module docs](super#backpressure)).
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
pub struct Health<S> {
    inner: S,
    // One reference count per request: hyper-util and axum clone the service for each one.
    reader: Arc<Reader>,
}

impl<S> Health<S> {
    /// Wraps `inner`, answering the probes with the verdicts of `health`'s monitor and the
    /// settings of its configuration.
    pub fn new(inner: S, health: &HealthHandle) -> Self {
        Self::with_reader(inner, Arc::new(Reader::new(health.clone())))
    }

    pub(crate) fn with_reader(inner: S, reader: Arc<Reader>) -> Self {
        Self { inner, reader }
    }

    define_inner_service_accessors!();
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Health<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone,
    ResBody: http_body::Body<Data = Bytes>,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqBody>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Always ready: the inner service's readiness is asked for in `call`, and only for the
        // requests that go to it.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let reader = &*self.reader;
        match reader.ask(&request) {
            Some(asked) => ResponseFuture::probe(reader.answer(asked)),
            None => call_inner(
                &mut self.inner,
                request,
                WhenBusy::shed(reader.shed_load),
                Count::WhileQueued(reader.handle.drain()),
                reader.marks(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::future::{Ready, poll_fn, ready};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http::StatusCode;
    use http_body_util::Empty;
    use tower_layer::Layer;

    use super::*;
    use crate::{HealthConfig, HealthLayer, HealthMonitor};

    /// Not ready at its first poll (and wakes itself), ready from then on; counts its calls.
    #[derive(Clone, Default)]
    struct ReadyOnSecondPoll {
        polls: Arc<AtomicUsize>,
        calls: Arc<AtomicUsize>,
    }

    impl Service<Request<Empty<Bytes>>> for ReadyOnSecondPoll {
        type Response = Response<Empty<Bytes>>;
        type Error = Infallible;
        type Future = Ready<Result<Self::Response, Infallible>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            if self.polls.fetch_add(1, Ordering::SeqCst) == 0 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<Empty<Bytes>>) -> Self::Future {
            self.calls.fetch_add(1, Ordering::SeqCst);
            ready(Ok(Response::new(Empty::new())))
        }
    }

    fn get(path: &str) -> Request<Empty<Bytes>> {
        Request::get(path).body(Empty::new()).unwrap()
    }

    #[tokio::test]
    async fn a_probe_is_answered_without_waiting_for_the_inner_service() {
        let inner = ReadyOnSecondPoll::default();
        let mut service = HealthLayer::new(HealthMonitor::spawn(HealthConfig::new()).unwrap())
            .layer(inner.clone());
        poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
        let response = service.call(get("/health/live")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(inner.polls.load(Ordering::SeqCst), 0, "a probe never asks");
        assert_eq!(inner.calls.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn an_application_request_waits_for_the_inner_service_then_goes_through() {
        let inner = ReadyOnSecondPoll::default();
        let mut service = HealthLayer::new(HealthMonitor::spawn(HealthConfig::new()).unwrap())
            .layer(inner.clone());
        // The layer is ready although the inner service is not, and does not ask it.
        poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
        assert_eq!(inner.polls.load(Ordering::SeqCst), 0);
        let response = service.call(get("/work")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            inner.polls.load(Ordering::SeqCst),
            2,
            "asked in call, then again by the future"
        );
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_ready_inner_service_is_called_directly() {
        let inner = ReadyOnSecondPoll::default();
        inner.polls.store(1, Ordering::SeqCst);
        let mut service = HealthLayer::new(HealthMonitor::spawn(HealthConfig::new()).unwrap())
            .layer(inner.clone());
        poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
        let response = service.call(get("/work")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(inner.polls.load(Ordering::SeqCst), 2, "asked once, in call");
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn details_follow_the_layers_own_setting_and_the_callers_key() {
        use crate::access::AccessKeys;
        use crate::config::Details;
        use crate::test_helpers::FakeCheck;

        let config = HealthConfig::new().database("default", FakeCheck::Refused);
        let layer = HealthLayer::new(HealthMonitor::spawn(config).unwrap());
        let mut watch = layer.handle().watch();
        while !watch.changed().await.unwrap().started {}
        let keys = AccessKeys::new().operator("operator-key-0123456789");
        let public = layer.clone().details(Details::Never);
        let authorized = layer
            .clone()
            .details(Details::Authorized)
            .access_keys(&keys);
        let body = |layer: &HealthLayer, key: Option<&'static str>| {
            let mut service = layer.layer(ReadyOnSecondPoll::default());
            let mut request = get("/health/ready");
            if let Some(key) = key {
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, key.parse().unwrap());
            }
            async move {
                let response = service.call(request).await.unwrap();
                assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
                let body = http_body_util::BodyExt::collect(response.into_body())
                    .await
                    .unwrap()
                    .to_bytes();
                String::from_utf8(body.to_vec()).unwrap()
            }
        };
        let refused = "Connection refused";
        assert!(
            body(&layer, None).await.contains(refused),
            "the default: always"
        );
        assert!(!body(&public, None).await.contains(refused));
        assert!(
            !body(&public, Some("Bearer operator-key-0123456789"))
                .await
                .contains(refused),
            "never is never"
        );
        assert!(!body(&authorized, None).await.contains(refused));
        assert!(
            !body(&authorized, Some("Bearer wrong-key-0123456789"))
                .await
                .contains(refused)
        );
        let shown = body(&authorized, Some("Bearer operator-key-0123456789")).await;
        assert!(shown.contains(refused), "{shown}");
        // A key too short to be one is not taken: its holder sees no more than anyone.
        let weak = layer
            .clone()
            .details(Details::Authorized)
            .access_keys(&AccessKeys::new().operator("short"));
        assert!(!body(&weak, Some("Bearer short")).await.contains(refused));
        // One monitor behind all of them.
        assert_eq!(
            layer.handle().stats().readiness_rounds,
            public.handle().stats().readiness_rounds
        );
    }
}
