//! How an application request reaches the inner service behind the always-ready probe
//! layers: the one rule the three layers and the axum stack share.

use std::task::{Context, Poll, Waker};

use http::Request;
use tower_service::Service;

use super::Marks;
use super::admission::Admitted;
use super::{ProbeResponse, ResponseFuture};
use crate::http::render::fixed::OVERLOADED;
use crate::http::request::BodyMode;
use crate::shutdown::DrainHandle;

/// What an application request does when the inner service is not ready.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum WhenBusy {
    /// Wait for it, in the response future (the inner service's backpressure, kept).
    Wait,
    /// Answer 503 at once, as tower's `LoadShed` does.
    Shed,
}

impl WhenBusy {
    pub(crate) fn shed(shed_load: bool) -> Self {
        if shed_load { Self::Shed } else { Self::Wait }
    }
}

/// How an application request counts in a drain on its way to the inner service.
pub(crate) enum Count<'a> {
    /// Not here: there is no drain, or a [`Drain`](crate::drain::Drain) below counts it.
    No,
    /// While it waits for the inner service (the health layer): queued work counts in the
    /// drain it will reach, so that `drained()` never reports a clean drain while a request
    /// waits to run; a `Drain` below counts it once it runs.
    WhileQueued(&'a DrainHandle),
    /// From its admission by the drain to its body's end (the axum stack, for a request
    /// that waits for the app).
    #[cfg_attr(not(feature = "axum"), allow(dead_code))]
    Admitted(Admitted),
}

/// Sends an application request to `inner`: at once if it is ready, else as `when_busy` says.
/// Its response carries the dialects' words for `marks` (see [`Edge`](super::Edge)).
///
/// Readiness is asked here, with a no-op waker, rather than in `poll_ready`: a probe then
/// never polls the inner service at all, and an application request polls it once either
/// way. When it is not ready, the polled instance goes into the response future (which polls
/// it again, with the task's waker) and a fresh clone stays behind, as routers do: readiness
/// belongs to the instance that was polled.
// Inlined always: the request and the inner service's future are large, and each call
// boundary that returns them by value is another copy on every application request.
#[inline(always)]
pub(crate) fn call_inner<S, ReqBody>(
    inner: &mut S,
    request: Request<ReqBody>,
    when_busy: WhenBusy,
    count: Count<'_>,
    marks: Marks,
) -> ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>> + Clone,
{
    match poll_ready_now(inner) {
        // Each arm builds its variant around the inner future where it lies: choosing the
        // variant after the call would copy the (large) future once more.
        Poll::Ready(Ok(())) => match count {
            Count::Admitted(admitted) => {
                ResponseFuture::counted(inner.call(request), admitted.with_marks(marks))
            }
            Count::No | Count::WhileQueued(_) if marks.is_some() => {
                ResponseFuture::counted(inner.call(request), Admitted::marked(marks))
            }
            Count::No | Count::WhileQueued(_) => ResponseFuture::inner(inner.call(request)),
        },
        polled => not_ready(inner, polled, request, when_busy, count, marks),
    }
}

/// Asks `inner` whether it is ready, with a no-op waker (see [`call_inner`]).
#[inline(always)]
pub(crate) fn poll_ready_now<S, Request>(inner: &mut S) -> Poll<Result<(), S::Error>>
where
    S: Service<Request>,
{
    inner.poll_ready(&mut Context::from_waker(Waker::noop()))
}

/// [`call_inner`] for an inner service that was not ready (`polled`), or failed to say.
/// Never inlined: kept out of the caller, it leaves the path nearly every request takes
/// small, and the request and the inner service's future are copied less on it.
#[cold]
#[inline(never)]
pub(crate) fn not_ready<S, ReqBody>(
    inner: &mut S,
    polled: Poll<Result<(), S::Error>>,
    request: Request<ReqBody>,
    when_busy: WhenBusy,
    count: Count<'_>,
    marks: Marks,
) -> ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>> + Clone,
{
    match polled {
        Poll::Ready(Err(error)) => ResponseFuture::error(error),
        Poll::Ready(Ok(())) | Poll::Pending => call_busy(inner, request, when_busy, count, marks),
    }
}

/// Sheds the request, or lets it wait in its response future on the instance that was
/// polled, a fresh clone staying behind.
fn call_busy<S, ReqBody>(
    inner: &mut S,
    request: Request<ReqBody>,
    when_busy: WhenBusy,
    count: Count<'_>,
    marks: Marks,
) -> ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>> + Clone,
{
    if when_busy == WhenBusy::Shed {
        let mut shed = OVERLOADED.response(BodyMode::Full);
        // The crate's own 503 is no gRPC response: its report goes in its head, no trailer.
        let _ = super::mark(marks, &mut shed);
        return ResponseFuture::probe(ProbeResponse::ready(shed));
    }
    let (queued, admitted) = match count {
        Count::No => (None, None),
        Count::WhileQueued(drain) => (Some(drain.enter()), None),
        Count::Admitted(admitted) => (None, Some(admitted)),
    };
    let admitted = match admitted {
        Some(admitted) => Some(admitted.with_marks(marks)),
        None => marks.is_some().then(|| Admitted::marked(marks)),
    };
    let clone = inner.clone();
    let polled = std::mem::replace(inner, clone);
    ResponseFuture::waiting(polled, request, queued, admitted)
}
