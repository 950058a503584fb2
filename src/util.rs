//! Two-future combinators, so the library needs neither tokio's `macros` feature nor
//! `futures-util`.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

/// Resolves when either future does; the other is dropped.
pub(crate) async fn race(first: impl Future<Output = ()>, second: impl Future<Output = ()>) {
    let mut first = pin!(first);
    let mut second = pin!(second);
    poll_fn(|cx| {
        if first.as_mut().poll(cx).is_ready() || second.as_mut().poll(cx).is_ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

/// Resolves when both futures have.
pub(crate) async fn join(first: impl Future<Output = ()>, second: impl Future<Output = ()>) {
    let mut first = pin!(first);
    let mut second = pin!(second);
    let (mut first_done, mut second_done) = (false, false);
    poll_fn(|cx| {
        if !first_done {
            first_done = first.as_mut().poll(cx).is_ready();
        }
        if !second_done {
            second_done = second.as_mut().poll(cx).is_ready();
        }
        if first_done && second_done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}
