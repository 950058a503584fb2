//! What a drain does to one ordinary request: refuse it (under [`DrainPolicy::Reject`], once
//! the drain has started) or count it in flight, and ask an HTTP/1 client to close its
//! connection if the drain has started by the time the response is ready.
//!
//! [`Drain`](super::Drain) and the axum stack both apply it, so the rules are written once.

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode, Version};

use super::in_flight::InFlightGuard;
use super::{DrainHandle, DrainPolicy};
use crate::body::ProbeBody;
use crate::probe::BodyMode;

/// The drain's decision on one request.
pub(crate) enum Admission {
    /// Refused: the drain has started under [`DrainPolicy::Reject`].
    Rejected(Response<ProbeBody>),
    /// Let in, and counted in flight.
    Admitted(Admitted),
}

/// A request the drain let in: in flight until the guard that [`Admitted::respond`] hands back
/// is dropped.
pub(crate) struct Admitted {
    guard: InFlightGuard,
    /// Whether to add `Connection: close` if the drain has started by the time the response is
    /// ready (an HTTP/1 request other than `CONNECT`, and the setting is on).
    close_if_draining: bool,
}

impl DrainHandle {
    /// Refuses `request` or counts it in flight.
    pub(crate) fn admit<B>(&self, request: &Request<B>) -> Admission {
        let config = self.config();
        if config.policy == DrainPolicy::Reject && self.is_draining() {
            return Admission::Rejected(self.rejected().response(BodyMode::Full));
        }
        // `Connection` is a hop-by-hop header HTTP/2 forbids; a CONNECT tunnel's connection
        // belongs to the tunnel once it is answered.
        let close_if_draining = config.connection_close
            && matches!(request.version(), Version::HTTP_11 | Version::HTTP_10)
            && request.method() != Method::CONNECT;
        Admission::Admitted(Admitted {
            guard: self.enter(),
            close_if_draining,
        })
    }
}

impl Admitted {
    /// The response is ready: adds `Connection: close` if the drain has started since the
    /// request came in, and hands back the guard, for the response body to hold until its end.
    pub(crate) fn respond<B>(self, response: &mut Response<B>) -> InFlightGuard {
        // A `101 Switching Protocols` hands the connection to the new protocol (a WebSocket,
        // say): `Connection: close` would undo the upgrade.
        if self.close_if_draining
            && response.status() != StatusCode::SWITCHING_PROTOCOLS
            && self.guard.is_draining()
        {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        self.guard
    }
}
