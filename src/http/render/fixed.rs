//! Every response whose body never changes: liveness, ping, startup, the errors of the probe
//! paths and the admin server, and the drain's rejection.

use std::sync::LazyLock;

use http::StatusCode;
use http::header::{self, HeaderValue};

use super::Rendered;
use super::kube::KubeAnswers;
use crate::view::StartupPhase;
use crate::view::{Check, Mark};

/// `/health/live`: the process answers, so it is alive.
pub(crate) static LIVE: LazyLock<Rendered> =
    LazyLock::new(|| Rendered::fixed(StatusCode::OK, "no-store", br#"{"status":"alive"}"#, &[]));

/// `/health/ping`: the cheapest possible yes. Load balancers may cache it for a second.
pub(crate) static PING: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::OK,
        "max-age=1",
        br#"{"ping":"pong","status":"alive"}"#,
        &[],
    )
});

/// `/health/startup` once the process has started, for the rest of its life.
pub(crate) static STARTED: LazyLock<Rendered> =
    LazyLock::new(|| Rendered::fixed(StatusCode::OK, "no-store", br#"{"status":"started"}"#, &[]));

/// `/health/startup` before the first readiness round has completed.
pub(crate) static STARTING_FIRST_ROUND: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::SERVICE_UNAVAILABLE,
        "no-store",
        br#"{"status":"starting","reason":"the first readiness round has not completed"}"#,
        &[],
    )
});

/// `/health/startup` after the first round, while the application has not yet called
/// `mark_started()`.
pub(crate) static STARTING_APPLICATION: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::SERVICE_UNAVAILABLE,
        "no-store",
        br#"{"status":"starting","reason":"the application has not declared itself started (HealthHandle::mark_started)"}"#,
        &[],
    )
});

/// `/health/startup`'s answer where the start is at `phase`.
pub(crate) fn startup(phase: StartupPhase) -> &'static Rendered {
    match phase {
        StartupPhase::FirstRound => &STARTING_FIRST_ROUND,
        StartupPhase::Application => &STARTING_APPLICATION,
        StartupPhase::Started => &STARTED,
    }
}

/// `/health/startup`'s checks where the start is at `phase`, for its Kubernetes-style
/// answers.
pub(crate) fn startup_kube(phase: StartupPhase) -> &'static KubeAnswers {
    match phase {
        StartupPhase::FirstRound => &STARTING_FIRST_ROUND_CHECKS,
        StartupPhase::Application => &STARTING_APPLICATION_CHECKS,
        StartupPhase::Started => &STARTED_CHECKS,
    }
}

/// `/health/live`'s checks for `?verbose`, `?exclude` and `/livez/ping`.
pub(crate) static LIVE_CHECKS: LazyLock<KubeAnswers> =
    LazyLock::new(|| KubeAnswers::fixed("livez", Check::ok("ping")));

/// `/health/startup`'s checks once started.
pub(crate) static STARTED_CHECKS: LazyLock<KubeAnswers> =
    LazyLock::new(|| KubeAnswers::fixed("startupz", Check::ok("started")));

/// `/health/startup`'s checks before the first readiness round has completed.
pub(crate) static STARTING_FIRST_ROUND_CHECKS: LazyLock<KubeAnswers> = LazyLock::new(|| {
    KubeAnswers::fixed(
        "startupz",
        Check::public(
            "started",
            Mark::Failed,
            "the first readiness round has not completed",
        ),
    )
});

/// `/health/startup`'s checks while the application has not called `mark_started()`.
pub(crate) static STARTING_APPLICATION_CHECKS: LazyLock<KubeAnswers> = LazyLock::new(|| {
    KubeAnswers::fixed(
        "startupz",
        Check::public(
            "started",
            Mark::Failed,
            "the application has not declared itself started (HealthHandle::mark_started)",
        ),
    )
});

/// A health group's path whose name is no group of the monitor.
pub(crate) static NO_SUCH_GROUP: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::NOT_FOUND,
        "no-store",
        br#"{"error":"no such health group"}"#,
        &[],
    )
});

/// Any method but GET and HEAD on a probe path.
pub(crate) static METHOD_NOT_ALLOWED: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::METHOD_NOT_ALLOWED,
        "no-store",
        br#"{"error":"method not allowed","allow":["GET","HEAD"]}"#,
        &[(header::ALLOW, HeaderValue::from_static("GET, HEAD"))],
    )
});

/// The answer to an application request that arrives while the inner service is not ready,
/// when [`HealthLayer::shed_load`](crate::HealthLayer::shed_load) is set.
pub(crate) static OVERLOADED: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::SERVICE_UNAVAILABLE,
        "no-store",
        br#"{"error":"service overloaded"}"#,
        &[(header::RETRY_AFTER, HeaderValue::from_static("1"))],
    )
});

/// The layer's metrics path's answer to a caller without a key, under
/// `Details::Authorized`.
#[cfg(feature = "metrics")]
pub(crate) static METRICS_UNAUTHORIZED: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::UNAUTHORIZED,
        "no-store",
        br#"{"error":"unauthorized","reason":"the metrics need a key: Authorization: Bearer <key>"}"#,
        &[(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="tower-health""#),
        )],
    )
});

/// The drain's answer to an ordinary request under [`DrainPolicy::Reject`](crate::drain::DrainPolicy),
/// with the drain's `Retry-After`.
pub(crate) static DRAIN_REJECTED: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::SERVICE_UNAVAILABLE,
        "no-store",
        br#"{"status":"draining","error":"the server is draining and takes no new requests"}"#,
        &[],
    )
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request::BodyMode;

    async fn body(rendered: &Rendered) -> String {
        rendered.body_text().await
    }

    #[tokio::test]
    async fn fixed_bodies() {
        assert_eq!(body(&LIVE).await, r#"{"status":"alive"}"#);
        assert_eq!(body(&PING).await, r#"{"ping":"pong","status":"alive"}"#);
        assert_eq!(
            PING.response(BodyMode::Full).headers()[header::CACHE_CONTROL],
            "max-age=1"
        );
        assert_eq!(body(&STARTED).await, r#"{"status":"started"}"#);
        assert_eq!(
            STARTING_FIRST_ROUND.status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            STARTING_APPLICATION.status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            METHOD_NOT_ALLOWED.response(BodyMode::Full).headers()[header::ALLOW],
            "GET, HEAD"
        );
        assert_eq!(
            body(&DRAIN_REJECTED).await,
            r#"{"status":"draining","error":"the server is draining and takes no new requests"}"#
        );
    }
}
