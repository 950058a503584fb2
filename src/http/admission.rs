//! What a drain does to one ordinary request: refuse it (under [`DrainPolicy::Reject`], once
//! the drain has started) or count it in flight, and ask an HTTP/1 client to close its
//! connection if the drain has started by the time the response is ready.
//!
//! [`Drain`](crate::drain::Drain) and the axum stack both apply it, so the rules are written
//! once.

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode, Version};

use super::Marks;
use super::edge::Trailer;
use super::render::ProbeBody;
use super::render::fixed::DRAIN_REJECTED;
use crate::http::request::BodyMode;
use crate::shutdown::{DrainHandle, DrainPolicy, InFlightGuard};

/// What happens to an application request's response on its way out: counted in a drain
/// (the guard that [`Admitted::respond`] hands back, in flight until dropped), told to close
/// its HTTP/1 connection if the drain has started by then, and given the dialects' words for
/// what the reading decided ([`Marks`]).
pub(crate) struct Admitted {
    guard: Option<InFlightGuard>,
    /// Whether to add `Connection: close` if the drain has started by the time the response is
    /// ready (an HTTP/1 request other than `CONNECT`, and the setting is on).
    close_if_draining: bool,
    /// What the reading decided of the process as the request came in.
    marks: Marks,
}

/// Counts `request` in flight in `drain`, or refuses it (`None`: the drain has started under
/// [`DrainPolicy::Reject`]; answer with [`rejection`]).
#[inline]
pub(crate) fn admit<B>(drain: &DrainHandle, request: &Request<B>) -> Option<Admitted> {
    let config = drain.config();
    if config.policy == DrainPolicy::Reject && drain.is_draining() {
        return None;
    }
    // `Connection` is a hop-by-hop header HTTP/2 forbids; a CONNECT tunnel's connection
    // belongs to the tunnel once it is answered.
    let close_if_draining = config.connection_close
        && matches!(request.version(), Version::HTTP_11 | Version::HTTP_10)
        && request.method() != Method::CONNECT;
    Some(Admitted {
        guard: Some(drain.enter()),
        close_if_draining,
        marks: Marks::NONE,
    })
}

/// The answer to a request `drain` refused: 503 `draining` with `Retry-After`.
pub(crate) fn rejection(drain: &DrainHandle) -> Response<ProbeBody> {
    let retry_after = (header::RETRY_AFTER, drain.retry_after());
    DRAIN_REJECTED.response_aged(BodyMode::Full, 0, Some(retry_after))
}

impl Admitted {
    /// A response that only carries the dialects' words for `marks`.
    pub(crate) fn marked(marks: Marks) -> Self {
        Self {
            guard: None,
            close_if_draining: false,
            marks,
        }
    }

    /// The response also carries the dialects' words for `marks`.
    #[inline(always)]
    pub(crate) fn with_marks(mut self, marks: Marks) -> Self {
        self.marks = marks;
        self
    }

    /// The response is ready: adds `Connection: close` if the drain has started since the
    /// request came in and the dialects' words for its marks, and hands back what the
    /// response body holds until its end.
    #[inline(always)]
    pub(crate) fn respond<B>(self, response: &mut Response<B>) -> Held {
        let trailer = super::mark(self.marks, response);
        if self.close_if_draining && self.guard.as_ref().is_some_and(InFlightGuard::is_draining) {
            close(response);
        }
        Held {
            guard: self.guard,
            trailer,
        }
    }
}

/// What an application response's body holds until its end: the request's count in a drain,
/// and a gRPC call's load report for its trailers.
pub(crate) struct Held {
    pub(crate) guard: Option<InFlightGuard>,
    pub(crate) trailer: Option<Trailer>,
}

/// Asks an HTTP/1 client to close its connection, the response being sent during the drain.
#[cold]
fn close<B>(response: &mut Response<B>) {
    // A `101 Switching Protocols` hands the connection to the new protocol (a WebSocket, say):
    // `Connection: close` would undo the upgrade.
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}
