//! The layers' response body: the inner service's body passed through untouched, or a probe
//! answer.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::rendered::ProbeBody;

pin_project! {
    /// Response body of [`Health`](crate::health::Health) and [`Ping`](crate::ping::Ping):
    /// either the inner service's body, streamed through frame by frame, or a probe answer.
    pub struct ResponseBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: B },
        Probe { body: ProbeBody },
    }
}

impl<B> ResponseBody<B> {
    pub(crate) fn inner(body: B) -> Self {
        Self {
            kind: Kind::Inner { body },
        }
    }

    pub(crate) fn probe(body: ProbeBody) -> Self {
        Self {
            kind: Kind::Probe { body },
        }
    }
}

impl<B> Body for ResponseBody<B>
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
            KindProj::Probe { body } => Poll::Ready(body.next_frame().map(Ok)),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Probe { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Probe { body } => body.size_hint(),
        }
    }
}

impl<B> fmt::Debug for ResponseBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Inner { .. } => f
                .debug_struct("ResponseBody::Inner")
                .finish_non_exhaustive(),
            Kind::Probe { body } => f.debug_tuple("ResponseBody::Probe").field(body).finish(),
        }
    }
}
