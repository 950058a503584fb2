use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::response::Response;
use axum::serve::{IncomingStream, Listener};
use http::Request;
use tower_service::Service;

use super::future::{MakeFuture, ResponseFuture};
use crate::drain::Admitted;
use crate::health::{Reader, WhenBusy, call_busy, poll_inner};
use crate::http::ProbeResponse;

/// An axum app with the probes, the ping and the drain around it, in one service that
/// [`axum::serve()`] takes as it takes a `Router`.
///
/// Made by [`HealthLayer::around`](crate::HealthLayer::around). Always ready: probes never wait on the app (see the
/// [module docs](super#backpressure)).
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
pub(super) struct Shared {
    reader: Arc<Reader>,
    shed_load: bool,
}

impl<S> Stack<S> {
    pub(crate) fn new(inner: S, reader: Arc<Reader>) -> Self {
        Self {
            inner,
            shared: Arc::new(Shared {
                reader,
                shed_load: false,
            }),
        }
    }

    /// Answers 503 with `Retry-After: 1` to an application request that arrives while the app
    /// is not ready, instead of letting it wait (tower's `LoadShed`;
    /// [`PingLayer::shed_load`](crate::PingLayer::shed_load) in the `ServiceBuilder` form).
    ///
    /// Defaults to off: application requests keep the app's backpressure.
    #[must_use]
    pub fn shed_load(mut self) -> Self {
        Arc::make_mut(&mut self.shared).shed_load = true;
        self
    }

    define_inner_service_accessors!();
}

impl<S, ReqBody> Service<Request<ReqBody>> for Stack<S>
where
    S: Service<Request<ReqBody>, Response = Response> + Clone,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqBody>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Always ready: the app is asked in `call`, for its own requests only.
        Poll::Ready(Ok(()))
    }

    #[inline(always)]
    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let reader = &*self.shared.reader;
        if let Some(asked) = reader.ask(&request) {
            return ResponseFuture::probe(reader.answer(asked));
        }
        // The drain this monitor follows (from `HealthHandle::follow_drain`), read per
        // request so that a drain attached after `around` is followed too.
        let admitted = match reader.handle.drain() {
            None => None,
            Some(drain) => match drain.admit(&request) {
                Some(admitted) => Some(admitted),
                None => return ResponseFuture::probe(ProbeResponse::ready(drain.rejection())),
            },
        };
        match poll_inner(&mut self.inner) {
            // What nearly every application request does: the app's own future, polled by
            // ours directly. Inlined, so that the request and the app's future are moved as
            // few times as the compiler manages without the stack.
            Poll::Ready(Ok(())) => ResponseFuture::app(self.inner.call(request), admitted),
            polled => self.not_ready(polled, request, admitted),
        }
    }
}

impl<S> Stack<S> {
    /// An application request the app was not ready for (or failed to say): it waits, is
    /// shed, or gets the error.
    #[cold]
    fn not_ready<ReqBody>(
        &mut self,
        polled: Poll<Result<(), S::Error>>,
        request: Request<ReqBody>,
        admitted: Option<Admitted>,
    ) -> ResponseFuture<S, ReqBody>
    where
        S: Service<Request<ReqBody>> + Clone,
    {
        let future = match polled {
            Poll::Ready(Err(error)) => crate::http::ResponseFuture::error(error),
            Poll::Ready(Ok(())) | Poll::Pending => {
                let when_busy = if self.shared.shed_load {
                    WhenBusy::Shed
                } else {
                    WhenBusy::Wait
                };
                // A request that waits for the app is already counted, by `admitted`.
                call_busy(&mut self.inner, request, when_busy, None)
            }
        };
        ResponseFuture::layers(future, admitted)
    }
}

/// What [`axum::serve()`] asks for each connection: this stack around what the app makes for
/// it (for a `Router`, the router with its routes prepared once, as `axum::serve` does).
impl<'a, L, S, M> Service<IncomingStream<'a, L>> for Stack<S>
where
    L: Listener,
    S: Service<IncomingStream<'a, L>, Response = M, Error = Infallible>,
{
    type Response = Stack<M>;
    type Error = Infallible;
    type Future = MakeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, stream: IncomingStream<'a, L>) -> Self::Future {
        // One `Arc` per connection, cloned for each of its requests (see `Stack::shared`).
        let shared = Arc::new(Shared::clone(&self.shared));
        MakeFuture::new(self.inner.call(stream), shared)
    }
}

impl<M> Stack<M> {
    pub(super) fn made(inner: M, shared: Arc<Shared>) -> Self {
        Self { inner, shared }
    }
}
