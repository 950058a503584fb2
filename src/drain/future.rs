use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use pin_project_lite::pin_project;

use super::DrainBody;
use super::handle::InFlightGuard;
use crate::body::ProbeBody;

pin_project! {
    /// Response future of [`Drain`](super::Drain).
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Inner {
            #[pin]
            future: F,
            guard: Option<InFlightGuard>,
            // Whether to add `Connection: close` if the drain has started by the time the
            // response is ready (HTTP/1 request, and the setting is on).
            close_if_draining: bool,
        },
        Rejected { response: Option<Response<ProbeBody>> },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn inner(future: F, guard: InFlightGuard, close_if_draining: bool) -> Self {
        Self {
            kind: Kind::Inner {
                future,
                guard: Some(guard),
                close_if_draining,
            },
        }
    }

    pub(crate) fn rejected(response: Response<ProbeBody>) -> Self {
        Self {
            kind: Kind::Rejected {
                response: Some(response),
            },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<DrainBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Inner {
                future,
                guard,
                close_if_draining,
            } => {
                let mut response = std::task::ready!(future.poll(cx))?;
                let guard = guard.take().expect("future polled after completion");
                // A `101 Switching Protocols` hands the connection to the new protocol (a
                // WebSocket, say): `Connection: close` would undo the upgrade.
                let upgrade = response.status() == StatusCode::SWITCHING_PROTOCOLS;
                if *close_if_draining && !upgrade && guard.is_draining() {
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Poll::Ready(Ok(response.map(|body| DrainBody::inner(body, guard))))
            }
            KindProj::Rejected { response } => {
                let response = response.take().expect("future polled after completion");
                Poll::Ready(Ok(response.map(DrainBody::rejected)))
            }
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Inner { .. } => "Inner",
            Kind::Rejected { .. } => "Rejected",
        };
        f.debug_struct("ResponseFuture")
            .field("kind", &kind)
            .finish()
    }
}
