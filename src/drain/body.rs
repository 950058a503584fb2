use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::handle::InFlightGuard;
use crate::body::ResponseBody;

pin_project! {
    /// Response body of [`Drain`](super::Drain): the inner body, holding the request's
    /// in-flight count until the last frame has been sent or the body is dropped.
    pub struct DrainBody<B> {
        #[pin]
        body: ResponseBody<B>,
        guard: Option<InFlightGuard>,
    }
}

impl<B> DrainBody<B> {
    pub(crate) fn new(body: ResponseBody<B>, guard: Option<InFlightGuard>) -> Self {
        Self { body, guard }
    }
}

impl<B> Body for DrainBody<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        let frame = std::task::ready!(this.body.as_mut().poll_frame(cx));
        // Finished, failed, or sent its last frame: the request is no longer in flight.
        if !matches!(frame, Some(Ok(_))) || this.body.is_end_stream() {
            this.guard.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<B> fmt::Debug for DrainBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DrainBody")
            .field("body", &self.body)
            .field("in_flight", &self.guard.is_some())
            .finish()
    }
}
