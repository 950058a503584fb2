//! gRPC clients for the tests: a tonic channel over one real HTTP/2 connection whose frames
//! from the server are read on the way in, to see the `GOAWAY` of a graceful shutdown; and
//! reading a health `Watch` stream with a bound.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::Streaming;
use tonic::transport::{Channel, Endpoint};
use tower_health::grpc::pb::HealthCheckResponse;
use tower_health::grpc::pb::health_check_response::ServingStatus as Wire;

use super::bounded;

/// HTTP/2's frame type of `GOAWAY` (RFC 9113, 6.8).
const GOAWAY: u8 = 0x7;

/// A channel to `addr` over HTTP/2 without TLS, and the count of `GOAWAY` frames the server
/// sent on its connections.
pub async fn channel(addr: SocketAddr) -> (Channel, Arc<AtomicUsize>) {
    let goaways = Arc::new(AtomicUsize::new(0));
    let counter = goaways.clone();
    let connector = tower::service_fn(move |_uri| {
        let counter = counter.clone();
        async move {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok::<_, io::Error>(TokioIo::new(FrameTap::new(stream, counter)))
        }
    });
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).expect("a valid URI");
    let channel = bounded(
        "connecting over HTTP/2",
        endpoint.connect_with_connector(connector),
    )
    .await
    .expect("an HTTP/2 connection");
    (channel, goaways)
}

/// The next status of a `Watch` stream; `None` when the stream ended (with `OK`).
pub async fn next_status(stream: &mut Streaming<HealthCheckResponse>) -> Option<Wire> {
    bounded("the next Watch message", stream.message())
        .await
        .expect("the stream ends with OK, if at all")
        .map(|message| message.status())
}

/// Every status a `Watch` stream sends until it ends.
pub async fn rest(stream: &mut Streaming<HealthCheckResponse>) -> Vec<Wire> {
    let mut statuses = Vec::new();
    while let Some(status) = next_status(stream).await {
        statuses.push(status);
    }
    statuses
}

/// A TCP stream that splits what it reads into HTTP/2 frames and counts the `GOAWAY`s. The
/// server sends no connection preface of its own: its first bytes are a frame.
struct FrameTap {
    stream: TcpStream,
    goaways: Arc<AtomicUsize>,
    /// The header of the frame being read, as far as it has arrived.
    header: Vec<u8>,
    /// Payload bytes of the current frame still to come.
    payload_left: usize,
}

impl FrameTap {
    fn new(stream: TcpStream, goaways: Arc<AtomicUsize>) -> Self {
        Self {
            stream,
            goaways,
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
                if header[3] == GOAWAY {
                    self.goaways.fetch_add(1, Ordering::SeqCst);
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
