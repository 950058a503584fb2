//! The operator's controls: `POST /hold?reason=...` takes the pod out of rotation without a
//! drain, `POST /release` puts it back. Operator key only.

use http::header::{self, HeaderValue};
use http::{Method, Request, StatusCode};

use super::fixed::{ADMIN_INVALID_KEY, ADMIN_MISSING_KEY, ADMIN_WRONG_SCHEME};
use crate::access::{Denied, KeyDigests, Role};
use crate::http::ProbeResponse;
use crate::http::render::Rendered;
use crate::http::request::BodyMode;
use crate::monitor::HealthHandle;

/// The longest hold reason kept, in characters; the rest is cut.
const MAX_REASON_CHARS: usize = 200;

/// What a hold says when the operator gave no reason.
const NO_REASON: &str = "no reason given";

/// One of the operator's controls.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    /// `POST /hold?reason=<text>`: readiness 503 with the reason until released.
    Hold,
    /// `POST /release`: readiness answers from the checks again.
    Release,
}

impl Control {
    /// Every control, for the 404 body.
    pub(crate) const ALL: [Self; 2] = [Self::Hold, Self::Release];

    pub(crate) const fn path(self) -> &'static str {
        match self {
            Self::Hold => "/hold",
            Self::Release => "/release",
        }
    }

    /// The control `path` names, if any (a trailing slash accepted).
    pub(crate) fn from_path(path: &str) -> Option<Self> {
        let path = path.strip_suffix('/').unwrap_or(path);
        Self::ALL.into_iter().find(|control| control.path() == path)
    }

    /// Answers one request for this control: POST only, operator key only.
    pub(crate) fn respond<B>(
        self,
        request: &Request<B>,
        keys: &KeyDigests,
        health: &HealthHandle,
    ) -> ProbeResponse {
        if request.method() != Method::POST {
            return json(
                StatusCode::METHOD_NOT_ALLOWED,
                &serde_json::json!({"error": "method not allowed", "allow": ["POST"]}),
                Some(HeaderValue::from_static("POST")),
            );
        }
        if !keys.enabled() {
            return json(
                StatusCode::FORBIDDEN,
                &serde_json::json!({
                    "error": "forbidden",
                    "reason": "no operator key is configured (TOWER_HEALTH_ADMIN_KEY)",
                }),
                None,
            );
        }
        match keys.role(request.headers()) {
            Ok(Role::Operator) => {}
            Ok(Role::Viewer | Role::Anonymous) => {
                return json(
                    StatusCode::FORBIDDEN,
                    &serde_json::json!({
                        "error": "forbidden",
                        "reason": "this control needs the operator key",
                    }),
                    None,
                );
            }
            Err(Denied::Missing) => {
                return ProbeResponse::fixed(&ADMIN_MISSING_KEY, BodyMode::Full);
            }
            Err(Denied::Scheme) => {
                return ProbeResponse::fixed(&ADMIN_WRONG_SCHEME, BodyMode::Full);
            }
            Err(Denied::Malformed | Denied::Invalid) => {
                return ProbeResponse::fixed(&ADMIN_INVALID_KEY, BodyMode::Full);
            }
        }
        let body = match self {
            Self::Hold => {
                let reason = reason(request.uri().query());
                let changed = health.hold(&reason);
                serde_json::json!({"status": "held", "reason": reason, "changed": changed})
            }
            Self::Release => {
                let changed = health.release();
                serde_json::json!({"status": "released", "changed": changed})
            }
        };
        json(StatusCode::OK, &body, None)
    }
}

fn json(status: StatusCode, body: &serde_json::Value, allow: Option<HeaderValue>) -> ProbeResponse {
    let body = serde_json::to_vec(body).expect("a serde_json::Value always serializes");
    let extra: Vec<_> = allow
        .map(|allow| (header::ALLOW, allow))
        .into_iter()
        .collect();
    let rendered = Rendered::fixed_bytes(status, "no-store", body.into(), &extra);
    ProbeResponse::fixed(&rendered, BodyMode::Full)
}

/// The `reason` query parameter, percent-decoded (`+` is a space), redacted, and cut to
/// [`MAX_REASON_CHARS`].
fn reason(query: Option<&str>) -> String {
    let raw = query.and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("reason="))
    });
    let decoded = raw.map(crate::util::form_decode).unwrap_or_default();
    let decoded = decoded.trim();
    if decoded.is_empty() {
        return NO_REASON.to_owned();
    }
    crate::redact(decoded)
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_REASON_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(Control::from_path("/hold"), Some(Control::Hold));
        assert_eq!(Control::from_path("/release/"), Some(Control::Release));
        assert_eq!(Control::from_path("/holds"), None);
    }

    #[test]
    fn the_reason_is_decoded_redacted_and_bounded() {
        assert_eq!(
            reason(Some("reason=deploy+freeze%20now")),
            "deploy freeze now"
        );
        assert_eq!(reason(Some("a=b&reason=caf%C3%A9")), "café");
        assert_eq!(reason(None), NO_REASON);
        assert_eq!(reason(Some("reason=")), NO_REASON);
        assert_eq!(reason(Some("reason=%zz")), "%zz");
        assert!(!reason(Some("reason=postgres://app:hunter2@db/app")).contains("hunter2"));
        assert_eq!(
            reason(Some(&format!("reason={}", "x".repeat(500)))).len(),
            200
        );
    }
}
