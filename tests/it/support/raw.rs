//! A raw HTTP/1.1 connection, for requests a well-behaved client would not send: odd headers,
//! huge headers, invalid bytes, slow or silent clients.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::bounded;

/// A response read off the wire.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.body))
    }
}

pub struct RawConnection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl RawConnection {
    pub async fn open(addr: SocketAddr) -> Self {
        Self {
            stream: bounded("connecting", TcpStream::connect(addr))
                .await
                .expect("connect"),
            buffer: Vec::new(),
        }
    }

    /// Sends raw bytes as they are.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        bounded("writing", self.stream.write_all(bytes))
            .await
            .expect("write");
    }

    /// Sends raw bytes as they are; `false` if the server closed the connection first.
    pub async fn try_send_raw(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).await.is_ok()
    }

    /// `GET path` with the given extra header lines (each without CRLF), then the response.
    pub async fn get(&mut self, path: &str, headers: &[&[u8]]) -> RawResponse {
        self.request("GET", path, headers).await
    }

    pub async fn request(&mut self, method: &str, path: &str, headers: &[&[u8]]) -> RawResponse {
        let mut request = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
        if !headers
            .iter()
            .any(|line| line.to_ascii_lowercase().starts_with(b"host:"))
        {
            request.extend_from_slice(b"Host: localhost\r\n");
        }
        for line in headers {
            request.extend_from_slice(line);
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"\r\n");
        self.send_raw(&request).await;
        let response = self.response(method == "HEAD").await.expect("a response");
        if response.header("content-type") == Some("application/json") {
            super::schema::validate(path, response.status, response.body.as_bytes());
        }
        response
    }

    /// Reads one response (framed by Content-Length), or `None` if the server closed the
    /// connection first.
    pub async fn response(&mut self, head_only: bool) -> Option<RawResponse> {
        let head_end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            if !self.fill().await {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
            .collect();
        let length = if head_only {
            0
        } else {
            headers
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
                .map_or(0, |(_, value)| value.parse().unwrap())
        };
        let body_start = head_end + 4;
        while self.buffer.len() < body_start + length {
            if !self.fill().await {
                return None;
            }
        }
        let body =
            String::from_utf8_lossy(&self.buffer[body_start..body_start + length]).into_owned();
        self.buffer.drain(..body_start + length);
        Some(RawResponse {
            status,
            headers,
            body,
        })
    }

    /// Whether the server closes the connection within `limit` (reading and discarding).
    pub async fn closed_within(&mut self, limit: Duration) -> bool {
        tokio::time::timeout(limit, async {
            let mut chunk = [0; 1024];
            loop {
                match self.stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await
        .is_ok()
    }

    /// Reads what the server sent next; `false` once it closed the connection. A server that
    /// neither answers nor closes within [`LIMIT`](super::LIMIT) fails the test.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0; 4096];
        match bounded("waiting for the server", self.stream.read(&mut chunk)).await {
            Ok(0) | Err(_) => false,
            Ok(read) => {
                self.buffer.extend_from_slice(&chunk[..read]);
                true
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
