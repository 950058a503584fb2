//! Future combinators, so the library needs neither tokio's `macros` feature nor
//! `futures-util`; and the thread index that the counts sharded by thread (the drain's
//! in-flight count, load feedback's finished requests) pick their shard by.

use std::borrow::Cow;
use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::num::NonZero;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Resolves when both futures have, with both outputs.
pub(crate) async fn join<A: Future, B: Future>(first: A, second: B) -> (A::Output, B::Output) {
    let mut first = pin!(first);
    let mut second = pin!(second);
    let (mut first_out, mut second_out) = (None, None);
    poll_fn(|cx| {
        if first_out.is_none()
            && let Poll::Ready(output) = first.as_mut().poll(cx)
        {
            first_out = Some(output);
        }
        if second_out.is_none()
            && let Poll::Ready(output) = second.as_mut().poll(cx)
        {
            second_out = Some(output);
        }
        if first_out.is_some() && second_out.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (
        first_out.expect("polled to completion"),
        second_out.expect("polled to completion"),
    )
}

/// Resolves when every one of `futures` has, with their outputs in order. They are polled
/// together: a round waits for its checks this way, so that each check's deadline is looked
/// at when the runtime wakes for it, never after another check's wait (a late look would
/// read as a starved runtime). One allocation per future, once per round.
pub(crate) async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<Option<Pin<Box<F>>>> = futures
        .into_iter()
        .map(|future| Some(Box::pin(future)))
        .collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut done = true;
        for (slot, output) in pending.iter_mut().zip(&mut outputs) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    Poll::Ready(ready) => {
                        *output = Some(ready);
                        *slot = None;
                    }
                    Poll::Pending => done = false,
                }
            }
        }
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    outputs
        .into_iter()
        .map(|output| output.expect("polled to completion"))
        .collect()
}

/// Runs `future` to completion, catching a panic in any of its polls: `Err` carries the
/// panic's message. What the monitor's rounds run under, so that a panic (a user's callback,
/// a decoded entry, a renderer) costs one round, never the monitor.
///
/// The future is dropped on the spot after a panic, never polled again; what it shared is
/// guarded by locks that shrug off poisoning (`PoisonError::into_inner` throughout).
pub(crate) async fn catch_unwind<F: Future>(future: F) -> Result<F::Output, String> {
    let mut future = pin!(future);
    poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(&*payload).to_owned())),
        }
    })
    .await
}

/// The message a panic was raised with, when it is text.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string payload")
}

/// `value` as a form decodes it (`+` for a space, `%XX` escapes, as Go's `net/url` and
/// browsers read a query); an invalid escape is left as written, and a result that is not UTF-8 is
/// the value as written.
pub(crate) fn form_decode(value: &str) -> Cow<'_, str> {
    let spaced: Cow<'_, str> = if value.contains('+') {
        value.replace('+', " ").into()
    } else {
        value.into()
    };
    match percent_encoding::percent_decode_str(&spaced).decode_utf8() {
        Ok(Cow::Borrowed(_)) => spaced,
        Ok(Cow::Owned(decoded)) => decoded.into(),
        Err(_) => value.into(),
    }
}

/// How many shards a count sharded by thread has (the drain's in-flight count, load
/// feedback's finished requests): twice the cores, so that worker threads seldom share a
/// shard (thread indices are handed out in order of first use, across every count in the
/// process), a power of two.
pub(crate) fn shard_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZero::get);
    (cores * 2).next_power_of_two().min(64)
}

/// This thread's index, handed out in order of first use: a shard's is this index modulo
/// [`shard_count`].
#[inline]
pub(crate) fn thread_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        let mut current = index.get();
        if current == usize::MAX {
            current = NEXT.fetch_add(1, Ordering::Relaxed);
            index.set(current);
        }
        current
    })
}
