//! The admin server's fixed answers: rendered once, served by reference.

use std::sync::LazyLock;

use http::StatusCode;
use http::header::{self, HeaderValue};

use crate::http::render::Rendered;

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

/// The admin server's answer to credentials in another scheme than a key's (a browser's
/// Basic credentials on a path that is not the page's, a proxy's): the key's form, not a
/// verdict on the key.
pub(crate) static ADMIN_WRONG_SCHEME: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::UNAUTHORIZED,
        "no-store",
        br#"{"error":"unauthorized","reason":"this endpoint takes the key as Authorization: Bearer <key> (or X-Baldur-Admin-Key: <key>); Basic credentials are read on the operator's page only"}"#,
        &[(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="tower-health", error="invalid_request""#),
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
