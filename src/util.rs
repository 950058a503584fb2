//! Future combinators, so the library needs neither tokio's `macros` feature nor
//! `futures-util`; and the jitter's random numbers, so it needs no `rand`.

use std::collections::hash_map::RandomState;
use std::future::{Future, poll_fn};
use std::hash::{BuildHasher, Hasher};
use std::pin::pin;
use std::task::Poll;
use std::time::SystemTime;

/// A number in `[0, 1)`, different in each process and on each call (not for cryptography):
/// the jitter of the shared cache's rounds and of the drain's close turns.
pub(crate) fn random_fraction() -> f64 {
    // `RandomState::new` draws new keys on each call (per-thread keys, incremented).
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos()),
    );
    // The top 53 bits, as a double's mantissa holds them.
    (hasher.finish() >> 11) as f64 / (1_u64 << 53) as f64
}

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
