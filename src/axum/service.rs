use std::convert::Infallible;
use std::future::Ready;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::response::Response;
use axum::serve::{IncomingStream, Listener};
use http::Request;
use tower_service::Service;

use super::future::StackFuture;
use crate::health::Reader;
use crate::http::{Count, ProbeResponse, WhenBusy, admit, not_ready, poll_ready_now, rejection};

/// An axum app with the probes, the ping and the drain around it, in one service that
/// [`axum::serve()`] takes as it takes a `Router`.
///
/// Made by [`HealthLayer::around`](crate::HealthLayer::around). Always ready: probes never
/// wait on the app (see the [module docs](super#backpressure)).
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
pub struct Stack<S> {
    inner: S,
    // `axum::serve` clones the service for every request: this `Arc` is made once per
    // connection (see the `IncomingStream` impl), so the reference count a request writes is
    // its connection's, never one that every core writes.
    shared: Arc<Shared>,
}

#[derive(Debug, Clone)]
struct Shared {
    reader: Arc<Reader>,
}

impl<S> Stack<S> {
    pub(crate) fn new(inner: S, reader: Arc<Reader>) -> Self {
        Self {
            inner,
            shared: Arc::new(Shared { reader }),
        }
    }

    define_inner_service_accessors!();
}

impl<S, ReqBody> Service<Request<ReqBody>> for Stack<S>
where
    S: Service<Request<ReqBody>, Response = Response> + Clone,
{
    type Response = Response;
    type Error = S::Error;
    type Future = StackFuture<S, ReqBody>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Always ready: the app is asked in `call`, for its own requests only.
        Poll::Ready(Ok(()))
    }

    /// The three layers' rules in one service: `Health`'s (the probes and ping), then
    /// `Drain`'s (admit or refuse), then the request to the app as every layer sends it.
    #[inline(always)]
    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let reader = &*self.shared.reader;
        if let Some(asked) = reader.ask(&request) {
            return StackFuture::layers(crate::http::ResponseFuture::probe(reader.answer(asked)));
        }
        let marks = reader.marks();
        let drain = reader.handle.drain();
        let admitted = match admit(drain, &request) {
            Some(admitted) => admitted,
            None => {
                let mut refused = rejection(drain);
                crate::http::mark(marks, &mut refused);
                let refused = ProbeResponse::ready(refused);
                return StackFuture::layers(crate::http::ResponseFuture::probe(refused));
            }
        };
        match poll_ready_now(&mut self.inner) {
            // What nearly every application request does: the app's own future, polled by
            // ours directly, built where it lies. Through the layers' future, the app's
            // (large) future is copied more, on every request: callgrind counts it.
            Poll::Ready(Ok(())) => {
                let admitted = admitted.with_marks(marks);
                StackFuture::app(self.inner.call(request), Some(admitted))
            }
            polled => {
                let when_busy = WhenBusy::shed(reader.shed_load);
                let count = Count::Admitted(admitted);
                let future = not_ready(&mut self.inner, polled, request, when_busy, count, marks);
                StackFuture::layers(future)
            }
        }
    }
}

/// What [`axum::serve()`] asks for each connection: this stack around what the app makes for
/// it (for a `Router`, the router with its routes prepared once, as `axum::serve` does).
///
/// axum's own apps (`Router`, `MethodRouter`, a handler's service) make theirs at once, in a
/// [`Ready`] future, and so does the stack: it takes the app's and wraps it in place.
impl<'a, L, S, M> Service<IncomingStream<'a, L>> for Stack<S>
where
    L: Listener,
    S: Service<
            IncomingStream<'a, L>,
            Response = M,
            Error = Infallible,
            Future = Ready<Result<M, Infallible>>,
        >,
{
    type Response = Stack<M>;
    type Error = Infallible;
    type Future = Ready<Result<Stack<M>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, stream: IncomingStream<'a, L>) -> Self::Future {
        let Ok(inner) = self.inner.call(stream).into_inner();
        // One `Arc` per connection, cloned for each of its requests (see `Stack::shared`).
        let shared = Arc::new(Shared::clone(&self.shared));
        std::future::ready(Ok(Stack { inner, shared }))
    }
}
