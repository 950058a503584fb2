//! gRPC clients for the tests: a tonic channel over one real HTTP/2 connection whose frames
//! from the server are read on the way in, to see the `GOAWAY` of a graceful shutdown; and
//! reading a health `Watch` stream with a bound.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tonic::Streaming;
use tonic::transport::{Channel, Endpoint};
use tower_health::grpc::pb::HealthCheckResponse;
use tower_health::grpc::pb::health_check_response::ServingStatus as Wire;

use super::bounded;
use super::frames::{FrameTap, Frames};

/// A channel to `addr` over HTTP/2 without TLS, and the count of `GOAWAY` frames the server
/// sent on its connections.
pub async fn channel(addr: SocketAddr) -> (Channel, Arc<AtomicUsize>) {
    let frames = Frames::default();
    let goaways = frames.goaways.clone();
    let connector = tower::service_fn(move |_uri| {
        let frames = frames.clone();
        async move {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok::<_, io::Error>(TokioIo::new(FrameTap::new(stream, frames)))
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
