//! A client that pipelines requests and never reads the answers: once the buffers between it
//! and the server are full, every write of the server to it waits.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio::task::JoinHandle;

use super::bounded;

/// A receive buffer this small fills after a few dozen answers (the kernel may double it).
const RECEIVE_BUFFER: u32 = 4 * 1024;

/// Requests written per write: the pipelining is as deep as the server lets it be.
const BATCH: usize = 64;

pub struct SlowReader {
    writer: JoinHandle<io::Error>,
}

impl SlowReader {
    /// Connects with a small receive buffer, reads one answer to `GET path` (so the server
    /// has taken the connection), then writes `GET path` requests without end and never
    /// reads again.
    pub async fn start(addr: SocketAddr, path: &str) -> Self {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .expect("a socket");
        socket
            .set_recv_buffer_size(RECEIVE_BUFFER)
            .expect("SO_RCVBUF");
        let mut stream = bounded("connecting", socket.connect(addr))
            .await
            .expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        bounded("writing", stream.write_all(request.as_bytes()))
            .await
            .expect("write");
        let mut head = Vec::new();
        while !head.windows(4).any(|window| window == b"\r\n\r\n") {
            let mut chunk = [0; 1024];
            let read = bounded("the first answer", stream.read(&mut chunk))
                .await
                .expect("read");
            assert_ne!(read, 0, "closed before the first answer");
            head.extend_from_slice(&chunk[..read]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        let batch = request.repeat(BATCH).into_bytes();
        let writer = tokio::spawn(async move {
            loop {
                if let Err(error) = stream.write_all(&batch).await {
                    return error;
                }
            }
        });
        Self { writer }
    }

    /// Waits, at most [`LIMIT`](super::LIMIT), for the server to close the connection, which
    /// fails the writes; returns what the last write said.
    pub async fn closed_by_server(&mut self) -> io::Error {
        bounded(
            "the server closing a client that never reads",
            &mut self.writer,
        )
        .await
        .expect("the writer task")
    }
}

impl Drop for SlowReader {
    fn drop(&mut self) {
        self.writer.abort();
    }
}
