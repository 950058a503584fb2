//! Answering one admin request: allowlist, route, method, authentication, then the same
//! published answers the layers serve.

use std::sync::{Arc, LazyLock};

use http::header::{self, HeaderValue};
use http::{Request, StatusCode};

use super::auth::{Denied, Keys, Role};
use super::host::HostPolicy;
use crate::answer::{Answer, METHOD_NOT_ALLOWED, MethodKind};
use crate::config::NoCache;
use crate::drain::DrainHandle;
use crate::monitor::Shared;
use crate::probe::{self, Probe, Reply};

/// What every connection of one admin server shares.
pub(crate) struct AdminState {
    pub(crate) shared: Arc<Shared>,
    pub(crate) drain: Option<DrainHandle>,
    pub(crate) keys: Keys,
    /// The `Host`/`Origin` allowlist; only on loopback binds.
    pub(crate) hosts: Option<HostPolicy>,
}

/// The admin paths, as the Python system's admin server has them.
fn route(path: &str) -> Option<Probe> {
    match probe::trim_trailing_slash(path) {
        "/health" => Some(Probe::Health),
        "/liveness" => Some(Probe::Live),
        "/readiness" => Some(Probe::Ready),
        "/health/pool" => Some(Probe::Pool),
        "/health/ping" => Some(Probe::Ping),
        _ => None,
    }
}

impl AdminState {
    pub(crate) fn handle<B>(&self, request: &Request<B>) -> Reply {
        let headers = request.headers();
        if self
            .hosts
            .as_ref()
            .is_some_and(|hosts| !hosts.allows(headers))
        {
            return Reply::now(FORBIDDEN.respond(false, 0));
        }
        let Some(probe) = route(request.uri().path()) else {
            return Reply::now(NOT_FOUND.respond(false, 0));
        };
        if MethodKind::of(request.method()) == MethodKind::NotAllowed {
            return Reply::now(METHOD_NOT_ALLOWED.respond(false, 0));
        }
        let wants_nocache = probe.takes_nocache() && probe::wants_nocache(request.uri().query());
        let role = if self.keys.enabled() && (probe == Probe::Health || wants_nocache) {
            match self.keys.role(headers) {
                Ok(role) => role,
                Err(denied) => return Reply::now(unauthorized(denied)),
            }
        } else {
            Role::Anonymous
        };
        let nocache = wants_nocache
            && match self.shared.config.nocache {
                NoCache::Allowed => !self.keys.enabled() || role >= Role::Viewer,
                NoCache::Authorized => role >= Role::Viewer,
                NoCache::Off => false,
            };
        probe::reply(
            &self.shared,
            probe,
            request.method(),
            nocache,
            self.drain.as_ref(),
        )
    }
}

fn unauthorized(denied: Denied) -> http::Response<crate::body::ProbeBody> {
    match denied {
        Denied::Missing => MISSING_KEY.respond(false, 0),
        Denied::Malformed | Denied::Invalid => INVALID_KEY.respond(false, 0),
    }
}

static NOT_FOUND: LazyLock<Answer> = LazyLock::new(|| {
    Answer::fixed(
        StatusCode::NOT_FOUND,
        "no-store",
        br#"{"error":"not found","paths":["/health","/liveness","/readiness","/health/pool","/health/ping"]}"#,
        &[],
    )
});

static FORBIDDEN: LazyLock<Answer> = LazyLock::new(|| {
    Answer::fixed(
        StatusCode::FORBIDDEN,
        "no-store",
        br#"{"error":"forbidden","reason":"Host or Origin is not an allowed name for this server"}"#,
        &[],
    )
});

static MISSING_KEY: LazyLock<Answer> = LazyLock::new(|| {
    Answer::fixed(
        StatusCode::UNAUTHORIZED,
        "no-store",
        br#"{"error":"unauthorized","reason":"this endpoint needs a key: Authorization: Bearer <key>"}"#,
        &[(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="tower-health""#),
        )],
    )
});

static INVALID_KEY: LazyLock<Answer> = LazyLock::new(|| {
    Answer::fixed(
        StatusCode::UNAUTHORIZED,
        "no-store",
        br#"{"error":"unauthorized","reason":"the key is malformed or not valid"}"#,
        &[(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="tower-health", error="invalid_token""#),
        )],
    )
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_paths() {
        assert_eq!(route("/health"), Some(Probe::Health));
        assert_eq!(route("/health/"), Some(Probe::Health));
        assert_eq!(route("/liveness"), Some(Probe::Live));
        assert_eq!(route("/readiness/"), Some(Probe::Ready));
        assert_eq!(route("/health/pool"), Some(Probe::Pool));
        assert_eq!(route("/health/ping"), Some(Probe::Ping));
        for other in [
            "/",
            "//",
            "/health/live",
            "/health/ready",
            "/livez",
            "/metrics",
        ] {
            assert_eq!(route(other), None, "{other}");
        }
    }
}
