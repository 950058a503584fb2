//! Container health checks without `curl`: the application's own binary probes its own
//! endpoint on loopback and exits 0 or 1.
//!
//! Distroless and `scratch` images have no `curl` for Docker's `HEALTHCHECK`, Compose's
//! `healthcheck` or an ECS container health check to call. Give your binary a flag of your
//! choosing that runs [`run`] instead of the server: it sends one `GET` to the URL, waits at
//! most the timeout, and returns [`ExitCode::SUCCESS`] for a 2xx answer and
//! [`ExitCode::FAILURE`] for anything else (another status, a refused or stalled connection,
//! a malformed answer), with one line on stderr saying which.
//!
//! It speaks just enough HTTP/1.1 for that, over a plain TCP connection: no client library,
//! no TLS (point it at the process's own loopback port), nothing beyond what the crate has.
//!
//! # Example
//!
//! ```no_run
//! use std::process::ExitCode;
//! use std::time::Duration;
//!
//! fn main() -> ExitCode {
//!     if std::env::args().any(|arg| arg == "--health-check") {
//!         return tower_health::healthcheck::run(
//!             "http://127.0.0.1:8080/health/ready",
//!             Duration::from_secs(2),
//!         );
//!     }
//!     // ... start the server as usual
//! #   ExitCode::SUCCESS
//! }
//! ```
//!
//! ```dockerfile
//! HEALTHCHECK --interval=10s --timeout=3s CMD ["/app/server", "--health-check"]
//! ```

use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest status line read: an answer that has not said its status by then is not HTTP.
const MAX_STATUS_LINE: usize = 1024;

/// Why a health check did not pass.
#[derive(Debug)]
#[non_exhaustive]
pub enum HealthcheckError {
    /// The URL is not `http://host:port/path` (`https://` is not spoken: probe loopback);
    /// the URL as given, [redacted](crate::redact).
    Url(String),
    /// No answer within the timeout.
    TimedOut(Duration),
    /// The connection failed (refused, reset, closed early).
    Io(std::io::Error),
    /// The answer is not an HTTP/1 status line.
    Malformed,
    /// The endpoint answered with a status that is not 2xx.
    Status(u16),
}

impl fmt::Display for HealthcheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Url(url) => write!(f, "not an http://host:port/path URL: {url}"),
            Self::TimedOut(timeout) => {
                write!(
                    f,
                    "no answer within {}",
                    humantime::format_duration(*timeout)
                )
            }
            Self::Io(error) => write!(f, "connection failed: {error}"),
            Self::Malformed => f.write_str("the answer is not HTTP"),
            Self::Status(status) => write!(f, "answered {status}"),
        }
    }
}

impl std::error::Error for HealthcheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(error) => Some(error),
            Self::Url(_) | Self::TimedOut(_) | Self::Malformed | Self::Status(_) => None,
        }
    }
}

/// Probes `url` once within `timeout` and returns the exit code for a container health
/// check: success for a 2xx answer, failure otherwise, with one line on stderr.
///
/// Starts a runtime of its own: call it from a synchronous `main` before the server's
/// runtime exists (or use [`check`] from async code).
#[must_use]
pub fn run(url: &str, timeout: Duration) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(check(url, timeout)),
        Err(error) => Err(HealthcheckError::Io(error)),
    };
    eprintln!("{}", outcome_line(url, &outcome));
    match outcome {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// The line [`run`] writes: the URL redacted, since the line ends up in the container's
/// health log (`docker inspect`), which is no place for a query's credentials.
fn outcome_line(url: &str, outcome: &Result<u16, HealthcheckError>) -> String {
    let url = crate::redact(url);
    match outcome {
        Ok(status) => format!("healthy: {url} answered {status}"),
        Err(error) => format!("unhealthy: {url}: {error}"),
    }
}

/// Probes `url` once within `timeout`; `Ok` with the status for a 2xx answer.
///
/// # Errors
///
/// When the URL is not `http://host:port/path`, the connection fails, no answer comes within
/// `timeout`, the answer is not HTTP, or its status is not 2xx.
pub async fn check(url: &str, timeout: Duration) -> Result<u16, HealthcheckError> {
    let (authority, path) = split_url(url)?;
    let exchange = async {
        let mut stream = TcpStream::connect(authority)
            .await
            .map_err(HealthcheckError::Io)?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: tower-health-healthcheck\r\nConnection: close\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(HealthcheckError::Io)?;
        read_status(&mut stream).await
    };
    let status = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| HealthcheckError::TimedOut(timeout))??;
    if (200..300).contains(&status) {
        Ok(status)
    } else {
        Err(HealthcheckError::Status(status))
    }
}

/// `host:port` and the path (with its query) of an `http://` URL.
fn split_url(url: &str) -> Result<(&str, &str), HealthcheckError> {
    let invalid = || HealthcheckError::Url(crate::redact(url));
    let rest = url.strip_prefix("http://").ok_or_else(invalid)?;
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, "/"),
    };
    // A port is required: a container's server rarely listens on 80, and guessing would
    // probe the wrong thing. Nothing in it may break the request line or the Host header.
    let well_formed = authority
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
        && !authority.contains(['@', ' '])
        && !path.contains([' ', '\r', '\n']);
    if well_formed {
        Ok((authority, path))
    } else {
        Err(invalid())
    }
}

/// Reads the status line of an HTTP/1 answer: `HTTP/1.x SSS ...`.
async fn read_status(stream: &mut TcpStream) -> Result<u16, HealthcheckError> {
    let mut line = Vec::with_capacity(64);
    let mut byte = [0; 1];
    while !line.ends_with(b"\r\n") {
        if line.len() >= MAX_STATUS_LINE {
            return Err(HealthcheckError::Malformed);
        }
        if stream.read(&mut byte).await.map_err(HealthcheckError::Io)? == 0 {
            return Err(HealthcheckError::Malformed);
        }
        line.push(byte[0]);
    }
    let line = std::str::from_utf8(&line).map_err(|_| HealthcheckError::Malformed)?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("HTTP/1.1" | "HTTP/1.0"), Some(code)) if code.len() == 3 => {
            code.parse().map_err(|_| HealthcheckError::Malformed)
        }
        _ => Err(HealthcheckError::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

    use super::*;

    #[test]
    fn only_http_urls_with_a_port() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/health/ready?x=1").unwrap(),
            ("127.0.0.1:8080", "/health/ready?x=1")
        );
        assert_eq!(split_url("http://[::1]:9090").unwrap(), ("[::1]:9090", "/"));
        for bad in [
            "https://127.0.0.1:8080/",
            "127.0.0.1:8080/health",
            "http://localhost/health",
            "http://:8080/health",
            "http://user@127.0.0.1:8080/",
            "http://127.0.0.1:8080/a b",
            "http://127.0.0.1:99999/",
        ] {
            assert!(split_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_url_is_shown_redacted() {
        let url = "http://127.0.0.1:8080/health/ready?access_token=hunter2";
        assert_eq!(
            outcome_line(url, &Ok(200)),
            "healthy: http://127.0.0.1:8080/health/ready?access_token=*** answered 200"
        );
        let refused = Err(HealthcheckError::Status(503));
        assert!(!outcome_line(url, &refused).contains("hunter2"));
        let no_port = "http://localhost/health?access_token=hunter2";
        let invalid = split_url(no_port).unwrap_err();
        assert!(!outcome_line(no_port, &Err(invalid)).contains("hunter2"));
    }

    /// A server that answers every connection with `answer`, or never when `None`.
    async fn server(answer: Option<&'static [u8]>) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                if let Some(answer) = answer {
                    let _ = stream.write_all(answer).await;
                }
                held.push(stream);
            }
        });
        addr
    }

    #[tokio::test]
    async fn passes_on_2xx_only() {
        let timeout = Duration::from_secs(30);
        let ok = server(Some(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")).await;
        assert_eq!(check(&format!("http://{ok}/"), timeout).await.unwrap(), 200);
        let draining = server(Some(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")).await;
        assert!(matches!(
            check(&format!("http://{draining}/"), timeout).await,
            Err(HealthcheckError::Status(503))
        ));
        let garbage = server(Some(b"SSH-2.0-OpenSSH\r\n")).await;
        assert!(matches!(
            check(&format!("http://{garbage}/"), timeout).await,
            Err(HealthcheckError::Malformed)
        ));
    }

    #[tokio::test]
    async fn a_stalled_or_refused_endpoint_fails() {
        let stalled = server(None).await;
        let timeout = Duration::from_millis(50);
        assert!(matches!(
            check(&format!("http://{stalled}/"), timeout).await,
            Err(HealthcheckError::TimedOut(_))
        ));
        let refused = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        assert!(matches!(
            check(&format!("http://{refused}/"), Duration::from_secs(30)).await,
            Err(HealthcheckError::Io(_))
        ));
    }
}
