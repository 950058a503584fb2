//! A probe's response: ready at once from the published verdicts, or after a fresh
//! computation for `?nocache=true`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Response;

use crate::body::ProbeBody;
use crate::probe::BodyMode;
use crate::rendered::Rendered;

/// A fresh computation's response. Boxed: the bypass path is rare and may wait for the
/// database, unlike every other probe.
pub(crate) type FreshFuture = Pin<Box<dyn Future<Output = Response<ProbeBody>> + Send>>;

/// The response to one probe request.
pub(crate) enum ProbeResponse {
    Ready(Option<Response<ProbeBody>>),
    Fresh(FreshFuture),
}

impl ProbeResponse {
    pub(crate) fn ready(response: Response<ProbeBody>) -> Self {
        Self::Ready(Some(response))
    }

    /// A response with a fixed body (one of [`crate::rendered::fixed`]).
    pub(crate) fn fixed(rendered: &Rendered, mode: BodyMode) -> Self {
        Self::ready(rendered.response(mode))
    }
}

impl Future for ProbeResponse {
    type Output = Response<ProbeBody>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Self::Ready(response) => {
                Poll::Ready(response.take().expect("future polled after completion"))
            }
            Self::Fresh(future) => future.as_mut().poll(cx),
        }
    }
}
