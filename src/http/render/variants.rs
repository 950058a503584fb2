//! Every variant of one verdict's response (published, bypassed, draining, stale, returning),
//! and the verdict's age in its body: `"_cache": {"hit": ..., "age_ms": <age>}`, rendered as
//! two halves once per round, the digits written per request.
//!
//! The age changes with every request, so the body is stored as the bytes before the number
//! and a static tail after it, and [`ProbeBody`](crate::http::render::ProbeBody) writes the digits
//! from a static table: no JSON encoding and no allocation on the probe path beyond the
//! response's header map.

use http::StatusCode;
use serde_json::Value;

use super::Rendered;
use crate::dialect::envoy;
use crate::verdict::Status;

/// Every variant of one verdict's response, for one audience.
#[derive(Clone, Debug)]
pub(crate) struct Variants {
    /// Served from the published verdict (`"_cache": {"hit": true}`, or `"shared"` for a
    /// verdict another process computed).
    pub(crate) published: Rendered,
    /// Served to `?nocache=true` (`"_cache": {"hit": "bypassed"}`).
    pub(crate) bypassed: Rendered,
    /// Served while the server drains.
    pub(crate) draining: Rendered,
    /// Served when the verdict is older than its staleness bound.
    pub(crate) stale: Rendered,
    /// Readiness's, served while it is on its way back after an outage (the return's
    /// jitter); `None` for health and pool, which the return does not concern.
    pub(crate) returning: Option<Rendered>,
}

impl Variants {
    /// The variants of a verdict whose status is `status`: the answers served from it (the
    /// published one and a bypass's) carry Envoy's header for it ([`envoy::on_answer`]); a
    /// drain's and a stale verdict's answers are 503s of their own.
    pub(super) fn of_status(mut self, status: Status) -> Self {
        if let Some((name, value)) = envoy::on_answer(status) {
            for rendered in [&mut self.published, &mut self.bypassed] {
                rendered.insert_header(name.clone(), value.clone());
            }
        }
        self
    }
}

/// Where a published verdict comes from, as `_cache` says it.
#[derive(Copy, Clone, Debug)]
pub(super) enum Hit<'a> {
    /// Computed by this process: `"hit": true`; with a shared cache, `"computed_by"` names
    /// this process too (shown to the audience that sees details, `null` for the others).
    Own(Option<Option<&'a str>>),
    /// Computed by the process named (shown to the audience that sees details, `null` for
    /// the others) and served from the shared cache: `"hit": "shared", "computed_by": ...`.
    Shared(Option<&'a str>),
}

/// Every variant of a body that ends with `_cache`.
pub(super) fn with_cache(
    code: StatusCode,
    hit: Hit<'_>,
    published: &Value,
    draining: &Value,
    stale: &Value,
) -> Variants {
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    let by = |by: Option<&str>| serde_json::to_string(&by).expect("a string always serializes");
    let hit = match hit {
        Hit::Own(None) => "true".to_owned(),
        Hit::Own(Some(own)) => format!(r#"true,"computed_by":{}"#, by(own)),
        Hit::Shared(shared) => format!(r#""shared","computed_by":{}"#, by(shared)),
    };
    Variants {
        published: cached(code, published, &hit),
        bypassed: cached(code, published, "\"bypassed\""),
        draining: cached(unavailable, draining, "true"),
        stale: cached(unavailable, stale, "true"),
        returning: None,
    }
}

/// `body` with `"_cache": {"hit": <hit>, "age_ms": ` appended last, the number and `}}` to
/// follow per request.
fn cached(code: StatusCode, body: &Value, hit: &str) -> Rendered {
    let mut head = to_vec(body);
    // `to_vec` of an object always ends with `}`: reopen it to append `_cache` last.
    let closing = head.pop();
    debug_assert_eq!(closing, Some(b'}'));
    if head.len() > 1 {
        head.push(b',');
    }
    head.extend_from_slice(br#""_cache":{"hit":"#);
    head.extend_from_slice(hit.as_bytes());
    head.extend_from_slice(br#","age_ms":"#);
    Rendered::json_with_age(code, head)
}

/// `value` as JSON bytes.
pub(super) fn to_vec(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a serde_json::Value always serializes")
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use serde_json::json;

    use super::*;
    use crate::http::request::BodyMode;

    async fn published(hit: Hit<'_>) -> String {
        let body = json!({ "status": "healthy" });
        let variants = with_cache(StatusCode::OK, hit, &body, &body, &body);
        let response = variants.published.response_aged(BodyMode::Full, 2140, None);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn the_cache_says_where_the_verdict_comes_from() {
        assert_eq!(
            published(Hit::Own(None)).await,
            r#"{"status":"healthy","_cache":{"hit":true,"age_ms":2140}}"#
        );
        assert_eq!(
            published(Hit::Own(Some(Some("web-1/42")))).await,
            r#"{"status":"healthy","_cache":{"hit":true,"computed_by":"web-1/42","age_ms":2140}}"#
        );
        assert_eq!(
            published(Hit::Shared(Some("web-7d9f/12"))).await,
            r#"{"status":"healthy","_cache":{"hit":"shared","computed_by":"web-7d9f/12","age_ms":2140}}"#
        );
        assert_eq!(
            published(Hit::Shared(None)).await,
            r#"{"status":"healthy","_cache":{"hit":"shared","computed_by":null,"age_ms":2140}}"#
        );
    }
}
