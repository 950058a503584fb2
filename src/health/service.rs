use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use tower_service::Service;

use super::{HealthLayer, ResponseFuture};
use crate::body::ResponseBody;
use crate::config::NoCache;
use crate::monitor::{HealthHandle, MonitorSource};
use crate::probe::{self, BodyMode, Freshness};
use crate::probe_response::ProbeResponse;
use crate::rendered::fixed::METHOD_NOT_ALLOWED;

/// Middleware that answers the probe paths from published verdicts and passes every other
/// request to the inner service untouched.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
pub struct Health<S> {
    inner: S,
    // One reference count per request: hyper-util and axum clone the service for each one.
    handle: HealthHandle,
}

impl<S> Health<S> {
    /// Wraps `inner`, answering the probes with `handle`'s verdicts.
    pub fn new(inner: S, handle: HealthHandle) -> Self {
        Self { inner, handle }
    }

    /// Returns a new [`Layer`](tower_layer::Layer) that wraps services with a [`Health`]
    /// middleware; see [`HealthLayer::new`].
    pub fn layer(source: impl MonitorSource) -> HealthLayer {
        HealthLayer::new(source)
    }

    define_inner_service_accessors!();
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Health<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: http_body::Body<Data = Bytes>,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let handle = &self.handle;
        let Some(probe) = handle.probe_paths().classify(request.uri().path()) else {
            return ResponseFuture::inner(self.inner.call(request));
        };
        let Some(mode) = BodyMode::of(request.method()) else {
            return ResponseFuture::probe(ProbeResponse::fixed(
                &METHOD_NOT_ALLOWED,
                BodyMode::Full,
            ));
        };
        // The layers have no notion of a caller, so `authorized` is `off` here.
        let freshness = if probe.takes_nocache()
            && handle.nocache_policy() == NoCache::Allowed
            && probe::wants_nocache(request.uri().query())
        {
            Freshness::Bypass
        } else {
            Freshness::Published
        };
        ResponseFuture::probe(handle.probe_response(probe, mode, freshness))
    }
}
