//! Thin wrappers over the crate's private parsers, for the fuzz targets in `fuzz/` only.
//!
//! Not part of the API: hidden from the docs, and free to change in any release.

use http::{HeaderMap, HeaderValue};

use crate::access::{Denied, KeyDigests, Role};
use crate::config::validate_prefix;
use crate::http::request::ProbePaths;
use crate::probe::Probe;

/// The probe the layer answers at `path` under `prefix`, and the check named when the path
/// is one check's (`None` when the prefix is one the configuration refuses).
#[must_use]
pub fn classify<'a>(
    prefix: &str,
    kubernetes_aliases: bool,
    path: &'a str,
) -> Option<(Probe, Option<&'a str>)> {
    let prefix = validate_prefix(prefix).ok()?;
    let target = ProbePaths::new(&prefix, kubernetes_aliases).classify(path)?;
    Some((target.probe, target.check))
}

/// The paths the layer answers for `probe` (or for its `check`) under `prefix`.
#[must_use]
pub fn probe_paths(
    prefix: &str,
    kubernetes_aliases: bool,
    probe: Probe,
    check: Option<&str>,
) -> Vec<String> {
    let Ok(prefix) = validate_prefix(prefix) else {
        return Vec::new();
    };
    let check = check.map(|check| format!("/{check}")).unwrap_or_default();
    let base = format!("{prefix}{}{check}", probe.layer_suffix());
    let mut paths = vec![format!("{base}/"), base];
    if kubernetes_aliases && let Some(alias) = probe.kubernetes_alias() {
        paths.push(format!("{alias}{check}"));
        paths.push(format!("{alias}{check}/"));
    }
    paths
}

/// Whether the query asks to bypass the cache.
#[must_use]
pub fn wants_nocache(query: Option<&str>) -> bool {
    crate::http::request::wants_nocache(query)
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
        Err(Denied::Scheme) => Err("scheme"),
        Err(Denied::Invalid) => Err("invalid"),
    })
}
