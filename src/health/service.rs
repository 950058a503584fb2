use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use tower_service::Service;

use super::{HealthLayer, ResponseFuture};
use crate::body::ResponseBody;
use crate::config::NoCache;
use crate::drain::DrainHandle;
use crate::monitor::HealthHandle;
use crate::probe::{self, PrefixPaths};

/// Middleware that answers the probe paths from published verdicts and passes every other
/// request to the inner service untouched.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
pub struct Health<S> {
    inner: S,
    // One reference count per request: hyper-util and axum clone the service for each one.
    state: Arc<HealthState>,
}

/// What every clone of one [`Health`] shares.
#[derive(Debug)]
pub(super) struct HealthState {
    handle: HealthHandle,
    paths: PrefixPaths,
    drain: Option<DrainHandle>,
}

impl HealthState {
    pub(super) fn handle(&self) -> &HealthHandle {
        &self.handle
    }

    pub(super) fn new(handle: HealthHandle, drain: Option<DrainHandle>) -> Arc<Self> {
        let paths = PrefixPaths::new(&handle.shared.config.path_prefix);
        Arc::new(Self {
            handle,
            paths,
            drain,
        })
    }
}

impl<S> Health<S> {
    /// Wraps `inner`, answering the probes with `handle`'s verdicts.
    pub fn new(inner: S, handle: HealthHandle) -> Self {
        Self::with_state(inner, HealthState::new(handle, None))
    }

    pub(super) fn with_state(inner: S, state: Arc<HealthState>) -> Self {
        Self { inner, state }
    }

    /// Answers readiness, health and pool with 503 `draining` once `drain` has started.
    ///
    /// Defaults to no drain handle.
    #[must_use]
    pub fn drain(self, drain: DrainHandle) -> Self {
        let state = HealthState::new(self.state.handle().clone(), Some(drain));
        Self::with_state(self.inner, state)
    }

    /// Returns a new [`Layer`](tower_layer::Layer) that wraps services with a [`Health`]
    /// middleware.
    pub fn layer(handle: HealthHandle) -> HealthLayer {
        HealthLayer::new(handle)
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
        let state = &*self.state;
        let Some(probe) = state.paths.classify(request.uri().path()) else {
            return ResponseFuture::inner(self.inner.call(request));
        };
        let shared = &state.handle.shared;
        let nocache = probe.takes_nocache()
            && shared.config.nocache == NoCache::Allowed
            && probe::wants_nocache(request.uri().query());
        ResponseFuture::reply(probe::reply(
            shared,
            probe,
            request.method(),
            nocache,
            state.drain.as_ref(),
        ))
    }
}
