//! The gRPC check against an HTTP/2 server (h2's) that answers each service name with a
//! scripted answer, well-formed or not: the framing, the statuses, and every malformation.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use http::{HeaderMap, HeaderValue, Request, Response};
use prost::Message;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::super::check;
use super::*;

const TIMEOUT: Duration = Duration::from_secs(30);

/// A gRPC answer, piece by piece.
struct Answer {
    status: u16,
    content_type: &'static str,
    headers: &'static [(&'static str, &'static str)],
    data: Vec<u8>,
    trailers: &'static [(&'static str, &'static str)],
}

impl Answer {
    /// A message, then `grpc-status: 0`.
    fn ok(data: Vec<u8>) -> Self {
        Self {
            status: 200,
            content_type: "application/grpc",
            headers: &[],
            data,
            trailers: &[("grpc-status", "0")],
        }
    }

    /// No message: the status in the headers.
    fn trailers_only(headers: &'static [(&'static str, &'static str)]) -> Self {
        Self {
            headers,
            data: Vec::new(),
            trailers: &[],
            ..Self::ok(Vec::new())
        }
    }
}

/// `HealthCheckResponse { status }`, length-prefixed.
fn message(status: i32) -> Vec<u8> {
    framed(0, &HealthCheckResponse { status }.encode_to_vec())
}

fn framed(flag: u8, message: &[u8]) -> Vec<u8> {
    let mut frame = vec![flag];
    frame.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(message);
    frame
}

/// What the server answers to `Check(service)`.
fn script(service: &str) -> Answer {
    match service {
        "serving" | "" => Answer::ok(message(1)),
        "not-serving" => Answer::ok(message(2)),
        "unknown" => Answer::ok(message(0)),
        "no-such-status" => Answer::ok(message(7)),
        "not-found" => Answer::trailers_only(&[
            ("grpc-status", "5"),
            ("grpc-message", "unknown%20service%20%22x%22%0Anext line"),
        ]),
        "unimplemented" => Answer::trailers_only(&[("grpc-status", "12")]),
        // And a 20 KiB header, added by `answer`.
        "huge-headers" => Answer::trailers_only(&[("grpc-status", "0")]),
        "ok-without-message" => Answer::trailers_only(&[("grpc-status", "0")]),
        "bad-grpc-status" => Answer::trailers_only(&[("grpc-status", "OK")]),
        "no-trailers" => Answer {
            trailers: &[],
            ..Answer::ok(message(1))
        },
        "huge" => Answer::ok(framed(0, &vec![0; 5000])),
        "compressed" => Answer::ok(framed(1, &[8, 1])),
        "two-messages" => Answer::ok([message(1), message(1)].concat()),
        "truncated" => Answer::ok(message(1)[..5].to_vec()),
        "not-protobuf" => Answer::ok(framed(0, &[0xff, 0xff, 0xff])),
        "html" => Answer {
            content_type: "text/html",
            ..Answer::ok(b"<html>".to_vec())
        },
        "unavailable" => Answer {
            status: 503,
            ..Answer::trailers_only(&[])
        },
        other => panic!("no script for {other:?}"),
    }
}

/// An h2 server on loopback answering every call by [`script`], by the service name the
/// request's message carries; `"reset"` resets the stream instead.
async fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut connection = h2::server::handshake(stream).await.unwrap();
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer(request, respond));
                }
            });
        }
    });
    addr
}

async fn answer(request: Request<RecvStream>, mut respond: SendResponse<Bytes>) {
    assert_eq!(request.uri().path(), PATH);
    assert_eq!(request.headers()["content-type"], "application/grpc");
    assert_eq!(request.headers()["te"], "trailers");
    let mut body = request.into_body();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        data.extend_from_slice(&chunk.unwrap());
    }
    let (prefix, message) = data.split_at(PREFIX);
    assert_eq!(prefix, &framed(0, message)[..PREFIX]);
    let service = HealthCheckRequest::decode(message).unwrap().service;
    if service == "reset" {
        respond.send_reset(h2::Reason::REFUSED_STREAM);
        return;
    }
    let answer = script(&service);
    let headers = |pairs: &[(&'static str, &'static str)]| {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    };
    let mut response = Response::builder()
        .status(answer.status)
        .header("content-type", answer.content_type)
        .body(())
        .unwrap();
    response.headers_mut().extend(headers(answer.headers));
    if service == "huge-headers" {
        let padding = HeaderValue::from_str(&"x".repeat(20 * 1024)).unwrap();
        response.headers_mut().insert("x-padding", padding);
    }
    let end = answer.data.is_empty() && answer.trailers.is_empty();
    let mut send = respond.send_response(response, end).unwrap();
    if !answer.data.is_empty() {
        send.send_data(answer.data.into(), answer.trailers.is_empty())
            .unwrap();
    }
    if !answer.trailers.is_empty() {
        send.send_trailers(headers(answer.trailers)).unwrap();
    }
}

async fn check_service(addr: SocketAddr, service: &str) -> Result<Passed, HealthcheckError> {
    check(&format!("grpc://{addr}/{service}"), TIMEOUT).await
}

#[tokio::test]
async fn passes_on_serving_only() {
    let addr = server().await;
    assert_eq!(
        check_service(addr, "serving").await.unwrap(),
        Passed::Serving
    );
    assert_eq!(
        check(&format!("grpc://{addr}"), TIMEOUT).await.unwrap(),
        Passed::Serving
    );
    for (service, status) in [
        ("not-serving", WireStatus::NotServing),
        ("unknown", WireStatus::Unknown),
    ] {
        match check_service(addr, service).await {
            Err(HealthcheckError::NotServing(answered)) => assert_eq!(answered, status),
            other => panic!("{service}: {other:?}"),
        }
    }
    let error = check_service(addr, "not-serving").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"service unhealthy (responded with "NOT_SERVING")"#
    );
}

#[tokio::test]
async fn an_error_status_is_named_with_its_message_on_one_line() {
    let addr = server().await;
    let error = check_service(addr, "not-found").await.unwrap_err();
    assert!(
        matches!(
            &error,
            HealthcheckError::GrpcStatus(tonic::Code::NotFound, _)
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        r#"health rpc failed: code = NotFound desc = unknown service "x" next line"#
    );
    let error = check_service(addr, "unimplemented").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "this server does not implement the grpc health protocol (grpc.health.v1.Health)"
    );
    let error = check_service(addr, "reset").await.unwrap_err();
    assert!(matches!(error, HealthcheckError::Io(_)), "{error:?}");
    assert!(matches!(
        check_service(addr, "unavailable").await,
        Err(HealthcheckError::Status(503))
    ));
}

#[tokio::test]
async fn a_malformed_answer_fails_and_says_why() {
    let addr = server().await;
    for (service, why) in [
        (
            "no-such-status",
            "a serving status grpc.health.v1 does not have",
        ),
        ("ok-without-message", "status OK without a message"),
        ("bad-grpc-status", "a grpc-status that is no status code"),
        ("no-trailers", "no grpc-status"),
        ("huge", "a message longer than 4 KiB, or more than one"),
        (
            "compressed",
            "a compressed message, which the call did not accept",
        ),
        ("two-messages", "not one whole message"),
        ("truncated", "not one whole message"),
        ("not-protobuf", "not a HealthCheckResponse"),
        ("html", "its content-type is not application/grpc"),
        (
            "huge-headers",
            "an answer HTTP/2 does not allow (a header block over 16 KiB, say)",
        ),
    ] {
        match check_service(addr, service).await {
            Err(HealthcheckError::Malformed(said)) => assert_eq!(said, why, "{service}"),
            other => panic!("{service}: {other:?}"),
        }
    }
}

/// A TCP server that writes `answer` on every connection and keeps it open, or writes
/// nothing when `None`.
async fn raw_server(answer: Option<&'static [u8]>) -> SocketAddr {
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
async fn an_http1_server_a_stalled_one_and_a_closed_port_fail() {
    let http1 = raw_server(Some(
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
    ))
    .await;
    assert!(matches!(
        check(&format!("grpc://{http1}"), TIMEOUT).await,
        Err(HealthcheckError::Malformed("not HTTP/2"))
    ));
    let stalled = raw_server(None).await;
    let timeout = Duration::from_millis(50);
    assert!(matches!(
        check(&format!("grpc://{stalled}"), timeout).await,
        Err(HealthcheckError::TimedOut(_))
    ));
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    match check(&format!("grpc://{closed}"), TIMEOUT).await {
        Err(HealthcheckError::Io(error)) => {
            assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_grpc_message_is_decoded_onto_one_bounded_line() {
    assert_eq!(shown_message(b"plain"), "plain");
    assert_eq!(shown_message(b"a%20b%25c"), "a b%c");
    // Not an escape: kept as sent.
    assert_eq!(shown_message(b"100%"), "100%");
    assert_eq!(shown_message(b"%zz%2"), "%zz%2");
    assert_eq!(shown_message(b"%+f"), "%+f");
    assert_eq!(shown_message(b"two%0D%0Alines\ttab"), "two  lines tab");
    assert_eq!(shown_message(b"%C3%A9t%C3%A9"), "été");
    assert_eq!(shown_message(b"%ff"), "\u{fffd}");
    assert_eq!(shown_message(&[b'x'; 1000]).len(), MAX_SHOWN);
}
