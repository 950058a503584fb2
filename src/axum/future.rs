use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use http::Request;
use http_body::Body as _;
use http_body_util::combinators::UnsyncBoxBody;
use pin_project_lite::pin_project;
use tower_service::Service;

use crate::http::{Admitted, Counted, Held, Reported, Trailer};
use crate::shutdown::InFlightGuard;

pin_project! {
    /// Response future of [`Stack`](super::Stack): the app's own future, for an application request the
    /// app was ready for, or the layers' one response future
    /// ([`tower_health::ResponseFuture`](crate::ResponseFuture)) for everything else, each
    /// answering with axum's response type.
    pub struct StackFuture<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        #[pin]
        kind: Kind<S, ReqBody>,
        // Counts an application request the app was ready for in the drain, until its
        // response body ends (`None` for `Layers`, whose future counts its own). Beside the
        // kind rather than inside `App`: there, the kind's tag would live in the niche of
        // this field's `bool`, and the app's (large) future, behind that one byte, would be
        // copied as one unaligned block, once more, on every request (callgrind counts it).
        admitted: Option<Admitted>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        // What nearly every application request does.
        App { #[pin] future: S::Future },
        // A probe's answer, a drain's refusal, or an application request that waits for the
        // app, was shed, or made the app fail.
        Layers { #[pin] future: crate::http::ResponseFuture<S, ReqBody> },
    }
}

impl<S, ReqBody> StackFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    #[inline(always)]
    pub(super) fn app(future: S::Future, admitted: Option<Admitted>) -> Self {
        Self {
            kind: Kind::App { future },
            admitted,
        }
    }

    #[inline(always)]
    pub(super) fn layers(future: crate::http::ResponseFuture<S, ReqBody>) -> Self {
        Self {
            kind: Kind::Layers { future },
            admitted: None,
        }
    }
}

impl<S, ReqBody> Future for StackFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>, Response = Response>,
{
    type Output = Result<Response, S::Error>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.kind.project() {
            KindProj::App { future } => counted(future.poll(cx), this.admitted),
            KindProj::Layers { future } => {
                future.poll_with(cx, counted, |response| response.map(Body::new))
            }
        }
    }
}

/// Counts a ready response of the app in the drain, changed where it lies: not moved out
/// and back (it is large).
#[inline(always)]
fn counted<E>(
    mut polled: Poll<Result<Response, E>>,
    admitted: &mut Option<Admitted>,
) -> Poll<Result<Response, E>> {
    if let Poll::Ready(Ok(response)) = &mut polled
        && let Some(admitted) = admitted.take()
    {
        count(response, admitted);
    }
    polled
}

/// Passes the app's body on as it is but for the drain's count, which it holds until its end.
///
/// A response without a body (`is_end_stream` already: a 204, a redirect, a handler returning
/// `()` or a status) has nothing left to send once its head is ready, so its count ends here,
/// with no allocation. Any other body is boxed again around the count (axum's body is a boxed
/// trait object: nothing can ride along inside it without a box of its own): the one
/// allocation the stack adds to an application request, and most of its cost. It stays
/// because a request must count until its body has been sent, a stream's included.
///
/// A gRPC call's body (load feedback on) carries its load report to its trailers the same
/// way, boxed again around [`Reported`].
#[inline(always)]
fn count(response: &mut Response, admitted: Admitted) {
    match admitted.respond(response) {
        Held {
            guard: Some(guard),
            trailer: None,
        } if !response.body().is_end_stream() => wrap(response, guard),
        Held {
            guard,
            trailer: Some(trailer),
        } => report(response, guard, trailer),
        Held { .. } => {}
    }
}

/// The counting body around `response`'s.
#[inline(always)]
fn wrap(response: &mut Response, guard: InFlightGuard) {
    let body = std::mem::take(response.body_mut());
    // Boxed as axum boxes, so that `Body::new` takes it as it is (no second wrapper to map
    // its errors, which are already axum's).
    *response.body_mut() = Body::new(UnsyncBoxBody::new(Counted::new(body, guard)));
}

/// The reporting body around a gRPC call's.
#[cold]
fn report(response: &mut Response, guard: Option<InFlightGuard>, trailer: Trailer) {
    let body = std::mem::take(response.body_mut());
    *response.body_mut() = Body::new(UnsyncBoxBody::new(Reported::new(body, guard, trailer)));
}

impl<S, ReqBody> std::fmt::Debug for StackFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::App { .. } => f
                .debug_struct("StackFuture::App")
                .field("counted", &self.admitted.is_some())
                .finish_non_exhaustive(),
            Kind::Layers { future } => f.debug_tuple("StackFuture::Layers").field(future).finish(),
        }
    }
}
