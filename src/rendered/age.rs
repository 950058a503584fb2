//! The verdict's age in a body: `"_cache": {"hit": ..., "age_ms": <age>}`, rendered as two
//! halves once per round, the digits written per request.
//!
//! The age changes with every request, so the body is stored as the bytes before the number
//! and a static tail after it, and [`ProbeBody`](crate::body::ProbeBody) writes the digits
//! from a static table: no JSON encoding and no allocation on the probe path (BENCHMARKS.md:
//! two allocations per answer, the header map's).

use http::StatusCode;
use serde_json::Value;

use super::Rendered;
use super::verdicts::{Variants, to_vec};

/// Every variant of a body that ends with `_cache`.
pub(super) fn with_cache(
    code: StatusCode,
    published: &Value,
    draining: &Value,
    stale: &Value,
) -> Variants {
    let unavailable = StatusCode::SERVICE_UNAVAILABLE;
    Variants {
        published: cached(code, published, "true"),
        bypassed: cached(code, published, "\"bypassed\""),
        draining: cached(unavailable, draining, "true"),
        stale: cached(unavailable, stale, "true"),
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
    Rendered::json_with_age(code, head, b"}}")
}
