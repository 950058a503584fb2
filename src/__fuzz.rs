//! Thin wrappers over the crate's private parsers, for the fuzz targets in `fuzz/` only.
//!
//! Not part of the API: hidden from the docs, and free to change in any release.

use http::{HeaderMap, HeaderValue};

use crate::Probe;
use crate::access::{Denied, KeyDigests, Role};
use crate::config::validate_prefix;
use crate::probe::ProbePaths;

/// The probe the layer answers at `path` under `prefix` (`None` when the prefix is one the
/// configuration refuses).
#[must_use]
pub fn classify(prefix: &str, kubernetes_aliases: bool, path: &str) -> Option<Probe> {
    let prefix = validate_prefix(prefix).ok()?;
    ProbePaths::new(&prefix, kubernetes_aliases).classify(path)
}

/// The paths the layer answers for `probe` under `prefix`.
#[must_use]
pub fn probe_paths(prefix: &str, kubernetes_aliases: bool, probe: Probe) -> Vec<String> {
    let Ok(prefix) = validate_prefix(prefix) else {
        return Vec::new();
    };
    let base = format!("{prefix}{}", probe.layer_suffix());
    let mut paths = vec![format!("{base}/"), base];
    if kubernetes_aliases && let Some(alias) = probe.kubernetes_alias() {
        paths.push(alias.to_owned());
        paths.push(format!("{alias}/"));
    }
    paths
}

/// Whether the query asks to bypass the cache.
#[must_use]
pub fn wants_nocache(query: Option<&str>) -> bool {
    crate::probe::wants_nocache(query)
}

/// The role `Authorization` and `X-Baldur-Admin-Key` values grant with the given keys:
/// `Ok("operator" | "viewer")`, or why not (`"missing"`, `"malformed"`, `"invalid"`).
/// `None` when a value cannot be a header value at all.
#[must_use]
pub fn authorization_role(
    operator: &[u8],
    readonly: &[u8],
    authorization: Option<&[u8]>,
    legacy: Option<&[u8]>,
) -> Option<Result<&'static str, &'static str>> {
    let mut headers = HeaderMap::new();
    if let Some(value) = authorization {
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_bytes(value).ok()?,
        );
    }
    if let Some(value) = legacy {
        headers.insert("x-baldur-admin-key", HeaderValue::from_bytes(value).ok()?);
    }
    let keys = KeyDigests::new(Some(operator), Some(readonly));
    Some(match keys.role(&headers) {
        Ok(Role::Operator) => Ok("operator"),
        Ok(Role::Viewer) => Ok("viewer"),
        Ok(Role::Anonymous) => Ok("anonymous"),
        Err(Denied::Missing) => Err("missing"),
        Err(Denied::Malformed) => Err("malformed"),
        Err(Denied::Invalid) => Err("invalid"),
    })
}
