use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::in_flight::InFlightGuard;
use crate::body::ProbeBody;

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
        Inner { #[pin] body: B, guard: Option<InFlightGuard> },
        Rejected { body: ProbeBody },
    }
}

impl<B> DrainBody<B> {
    pub(crate) fn inner(body: B, guard: InFlightGuard) -> Self {
        Self {
            kind: Kind::Inner {
                body,
                guard: Some(guard),
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
            KindProj::Inner { mut body, guard } => {
                let frame = std::task::ready!(body.as_mut().poll_frame(cx));
                // Finished, failed, or sent its last frame: no longer in flight.
                if !matches!(frame, Some(Ok(_))) || body.is_end_stream() {
                    guard.take();
                }
                Poll::Ready(frame)
            }
            KindProj::Rejected { body } => Pin::new(body)
                .poll_frame(cx)
                .map_err(|never| match never {}),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body, .. } => body.is_end_stream(),
            Kind::Rejected { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body, .. } => body.size_hint(),
            Kind::Rejected { body } => body.size_hint(),
        }
    }
}

impl<B> fmt::Debug for DrainBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Inner { guard, .. } => f
                .debug_struct("DrainBody::Inner")
                .field("in_flight", &guard.is_some())
                .finish_non_exhaustive(),
            Kind::Rejected { body } => f.debug_tuple("DrainBody::Rejected").field(body).finish(),
        }
    }
}
