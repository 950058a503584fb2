//! A drain never undoes an upgrade: a `101 Switching Protocols` answered while draining has no
//! `Connection: close`, and the upgraded connection keeps working. One registered with the
//! drain (`DrainHandle::long_lived`, hyper-util's way) counts until its turn to close.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceBuilder;
use tower_health::{DrainConfig, DrainHandle, DrainLayer};
use tower_health::{HealthConfig, HealthLayer, HealthMonitor};

const LIMIT: Duration = Duration::from_secs(10);

/// Answers `Upgrade: echo` with 101 and then echoes what the client sends; `/` with 200.
/// With `drain`, each upgraded connection is registered with it before the `101`, and says
/// `bye` and closes at its turn.
fn app(
    drain: Option<DrainHandle>,
) -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Empty<Bytes>>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Empty<Bytes>>, Infallible>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |mut request: Request<Incoming>| {
        let drain = drain.clone();
        async move {
            if !request.headers().contains_key(header::UPGRADE) {
                return Ok(Response::new(Empty::new()));
            }
            // Registered before the `101`, moved into the task serving the connection.
            let connection = drain.as_ref().map(|drain| drain.long_lived("upgraded"));
            let upgrade = hyper::upgrade::on(&mut request);
            tokio::spawn(async move {
                let Ok(upgraded) = upgrade.await else { return };
                let mut io = TokioIo::new(upgraded);
                let mut buffer = [0; 64];
                let closing = async {
                    match &connection {
                        Some(connection) => connection.closing().await,
                        None => std::future::pending().await,
                    }
                };
                let mut closing = std::pin::pin!(closing);
                loop {
                    tokio::select! {
                        () = &mut closing => {
                            let _ = io.write_all(b"bye").await;
                            let _ = io.shutdown().await;
                            // The client's end of the stream, so that nothing is left unread.
                            while matches!(io.read(&mut buffer).await, Ok(read) if read > 0) {}
                            return;
                        }
                        read = io.read(&mut buffer) => match read {
                            Ok(read) if read > 0 => {
                                if io.write_all(&buffer[..read]).await.is_err() {
                                    return;
                                }
                            }
                            _ => return,
                        },
                    }
                }
            });
            let mut response = Response::new(Empty::new());
            *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
            response
                .headers_mut()
                .insert(header::CONNECTION, "upgrade".parse().unwrap());
            response
                .headers_mut()
                .insert(header::UPGRADE, "echo".parse().unwrap());
            Ok(response)
        }
    })
}

/// Reads one response head off `stream`.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).await.expect("read");
        assert_eq!(read, 1, "the connection closed mid-head: {head:?}");
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap().to_ascii_lowercase()
}

/// Serves `health` and `drain` over `app` on hyper-util's HTTP/1 with upgrades.
async fn serve(health: HealthLayer, drain: &DrainHandle, registered: bool) -> std::net::SocketAddr {
    let service = ServiceBuilder::new()
        .layer(health)
        .layer(DrainLayer::new(drain))
        .service(app(registered.then(|| drain.clone())));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades(),
            );
        }
    });
    addr
}

/// Sends the upgrade request on a new connection; returns it once the `101` is read.
async fn upgraded(addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /echo HTTP/1.1\r\nHost: localhost\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n")
        .await
        .unwrap();
    let head = read_head(&mut stream).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    stream
}

#[tokio::test]
async fn an_upgrade_during_the_drain_keeps_its_connection() {
    let health = HealthLayer::new(HealthMonitor::spawn(HealthConfig::new()).unwrap());
    let drain = health.handle().drain().clone();
    let addr = serve(health, &drain, false).await;
    assert!(drain.start());

    let exchange = async {
        // An ordinary request during the drain is told to close...
        let mut plain = TcpStream::connect(addr).await.unwrap();
        plain
            .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let head = read_head(&mut plain).await;
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(head.contains("connection: close"), "{head}");

        // ...an upgrade is not.
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(
                b"GET /echo HTTP/1.1\r\nHost: localhost\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
            )
            .await
            .unwrap();
        let head = read_head(&mut stream).await;
        assert!(head.starts_with("http/1.1 101"), "{head}");
        assert!(!head.contains("connection: close"), "{head}");
        assert!(head.contains("connection: upgrade"), "{head}");
        // The upgraded connection works through the drain.
        stream.write_all(b"still here").await.unwrap();
        let mut echoed = [0; 10];
        stream.read_exact(&mut echoed).await.unwrap();
        assert_eq!(&echoed, b"still here");
    };
    tokio::time::timeout(LIMIT, exchange)
        .await
        .expect("the exchange finished");
    // The upgraded connection is not in-flight work that holds the drain open.
    assert_eq!(drain.in_flight(), 0);
}

#[tokio::test]
async fn a_registered_upgrade_counts_until_its_turn_to_close() {
    let config = HealthConfig::new().drain(
        DrainConfig::new()
            .delay(Duration::from_millis(50))
            .close_window(Duration::from_millis(200))
            .timeout(Duration::from_secs(5)),
    );
    let health = HealthLayer::new(HealthMonitor::spawn(config).unwrap());
    let drain = health.handle().drain().clone();
    let addr = serve(health, &drain, true).await;
    let mut stream = tokio::time::timeout(LIMIT, upgraded(addr)).await.unwrap();
    assert_eq!(drain.in_flight(), 1, "the upgraded connection counts");
    drain.start();
    let exchange = async {
        let mut said = Vec::new();
        // `bye` at its turn, then the server's end of the stream: no reset.
        stream.read_to_end(&mut said).await.expect("a clean end");
        assert_eq!(said, b"bye");
        stream.shutdown().await.unwrap();
    };
    tokio::time::timeout(LIMIT, exchange)
        .await
        .expect("the exchange finished");
    let drained = tokio::time::timeout(LIMIT, drain.drained()).await.unwrap();
    assert!(drained.is_clean(), "{drained:?}");
}
