//! The HTTP side of the container check: one `GET` over HTTP/1.1, written by hand, and the
//! status line of the answer.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{HealthcheckError, Passed};

/// The longest status line read: an answer that has not said its status by then is not HTTP.
const MAX_STATUS_LINE: usize = 1024;

/// `GET path` on `authority`; `Ok` for a 2xx status.
pub(super) async fn check(authority: &str, path: &str) -> Result<Passed, HealthcheckError> {
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
    let status = read_status(&mut stream).await?;
    if (200..300).contains(&status) {
        Ok(Passed::Http(status))
    } else {
        Err(HealthcheckError::Status(status))
    }
}

/// Reads the status line of an HTTP/1 answer: `HTTP/1.x SSS ...`.
async fn read_status(stream: &mut TcpStream) -> Result<u16, HealthcheckError> {
    let malformed = || HealthcheckError::Malformed("not an HTTP/1 status line");
    let mut line = Vec::with_capacity(64);
    let mut byte = [0; 1];
    while !line.ends_with(b"\r\n") {
        if line.len() >= MAX_STATUS_LINE {
            return Err(malformed());
        }
        if stream.read(&mut byte).await.map_err(HealthcheckError::Io)? == 0 {
            return Err(malformed());
        }
        line.push(byte[0]);
    }
    let line = std::str::from_utf8(&line).map_err(|_| malformed())?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("HTTP/1.1" | "HTTP/1.0"), Some(code)) if code.len() == 3 => {
            code.parse().map_err(|_| malformed())
        }
        _ => Err(malformed()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::net::TcpListener;

    use super::super::check;
    use super::*;

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
        assert_eq!(
            check(&format!("http://{ok}/"), timeout).await.unwrap(),
            Passed::Http(200)
        );
        let draining = server(Some(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")).await;
        assert!(matches!(
            check(&format!("http://{draining}/"), timeout).await,
            Err(HealthcheckError::Status(503))
        ));
        let garbage = server(Some(b"SSH-2.0-OpenSSH\r\n")).await;
        assert!(matches!(
            check(&format!("http://{garbage}/"), timeout).await,
            Err(HealthcheckError::Malformed(_))
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
