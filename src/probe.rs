//! Which probe a request asks for, and the answer it gets.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Response};

use crate::answer::{LIVE, METHOD_NOT_ALLOWED, MethodKind, PING};
use crate::body::ProbeBody;
use crate::drain::DrainHandle;
use crate::monitor::{Fresh, Published, Shared};

/// The five questions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    Health,
    Live,
    Ready,
    Pool,
    Ping,
}

impl Probe {
    /// Whether draining turns this probe's answer into 503 (liveness and ping stay 200).
    fn drains(self) -> bool {
        matches!(self, Self::Health | Self::Ready | Self::Pool)
    }

    /// Whether `?nocache=true` means anything for this probe.
    pub(crate) fn takes_nocache(self) -> bool {
        matches!(self, Self::Health | Self::Pool)
    }
}

/// The layer's probe paths: `<prefix>`, `<prefix>/live`, `<prefix>/ready`, `<prefix>/pool`,
/// `<prefix>/ping`, each also with a trailing slash.
#[derive(Clone, Debug)]
pub(crate) struct PrefixPaths {
    prefix: Box<str>,
}

impl PrefixPaths {
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    pub(crate) fn classify(&self, path: &str) -> Option<Probe> {
        let rest = path.strip_prefix(&*self.prefix)?;
        // `<prefix>/` is `<prefix>`.
        match rest.strip_suffix('/').unwrap_or(rest) {
            "" => Some(Probe::Health),
            "/live" => Some(Probe::Live),
            "/ready" => Some(Probe::Ready),
            "/pool" => Some(Probe::Pool),
            "/ping" => Some(Probe::Ping),
            _ => None,
        }
    }
}

/// `path` without one trailing slash (`/` stays `/`).
pub(crate) fn trim_trailing_slash(path: &str) -> &str {
    match path.strip_suffix('/') {
        Some(trimmed) if !trimmed.is_empty() => trimmed,
        _ => path,
    }
}

/// Whether the query string asks to bypass the cache (`nocache=true`, `nocache=1`, or a bare
/// `nocache`).
pub(crate) fn wants_nocache(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query.split('&').any(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, "true"));
            key == "nocache" && (value.eq_ignore_ascii_case("true") || value == "1")
        })
    })
}

/// A fresh computation's answer, for `?nocache=true`. Boxed: the bypass path is rare and may
/// wait for the database, unlike every other probe.
pub(crate) type FreshFuture = Pin<Box<dyn Future<Output = Response<ProbeBody>> + Send>>;

/// The answer to a probe: ready at once from the published verdicts, or after a fresh
/// computation.
pub(crate) enum Reply {
    Now(Option<Response<ProbeBody>>),
    Fresh(FreshFuture),
}

impl Reply {
    pub(crate) fn now(response: Response<ProbeBody>) -> Self {
        Self::Now(Some(response))
    }
}

impl Future for Reply {
    type Output = Response<ProbeBody>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Self::Now(response) => {
                Poll::Ready(response.take().expect("future polled after completion"))
            }
            Self::Fresh(future) => future.as_mut().poll(cx),
        }
    }
}

/// Answers `probe`. Everything but a cache bypass is a pointer load and a response built
/// from pre-rendered parts: no lock, no I/O, no JSON encoding, no await.
pub(crate) fn reply(
    shared: &Arc<Shared>,
    probe: Probe,
    method: &Method,
    nocache: bool,
    drain: Option<&DrainHandle>,
) -> Reply {
    let head_only = match MethodKind::of(method) {
        MethodKind::Get => false,
        MethodKind::Head => true,
        MethodKind::NotAllowed => return Reply::now(METHOD_NOT_ALLOWED.respond(false, 0)),
    };
    // While draining, the answer also says when to come back.
    let retry_after = drain
        .filter(|drain| probe.drains() && drain.is_draining())
        .map(|drain| (header::RETRY_AFTER, drain.retry_after()));
    let draining = retry_after.is_some();
    let response = match probe {
        Probe::Live => LIVE.respond(head_only, 0),
        Probe::Ping => PING.respond(head_only, 0),
        Probe::Ready => respond(&shared.readiness.load(), head_only, retry_after, false),
        Probe::Health | Probe::Pool if nocache && !draining => {
            let shared = Arc::clone(shared);
            // The computation starts when the future is first polled, in the server's runtime.
            return Reply::Fresh(Box::pin(async move {
                match (shared.fresh().fresh().await, probe) {
                    (Some(Fresh { pool, .. }), Probe::Pool) => {
                        respond(&pool, head_only, None, true)
                    }
                    (Some(Fresh { health, .. }), _) => respond(&health, head_only, None, true),
                    // The computation could not finish (runtime shutdown): serve what is
                    // published, unmarked.
                    (None, Probe::Pool) => respond(&shared.pool.load(), head_only, None, false),
                    (None, _) => respond(&shared.health.load(), head_only, None, false),
                }
            }));
        }
        Probe::Health => respond(&shared.health.load(), head_only, retry_after, false),
        Probe::Pool => respond(&shared.pool.load(), head_only, retry_after, false),
    };
    Reply::now(response)
}

/// Answers from a published verdict; `retry_after` is set while draining.
fn respond<V>(
    published: &Published<V>,
    head_only: bool,
    retry_after: Option<(HeaderName, &HeaderValue)>,
    bypassed: bool,
) -> Response<ProbeBody> {
    let (answer, age_ms) = published.answer(Instant::now(), retry_after.is_some(), bypassed);
    answer.respond_with(head_only, age_ms, retry_after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_prefix() {
        let paths = PrefixPaths::new("/health");
        assert_eq!(paths.classify("/health"), Some(Probe::Health));
        assert_eq!(paths.classify("/health/"), Some(Probe::Health));
        assert_eq!(paths.classify("/health/live"), Some(Probe::Live));
        assert_eq!(paths.classify("/health/ready/"), Some(Probe::Ready));
        assert_eq!(paths.classify("/health/pool"), Some(Probe::Pool));
        assert_eq!(paths.classify("/health/ping"), Some(Probe::Ping));
        for other in [
            "/",
            "/healthz",
            "/health/other",
            "/health//",
            "/health/live/x",
            "/api/health",
        ] {
            assert_eq!(paths.classify(other), None, "{other}");
        }
    }

    #[test]
    fn nocache_query() {
        assert!(wants_nocache(Some("nocache=true")));
        assert!(wants_nocache(Some("a=b&nocache=TRUE")));
        assert!(wants_nocache(Some("nocache=1")));
        assert!(wants_nocache(Some("nocache")));
        assert!(!wants_nocache(Some("nocache=false")));
        assert!(!wants_nocache(Some("xnocache=true")));
        assert!(!wants_nocache(None));
    }
}
