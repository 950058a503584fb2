//! Requests the admin server refuses with 400 before anything else looks at them: those that
//! name the server ambiguously, so the `Host` allowlist could check one name while another is
//! meant.

use std::sync::LazyLock;

use http::header::HOST;
use http::{Request, StatusCode};

use crate::http::render::Rendered;

/// The answer to more than one `Host` header (RFC 9112, section 3.2: a server must answer
/// 400).
static TWO_HOSTS: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::BAD_REQUEST,
        "no-store",
        br#"{"error":"bad request","reason":"more than one Host header"}"#,
        &[],
    )
});

/// The answer to a target with a scheme or an authority (`GET http://host/path`, `CONNECT
/// host:port`). RFC 9112 has servers accept the absolute form and let its authority override
/// `Host`; the admin server is no proxy, and refusing it leaves `Host` the one name to check.
static NOT_ORIGIN_FORM: LazyLock<Rendered> = LazyLock::new(|| {
    Rendered::fixed(
        StatusCode::BAD_REQUEST,
        "no-store",
        br#"{"error":"bad request","reason":"the request target must be a path, such as /liveness"}"#,
        &[],
    )
});

/// Why `request` is refused with 400, if it is.
pub(crate) fn refusal<B>(request: &Request<B>) -> Option<&'static Rendered> {
    let uri = request.uri();
    if uri.scheme().is_some() || uri.authority().is_some() {
        return Some(&NOT_ORIGIN_FORM);
    }
    if request.headers().get_all(HOST).iter().nth(1).is_some() {
        return Some(&TWO_HOSTS);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(target: &str, hosts: &[&str]) -> Option<StatusCode> {
        let mut request = Request::get(target);
        for host in hosts {
            request = request.header(HOST, *host);
        }
        refusal(&request.body(()).unwrap()).map(|rendered| {
            rendered
                .response(crate::http::request::BodyMode::Full)
                .status()
        })
    }

    #[test]
    fn a_path_with_one_host_or_none_passes() {
        assert_eq!(refused("/liveness", &["localhost"]), None);
        assert_eq!(refused("/health?nocache=true", &[]), None);
        assert_eq!(refused("*", &["localhost"]), None, "404 later, not 400");
    }

    #[test]
    fn two_hosts_or_a_target_naming_a_host_are_refused() {
        let bad = Some(StatusCode::BAD_REQUEST);
        assert_eq!(refused("/liveness", &["localhost", "evil.example"]), bad);
        assert_eq!(refused("/liveness", &["localhost", "localhost"]), bad);
        assert_eq!(refused("http://localhost/liveness", &["localhost"]), bad);
        assert_eq!(refused("http://evil.example/liveness", &[]), bad);
        assert_eq!(refused("localhost:9090", &["localhost"]), bad);
    }
}
