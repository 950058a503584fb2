use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request, Response, Version};
use tower_service::Service;

use super::{DrainBody, DrainHandle, DrainLayer, DrainPolicy, ResponseFuture};
use crate::probe::BodyMode;

/// Middleware that counts requests in flight and applies the drain policy once the drain has
/// started.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
pub struct Drain<S> {
    inner: S,
    handle: DrainHandle,
}

impl<S> Drain<S> {
    /// Wraps `inner`, counting its requests in `handle`.
    pub fn new(inner: S, handle: DrainHandle) -> Self {
        Self { inner, handle }
    }

    /// Returns a new [`Layer`](tower_layer::Layer) that wraps services with a [`Drain`]
    /// middleware.
    pub fn layer(handle: DrainHandle) -> DrainLayer {
        DrainLayer::new(handle)
    }

    define_inner_service_accessors!();
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Drain<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: http_body::Body<Data = Bytes>,
{
    type Response = Response<DrainBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let config = self.handle.config();
        if config.policy == DrainPolicy::Reject && self.handle.is_draining() {
            return ResponseFuture::rejected(self.handle.rejected().response(BodyMode::Full));
        }
        // `Connection` is a hop-by-hop header HTTP/2 forbids; a CONNECT tunnel's connection
        // belongs to the tunnel once it is answered.
        let close_if_draining = config.connection_close
            && matches!(request.version(), Version::HTTP_11 | Version::HTTP_10)
            && request.method() != Method::CONNECT;
        let guard = self.handle.enter();
        ResponseFuture::inner(self.inner.call(request), guard, close_if_draining)
    }
}
