use std::fmt;
use std::sync::Arc;

use http::{Request, StatusCode, Uri, header};
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::Component;
use crate::check::{CheckError, CheckErrorKind, CheckFuture, CheckReport};
use crate::env::ConfigError;

/// A [`Component`] that sends `GET <url>` to an HTTP dependency and expects a 2xx answer.
///
/// `https://` needs the `rustls` feature (without it, such a URL is refused when built): the
/// server's certificate is verified, chain and host name, against the Mozilla roots or the
/// ones `Http::root_certificates` reads; a failed handshake is trouble of kind `tls`.
/// Redirects are not followed: a 3xx is trouble, named as such. The body is not read. The request is bounded
/// by the component's timeout and the round's deadline, like every check.
///
/// Its target is the URL [redacted](crate::redact): a password and every query value are
/// masked (`https://api.example/health?access_token=***`), so credentials an API takes in its
/// query string are sent, never shown.
///
/// A failure is of kind `refused`, `dns` or `timeout` when the connection could not be
/// opened (as for `Tcp`), `tls` when the handshake failed, `closed` when the server hung up
/// before answering, and `other` for an answer that is not 2xx: the dependency was reached
/// and said no (the status is in the message).
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
#[derive(Clone)]
pub struct Http {
    uri: Uri,
    /// `host:port`, to connect to.
    authority: Arc<str>,
    /// The URL as shown, redacted.
    target: Arc<str>,
    /// For `https://`: the host name to verify, and the TLS client.
    #[cfg(feature = "rustls")]
    tls: Option<
        Arc<(
            rustls::pki_types::ServerName<'static>,
            tokio_rustls::TlsConnector,
        )>,
    >,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Http {
    /// Checks `url`, an `http://host[:port]/path` URL.
    ///
    /// # Errors
    ///
    /// When `url` does not parse, has no host, or its scheme is not `http`.
    pub fn new(url: &str) -> Result<Self, ConfigError> {
        let invalid = |reason: &str| ConfigError::new("Http::new", url, reason);
        let uri: Uri = url
            .parse()
            .map_err(|_| invalid("expected an http:// or https:// URL"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") if cfg!(feature = "rustls") => true,
            Some("https") => {
                return Err(invalid(
                    "https:// needs tower-health's `rustls` feature; use http:// or enable it",
                ));
            }
            _ => return Err(invalid("expected an http:// or https:// URL")),
        };
        let host = uri.host().ok_or_else(|| invalid("the URL has no host"))?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let authority = format!("{host}:{port}");
        let http = Self {
            authority: authority.into(),
            target: crate::redact(url).into(),
            #[cfg(feature = "rustls")]
            tls: None,
            uri,
        };
        #[cfg(feature = "rustls")]
        if https {
            return http
                .with_roots(None)
                .map_err(|reason| ConfigError::new("Http::new", url, reason));
        }
        Ok(http)
    }

    /// Verifies an `https://` server against the certificates of a PEM file (a private CA,
    /// say) instead of the Mozilla roots.
    ///
    /// Defaults to the Mozilla roots (webpki-roots).
    ///
    /// # Errors
    ///
    /// When the file cannot be read or holds no certificate, or the URL is not `https://`.
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    pub fn root_certificates(self, pem_file: &str) -> Result<Self, ConfigError> {
        let invalid =
            |reason: String| ConfigError::new("Http::root_certificates", pem_file, reason);
        if self.tls.is_none() {
            return Err(invalid(
                "root certificates are for https:// URLs".to_owned(),
            ));
        }
        self.with_roots(Some(pem_file)).map_err(invalid)
    }

    #[cfg(feature = "rustls")]
    /// Why it failed, for the caller's [`ConfigError`].
    fn with_roots(mut self, pem_file: Option<&str>) -> Result<Self, String> {
        let invalid = |reason: String| reason;
        let host = self.uri.host().unwrap_or_default();
        // An IPv6 literal comes bracketed in a URL, not in a certificate.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let server_name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|error| invalid(format!("the host {host:?} cannot be verified: {error}")))?;
        let roots = crate::tls::roots(pem_file).map_err(invalid)?;
        let config = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
            .with_safe_default_protocol_versions()
            .map_err(|error| invalid(format!("cannot set up TLS: {error}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        self.tls = Some(Arc::new((server_name, connector)));
        Ok(self)
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
                        CheckErrorKind::from_io_chain(&error).unwrap_or(CheckErrorKind::Other),
                        format!("connecting to {}: {error}", this.authority),
                    );
                }
            };
            #[cfg(feature = "rustls")]
            if let Some(tls) = &this.tls {
                let (server_name, connector) = &**tls;
                let stream = match connector.connect(server_name.clone(), stream).await {
                    Ok(stream) => stream,
                    Err(error) => {
                        return failed(
                            CheckErrorKind::Tls,
                            format!("TLS with {}: {error}", this.authority),
                        );
                    }
                };
                return this.get(stream).await;
            }
            this.get(stream).await
        })
    }

    fn target(&self) -> Option<String> {
        Some(self.target.to_string())
    }
}

impl Http {
    /// `GET` over an open connection, and what the answer says: a 2xx passes, reporting its
    /// status code (`details.status_code`).
    async fn get<S>(&self, stream: S) -> Result<CheckReport, CheckError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let failed = |kind, what: String| Err(CheckError::new(kind, what));
        let (mut sender, connection) =
            match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
                Ok(pair) => pair,
                Err(error) => return failed(request_error_kind(&error), error.to_string()),
            };
        // Ends when the request is done and `sender` dropped, or with the check.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let path = self
            .uri
            .path_and_query()
            .map_or("/", |path| path.as_str())
            .to_owned();
        let request = Request::get(path)
            .header(header::HOST, &*self.authority)
            .header(header::USER_AGENT, "tower-health")
            .body(Empty::<bytes::Bytes>::new())
            .expect("a GET with a valid path and host builds");
        let status = match sender.send_request(request).await {
            Ok(response) => response.status(),
            Err(error) => return failed(request_error_kind(&error), error.to_string()),
        };
        // A status other than 2xx is the dependency's own answer, not a failure to reach it:
        // `other`, with the status in the message.
        if status.is_success() {
            Ok(CheckReport::new().detail("status_code", status.as_u16()))
        } else if status.is_redirection() {
            failed(
                CheckErrorKind::Other,
                format!("answered {status} (redirects are not followed)"),
            )
        } else {
            failed(CheckErrorKind::Other, answered(status))
        }
    }
}

/// The category of a request that got no answer over an open connection.
fn request_error_kind(error: &hyper::Error) -> CheckErrorKind {
    if error.is_timeout() {
        CheckErrorKind::Timeout
    } else if error.is_incomplete_message()
        || error.is_closed()
        || std::error::Error::source(error).is_some_and(|source| source.is::<std::io::Error>())
    {
        // The server hung up, or the connection broke, before the answer.
        CheckErrorKind::Closed
    } else {
        CheckErrorKind::Other
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
        assert_eq!(
            Http::new("https://search.internal/").is_ok(),
            cfg!(feature = "rustls"),
            "https:// exactly when the rustls feature is on"
        );
        assert!(Http::new("search.internal").is_err());
        let error = Http::new("ftp://x/").unwrap_err();
        assert_eq!((error.variable(), error.value()), ("Http::new", "ftp://x/"));
        let with_password = Http::new("http://app:hunter2@search.internal/").unwrap();
        assert!(!with_password.target().unwrap().contains("hunter2"));
        let with_token = Http::new("http://search.internal/health?access_token=hunter2").unwrap();
        assert_eq!(
            with_token.target().unwrap(),
            "http://search.internal/health?access_token=***"
        );
        assert!(!format!("{with_token:?}").contains("hunter2"));
    }
}
