//! What a drain does to one ordinary request: refuse it (under [`DrainPolicy::Reject`], once
//! the drain has started) or count it in flight, and ask an HTTP/1 client to close its
//! connection if the drain has started by the time the response is ready.
//!
//! [`Drain`](crate::drain::Drain) and the axum stack both apply it, so the rules are written
//! once.

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode, Version};

use crate::probe::BodyMode;
use crate::rendered::ProbeBody;
use crate::shutdown::{DrainHandle, DrainPolicy, InFlightGuard};

/// A request the drain let in: in flight until the guard that [`Admitted::respond`] hands back
/// is dropped.
pub(crate) struct Admitted {
    guard: InFlightGuard,
    /// Whether to add `Connection: close` if the drain has started by the time the response is
    /// ready (an HTTP/1 request other than `CONNECT`, and the setting is on).
    close_if_draining: bool,
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
        guard: drain.enter(),
        close_if_draining,
    })
}

/// The answer to a request `drain` refused: 503 `draining` with `Retry-After`.
pub(crate) fn rejection(drain: &DrainHandle) -> Response<ProbeBody> {
    drain.rejected().response(BodyMode::Full)
}

impl Admitted {
    /// The response is ready: adds `Connection: close` if the drain has started since the
    /// request came in, and hands back the guard, for the response body to hold until its end.
    #[inline(always)]
    pub(crate) fn respond<B>(self, response: &mut Response<B>) -> InFlightGuard {
        if self.close_if_draining && self.guard.is_draining() {
            close(response);
        }
        self.guard
    }
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
