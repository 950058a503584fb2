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
    shed_load: bool,
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
            shed_load: false,
        }
    }

    /// Answers 503 with `Retry-After: 1` to an ordinary request that arrives while the inner
    /// service is not ready, instead of letting it wait (tower's `LoadShed`).
    ///
    /// The probe layers are always ready, so only the one nearest the application sees its
    /// saturation: set this when `PingLayer` is directly above the application (or its
    /// limit); with a [`HealthLayer`](crate::HealthLayer) below it, shed there
    /// ([`HealthLayer::shed_load`](crate::HealthLayer::shed_load)).
    ///
    /// Defaults to off: ordinary requests keep the inner service's backpressure.
    pub fn shed_load(mut self) -> Self {
        self.shed_load = true;
        self
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
            shed_load: self.shed_load,
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
