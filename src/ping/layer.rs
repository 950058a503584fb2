use std::sync::Arc;

use tower_layer::Layer;

use super::Ping;

/// Layer that answers the ping path before the inner service.
///
/// See the [`ping` module](crate::ping) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct PingLayer {
    path: Arc<str>,
}

impl Default for PingLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl PingLayer {
    /// Answers `/health/ping`.
    pub fn new() -> Self {
        Self {
            path: "/health/ping".into(),
        }
    }

    /// The path to answer; a trailing slash on requests is accepted either way. `PingLayer`
    /// does not read [`HealthConfig::path_prefix`](crate::HealthConfig::path_prefix): with a
    /// custom prefix, set the matching path here (`<prefix>/ping`).
    ///
    /// Defaults to `/health/ping`.
    ///
    /// `path` is taken as a request's path would be, so any string is one: what follows a
    /// `?` or `#` is cut off (a request's path never holds them), a missing leading `/` is
    /// added, and trailing slashes are trimmed. `"_ping/"` answers `/_ping`, `"/ping?x=1"`
    /// answers `/ping`, and `""` answers `/`.
    pub fn path(mut self, path: &str) -> Self {
        self.path = normalize(path);
        self
    }
}

/// `PingLayer` has no `shed_load`: shedding has one place,
/// [`HealthLayer::shed_load`](crate::HealthLayer::shed_load), for a probe layer sees the
/// readiness of what is below it only (see the [module docs](super#backpressure)).
///
/// ```compile_fail,E0599
/// let _ = tower_health::PingLayer::new().shed_load();
/// ```
#[cfg(doctest)]
struct SheddingIsTheHealthLayers;

/// `path` as a request's path: cut at the first `?` or `#`, with a leading `/` and without
/// trailing ones (`/` alone stays).
fn normalize(path: &str) -> Arc<str> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let trimmed = path.trim_end_matches('/');
    if trimmed.starts_with('/') {
        trimmed.into()
    } else {
        format!("/{trimmed}").into()
    }
}

impl<S> Layer<S> for PingLayer {
    type Service = Ping<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Ping {
            inner,
            path: self.path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_path_is_normalized_to_a_request_path() {
        for (given, answered) in [
            ("/health/ping", "/health/ping"),
            ("/_ping/", "/_ping"),
            ("/_ping///", "/_ping"),
            ("_ping", "/_ping"),
            ("ping/", "/ping"),
            ("/ping?x=1", "/ping"),
            ("/ping#top", "/ping"),
            ("ping/?a#b", "/ping"),
            ("?only", "/"),
            ("//ping", "//ping"),
            ("/", "/"),
            ("", "/"),
        ] {
            assert_eq!(&*PingLayer::new().path(given).path, answered, "{given:?}");
        }
    }
}
