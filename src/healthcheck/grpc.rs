//! The gRPC side of the container check: one `grpc.health.v1.Health/Check` over HTTP/2 in
//! clear text (prior knowledge, as a tonic server takes it), through `h2` directly.
//!
//! `h2` is the HTTP/2 of hyper and tonic; alone it adds seven small crates to the `grpc`
//! feature's tree, where hyper's client adds fifteen and tonic's transport far more. A call
//! is short to write by hand: headers, one length-prefixed message, then the answer's one
//! message and its `grpc-status` (in the trailers, or in the headers of a trailers-only
//! answer, which is how servers send an error).

use std::future::{Future, poll_fn};
use std::pin::pin;

use bytes::{BufMut, Bytes, BytesMut};
use h2::RecvStream;
use h2::client::SendRequest;
use http::{HeaderMap, Request, Response, StatusCode, header};
use prost::Message;
use tokio::net::TcpStream;

use super::{HealthcheckError, Passed};
use crate::grpc::pb::health_check_response::ServingStatus as WireStatus;
use crate::grpc::pb::{HealthCheckRequest, HealthCheckResponse};

/// The method asked.
const PATH: &str = "/grpc.health.v1.Health/Check";

/// The length prefix of a gRPC message: a compression flag and a big-endian `u32`.
const PREFIX: usize = 5;

/// The longest response message read. A `HealthCheckResponse` is at most 11 bytes; the rest
/// is room for fields a later version of the proto may add.
const MAX_MESSAGE: usize = 4 * 1024;

/// The largest header block (headers, trailers) the server may send: a gRPC answer needs a
/// few hundred bytes, and h2's own default is 16 MiB.
const MAX_HEADER_LIST: u32 = 16 * 1024;

/// The longest `grpc-message` shown, in characters.
const MAX_SHOWN: usize = 200;

/// `Check(service)` on `authority`; `Ok` for `SERVING`.
pub(super) async fn check(authority: &str, service: &str) -> Result<Passed, HealthcheckError> {
    let stream = TcpStream::connect(authority)
        .await
        .map_err(HealthcheckError::Io)?;
    // One small write per frame: without it, Nagle holds the message behind the headers.
    let _ = stream.set_nodelay(true);
    let (client, connection) = h2::client::Builder::new()
        .enable_push(false)
        .max_header_list_size(MAX_HEADER_LIST)
        .handshake::<_, Bytes>(stream)
        .await
        .map_err(h2_error)?;
    // The connection is the future that moves the frames: driven here beside the call, rather
    // than spawned, so that nothing outlives the check (its timeout drops both). When it
    // ends (the server closed, a protocol error), the call fails with its error.
    let mut connection = pin!(connection);
    let mut connection_open = true;
    let mut call = pin!(call(client, authority, service));
    poll_fn(|cx| {
        if connection_open && connection.as_mut().poll(cx).is_ready() {
            connection_open = false;
        }
        call.as_mut().poll(cx)
    })
    .await
}

async fn call(
    client: SendRequest<Bytes>,
    authority: &str,
    service: &str,
) -> Result<Passed, HealthcheckError> {
    let request = Request::post(format!("http://{authority}{PATH}"))
        .header(header::CONTENT_TYPE, "application/grpc")
        .header(header::TE, "trailers")
        .header(header::USER_AGENT, "tower-health-healthcheck")
        .body(())
        .map_err(|_| HealthcheckError::Url(authority.to_owned()))?;
    let mut client = client.ready().await.map_err(h2_error)?;
    let (response, mut body) = client.send_request(request, false).map_err(h2_error)?;
    body.send_data(request_message(service), true)
        .map_err(h2_error)?;
    let response = response.await.map_err(h2_error)?;
    read_answer(response).await
}

/// `HealthCheckRequest { service }`, length-prefixed, uncompressed.
fn request_message(service: &str) -> Bytes {
    let message = HealthCheckRequest {
        service: service.to_owned(),
    };
    let len = message.encoded_len();
    let mut frame = BytesMut::with_capacity(PREFIX + len);
    frame.put_u8(0);
    // A service name is an argument of the process: far below 4 GiB.
    frame.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message.encode_raw(&mut frame);
    frame.freeze()
}

/// The serving status of the answer, or why there is none.
async fn read_answer(response: Response<RecvStream>) -> Result<Passed, HealthcheckError> {
    let (parts, mut body) = response.into_parts();
    if parts.status != StatusCode::OK {
        return Err(HealthcheckError::Status(parts.status.as_u16()));
    }
    let grpc = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        return Err(HealthcheckError::Malformed(
            "its content-type is not application/grpc",
        ));
    }
    // A trailers-only answer: the status in the headers, no message.
    match grpc_status(&parts.headers)? {
        None => {}
        Some(tonic::Code::Ok) => {
            return Err(HealthcheckError::Malformed("status OK without a message"));
        }
        Some(code) => return Err(grpc_error(code, &parts.headers)),
    }
    let mut message = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(h2_error)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        if message.len() + chunk.len() > PREFIX + MAX_MESSAGE {
            return Err(HealthcheckError::Malformed(
                "a message longer than 4 KiB, or more than one",
            ));
        }
        message.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.map_err(h2_error)?.unwrap_or_default();
    match grpc_status(&trailers)? {
        Some(tonic::Code::Ok) => {}
        Some(code) => return Err(grpc_error(code, &trailers)),
        None => return Err(HealthcheckError::Malformed("no grpc-status")),
    }
    match WireStatus::try_from(decode(&message)?.status) {
        Ok(WireStatus::Serving) => Ok(Passed::Serving),
        Ok(status) => Err(HealthcheckError::NotServing(status)),
        Err(_) => Err(HealthcheckError::Malformed(
            "a serving status grpc.health.v1 does not have",
        )),
    }
}

/// The one length-prefixed `HealthCheckResponse` of `body`.
fn decode(body: &[u8]) -> Result<HealthCheckResponse, HealthcheckError> {
    let malformed = HealthcheckError::Malformed;
    let (prefix, message) = body
        .split_first_chunk::<PREFIX>()
        .ok_or(malformed("no message"))?;
    match prefix[0] {
        0 => {}
        // The call sent no `grpc-accept-encoding`: a server may not compress the answer.
        1 => {
            return Err(malformed(
                "a compressed message, which the call did not accept",
            ));
        }
        _ => return Err(malformed("not a gRPC message")),
    }
    let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
    if usize::try_from(len).ok() != Some(message.len()) {
        return Err(malformed("not one whole message"));
    }
    HealthCheckResponse::decode(message).map_err(|_| malformed("not a HealthCheckResponse"))
}

/// The `grpc-status` of a header block, if it has one.
fn grpc_status(headers: &HeaderMap) -> Result<Option<tonic::Code>, HealthcheckError> {
    let Some(status) = headers.get("grpc-status") else {
        return Ok(None);
    };
    let code = std::str::from_utf8(status.as_bytes())
        .ok()
        .and_then(|status| status.parse::<u8>().ok())
        .filter(|code| *code <= 16)
        .ok_or(HealthcheckError::Malformed(
            "a grpc-status that is no status code",
        ))?;
    Ok(Some(tonic::Code::from_i32(code.into())))
}

/// The error status `code` of a header block, with the block's `grpc-message`.
fn grpc_error(code: tonic::Code, headers: &HeaderMap) -> HealthcheckError {
    let message = headers
        .get("grpc-message")
        .map(|message| shown_message(message.as_bytes()))
        .unwrap_or_default();
    HealthcheckError::GrpcStatus(code, message)
}

/// A `grpc-message` as shown on the check's one line: percent-decoded (gRPC sends it
/// percent-encoded), control characters as spaces, at most [`MAX_SHOWN`] characters.
fn shown_message(raw: &[u8]) -> String {
    let hex = |digit: u8| char::from(digit).to_digit(16);
    let mut decoded = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while let Some((&byte, tail)) = rest.split_first() {
        if let (b'%', [high, low, after @ ..]) = (byte, tail)
            && let (Some(high), Some(low)) = (hex(*high), hex(*low))
        {
            // Two hex digits: at most 0xff.
            decoded.push(u8::try_from((high << 4) | low).unwrap_or(b'?'));
            rest = after;
            continue;
        }
        decoded.push(byte);
        rest = tail;
    }
    String::from_utf8_lossy(&decoded)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_SHOWN)
        .collect()
}

/// An HTTP/2 error as the check reports it.
fn h2_error(error: h2::Error) -> HealthcheckError {
    if error.is_library() {
        return HealthcheckError::Malformed(if error.is_go_away() {
            // The connection's frames: most often a server that speaks HTTP/1 only.
            "not HTTP/2"
        } else {
            // The call's: its headers are too large for the bound, or invalid.
            "an answer HTTP/2 does not allow (a header block over 16 KiB, say)"
        });
    }
    match (error.reason(), error.is_remote()) {
        (Some(reason), true) => HealthcheckError::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            format!("the server ended the call: {reason}"),
        )),
        _ => match error.into_io() {
            Some(error) => HealthcheckError::Io(error),
            None => HealthcheckError::Malformed("not HTTP/2"),
        },
    }
}

#[cfg(test)]
mod tests;
