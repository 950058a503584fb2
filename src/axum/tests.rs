//! How long the stack counts an application request in the drain: until its response body
//! has ended or been dropped, streaming bodies included; a response without a body, from its
//! head. A monitor without rounds, a router, and bodies polled by hand.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body::Body as _;
use http_body_util::BodyExt;
use http_body_util::channel::{Channel, Sender};
use tokio::sync::mpsc;
use tower::ServiceExt;

use crate::monitor::test_monitor;
use crate::shutdown::DrainHandle;
use crate::{HealthConfig, HealthLayer};

/// The stack around a router with `/` (`hello`), `/empty` (204) and `/stream` (a body the
/// test sends through the sender it receives), and the drain it counts in.
fn stack() -> (
    super::Stack<Router>,
    DrainHandle,
    mpsc::UnboundedReceiver<Sender<Bytes>>,
) {
    let (senders_tx, senders) = mpsc::unbounded_channel();
    let stream = move || {
        let senders = senders_tx.clone();
        async move {
            let (sender, body) = Channel::<Bytes, Infallible>::new(1);
            senders.send(sender).unwrap();
            Body::new(body)
        }
    };
    let router = Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/empty", get(|| async { StatusCode::NO_CONTENT }))
        .route("/stream", get(stream));
    let health = HealthLayer::new(test_monitor(HealthConfig::new()));
    let drain = health.handle().drain().clone();
    (health.around(router), drain, senders)
}

async fn get_response(stack: &super::Stack<Router>, path: &str) -> axum::response::Response {
    let request = Request::get(path).body(Body::empty()).unwrap();
    stack.clone().oneshot(request).await.unwrap()
}

async fn next_frame(body: &mut Body) -> Option<Bytes> {
    poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx))
        .await
        .map(|frame| frame.unwrap().into_data().unwrap())
}

#[tokio::test]
async fn a_streaming_body_counts_until_its_end() {
    let (stack, drain, mut senders) = stack();
    let response = get_response(&stack, "/stream").await;
    let mut sender = senders.recv().await.unwrap();
    let mut body = response.into_body();
    assert_eq!(drain.in_flight(), 1, "the head is out, the body is not");
    sender.send_data(Bytes::from_static(b"one")).await.unwrap();
    assert_eq!(next_frame(&mut body).await.as_deref(), Some(&b"one"[..]));
    assert_eq!(drain.in_flight(), 1, "a frame is out, the body goes on");
    drop(sender);
    assert_eq!(next_frame(&mut body).await, None);
    assert_eq!(drain.in_flight(), 0, "the body has ended");
}

#[tokio::test]
async fn a_body_counts_until_it_is_read_or_dropped() {
    let (stack, drain, _senders) = stack();
    let response = get_response(&stack, "/").await;
    assert_eq!(drain.in_flight(), 1);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello");
    assert_eq!(drain.in_flight(), 0);

    let response = get_response(&stack, "/").await;
    assert_eq!(drain.in_flight(), 1);
    drop(response);
    assert_eq!(drain.in_flight(), 0, "a client that went away");
}

#[tokio::test]
async fn a_response_without_a_body_ends_with_its_head() {
    let (stack, drain, _senders) = stack();
    let response = get_response(&stack, "/empty").await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(response.body().is_end_stream());
    assert_eq!(drain.in_flight(), 0, "nothing is left to send");
}
