use std::fmt;
use std::sync::Arc;

use http::{Request, StatusCode, Uri, header};
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture};

/// A [`Component`] that sends `GET <url>` to an HTTP dependency and expects a 2xx answer.
///
/// Plain `http://` only for now (`https://` is refused when built). Redirects are not
/// followed: a 3xx is trouble, named as such. The body is not read. The request is bounded
/// by the component's timeout and the round's deadline, like every check.
///
/// ```
/// use tower_health::HealthConfig;
/// use tower_health::component::{ComponentSpec, Http};
///
/// let search = Http::new("http://search.internal:9200/_cluster/health").unwrap();
/// let config = HealthConfig::new().component(ComponentSpec::new("search", search));
/// # let _ = config;
/// ```
///
/// Operators can declare one without code: `TOWER_HEALTH_HTTP_<NAME>=url` adds a
/// non-critical component `<name>` (lower-cased); see [`crate::config`].
#[derive(Clone, Debug)]
pub struct Http {
    uri: Uri,
    /// `host:port`, to connect to.
    authority: Arc<str>,
    /// The URL as shown, redacted.
    target: Arc<str>,
}

/// Why a URL cannot be checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidUrl {
    reason: &'static str,
}

impl fmt::Display for InvalidUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason)
    }
}

impl std::error::Error for InvalidUrl {}

impl Http {
    /// Checks `url`, an `http://host[:port]/path` URL.
    ///
    /// # Errors
    ///
    /// When `url` does not parse, has no host, or its scheme is not `http`.
    pub fn new(url: &str) -> Result<Self, InvalidUrl> {
        let invalid = |reason| InvalidUrl { reason };
        let uri: Uri = url
            .parse()
            .map_err(|_| invalid("expected an http:// URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => return Err(invalid("https:// is not supported yet; use http://")),
            _ => return Err(invalid("expected an http:// URL")),
        }
        let host = uri.host().ok_or_else(|| invalid("the URL has no host"))?;
        let port = uri.port_u16().unwrap_or(80);
        Ok(Self {
            authority: format!("{host}:{port}").into(),
            target: crate::redact(url).into(),
            uri,
        })
    }
}

impl Component for Http {
    fn check(&self) -> CheckFuture {
        let this = self.clone();
        Box::pin(async move {
            let failed = |kind, what: String| Err(CheckError::new(kind, what));
            let stream = match TcpStream::connect(&*this.authority).await {
                Ok(stream) => stream,
                Err(error) => {
                    return failed(
                        CheckErrorKind::Connect,
                        format!("connecting to {}: {error}", this.authority),
                    );
                }
            };
            let (mut sender, connection) =
                match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
                    Ok(pair) => pair,
                    Err(error) => return failed(CheckErrorKind::Other, error.to_string()),
                };
            // Ends when the request is done and `sender` dropped, or with the check.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            let path = this
                .uri
                .path_and_query()
                .map_or("/", |path| path.as_str())
                .to_owned();
            let request = Request::get(path)
                .header(header::HOST, &*this.authority)
                .header(header::USER_AGENT, "tower-health")
                .body(Empty::<bytes::Bytes>::new())
                .expect("a GET with a valid path and host builds");
            let status = match sender.send_request(request).await {
                Ok(response) => response.status(),
                Err(error) => return failed(CheckErrorKind::Other, error.to_string()),
            };
            if status.is_success() {
                Ok(())
            } else if status.is_redirection() {
                failed(
                    CheckErrorKind::Other,
                    format!("answered {status} (redirects are not followed)"),
                )
            } else {
                failed(CheckErrorKind::Other, answered(status))
            }
        })
    }

    fn target(&self) -> Option<String> {
        Some(self.target.to_string())
    }
}

fn answered(status: StatusCode) -> String {
    format!("answered {status}, expected 2xx")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host() {
        assert!(Http::new("http://127.0.0.1:8080/health").is_ok());
        assert!(Http::new("http://search.internal/").is_ok());
        assert!(Http::new("https://search.internal/").is_err());
        assert!(Http::new("search.internal").is_err());
        assert!(Http::new("ftp://x/").is_err());
        let with_password = Http::new("http://app:hunter2@search.internal/").unwrap();
        assert!(!with_password.target().unwrap().contains("hunter2"));
    }
}
