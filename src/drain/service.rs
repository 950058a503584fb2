use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use tower_service::Service;

use crate::http::{ProbeResponse, ResponseBody, ResponseFuture, admit, rejection};
use crate::shutdown::DrainHandle;

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
    /// Wraps `inner`, counting its requests in `drain`.
    pub fn new(inner: S, drain: &DrainHandle) -> Self {
        Self {
            inner,
            handle: drain.clone(),
        }
    }

    define_inner_service_accessors!();
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Drain<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: http_body::Body<Data = Bytes>,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        match admit(&self.handle, &request) {
            Some(admitted) => ResponseFuture::counted(self.inner.call(request), admitted),
            None => ResponseFuture::probe(ProbeResponse::ready(rejection(&self.handle))),
        }
    }
}
