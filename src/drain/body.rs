use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::in_flight::InFlightGuard;
use crate::rendered::ProbeBody;

pin_project! {
    /// Response body of [`Drain`](super::Drain): the inner body, holding the request's
    /// in-flight count until the last frame has been sent or the body is dropped; or the
    /// answer to a request refused during the drain.
    pub struct DrainBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: Counted<B> },
        Rejected { body: ProbeBody },
    }
}

pin_project! {
    /// A body that holds its request's in-flight count until it ends, fails or is dropped
    /// (servers drop a body once its last frame is sent): [`DrainBody`]'s, and the axum
    /// stack's.
    pub(crate) struct Counted<B> {
        #[pin]
        body: B,
        guard: InFlightGuard,
    }
}

impl<B> Counted<B> {
    pub(crate) fn new(body: B, guard: InFlightGuard) -> Self {
        Self { body, guard }
    }
}

impl<B: Body> Body for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        // Returned as it is, not unpacked and packed again: a frame is large, and each move of
        // it costs a copy on every frame of every response.
        let polled = this.body.poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            // Finished or failed: no longer in flight. After its last frame the server drops
            // the body (hyper does in the same poll, once `is_end_stream` says so), which drops
            // the count with it; asking `is_end_stream` here again would cost every response
            // another call through the inner body.
            this.guard.release();
        }
        polled
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<B> DrainBody<B> {
    pub(crate) fn inner(body: B, guard: InFlightGuard) -> Self {
        Self {
            kind: Kind::Inner {
                body: Counted::new(body, guard),
            },
        }
    }

    pub(crate) fn rejected(body: ProbeBody) -> Self {
        Self {
            kind: Kind::Rejected { body },
        }
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
        match self.project().kind.project() {
            KindProj::Inner { body } => body.poll_frame(cx),
            KindProj::Rejected { body } => Pin::new(body)
                .poll_frame(cx)
                .map_err(|never| match never {}),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Rejected { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Rejected { body } => body.size_hint(),
        }
    }
}

impl<B> fmt::Debug for DrainBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Inner { body } => f
                .debug_struct("DrainBody::Inner")
                .field("in_flight", &body.guard.is_counting())
                .finish_non_exhaustive(),
            Kind::Rejected { body } => f.debug_tuple("DrainBody::Rejected").field(body).finish(),
        }
    }
}
