//! The layers' one response body: the inner service's body passed through untouched (counted
//! in a drain until it ends, below a drain; a gRPC call's load report added to its trailers,
//! with load feedback on), or a probe answer.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::admission::Held;
use super::edge::Trailer;
use crate::http::render::ProbeBody;
use crate::shutdown::InFlightGuard;

pin_project! {
    /// Response body of the three layers ([`Health`](crate::health::Health),
    /// [`Ping`](crate::ping::Ping) and [`Drain`](crate::drain::Drain)): the inner service's
    /// body, streamed through frame by frame (below a drain, holding the request's in-flight
    /// count until its last frame has been sent or it is dropped), or a probe answer (a
    /// drain's refusal included).
    pub struct ResponseBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: B },
        Counted { #[pin] body: Counted<B> },
        Reported { #[pin] body: Reported<B> },
        Probe { body: ProbeBody },
    }
}

impl<B> ResponseBody<B> {
    pub(crate) fn inner(body: B) -> Self {
        Self {
            kind: Kind::Inner { body },
        }
    }

    /// The inner service's body, holding what its response's admission handed back until
    /// its end.
    #[inline(always)]
    pub(crate) fn holding(body: B, held: Held) -> Self {
        let kind = match held {
            Held {
                guard: None,
                trailer: None,
            } => Kind::Inner { body },
            Held {
                guard: Some(guard),
                trailer: None,
            } => Kind::Counted {
                body: Counted::new(body, guard),
            },
            Held {
                guard,
                trailer: Some(trailer),
            } => Kind::Reported {
                body: Reported::new(body, guard, trailer),
            },
        };
        Self { kind }
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

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.project().kind.project() {
            KindProj::Inner { body } => body.poll_frame(cx),
            KindProj::Counted { body } => body.poll_frame(cx),
            KindProj::Reported { body } => body.poll_frame(cx),
            KindProj::Probe { body } => Poll::Ready(body.next_frame().map(Ok)),
        }
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Counted { body } => body.is_end_stream(),
            Kind::Reported { body } => body.is_end_stream(),
            Kind::Probe { body } => body.is_end_stream(),
        }
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Counted { body } => body.size_hint(),
            Kind::Reported { body } => body.size_hint(),
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
            Kind::Counted { body } => f
                .debug_struct("ResponseBody::Counted")
                .field("in_flight", &body.guard.is_counting())
                .finish_non_exhaustive(),
            Kind::Reported { body } => f
                .debug_struct("ResponseBody::Reported")
                .field(
                    "in_flight",
                    &body.guard.as_ref().is_some_and(InFlightGuard::is_counting),
                )
                .field("reported", &body.trailer.is_none())
                .finish_non_exhaustive(),
            Kind::Probe { body } => f.debug_tuple("ResponseBody::Probe").field(body).finish(),
        }
    }
}

pin_project! {
    /// A body that holds its request's in-flight count until it ends, fails or is dropped
    /// (servers drop a body once its last frame is sent): [`ResponseBody`]'s below a drain,
    /// and the axum stack's.
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

pin_project! {
    /// A gRPC call's body with load feedback on: its load report added to its trailers, where
    /// gRPC's clients read it, and its request counted in a drain until its end, as
    /// [`Counted`] does.
    pub(crate) struct Reported<B> {
        #[pin]
        body: B,
        guard: Option<InFlightGuard>,
        // Until the trailers pass.
        trailer: Option<Trailer>,
    }
}

impl<B> Reported<B> {
    pub(crate) fn new(body: B, guard: Option<InFlightGuard>, trailer: Trailer) -> Self {
        Self {
            body,
            guard,
            trailer: Some(trailer),
        }
    }
}

impl<B: Body> Body for Reported<B> {
    type Data = B::Data;
    type Error = B::Error;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let mut polled = this.body.poll_frame(cx);
        match &mut polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_mut()
                    && let Some(trailer) = this.trailer.take()
                {
                    trailer.finish(trailers);
                }
            }
            // Finished or failed: no longer in flight (see `Counted`). A call that ends with
            // no trailers (a broken stream) has no status to carry a report beside.
            Poll::Ready(None | Some(Err(_))) => drop(this.guard.take()),
            Poll::Pending => {}
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
