//! Envoy's dialect: two headers, each a pure function of the reading.
//!
//! - `x-envoy-degraded: degraded` on an answer whose verdict is `degraded` (200): Envoy keeps
//!   the host, and routes to it only when no healthy host is left.
//! - `x-envoy-immediate-health-check-fail: true` on the application's responses, opt-in,
//!   while the process is out of rotation of its own accord (an operator's hold, a drain):
//!   every Envoy that sends it a request fails the host at once, without waiting for its next
//!   health check. Only what is immediate by design: one slow round never sends it.

use http::HeaderValue;
use http::header::HeaderName;

use crate::verdict::Status;
use crate::view::Intent;

/// `x-envoy-degraded: degraded`.
const DEGRADED: (HeaderName, HeaderValue) = (
    HeaderName::from_static("x-envoy-degraded"),
    HeaderValue::from_static("degraded"),
);

/// `x-envoy-immediate-health-check-fail: true`.
const IMMEDIATE_FAIL: (HeaderName, HeaderValue) = (
    HeaderName::from_static("x-envoy-immediate-health-check-fail"),
    HeaderValue::from_static("true"),
);

/// The header an answer whose verdict is `status` carries for Envoy's health checker: the
/// degraded mark for `degraded`, nothing otherwise.
pub(crate) fn on_answer(status: Status) -> Option<(HeaderName, HeaderValue)> {
    (status == Status::Degraded).then_some(DEGRADED)
}

/// The header an application's response carries for Envoy while the process means to leave
/// rotation: Envoy fails the host at once, without waiting for its next health check.
pub(crate) fn on_application_response(intent: Intent) -> Option<(HeaderName, HeaderValue)> {
    (intent == Intent::Leave).then_some(IMMEDIATE_FAIL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degraded_alone_is_marked() {
        for (status, marked) in [
            (Status::Healthy, false),
            (Status::Degraded, true),
            (Status::Unhealthy, false),
            (Status::Error, false),
            (Status::Unavailable, false),
        ] {
            assert_eq!(on_answer(status).is_some(), marked, "{status}");
        }
        assert_eq!(on_answer(Status::Degraded).unwrap().0, "x-envoy-degraded");
    }

    #[test]
    fn the_immediate_fail_is_for_a_process_that_means_to_leave() {
        assert_eq!(on_application_response(Intent::Serve), None);
        let (name, value) = on_application_response(Intent::Leave).unwrap();
        assert_eq!(name, "x-envoy-immediate-health-check-fail");
        assert_eq!(value, "true");
    }
}
