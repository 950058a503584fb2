//! The one response future of the three layers and the fused axum stack.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{Request, Response};
use pin_project_lite::pin_project;
use tower_service::Service;

use super::ProbeResponse;
use super::ResponseBody;
use super::admission::Admitted;
use crate::http::render::ProbeBody;
use crate::shutdown::InFlightGuard;

pin_project! {
    /// Response future of the three layers ([`Health`](crate::health::Health),
    /// [`Ping`](crate::ping::Ping) and [`Drain`](crate::drain::Drain)): the inner service's
    /// response (once it is ready, when it was not at `poll_ready`; below a drain, counted in
    /// it until its body ends), or a probe's response that is ready at once (or, for
    /// `?nocache=true`, after a fresh computation).
    pub struct ResponseFuture<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        #[pin]
        kind: Kind<S, ReqBody>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        Inner { #[pin] future: S::Future },
        // Below a drain: `admitted` counts the request from its admission to its body's end.
        Counted { #[pin] future: S::Future, admitted: Option<Admitted> },
        // The inner service was not ready when the layer was polled: this request waits for
        // it here, on the instance that was polled, while probes are answered at once. Boxed:
        // a service and a request would make every response future (probes' included) that
        // much larger to move, for a state only a saturated application reaches.
        Waiting { waiting: Box<Waiting<S, ReqBody>> },
        Probe { response: ProbeResponse },
        // The inner service failed when asked whether it is ready.
        Error { error: Option<S::Error> },
    }
}

/// A request waiting for the service that will take it.
struct Waiting<S, ReqBody> {
    service: S,
    request: Option<Request<ReqBody>>,
    /// Counts the request in the drain while it waits; dropped once the service has it.
    _queued: Option<InFlightGuard>,
    /// Counts it from its admission by a drain to its body's end.
    admitted: Option<Admitted>,
}

impl<S, ReqBody> ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    #[inline(always)]
    pub(crate) fn inner(future: S::Future) -> Self {
        Self {
            kind: Kind::Inner { future },
        }
    }

    /// The inner service's future below a drain: `admitted` counts the request until its
    /// response body ends.
    #[inline(always)]
    pub(crate) fn counted(future: S::Future, admitted: Admitted) -> Self {
        Self {
            kind: Kind::Counted {
                future,
                admitted: Some(admitted),
            },
        }
    }

    /// Waits for `service` to be ready, then calls it with `request`; `queued` counts the
    /// request in a drain until then, `admitted` until its body's end.
    pub(crate) fn waiting(
        service: S,
        request: Request<ReqBody>,
        queued: Option<InFlightGuard>,
        admitted: Option<Admitted>,
    ) -> Self {
        Self {
            kind: Kind::Waiting {
                waiting: Box::new(Waiting {
                    service,
                    request: Some(request),
                    _queued: queued,
                    admitted,
                }),
            },
        }
    }

    #[inline(always)]
    pub(crate) fn probe(response: ProbeResponse) -> Self {
        Self {
            kind: Kind::Probe { response },
        }
    }

    pub(crate) fn error(error: S::Error) -> Self {
        Self {
            kind: Kind::Error { error: Some(error) },
        }
    }
}

impl<S, ReqBody> ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    /// Polls for the response, handing the inner service's poll (with its admission by a
    /// drain, if any, to take once the response is ready) to `inner` and a probe's response
    /// to `probe`: the layers and the axum stack each wrap the body their own way. `inner`
    /// takes the poll whole, so that the axum stack changes the response where it lies
    /// instead of moving it out and back (it is large, and each move is a copy).
    #[inline(always)]
    pub(crate) fn poll_with<T>(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        inner: impl FnOnce(
            Poll<Result<S::Response, S::Error>>,
            &mut Option<Admitted>,
        ) -> Poll<Result<T, S::Error>>,
        probe: impl FnOnce(Response<ProbeBody>) -> T,
    ) -> Poll<Result<T, S::Error>> {
        loop {
            let mut kind = self.as_mut().project().kind;
            match kind.as_mut().project() {
                KindProj::Inner { future } => return inner(future.poll(cx), &mut None),
                KindProj::Counted { future, admitted } => return inner(future.poll(cx), admitted),
                KindProj::Waiting { waiting } => {
                    ready!(waiting.service.poll_ready(cx))?;
                    let request = waiting
                        .request
                        .take()
                        .expect("future polled after completion");
                    let future = waiting.service.call(request);
                    let admitted = waiting.admitted.take();
                    kind.set(match admitted {
                        None => Kind::Inner { future },
                        admitted @ Some(_) => Kind::Counted { future, admitted },
                    });
                }
                KindProj::Probe { response } => {
                    return Pin::new(response)
                        .poll(cx)
                        .map(|response| Ok(probe(response)));
                }
                KindProj::Error { error } => {
                    let error = error.take().expect("future polled after completion");
                    return Poll::Ready(Err(error));
                }
            }
        }
    }
}

impl<S, ReqBody, ResBody> Future for ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Output = Result<Response<ResponseBody<ResBody>>, S::Error>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(
            cx,
            |polled, admitted| {
                polled.map_ok(|mut response| match admitted.take() {
                    None => response.map(ResponseBody::inner),
                    Some(admitted) => {
                        let held = admitted.respond(&mut response);
                        response.map(|body| ResponseBody::holding(body, held))
                    }
                })
            },
            |response| response.map(ResponseBody::probe),
        )
    }
}

impl<S, ReqBody> std::fmt::Debug for ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Inner { .. } => "Inner",
            Kind::Counted { .. } => "Counted",
            Kind::Waiting { .. } => "Waiting",
            Kind::Probe { .. } => "Probe",
            Kind::Error { .. } => "Error",
        };
        f.debug_struct("ResponseFuture")
            .field("kind", &kind)
            .finish()
    }
}
