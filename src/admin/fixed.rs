//! The admin server's fixed answers: rendered once, served by reference.

use std::sync::LazyLock;

use http::StatusCode;
use http::header::{self, HeaderValue};

use super::control::Control;
use crate::probe::Probe;
use crate::rendered::Rendered;

/// The admin server's answer to a path it does not serve: the paths it does, from the probe
/// table.
pub(crate) static ADMIN_NOT_FOUND: LazyLock<Rendered> = LazyLock::new(|| {
    let paths: Vec<&str> = Probe::ALL
        .into_iter()
        .map(Probe::admin_path)
        .chain(Control::ALL.into_iter().map(Control::path))
        .chain(cfg!(feature = "metrics").then_some("/metrics"))
        .collect();
    let body = serde_json::json!({ "error": "not found", "paths": paths });
    let body = serde_json::to_vec(&body).expect("a serde_json::Value always serializes");
    Rendered::fixed_bytes(StatusCode::NOT_FOUND, "no-store", body.into(), &[])
});

/// The admin server's answer to a `Host` or `Origin` it does not know (DNS rebinding).
pub(crate) static ADMIN_FORBIDDEN: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::FORBIDDEN,
        "no-store",
        br#"{"error":"forbidden","reason":"Host or Origin is not an allowed name for this server"}"#,
        &[],
    )
});

/// The admin server's answer to a request that needs a key and has none.
pub(crate) static ADMIN_MISSING_KEY: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::UNAUTHORIZED,
        "no-store",
        br#"{"error":"unauthorized","reason":"this endpoint needs a key: Authorization: Bearer <key>"}"#,
        &[(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="tower-health""#),
        )],
    )
});

/// The admin server's answer to a key that is malformed or wrong.
pub(crate) static ADMIN_INVALID_KEY: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
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

    async fn body(rendered: &Rendered) -> String {
        rendered.body_text().await
    }

    #[tokio::test]
    async fn admin_not_found_lists_every_admin_path() {
        assert_eq!(
            body(&ADMIN_NOT_FOUND).await,
            if cfg!(feature = "metrics") {
                r#"{"error":"not found","paths":["/health","/liveness","/readiness","/startup","/health/pool","/health/ping","/hold","/release","/metrics"]}"#
            } else {
                r#"{"error":"not found","paths":["/health","/liveness","/readiness","/startup","/health/pool","/health/ping","/hold","/release"]}"#
            }
        );
    }
}
