//! HTTP/2 clients that see the server's frames: a TCP stream that splits what it reads into
//! HTTP/2 frames and counts them, and the `GOAWAY`s among them; and a hyper HTTP/2 (h2c,
//! prior knowledge) connection over it (the axum example's tests; the gRPC tests' tonic
//! channels read through the same stream, see `support::grpc`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

// What [`connect`] needs.
#[cfg(feature = "axum")]
use {
    bytes::Bytes,
    http_body_util::Empty,
    hyper::client::conn::http2::SendRequest,
    hyper_util::rt::{TokioExecutor, TokioIo},
    std::net::SocketAddr,
    tokio::task::JoinHandle,
};

/// HTTP/2's frame type of `GOAWAY` (RFC 9113, 6.8).
const GOAWAY: u8 = 0x7;

/// What the server sent on one connection: frames in all, and `GOAWAY`s.
#[derive(Clone, Debug, Default)]
pub struct Frames {
    pub frames: Arc<AtomicUsize>,
    pub goaways: Arc<AtomicUsize>,
}

#[cfg(feature = "axum")]
impl Frames {
    /// Whether the server spoke HTTP/2 on the connection at all (its `SETTINGS` come first):
    /// a connection it never served had no request of its own accepted.
    pub fn served(&self) -> bool {
        self.frames.load(Ordering::SeqCst) > 0
    }

    pub fn goaways(&self) -> usize {
        self.goaways.load(Ordering::SeqCst)
    }
}

/// One HTTP/2 connection to `addr` without TLS: its request sender, what the server sent on
/// it, and the task driving it (it ends when the connection closes).
#[cfg(feature = "axum")]
pub async fn connect(
    addr: SocketAddr,
) -> io::Result<(SendRequest<Empty<Bytes>>, Frames, JoinHandle<()>)> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let frames = Frames::default();
    let io = TokioIo::new(FrameTap::new(stream, frames.clone()));
    let (sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .map_err(io::Error::other)?;
    let driver = tokio::spawn(async move {
        // How it ends is the requests' business: each sees its own error.
        let _ = connection.await;
    });
    Ok((sender, frames, driver))
}

/// A TCP stream that splits what it reads into HTTP/2 frames and counts them. The server
/// sends no connection preface of its own: its first bytes are a frame.
pub struct FrameTap {
    stream: TcpStream,
    frames: Frames,
    /// The header of the frame being read, as far as it has arrived.
    header: Vec<u8>,
    /// Payload bytes of the current frame still to come.
    payload_left: usize,
}

impl FrameTap {
    pub fn new(stream: TcpStream, frames: Frames) -> Self {
        Self {
            stream,
            frames,
            header: Vec::with_capacity(9),
            payload_left: 0,
        }
    }

    fn observe(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let skipped = self.payload_left.min(bytes.len());
                self.payload_left -= skipped;
                bytes = &bytes[skipped..];
                continue;
            }
            let wanted = (9 - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..wanted]);
            bytes = &bytes[wanted..];
            if self.header.len() == 9 {
                let header = std::mem::take(&mut self.header);
                self.payload_left = usize::from(header[0]) << 16
                    | usize::from(header[1]) << 8
                    | usize::from(header[2]);
                self.frames.frames.fetch_add(1, Ordering::SeqCst);
                if header[3] == GOAWAY {
                    self.frames.goaways.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }
}

impl AsyncRead for FrameTap {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.stream).poll_read(cx, buf))?;
        let read = buf.filled()[before..].to_vec();
        self.observe(&read);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for FrameTap {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
